// tg_module_set, tg_module_get_option, tg_module_set_option: a module's named tensors and numeric attributes swapped
// and read as tinygrad's module attributes are (`layer.weight = t`, `layer.bias = None`, `bn.eps = 1e-3`), checked
// against hand computations, the state walk, and every refused swap.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "capi_handles.h"
#include "nn_capi.h"
#include "tinygrad.h"

namespace {

using namespace nn_capi;

// y = x W^T + b with W, b put in place of the module's: the call, tg_module_get and the state see the new tensors
TEST(ModuleSet, LinearWeightAndBiasSwapped) {
  M lin = tg_nn_linear(3, 2, 1, nullptr);
  ASSERT_TRUE(lin.p) << tg_last_error_message();
  T w = from({1, 2, 3, 4, 5, 6}, {2, 3}), b = from({0.5f, -1}, {2}), x = from({1, 0, -1, 2, 1, 1}, {2, 3});
  ASSERT_EQ(tg_module_set(lin, "weight", w), TG_OK) << tg_last_error_message();
  ASSERT_EQ(tg_module_set(lin, "bias", b), TG_OK) << tg_last_error_message();
  expect_near(call(lin, x), {1 - 3 + 0.5, 4 - 6 - 1, 2 + 2 + 3 + 0.5, 8 + 5 + 6 - 1});
  T got = tg_module_get(lin, "weight");
  EXPECT_EQ(data(got), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // the module shares the tensor: assigning into the caller's handle changes the next call
  T w2 = from({0, 0, 0, 0, 0, 1}, {2, 3});
  ASSERT_EQ(tg_tensor_assign(w, w2), TG_OK);
  ASSERT_EQ(tg_tensor_realize(w), TG_OK);
  expect_near(call(lin, x), {0.5, -1 - 1, 0.5, 1 - 1});
  S st = tg_module_state(lin);
  T from_state = tg_state_get(st, "weight");
  EXPECT_EQ(data(from_state), (std::vector<float>{0, 0, 0, 0, 0, 1}));
}

// NULL removes the bias: the call runs without it and the state walk no longer lists it; setting one adds it back
TEST(ModuleSet, RemoveAndAddOptionalTensors) {
  M lin = tg_nn_linear(2, 2, 1, nullptr);
  T w = from({1, 0, 0, 1}, {2, 2}), x = from({3, 4}, {1, 2});
  ASSERT_EQ(tg_module_set(lin, "weight", w), TG_OK);
  ASSERT_EQ(tg_module_set(lin, "bias", nullptr), TG_OK) << tg_last_error_message();
  expect_near(call(lin, x), {3, 4});
  EXPECT_EQ(names(lin), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(tg_module_parameter_count(lin), 1u);
  T b = from({10, 20}, {2});
  ASSERT_EQ(tg_module_set(lin, "bias", b), TG_OK);
  expect_near(call(lin, x), {13, 24});
  EXPECT_EQ(names(lin), (std::vector<std::string>{"weight", "bias"}));
  // a Linear made without a bias takes one
  M nob = tg_nn_linear(2, 2, 0, nullptr);
  ASSERT_EQ(tg_module_set(nob, "weight", w), TG_OK);
  ASSERT_EQ(tg_module_set(nob, "bias", b), TG_OK) << tg_last_error_message();
  expect_near(call(nob, x), {13, 24});
  // a required tensor can be replaced, not removed
  expect_error(tg_module_set(lin, "weight", nullptr), TG_ERROR_INVALID_ARGUMENT, {"tg_module_set", "'weight' is required"});
  expect_near(call(lin, x), {13, 24});
}

// BatchNorm: weight/bias/running statistics swapped and removed, eps and momentum changed, in eval and training
TEST(ModuleSet, BatchNormTensorsAndOptions) {
  M bn = tg_nn_batchnorm(2, 1e-5, 0.1, 1, 1, nullptr);
  ASSERT_TRUE(bn.p);
  T mean = from({1, -1}, {2}), var = from({4, 1}, {2}), w = from({2, 3}, {2}), b = from({0, 1}, {2});
  ASSERT_EQ(tg_module_set(bn, "running_mean", mean), TG_OK);
  ASSERT_EQ(tg_module_set(bn, "running_var", var), TG_OK);
  ASSERT_EQ(tg_module_set(bn, "weight", w), TG_OK);
  ASSERT_EQ(tg_module_set(bn, "bias", b), TG_OK);
  double eps = 0;
  ASSERT_EQ(tg_module_get_option(bn, "eps", &eps), TG_OK);
  EXPECT_DOUBLE_EQ(eps, 1e-5);
  ASSERT_EQ(tg_module_set_option(bn, "eps", 0), TG_OK);
  T x = from({3, 1, 5, 0}, {2, 2});  // (N=2, C=2)
  // (x - mean) / sqrt(var) * w + b
  expect_near(call(bn, x), {(3 - 1) / 2.0 * 2, (1 + 1) * 3 + 1.0, (5 - 1) / 2.0 * 2, (0 + 1) * 3 + 1.0});
  ASSERT_EQ(tg_module_set(bn, "weight", nullptr), TG_OK);
  expect_near(call(bn, x), {1, 2 + 1.0, 2, 1 + 1.0});
  ASSERT_EQ(tg_module_set(bn, "bias", nullptr), TG_OK);
  expect_near(call(bn, x), {1, 2, 2, 1});
  EXPECT_EQ(names(bn), (std::vector<std::string>{"num_batches_tracked", "running_mean", "running_var"}));
  EXPECT_EQ(tg_module_parameter_count(bn), 0u);
  // training: the running statistics assigned into are the swapped-in tensors, with the new momentum
  ASSERT_EQ(tg_module_set_option(bn, "momentum", 0.5), TG_OK);
  double m = 0;
  ASSERT_EQ(tg_module_get_option(bn, "momentum", &m), TG_OK);
  EXPECT_DOUBLE_EQ(m, 0.5);
  {
    OptionScope train("TRAINING", "1");
    T y = tg_module_call(bn, x);
    ASSERT_EQ(tg_tensor_realize(y), TG_OK) << tg_last_error_message();
  }
  // batch mean (4, 0.5), unbiased var (2, 0.5); 0.5 * old + 0.5 * new
  expect_near(data(mean), {2.5, -0.25});
  expect_near(data(var), {3, 0.75});
  // the counter takes one element, () or (1,), int or float (tinygrad's `bn.num_batches_tracked = Tensor.ones(1)`)
  T nbt = from_i32({7}, {}), f = from({7}, {1}), two = from({1, 2}, {2});
  ASSERT_EQ(tg_module_set(bn, "num_batches_tracked", nbt), TG_OK) << tg_last_error_message();
  ASSERT_EQ(tg_module_set(bn, "num_batches_tracked", f), TG_OK) << tg_last_error_message();
  expect_error(tg_module_set(bn, "num_batches_tracked", two), TG_ERROR_SHAPE, {"tg_module_set", "num_batches_tracked", "one element"});
  T flag = tg_tensor_cast(nbt, TG_BOOL);
  expect_error(tg_module_set(bn, "num_batches_tracked", flag), TG_ERROR_DTYPE, {"num_batches_tracked", "a number", "bool"});
  {
    OptionScope train("TRAINING", "1");
    T y = tg_module_call(bn, x);
    ASSERT_EQ(tg_tensor_realize(y), TG_OK) << tg_last_error_message();
  }
  EXPECT_EQ(data(f), (std::vector<float>{8}));
  // track_running_stats off: the batch statistics even in eval
  ASSERT_EQ(tg_module_set_option(bn, "track_running_stats", 0), TG_OK);
  double tr = 1;
  ASSERT_EQ(tg_module_get_option(bn, "track_running_stats", &tr), TG_OK);
  EXPECT_EQ(tr, 0);
  expect_near(call(bn, x), {-1, 1, 1, -1}, 1e-4);
}

// the norms' eps, GroupNorm's num_groups, and their weights swapped
TEST(ModuleSet, NormOptions) {
  M ln = tg_nn_layernorm(Shape{2}.data(), 1, 1e-5, 1, nullptr);
  T w = from({2, 1}, {2}), x = from({1, 3}, {1, 2});
  ASSERT_EQ(tg_module_set(ln, "weight", w), TG_OK);
  ASSERT_EQ(tg_module_set_option(ln, "eps", 3), TG_OK);
  // mean 2, var 1: (x - 2) / sqrt(1 + 3)
  expect_near(call(ln, x), {-0.5 * 2, 0.5});
  M rms = tg_nn_rmsnorm(2, 1e-6, 1, nullptr);
  ASSERT_EQ(tg_module_set(rms, "weight", w), TG_OK);
  ASSERT_EQ(tg_module_set_option(rms, "eps", 0), TG_OK);
  double r = std::sqrt(5.0);  // mean of squares 5
  expect_near(call(rms, x), {1 / r * 2, 3 / r});
  ASSERT_EQ(tg_module_set(rms, "weight", nullptr), TG_OK);
  expect_near(call(rms, x), {1 / r, 3 / r});
  M gn = tg_nn_groupnorm(2, 4, 0, 1, nullptr);
  T gx = from({0, 2, 10, 14}, {1, 4});
  expect_near(call(gn, gx), {-1, 1, -1, 1}, 1e-4);
  ASSERT_EQ(tg_module_set_option(gn, "num_groups", 1), TG_OK);
  double g = 0;
  ASSERT_EQ(tg_module_get_option(gn, "num_groups", &g), TG_OK);
  EXPECT_EQ(g, 1);
  double mu = 6.5, sd = std::sqrt((6.5 * 6.5 + 4.5 * 4.5 + 3.5 * 3.5 + 7.5 * 7.5) / 4);
  expect_near(call(gn, gx), {-mu / sd, (2 - mu) / sd, (10 - mu) / sd, (14 - mu) / sd}, 1e-4);
  expect_error(tg_module_set_option(gn, "num_groups", 3), TG_ERROR_INVALID_ARGUMENT, {"num_groups", "divides"});
  M in = tg_nn_instancenorm(2, 1e-5, 1, nullptr);
  expect_error(tg_module_set_option(in, "num_groups", 1), TG_ERROR_INVALID_ARGUMENT, {"tg_module_set_option", "InstanceNorm", "eps"});
  expect_error(tg_module_set_option(ln, "eps", -1), TG_ERROR_INVALID_ARGUMENT, {"eps"});
  expect_error(tg_module_set_option(ln, "eps", NAN), TG_ERROR_INVALID_ARGUMENT, {"finite"});
  double e = 0;
  ASSERT_EQ(tg_module_get_option(ln, "eps", &e), TG_OK);
  EXPECT_EQ(e, 3);  // refused values leave the old one
  M lin = tg_nn_linear(2, 2, 1, nullptr);
  expect_error(tg_module_get_option(lin, "eps", &e), TG_ERROR_INVALID_ARGUMENT, {"tg_module_get_option", "Linear", "no option", "none"});
}

// a Sequential's layers by "<index>.<name>", nested ones too; Embedding and LSTMCell tensors swapped
TEST(ModuleSet, SequentialEmbeddingLSTM) {
  M a = tg_nn_linear(2, 2, 1, nullptr), relu = tg_nn_function("relu"), b = tg_nn_linear(2, 1, 0, nullptr);
  tg_module* inner_layers[] = {relu, b};
  M inner = tg_nn_sequential(inner_layers, 2);
  tg_module* layers[] = {a, inner};
  M seq = tg_nn_sequential(layers, 2);
  ASSERT_TRUE(seq.p) << tg_last_error_message();
  T w = from({1, 0, 0, -1}, {2, 2}), w2 = from({1, 1}, {1, 2}), x = from({3, 4}, {1, 2});
  ASSERT_EQ(tg_module_set(seq, "0.weight", w), TG_OK) << tg_last_error_message();
  ASSERT_EQ(tg_module_set(seq, "0.bias", nullptr), TG_OK);
  ASSERT_EQ(tg_module_set(seq, "1.1.weight", w2), TG_OK) << tg_last_error_message();
  expect_near(call(seq, x), {3});  // relu(3, -4) . (1, 1)
  EXPECT_EQ(names(seq), (std::vector<std::string>{"0.weight", "1.1.weight"}));
  expect_error(tg_module_set(seq, "2.weight", w), TG_ERROR_INVALID_ARGUMENT, {"tg_module_set", "Sequential", "'2.weight'"});
  expect_error(tg_module_set(seq, "weight", w), TG_ERROR_INVALID_ARGUMENT, {"'weight'"});
  expect_error(tg_module_set(seq, "1.0.weight", w), TG_ERROR_INVALID_ARGUMENT, {"no tensor named 'weight'", "none"});

  M emb = tg_nn_embedding(3, 2, nullptr);
  T ew = from({0, 1, 2, 3, 4, 5}, {3, 2}), idx = from_i32({2, 0}, {2});
  ASSERT_EQ(tg_module_set(emb, "weight", ew), TG_OK);
  expect_near(call(emb, idx), {4, 5, 0, 1});
  expect_error(tg_module_set(emb, "weight", w), TG_ERROR_SHAPE, {"tg_module_set", "Embedding", "(3,2)", "(2,2)"});
  T iw = from_i32({0, 1, 2, 3, 4, 5}, {3, 2});
  expect_error(tg_module_set(emb, "weight", iw), TG_ERROR_DTYPE, {"float tensor", "int32"});

  M cell = tg_nn_lstm_cell(1, 1, 1, nullptr);
  T zero4 = from({0, 0, 0, 0}, {4, 1}), bias4 = from({0, 0, 0, 0}, {4});
  ASSERT_EQ(tg_module_set(cell, "weight_ih", zero4), TG_OK);
  ASSERT_EQ(tg_module_set(cell, "weight_hh", zero4), TG_OK);
  ASSERT_EQ(tg_module_set(cell, "bias_ih", nullptr), TG_OK);
  ASSERT_EQ(tg_module_set(cell, "bias_hh", nullptr), TG_OK);
  T cx = from({1}, {1, 1});
  expect_near(call(cell, cx), {0});  // every gate 0.5 or tanh(0) = 0: h = 0.5 * tanh(0)
  ASSERT_EQ(tg_module_set(cell, "bias_ih", bias4), TG_OK);
  EXPECT_EQ(names(cell), (std::vector<std::string>{"weight_ih", "weight_hh", "bias_ih"}));
}

TEST(ModuleSet, BadArguments) {
  M lin = tg_nn_linear(2, 2, 1, nullptr);
  T w = from({1, 2, 3, 4}, {2, 2});
  expect_error(tg_module_set(nullptr, "weight", w), TG_ERROR_INVALID_ARGUMENT, {"tg_module_set"});
  expect_error(tg_module_set(lin, nullptr, w), TG_ERROR_INVALID_ARGUMENT, {"tg_module_set", "name is NULL"});
  expect_error(tg_module_set(lin, "nope", w), TG_ERROR_INVALID_ARGUMENT, {"no tensor named 'nope'", "weight, bias"});
  T wrong = from({1, 2}, {1, 2});
  expect_error(tg_module_set(lin, "weight", wrong), TG_ERROR_SHAPE, {"'weight' is (2,2)", "(1,2)"});
  expect_error(tg_module_set(lin, "bias", wrong), TG_ERROR_SHAPE, {"'bias' is (2,)"});
  double v = 0;
  expect_error(tg_module_get_option(lin, nullptr, &v), TG_ERROR_INVALID_ARGUMENT, {"tg_module_get_option"});
  expect_error(tg_module_get_option(lin, "eps", nullptr), TG_ERROR_INVALID_ARGUMENT, {"tg_module_get_option"});
  expect_error(tg_module_set_option(lin, nullptr, 1), TG_ERROR_INVALID_ARGUMENT, {"tg_module_set_option"});
  // refused swaps leave the module as it was
  T x = from({1, 1}, {1, 2});
  ASSERT_EQ(tg_module_set(lin, "weight", w), TG_OK);
  T b = from({0, 0}, {2});
  ASSERT_EQ(tg_module_set(lin, "bias", b), TG_OK);
  expect_near(call(lin, x), {3, 7});
}

}  // namespace
