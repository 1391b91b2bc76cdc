// TF32 where asked and nowhere else: the precision set for a rank is LibTorch's own setting, read back.
#include "device/matmul_precision.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

TEST(MatmulPrecision, Tf32IsLibTorchsHighPrecisionAndOffIsHighest) {
  EXPECT_EQ(device::set_float32_matmul_precision(true), "high");
  EXPECT_EQ(device::float32_matmul_precision(), "high");
  EXPECT_EQ(device::set_float32_matmul_precision(false), "highest");
  EXPECT_EQ(device::float32_matmul_precision(), "highest");
}

}  // namespace
}  // namespace gradsweep
