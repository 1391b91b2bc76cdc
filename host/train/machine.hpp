#pragma once
// Facts about the machine a rank runs on: how many threads it should use, its memory high-water mark,
// and the peak FLOP rate that MFU is measured against.
#include <filesystem>
#include <string>

namespace gradsweep::host {

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

// Peak FLOP/s of one rank on the CPU with `threads` threads: the best of a few float32 1024^3 matrix
// products, measured once per host and thread count and cached in `cache_file` (JSON).
double cpu_peak_flops(int threads, const std::filesystem::path& cache_file);

std::filesystem::path default_cache_dir();

std::string host_name();

}  // namespace gradsweep::host
