// Data sets: IDX files and tinygrad's nn.datasets.mnist.
#pragma once
#include <array>

#include "tensor/tensor.h"

namespace tg::nn {

// An IDX file (plain or .gz) as a realized tensor of its dims and element type (uint8, int8, int16, int32, float32, float64).
// A malformed file is TG_ERROR_IO naming the problem.
Tensor load_idx(const std::string& path, const std::string& device);
// X_train (N, 1, 28, 28) uint8, Y_train (N,) uint8, X_test, Y_test from the four MNIST-format files in `dir`, as tinygrad's
// nn.datasets.mnist returns them.
std::array<Tensor, 4> mnist(const std::string& dir, const std::string& device);
constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";  // Debian's dataset-fashion-mnist

}  // namespace tg::nn
