#pragma once
// Facts about the machine a rank runs on: how many threads it should use, its memory high-water mark,
// and the peak FLOP rate that MFU is measured against (docs/results.md, MFU).
#include <c10/core/ScalarType.h>

#include <filesystem>
#include <string>

namespace gradsweep::device {

// `requested` > 0 wins; otherwise the cores of this node shared evenly among its ranks (at least 1).
// Oversubscribed ranks get one thread each: more would only fight over the same cores.
int choose_threads(int requested, int ranks_on_node);

// Sets LibTorch's intra-op threads and, when LibTorch's BLAS is OpenBLAS (Debian's libopenblas0-pthread),
// OpenBLAS's own thread pool too: OpenBLAS ignores LibTorch's setting and would otherwise use every core
// in every rank.
// Returns whether OpenBLAS was found and set.
bool set_compute_threads(int threads);

// Peak resident set size of this process so far, in MiB.
double peak_rss_mb();

// Minor page faults of this process so far (metrics.jsonl's `minor_faults`: their growth per step shows
// memory handed back to the kernel and faulted in again; memory_reuse.hpp).
long minor_faults();

// The peak MFU is measured against.
struct PeakFlops {
  double per_rank = 0.0;  // FLOP/s of one rank
  std::string precision;  // the dtype of the matrix products it was measured with: "fp32", "bf16", "fp16"
  std::string source;     // "measured", "cached" or "metrics.peak_flops"
};

// "fp32", "bf16", "fp16" (other dtypes: LibTorch's name).
std::string precision_name(c10::ScalarType dtype);

// Peak FLOP/s of one rank on the CPU with `threads` threads (set here, as the run sets them) for matrix
// products in `dtype`: the strategy's compute dtype, since autocast runs the model's products in it and
// bf16 products on a CPU with AMX or AVX512-BF16 run several times faster than fp32 ones. Square products
// of growing size until the rate stops growing (the kernel's plateau), each the best of several repeats
// (a busy machine only ever slows a product down); about a second. Cached per host, thread count and
// precision in `cache_file` (JSON). A dtype the CPU cannot multiply in falls back to fp32, and says so.
PeakFlops cpu_peak_flops(int threads, c10::ScalarType dtype, const std::filesystem::path& cache_file);

// Drops the cached peak for (threads, precision), so that the next run measures it again: called when a
// run's MFU came out above 1, which proves that measurement too low.
void forget_cached_peak(int threads, const std::string& precision, const std::filesystem::path& cache_file);

// "" for an MFU within (0, 1]; otherwise the flag summary.json carries instead of a plausible-looking
// figure: "above peak: peak underestimated", or, when the strategy trained a softmax over part of the
// vocabulary (the model's FLOPs per token count all of it), "above peak: FLOPs count the whole vocabulary".
std::string mfu_flag(double mfu, bool restricts_vocabulary);

// A run's mean MFU against the peak it used: above 1, warns (the figure is not a utilisation) and, for a
// measured or cached peak, forgets the cached one so that the next run measures it again; unless the
// strategy restricted the vocabulary, which explains the figure without the peak being wrong.
void check_mfu_against_peak(double mfu, bool restricts_vocabulary, const PeakFlops& peak, int threads,
                            const std::filesystem::path& cache_file);

std::filesystem::path default_cache_dir();

std::string host_name();

}  // namespace gradsweep::device
