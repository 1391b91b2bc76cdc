#pragma once
// Joins option lists at compile time, so a strategy's -amp variant declares its own options plus the
// shared mixed-precision ones without repeating either list.
#include <gradsweep/sdk/capabilities.hpp>
#include <gradsweep/sdk/options.hpp>

#include <array>
#include <cstddef>

namespace gradsweep::strategies {

template <class Option, std::size_t N, std::size_t M>
constexpr std::array<Option, N + M> join(const std::array<Option, N>& a, const std::array<Option, M>& b) {
  std::array<Option, N + M> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = a[i];
  for (std::size_t i = 0; i < M; ++i) out[N + i] = b[i];
  return out;
}

}  // namespace gradsweep::strategies
