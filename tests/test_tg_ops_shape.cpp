// tinygrad's shape and indexing ops through the C API, checked element by element against references computed here:
// nonzero/masked_select with a fixed size (tg_tensor_*_sized), clone, einsum with an ellipsis and repeated letters
// (traces), gather over infinities, and scatter refusing a src of another dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "capi_handles.h"
#include "tinygrad.h"

namespace {

T f32(const std::vector<float>& v, std::vector<int64_t> s) { return tg_tensor_from_data(v.data(), v.size() * 4, TG_FLOAT32, s.data(), s.size(), nullptr); }
T i32(const std::vector<int32_t>& v, std::vector<int64_t> s) { return tg_tensor_from_data(v.data(), v.size() * 4, TG_INT32, s.data(), s.size(), nullptr); }
T boolean(const std::vector<uint8_t>& v, std::vector<int64_t> s) { return tg_tensor_from_data(v.data(), v.size(), TG_BOOL, s.data(), s.size(), nullptr); }
std::vector<int64_t> shape_of(tg_tensor* t) {
  std::vector<int64_t> s(size_t(tg_tensor_ndim(t)));
  EXPECT_EQ(tg_tensor_shape(t, s.data(), s.size()), TG_OK);
  return s;
}
std::vector<int32_t> ints(tg_tensor* t) {
  EXPECT_NE(t, nullptr) << tg_last_error_message();
  tg_dtype dt;
  EXPECT_EQ(tg_tensor_dtype(t, &dt), TG_OK);
  EXPECT_EQ(dt, TG_INT32);
  std::vector<int32_t> v(size_t(tg_tensor_numel(t)));
  EXPECT_EQ(tg_tensor_to_data(t, v.data(), v.size() * 4), TG_OK) << tg_last_error_message();
  return v;
}

TEST(TgOpsShape, NonzeroSized) {
  T x = f32({1, 0, 2, 0, 3, 0}, {2, 3});  // nonzero at (0,0) (0,2) (1,1)
  T all(tg_tensor_nonzero_sized(x, -1, 0));
  EXPECT_EQ(shape_of(all), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ints(all), (std::vector<int32_t>{0, 0, 0, 2, 1, 1}));
  T padded(tg_tensor_nonzero_sized(x, 5, -1));
  EXPECT_EQ(shape_of(padded), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(ints(padded), (std::vector<int32_t>{0, 0, 0, 2, 1, 1, -1, -1, -1, -1}));
  T cut(tg_tensor_nonzero_sized(x, 2, 0));
  EXPECT_EQ(ints(cut), (std::vector<int32_t>{0, 0, 0, 2}));
  float five = 5;
  T scalar(tg_tensor_from_data(&five, 4, TG_FLOAT32, nullptr, 0, nullptr));
  T s4(tg_tensor_nonzero_sized(scalar, 4, 0));
  EXPECT_EQ(shape_of(s4), (std::vector<int64_t>{4, 0}));
}

TEST(TgOpsShape, MaskedSelectSized) {
  T x = i32({0, 1, 2, 3, 4, 5, 6, 7, 8}, {9});
  T m = boolean({1, 0, 1, 0, 1, 0, 0, 0, 1}, {9});
  EXPECT_EQ(ints(T(tg_tensor_masked_select_sized(x, m, 4, 0))), (std::vector<int32_t>{0, 2, 4, 8}));
  EXPECT_EQ(ints(T(tg_tensor_masked_select_sized(x, m, 6, -1))), (std::vector<int32_t>{0, 2, 4, 8, -1, -1}));
  EXPECT_EQ(ints(T(tg_tensor_masked_select_sized(x, m, 2, 0))), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(ints(T(tg_tensor_masked_select_sized(x, m, -1, 0))), (std::vector<int32_t>{0, 2, 4, 8}));
  // a row mask broadcast over a matrix, and infinities kept as they are
  T y = f32({INFINITY, 1, -INFINITY, 3, 4, 5}, {2, 3});
  T row = boolean({1, 0, 1}, {3});
  T got(tg_tensor_masked_select_sized(y, row, 5, 7));
  ASSERT_NE(got.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(data(got), (std::vector<float>{INFINITY, -INFINITY, 3, 5, 7}));
  T not_bool = i32({1, 0, 1}, {3});
  EXPECT_EQ(tg_tensor_masked_select_sized(y, not_bool, 2, 0), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_DTYPE);
  EXPECT_NE(std::string(tg_last_error_message()).find("masked_select"), std::string::npos);
  tg_clear_error();
}

TEST(TgOpsShape, CloneIsItsOwnBuffer) {
  T x = f32({1, 2, 3}, {3});
  ASSERT_EQ(tg_tensor_realize(x), TG_OK);
  T c(tg_tensor_clone(x));
  ASSERT_NE(c.p, nullptr) << tg_last_error_message();
  ASSERT_EQ(tg_tensor_realize(c), TG_OK);
  T seven = f32({7, 7, 7}, {3});
  ASSERT_EQ(tg_tensor_assign(x, seven), TG_OK) << tg_last_error_message();
  ASSERT_EQ(tg_tensor_realize(x), TG_OK);
  EXPECT_EQ(data(x), (std::vector<float>{7, 7, 7}));
  EXPECT_EQ(data(c), (std::vector<float>{1, 2, 3}));  // the clone kept its own copy
  // gradients flow through a clone
  T w = f32({1, 2, 3}, {3});
  ASSERT_EQ(tg_tensor_set_requires_grad(w, 1), TG_OK);
  T wc(tg_tensor_clone(w));
  T sq(tg_tensor_mul(wc, wc));
  T loss(tg_tensor_sum(sq, nullptr, 0, 0));
  ASSERT_EQ(tg_tensor_backward(loss), TG_OK) << tg_last_error_message();
  T g(tg_tensor_grad(w));
  ASSERT_NE(g.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(data(g), (std::vector<float>{2, 4, 6}));
}

TEST(TgOpsShape, EinsumTraceAndEllipsis) {
  std::vector<float> a(16), b(3 * 25);
  for (size_t i = 0; i < a.size(); i++) a[i] = float(i) * 0.5f - 3;
  for (size_t i = 0; i < b.size(); i++) b[i] = float(i % 7) - 2;
  T ta = f32(a, {4, 4}), tb = f32(b, {3, 5, 5});
  tg_tensor* one[] = {ta};
  T diag(tg_tensor_einsum("ii->i", one, 1));
  ASSERT_NE(diag.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(data(diag), (std::vector<float>{a[0], a[5], a[10], a[15]}));
  T trace(tg_tensor_einsum("ii", one, 1));
  ASSERT_NE(trace.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(data(trace), (std::vector<float>{a[0] + a[5] + a[10] + a[15]}));
  tg_tensor* bb[] = {tb};
  T btrace(tg_tensor_einsum("...ii->...", bb, 1));
  ASSERT_NE(btrace.p, nullptr) << tg_last_error_message();
  std::vector<float> want(3, 0);
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 5; i++) want[size_t(k)] += b[size_t(k * 25 + i * 6)];
  EXPECT_EQ(data(btrace), want);
  // '...id,...jd->...ij' is a batched x @ y^T
  std::vector<float> x(2 * 3 * 4), y(2 * 5 * 4);
  for (size_t i = 0; i < x.size(); i++) x[i] = float(int(i % 5) - 2);
  for (size_t i = 0; i < y.size(); i++) y[i] = float(int(i % 3) - 1);
  T tx = f32(x, {2, 3, 4}), ty = f32(y, {2, 5, 4});
  tg_tensor* xy[] = {tx, ty};
  for (const char* f : {"...id,...jd->...ij", "...id, ...jd"}) {
    T r(tg_tensor_einsum(f, xy, 2));
    ASSERT_NE(r.p, nullptr) << f << ": " << tg_last_error_message();
    EXPECT_EQ(shape_of(r), (std::vector<int64_t>{2, 3, 5})) << f;
    std::vector<float> w;
    for (int n = 0; n < 2; n++)
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
          float s = 0;
          for (int d = 0; d < 4; d++) s += x[size_t(n * 12 + i * 4 + d)] * y[size_t(n * 20 + j * 4 + d)];
          w.push_back(s);
        }
    EXPECT_EQ(data(r), w) << f;
  }
  // two ellipses in one operand, or ellipses that don't broadcast, are errors naming einsum
  tg_tensor* aa[] = {tx, tx};
  EXPECT_EQ(tg_tensor_einsum("...ik...,...jk->", aa, 2), nullptr);
  EXPECT_NE(std::string(tg_last_error_message()).find("einsum"), std::string::npos);
  EXPECT_EQ(tg_tensor_einsum("i...j,ji...->...", aa, 2), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_SHAPE);
  tg_clear_error();
}

TEST(TgOpsShape, GatherKeepsInfinities) {
  T x = f32({-INFINITY, 2, 3}, {3});
  T idx = i32({2, 1, 0, 1, 2}, {5});
  T g(tg_tensor_gather(x, 0, idx));
  ASSERT_NE(g.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(data(g), (std::vector<float>{3, 2, -INFINITY, 2, 3}));
}

TEST(TgOpsShape, ScatterRefusesOtherDtype) {
  T x = f32({0, 0, 0}, {3});
  T idx = i32({2, 0}, {2});
  T src = i32({5, 6}, {2});
  EXPECT_EQ(tg_tensor_scatter(x, 0, idx, src), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_DTYPE);
  EXPECT_NE(std::string(tg_last_error_message()).find("scatter"), std::string::npos);
  tg_clear_error();
  T fsrc = f32({5, 6}, {2});
  T ok(tg_tensor_scatter(x, 0, idx, fsrc));
  ASSERT_NE(ok.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(data(ok), (std::vector<float>{6, 0, 5}));
}

}  // namespace
