#include "cli/check_command.hpp"

#include "conformance/conformance_kit.hpp"
#include "conformance/model_check.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>

namespace gradsweep::cli {
namespace {

struct CheckArgs {
  conformance::KitRequest request;
  bool json = false;
};

struct ModelCheckArgs {
  conformance::ModelCheckRequest request;
  bool json = false;
};

// The dropout option's conventional name: what gpt2, llama and lstm_lm call it. A model that calls it
// otherwise is checked with --dropout-key; the check itself reads only what the plugin declares.
constexpr const char* kDropoutKey = "dropout";

void register_check_model(CLI::App& check) {
  auto args = std::make_shared<ModelCheckArgs>();
  conformance::ModelCheckRequest& r = args->request;
  r.dropout_key = kDropoutKey;
  CLI::App* cmd = check.add_subcommand(
      "model",
      "Build a model plugin on the CPU and judge it: parameters and their declared count, units, FLOPs, "
      "initial loss, output subset, determinism, dropout independent of the batch split, save/load");
  cmd->add_option("name", r.model, "The model plugin's name")->required();
  cmd->add_option("--set", r.options, "One of its options: --set model.preset=gpt2-tiny (repeatable)");
  cmd->add_option("--path", r.paths, "Also search this directory for plugins (first; repeatable)");
  cmd->add_option("--file", r.files, "Also load this plugin file (repeatable)");
  cmd->add_option("--dropout-key", r.dropout_key,
                  "The model's Float option that sets its dropout, set for the check unless --set sets it "
                  "(\"\": none)")
      ->capture_default_str();
  cmd->add_option("--dropout", r.dropout, "The dropout probability the check sets there")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  cmd->add_option("--seed", r.seed, "The seed, as train.seed: of the instances, the batch and the dropout keys")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print the findings as JSON");
  cmd->callback([args] {
    // stdout is the table or the JSON; what the plugin logs while it is built goes to stderr.
    spdlog::set_default_logger(spdlog::stderr_logger_mt("check"));
    const conformance::ModelCheckReport report = conformance::check_model(args->request);
    if (args->json)
      std::cout << conformance::to_json(report).dump(2) << std::endl;
    else
      conformance::print_table(report, std::cout);
    if (!report.passed()) throw CLI::RuntimeError(1);
  });
}

}  // namespace

void register_check_command(CLI::App& app) {
  CLI::App* check = app.add_subcommand("check", "Check a plugin against what it declares (conformance kit)");
  check->require_subcommand(1);
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = check->add_subcommand(
      "strategy",
      "Train a strategy in real MPI jobs on a tiny model and judge it: exactness or falling loss, "
      "ranks agreeing, resume, determinism, bad options refused, no hang when a rank fails");
  conformance::KitRequest& r = args->request;
  cmd->add_option("name", r.strategy, "The strategy plugin's name")->required();
  cmd->add_option("--set", r.options, "One of its options for every job: --set strategy.mode=async (repeatable)");
  cmd->add_option("--ranks", r.ranks, "Rank counts to train at")
      ->delimiter(',')
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--steps", r.steps, "Steps per job (even: resume interrupts at half)")->capture_default_str();
  cmd->add_option("--cell", r.cell,
                  "The kit's cell (model, reference strategy, batch); default: "
                  "share/gradsweep/check-strategy.yaml beside the binary")
      ->check(CLI::ExistingFile);
  cmd->add_option("--keep", r.keep, "Train in DIR and keep every job's directory and log there");
  cmd->add_option("--hang-deadline", r.hang_deadline_seconds,
                  "Seconds the failing-rank job may run before it counts as hung")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print the findings as JSON");
  cmd->callback([args] {
    // stdout is the table or the JSON; what the kit's own set-up logs (the corpus, the model) goes with the
    // progress lines.
    spdlog::set_default_logger(spdlog::stderr_logger_mt("check"));
    const conformance::KitReport report = conformance::check_strategy(args->request, std::cerr);
    if (args->json)
      std::cout << conformance::to_json(report).dump(2) << std::endl;
    else
      conformance::print_table(report, std::cout);
    if (!report.passed()) throw CLI::RuntimeError(1);
  });
  register_check_model(*check);
}

}  // namespace gradsweep::cli
