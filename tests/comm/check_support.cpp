#include "check_support.hpp"

#include <chrono>
#include <cstdio>

namespace gradsweep::check {

namespace {
constexpr std::int64_t kInt64Offset = std::int64_t{1} << 33;

// "[sizes] first, values, ..." on one line.
std::string head(const torch::Tensor& t) {
  std::string out = c10::str(t.sizes());
  const torch::Tensor first = t.flatten().slice(0, 0, 4).to(torch::kDouble);
  for (std::int64_t i = 0; i < first.numel(); ++i) out += " " + std::to_string(first[i].item<double>());
  return out;
}
}  // namespace

torch::Tensor pattern(std::int64_t n, std::int64_t first) {
  return torch::arange(first, first + n, torch::kLong) % 13 + 1;
}

torch::Tensor fill(int rank, std::int64_t n, torch::ScalarType dtype, std::int64_t first) {
  torch::Tensor t = pattern(n, first) * (rank + 1);
  if (dtype == torch::kLong) t += kInt64Offset;
  return t.to(dtype);
}

torch::Tensor reference(ReduceOp op, int ranks, std::int64_t n, torch::ScalarType dtype, std::int64_t first) {
  if (op == ReduceOp::Max) return fill(ranks - 1, n, dtype, first);  // values grow with the rank
  if (op == ReduceOp::Min) return fill(0, n, dtype, first);
  torch::Tensor sum = pattern(n, first) * (ranks * (ranks + 1) / 2);
  if (dtype == torch::kLong) sum += ranks * kInt64Offset;
  return sum.to(dtype);
}

const char* op_name(ReduceOp op) { return op == ReduceOp::Sum ? "sum" : op == ReduceOp::Max ? "max" : "min"; }

const char* algorithm_name(sdk::Algorithm a) {
  switch (a) {
    case sdk::Algorithm::Ring: return "ring";
    case sdk::Algorithm::Hierarchical: return "hierarchical";
    default: return "native";
  }
}

std::string name(const std::string& call, torch::ScalarType dtype, std::int64_t n, const std::string& extra) {
  return call + "[" + c10::toString(dtype) + " x" + std::to_string(n) + extra + "]";
}

void Checker::expect(bool ok, const std::string& what, const std::string& detail) {
  ++checks_;
  if (ok) return;
  ++failures_;
  std::printf("FAIL rank %d: %s%s%s\n", rank_, what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stdout);
}

bool Checker::ok(const sdk::Status& s, const std::string& what) {
  expect(s.ok, what, s.message);
  return s.ok;
}

void Checker::equal(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  const bool same = got.sizes() == want.sizes() && got.scalar_type() == want.scalar_type() && torch::equal(got, want);
  expect(same, what, same ? "" : "got " + head(got) + " want " + head(want));
}

void Checker::error(const sdk::Status& s, const std::string& needle, const std::string& what) {
  expect(!s.ok && s.message.find(needle) != std::string::npos, what,
         s.ok ? "succeeded, expected an error about '" + needle + "'" : "message was: " + s.message);
}

void Checker::traffic(std::uint64_t sent, std::uint64_t received, std::uint64_t calls, std::uint64_t payload,
                      const std::string& what) {
  const comm::CommStats s = comm_.take_stats();
  expect(s.bytes_sent == sent && s.bytes_received == received && s.calls == calls && s.payload_bytes == payload,
         what + " counters",
         "sent " + std::to_string(s.bytes_sent) + " received " + std::to_string(s.bytes_received) + " calls " +
             std::to_string(s.calls) + " payload " + std::to_string(s.payload_bytes) + "; expected " +
             std::to_string(sent) + " / " + std::to_string(received) + " / " + std::to_string(calls) + " / " +
             std::to_string(payload));
  // 1 us of slack: the two are summed from separately rounded doubles.
  expect(s.seconds >= 0.0 && s.blocked_seconds >= 0.0 && s.blocked_seconds <= s.seconds + 1e-6, what + " times",
         "busy " + std::to_string(s.seconds) + " s, blocked " + std::to_string(s.blocked_seconds) + " s");
}

sdk::Communicator& Checker::with(sdk::Algorithm a) { return sdk::collective::with_algorithm(comm_, a); }

void Checker::run_sections(const std::vector<std::pair<const char*, void (Checker::*)()>>& sections) {
  for (const auto& [section, check] : sections) {
    const auto t0 = std::chrono::steady_clock::now();
    (this->*check)();
    if (rank_ == 0)
      std::printf("rank 0: %s %.2f s\n", section,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

int Checker::finish(const char* label) {
  ok(comm_.barrier(), "final barrier");
  std::printf("DONE rank %d of %d %schecks=%d failures=%d\n", rank_, n_, label, checks_, failures_);
  std::fflush(stdout);
  return failures_ == 0 ? 0 : 1;
}

int Checker::run_all() {
  run_sections({{"identity", &Checker::identity},
                {"algorithms", &Checker::algorithms},
                {"allreduce", &Checker::allreduce},
                {"broadcast", &Checker::broadcast},
                {"allgather", &Checker::allgather},
                {"reduce_scatter", &Checker::reduce_scatter},
                {"allreduce_async", &Checker::allreduce_async},
                {"async_progress", &Checker::async_progress},
                {"scatter_gather_async", &Checker::scatter_gather_async},
                {"send_recv", &Checker::send_recv},
                {"recv_any", &Checker::recv_any},
                {"argument_errors", &Checker::argument_errors}});
  return finish("");
}

int Checker::run_ring() {
  only_ = sdk::Algorithm::Ring;
  large_ = kLarge / 8;
  run_sections({{"allreduce", &Checker::allreduce},
                {"allgather", &Checker::allgather},
                {"reduce_scatter", &Checker::reduce_scatter},
                {"allreduce_async", &Checker::allreduce_async}});
  return finish("ring ");
}

int Checker::run_hierarchical() {
  only_ = sdk::Algorithm::Hierarchical;
  run_sections({{"allreduce", &Checker::allreduce},
                {"allgather", &Checker::allgather},
                {"reduce_scatter", &Checker::reduce_scatter},
                {"allreduce_async", &Checker::allreduce_async},
                {"scatter_gather_async", &Checker::scatter_gather_async}});
  return finish("hierarchical ");
}

}  // namespace gradsweep::check
