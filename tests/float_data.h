// Random float32 data and float tensors made of it, for the tests of the C++ layer (references are computed from the
// same vectors, so any seed and range checks the same thing).
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "tensor/tensor.h"

namespace tg_test {

inline std::vector<float> randf(size_t n, uint64_t seed, float lo = -1, float hi = 1) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}
inline std::vector<float> randn(size_t n, uint64_t seed) {  // standard normal
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}
inline tg::Tensor tf(const std::vector<float>& v, tg::Shape s, const char* device = "CPU") {
  return tg::Tensor::from_data(v.data(), v.size() * sizeof(float), tg::dtypes::float32, s, device);
}
// t realized and read back (float32)
inline std::vector<float> read(tg::Tensor t) {
  std::vector<float> out(size_t(t.numel()));
  t.to_data(out.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace tg_test
