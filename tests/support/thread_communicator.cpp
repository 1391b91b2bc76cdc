#include "support/thread_communicator.hpp"

#include "comm/core/dtype_name.hpp"

#include <algorithm>
#include <climits>
#include <exception>
#include <stdexcept>

namespace gradsweep::test {
namespace {

bool supported(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat:
    case torch::kDouble:
    case torch::kBFloat16:
    case torch::kHalf:
    case torch::kInt:
    case torch::kLong:
    case torch::kByte: return true;
    default: return false;
  }
}

// What only this backend checks of one tensor argument, as the MPI backend does (mpi::buffer_of): the
// device, the dtypes MPI has and the count one MPI call takes. The rules every backend
// shares (defined, contiguous, sizes, ranks, tags, features) are the stack's argument-check layer's
// (comm/layers/checked_communicator.hpp), which run_ranks puts in front of this communicator.
void checked(const torch::Tensor& t, const std::string& call, const char* role) {
  const std::string who = call + ": " + role + " tensor";
  if (!t.device().is_cpu())
    throw std::invalid_argument(who + " is on " + t.device().str() + "; the thread-ranks harness moves CPU tensors");
  if (!supported(t.scalar_type()))
    throw std::invalid_argument(who + " has dtype " + std::string(comm::dtype_name(t.scalar_type())) +
                                "; the MPI backend supports float32, float64, bfloat16, float16, int32, int64, uint8");
  if (t.numel() > INT_MAX)
    throw std::invalid_argument(who + " has " + std::to_string(t.numel()) +
                                " elements; one MPI call moves at most 2^31-1: split it");
}

std::string describe(const std::string& call, const torch::Tensor& t) {
  return call + " of " + std::to_string(t.numel()) + " " + comm::dtype_name(t.scalar_type()) + " (" +
         std::to_string(t.numel() * t.element_size()) + " bytes)";
}

std::string named(sdk::Algorithm algorithm, const char* op, bool async) {
  const std::string base = std::string(op) + (async ? "_async" : "");
  switch (algorithm) {
    case sdk::Algorithm::Native: return base;
    case sdk::Algorithm::Ring: return "ring " + base;
    case sdk::Algorithm::Hierarchical: return "hierarchical " + base;
  }
  throw std::invalid_argument(base + ": unknown algorithm " + std::to_string(static_cast<std::uint32_t>(algorithm)));
}

// An async collective as its caller sees it. The collective runs when the last rank issues it, whether
// or not anyone waits, so destroying the request without wait() needs nothing.
class ThreadRequest final : public sdk::Request {
 public:
  ThreadRequest(ThreadCommunicator& owner, RankHub& hub, std::shared_ptr<PendingCollective> pending, std::string what)
      : owner_(owner), hub_(hub), pending_(std::move(pending)), what_(std::move(what)) {}

  sdk::Status wait() noexcept override {
    if (!pending_) return result_;
    if (sdk::Status gone = owner_.parent_status("wait"); !gone.ok) return gone;
    result_ = sdk::guard([&] { hub_.wait(owner_.world_rank(), *pending_, what_); });
    pending_.reset();
    return result_;
  }

 private:
  ThreadCommunicator& owner_;
  RankHub& hub_;
  std::shared_ptr<PendingCollective> pending_;
  std::string what_;
  sdk::Status result_;
};

}  // namespace

namespace {

ThreadRanksShape every_rank(int ranks) {
  ThreadRanksShape shape;
  for (int r = 0; r < ranks; ++r) shape.members.push_back(r);
  return shape;
}

}  // namespace

ThreadCommunicator::ThreadCommunicator(RankHub& hub, int rank, const RanksOptions& options)
    : hub_(hub),
      options_(options),
      shape_(every_rank(hub.size())),
      world_rank_(rank),
      rank_(rank),
      size_(hub.size()),
      per_node_(options.ranks_per_node > 0 ? options.ranks_per_node : hub.size()),
      features_(options.features),
      ring_view_(*this, *this, sdk::Algorithm::Ring),
      hierarchical_view_(*this, *this, sdk::Algorithm::Hierarchical) {
  const int node_start = rank_ / per_node_ * per_node_;
  local_rank_ = rank_ % per_node_;
  local_size_ = std::min(per_node_, size_ - node_start);
}

ThreadCommunicator::ThreadCommunicator(RankHub& hub, ThreadRanksShape shape, int world_rank,
                                       const RanksOptions& options, ThreadCommunicator& parent)
    : hub_(hub),
      options_(options),
      shape_(std::move(shape)),
      world_rank_(world_rank),
      rank_(static_cast<int>(std::find(shape_.members.begin(), shape_.members.end(), world_rank) -
                             shape_.members.begin())),
      size_(static_cast<int>(shape_.members.size())),
      per_node_(options.ranks_per_node > 0 ? options.ranks_per_node : hub.size()),
      features_(options.features),
      ring_view_(*this, *this, sdk::Algorithm::Ring),
      hierarchical_view_(*this, *this, sdk::Algorithm::Hierarchical) {
  link_to_parent(parent, shape_.name);
  // The group's ranks on this rank's node, in the group's order.
  for (int m = 0; m < size_; ++m) {
    if (node_of(shape_.members[static_cast<std::size_t>(m)]) != node_of(world_rank_)) continue;
    if (m < rank_) ++local_rank_;
    ++local_size_;
  }
}

// A group whose parent is gone touches nothing (the hub may be gone with it).
template <class Body>
sdk::Status ThreadCommunicator::guarded(Body&& body) noexcept {
  if (sdk::Status gone = parent_status(); !gone.ok) return gone;
  return sdk::guard(body);
}

void ThreadCommunicator::blocking(CollectiveCall call) {
  const std::string what = call.what;
  const auto pending = hub_.join(shape_.context, rank_, world_rank_, Channel::Blocking, std::move(call));
  hub_.wait(world_rank_, *pending, what);
}

void ThreadCommunicator::issue(CollectiveCall call, std::unique_ptr<sdk::Request>* request) {
  const std::string what = call.what;
  auto pending = hub_.join(shape_.context, rank_, world_rank_, Channel::Async, std::move(call));
  *request = std::make_unique<ThreadRequest>(*this, hub_, std::move(pending), what);
}

CollectiveCall ThreadCommunicator::reduction(CollectiveKind kind, sdk::Algorithm algorithm, const torch::Tensor& input,
                                             const torch::Tensor& output, sdk::ReduceOp op,
                                             const std::string& call) const {
  CollectiveCall c;
  c.kind = kind;
  c.algorithm = algorithm;
  c.op = op;
  c.input = input;
  c.output = output;
  c.what = describe(call, input);
  return c;
}

CollectiveCall ThreadCommunicator::gather(sdk::Algorithm algorithm, const torch::Tensor& input,
                                          const torch::Tensor& output, const std::string& call) const {
  CollectiveCall c;
  c.kind = CollectiveKind::Allgather;
  c.algorithm = algorithm;
  c.input = input;
  c.output = output;
  c.what = describe(call, input) + " per rank";
  return c;
}

sdk::Status ThreadCommunicator::allreduce(torch::Tensor& tensor, sdk::ReduceOp op) noexcept {
  return allreduce_by(sdk::Algorithm::Native, tensor, op);
}

sdk::Status ThreadCommunicator::allreduce_by(sdk::Algorithm algorithm, torch::Tensor& tensor,
                                             sdk::ReduceOp op) noexcept {
  return guarded([&] {
    const std::string call = named(algorithm, "allreduce", false);
    checked(tensor, call, "the");
    blocking(reduction(CollectiveKind::Allreduce, algorithm, tensor, tensor, op, call));
  });
}

sdk::Status ThreadCommunicator::broadcast(torch::Tensor& tensor, int root) noexcept {
  return guarded([&] {
    checked(tensor, "broadcast", "the");
    CollectiveCall c;
    c.kind = CollectiveKind::Broadcast;
    c.root = root;
    c.input = c.output = tensor;
    c.what = describe("broadcast", tensor);
    blocking(std::move(c));
  });
}

sdk::Status ThreadCommunicator::allgather(const torch::Tensor& input, torch::Tensor& output) noexcept {
  return allgather_by(sdk::Algorithm::Native, input, output);
}

sdk::Status ThreadCommunicator::allgather_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                             torch::Tensor& output) noexcept {
  return guarded([&] {
    const std::string call = named(algorithm, "allgather", false);
    checked(input, call, "input");
    checked(output, call, "output");
    blocking(gather(algorithm, input, output, call));
  });
}

sdk::Status ThreadCommunicator::reduce_scatter(const torch::Tensor& input, torch::Tensor& output,
                                               sdk::ReduceOp op) noexcept {
  return reduce_scatter_by(sdk::Algorithm::Native, input, output, op);
}

sdk::Status ThreadCommunicator::reduce_scatter_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                                  torch::Tensor& output, sdk::ReduceOp op) noexcept {
  return guarded([&] {
    const std::string call = named(algorithm, "reduce_scatter", false);
    checked(input, call, "input");
    checked(output, call, "output");
    blocking(reduction(CollectiveKind::ReduceScatter, algorithm, input, output, op, call));
  });
}

sdk::Status ThreadCommunicator::barrier() noexcept {
  return guarded([&] {
    CollectiveCall c;
    c.kind = CollectiveKind::Barrier;
    c.what = "barrier";
    blocking(std::move(c));
  });
}

sdk::Status ThreadCommunicator::allreduce_async(torch::Tensor& tensor, sdk::ReduceOp op,
                                                std::unique_ptr<sdk::Request>* request) noexcept {
  return allreduce_async_by(sdk::Algorithm::Native, tensor, op, request);
}

sdk::Status ThreadCommunicator::allreduce_async_by(sdk::Algorithm algorithm, torch::Tensor& tensor, sdk::ReduceOp op,
                                                   std::unique_ptr<sdk::Request>* request) noexcept {
  return guarded([&] {
    const std::string call = named(algorithm, "allreduce", true);
    checked(tensor, call, "the");
    issue(reduction(CollectiveKind::Allreduce, algorithm, tensor, tensor, op, call), request);
  });
}

sdk::Status ThreadCommunicator::reduce_scatter_async(const torch::Tensor& input, torch::Tensor& output,
                                                     sdk::ReduceOp op,
                                                     std::unique_ptr<sdk::Request>* request) noexcept {
  return reduce_scatter_async_by(sdk::Algorithm::Native, input, output, op, request);
}

sdk::Status ThreadCommunicator::reduce_scatter_async_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                                        torch::Tensor& output, sdk::ReduceOp op,
                                                        std::unique_ptr<sdk::Request>* request) noexcept {
  return guarded([&] {
    const std::string call = named(algorithm, "reduce_scatter", true);
    checked(input, call, "input");
    checked(output, call, "output");
    issue(reduction(CollectiveKind::ReduceScatter, algorithm, input, output, op, call), request);
  });
}

sdk::Status ThreadCommunicator::allgather_async(const torch::Tensor& input, torch::Tensor& output,
                                                std::unique_ptr<sdk::Request>* request) noexcept {
  return allgather_async_by(sdk::Algorithm::Native, input, output, request);
}

sdk::Status ThreadCommunicator::allgather_async_by(sdk::Algorithm algorithm, const torch::Tensor& input,
                                                   torch::Tensor& output,
                                                   std::unique_ptr<sdk::Request>* request) noexcept {
  return guarded([&] {
    const std::string call = named(algorithm, "allgather", true);
    checked(input, call, "input");
    checked(output, call, "output");
    issue(gather(algorithm, input, output, call), request);
  });
}

sdk::Status ThreadCommunicator::with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept {
  return sdk::guard([&] {
    if (view == nullptr) throw std::invalid_argument("with_algorithm: view is null");
    switch (algorithm) {
      case sdk::Algorithm::Native: *view = this; return;
      case sdk::Algorithm::Ring: *view = &ring_view_; return;
      case sdk::Algorithm::Hierarchical: *view = &hierarchical_view_; return;
    }
    throw std::invalid_argument("with_algorithm: unknown algorithm " +
                                std::to_string(static_cast<std::uint32_t>(algorithm)) +
                                " (the thread-ranks harness has native, ring and hierarchical)");
  });
}

sdk::Status ThreadCommunicator::send(const torch::Tensor& tensor, int dst, int tag) noexcept {
  return guarded([&] {
    checked(tensor, "send", "the");
    hub_.post(shape_.context, rank_, world_rank_, shape_.members[static_cast<std::size_t>(dst)], tag, tensor.clone());
  });
}

// A message of another length (or dtype) than `tensor` is consumed and reported, as MPI reports a
// truncated or short message.
Message ThreadCommunicator::received(const std::string& call, int source, int tag, const torch::Tensor& tensor) {
  const std::string from = source == sdk::kAnySource ? "from any rank" : "from rank " + std::to_string(source);
  Message m = hub_.take(shape_.context, world_rank_, source, tag,
                        describe(call, tensor) + " " + from + " tag " + std::to_string(tag));
  const std::string sender = "rank " + std::to_string(m.source);
  if (m.payload.numel() != tensor.numel())
    throw std::runtime_error(call + ": " + sender + " sent " + std::to_string(m.payload.numel()) + " elements, " +
                             std::to_string(tensor.numel()) + " expected (tag " + std::to_string(tag) + ")");
  if (m.payload.scalar_type() != tensor.scalar_type())
    throw std::runtime_error(call + ": " + sender + " sent " + comm::dtype_name(m.payload.scalar_type()) + ", " +
                             comm::dtype_name(tensor.scalar_type()) + " expected (tag " + std::to_string(tag) + ")");
  return m;
}

sdk::Status ThreadCommunicator::recv(torch::Tensor& tensor, int src, int tag) noexcept {
  return guarded([&] {
    checked(tensor, "recv", "the");
    const Message m = received("recv", src, tag, tensor);
    tensor.copy_(m.payload.view(tensor.sizes()));
  });
}

sdk::Status ThreadCommunicator::recv_any(torch::Tensor& tensor, int tag, int* source) noexcept {
  return guarded([&] {
    checked(tensor, "recv_any", "the");
    const Message m = received("recv_any", sdk::kAnySource, tag, tensor);
    tensor.copy_(m.payload.view(tensor.sizes()));
    *source = m.source;
  });
}

}  // namespace gradsweep::test
