#pragma once
// Linear warmup to the peak rate, then cosine decay to min_lr at the last step (as GPT-2 / llm.c train).
#include <cmath>
#include <cstdint>

namespace gradsweep::train {

inline double learning_rate(std::int64_t step, std::int64_t total_steps, std::int64_t warmup_steps, double peak,
                            double min_lr) {
  if (step < warmup_steps) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  const std::int64_t decay_steps = total_steps - warmup_steps;
  if (decay_steps <= 1) return peak;
  const double progress = static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps - 1);
  const double pi = std::acos(-1.0);
  return min_lr + 0.5 * (peak - min_lr) * (1.0 + std::cos(pi * progress));
}

}  // namespace gradsweep::train
