// Ring all-gather. At step s (0 .. n-2) rank r sends chunk (r - s) mod n to the right and receives
// chunk (r - s - 1) mod n from the left, straight into its place: step 0 sends the rank's own chunk,
// every later step forwards what the previous one received. After n-1 steps every chunk is everywhere.
#include "comm/algorithms/ring.hpp"
#include "comm/algorithms/ring_pipeline.hpp"
#include "comm/core/tensor_memory.hpp"

#include <stdexcept>

namespace gradsweep::comm::ring {

void allgather_in_place(Transport& transport, torch::Tensor& flat, const Chunks& chunks, const Tuning& tuning) {
  if (chunks.n != transport.size() || chunks.numel != flat.numel())
    throw std::invalid_argument("ring allgather: chunks do not match the tensor or the ranks");
  const int n = chunks.n, r = transport.rank();
  if (n == 1 || chunks.numel == 0) return;
  const std::size_t element = flat.element_size();
  const std::int64_t seg = segment_elements(tuning, element);
  const std::int64_t segments = segment_count(chunks.largest(), seg);
  char* base = static_cast<char*>(flat.data_ptr());
  // Segment j of chunk c as (address, bytes); an empty one is skipped by the transport.
  auto piece = [&](int c, std::int64_t j) {
    const Span s = segment_span(chunks.size(c), seg, j);
    return std::make_pair(base + (chunks.begin(c) + s.offset) * static_cast<std::int64_t>(element),
                          static_cast<std::size_t>(s.length) * element);
  };
  run_pipeline(
      transport, n - 1, segments, tuning.lookahead,
      [&](const Unit& u) {
        const auto [send, send_bytes] = piece(wrap(r - u.step, n), u.segment);
        const auto [recv, recv_bytes] = piece(wrap(r - u.step - 1, n), u.segment);
        return Exchange{send, send_bytes, recv, recv_bytes};
      },
      [](const Unit&) {});  // received in place: nothing to do
}

void allgather(Transport& transport, const torch::Tensor& input, torch::Tensor& output, const Tuning& tuning) {
  const int n = transport.size(), r = transport.rank();
  const std::int64_t m = input.numel();
  if (output.numel() != m * n) throw std::invalid_argument("ring allgather: output is not size() x input");
  if (m == 0) return;
  // The rank's own contribution goes to its slot first (nothing to do when the input is that slot, the
  // usual ZeRO layout); an input overlapping some other part of the output is copied out of the way.
  torch::Tensor slot = output.narrow(0, r * m, m);
  if (slot.data_ptr() != input.data_ptr()) slot.copy_(overlap(input, output) ? input.clone() : input);
  allgather_in_place(transport, output, Chunks{m * n, n}, tuning);
}

}  // namespace gradsweep::comm::ring
