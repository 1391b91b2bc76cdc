// Ring reduce-scatter. At step s (0 .. n-2) rank r sends its partial result of chunk (r - s - 1) mod n
// to the right and receives the left neighbour's partial of chunk (r - s - 2) mod n, which it combines
// with its own contribution to that chunk; after n-1 steps the partial of chunk r has passed through
// every rank, i.e. rank r holds the full reduction of chunk r.
#include "comm/algorithms/ring.hpp"
#include "comm/algorithms/ring_pipeline.hpp"
#include "comm/core/tensor_memory.hpp"

#include <stdexcept>
#include <string>

namespace gradsweep::comm::ring {
namespace {

// out = mine (op) received, elementwise in the tensors' dtype; `out` may be `mine`.
void combine(torch::Tensor& out, const torch::Tensor& mine, const torch::Tensor& received, sdk::ReduceOp op) {
  switch (op) {
    case sdk::ReduceOp::Sum: at::add_out(out, mine, received); return;
    case sdk::ReduceOp::Max: at::maximum_out(out, mine, received); return;
    case sdk::ReduceOp::Min: at::minimum_out(out, mine, received); return;
  }
  throw std::invalid_argument("ring reduce: unknown ReduceOp " + std::to_string(static_cast<int>(op)));
}

// Where one reduce-scatter reads and writes. Rank r's own contribution to chunk c is own[chunk c]. The
// partial result of step s for chunk c goes to partial(s, c): in place, back into own; otherwise into
// one of two work buffers (step s+1 sends it while step s+2 may overwrite the other), and the last
// step's into `output`. Step s sends what step s-1 produced (step 0: its own contribution).
struct Layout {
  torch::Tensor own;
  Chunks chunks;
  torch::Tensor work[2];  // undefined when in place
  torch::Tensor output;   // undefined when in place

  bool in_place() const { return !output.defined(); }
  // The chunk-sized tensor that holds step s's result for chunk c.
  torch::Tensor partial(int step, int c) const {
    if (in_place()) return own.narrow(0, chunks.begin(c), chunks.size(c));
    if (step == chunks.n - 2) return output;
    return work[step % 2].narrow(0, 0, chunks.size(c));
  }
  torch::Tensor mine(int c) const { return own.narrow(0, chunks.begin(c), chunks.size(c)); }
  torch::Tensor sent_at(int step, int c) const { return step == 0 ? mine(c) : partial(step - 1, c); }
};

void run(Transport& transport, const Layout& layout, sdk::ReduceOp op, const Tuning& tuning) {
  const int n = transport.size(), r = transport.rank();
  const std::size_t element = layout.own.element_size();
  const std::int64_t seg = segment_elements(tuning, element);
  const std::int64_t segments = segment_count(layout.chunks.largest(), seg);
  // Receive slots, one per unit in flight, each a segment (or the largest chunk if smaller).
  const int slots = tuning.lookahead + 1;
  const std::int64_t slot_elements = std::min(seg, layout.chunks.largest());
  const torch::Tensor scratch = torch::empty({slots * slot_elements}, layout.own.options());
  auto bytes_at = [element](const torch::Tensor& t, std::int64_t offset) {
    return static_cast<char*>(t.data_ptr()) + offset * static_cast<std::int64_t>(element);
  };
  auto send_chunk = [&](int step) { return wrap(r - step - 1, n); };
  auto recv_chunk = [&](int step) { return wrap(r - step - 2, n); };
  auto slot = [&](const Unit& u) { return (u.index % slots) * slot_elements; };

  run_pipeline(
      transport, n - 1, segments, tuning.lookahead,
      [&](const Unit& u) {
        const int cs = send_chunk(u.step), cr = recv_chunk(u.step);
        const Span out = segment_span(layout.chunks.size(cs), seg, u.segment);
        const Span in = segment_span(layout.chunks.size(cr), seg, u.segment);
        Exchange e;
        if (out.length > 0) {
          e.send = bytes_at(layout.sent_at(u.step, cs), out.offset);
          e.send_bytes = static_cast<std::size_t>(out.length) * element;
        }
        if (in.length > 0) {
          e.recv = bytes_at(scratch, slot(u));
          e.recv_bytes = static_cast<std::size_t>(in.length) * element;
        }
        return e;
      },
      [&](const Unit& u) {
        const int cr = recv_chunk(u.step);
        const Span in = segment_span(layout.chunks.size(cr), seg, u.segment);
        if (in.length == 0) return;
        torch::Tensor out = layout.partial(u.step, cr).narrow(0, in.offset, in.length);
        combine(out, layout.mine(cr).narrow(0, in.offset, in.length), scratch.narrow(0, slot(u), in.length), op);
      });
}

}  // namespace

void reduce_scatter_in_place(Transport& transport, torch::Tensor& flat, const Chunks& chunks, sdk::ReduceOp op,
                             const Tuning& tuning) {
  if (chunks.n != transport.size() || chunks.numel != flat.numel())
    throw std::invalid_argument("ring reduce_scatter: chunks do not match the tensor or the ranks");
  if (chunks.n == 1 || chunks.numel == 0) return;
  Layout layout;
  layout.own = flat;
  layout.chunks = chunks;
  run(transport, layout, op, tuning);
}

void reduce_scatter(Transport& transport, const torch::Tensor& input, torch::Tensor& output, sdk::ReduceOp op,
                    const Tuning& tuning) {
  const int n = transport.size(), r = transport.rank();
  const std::int64_t m = output.numel();
  if (input.numel() != m * n) throw std::invalid_argument("ring reduce_scatter: input is not size() x output");
  const torch::Tensor own_chunk = input.narrow(0, r * m, m);
  if (n == 1 || m == 0) {
    if (m > 0 && own_chunk.data_ptr() != output.data_ptr()) output.copy_(own_chunk);
    return;
  }
  Layout layout;
  layout.own = input;
  layout.chunks = Chunks{m * n, n};
  // The last step reads own chunk r and writes `output`; an output that is exactly that chunk is fine
  // (elementwise), any other overlap with the input goes through a scratch output.
  const bool scratch_output = own_chunk.data_ptr() != output.data_ptr() && overlap(input, output);
  layout.output = scratch_output ? torch::empty_like(output) : output;
  if (n > 2)
    for (torch::Tensor& w : layout.work) w = torch::empty({m}, input.options());
  run(transport, layout, op, tuning);
  if (scratch_output) output.copy_(layout.output);
}

}  // namespace gradsweep::comm::ring
