// Helpers of the C API tests (test_nn, test_module_set, test_conv_nd, test_linalg): tensors from vectors, module calls,
// a module's state entries, and error checks naming the problem.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "capi_handles.h"
#include "tinygrad.h"

namespace nn_capi {

using Shape = std::vector<int64_t>;
inline T from(const std::vector<float>& v, Shape shape) {
  return tg_tensor_from_data(v.data(), v.size() * sizeof(float), TG_FLOAT32, shape.data(), shape.size(), nullptr);
}
inline T from_i32(const std::vector<int32_t>& v, Shape shape) {
  return tg_tensor_from_data(v.data(), v.size() * 4, TG_INT32, shape.data(), shape.size(), nullptr);
}
template <class E = float>
inline std::vector<E> data(tg_tensor* t) {
  std::vector<E> v(size_t(tg_tensor_numel(t)));
  EXPECT_EQ(tg_tensor_to_data(t, v.data(), v.size() * sizeof(E)), TG_OK) << tg_last_error_message();
  return v;
}
inline Shape shape_of(tg_tensor* t) {
  Shape s(size_t(tg_tensor_ndim(t)));
  EXPECT_EQ(tg_tensor_shape(t, s.data(), s.size()), TG_OK);
  return s;
}
// assigns v into the module's tensor `name` and realizes it
inline void set(tg_module* m, const char* name, const std::vector<float>& v) {
  T t = tg_module_get(m, name);
  ASSERT_TRUE(t.p) << tg_last_error_message();
  T src = from(v, shape_of(t));
  ASSERT_EQ(tg_tensor_assign(t, src), TG_OK) << tg_last_error_message();
  ASSERT_EQ(tg_tensor_realize(t), TG_OK) << tg_last_error_message();
}
inline std::vector<float> call(tg_module* m, tg_tensor* x) {
  T y = tg_module_call(m, x);
  EXPECT_TRUE(y.p) << tg_last_error_message();
  return y.p ? data(y) : std::vector<float>{};
}
inline void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}
inline void expect_error(tg_status want, const std::vector<std::string>& needles) {
  EXPECT_EQ(tg_last_error(), want) << tg_status_name(tg_last_error()) << ": " << tg_last_error_message();
  for (auto& n : needles)
    EXPECT_NE(std::string(tg_last_error_message()).find(n), std::string::npos) << "message: " << tg_last_error_message() << "\nwant: " << n;
  tg_clear_error();
}
// the state dict's names and shapes, in order
inline std::vector<std::pair<std::string, Shape>> entries(tg_module* m) {
  S s = tg_module_state(m);
  EXPECT_TRUE(s.p) << tg_last_error_message();
  std::vector<std::pair<std::string, Shape>> out;
  for (int64_t i = 0; i < tg_state_count(s); i++) {
    const char* name = tg_state_name(s, size_t(i));
    int64_t ndim = 0;
    Shape sh(8);
    EXPECT_EQ(tg_state_info(s, name, nullptr, sh.data(), sh.size(), &ndim), TG_OK) << tg_last_error_message();
    sh.resize(size_t(ndim));
    out.emplace_back(name, sh);
  }
  return out;
}
using Entries = std::vector<std::pair<std::string, Shape>>;
inline tg_dtype dtype_in(tg_module* m, const char* name) {
  S s = tg_module_state(m);
  tg_dtype dt = TG_DTYPE_INVALID;
  EXPECT_EQ(tg_state_info(s, name, &dt, nullptr, 0, nullptr), TG_OK) << tg_last_error_message();
  return dt;
}

// the call's status is `want`, with the message naming each needle
inline void expect_error(tg_status got, tg_status want, const std::vector<std::string>& needles) {
  EXPECT_EQ(got, want) << tg_status_name(got) << ": " << tg_last_error_message();
  expect_error(want, needles);
}
// the state dict's names, in order
inline std::vector<std::string> names(tg_module* m) {
  std::vector<std::string> out;
  for (auto& [name, shape] : entries(m)) out.push_back(name);
  return out;
}

}  // namespace nn_capi
