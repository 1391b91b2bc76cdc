#include "comm/algorithms/ring_pipeline.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace gradsweep::comm::ring {

void run_pipeline(Transport& transport, int steps, std::int64_t segments, int lookahead,
                  const std::function<Exchange(const Unit&)>& exchange,
                  const std::function<void(const Unit&)>& finished) {
  if (lookahead < 1 || lookahead >= Transport::kMaxInFlight)
    throw std::invalid_argument("ring: lookahead " + std::to_string(lookahead) + " out of range [1, " +
                                std::to_string(Transport::kMaxInFlight - 1) + "]");
  const std::int64_t total = static_cast<std::int64_t>(steps) * segments;
  std::array<Transport::Ticket, Transport::kMaxInFlight> tickets{};
  auto unit = [segments](std::int64_t i) { return Unit{i, static_cast<int>(i / segments), i % segments}; };
  std::int64_t started = 0;
  for (std::int64_t done = 0; done < total; ++done) {
    // Units 0..done-1 are finished. Start every unit whose input is ready (step 0, or the same segment
    // of the previous step is finished) while the window has room; `done` itself always qualifies.
    while (started < total && started <= done + lookahead && (started < segments || started - segments < done)) {
      const Exchange e = exchange(unit(started));
      tickets[started % Transport::kMaxInFlight] = transport.start(e.send, e.send_bytes, e.recv, e.recv_bytes);
      ++started;
    }
    transport.finish(tickets[done % Transport::kMaxInFlight]);
    finished(unit(done));
  }
}

std::int64_t segment_elements(const Tuning& tuning, std::size_t element_size) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(tuning.segment_bytes / element_size));
}

std::int64_t segment_count(std::int64_t largest, std::int64_t segment_elements) {
  return std::max<std::int64_t>(1, (largest + segment_elements - 1) / segment_elements);
}

Span segment_span(std::int64_t chunk_size, std::int64_t segment_elements, std::int64_t j) {
  const std::int64_t offset = std::min(chunk_size, j * segment_elements);
  return {offset, std::min(segment_elements, chunk_size - offset)};
}

}  // namespace gradsweep::comm::ring
