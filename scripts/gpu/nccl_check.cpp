// The NCCL backend on a real GPU (built by scripts/gpu/gpu_check.sh as the `nccl_check` target): every
// collective, dtype and reduction against references computed here, the byte counters, the async path,
// CPU tensors staged through the GPU, and the calls NCCL cannot make. Runs alone (one rank) or under
// `mpirun -np N` on a machine with N GPUs (NCCL refuses two ranks on one GPU).
//
// Each rank fills its tensors with (rank + 1) times small integers, exact in every dtype, so the expected
// sum, max and min over ranks are known without talking to anyone. Prints one FAIL line per mismatch and
// "nccl_check: PASS, N checks on rank r of n"; exits 1 on any failure.
#include "comm/nccl/nccl_backend.hpp"
#include "comm/registry/backend_registry.hpp"
#include "device/torch_cuda.hpp"

#include <gradsweep/sdk/status.hpp>

#include <torch/cuda.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using gradsweep::comm::HostCommunicator;
using gradsweep::sdk::ReduceOp;

int checks = 0, failures = 0;

void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAIL %s\n", what.c_str());
  }
}

void expect_ok(const gradsweep::sdk::Status& s, const std::string& what) {
  expect(s.ok, what + (s.ok ? "" : ": " + s.message));
}

bool same(const torch::Tensor& got, const torch::Tensor& want) {
  return got.sizes() == want.sizes() && torch::equal(got.cpu().to(torch::kDouble), want.cpu().to(torch::kDouble));
}

// 0, 1, ..., 6, 0, 1, ...: times (n(n+1)/2 <= 10 for n <= 4) stays exact in uint8 and bfloat16.
torch::Tensor pattern(std::int64_t numel, torch::ScalarType dtype) {
  return torch::arange(numel, torch::kLong).remainder(7).to(dtype);
}

void check_dtype(HostCommunicator& comm, torch::ScalarType dtype, const torch::Device& gpu) {
  const int n = comm.size(), r = comm.rank();
  const std::string name = c10::toString(dtype);
  for (const std::int64_t numel : {0L, 1L, 1023L, 1L << 20}) {
    const torch::Tensor base = pattern(numel, dtype);
    const std::string tag = name + " x" + std::to_string(numel);
    const struct {
      ReduceOp op;
      double factor;
      const char* label;
    } reductions[] = {
        {ReduceOp::Sum, n * (n + 1) / 2.0, "sum"}, {ReduceOp::Max, double(n), "max"}, {ReduceOp::Min, 1.0, "min"}};
    for (const auto& red : reductions) {
      torch::Tensor t = (base.to(torch::kDouble) * (r + 1)).to(dtype).to(gpu);
      expect_ok(comm.allreduce(t, red.op), "allreduce " + std::string(red.label) + " " + tag);
      expect(same(t, (base.to(torch::kDouble) * red.factor).to(dtype)),
             "allreduce " + std::string(red.label) + " " + tag);
    }
    torch::Tensor b = (base.to(torch::kDouble) * (r + 1)).to(dtype).to(gpu);
    expect_ok(comm.broadcast(b, n - 1), "broadcast " + tag);
    expect(same(b, (base.to(torch::kDouble) * n).to(dtype)), "broadcast " + tag);

    const torch::Tensor mine = (base.to(torch::kDouble) * (r + 1)).to(dtype).to(gpu);
    torch::Tensor gathered = torch::empty({numel * n}, mine.options());
    expect_ok(comm.allgather(mine, gathered), "allgather " + tag);
    std::vector<torch::Tensor> parts;
    for (int k = 0; k < n; ++k) parts.push_back((base.to(torch::kDouble) * (k + 1)).to(dtype));
    expect(same(gathered, torch::cat(parts)), "allgather " + tag);

    const torch::Tensor whole = (pattern(numel * n, dtype).to(torch::kDouble) * (r + 1)).to(dtype).to(gpu);
    torch::Tensor chunk = torch::empty({numel}, whole.options());
    expect_ok(comm.reduce_scatter(whole, chunk, ReduceOp::Sum), "reduce_scatter " + tag);
    const torch::Tensor want = (pattern(numel * n, dtype).to(torch::kDouble) * (n * (n + 1) / 2.0)).to(dtype);
    expect(same(chunk, want.slice(0, r * numel, (r + 1) * numel)), "reduce_scatter " + tag);

    torch::Tensor a = (base.to(torch::kDouble) * (r + 1)).to(dtype).to(gpu);
    std::unique_ptr<gradsweep::sdk::Request> request;
    expect_ok(comm.allreduce_async(a, ReduceOp::Sum, &request), "allreduce_async " + tag);
    if (request) expect_ok(request->wait(), "allreduce_async wait " + tag);
    expect(same(a, (base.to(torch::kDouble) * (n * (n + 1) / 2.0)).to(dtype)), "allreduce_async " + tag);
  }
}

// Counters follow docs/communicators.md: ring shares of S, payload S, one call.
void check_counters(HostCommunicator& comm, const torch::Device& gpu) {
  const int n = comm.size();
  torch::Tensor t = torch::ones({1 << 18}, torch::TensorOptions(torch::kFloat).device(gpu));  // S = 1 MiB
  const std::uint64_t s = 1u << 20, each_way = n <= 1 ? 0 : 2ull * (n - 1) * s / n;
  comm.take_stats();
  expect_ok(comm.allreduce(t, ReduceOp::Sum), "allreduce for counters");
  const auto stats = comm.take_stats();
  expect(stats.calls == 1 && stats.payload_bytes == s && stats.bytes_sent == each_way &&
             stats.bytes_received == each_way && stats.seconds > 0 && stats.blocked_seconds > 0,
         "counters after a 1 MiB allreduce: calls " + std::to_string(stats.calls) + ", payload " +
             std::to_string(stats.payload_bytes) + ", sent " + std::to_string(stats.bytes_sent) + ", received " +
             std::to_string(stats.bytes_received) + ", seconds " + std::to_string(stats.seconds));
}

void check_edges(HostCommunicator& comm, const torch::Device& gpu) {
  const int n = comm.size(), r = comm.rank();
  // A CPU tensor is staged through the GPU (the trainer's scalar reductions).
  torch::Tensor cpu = torch::tensor({double(r + 1)}, torch::kDouble);
  expect_ok(comm.allreduce(cpu, ReduceOp::Sum), "allreduce of a CPU tensor");
  expect(cpu.item<double>() == n * (n + 1) / 2.0,
         "allreduce of a CPU tensor: got " + std::to_string(cpu.item<double>()));
  expect_ok(comm.barrier(), "barrier");
  // In place: the input is this rank's own slot of the output.
  torch::Tensor out = torch::zeros({4 * n}, torch::TensorOptions(torch::kFloat).device(gpu));
  out.slice(0, 4 * r, 4 * r + 4).fill_(r + 1);
  torch::Tensor slot = out.slice(0, 4 * r, 4 * r + 4);
  expect_ok(comm.allgather(slot, out), "allgather in place");
  expect(same(out, torch::arange(1, n + 1, torch::kFloat).repeat_interleave(4)), "allgather in place");
  // Errors that must come back as messages, never crash or hang.
  torch::Tensor strided = torch::zeros({4, 4}, torch::TensorOptions(torch::kFloat).device(gpu)).t();
  expect(!comm.allreduce(strided, ReduceOp::Sum).ok, "a non-contiguous tensor is refused");
  torch::Tensor any = torch::zeros({1}, torch::TensorOptions(torch::kFloat).device(gpu));
  int source = -1;
  const auto inbox = comm.recv_any(any, 0, &source);
  expect(!inbox.ok && inbox.message.find("MPI backend") != std::string::npos, "recv_any refers to the MPI backend");
  gradsweep::sdk::Communicator* view = nullptr;
  expect(comm.with_algorithm(gradsweep::sdk::Algorithm::Native, &view).ok && view == &comm, "with_algorithm(Native)");
  if (n > 1) {
    // Pairs (0,1), (2,3): the even rank sends first, so the blocking calls meet.
    const int peer = r ^ 1;
    if (peer < n) {
      torch::Tensor msg = torch::full({1000}, float(r), torch::TensorOptions(torch::kFloat).device(gpu));
      torch::Tensor got = torch::empty_like(msg);
      if (r % 2 == 0) {
        expect_ok(comm.send(msg, peer, 0), "send");
        expect_ok(comm.recv(got, peer, 0), "recv");
      } else {
        expect_ok(comm.recv(got, peer, 0), "recv");
        expect_ok(comm.send(msg, peer, 0), "send");
      }
      expect(same(got, torch::full({1000}, float(peer))), "send/recv payload");
    }
  } else {
    expect(!comm.send(any, 0, 0).ok, "send to itself is refused");
  }
}

// Not a check: what one large allreduce takes, for the log.
void report_bandwidth(HostCommunicator& comm, const torch::Device& gpu) {
  torch::Tensor t = torch::ones({64 << 20}, torch::TensorOptions(torch::kFloat).device(gpu));  // 256 MiB
  for (int i = 0; i < 3; ++i) gradsweep::sdk::check(comm.allreduce(t, ReduceOp::Sum));
  comm.take_stats();
  const int iters = 10;
  for (int i = 0; i < iters; ++i) gradsweep::sdk::check(comm.allreduce(t, ReduceOp::Sum));
  const auto stats = comm.take_stats();
  std::printf("allreduce 256 MiB float32 x%d on %d rank(s): %.3f ms each, algbw %.1f GB/s, busbw %.1f GB/s\n", iters,
              comm.size(), stats.seconds / iters * 1e3, stats.payload_bytes / stats.seconds / 1e9,
              stats.bytes_received / stats.seconds / 1e9);
}

}  // namespace

int main() {
  gradsweep::device::load_torch_cuda();  // before anything asks LibTorch about CUDA
  try {
    auto comm = gradsweep::comm::make_nccl_communicator(-1, [] { return gradsweep::comm::make_communicator("mpi"); });
    const torch::Device gpu(torch::kCUDA,
                            static_cast<c10::DeviceIndex>(comm->local_rank() % torch::cuda::device_count()));
    std::printf("nccl_check: rank %d of %d, %s\n", comm->rank(), comm->size(),
                gradsweep::comm::describe_nccl_communicator(*comm).c_str());
    for (const auto dtype :
         {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf, torch::kInt, torch::kLong, torch::kByte})
      check_dtype(*comm, dtype, gpu);
    check_counters(*comm, gpu);
    check_edges(*comm, gpu);
    report_bandwidth(*comm, gpu);
    std::printf("nccl_check: %s, %d checks on rank %d of %d\n", failures == 0 ? "PASS" : "FAIL", checks, comm->rank(),
                comm->size());
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("nccl_check: error: %s\n", e.what());
    return 2;
  }
}
