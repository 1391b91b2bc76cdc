#include "data/hf_pretokenizer.hpp"
#include "data/json_flag.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gradsweep::data {
namespace {

using nlohmann::json;

std::string type_of(const json& step) {
  const auto it = step.find("type");
  return step.is_object() && it != step.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

HfPreTokenizer::HfPreTokenizer(const json& pre_tokenizer) {
  const std::string type = type_of(pre_tokenizer);
  if (pre_tokenizer.is_null()) {
    throw std::invalid_argument("pre_tokenizer null is not supported (byte-level BPE needs a ByteLevel one)");
  }
  if (type == "ByteLevel") {
    set_byte_level(pre_tokenizer);
    return;
  }
  if (type != "Sequence") {
    throw std::invalid_argument("pre_tokenizer type \"" + type +
                                "\" is not supported (expected ByteLevel, or a Sequence of Splits then ByteLevel)");
  }
  const auto steps = pre_tokenizer.find("pretokenizers");
  if (steps == pre_tokenizer.end() || !steps->is_array() || steps->empty()) {
    throw std::invalid_argument("pre_tokenizer Sequence has no \"pretokenizers\" list");
  }
  for (size_t i = 0; i < steps->size(); ++i) {
    const json& step = (*steps)[i];
    const std::string step_type = type_of(step);
    const bool last = i + 1 == steps->size();
    if (step_type == "Split" && !last) {
      add_split(step);
    } else if (step_type == "ByteLevel" && last) {
      set_byte_level(step);
    } else {
      throw std::invalid_argument("pre_tokenizer Sequence step " + std::to_string(i + 1) + " of type \"" + step_type +
                                  "\" is not supported (expected Splits, then one ByteLevel last)");
    }
  }
}

void HfPreTokenizer::add_split(const json& step) {
  const auto behavior = step.find("behavior");
  if (behavior == step.end() || *behavior != "Isolated") {
    throw std::invalid_argument("pre_tokenizer Split with behavior " +
                                (behavior == step.end() ? std::string("(none)") : behavior->dump()) +
                                " is not supported (expected \"Isolated\")");
  }
  if (json_flag(step, "invert", false)) {
    throw std::invalid_argument("pre_tokenizer Split with \"invert\": true is not supported");
  }
  const auto pattern = step.find("pattern");
  if (pattern != step.end() && pattern->is_object() && pattern->contains("Regex") && (*pattern)["Regex"].is_string()) {
    splits_.emplace_back((*pattern)["Regex"].get<std::string>());
  } else if (pattern != step.end() && pattern->is_object() && pattern->contains("String") &&
             (*pattern)["String"].is_string()) {
    splits_.emplace_back((*pattern)["String"].get<std::string>(), /*literal=*/true);
  } else {
    throw std::invalid_argument("pre_tokenizer Split has no pattern {\"Regex\": ...} or {\"String\": ...}");
  }
}

// tokenizers' defaults where a field is absent: add_prefix_space and use_regex true.
void HfPreTokenizer::set_byte_level(const json& step) {
  add_prefix_space_ = json_flag(step, "add_prefix_space", true);
  if (json_flag(step, "use_regex", true)) byte_level_regex_.emplace_back(kGpt2SplitPattern);
}

void HfPreTokenizer::split(std::string_view text, std::vector<std::string>& pieces) const {
  if (text.empty()) return;
  std::vector<std::string_view> current{text}, next;
  for (const RegexSplit& step : splits_) {
    next.clear();
    for (const std::string_view piece : current) step.split(piece, next);
    current.swap(next);
  }
  std::string prefixed;
  std::vector<std::string_view> cut;
  for (const std::string_view piece : current) {
    std::string_view whole = piece;
    if (add_prefix_space_ && piece.front() != ' ') {
      prefixed = " ";
      prefixed.append(piece);
      whole = prefixed;
    }
    if (byte_level_regex_.empty()) {
      pieces.emplace_back(whole);
      continue;
    }
    cut.clear();
    byte_level_regex_.front().split(whole, cut);
    for (const std::string_view p : cut) pieces.emplace_back(p);
  }
}

}  // namespace gradsweep::data
