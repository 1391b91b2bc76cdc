#include "tensorboard/hparams_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gradsweep::tensorboard {

std::string hparams_json(const HParams& hparams) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : hparams) std::visit([&, n = name](const auto& v) { j[n] = v; }, value);
  return j.dump(2) + "\n";
}

std::optional<HParams> read_hparams_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const auto fail = [&](const std::string& why) { return std::runtime_error(file.string() + ": " + why); };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw fail("not a JSON object of hparams");
  HParams hparams;
  for (const auto& [name, value] : j.items()) {
    if (value.is_number())
      hparams.emplace_back(name, value.get<double>());
    else if (value.is_boolean())
      hparams.emplace_back(name, value.get<bool>());
    else if (value.is_string())
      hparams.emplace_back(name, value.get<std::string>());
    else
      throw fail("hparam '" + name + "' is neither a number, a bool nor a string");
  }
  return hparams;
}

}  // namespace gradsweep::tensorboard
