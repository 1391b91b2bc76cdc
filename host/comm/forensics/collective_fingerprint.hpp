#pragma once
// runtime.check_collectives: before each collective every rank contributes a small fixed record of what
// it is about to issue (which call, algorithm, reduction, dtype, element count, root, collective number)
// and all compare them, as PyTorch's ProcessGroupWrapper does. The first rank that differs from rank 0
// stops the job with both sides named, instead of a hang or silently wrong sums.
#include "comm/forensics/flight_recorder.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradsweep::comm {

// Sent as raw bytes (MPI_BYTE): every rank runs the same binary on the same kind of machine.
struct Fingerprint {
  std::uint64_t seq = 0;
  std::int64_t count = 0;
  std::int32_t peer = -1;
  std::int16_t dtype = -1;
  std::uint8_t op = 0;
  std::int8_t reduce = -1;
  std::uint8_t ring = 0;
  std::uint8_t pad[7] = {};
};
static_assert(sizeof(Fingerprint) == 32, "a fixed 32-byte record");

Fingerprint fingerprint_of(std::uint64_t seq, const CallShape& shape);
CallShape shape_of(const Fingerprint& f);

// fingerprints[r] is rank r's. "rank 1 issued allreduce of 1000 float32 (3.9 KiB) where rank 0 issued
// allreduce of 1024 float32 (4.0 KiB), collective #12", naming the first rank that differs from rank 0;
// nullopt when all agree.
std::optional<std::string> first_mismatch(const std::vector<Fingerprint>& fingerprints);

}  // namespace gradsweep::comm
