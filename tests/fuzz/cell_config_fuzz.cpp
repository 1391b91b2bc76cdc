// libFuzzer target: any text as a cell file through parse_cell_config, the parser `gradsweep train` uses.
// A ConfigError (a refusal with file:line:column) is an answer; a crash, a leak, an input that takes
// longer than libFuzzer's -timeout, or any other exception escaping is a finding.
#include "config/cell_config.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    gradsweep::config::parse_cell_config(text, "fuzz.yaml", "/base", {"train.lr=1e-3"});
  } catch (const gradsweep::config::ConfigError&) {
  }
  return 0;
}
