#pragma once
// Joins option lists at compile time, so a strategy's -amp variant declares its own options plus the
// shared mixed-precision ones without repeating either list.
#include <gradsweep/sdk/options.hpp>

#include <array>
#include <cstddef>

namespace gradsweep::strategies {

template <std::size_t N, std::size_t M>
constexpr std::array<sdk::OptionSpec, N + M> join(const std::array<sdk::OptionSpec, N>& a,
                                                  const std::array<sdk::OptionSpec, M>& b) {
  std::array<sdk::OptionSpec, N + M> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = a[i];
  for (std::size_t i = 0; i < M; ++i) out[N + i] = b[i];
  return out;
}

}  // namespace gradsweep::strategies
