// Hostile input against nn modules, optimizers and indexing (issue 26): module trees nested 300k deep, Muon's
// Newton-Schulz step count, out-of-range index lists in setitem, module constructors given sizes that can't run, and
// handles released twice.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "capi_handles.h"
#include "tinygrad.h"

namespace {

template <class T>
T from(const std::vector<float>& v, std::vector<int64_t> s) {
  return T(tg_tensor_from_data(v.data(), v.size() * sizeof(float), TG_FLOAT32, s.data(), s.size(), nullptr));
}
std::vector<float> read(tg_tensor* t) {
  std::vector<float> out(size_t(std::max<int64_t>(tg_tensor_numel(t), 0)));
  EXPECT_EQ(tg_tensor_to_data(t, out.data(), out.size() * sizeof(float)), TG_OK) << tg_last_error_message();
  return out;
}
void expect_error(tg_status code, const std::string& needle) {
  EXPECT_EQ(tg_last_error(), code) << tg_status_name(tg_last_error()) << ": " << tg_last_error_message();
  EXPECT_NE(std::string(tg_last_error_message()).find(needle), std::string::npos) << tg_last_error_message();
}


// ---- module trees nested deeper than any stack: every walk is iterative ---------------------------------------------

// a Linear(2, 2) without bias wrapped in `depth` single-layer Sequentials; the caller owns the result
tg_module* deep_sequential(int depth) {
  tg_module* m = tg_nn_linear(2, 2, 0, nullptr);
  for (int i = 0; i < depth && m; i++) {
    tg_module* s = tg_nn_sequential(&m, 1);
    tg_module_release(m);
    m = s;
  }
  return m;
}

void exercise_deep(int depth) {
  tg_clear_error();
  M m = deep_sequential(depth);
  ASSERT_NE(m.p, nullptr) << tg_last_error_message();
  EXPECT_STREQ(tg_module_kind(m), "Sequential");
  EXPECT_EQ(tg_module_parameter_count(m), 1u) << tg_last_error_message();
  std::string name;
  for (int i = 0; i < depth; i++) name += "0.";
  name += "weight";
  T w = tg_module_get(m, name.c_str());
  ASSERT_NE(w.p, nullptr) << tg_last_error_message();
  S st = tg_module_state(m);
  ASSERT_NE(st.p, nullptr) << tg_last_error_message();
  ASSERT_EQ(tg_state_count(st), 1);
  EXPECT_EQ(std::string(tg_state_name(st, 0)), name);
  EXPECT_EQ(tg_module_load_state(m, st, 1), TG_OK) << tg_last_error_message();
  tg_tensor* ps[1] = {nullptr};
  ASSERT_EQ(tg_module_parameters(m, ps, 1), TG_OK) << tg_last_error_message();
  T p = ps[0];
  std::vector<float> wv = read(w);
  T x = from<T>({1, 2}, {1, 2});
  T y = tg_module_call(m, x);
  ASSERT_NE(y.p, nullptr) << tg_last_error_message();
  std::vector<float> got = read(y);  // x @ W^T
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FLOAT_EQ(got[0], wv[0] * 1 + wv[1] * 2);
  EXPECT_FLOAT_EQ(got[1], wv[2] * 1 + wv[3] * 2);
  tg_module_release(m.take());  // the whole chain goes at once
  EXPECT_EQ(tg_last_error(), TG_OK) << tg_last_error_message();
}

TEST(HostileNn, DeepSequentialEveryWalkIsIterative) { exercise_deep(300000); }

// the same on a 256 KiB stack: nothing depends on the stack's size
TEST(HostileNn, DeepSequentialOnASmallStack) {
  on_small_stack([] { exercise_deep(300000); });
}

// a tree as wide as it is deep, shared subtrees and names in tinygrad's order
TEST(HostileNn, SequentialSharedLayersAndNames) {
  M a = tg_nn_linear(2, 2, 1, nullptr), relu = tg_nn_function("relu");
  tg_module* inner_l[2] = {a, relu};
  M inner = tg_nn_sequential(inner_l, 2);
  tg_module* outer_l[3] = {inner, relu, inner};  // the same Sequential twice: its tensors are listed under both names
  M outer = tg_nn_sequential(outer_l, 3);
  S st = tg_module_state(outer);
  ASSERT_EQ(tg_state_count(st), 4);
  EXPECT_STREQ(tg_state_name(st, 0), "0.0.weight");
  EXPECT_STREQ(tg_state_name(st, 1), "0.0.bias");
  EXPECT_STREQ(tg_state_name(st, 2), "2.0.weight");
  EXPECT_STREQ(tg_state_name(st, 3), "2.0.bias");
  EXPECT_EQ(tg_module_parameter_count(outer), 4u);
  tg_module_release(inner.take());  // outer keeps it alive
  T x = from<T>({1, -2}, {1, 2});
  T y = tg_module_call(outer, x);
  ASSERT_NE(y.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(read(y).size(), 2u);
}

// ---- tensor indices out of range: never a write to element 0 --------------------------------------------------------

T ints(std::vector<int32_t> v) {
  int64_t n = int64_t(v.size());
  return T(tg_tensor_from_data(v.data(), v.size() * sizeof(int32_t), TG_INT32, &n, 1, nullptr));
}
tg_index tensor_index(tg_tensor* t) {
  tg_index e{};
  e.kind = TG_INDEX_TENSOR, e.tensor = t;
  return e;
}
std::vector<float> set_at(const std::vector<float>& data, std::vector<int64_t> shape, std::vector<T*> idx, float value) {
  T t = from<T>(data, shape), v = from<T>({value}, {});
  std::vector<tg_index> e;
  for (auto* i : idx) e.push_back(tensor_index(*i));
  EXPECT_EQ(tg_tensor_setitem(t, e.data(), e.size(), v), TG_OK) << tg_last_error_message();
  return read(t);
}

// t = [1, 2, 3]; t[[5, 1]] = 9 wrote element 0 as well: [9, 9, 3]
TEST(HostileNn, SetitemOutOfRangeTensorIndexWritesNothing) {
  T i1 = ints({5, 1});
  EXPECT_EQ(set_at({1, 2, 3}, {3}, {&i1}, 9), (std::vector<float>{1, 9, 3}));
  T i2 = ints({-1}), i3 = ints({-4}), i4 = ints({3, -3});  // negative wraps as numpy; past -n selects nothing
  EXPECT_EQ(set_at({1, 2, 3}, {3}, {&i2}, 9), (std::vector<float>{1, 2, 9}));
  EXPECT_EQ(set_at({1, 2, 3}, {3}, {&i3}, 9), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(set_at({1, 2, 3}, {3}, {&i4}, 9), (std::vector<float>{9, 2, 3}));
  // 2-D: an entry out of range in either dim selects nothing
  T r = ints({0, 2, 1}), c = ints({1, 1, 7});
  EXPECT_EQ(set_at({1, 2, 3, 4, 5, 6}, {2, 3}, {&r, &c}, 0), (std::vector<float>{1, 0, 3, 4, 5, 6}));
  T rows = ints({9});  // a whole row out of range
  EXPECT_EQ(set_at({1, 2, 3, 4, 5, 6}, {2, 3}, {&rows}, 0), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

// getitem keeps tinygrad's rule: an out-of-range entry of an index tensor reads 0
TEST(HostileNn, GetitemOutOfRangeTensorIndexReadsZero) {
  T t = from<T>({1, 2, 3}, {3}), i = ints({5, 1, -1, -4});
  tg_index e = tensor_index(i);
  T g = tg_tensor_getitem(t, &e, 1);
  ASSERT_NE(g.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(read(g), (std::vector<float>{0, 2, 3, 0}));
}

// ---- module constructors refuse what can never run --------------------------------------------------------------

void refused(tg_module* m, const std::string& needle) {
  EXPECT_EQ(m, nullptr) << needle;
  tg_module_release(m);
  expect_error(TG_ERROR_INVALID_ARGUMENT, needle);
}

TEST(HostileNn, ConvConstructorsRefuseStrideDilationPadding) {
  refused(tg_nn_conv2d(2, 2, 3, 3, 0, 0, 1, 1, 1, nullptr), "stride");
  refused(tg_nn_conv2d(2, 2, 3, 3, -1, 0, 1, 1, 1, nullptr), "stride");
  refused(tg_nn_conv2d(2, 2, 3, 3, 1, 0, 0, 1, 1, nullptr), "dilation");
  refused(tg_nn_conv2d(2, 2, 3, 3, 1, -1, 1, 1, 1, nullptr), "padding");
  refused(tg_nn_conv1d(2, 2, 3, 0, 0, 1, 1, 1, nullptr), "stride");
  refused(tg_nn_conv1d(2, 2, 3, 1, 0, -2, 1, 1, nullptr), "dilation");
  refused(tg_nn_conv1d(2, 2, 3, 1, -5, 1, 1, 1, nullptr), "padding");
  refused(tg_nn_conv_transpose2d(2, 2, 3, 3, 0, 0, 0, 1, 1, 1, nullptr), "stride");
  refused(tg_nn_conv_transpose2d(2, 2, 3, 3, 1, -1, 0, 1, 1, 1, nullptr), "padding");
  refused(tg_nn_conv_transpose2d(2, 2, 3, 3, 1, 0, -1, 1, 1, 1, nullptr), "output_padding");
  refused(tg_nn_conv_transpose2d(2, 2, 3, 3, 2, 0, 2, 1, 1, 1, nullptr), "output_padding");  // >= stride and dilation
  refused(tg_nn_conv_transpose1d(2, 2, 3, 1, 0, 0, 0, 1, 1, nullptr), "dilation");
  refused(tg_nn_conv_transpose1d(2, 2, 0, 1, 0, 0, 1, 1, 1, nullptr), "ConvTranspose2d");  // kernel size 0
  // the norms: eps NaN or negative, momentum not finite, LSTMCell gates that would wrap
  refused(tg_nn_batchnorm(2, std::nan(""), 0.1, 1, 1, nullptr), "eps");
  refused(tg_nn_batchnorm(2, 1e-5, INFINITY, 1, 1, nullptr), "momentum");
  int64_t ns[1] = {4};
  refused(tg_nn_layernorm(ns, 1, -1e-5, 1, nullptr), "eps");
  refused(tg_nn_rmsnorm(4, std::nan(""), 1, nullptr), "eps");
  refused(tg_nn_groupnorm(2, 4, -1, 1, nullptr), "eps");
  refused(tg_nn_instancenorm(4, INFINITY, 1, nullptr), "eps");
  refused(tg_nn_lstm_cell(2, INT64_MAX / 2, 1, nullptr), "hidden_size");
  // what is allowed still builds and runs: stride 2, dilation 2, padding 1, output_padding 1 < stride
  M ct = tg_nn_conv_transpose2d(2, 2, 3, 3, 2, 1, 1, 2, 1, 1, nullptr);
  ASSERT_NE(ct.p, nullptr) << tg_last_error_message();
  T x = T(tg_tensor_full(std::vector<int64_t>{1, 2, 4, 4}.data(), 4, 1.0, TG_FLOAT32, nullptr));
  T y = tg_module_call(ct, x);
  ASSERT_NE(y.p, nullptr) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_realize(y), TG_OK) << tg_last_error_message();
}

// ---- every handle type reports a second release the same way ------------------------------------------------------

tg_status no_op_jit(void*, tg_tensor* const*, size_t, tg_tensor**, size_t) { return TG_OK; }

template <class H>
void released_twice(H* h, void (*release)(H*), const char* fn, const char* kind) {
  ASSERT_NE(h, nullptr) << fn << ": " << tg_last_error_message();
  tg_clear_error();
  release(h);
  EXPECT_EQ(tg_last_error(), TG_OK) << fn << ": " << tg_last_error_message();
  release(h);
  expect_error(TG_ERROR_INVALID_ARGUMENT, std::string(fn) + ": ");
  expect_error(TG_ERROR_INVALID_ARGUMENT, std::string("not a live ") + kind + " handle (released twice?)");
  tg_clear_error();
  release(nullptr);  // NULL stays a no-op
  EXPECT_EQ(tg_last_error(), TG_OK) << fn;
}

TEST(HostileNn, EveryHandleReleasedTwiceSetsTheError) {
  released_twice(tg_nn_linear(2, 2, 1, nullptr), tg_module_release, "tg_module_release", "tg_module");
  released_twice(tg_nn_sequential(nullptr, 0), tg_module_release, "tg_module_release", "tg_module");
  T p = from<T>({1, 2}, {2});
  released_twice(from<T>({1}, {1}).take(), tg_tensor_release, "tg_tensor_release", "tg_tensor");
  released_twice(tg_optim_sgd(&p.p, 1, nullptr), tg_optimizer_release, "tg_optimizer_release", "tg_optimizer");
  released_twice(tg_state_create(), tg_state_release, "tg_state_release", "tg_state");
  released_twice(tg_expr_const(3), tg_expr_release, "tg_expr_release", "tg_expr");
  released_twice(tg_plan_create(&p.p, 1), tg_plan_release, "tg_plan_release", "tg_plan");
  released_twice(tg_jit_create(no_op_jit, nullptr), tg_jit_release, "tg_jit_release", "tg_jit");
}

// ---- Muon: Newton-Schulz steps are bounded, and many of them still schedule quickly --------------------------------

TEST(HostileNn, MuonRefusesTooManyNewtonSchulzSteps) {
  T p = from<T>({1, 2, 3, 4}, {2, 2});
  tg_optimizer_options o{};
  o.struct_size = sizeof o;
  ASSERT_EQ(tg_optimizer_options_default(TG_OPTIM_MUON, &o), TG_OK);
  for (int64_t n : {int64_t(101), int64_t(1000000), INT64_MAX}) {
    o.ns_steps = n;
    Opt opt = tg_optim_muon(&p.p, 1, &o);
    EXPECT_EQ(opt.p, nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, "ns_steps " + std::to_string(n) + " is more than 100");
  }
  ASSERT_EQ(tg_optimizer_options_default(TG_OPTIM_LARS, &o), TG_OK);
  o.ns_steps = 101, o.n_ns_coefficients = 1, o.ns_coefficients[0] = 1;
  Opt lars = tg_optim_lars(&p.p, 1, &o);
  EXPECT_EQ(lars.p, nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "LARS: ns_steps 101");
  o.ns_steps = 100;
  Opt ok = tg_optim_lars(&p.p, 1, &o);
  EXPECT_NE(ok.p, nullptr) << tg_last_error_message();
}

// 30 Newton-Schulz steps took about 20 s to schedule and compile: each step's result stayed lazy, so every kernel
// recomputed all earlier steps' elementwise sums (kernels growing with the step count). Checked against a double
// reference of the same rule.
TEST(HostileNn, MuonThirtyNewtonSchulzStepsScheduleAndRun) {
  Training tr;
  const int n = 8, steps = 30;
  std::vector<float> w(n * n), g(n * n);
  for (int i = 0; i < n * n; i++) w[size_t(i)] = float((i * 7) % 11) / 11.0f - 0.5f, g[size_t(i)] = float((i * 5) % 13) / 13.0f - 0.4f;
  T p = from<T>(w, {n, n});
  ASSERT_EQ(tg_tensor_set_requires_grad(p, 1), TG_OK);
  tg_optimizer_options o{};
  o.struct_size = sizeof o;
  ASSERT_EQ(tg_optimizer_options_default(TG_OPTIM_MUON, &o), TG_OK);
  // the cubic Newton-Schulz (1.5, -0.5) converges to the orthogonal factor, so rounding dies out instead of compounding
  // over 30 steps as it does with Muon's quintic (whose fixed points oscillate)
  o.ns_steps = steps, o.lr = 0.1, o.weight_decay = 0, o.momentum = 0, o.n_ns_coefficients = 2;
  o.ns_coefficients[0] = 1.5, o.ns_coefficients[1] = -0.5;
  Opt opt = tg_optim_muon(&p.p, 1, &o);
  ASSERT_NE(opt.p, nullptr) << tg_last_error_message();
  // loss = sum(p * G) has gradient G
  T gt = from<T>(g, {n, n}), prod = tg_tensor_mul(p, gt), loss = tg_tensor_sum(prod, nullptr, 0, 0);
  ASSERT_EQ(tg_tensor_backward(loss), TG_OK) << tg_last_error_message();
  ASSERT_EQ(tg_optimizer_step(opt), TG_OK) << tg_last_error_message();
  // reference: X = G / |G|; X = a X + b (X X^T) X, `steps` times; p -= lr * X
  std::vector<double> x(g.begin(), g.end());
  double norm = 0;
  for (double v : x) norm += v * v;
  for (double& v : x) v /= std::sqrt(norm) + 1e-7;
  auto mm = [&](const std::vector<double>& a, const std::vector<double>& b, bool bt) {
    std::vector<double> c(size_t(n * n));
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        for (int k = 0; k < n; k++) c[size_t(i * n + j)] += a[size_t(i * n + k)] * (bt ? b[size_t(j * n + k)] : b[size_t(k * n + j)]);
    return c;
  };
  for (int s = 0; s < steps; s++) {
    std::vector<double> a = mm(x, x, true), ax = mm(a, x, false);
    for (size_t i = 0; i < x.size(); i++) x[i] = 1.5 * x[i] - 0.5 * ax[i];
  }
  std::vector<float> got = read(p);
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], w[i] - 0.1 * x[i], 2e-3) << i;
}

}  // namespace
