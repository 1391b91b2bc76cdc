#pragma once
// Small helpers for the model plugin tests: batches, parameter lookup, error messages.
#include "support/plugin_fixture.hpp"
#include "support/text_contains.hpp"

#include <gradsweep/sdk/model.hpp>

#include <torch/types.h>

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradsweep::test::models {

// Tokens drawn uniformly from [0, vocab), from torch's global generator (tests seed it first).
inline sdk::Batch random_batch(std::int64_t B, std::int64_t T, std::int64_t vocab) {
  return {torch::randint(vocab, {B, T}, torch::kLong), torch::randint(vocab, {B, T}, torch::kLong)};
}

inline double value(const torch::Tensor& scalar) { return scalar.item<double>(); }

// The parameter called `name`; fails the test (by throwing) if there is none.
inline sdk::Parameter find_parameter(const std::vector<sdk::Parameter>& params, const std::string& name) {
  for (const auto& p : params)
    if (p.name == name) return p;
  throw std::runtime_error("no parameter named '" + name + "'");
}

inline std::int64_t count_elements(const std::vector<sdk::Parameter>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.tensor.numel();
  return n;
}

inline void zero_gradients(const std::vector<sdk::Parameter>& params) {
  for (const auto& p : params)
    if (p.tensor.grad().defined()) p.tensor.mutable_grad().zero_();
}

// The message of the exception `body` throws, or "" when it throws none.
template <class Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace gradsweep::test::models
