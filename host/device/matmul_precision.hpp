#pragma once
// The precision of float32 matrix products, LibTorch's one global setting for it: "highest" keeps full
// float32 (what a cell that promises exactness needs, and the default everywhere), "high" lets cuBLAS use
// TF32 tensor cores (runtime.tf32). Set for every rank's process, CPU included, so that nothing inherited
// from the environment decides it, and read back from LibTorch for summary.json.
#include <string>

namespace gradsweep::device {

// Sets "high" when `tf32`, else "highest"; returns the setting as LibTorch now reports it.
std::string set_float32_matmul_precision(bool tf32);

// LibTorch's current setting: "highest", "high" or "medium".
std::string float32_matmul_precision();

}  // namespace gradsweep::device
