#include "support/test_support.hpp"

#include "support/plugin_fixture.hpp"

#include "comm/core/host_communicator.hpp"
#include "config/config_error.hpp"
#include "config/option_schema.hpp"
#include "plugins/plugin_instance.hpp"
#include "plugins/plugin_registry.hpp"
#include "services/logging.hpp"
#include "services/step_metrics.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>

namespace gradsweep::test {
namespace fs = std::filesystem;

fs::path plugin_dir() { return GRADSWEEP_TEST_PLUGIN_DIR; }
fs::path gradsweep_binary() { return GRADSWEEP_TEST_BINARY; }
CommandResult run_command(const std::string& command_line) {
  const std::string full = command_line + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string mpirun(int ranks, const std::string& command, const std::string& env, int timeout_s) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + env + " timeout -k 5 " +
         std::to_string(timeout_s) + " mpirun --oversubscribe --bind-to none -np " + std::to_string(ranks) + " " +
         command;
}

namespace {

// Prepares the test text with `tokenizer_args` once per build tree, as test-data/<name>; the staging
// directory and rename keep parallel test processes from racing on it.
fs::path prepared_corpus(const std::string& name, const std::string& tokenizer_args) {
  const fs::path dir = build_dir() / "test-data" / name;
  if (fs::exists(dir / "train.bin") && fs::exists(dir / "val.bin")) return dir;
  const fs::path staging = build_dir() / "test-data" / (name + ".staging." + std::to_string(::getpid()));
  fs::create_directories(staging);
  const std::string cmd = gradsweep_binary().string() + " prepare " + tokenizer_args + " --out " + staging.string() +
                          " --input /usr/share/games/fortunes/fortunes /usr/share/games/fortunes/literature "
                          "/usr/share/games/fortunes/science";
  const CommandResult r = run_command(cmd);
  if (r.exit_code != 0) throw std::runtime_error("preparing the test corpus failed: " + r.output);
  std::error_code ec;
  fs::rename(staging, dir, ec);  // another process may have won the race: both results are identical
  if (ec) fs::remove_all(staging);
  return dir;
}

}  // namespace

fs::path byte_corpus() { return prepared_corpus("fortunes-byte", "--tokenizer byte"); }

fs::path word_corpus() {
  return prepared_corpus("fortunes-word", "--tokenizer word --vocab " + std::to_string(kWordCorpusVocab));
}

// ---- plugin fixture -------------------------------------------------------------------------------

namespace {

plugins::PluginRegistry& registry() {
  static plugins::PluginRegistry r = [] {
    plugins::PluginRegistry reg;
    reg.scan({plugin_dir()});
    return reg;
  }();
  return r;
}

class HostedModel final : public LoadedModel {
 public:
  HostedModel(const plugins::PluginRecord& record, sdk::Options options, torch::Device device)
      : options_(std::move(options)),
        logger_("model " + record.name),
        comm_(comm::make_local_communicator()),
        instance_(record, sdk::PluginContext{options_, logger_, metrics_, *comm_, device}) {}
  sdk::ModelAbi* operator->() override { return &instance_.current(); }

 private:
  sdk::Options options_;
  services::PluginLogger logger_;
  services::StepMetrics metrics_;
  std::unique_ptr<comm::HostCommunicator> comm_;
  plugins::ModelInstance instance_;
};

}  // namespace

sdk::ModelInfo LoadedModel::info() {
  sdk::ModelInfo out;
  sdk::check((*this)->info(&out));
  return out;
}
std::vector<sdk::Parameter> LoadedModel::parameters() {
  std::vector<sdk::Parameter> out;
  sdk::check((*this)->parameters(&out));
  return out;
}
torch::Tensor LoadedModel::loss(const sdk::Batch& batch, const sdk::OutputSubset* subset) {
  torch::Tensor out;
  sdk::check((*this)->loss(batch, subset, &out));
  return out;
}
double LoadedModel::flops_per_token(std::int64_t seq_len) {
  double out = 0;
  sdk::check((*this)->flops_per_token(seq_len, &out));
  return out;
}
void LoadedModel::set_training(bool training) { sdk::check((*this)->set_training(training)); }

std::shared_ptr<LoadedModel> load_model(const std::string& name, const std::string& options_yaml,
                                        torch::Device device) {
  const plugins::PluginRecord& record = registry().find(sdk::PluginKind::Model, name);
  config::Diagnostics diag("<test options>");
  const std::vector<sdk::OptionSpec> specs(record.descriptor->options,
                                           record.descriptor->options + record.descriptor->option_count);
  sdk::Options options = config::resolve_options(YAML::Load(options_yaml), "model", specs, {"name"}, diag);
  diag.throw_if_any();
  return std::make_shared<HostedModel>(record, std::move(options), device);
}

}  // namespace gradsweep::test
