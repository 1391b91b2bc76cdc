#pragma once
// What the model plugins share to export for Hugging Face transformers (SDK 1.5, Model::export_to("hf")):
// config.json written as text (plugins see only the SDK and LibTorch, no JSON library), and the tensors in
// the exported form. Header-only: compiled into each plugin.
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/status.hpp>

#include <torch/types.h>

#include <charconv>
#include <cstdint>
#include <string>

namespace gradsweep::models {

// A flat JSON object, keys in the order set.
class JsonObject {
 public:
  JsonObject& text(const std::string& key, const std::string& value) { return raw(key, "\"" + value + "\""); }
  JsonObject& integer(const std::string& key, std::int64_t value) { return raw(key, std::to_string(value)); }
  JsonObject& flag(const std::string& key, bool value) { return raw(key, value ? "true" : "false"); }
  // The shortest decimal that reads back as the same double (1e-05, 10000).
  JsonObject& number(const std::string& key, double value) {
    char buffer[32];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    return raw(key, std::string(buffer, end));
  }
  JsonObject& raw(const std::string& key, const std::string& json) {
    body_ += (body_.empty() ? "  \"" : ",\n  \"") + key + "\": " + json;
    return *this;
  }
  std::string str() const { return "{\n" + body_ + "\n}"; }

 private:
  std::string body_;
};

// A parameter as exported: detached, on the CPU, contiguous; `rows` > 0 keeps the first rows only (a token
// matrix without its padding); `transpose` swaps a matrix's two dimensions (LibTorch's Linear is (out, in),
// GPT-2's Conv1D (in, out)).
inline sdk::NamedTensor exported(std::string name, const torch::Tensor& t, std::int64_t rows = 0,
                                 bool transpose = false) {
  torch::Tensor out = t.detach().to(torch::kCPU);
  if (rows > 0) out = out.narrow(0, 0, rows);
  if (transpose) out = out.t();
  return {std::move(name), out.contiguous()};
}

inline void require_hf(const std::string& format, const std::string& model) {
  if (format != "hf") throw sdk::Error(model + ": export format '" + format + "' is not one of hf");
}

}  // namespace gradsweep::models
