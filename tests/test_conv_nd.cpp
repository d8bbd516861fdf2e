// N-d convolution, pooling and padding through the C API (tg_tensor_conv, tg_tensor_conv_transpose, tg_tensor_pool,
// tg_tensor_max_pool_indices, tg_tensor_max_unpool, tg_nn_conv, negative tg_tensor_pad) against direct loops computed
// here in double precision: every element, float32 within 1e-4 absolute + relative.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "capi_handles.h"
#include "nn_capi.h"
#include "tinygrad.h"

namespace {

using nn_capi::from;  // float32 tensors from vectors
using nn_capi::shape_of;
void expect_near(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << what << " at " << i;
}
std::vector<float> ints_of(tg_tensor* t) {  // an int32 tensor as floats
  std::vector<int32_t> v(size_t(tg_tensor_numel(t)));
  EXPECT_EQ(tg_tensor_to_data(t, v.data(), v.size() * 4), TG_OK) << tg_last_error_message();
  return std::vector<float>(v.begin(), v.end());
}

TEST(ConvNd, Conv1dAsymmetricNegativePaddingStrideDilation) {
  // x (2, 3, 11), w (4, 3, 3), stride 2, dilation 2, padding (2 before, -1 after: a crop)
  auto xv = randv(2 * 3 * 11, 1), wv = randv(4 * 3 * 3, 2), bv = randv(4, 3);
  T x = from(xv, {2, 3, 11}), w = from(wv, {4, 3, 3}), b = from(bv, {4});
  int64_t st[1] = {2}, dl[1] = {2}, pad[2] = {2, -1};
  T y(tg_tensor_conv(x, w, b, 1, st, 1, dl, 1, pad, 1));
  ASSERT_TRUE(y.p) << tg_last_error_message();
  int64_t in = 11 + 2 - 1, o = (in - 2 * 2 - 1) / 2 + 1;
  ASSERT_EQ(shape_of(y), (std::vector<int64_t>{2, 4, o}));
  std::vector<double> want;
  for (int n = 0; n < 2; n++)
    for (int co = 0; co < 4; co++)
      for (int64_t i = 0; i < o; i++) {
        double acc = bv[size_t(co)];
        for (int ci = 0; ci < 3; ci++)
          for (int k = 0; k < 3; k++) {
            int64_t at = i * 2 + k * 2 - 2;  // position in x
            if (at >= 0 && at < 10) acc += double(xv[size_t((n * 3 + ci) * 11 + at)]) * wv[size_t((co * 3 + ci) * 3 + k)];
          }
        want.push_back(acc);
      }
  expect_near(data(y), want, "conv1d");
}

TEST(ConvNd, Conv3dGroupsPerDimStride) {
  // x (1, 4, 5, 6, 4), w (2, 2, 2, 3, 2), groups 2, stride (1, 2, 1), padding (1,1),(0,0),(1,0)
  auto xv = randv(4 * 5 * 6 * 4, 4), wv = randv(2 * 2 * 2 * 3 * 2, 5);
  T x = from(xv, {1, 4, 5, 6, 4}), w = from(wv, {2, 2, 2, 3, 2});
  int64_t st[3] = {1, 2, 1}, dl[1] = {1}, pad[6] = {1, 1, 0, 0, 1, 0};
  T y(tg_tensor_conv(x, w, nullptr, 2, st, 3, dl, 1, pad, 3));
  ASSERT_TRUE(y.p) << tg_last_error_message();
  int64_t od = 5 + 2 - 2 + 1, oh = (6 - 3) / 2 + 1, ow = 4 + 1 - 2 + 1;
  ASSERT_EQ(shape_of(y), (std::vector<int64_t>{1, 2, od, oh, ow}));
  std::vector<double> want;
  for (int co = 0; co < 2; co++)
    for (int64_t a = 0; a < od; a++)
      for (int64_t b = 0; b < oh; b++)
        for (int64_t c = 0; c < ow; c++) {
          double acc = 0;
          for (int ci = 0; ci < 2; ci++)
            for (int i = 0; i < 2; i++)
              for (int j = 0; j < 3; j++)
                for (int k = 0; k < 2; k++) {
                  int64_t d = a + i - 1, h = b * 2 + j, ww = c + k - 1;
                  if (d < 0 || d >= 5 || ww < 0 || ww >= 4) continue;
                  acc += double(xv[size_t((((co * 2 + ci) * 5 + d) * 6 + h) * 4 + ww)]) * wv[size_t((((co * 2 + ci) * 2 + i) * 3 + j) * 2 + k)];
                }
          want.push_back(acc);
        }
  expect_near(data(y), want, "conv3d");
}

TEST(ConvNd, ConvTranspose1dOutputPadding) {
  // x (1, 2, 5), w (2, 3, 3): out[o] += x[i] w[k] at o = i*s - before + k*d
  auto xv = randv(2 * 5, 6), wv = randv(2 * 3 * 3, 7);
  T x = from(xv, {1, 2, 5}), w = from(wv, {2, 3, 3});
  int64_t st[1] = {3}, dl[1] = {2}, pad[2] = {1, 2}, op[1] = {1};
  T y(tg_tensor_conv_transpose(x, w, nullptr, 1, st, 1, dl, 1, pad, 1, op, 1));
  ASSERT_TRUE(y.p) << tg_last_error_message();
  int64_t o = (5 - 1) * 3 - 1 - 2 + 2 * 2 + 1 + 1;
  ASSERT_EQ(shape_of(y), (std::vector<int64_t>{1, 3, o}));
  std::vector<double> want(size_t(3 * o), 0);
  for (int ci = 0; ci < 2; ci++)
    for (int co = 0; co < 3; co++)
      for (int i = 0; i < 5; i++)
        for (int k = 0; k < 3; k++) {
          int64_t at = i * 3 - 1 + k * 2;
          if (at >= 0 && at < o) want[size_t(co * o + at)] += double(xv[size_t(ci * 5 + i)]) * wv[size_t((ci * 3 + co) * 3 + k)];
        }
  expect_near(data(y), want, "conv_transpose1d");
}

TEST(ConvNd, PoolCeilModeAndPaddingCounting) {
  // x (1, 1, 7): kernel 3, stride 2, padding 1, ceil_mode -> 4 windows; the last starts at 5 (inside the input)
  std::vector<float> xv{1, -2, 3, 4, -5, 6, 7};
  T x = from(xv, {1, 1, 7});
  int64_t k[1] = {3}, st[1] = {2}, pad[2] = {1, 1};
  T mx(tg_tensor_pool(x, 0, k, 1, st, 1, nullptr, 0, pad, 1, 1, 1));
  T av(tg_tensor_pool(x, 1, k, 1, st, 1, nullptr, 0, pad, 1, 1, 1));
  T avx(tg_tensor_pool(x, 1, k, 1, st, 1, nullptr, 0, pad, 1, 1, 0));
  ASSERT_TRUE(mx.p && av.p && avx.p) << tg_last_error_message();
  // windows over the padded input [0, 1, -2, 3, 4, -5, 6, 7, 0]: starts -1, 1, 3, 5 (the last reaches 7, past the end)
  expect_near(data(mx), {1, 4, 6, 7}, "max ceil");
  // torch: the user's padding counts (the last window holds 6, 7 and the right pad), the ceil overhang would not
  expect_near(data(av), {(0 + 1 - 2) / 3.0, (-2 + 3 + 4) / 3.0, (4 - 5 + 6) / 3.0, (6 + 7 + 0) / 3.0}, "avg ceil include pad");
  expect_near(data(avx), {(1 - 2) / 2.0, (-2 + 3 + 4) / 3.0, (4 - 5 + 6) / 3.0, (6 + 7) / 2.0}, "avg ceil exclude pad");
  EXPECT_EQ(tg_tensor_pool(x, 2, k, 1, st, 1, nullptr, 0, pad, 1, 0, 1), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tg_last_error_message()).find("pool"), std::string::npos);
}

TEST(ConvNd, MaxPoolIndicesAndUnpool) {
  std::vector<float> xv{1, 5, 2, 0, 3, 9, 4, 4, 8, 1, 7, 6, 2, 2, 0, 3};  // (1, 1, 4, 4)
  T x = from(xv, {1, 1, 4, 4});
  int64_t k[2] = {2, 2};
  tg_tensor* out[2] = {nullptr, nullptr};
  ASSERT_EQ(tg_tensor_max_pool_indices(x, k, 2, nullptr, 0, nullptr, 0, nullptr, 0, 0, out), TG_OK) << tg_last_error_message();
  T vals(out[0]), idx(out[1]);
  tg_dtype dt = TG_FLOAT32;
  ASSERT_EQ(tg_tensor_dtype(idx, &dt), TG_OK);
  EXPECT_EQ(dt, TG_INT32);
  expect_near(data(vals), {9, 4, 8, 7}, "max values");
  expect_near(ints_of(idx), {5, 6, 8, 10}, "max indices");  // the first of tied maxima (4 at 6 and 7)
  T un(tg_tensor_max_unpool(vals, idx, k, 2, nullptr, 0, nullptr, 0, nullptr, 0, nullptr, 0));
  ASSERT_TRUE(un.p) << tg_last_error_message();
  EXPECT_EQ(shape_of(un), (std::vector<int64_t>{1, 1, 4, 4}));
  expect_near(data(un), {0, 0, 0, 0, 0, 9, 4, 0, 8, 0, 7, 0, 0, 0, 0, 0}, "unpool");
  int64_t big[4] = {9, 9, 5, 4};  // batch and channel entries of output_size are ignored
  T un2(tg_tensor_max_unpool(vals, idx, k, 2, nullptr, 0, nullptr, 0, nullptr, 0, big, 4));
  ASSERT_TRUE(un2.p) << tg_last_error_message();
  EXPECT_EQ(shape_of(un2), (std::vector<int64_t>{1, 1, 5, 4}));
}

TEST(ConvNd, NegativePadCropsAndModes) {
  std::vector<float> xv{0, 1, 2, 3, 4, 5};  // (2, 3)
  T x = from(xv, {2, 3});
  int64_t p[4] = {0, 0, -1, 2};
  T y(tg_tensor_pad(x, p, 2, 9));
  ASSERT_TRUE(y.p) << tg_last_error_message();
  expect_near(data(y), {1, 2, 9, 9, 4, 5, 9, 9}, "pad crop");
  T r(tg_tensor_pad_mode(x, p, 2, 1, 0));  // reflect pads from the whole row, then crops
  ASSERT_TRUE(r.p) << tg_last_error_message();
  expect_near(data(r), {1, 2, 1, 0, 4, 5, 4, 3}, "reflect crop");
  T c(tg_tensor_pad_mode(x, p, 2, 3, 0));  // circular crops first, then wraps what is left
  ASSERT_TRUE(c.p) << tg_last_error_message();
  expect_near(data(c), {1, 2, 1, 2, 4, 5, 4, 5}, "circular crop");
  int64_t bad[4] = {0, 0, -2, -2};
  EXPECT_EQ(tg_tensor_pad(x, bad, 2, 0), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_SHAPE);
}

TEST(ConvNd, NnConvModuleAnyDimsAndPadPairs) {
  int64_t k[3] = {3, 2, 2}, pad[6] = {1, 1, 0, 1, 1, 0};
  M conv(tg_nn_conv(2, 4, k, 3, nullptr, 0, pad, 3, nullptr, 0, 1, 1, 0, nullptr, 0, nullptr));
  ASSERT_TRUE(conv.p) << tg_last_error_message();
  T w(tg_module_get(conv, "weight"));
  EXPECT_EQ(shape_of(w), (std::vector<int64_t>{4, 2, 3, 2, 2}));
  T x = from(randv(2 * 5 * 4 * 3, 8), {1, 2, 5, 4, 3});
  T y(tg_module_call(conv, x));
  ASSERT_TRUE(y.p) << tg_last_error_message();
  EXPECT_EQ(shape_of(y), (std::vector<int64_t>{1, 4, 5, 4, 3}));  // "same" padding for these kernels
  M tr(tg_nn_conv(2, 6, k, 1, nullptr, 0, nullptr, 0, nullptr, 0, 2, 0, 1, nullptr, 0, nullptr));
  ASSERT_TRUE(tr.p) << tg_last_error_message();
  T tw(tg_module_get(tr, "weight"));
  EXPECT_EQ(shape_of(tw), (std::vector<int64_t>{2, 3, 3}));
  int64_t two[4] = {0, 0, 0, 0};
  EXPECT_EQ(tg_nn_conv(2, 4, k, 3, nullptr, 0, two, 2, nullptr, 0, 1, 1, 0, nullptr, 0, nullptr), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
}

}  // namespace
