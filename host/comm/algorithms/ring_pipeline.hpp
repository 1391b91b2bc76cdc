#pragma once
// The schedule every ring algorithm shares: n-1 steps of `segments` segments each, run as one stream of
// units (step, segment) in that order, with a few exchanges in flight ahead of the one being finished.
// Internal to host/comm/algorithms.
#include "comm/algorithms/ring.hpp"

#include <cstdint>
#include <functional>

namespace gradsweep::comm::ring {

struct Unit {
  std::int64_t index;  // position in the stream: step * segments + segment
  int step;
  std::int64_t segment;
};

// What one unit sends to the right and receives from the left (0 bytes: that side is skipped).
struct Exchange {
  const void* send = nullptr;
  std::size_t send_bytes = 0;
  void* recv = nullptr;
  std::size_t recv_bytes = 0;
};

// Runs the stream. `exchange(u)` says what unit u moves; `finished(u)` runs once u's exchange is complete
// (e.g. reduces what it received). A unit of step s >= 1 sends what the same segment of step s-1 produced,
// so it starts only after that unit's finished() has returned; and at most `lookahead` + 1 units are in
// flight, so a unit may use receive slot index mod (lookahead + 1).
void run_pipeline(Transport& transport, int steps, std::int64_t segments, int lookahead,
                  const std::function<Exchange(const Unit&)>& exchange,
                  const std::function<void(const Unit&)>& finished);

// Segments per chunk so that a segment is at most `tuning.segment_bytes` (whole elements, at least one
// element and one segment), for chunks of at most `largest` elements of `element_size` bytes.
std::int64_t segment_elements(const Tuning& tuning, std::size_t element_size);
std::int64_t segment_count(std::int64_t largest, std::int64_t segment_elements);

// The part of a chunk of `chunk_size` elements that segment j covers: [offset, offset + length).
struct Span {
  std::int64_t offset, length;
};
Span segment_span(std::int64_t chunk_size, std::int64_t segment_elements, std::int64_t j);

}  // namespace gradsweep::comm::ring
