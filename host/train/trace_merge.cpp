#include "train/trace_merge.hpp"

#include "util/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <stdexcept>

namespace gradsweep::train {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Part {
  int rank = 0;
  std::vector<json> lines;
  std::int64_t torn = 0;
};

std::vector<Part> read_parts(const fs::path& trace_dir) {
  std::vector<Part> parts;
  if (!fs::is_directory(trace_dir)) return parts;
  const std::regex name("rank-([0-9]+)\\.jsonl");
  for (const auto& entry : fs::directory_iterator(trace_dir)) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, m, name)) continue;
    Part part;
    part.rank = std::stoi(m[1]);
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      try {
        part.lines.push_back(json::parse(line));
      } catch (const std::exception&) {
        ++part.torn;  // the rank was killed while writing it
      }
    }
    if (!part.lines.empty() && part.lines.front().contains("world_size")) parts.push_back(std::move(part));
  }
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.rank < b.rank; });
  return parts;
}

std::string fixed(double v, int digits = 2) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

// Chrome's complete events ("X") in microseconds from `origin`.
json complete(const json& e, int pid, std::int64_t origin) {
  const std::int64_t start = e.at("start_ns").get<std::int64_t>(), end = e.at("end_ns").get<std::int64_t>();
  json out{{"name", e.at("name")},
           {"cat", e.value("cat", "phase")},
           {"ph", "X"},
           {"pid", pid},
           {"tid", e.value("tid", 1)},
           {"ts", static_cast<double>(start - origin) / 1e3},
           {"dur", static_cast<double>(std::max<std::int64_t>(0, end - start)) / 1e3}};
  if (e.contains("args")) out["args"] = e["args"];
  return out;
}

json metadata(const char* what, int pid, int tid, const json& args) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", args}};
}

// One rank's records as trace events, and what they say about the rank.
RankTrace add_rank(const Part& part, std::int64_t origin, json& events) {
  RankTrace rank;
  const json& header = part.lines.front();
  rank.rank = part.rank;
  rank.offset_ns = header["clock"].value("offset_ns", std::int64_t{0});
  rank.round_trip_ns = header["clock"].value("round_trip_ns", std::int64_t{0});
  rank.torn_lines = part.torn;
  const int pid = part.rank;
  events.push_back(metadata("process_name", pid, 0, {{"name", "rank " + std::to_string(pid)}}));
  events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
  events.push_back(metadata("thread_name", pid, 1, {{"name", "training thread"}}));
  events.push_back(metadata("thread_name", pid, 2, {{"name", "communicator worker (async collectives)"}}));
  std::int64_t last_ns = header.value("origin_ns", origin);
  for (std::size_t i = 1; i < part.lines.size(); ++i) {
    const json& line = part.lines[i];
    if (line.contains("end")) {
      rank.ended = line["end"].get<std::string>();
      rank.last_step = line.value("last_step", std::int64_t{-1});
      rank.in_step = line.value("in_step", std::int64_t{-1});
      rank.after_phase = line.value("after_phase", "");
      last_ns = std::max(last_ns, line.value("at_ns", last_ns));
      continue;
    }
    for (const json& e : line.value("events", json::array())) {
      if (!e.contains("name")) continue;  // a note: calls lost, spans dropped
      events.push_back(complete(e, pid, origin));
      last_ns = std::max(last_ns, e["end_ns"].get<std::int64_t>());
      if (!line.contains("step") || e.value("cat", "") != "comm") continue;
      rank.calls_per_step += 1;
      rank.bytes_per_step += e["args"].value("bytes", 0.0);
      (e.value("tid", 1) == 2 ? rank.worker_comm_s : rank.main_comm_s) +=
          static_cast<double>(e["end_ns"].get<std::int64_t>() - e["start_ns"].get<std::int64_t>()) / 1e9;
    }
    if (line.contains("step")) {
      const std::int64_t step = line["step"].get<std::int64_t>();
      rank.steps.push_back(step);
      rank.last_step = std::max(rank.last_step, step);
      json e{{"name", "step " + std::to_string(step)},
             {"cat", "step"},
             {"tid", 1},
             {"start_ns", line["start_ns"]},
             {"end_ns", line["end_ns"]},
             {"args", line["breakdown"]}};
      events.push_back(complete(e, pid, origin));
      for (const auto& [key, value] : line["breakdown"].items()) rank.breakdown_s[key] += value.get<double>();
    } else if (line.contains("unfinished_step")) {
      json e{{"name", "step " + std::to_string(line["unfinished_step"].get<std::int64_t>()) + " (did not finish)"},
             {"cat", "step"},
             {"tid", 1},
             {"start_ns", line["start_ns"]},
             {"end_ns", last_ns}};
      events.push_back(complete(e, pid, origin));
    }
  }
  const double n = std::max<double>(1.0, static_cast<double>(rank.steps.size()));
  for (auto& [key, value] : rank.breakdown_s) value /= n;
  for (double* v : {&rank.calls_per_step, &rank.bytes_per_step, &rank.main_comm_s, &rank.worker_comm_s}) *v /= n;
  std::string why =
      rank.ended.empty() ? "no end record: the rank was killed, or is still running" : "the run " + rank.ended;
  if (rank.in_step >= 0) why += " in step " + std::to_string(rank.in_step) + " after phase " + rank.after_phase;
  events.push_back({{"name", "trace ends (last finished step " + std::to_string(rank.last_step) + "; " + why + ")"},
                    {"ph", "i"},
                    {"s", "p"},
                    {"pid", pid},
                    {"tid", 1},
                    {"ts", static_cast<double>(last_ns - origin) / 1e3}});
  return rank;
}

}  // namespace

MergedTrace merge_trace(const fs::path& dir) {
  std::vector<Part> parts = read_parts(dir / "trace");
  if (parts.empty()) throw std::runtime_error("no timeline in " + (dir / "trace").string());
  // Files left by an earlier run with more ranks do not belong to this one.
  const int world = parts.front().lines.front().value("world_size", 1);
  parts.erase(std::remove_if(parts.begin(), parts.end(), [&](const Part& p) { return p.rank >= world; }), parts.end());
  const std::int64_t origin = parts.front().lines.front().value("origin_ns", std::int64_t{0});
  MergedTrace merged;
  json events = json::array();
  json ranks = json::array();
  for (const Part& part : parts) {
    RankTrace rank = add_rank(part, origin, events);
    merged.steps_traced = std::max(merged.steps_traced, rank.steps.size());
    ranks.push_back({{"rank", rank.rank},
                     {"clock_offset_ns", rank.offset_ns},
                     {"clock_round_trip_ns", rank.round_trip_ns},
                     {"ended", rank.ended},
                     {"last_step", rank.last_step},
                     {"in_step", rank.in_step},
                     {"after_phase", rank.after_phase},
                     {"steps", rank.steps}});
    merged.ranks.push_back(std::move(rank));
  }
  const json trace{{"traceEvents", std::move(events)},
                   {"displayTimeUnit", "ms"},
                   {"otherData",
                    {{"generator", "gradsweep"},
                     {"clock",
                      "microseconds on rank 0's monotonic clock; each rank's offset measured by ping-pong "
                      "at start, exact to within half its round trip"},
                     {"ranks", std::move(ranks)}}}};
  merged.file = dir / "trace.json";
  const std::string text = trace.dump();
  util::write_file_atomically(merged.file, text);
  merged.bytes = text.size();
  return merged;
}

std::string summarize(const MergedTrace& trace) {
  std::string out = "trace: " + trace.file.string() + " (" + fixed(static_cast<double>(trace.bytes) / 1024, 1) +
                    " KiB; open it in https://ui.perfetto.dev or chrome://tracing)\n";
  for (const RankTrace& r : trace.ranks) {
    std::string steps;
    for (std::int64_t s : r.steps) steps += (steps.empty() ? "" : ",") + std::to_string(s);
    out += "rank " + std::to_string(r.rank) + ": steps [" + steps + "] traced; ";
    out += r.ended.empty() ? "no end record (killed, or still running)" : r.ended;
    out += ", last finished step " + std::to_string(r.last_step);
    if (r.in_step >= 0) out += ", ended in step " + std::to_string(r.in_step) + " after " + r.after_phase;
    if (r.rank > 0)
      out += "; clock " + fixed(static_cast<double>(r.offset_ns) / 1e6, 3) + " ms from rank 0 (+/- " +
             fixed(static_cast<double>(r.round_trip_ns) / 2e6, 3) + " ms)";
    out += "\n";
    if (r.steps.empty()) continue;
    auto ms = [&](const char* key) {
      const auto it = r.breakdown_s.find(key);
      return fixed(it == r.breakdown_s.end() ? 0.0 : it->second * 1e3);
    };
    out += "  step " + ms("step_s") + " ms = data " + ms("data_s") + " + compute " + ms("compute_s") +
           " + exposed comm " + ms("exposed_comm_s") + " + update " + ms("update_s") + " + wait " + ms("wait_s") +
           " + other " + ms("other_s") + " (unaccounted " + ms("unaccounted_s") + ")\n";
    out += "  comm per step: " + fixed(r.calls_per_step, 1) + " calls, " + fixed(r.bytes_per_step / 1048576, 2) +
           " MiB; busy " + fixed(r.main_comm_s * 1e3) + " ms on the training thread, " + fixed(r.worker_comm_s * 1e3) +
           " ms on the worker\n";
    if (r.torn_lines > 0) out += "  " + std::to_string(r.torn_lines) + " torn line(s) skipped\n";
  }
  return out;
}

}  // namespace gradsweep::train
