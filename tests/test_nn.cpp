// nn modules through the C API (tg_nn_*, tg_module_*): parameter names and shapes, calls against hand computations,
// parameter sharing, state dicts (strict and non-strict loads, save/load round trips), every bad argument; the IDX
// reader on hostile and valid files (plain and gzipped), and tg_dataset_mnist on Debian's Fashion-MNIST.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "capi_handles.h"
#include "nn_capi.h"
#include "tinygrad.h"

namespace fs = std::filesystem;

namespace {


using namespace nn_capi;

// ---- constructors: names, shapes, kinds -----------------------------------------------------------------------------
TEST(NnModule, ParameterNamesAndShapes) {
  M lin = tg_nn_linear(3, 5, 1, nullptr), lin_nb = tg_nn_linear(3, 5, 0, nullptr);
  EXPECT_EQ(entries(lin), (Entries{{"weight", {5, 3}}, {"bias", {5}}}));
  EXPECT_EQ(entries(lin_nb), (Entries{{"weight", {5, 3}}}));
  M c2 = tg_nn_conv2d(4, 6, 3, 2, 1, 0, 1, 2, 1, nullptr), c1 = tg_nn_conv1d(6, 9, 5, 1, 0, 1, 3, 0, nullptr);
  EXPECT_EQ(entries(c2), (Entries{{"weight", {6, 2, 3, 2}}, {"bias", {6}}}));
  EXPECT_EQ(entries(c1), (Entries{{"weight", {9, 2, 5}}}));
  M ct = tg_nn_conv_transpose2d(4, 6, 3, 3, 2, 1, 1, 1, 2, 1, nullptr);
  EXPECT_EQ(entries(ct), (Entries{{"weight", {4, 3, 3, 3}}, {"bias", {6}}}));
  M bn = tg_nn_batchnorm(7, 1e-5, 0.1, 1, 1, nullptr);
  EXPECT_EQ(entries(bn), (Entries{{"weight", {7}}, {"bias", {7}}, {"num_batches_tracked", {}}, {"running_mean", {7}}, {"running_var", {7}}}));
  EXPECT_EQ(dtype_in(bn, "num_batches_tracked"), TG_INT64);
  EXPECT_EQ(dtype_in(bn, "running_var"), TG_FLOAT32);
  M bn_na = tg_nn_batchnorm(7, 1e-5, 0.1, 0, 1, nullptr), bn_nt = tg_nn_batchnorm(7, 1e-5, 0.1, 1, 0, nullptr);
  EXPECT_EQ(entries(bn_na), (Entries{{"num_batches_tracked", {}}, {"running_mean", {7}}, {"running_var", {7}}}));
  EXPECT_EQ(entries(bn_nt), (Entries{{"weight", {7}}, {"bias", {7}}, {"num_batches_tracked", {}}}));
  int64_t ns[] = {4, 5};
  M ln = tg_nn_layernorm(ns, 2, 1e-5, 1, nullptr), ln_na = tg_nn_layernorm(ns, 1, 1e-5, 0, nullptr);
  EXPECT_EQ(entries(ln), (Entries{{"weight", {4, 5}}, {"bias", {4, 5}}}));
  EXPECT_EQ(entries(ln_na), Entries{});
  M rms = tg_nn_rmsnorm(8, 1e-6, 1, nullptr), gn = tg_nn_groupnorm(2, 6, 1e-5, 1, nullptr), in = tg_nn_instancenorm(3, 1e-5, 1, nullptr);
  EXPECT_EQ(entries(rms), (Entries{{"weight", {8}}}));
  EXPECT_EQ(entries(gn), (Entries{{"weight", {6}}, {"bias", {6}}}));
  EXPECT_EQ(entries(in), (Entries{{"weight", {3}}, {"bias", {3}}}));
  M emb = tg_nn_embedding(10, 4, nullptr);
  EXPECT_EQ(entries(emb), (Entries{{"weight", {10, 4}}}));
  M lstm = tg_nn_lstm_cell(3, 2, 1, nullptr), lstm_nb = tg_nn_lstm_cell(3, 2, 0, nullptr);
  EXPECT_EQ(entries(lstm), (Entries{{"weight_ih", {8, 3}}, {"weight_hh", {8, 2}}, {"bias_ih", {8}}, {"bias_hh", {8}}}));
  EXPECT_EQ(entries(lstm_nb), (Entries{{"weight_ih", {8, 3}}, {"weight_hh", {8, 2}}}));
  M relu = tg_nn_function("relu");
  EXPECT_EQ(entries(relu), Entries{});
  EXPECT_STREQ(tg_module_kind(lin), "Linear");
  EXPECT_STREQ(tg_module_kind(bn), "BatchNorm");
  EXPECT_STREQ(tg_module_kind(lstm), "LSTMCell");
  EXPECT_STREQ(tg_module_kind(relu), "relu");
  EXPECT_STREQ(tg_module_kind(in), "InstanceNorm");
  EXPECT_EQ(tg_module_parameter_count(lin), 2u);
  EXPECT_EQ(tg_module_parameter_count(lin_nb), 1u);
  EXPECT_EQ(tg_module_parameter_count(bn), 2u);  // running statistics are buffers
  EXPECT_EQ(tg_module_parameter_count(lstm), 4u);
  EXPECT_EQ(tg_module_parameter_count(relu), 0u);
}

TEST(NnModule, InitialValues) {
  tg_manual_seed(3);
  M lin = tg_nn_linear(100, 50, 1, nullptr);
  T w = tg_module_get(lin, "weight");
  float lo = 1, hi = -1;
  for (float v : data(w)) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GE(lo, -0.1f);
  EXPECT_LE(hi, 0.1f);
  EXPECT_LT(lo, -0.09f);  // 5000 draws reach near both ends of U(-1/sqrt(100), 1/sqrt(100))
  EXPECT_GT(hi, 0.09f);
  M bn = tg_nn_batchnorm(3, 1e-5, 0.1, 1, 1, nullptr);
  T rv = tg_module_get(bn, "running_var"), nbt = tg_module_get(bn, "num_batches_tracked");
  EXPECT_EQ(data(rv), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(data<int64_t>(nbt), std::vector<int64_t>{0});
}

// ---- calls against hand computations --------------------------------------------------------------------------------
TEST(NnCall, Linear) {
  M lin = tg_nn_linear(3, 2, 1, nullptr);
  set(lin, "weight", {1, 2, 3, 4, 5, 6});
  set(lin, "bias", {0.5f, -1});
  T x = from({1, 0, -1, 2, 1, 0}, {2, 3});
  // x W^T + b
  expect_near(call(lin, x), {1 - 3 + 0.5, 4 - 6 - 1, 2 + 2 + 0.5, 8 + 5 - 1});
  T y = tg_module_call(lin, x);
  EXPECT_EQ(shape_of(y), (Shape{2, 2}));
}

// a direct loop over tinygrad's conv2d definition: out[n, o, y, x] = b[o] + sum w[o, c, i, j] * in[n, g*cin + c, ...]
std::vector<double> conv2d_ref(const std::vector<float>& in, Shape is, const std::vector<float>& w, Shape ws, const std::vector<float>& b,
                               int64_t stride, int64_t pad, int64_t dil, int64_t groups, Shape& os) {
  int64_t N = is[0], C = is[1], H = is[2], W = is[3], O = ws[0], cin = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = (H + 2 * pad - dil * (KH - 1) - 1) / stride + 1, OW = (W + 2 * pad - dil * (KW - 1) - 1) / stride + 1;
  os = {N, O, OH, OW};
  std::vector<double> out;
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t y = 0; y < OH; y++)
        for (int64_t x = 0; x < OW; x++) {
          double acc = b.empty() ? 0 : b[size_t(o)];
          int64_t g = o / (O / groups);
          for (int64_t c = 0; c < cin; c++)
            for (int64_t i = 0; i < KH; i++)
              for (int64_t j = 0; j < KW; j++) {
                int64_t iy = y * stride - pad + i * dil, ix = x * stride - pad + j * dil;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += double(w[size_t(((o * cin + c) * KH + i) * KW + j)]) * in[size_t(((n * C + g * cin + c) * H + iy) * W + ix)];
              }
          (void)C;
          out.push_back(acc);
        }
  return out;
}

TEST(NnCall, Conv2d) {
  struct Case {
    int64_t stride, pad, dil, groups;
    bool bias;
  };
  for (Case k : {Case{1, 0, 1, 1, true}, Case{2, 1, 1, 2, true}, Case{1, 2, 2, 1, false}, Case{2, 1, 1, 4, true}}) {
    SCOPED_TRACE("stride " + std::to_string(k.stride) + " pad " + std::to_string(k.pad) + " dilation " + std::to_string(k.dil) + " groups " +
                 std::to_string(k.groups));
    M conv = tg_nn_conv2d(4, 4, 3, 2, k.stride, k.pad, k.dil, k.groups, k.bias, nullptr);
    ASSERT_TRUE(conv.p) << tg_last_error_message();
    T w = tg_module_get(conv, "weight");
    std::vector<float> wv(size_t(tg_tensor_numel(w))), bv, xv(2 * 4 * 5 * 6);
    for (size_t i = 0; i < wv.size(); i++) wv[i] = float(int(i % 7) - 3) * 0.25f;
    for (size_t i = 0; i < xv.size(); i++) xv[i] = float(int(i * 5 % 11) - 5) * 0.5f;
    set(conv, "weight", wv);
    if (k.bias) bv = {1, -2, 0.5f, 3}, set(conv, "bias", bv);
    Shape os;
    std::vector<double> want = conv2d_ref(xv, {2, 4, 5, 6}, wv, shape_of(w), bv, k.stride, k.pad, k.dil, k.groups, os);
    T x = from(xv, {2, 4, 5, 6});
    T y = tg_module_call(conv, x);
    ASSERT_TRUE(y.p) << tg_last_error_message();
    EXPECT_EQ(shape_of(y), os);
    expect_near(data(y), want);
  }
}

TEST(NnCall, BatchNormEvalUsesRunningStats) {
  M bn = tg_nn_batchnorm(2, 0, 0.1, 1, 1, nullptr);
  set(bn, "running_mean", {1, 2});
  set(bn, "running_var", {4, 9});
  set(bn, "weight", {2, 3});
  set(bn, "bias", {0.5f, -0.5f});
  T x = from({3, 5, -1, 8}, {2, 2});  // (N, C)
  // (x - mean) / sqrt(var) * w + b per channel
  expect_near(call(bn, x), {(3 - 1) / 2.0 * 2 + 0.5, (5 - 2) / 3.0 * 3 - 0.5, (-1 - 1) / 2.0 * 2 + 0.5, (8 - 2) / 3.0 * 3 - 0.5});
  T rm = tg_module_get(bn, "running_mean"), nbt = tg_module_get(bn, "num_batches_tracked");
  EXPECT_EQ(data(rm), (std::vector<float>{1, 2}));
  EXPECT_EQ(data<int64_t>(nbt), std::vector<int64_t>{0});
}

TEST(NnCall, BatchNormTrainUsesBatchStatsAndUpdatesRunningOnes) {
  M bn = tg_nn_batchnorm(2, 0, 0.25, 1, 1, nullptr);
  set(bn, "weight", {2, 1});
  set(bn, "bias", {0, 1});
  set(bn, "running_mean", {1, -1});
  std::vector<float> xv = {1, 10, 2, 20, 3, 30, 6, 40};  // (4, 2): channel 0 is 1, 2, 3, 6; channel 1 is 10..40
  T x = from(xv, {4, 2});
  std::vector<float> y;
  {
    Training on;
    y = call(bn, x);
  }
  std::vector<double> mean = {3, 25}, var = {(4 + 1 + 0 + 9) / 4.0, (225 + 25 + 25 + 225) / 4.0}, w = {2, 1}, b = {0, 1}, want;
  for (size_t i = 0; i < xv.size(); i++) want.push_back((xv[i] - mean[i % 2]) / std::sqrt(var[i % 2]) * w[i % 2] + b[i % 2]);
  expect_near(y, want);
  // momentum 0.25, the variance unbiased (n / (n - 1) with n = 4 per channel)
  T rm = tg_module_get(bn, "running_mean"), rv = tg_module_get(bn, "running_var"), nbt = tg_module_get(bn, "num_batches_tracked");
  expect_near(data(rm), {0.75 * 1 + 0.25 * 3, 0.75 * -1 + 0.25 * 25});
  expect_near(data(rv), {0.75 + 0.25 * var[0] * 4 / 3, 0.75 + 0.25 * var[1] * 4 / 3});
  EXPECT_EQ(data<int64_t>(nbt), std::vector<int64_t>{1});
  // out of training again: the running statistics normalize, nothing moves
  T x2 = from({1.75f, 5.5f}, {1, 2});
  std::vector<float> r = data(rm), v = data(rv);
  expect_near(call(bn, x2), {(1.75 - r[0]) / std::sqrt(v[0]) * 2, (5.5 - r[1]) / std::sqrt(v[1]) + 1});
  EXPECT_EQ(data<int64_t>(nbt), std::vector<int64_t>{1});
}

TEST(NnCall, SequentialNamesAndForward) {
  M l1 = tg_nn_linear(2, 3, 1, nullptr), relu = tg_nn_function("relu"), l2 = tg_nn_linear(3, 1, 1, nullptr);
  tg_module* layers[] = {l1, relu, l2};
  M seq = tg_nn_sequential(layers, 3);
  ASSERT_TRUE(seq.p) << tg_last_error_message();
  EXPECT_EQ(entries(seq), (Entries{{"0.weight", {3, 2}}, {"0.bias", {3}}, {"2.weight", {1, 3}}, {"2.bias", {1}}}));
  EXPECT_EQ(tg_module_parameter_count(seq), 4u);
  EXPECT_STREQ(tg_module_kind(seq), "Sequential");
  set(seq, "0.weight", {1, 0, 0, 1, 1, 1});
  set(seq, "0.bias", {0, 0, -10});
  set(seq, "2.weight", {1, 2, 3});
  set(seq, "2.bias", {0.5f});
  // the layers are shared: the sequence's "0.weight" is l1's weight
  T w1 = tg_module_get(l1, "weight");
  EXPECT_EQ(data(w1), (std::vector<float>{1, 0, 0, 1, 1, 1}));
  T x = from({2, -3, 4, 5}, {2, 2});
  // h = relu(x W1^T + b1): row 0 (2, -3, -11) -> (2, 0, 0); row 1 (4, 5, -1) -> (4, 5, 0); y = h . (1, 2, 3) + 0.5
  expect_near(call(seq, x), {2.5, 14.5});
}

TEST(NnCall, Embedding) {
  M emb = tg_nn_embedding(4, 3, nullptr);
  std::vector<float> wv = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32};
  set(emb, "weight", wv);
  T idx = from_i32({3, 0, 3, 1}, {2, 2});
  T y = tg_module_call(emb, idx);
  ASSERT_TRUE(y.p) << tg_last_error_message();
  EXPECT_EQ(shape_of(y), (Shape{2, 2, 3}));
  EXPECT_EQ(data(y), (std::vector<float>{30, 31, 32, 0, 1, 2, 30, 31, 32, 10, 11, 12}));
  int64_t s[] = {2};
  T idx64 = tg_tensor_full(s, 1, 2, TG_INT64, nullptr);
  T y64 = tg_module_call(emb, idx64);
  EXPECT_EQ(data(y64), (std::vector<float>{20, 21, 22, 20, 21, 22}));
}

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

TEST(NnCall, LSTMCell) {
  // input 1, hidden 1: gates (i, f, g, o) = W_ih x + b_ih + W_hh h + b_hh
  M cell = tg_nn_lstm_cell(1, 1, 1, nullptr);
  std::vector<double> wih = {0.5, -0.25, 1, 0.75}, whh = {0.1, 0.2, -0.3, 0.4}, bih = {0.05, 0.1, -0.1, 0}, bhh = {0, 0.2, 0.3, -0.2};
  auto f32 = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  set(cell, "weight_ih", f32(wih));
  set(cell, "weight_hh", f32(whh));
  set(cell, "bias_ih", f32(bih));
  set(cell, "bias_hh", f32(bhh));
  auto step = [&](double x, double h, double c) {
    double g[4];
    for (int k = 0; k < 4; k++) g[k] = wih[k] * x + bih[k] + whh[k] * h + bhh[k];
    double nc = sigmoid(g[1]) * c + sigmoid(g[0]) * std::tanh(g[2]);
    return std::pair{sigmoid(g[3]) * std::tanh(nc), nc};
  };
  T x = from({0.7f, -1.2f}, {2, 1});
  tg_tensor *h = nullptr, *c = nullptr;
  ASSERT_EQ(tg_lstm_cell_step(cell, x, nullptr, nullptr, &h, &c), TG_OK) << tg_last_error_message();
  T h1 = h, c1 = c;
  auto [a0, b0] = step(0.7, 0, 0);
  auto [a1, b1] = step(-1.2, 0, 0);
  expect_near(data(h1), {a0, a1});
  expect_near(data(c1), {b0, b1});
  expect_near(call(cell, x), {a0, a1});  // tg_module_call: h from the zero state
  ASSERT_EQ(tg_lstm_cell_step(cell, x, h1, c1, &h, &c), TG_OK) << tg_last_error_message();
  T h2 = h, c2 = c;
  expect_near(data(h2), {step(0.7, a0, b0).first, step(-1.2, a1, b1).first});
  expect_near(data(c2), {step(0.7, a0, b0).second, step(-1.2, a1, b1).second});
}

TEST(NnCall, FunctionsAndDropout) {
  T x = from({-2, -0.5f, 0, 1.5f}, {1, 4});
  M relu = tg_nn_function("relu"), tanh_ = tg_nn_function("tanh"), drop = tg_nn_function("dropout");
  expect_near(call(relu, x), {0, 0, 0, 1.5});
  expect_near(call(tanh_, x), {std::tanh(-2.0), std::tanh(-0.5), 0, std::tanh(1.5)});
  EXPECT_EQ(call(drop, x), (std::vector<float>{-2, -0.5f, 0, 1.5f}));  // the identity outside training
  int64_t s[] = {1, 4096};
  T ones = tg_tensor_ones(s, 2, TG_FLOAT32, nullptr);
  Training on;
  std::vector<float> d = call(drop, ones);
  size_t kept = 0;
  for (float v : d) {
    EXPECT_TRUE(v == 0 || v == 2) << v;  // kept values scale by 1 / (1 - p)
    kept += v == 2;
  }
  EXPECT_GT(kept, 1700u);
  EXPECT_LT(kept, 2400u);
}

// ---- parameters, get, sharing ---------------------------------------------------------------------------------------
TEST(NnModule, ParametersShareTheModulesTensors) {
  M lin = tg_nn_linear(2, 2, 1, nullptr);
  tg_tensor* ps[2] = {};
  ASSERT_EQ(tg_module_parameters(lin, ps, 2), TG_OK) << tg_last_error_message();
  T w = ps[0], b = ps[1];
  EXPECT_EQ(shape_of(w), (Shape{2, 2}));
  EXPECT_EQ(shape_of(b), (Shape{2}));
  T eye = from({1, 0, 0, 1}, {2, 2}), zero = from({0, 0}, {2});
  ASSERT_EQ(tg_tensor_assign(w, eye), TG_OK);
  ASSERT_EQ(tg_tensor_assign(b, zero), TG_OK);
  ASSERT_EQ(tg_tensor_realize(w), TG_OK);
  ASSERT_EQ(tg_tensor_realize(b), TG_OK);
  T x = from({3, -4}, {1, 2});
  EXPECT_EQ(call(lin, x), (std::vector<float>{3, -4}));
  T got = tg_module_get(lin, "weight");
  EXPECT_EQ(data(got), (std::vector<float>{1, 0, 0, 1}));
  // and the other way: assigning through tg_module_get shows in the parameter
  set(lin, "bias", {1, 1});
  EXPECT_EQ(data(b), (std::vector<float>{1, 1}));
  EXPECT_EQ(tg_module_parameters(lin, ps, 1), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"room for 1", "has 2"});
  EXPECT_EQ(tg_module_parameters(lin, nullptr, 2), TG_ERROR_INVALID_ARGUMENT);
  tg_clear_error();
  EXPECT_EQ(tg_module_get(lin, "weights"), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"Linear", "'weights'"});
  EXPECT_EQ(tg_module_get(lin, nullptr), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"name is NULL"});
}

TEST(NnModule, RetainKeepsTheModuleAlive) {
  tg_module* lin = tg_nn_linear(2, 2, 1, nullptr);
  ASSERT_EQ(tg_module_retain(lin), lin);
  tg_module_release(lin);
  EXPECT_STREQ(tg_module_kind(lin), "Linear");
  tg_module_release(lin);
  EXPECT_EQ(tg_module_kind(lin), nullptr);  // released: detected, not dereferenced
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"not a live tg_module handle"});
}

// ---- state dicts ------------------------------------------------------------------------------------------------------
S state_of(std::vector<std::pair<std::string, T>> es) {
  S s = tg_state_create();
  for (auto& [k, t] : es) EXPECT_EQ(tg_state_set(s, k.c_str(), t), TG_OK) << tg_last_error_message();
  return S(tg_state_retain(s));
}

TEST(NnState, LoadStrictAndNonStrict) {
  M lin = tg_nn_linear(2, 3, 1, nullptr);
  set(lin, "weight", {0, 0, 0, 0, 0, 0});
  std::vector<float> wv = {1, 2, 3, 4, 5, 6};
  T w = from(wv, {3, 2}), b = from({7, 8, 9}, {3}), extra = from({1}, {1}), wrong = from({1, 2, 3}, {3});
  T weight = tg_module_get(lin, "weight");
  {  // missing bias
    S s = state_of({{"weight", w}});
    EXPECT_EQ(tg_module_load_state(lin, s, 1), TG_ERROR_INVALID_ARGUMENT);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"missing bias"});
    EXPECT_EQ(data(weight), std::vector<float>(6, 0)) << "a refused load assigns nothing";
    EXPECT_EQ(tg_module_load_state(lin, s, 0), TG_OK) << tg_last_error_message();
    EXPECT_EQ(data(weight), wv);
  }
  {  // unexpected name, and both at once
    S s = state_of({{"weight", w}, {"bias", b}, {"head.weight", extra}});
    EXPECT_EQ(tg_module_load_state(lin, s, 1), TG_ERROR_INVALID_ARGUMENT);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"unexpected head.weight"});
    S s2 = state_of({{"weight", w}, {"head.weight", extra}});
    EXPECT_EQ(tg_module_load_state(lin, s2, 1), TG_ERROR_INVALID_ARGUMENT);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"missing bias", "unexpected head.weight"});
    EXPECT_EQ(tg_module_load_state(lin, s, 0), TG_OK) << tg_last_error_message();
    T bias = tg_module_get(lin, "bias");
    EXPECT_EQ(data(bias), (std::vector<float>{7, 8, 9}));
  }
  {  // a shape mismatch is an error strict or not
    set(lin, "weight", {0, 0, 0, 0, 0, 0});
    S s = state_of({{"weight", wrong}, {"bias", b}});
    for (int strict : {1, 0}) {
      EXPECT_EQ(tg_module_load_state(lin, s, strict), TG_ERROR_SHAPE);
      expect_error(TG_ERROR_SHAPE, {"weight ((3,) for (3,2))"});
    }
    EXPECT_EQ(data(weight), std::vector<float>(6, 0));
  }
  EXPECT_EQ(tg_module_load_state(lin, nullptr, 1), TG_ERROR_INVALID_ARGUMENT);
  tg_clear_error();
}

TEST(NnState, LoadCastsToTheModulesDtype) {
  M bn = tg_nn_batchnorm(2, 1e-5, 0.1, 1, 1, nullptr);
  S mine = tg_module_state(bn);
  int64_t one[] = {2};
  T nbt = tg_tensor_full(nullptr, 0, 5, TG_FLOAT32, nullptr), rm = tg_tensor_full(one, 1, 3, TG_FLOAT64, nullptr);
  S s = state_of({{"num_batches_tracked", nbt}, {"running_mean", rm}});
  ASSERT_EQ(tg_module_load_state(bn, s, 0), TG_OK) << tg_last_error_message();
  T got = tg_module_get(bn, "num_batches_tracked"), grm = tg_module_get(bn, "running_mean");
  EXPECT_EQ(data<int64_t>(got), std::vector<int64_t>{5});
  EXPECT_EQ(data(grm), (std::vector<float>{3, 3}));
}

TEST(NnState, SaveLoadRoundTripIntoAFreshModule) {
  TmpDir dir;
  auto make = [] {
    tg_module* layers[] = {tg_nn_conv2d(1, 3, 3, 3, 1, 1, 1, 1, 1, nullptr), tg_nn_batchnorm(3, 1e-5, 0.1, 1, 1, nullptr), tg_nn_function("relu"),
                           tg_nn_function("flatten"), tg_nn_linear(3 * 4 * 4, 5, 1, nullptr)};
    tg_module* seq = tg_nn_sequential(layers, 5);
    for (tg_module* l : layers) tg_module_release(l);
    return seq;
  };
  tg_manual_seed(7);
  M a = make(), b = make();
  std::vector<float> xv(2 * 16);
  for (size_t i = 0; i < xv.size(); i++) xv[i] = std::sin(float(i));
  T x = from(xv, {2, 1, 4, 4});
  {
    Training on;  // running statistics move off their start
    T y = tg_module_call(a, x);
    ASSERT_EQ(tg_tensor_realize(y), TG_OK) << tg_last_error_message();
  }
  std::string path = (dir.p / "m.safetensors").string();
  {
    S s = tg_module_state(a);
    ASSERT_EQ(tg_state_save(s, path.c_str()), TG_OK) << tg_last_error_message();
  }
  std::vector<float> ya = call(a, x), yb = call(b, x);
  EXPECT_NE(ya, yb);
  S loaded = tg_state_load(path.c_str(), nullptr);
  ASSERT_TRUE(loaded.p) << tg_last_error_message();
  EXPECT_EQ(tg_state_count(loaded), 9);  // conv 2, batchnorm 5, linear 2
  ASSERT_EQ(tg_module_load_state(b, loaded, 1), TG_OK) << tg_last_error_message();
  EXPECT_EQ(call(b, x), ya);
  T nbt = tg_module_get(b, "1.num_batches_tracked"), rv_a = tg_module_get(a, "1.running_var"), rv_b = tg_module_get(b, "1.running_var");
  EXPECT_EQ(data<int64_t>(nbt), std::vector<int64_t>{1});
  EXPECT_EQ(data(rv_b), data(rv_a));
}

// ---- bad arguments ----------------------------------------------------------------------------------------------------
TEST(NnArgs, NullAndReleasedHandles) {
  T x = from({1, 2}, {1, 2});
  tg_module* dead = tg_nn_linear(2, 2, 1, nullptr);
  tg_module_release(dead);
  for (tg_module* m : {static_cast<tg_module*>(nullptr), dead}) {
    const char* why = m ? "not a live tg_module handle" : "module is NULL";
    tg_tensor *h = nullptr, *c = nullptr, *out[1];
    EXPECT_EQ(tg_module_call(m, x), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"tg_module_call", why});
    EXPECT_EQ(tg_module_get(m, "weight"), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"tg_module_get", why});
    EXPECT_EQ(tg_module_state(m), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"tg_module_state", why});
    EXPECT_EQ(tg_module_parameter_count(m), 0u);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"tg_module_parameter_count", why});
    EXPECT_EQ(tg_module_parameters(m, out, 1), TG_ERROR_INVALID_ARGUMENT);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"tg_module_parameters", why});
    S s = tg_state_create();
    EXPECT_EQ(tg_module_load_state(m, s, 1), TG_ERROR_INVALID_ARGUMENT);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"tg_module_load_state", why});
    EXPECT_EQ(tg_module_kind(m), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {why});
    EXPECT_EQ(tg_lstm_cell_step(m, x, nullptr, nullptr, &h, &c), TG_ERROR_INVALID_ARGUMENT);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {"tg_lstm_cell_step", why});
    EXPECT_EQ(tg_module_retain(m), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {why});
  }
  tg_module_release(nullptr);
  M lin = tg_nn_linear(2, 2, 1, nullptr);
  EXPECT_EQ(tg_module_call(lin, nullptr), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"tg_module_call"});
}

TEST(NnArgs, BadSizes) {
  int64_t ns[] = {4, 0};
  // each constructor call sets the error before the next runs: check them one at a time
  auto refused = [](tg_module* m, const char* needle) {
    EXPECT_EQ(m, nullptr);
    tg_module_release(m);
    expect_error(TG_ERROR_INVALID_ARGUMENT, {needle});
  };
  refused(tg_nn_linear(0, 3, 1, nullptr), "Linear");
  refused(tg_nn_linear(3, -1, 1, nullptr), "Linear");
  refused(tg_nn_conv2d(0, 4, 3, 3, 1, 0, 1, 1, 1, nullptr), "Conv2d");
  refused(tg_nn_conv2d(4, 4, 3, 0, 1, 0, 1, 1, 1, nullptr), "Conv2d");
  refused(tg_nn_conv2d(4, 4, 3, 3, 1, 0, 1, 0, 1, nullptr), "Conv2d");
  refused(tg_nn_conv2d(4, 6, 3, 3, 1, 0, 1, 4, 1, nullptr), "groups");
  refused(tg_nn_conv2d(6, 4, 3, 3, 1, 0, 1, 4, 1, nullptr), "groups");
  refused(tg_nn_conv1d(4, 4, -2, 1, 0, 1, 1, 1, nullptr), "Conv2d");
  refused(tg_nn_conv1d(3, 6, 3, 1, 0, 1, 2, 1, nullptr), "groups");
  refused(tg_nn_conv_transpose2d(4, 0, 3, 3, 1, 0, 0, 1, 1, 1, nullptr), "ConvTranspose2d");
  refused(tg_nn_conv_transpose2d(4, 6, 3, 3, 1, 0, 0, 1, 4, 1, nullptr), "groups");
  refused(tg_nn_batchnorm(0, 1e-5, 0.1, 1, 1, nullptr), "BatchNorm");
  refused(tg_nn_layernorm(ns, 2, 1e-5, 1, nullptr), "LayerNorm");
  refused(tg_nn_layernorm(ns, 0, 1e-5, 1, nullptr), "LayerNorm");
  refused(tg_nn_layernorm(nullptr, 1, 1e-5, 1, nullptr), "normalized_shape is NULL");
  refused(tg_nn_rmsnorm(0, 1e-6, 1, nullptr), "RMSNorm");
  refused(tg_nn_groupnorm(0, 4, 1e-5, 1, nullptr), "GroupNorm");
  refused(tg_nn_groupnorm(3, 4, 1e-5, 1, nullptr), "don't divide");
  refused(tg_nn_instancenorm(-3, 1e-5, 1, nullptr), "InstanceNorm");
  refused(tg_nn_embedding(0, 4, nullptr), "Embedding");
  refused(tg_nn_embedding(4, 0, nullptr), "Embedding");
  refused(tg_nn_lstm_cell(3, 0, 1, nullptr), "LSTMCell");
  refused(tg_nn_lstm_cell(0, 3, 1, nullptr), "LSTMCell");
}

TEST(NnArgs, FunctionNames) {
  EXPECT_EQ(tg_nn_function("rleu"), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"rleu", "relu", "gelu", "log_softmax", "max_pool2d", "dropout"});
  EXPECT_EQ(tg_nn_function(nullptr), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"name is NULL"});
  for (const char* n : {"relu", "relu6", "leaky_relu", "gelu", "quick_gelu", "silu", "swish", "elu", "selu", "mish", "softplus", "hardswish",
                        "hardsigmoid", "hardtanh", "tanh", "sigmoid", "softmax", "log_softmax", "flatten", "max_pool2d", "avg_pool2d", "dropout"}) {
    M f = tg_nn_function(n);
    EXPECT_TRUE(f.p) << n << ": " << tg_last_error_message();
  }
}

TEST(NnArgs, WrongInputShapesNameTheModule) {
  auto refused = [](tg_module* m, tg_tensor* x, tg_status st, std::vector<std::string> needles) {
    T y = tg_module_call(m, x);
    EXPECT_EQ(y.p, nullptr);
    expect_error(st, needles);
  };
  auto zeros = [](Shape s, tg_dtype dt = TG_FLOAT32) { return T(tg_tensor_zeros(s.data(), s.size(), dt, nullptr)); };
  M lin = tg_nn_linear(3, 2, 1, nullptr);
  refused(lin, zeros({4, 5}), TG_ERROR_SHAPE, {"Linear", "(4,5)"});
  M conv = tg_nn_conv2d(3, 4, 3, 3, 1, 0, 1, 1, 1, nullptr);
  refused(conv, zeros({3, 5, 5}), TG_ERROR_SHAPE, {"Conv2d"});
  refused(conv, zeros({1, 2, 5, 5}), TG_ERROR_SHAPE, {"Conv2d"});
  M ct = tg_nn_conv_transpose2d(3, 4, 3, 3, 1, 0, 0, 1, 1, 1, nullptr);
  refused(ct, zeros({1, 4, 5, 5}), TG_ERROR_SHAPE, {"ConvTranspose2d"});
  M bn = tg_nn_batchnorm(3, 1e-5, 0.1, 1, 1, nullptr);
  refused(bn, zeros({2, 4, 5}), TG_ERROR_SHAPE, {"BatchNorm"});
  refused(bn, zeros({3}), TG_ERROR_SHAPE, {"BatchNorm"});
  int64_t ns[] = {4, 5};
  M ln = tg_nn_layernorm(ns, 2, 1e-5, 1, nullptr);
  refused(ln, zeros({2, 5, 4}), TG_ERROR_SHAPE, {"LayerNorm"});
  M rms = tg_nn_rmsnorm(8, 1e-6, 1, nullptr);
  refused(rms, zeros({2, 7}), TG_ERROR_SHAPE, {"RMSNorm"});
  M gn = tg_nn_groupnorm(2, 6, 1e-5, 1, nullptr);
  refused(gn, zeros({2, 4, 3}), TG_ERROR_SHAPE, {"GroupNorm"});
  M in = tg_nn_instancenorm(3, 1e-5, 1, nullptr);
  refused(in, zeros({2, 4, 3}), TG_ERROR_SHAPE, {"InstanceNorm"});
  M emb = tg_nn_embedding(5, 2, nullptr);
  refused(emb, zeros({3}), TG_ERROR_DTYPE, {"Embedding"});
  M cell = tg_nn_lstm_cell(3, 2, 1, nullptr);
  refused(cell, zeros({4, 2}), TG_ERROR_SHAPE, {"LSTMCell"});
  refused(cell, zeros({1, 4, 3}), TG_ERROR_SHAPE, {"LSTMCell"});
  tg_module* layers[] = {lin, lin};  // (.., 3) -> (.., 2) -> a second Linear of 3 inputs fails
  M seq = tg_nn_sequential(layers, 2);
  refused(seq, zeros({1, 3}), TG_ERROR_SHAPE, {"Linear"});
}

TEST(NnArgs, LSTMCellStepArguments) {
  M cell = tg_nn_lstm_cell(3, 2, 1, nullptr), lin = tg_nn_linear(3, 2, 1, nullptr);
  int64_t xs[] = {4, 3}, hs[] = {4, 2}, bad[] = {4, 3};
  T x = tg_tensor_zeros(xs, 2, TG_FLOAT32, nullptr), h = tg_tensor_zeros(hs, 2, TG_FLOAT32, nullptr);
  T hb = tg_tensor_zeros(bad, 2, TG_FLOAT32, nullptr);
  tg_tensor *ho = nullptr, *co = nullptr;
  EXPECT_EQ(tg_lstm_cell_step(cell, x, h, nullptr, &ho, &co), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"both h and c"});
  EXPECT_EQ(tg_lstm_cell_step(cell, x, nullptr, h, &ho, &co), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"both h and c"});
  EXPECT_EQ(tg_lstm_cell_step(cell, x, nullptr, nullptr, nullptr, &co), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"h_out and c_out"});
  EXPECT_EQ(tg_lstm_cell_step(lin, x, nullptr, nullptr, &ho, &co), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"Linear", "not an LSTMCell"});
  EXPECT_EQ(tg_lstm_cell_step(cell, x, hb, h, &ho, &co), TG_ERROR_SHAPE);
  expect_error(TG_ERROR_SHAPE, {"LSTMCell", "(4,2)"});
  EXPECT_EQ(tg_lstm_cell_step(cell, nullptr, nullptr, nullptr, &ho, &co), TG_ERROR_INVALID_ARGUMENT);
  tg_clear_error();
  EXPECT_EQ(ho, nullptr);
  EXPECT_EQ(co, nullptr);
}

TEST(NnArgs, SequentialLayers) {
  M lin = tg_nn_linear(2, 2, 1, nullptr);
  tg_module* layers[] = {lin, nullptr};
  EXPECT_EQ(tg_nn_sequential(layers, 2), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"layers[1]"});
  EXPECT_EQ(tg_nn_sequential(nullptr, 2), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"layers is NULL"});
  tg_module* dead = tg_nn_linear(2, 2, 1, nullptr);
  tg_module_release(dead);
  tg_module* with_dead[] = {lin, dead};
  EXPECT_EQ(tg_nn_sequential(with_dead, 2), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"layers[1]", "not a live tg_module handle"});
  // the sequence holds its own references: its layers outlive the caller's
  tg_module* l2 = tg_nn_linear(2, 1, 0, nullptr);
  tg_module* ok[] = {lin, l2};
  M seq = tg_nn_sequential(ok, 2);
  tg_module_release(l2);
  T x = from({1, 1}, {1, 2});
  EXPECT_EQ(call(seq, x).size(), 1u);
  M empty = tg_nn_sequential(nullptr, 0);
  ASSERT_TRUE(empty.p) << tg_last_error_message();
  EXPECT_EQ(call(empty, x), (std::vector<float>{1, 1}));
}

// ---- IDX files ----------------------------------------------------------------------------------------------------------
using Bytes = std::vector<uint8_t>;
void write_file(const fs::path& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), long(b.size()));
}
void write_gz(const fs::path& p, const Bytes& b) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, b.data(), unsigned(b.size())), int(b.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}
void put_be(Bytes& b, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; i--) b.push_back(uint8_t(v >> (8 * i)));
}
Bytes idx_header(uint8_t type, std::vector<uint32_t> dims) {
  Bytes b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims) put_be(b, d, 4);
  return b;
}
void expect_idx_error(const fs::path& p, std::vector<std::string> needles) {
  T t = tg_tensor_from_idx(p.string().c_str(), nullptr);
  EXPECT_EQ(t.p, nullptr);
  needles.push_back(p.filename().string());
  expect_error(TG_ERROR_IO, needles);
}

TEST(NnIdx, HostileFiles) {
  TmpDir dir;
  auto file = [&](const char* name, const Bytes& b) {
    write_file(dir.p / name, b);
    return dir.p / name;
  };
  expect_idx_error(dir.p / "missing", {"cannot open"});
  expect_idx_error(file("empty", {}), {"IDX magic"});
  expect_idx_error(file("short", {0, 0}), {"IDX magic"});
  Bytes magic = idx_header(0x08, {2});
  magic[0] = 1;
  expect_idx_error(file("magic", magic), {"IDX magic"});
  expect_idx_error(file("type", idx_header(0x0A, {2})), {"unknown element type 0x0a"});
  Bytes trunc = idx_header(0x08, {2, 3, 4});
  trunc.resize(4 + 4 * 2 + 1);
  expect_idx_error(file("truncdims", trunc), {"truncated in its 3 dims"});
  expect_idx_error(file("nodims", {0, 0, 8, 0}), {"truncated"});
  Bytes shorter = idx_header(0x0C, {2, 3});
  shorter.resize(shorter.size() + 23);  // 6 int32 need 24 bytes
  expect_idx_error(file("shorter", shorter), {"holds 23 data bytes", "need 24"});
  Bytes longer = idx_header(0x08, {2, 3});
  longer.resize(longer.size() + 7);
  expect_idx_error(file("longer", longer), {"holds 7 data bytes", "need 6"});
  expect_idx_error(file("overflow", idx_header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF})), {"too large"});
  expect_idx_error(file("overflow2", idx_header(0x08, {65536, 65536, 65536})), {"too large"});
  // gzip's magic, then garbage
  expect_idx_error(file("garbage.gz", {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef, 0x12, 0x34, 0x56, 0x78}), {"not readable"});
  // a valid gzip stream cut short
  Bytes big = idx_header(0x08, {64, 64});
  for (int i = 0; i < 64 * 64; i++) big.push_back(uint8_t(i * 37 % 251));
  write_gz(dir.p / "whole.gz", big);
  std::ifstream in(dir.p / "whole.gz", std::ios::binary);
  Bytes gz((std::istreambuf_iterator<char>(in)), {});
  Bytes half(gz.begin(), gz.begin() + long(gz.size() / 2)), no_trailer(gz.begin(), gz.end() - 8);
  expect_idx_error(file("cut.gz", half), {"truncated"});
  // every byte inflated, but the CRC and length that check them are gone
  expect_idx_error(file("notrailer.gz", no_trailer), {"truncated"});
  Bytes bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 1;
  expect_idx_error(file("badcrc.gz", bad_crc), {"not readable"});
  // a gzip of a file with wrong sizes is checked as the plain one
  Bytes bad = idx_header(0x08, {3});
  bad.push_back(1);
  write_gz(dir.p / "bad.gz", bad);
  expect_idx_error(dir.p / "bad.gz", {"holds 1 data bytes", "need 3"});
  EXPECT_EQ(tg_tensor_from_idx(nullptr, nullptr), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"path is NULL"});
}

TEST(NnIdx, ValidFilesPlainAndGzipped) {
  TmpDir dir;
  std::vector<int16_t> i16 = {-32768, -2, -1, 0, 1, 258, 32767, 12345, -12345, 7, 8, 9};
  std::vector<int32_t> i32 = {INT32_MIN, -1, 0, 1, 0x01020304, INT32_MAX};
  std::vector<float> f32 = {0.f, -0.f, 1.5f, -2.25f, 3.0e38f, 1.0e-38f, 3.14159f, -1e-3f};
  Bytes b16 = idx_header(0x0B, {3, 2, 2}), b32 = idx_header(0x0C, {6}), bf = idx_header(0x0D, {2, 4}), b8 = idx_header(0x08, {2, 2});
  for (int16_t v : i16) put_be(b16, uint16_t(v), 2);
  for (int32_t v : i32) put_be(b32, uint32_t(v), 4);
  for (float v : f32) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    put_be(bf, u, 4);
  }
  for (uint8_t v : {0, 127, 128, 255}) b8.push_back(v);
  for (bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzipped" : "plain");
    auto path = [&](const char* n) {
      fs::path p = dir.p / (std::string(n) + (gz ? ".gz" : ""));
      return p;
    };
    for (auto& [n, b] : std::vector<std::pair<const char*, Bytes*>>{{"i16", &b16}, {"i32", &b32}, {"f32", &bf}, {"u8", &b8}}) {
      if (gz) write_gz(path(n), *b);
      else write_file(path(n), *b);
    }
    auto load = [&](const char* n, tg_dtype want_dt, Shape want_shape) {
      T t = tg_tensor_from_idx(path(n).string().c_str(), nullptr);
      EXPECT_TRUE(t.p) << tg_last_error_message();
      tg_dtype dt = TG_DTYPE_INVALID;
      if (!t.p) return t;
      EXPECT_EQ(tg_tensor_dtype(t, &dt), TG_OK);
      EXPECT_EQ(dt, want_dt);
      EXPECT_EQ(shape_of(t), want_shape);
      return t;
    };
    T t16 = load("i16", TG_INT16, {3, 2, 2}), t32 = load("i32", TG_INT32, {6});
    T tf = load("f32", TG_FLOAT32, {2, 4}), t8 = load("u8", TG_UINT8, {2, 2});
    if (!t16.p || !t32.p || !tf.p || !t8.p) continue;
    EXPECT_EQ(data<int16_t>(t16), i16);
    EXPECT_EQ(data<int32_t>(t32), i32);
    std::vector<float> got = data(tf);
    ASSERT_EQ(got.size(), f32.size());
    EXPECT_EQ(std::memcmp(got.data(), f32.data(), 4 * f32.size()), 0) << "float32 bit patterns";
    EXPECT_EQ(data<uint8_t>(t8), (std::vector<uint8_t>{0, 127, 128, 255}));
  }
}

TEST(NnMnist, FashionMnist) {
  tg_tensor *xtr = nullptr, *ytr = nullptr, *xte = nullptr, *yte = nullptr;
  ASSERT_EQ(tg_dataset_mnist(nullptr, nullptr, &xtr, &ytr, &xte, &yte), TG_OK) << tg_last_error_message();
  T a = xtr, b = ytr, c = xte, d = yte;
  EXPECT_EQ(shape_of(a), (Shape{60000, 1, 28, 28}));
  EXPECT_EQ(shape_of(b), (Shape{60000}));
  EXPECT_EQ(shape_of(c), (Shape{10000, 1, 28, 28}));
  EXPECT_EQ(shape_of(d), (Shape{10000}));
  for (tg_tensor* t : {xtr, ytr, xte, yte}) {
    tg_dtype dt = TG_DTYPE_INVALID;
    EXPECT_EQ(tg_tensor_dtype(t, &dt), TG_OK);
    EXPECT_EQ(dt, TG_UINT8);
  }
  std::vector<int> counts(256);
  for (uint8_t y : data<uint8_t>(d)) counts[y]++;
  for (int k = 0; k < 10; k++) EXPECT_EQ(counts[size_t(k)], 1000) << "class " << k;  // Fashion-MNIST's test set is balanced
  // the same bytes as the IDX reader gives for the file itself
  T raw = tg_tensor_from_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", nullptr);
  EXPECT_EQ(data<uint8_t>(raw), data<uint8_t>(c));
}

TEST(NnMnist, Errors) {
  TmpDir dir;
  tg_tensor *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  EXPECT_EQ(tg_dataset_mnist(dir.p.string().c_str(), nullptr, &a, &b, &c, &d), TG_ERROR_IO);
  expect_error(TG_ERROR_IO, {"train-images-idx3-ubyte"});
  EXPECT_EQ(tg_dataset_mnist(nullptr, nullptr, &a, &b, &c, nullptr), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, {"output pointer is NULL"});
  // labels that don't match the images
  Bytes img = idx_header(0x08, {2, 28, 28}), lab = idx_header(0x08, {3});
  img.resize(img.size() + 2 * 28 * 28);
  lab.resize(lab.size() + 3);
  for (const char* n : {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte"}) write_file(dir.p / n, img);
  for (const char* n : {"train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"}) write_file(dir.p / n, lab);
  EXPECT_EQ(tg_dataset_mnist(dir.p.string().c_str(), nullptr, &a, &b, &c, &d), TG_ERROR_IO);
  expect_error(TG_ERROR_IO, {"don't match"});
}

}  // namespace
