#pragma once
// `gradsweep project` and the report's projection (docs/projection.md): every cell of a sweep, and every
// configuration of it at node counts not run, predicted from the sweep's measurements
// (sweep_measurements.hpp) and the alpha-beta models of the links (link_fit.hpp) by the step model
// (step_model.hpp); for the cells that ran, the relative error of the predicted tokens/s, the cells off by
// more than 20% flagged, and per node count the Kendall tau between the predicted and measured ranking.
//
// DIR/link_fit.json holds what the projection of a sweep uses besides its cells: the links (a fit with its
// points and residuals, or a rate given on the command line) and the node counts to project to. `gradsweep
// project` writes it; `gradsweep report` projects when it exists.
#include "runs/plan_file.hpp"
#include "analysis/link_fit.hpp"
#include "analysis/step_model.hpp"
#include "analysis/sweep_measurements.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::analysis {

inline constexpr double kFlagError = 0.20;  // cells whose predicted tokens/s is off by more are flagged
inline constexpr const char* kLinkFitFile = "link_fit.json";

struct ProjectionSetup {
  LinkModel intra, inter;  // invalid() = not known
  std::vector<int> nodes{1, 2, 4, 8, 16, 32, 64};
  int cores_per_node = 0;       // for the projected configurations; 0: the cores of the machine the sweep ran on
  bool pooled_compute = false;  // read_measurements' `pooled`
};

struct CellProjection {
  bool predicted = false;
  StepPrediction prediction;
  bool measured = false;
  double measured_tokens_per_s = 0;
  double error = 0;  // predicted / measured - 1
  bool flagged() const { return predicted && measured && std::fabs(error) > kFlagError; }
};

struct CurvePoint {
  int nodes = 1, ranks = 1;
  StepPrediction prediction;
};

struct RankingAgreement {
  int lines = 0;              // configurations measured at that node count
  std::optional<double> tau;  // with 2 or more
};

struct Projection {
  SweepMeasurements measurements;
  ProjectionSetup setup;
  std::vector<CellProjection> cells;            // parallel to the plan's cells
  std::vector<std::vector<CurvePoint>> curves;  // parallel to measurements.lines
  std::vector<std::string> missing;             // for the cells, each with the command that makes it
  std::vector<std::string> notes;               // the same for projected points only (not an error)
  std::optional<double> median_abs_error, median_abs_error_multi_rank;  // all cells; cells on 2+ ranks
  int compared = 0, compared_multi_rank = 0, flagged = 0;
  std::map<int, RankingAgreement> ranking;  // node count -> agreement
};

// `experiment` names the sweep in the commands of `missing` (the experiment file, or the directory).
Projection project(const runs::SweepPlan& plan, const ProjectionSetup& setup, const std::string& experiment);

// Kendall's tau-a of two rankings of the same items: (concordant - discordant) / pairs; a tie counts as
// neither. Needs two items or more.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

nlohmann::json to_json(const Projection& p, const runs::SweepPlan& plan);
// The per-cell table (flagged cells marked) and the error summary, in markdown.
std::string markdown(const Projection& p, const runs::SweepPlan& plan);

nlohmann::json setup_to_json(const ProjectionSetup& setup);
// DIR/link_fit.json, or nullopt when there is none.
std::optional<ProjectionSetup> read_setup(const std::filesystem::path& file);

}  // namespace gradsweep::analysis
