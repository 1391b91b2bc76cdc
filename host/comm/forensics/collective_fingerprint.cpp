#include "comm/forensics/collective_fingerprint.hpp"

namespace gradsweep::comm {

Fingerprint fingerprint_of(std::uint64_t seq, const CallShape& shape) {
  Fingerprint f;
  f.seq = seq;
  f.count = shape.count;
  f.peer = shape.peer;
  f.dtype = shape.dtype;
  f.op = static_cast<std::uint8_t>(shape.op);
  f.reduce = shape.reduce;
  f.ring = shape.ring ? 1 : 0;
  return f;
}

CallShape shape_of(const Fingerprint& f) {
  CallShape s;
  s.op = static_cast<CommOp>(f.op);
  s.ring = f.ring != 0;
  s.reduce = f.reduce;
  s.dtype = f.dtype;
  s.count = f.count;
  s.peer = f.peer;
  return s;
}

namespace {

std::string issued(const Fingerprint& f) {
  const CallShape s = shape_of(f);
  std::string text = describe(s);
  if (s.reduce >= 0) text += s.reduce == 0 ? " sum" : s.reduce == 1 ? " max" : " min";
  return text;
}

}  // namespace

std::optional<std::string> first_mismatch(const std::vector<Fingerprint>& all) {
  for (std::size_t r = 1; r < all.size(); ++r) {
    const Fingerprint& a = all[0];
    const Fingerprint& b = all[r];
    if (a.seq == b.seq && a.count == b.count && a.peer == b.peer && a.dtype == b.dtype && a.op == b.op &&
        a.reduce == b.reduce && a.ring == b.ring)
      continue;
    std::string text = "rank " + std::to_string(r) + " issued " + issued(b);
    if (b.seq != a.seq) text += " as its collective #" + std::to_string(b.seq);
    return text + " where rank 0 issued " + issued(a) + ", collective #" + std::to_string(a.seq);
  }
  return std::nullopt;
}

}  // namespace gradsweep::comm
