// MLflow tracking (docs/results.md#mlflow) against a real `mlflow server` (SQLite backend, served
// artifacts) that the test starts on loopback: a `gradsweep train` cell read back through MLflow's client
// (tests/host/mlflow_read.py) equals the cell's files; a server that is not there neither stops nor fails
// training, and says so once; such a cell is pushed later from its files (`gradsweep report DIR --push`).
#include "host/tiny_cell.hpp"
#include "support/python_reference.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace gradsweep {
namespace {
namespace fs = std::filesystem;

#define REQUIRE_MLFLOW() GRADSWEEP_REQUIRE_PYTHON(GRADSWEEP_TEST_PYTHON, "mlflow.server")

// A loopback port nothing listens on (the kernel's pick, released again).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// `mlflow server` in a process group of its own, so that its workers end with it: killed when the test
// ends, whatever happens.
class MlflowServer {
 public:
  explicit MlflowServer(const fs::path& dir) : port_(free_port()) {
    const std::string python = GRADSWEEP_TEST_PYTHON, port = std::to_string(port_);
    const std::string db = "sqlite:///" + (dir / "mlflow.db").string(), artifacts = (dir / "artifacts").string();
    const std::string log = (dir / "server.log").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      std::freopen(log.c_str(), "w", stdout);
      std::freopen(log.c_str(), "a", stderr);
      ::execl(python.c_str(), python.c_str(), "-m", "mlflow", "server", "--backend-store-uri", db.c_str(), "--host",
              "127.0.0.1", "--port", port.c_str(), "--workers", "1", "--serve-artifacts", "--artifacts-destination",
              artifacts.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    ::setpgid(pid_, pid_);
  }
  ~MlflowServer() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGTERM);
    for (int i = 0; i < 100 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(-pid_, SIGKILL);  // the workers too, even when the server itself has gone
    ::waitpid(pid_, nullptr, WNOHANG);
  }
  MlflowServer(const MlflowServer&) = delete;
  MlflowServer& operator=(const MlflowServer&) = delete;

  // Waits for /health to answer (the first start builds the SQLite schema: seconds).
  bool ready() const {
    for (int i = 0; i < 240; ++i) {
      if (accepts(port_) && test::run_command(std::string(GRADSWEEP_TEST_PYTHON) +
                                              " -c 'import urllib.request; urllib.request.urlopen(\"" + uri() +
                                              "/health\", timeout=2)' 2>&1")
                                    .exit_code == 0)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return false;
  }
  std::string uri() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  pid_t pid_ = -1;
};

nlohmann::json read_back(const std::string& uri, const std::string& experiment) {
  const fs::path script = test::source_dir() / "tests" / "host" / "mlflow_read.py";
  const test::CommandResult r = test::run_command(std::string(GRADSWEEP_TEST_PYTHON) + " " + script.string() + " " +
                                                  uri + " " + experiment + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto start = r.output.rfind("{\"experiment\"");
  try {
    return nlohmann::json::parse(start == std::string::npos ? r.output : r.output.substr(start));
  } catch (const std::exception&) {
    ADD_FAILURE() << "mlflow_read.py printed no JSON:\n" << r.output;
    return nlohmann::json::object();
  }
}

test::CommandResult train(const fs::path& cell, const fs::path& out) {
  return test::run_command(test::gradsweep_command("train " + cell.string() + " --out " + out.string() + " 2>&1"));
}

test::CommandResult push(const fs::path& dir, const std::string& uri) {
  return test::run_command(test::gradsweep_command("report " + dir.string() + " --push --tracking " + uri + " 2>&1"));
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Each file's name, size and modification time: equal before and after means nothing on disk changed.
std::string listing(const fs::path& dir) {
  std::string out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out += e.path().string() + " " + (e.is_regular_file() ? std::to_string(e.file_size()) : "dir") + " " +
           std::to_string(e.last_write_time().time_since_epoch().count()) + "\n";
  return out;
}

std::vector<nlohmann::json> metrics_lines(const fs::path& file) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// What the live test and the push both check: the run equals the 1-rank `single` gpt2 cell's files (its
// name, status, parameters, tags, every metrics.jsonl line's loss and lr at its step, and artifacts).
void expect_run_is_cell(const nlohmann::json& run, const fs::path& cell, std::size_t steps) {
  EXPECT_EQ(run["name"], cell.filename().string());
  EXPECT_EQ(run["tags"]["gradsweep.cell"], cell.filename().string());
  EXPECT_EQ(run["status"], "FINISHED");
  EXPECT_EQ(run["params"]["model.name"], "gpt2");
  EXPECT_EQ(run["params"]["strategy.name"], "single");
  EXPECT_EQ(run["params"]["train.steps"], std::to_string(steps));
  EXPECT_EQ(run["params"]["train.seq_len"], "32");
  // Every parameter is config.resolved.yaml's value at that key.
  const YAML::Node resolved = YAML::LoadFile((cell / "config.resolved.yaml").string());
  EXPECT_EQ(run["params"]["train.lr"], resolved["train"]["lr"].Scalar());
  EXPECT_EQ(run["tags"]["strategy"], "single");
  EXPECT_EQ(run["tags"]["model"], "gpt2");
  EXPECT_EQ(run["tags"]["world_size"], "1");
  EXPECT_EQ(run["tags"]["status"], "done");

  const std::vector<nlohmann::json> lines = metrics_lines(cell / "metrics.jsonl");
  ASSERT_EQ(lines.size(), steps);
  ASSERT_EQ(run["metrics"]["loss"].size(), lines.size()) << run["metrics"].dump(2);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(run["metrics"]["loss"][i]["step"], lines[i]["step"]);
    EXPECT_EQ(run["metrics"]["loss"][i]["value"].get<double>(), lines[i]["loss"].get<double>()) << "step " << i;
    EXPECT_EQ(run["metrics"]["lr"][i]["value"].get<double>(), lines[i]["lr"].get<double>()) << "step " << i;
  }
  EXPECT_EQ(run["artifacts"], nlohmann::json::array({"config.resolved.yaml", "summary.json", "trace.json"}));
}

TEST(MlflowTracking, ACellIsOneRunWhoseParamsMetricsAndFilesEqualItsOwn) {
  REQUIRE_MLFLOW();
  const fs::path dir = test::scratch_dir("mlflow-train");
  MlflowServer server(dir);
  ASSERT_TRUE(server.ready()) << test::read_text(dir / "server.log");
  const fs::path cell = test::write_tiny_cell(dir, 5, "tracking: {mlflow: " + server.uri() + "}\n");
  const auto r = train(cell, dir / "cell-a");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("MLflow"), std::string::npos) << r.output;

  const nlohmann::json got = read_back(server.uri(), "gradsweep");
  ASSERT_EQ(got["runs"].size(), 1u) << got.dump(2);
  expect_run_is_cell(got["runs"][0], dir / "cell-a", 5);
}

TEST(MlflowTracking, AServerThatIsDownLeavesTrainingAndItsFilesAloneAndWarnsOnce) {
  const fs::path dir = test::scratch_dir("mlflow-down");
  const std::string uri = "http://127.0.0.1:" + std::to_string(free_port());
  const fs::path cell = test::write_tiny_cell(dir, 3, "tracking: {mlflow: " + uri + "}\n");
  const auto r = train(cell, dir / "out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* file : {"metrics.jsonl", "summary.json", "config.resolved.yaml", "trace.json"})
    EXPECT_TRUE(fs::exists(dir / "out" / file)) << file;
  EXPECT_EQ(metrics_lines(dir / "out" / "metrics.jsonl").size(), 3u);
  EXPECT_EQ(occurrences(r.output, uri), 1u) << r.output;
  EXPECT_NE(r.output.find("experiments/search"), std::string::npos) << r.output;  // names the call that failed
}

// issue 25: a cell trained while its server was down is pushed later from its files, as the same run the
// live path makes; a second push adds nothing, and a push to a server that is down fails and says where.
TEST(MlflowTracking, ACellTrainedWhileTheServerWasDownIsPushedLaterOnce) {
  REQUIRE_MLFLOW();
  const fs::path dir = test::scratch_dir("mlflow-push");
  const std::string down = "http://127.0.0.1:" + std::to_string(free_port());
  const fs::path cell = test::write_tiny_cell(dir, 4, "tracking: {mlflow: " + down + "}\n");
  const auto r = train(cell, dir / "cell-b");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, down), 1u) << r.output;
  const std::string before = listing(dir / "cell-b");

  const auto refused = push(dir / "cell-b", down);
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find(down), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("experiments/search"), std::string::npos) << refused.output;  // the call
  EXPECT_EQ(listing(dir / "cell-b"), before);

  MlflowServer server(dir);
  ASSERT_TRUE(server.ready()) << test::read_text(dir / "server.log");
  const auto pushed = push(dir / "cell-b", server.uri());
  ASSERT_EQ(pushed.exit_code, 0) << pushed.output;
  EXPECT_NE(pushed.output.find("pushed to"), std::string::npos) << pushed.output;
  const nlohmann::json got = read_back(server.uri(), "gradsweep");
  ASSERT_EQ(got["runs"].size(), 1u) << got.dump(2);
  expect_run_is_cell(got["runs"][0], dir / "cell-b", 4);

  const auto again = push(dir / "cell-b/", server.uri());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("already on"), std::string::npos) << again.output;
  EXPECT_EQ(read_back(server.uri(), "gradsweep")["runs"].size(), 1u);
  EXPECT_EQ(listing(dir / "cell-b"), before);
}

// The runs of `got` tagged as a report (tracking/report_run.hpp).
std::vector<nlohmann::json> report_runs(const nlohmann::json& got) {
  std::vector<nlohmann::json> runs;
  for (const auto& run : got["runs"])
    if (run["tags"].contains("gradsweep.report")) runs.push_back(run);
  return runs;
}

// issue 25: a tracked sweep's report is a run of its own in the sweep's experiment, beside its cells' runs,
// holding report.md, results.csv and the plots; pushing the sweep again uploads into that same run.
TEST(MlflowTracking, ASweepsReportIsARunOfItsOwnBesideItsCells) {
  REQUIRE_MLFLOW();
  const fs::path dir = test::scratch_dir("mlflow-report");
  MlflowServer server(dir);
  ASSERT_TRUE(server.ready()) << test::read_text(dir / "server.log");
  const fs::path experiment = test::write_tiny_cell(
      dir, 3, "name: tracked-sweep\nlauncher: {threads: 1}\ntracking: {mlflow: " + server.uri() + "}\n");
  const auto r = test::run_command(
      test::gradsweep_command("run " + experiment.string() + " --out " + (dir / "sweep").string() + " 2>&1"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("MLflow"), std::string::npos) << r.output;

  const nlohmann::json got = read_back(server.uri(), "tracked-sweep");
  ASSERT_EQ(got["runs"].size(), 2u) << got.dump(2);  // the cell and the report
  const std::vector<nlohmann::json> reports = report_runs(got);
  ASSERT_EQ(reports.size(), 1u) << got.dump(2);
  EXPECT_EQ(reports[0]["tags"]["gradsweep.report"], "sweep");
  EXPECT_EQ(reports[0]["status"], "FINISHED");
  const nlohmann::json& files = reports[0]["artifacts"];
  for (const std::string name : {"report.md", "results.csv"})
    EXPECT_NE(std::find(files.begin(), files.end(), name), files.end()) << name << " in " << files.dump();
  std::size_t plots = 0;
  for (const auto& entry : fs::directory_iterator(dir / "sweep" / "plots")) {
    const std::string name = "plots/" + entry.path().filename().string();
    EXPECT_NE(std::find(files.begin(), files.end(), name), files.end()) << name << " in " << files.dump();
    ++plots;
  }
  EXPECT_GT(plots, 0u);

  const auto again = push(dir / "sweep", server.uri());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("already on"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("report: pushed to"), std::string::npos) << again.output;
  const nlohmann::json after = read_back(server.uri(), "tracked-sweep");
  EXPECT_EQ(after["runs"].size(), 2u) << after.dump(2);
  ASSERT_EQ(report_runs(after).size(), 1u);
  EXPECT_EQ(report_runs(after)[0]["artifacts"], files);
}

}  // namespace
}  // namespace gradsweep
