#pragma once
// The fingerprint of the translation unit that includes this header (a plugin's, or the host's): the LibTorch
// major.minor and libstdc++ string ABI that must equal the host's, and the CUDA, NCCL and compiler versions it
// reports (abi.hpp's BuildFingerprint). Reads LibTorch's version header: the one part of the descriptor that
// is not in the SDK's core.
#include <gradsweep/sdk/abi.hpp>

#include <torch/version.h>

namespace gradsweep::sdk {

namespace detail {
#if defined(__clang__)
#define GRADSWEEP_SDK_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define GRADSWEEP_SDK_COMPILER "gcc " __VERSION__
#else
#define GRADSWEEP_SDK_COMPILER "unknown"
#endif
#ifndef GRADSWEEP_CUDA_VERSION
#define GRADSWEEP_CUDA_VERSION 0
#endif
#ifndef GRADSWEEP_NCCL_VERSION
#define GRADSWEEP_NCCL_VERSION 0
#endif
#ifndef _GLIBCXX_USE_CXX11_ABI
#define _GLIBCXX_USE_CXX11_ABI 0
#endif

// The fingerprint of the translation unit that includes this header: the plugin's, or the host's.
inline constexpr BuildFingerprint this_build() {
  return BuildFingerprint{TORCH_VERSION_MAJOR,    TORCH_VERSION_MINOR,    _GLIBCXX_USE_CXX11_ABI,
                          GRADSWEEP_CUDA_VERSION, GRADSWEEP_NCCL_VERSION, GRADSWEEP_SDK_COMPILER};
}
}  // namespace detail

}  // namespace gradsweep::sdk
