#pragma once
// MLflow's tracking server spoken to over its REST API 2.0 (docs/results.md#mlflow) with libcurl: the few
// calls gradsweep needs to make a run, log to it and end it. Every call has short timeouts (2 s to connect,
// 10 s in all) because a tracking server is a convenience and must never hold training up; a failure is
// thrown as TrackingError naming the server, the call and what went wrong.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace gradsweep::tracking {

class TrackingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class MlflowClient {
 public:
  // `uri`: the server, http(s)://HOST:PORT[/prefix]; a trailing slash is dropped.
  explicit MlflowClient(std::string uri);

  const std::string& uri() const { return uri_; }

  // POST <uri>/api/2.0/mlflow/<call> with `body`; the answer (an empty object for an empty answer).
  nlohmann::json post(const std::string& call, const nlohmann::json& body) const;
  // GET <uri>/api/2.0/mlflow/<call>?<query>; `query` is already URL-encoded.
  nlohmann::json get(const std::string& call, const std::string& query) const;
  // PUT the file's bytes to <uri>/api/2.0/mlflow-artifacts/artifacts/<path> (a server run with
  // --serve-artifacts, the default of `mlflow server`).
  void put_artifact(const std::string& path, const std::filesystem::path& file) const;

  // The id of the experiment named `name`, made when there is none.
  std::string experiment_id(const std::string& name) const;

 private:
  std::string uri_;
};

}  // namespace gradsweep::tracking
