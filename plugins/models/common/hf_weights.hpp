#pragma once
// What the model plugins share to trade weights with Hugging Face transformers: export (SDK 1.5,
// Model::on_export_weights("hf")) and import (SDK 1.6, Model::on_import_weights("hf"), `model.init_from`). config.json
// is written as text (plugins see only the SDK and LibTorch, no JSON library); each model lists its tensors' places
// once (HfTensor) and both directions follow that list. Header-only: compiled into each plugin.
#include <gradsweep/sdk/model.hpp>
#include <gradsweep/sdk/status.hpp>

#include <torch/types.h>

#include <charconv>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

// One parameter's place in transformers' layout. Export and import read the same list, so a model states
// its mapping once and the two directions cannot disagree.
struct HfTensor {
  std::string name;         // transformers' name ("transformer.h.0.attn.c_attn.weight")
  torch::Tensor parameter;  // the model's own
  std::int64_t rows = 0;    // > 0: the first rows only (a token matrix without its padding)
  bool transpose = false;   // a matrix's two dimensions swapped (LibTorch's Linear is (out, in), Conv1D (in, out))

  // The part of `parameter` that the file's tensor is: a view, so that import writes through it.
  torch::Tensor view() const {
    torch::Tensor v = rows > 0 ? parameter.narrow(0, 0, rows) : parameter;
    return transpose ? v.t() : v;
  }
};

inline sdk::ExportedWeights export_hf(std::string config_json, const std::vector<HfTensor>& layout) {
  sdk::ExportedWeights out{std::move(config_json), {}};
  for (const HfTensor& t : layout) out.tensors.push_back({t.name, t.view().detach().to(torch::kCPU).contiguous()});
  return out;
}

// What a file may hold beside the parameters: `optional_prefix` may be missing from its names (GPT-2's
// published weights say "h.0..." where save_pretrained says "transformer.h.0..."); a name ending in one of
// `ignored` is not a parameter (a causal mask buffer, a tied head's copy) and is skipped.
struct HfFileForm {
  std::string optional_prefix;
  std::vector<std::string> ignored;
};

namespace detail {
inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
inline std::string shape(const torch::Tensor& t) {
  std::string out = "[";
  for (std::int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + "]";
}
inline std::string first_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 4; ++i) out += (i ? ", " : "") + names[i];
  return names.size() > 4 ? out + " and " + std::to_string(names.size() - 4) + " more" : out;
}
}  // namespace detail

// The inverse of export_hf: every tensor of `layout` must be in `in` with its shape and a floating dtype,
// and `in` may hold nothing else but what `form` allows. All is checked before the first copy, so a refused
// file leaves the model as it was.
inline void import_hf(const std::string& model, const std::vector<HfTensor>& layout, const sdk::ExportedWeights& in,
                      const HfFileForm& form) {
  std::map<std::string, const torch::Tensor*> given;
  for (const auto& t : in.tensors) given[t.name] = &t.tensor;
  std::vector<std::string> missing, problems;
  std::vector<std::pair<torch::Tensor, const torch::Tensor*>> copies;
  for (const HfTensor& t : layout) {
    auto it = given.find(t.name);
    if (it == given.end() && !form.optional_prefix.empty() && t.name.rfind(form.optional_prefix, 0) == 0)
      it = given.find(t.name.substr(form.optional_prefix.size()));
    if (it == given.end()) {
      missing.push_back(t.name);
      continue;
    }
    const torch::Tensor view = t.view();
    const torch::Tensor& source = *it->second;
    if (source.sizes() != view.sizes())
      problems.push_back(it->first + " is " + detail::shape(source) + " there, " + detail::shape(view) + " here");
    else if (!source.is_floating_point())
      problems.push_back(it->first + " holds " + std::string(c10::toString(source.scalar_type())) + " values");
    else
      copies.emplace_back(view, &source);
    given.erase(it);
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, tensor] : given) {
    bool skip = false;
    for (const auto& tail : form.ignored) skip = skip || detail::ends_with(name, tail);
    if (!skip) unexpected.push_back(name);
  }
  if (!missing.empty()) problems.push_back("no " + detail::first_names(missing));
  if (!unexpected.empty())
    problems.push_back("tensors " + model + " does not have: " + detail::first_names(unexpected));
  if (!problems.empty()) {
    std::string message = model + " cannot start from these weights:";
    for (const auto& p : problems) message += "\n  " + p;
    throw sdk::Error(message);
  }
  torch::NoGradGuard no_grad;
  for (auto& [view, source] : copies) view.copy_(*source);
}

inline void require_hf(const std::string& format, const std::string& model) {
  if (format != "hf") throw sdk::Error(model + ": export format '" + format + "' is not one of hf");
}

}  // namespace gradsweep::models
