// A link rate as users write it ("1Gbit", "200mbit", "2.5Gbit"), in bits per second as tc reads it.
#pragma once

#include <cstdint>
#include <string>

namespace gradsweep::cluster {

// Parses "<number><unit>" with unit bit, kbit, mbit, gbit or tbit (any case; SI multiples of 1000, as tc
// and link vendors count). Bytes per second ("MB/s", tc's own "mbps") are refused with a hint rather than
// guessed, since a factor of 8 slips in silently otherwise. `key` names the option in the error
// (std::invalid_argument).
std::uint64_t parse_bandwidth(const std::string& text, const std::string& key);

// 1000000000 -> "1Gbit", 2500000000 -> "2.5Gbit", 123456 -> "123.456kbit".
std::string format_bandwidth(std::uint64_t bits_per_second);

}  // namespace gradsweep::cluster
