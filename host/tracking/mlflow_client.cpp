#include "tracking/mlflow_client.hpp"

#include <curl/curl.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>

namespace gradsweep::tracking {
namespace {
constexpr long kConnectTimeoutMs = 2000;
constexpr long kTotalTimeoutMs = 10000;

struct Reply {
  long status = 0;
  std::string body;
};

std::size_t append(char* data, std::size_t size, std::size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// One request: `method` POST or PUT with `body`, or GET. curl_global_init is not thread-safe, hence once.
Reply request(const std::string& method, const std::string& url, const std::string& body, const char* content_type) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  const std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw TrackingError(method + " " + url + ": libcurl could not start a request");
  struct curl_slist* headers = curl_slist_append(nullptr, (std::string("Content-Type: ") + content_type).c_str());
  const std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers, curl_slist_free_all);
  Reply reply;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  // Timeouts by signal would disturb the training threads; libcurl's own are enough here.
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, kTotalTimeoutMs);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  if (method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  const CURLcode code = curl_easy_perform(c);
  if (code != CURLE_OK) throw TrackingError(method + " " + url + ": " + curl_easy_strerror(code));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  if (reply.status < 200 || reply.status >= 300)
    throw TrackingError(method + " " + url + ": HTTP " + std::to_string(reply.status) + " " +
                        reply.body.substr(0, 300));
  return reply;
}

nlohmann::json parsed(const std::string& url, const Reply& reply) {
  if (reply.body.empty()) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(reply.body);
  } catch (const nlohmann::json::exception& e) {
    throw TrackingError(url + ": the answer is not JSON (" + std::string(e.what()) + ")");
  }
}
}  // namespace

MlflowClient::MlflowClient(std::string uri) : uri_(std::move(uri)) {
  while (!uri_.empty() && uri_.back() == '/') uri_.pop_back();
}

nlohmann::json MlflowClient::post(const std::string& call, const nlohmann::json& body) const {
  const std::string url = uri_ + "/api/2.0/mlflow/" + call;
  return parsed(url, request("POST", url, body.dump(), "application/json"));
}

nlohmann::json MlflowClient::get(const std::string& call, const std::string& query) const {
  const std::string url = uri_ + "/api/2.0/mlflow/" + call + "?" + query;
  return parsed(url, request("GET", url, "", "application/json"));
}

void MlflowClient::put_artifact(const std::string& path, const std::filesystem::path& file) const {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw TrackingError("cannot read " + file.string() + " to upload it");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string url = uri_ + "/api/2.0/mlflow-artifacts/artifacts/" + path;
  request("PUT", url, bytes, "application/octet-stream");
}

std::string MlflowClient::experiment_id(const std::string& name) const {
  // get-by-name answers 404 (RESOURCE_DOES_NOT_EXIST) for a new name: search instead, which answers an
  // empty list, so that a real failure is not mistaken for "not there yet".
  const nlohmann::json found = post("experiments/search", {{"max_results", 1}, {"filter", "name = '" + name + "'"}});
  if (found.contains("experiments") && !found["experiments"].empty())
    return found["experiments"][0]["experiment_id"].get<std::string>();
  return post("experiments/create", {{"name", name}})["experiment_id"].get<std::string>();
}

}  // namespace gradsweep::tracking
