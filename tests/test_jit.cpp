// The engine through the C API: TinyJit (tg_jit_*) against JIT=0, in-place assigns and their side effects, the memory
// planner, and plans (tg_plan_*).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>
#include <random>
#include <string>
#include <vector>

#include "capi_handles.h"
#include "rss.h"
#include "tensor/jit.h"
#include "tinygrad.h"

namespace {
T from(const std::vector<float>& v, std::vector<int64_t> shape) {
  return tg_tensor_from_data(v.data(), v.size() * sizeof(float), TG_FLOAT32, shape.data(), shape.size(), nullptr);
}
T from_i32(const std::vector<int32_t>& v, std::vector<int64_t> shape) {
  return tg_tensor_from_data(v.data(), v.size() * sizeof(int32_t), TG_INT32, shape.data(), shape.size(), nullptr);
}
tg_counters counters() {
  tg_counters c{};
  c.struct_size = sizeof c;
  EXPECT_EQ(tg_counters_get(&c), TG_OK);
  return c;
}

// ---- an MLP trained by SGD written by hand: w.assign(w - lr * w.grad) ----
struct Mlp {
  T w1, b1, w2, b2;
  static constexpr int64_t IN = 24, HID = 16, OUT = 5, B = 8;
  Mlp() {
    w1 = from(randv(IN * HID, 1, 0.3f), {IN, HID}), b1 = from(randv(HID, 2, 0.1f), {HID});
    w2 = from(randv(HID * OUT, 3, 0.3f), {HID, OUT}), b2 = from(randv(OUT, 4, 0.1f), {OUT});
    for (tg_tensor* p : {w1.p, b1.p, w2.p, b2.p}) tg_tensor_set_requires_grad(p, 1), tg_tensor_realize(p);
  }
  tg_tensor* const* params() const { return &w1.p; }
};
tg_status sgd_step(void* u, tg_tensor* const* in, size_t, tg_tensor** out, size_t n_out) {
  Mlp& m = *static_cast<Mlp*>(u);
  for (tg_tensor* p : {m.w1.p, m.b1.p, m.w2.p, m.b2.p}) tg_tensor_set_grad(p, nullptr);
  T h = tg_tensor_matmul(in[0], m.w1);
  TRY(h.p);
  h = tg_tensor_relu(T(tg_tensor_add(h, m.b1)));
  T logits = tg_tensor_add(T(tg_tensor_matmul(h, m.w2)), m.b2);
  T loss = tg_tensor_sparse_categorical_crossentropy(logits, in[1], -1, 0, 1);
  TRY(loss.p);
  if (tg_tensor_backward(loss) != TG_OK) return tg_last_error();
  for (tg_tensor* p : {m.w1.p, m.b1.p, m.w2.p, m.b2.p}) {
    T g = tg_tensor_grad(p);
    TRY(g.p);
    if (tg_tensor_assign(p, T(tg_tensor_sub(p, T(tg_tensor_mul_scalar(g, 0.1))))) != TG_OK) return tg_last_error();
  }
  if (n_out) out[0] = loss.take();
  return TG_OK;
}
struct Batch {
  T x, y;
};
Batch batch(int step) {
  std::vector<int32_t> y(Mlp::B);
  for (int64_t i = 0; i < Mlp::B; i++) y[size_t(i)] = int32_t((i * 7 + step) % Mlp::OUT);
  return {from(randv(Mlp::B * Mlp::IN, 100 + uint32_t(step)), {Mlp::B, Mlp::IN}), from_i32(y, {Mlp::B})};
}
void expect_close(const std::vector<float>& a, const std::vector<float>& b, float tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); i++) ASSERT_NEAR(a[i], b[i], tol * (1 + std::fabs(b[i]))) << what << " [" << i << "]";
}
}  // namespace

TEST(Jit, MlpSgdStepReplaysLikeJitOff) {
  Mlp jm, em;  // same initial weights
  std::vector<std::vector<float>> losses_jit, losses_eager;
  Jit jit(sgd_step, &jm);
  tg_counters after_capture{};
  for (int step = 0; step < 20; step++) {
    Batch b = batch(step);
    tg_tensor* in[2] = {b.x, b.y};
    tg_tensor* out = nullptr;
    ASSERT_EQ(tg_jit_call(jit, in, 2, &out, 1), TG_OK) << tg_last_error_message();
    T loss(out);
    losses_jit.push_back(data(loss));
    if (step == 1) after_capture = counters();
  }
  tg_counters end = counters();
  // the replays ran kernels and nothing else: no schedule, no lowering, no compile
  EXPECT_EQ(end.schedule_count, after_capture.schedule_count);
  EXPECT_EQ(end.lower_count, after_capture.lower_count);
  EXPECT_EQ(end.compile_count, after_capture.compile_count);
  EXPECT_GT(end.kernel_count, after_capture.kernel_count + 18);
  EXPECT_EQ(tg_jit_call_count(jit), 20);
  {
    NoJit off;
    Jit eager(sgd_step, &em);
    for (int step = 0; step < 20; step++) {
      Batch b = batch(step);
      tg_tensor* in[2] = {b.x, b.y};
      tg_tensor* out = nullptr;
      ASSERT_EQ(tg_jit_call(eager, in, 2, &out, 1), TG_OK) << tg_last_error_message();
      T loss(out);
      losses_eager.push_back(data(loss));
      tg_tensor_realize_many(em.params(), 4);
    }
  }
  for (int step = 0; step < 20; step++) expect_close(losses_jit[size_t(step)], losses_eager[size_t(step)], 1e-5f, "loss at step " + std::to_string(step));
  EXPECT_LT(losses_jit.back()[0], losses_jit.front()[0]);  // it trains
  for (int i = 0; i < 4; i++) expect_close(data(jm.params()[i]), data(em.params()[i]), 1e-5f, "parameter " + std::to_string(i));
}

// ---- tinygrad's side-effect example: BatchNorm's running statistics are assigned, never returned ----
namespace {
struct Bn {
  T running_mean, running_var, weight, bias;
  static constexpr int64_t B = 16, C = 6;
  Bn() {
    int64_t c = C;
    running_mean = tg_tensor_zeros(&c, 1, TG_FLOAT32, nullptr), running_var = tg_tensor_ones(&c, 1, TG_FLOAT32, nullptr);
    weight = from(randv(C, 7), {C}), bias = from(randv(C, 8), {C});
    for (tg_tensor* p : {running_mean.p, running_var.p, weight.p, bias.p}) tg_tensor_realize(p);
    tg_tensor_set_requires_grad(weight, 1), tg_tensor_set_requires_grad(bias, 1);
  }
};
tg_status bn_step(void* u, tg_tensor* const* in, size_t, tg_tensor** out, size_t n_out) {
  Bn& m = *static_cast<Bn*>(u);
  tg_tensor_set_grad(m.weight, nullptr), tg_tensor_set_grad(m.bias, nullptr);
  int64_t ax = 0;
  T mean = tg_tensor_mean(in[0], &ax, 1, 0), var = tg_tensor_var(in[0], &ax, 1, 0, 0), uvar = tg_tensor_var(in[0], &ax, 1, 0, 1);
  TRY(mean.p && var.p && uvar.p);
  // running = 0.9 * running + 0.1 * batch statistic; the function returns neither
  if (tg_tensor_assign(m.running_mean, T(tg_tensor_add(T(tg_tensor_mul_scalar(m.running_mean, 0.9)), T(tg_tensor_mul_scalar(mean, 0.1))))) != TG_OK ||
      tg_tensor_assign(m.running_var, T(tg_tensor_add(T(tg_tensor_mul_scalar(m.running_var, 0.9)), T(tg_tensor_mul_scalar(uvar, 0.1))))) != TG_OK)
    return tg_last_error();
  T xn = tg_tensor_mul(T(tg_tensor_sub(in[0], mean)), T(tg_tensor_rsqrt(T(tg_tensor_add_scalar(var, 1e-5)))));
  T y = tg_tensor_add(T(tg_tensor_mul(xn, m.weight)), m.bias);
  T loss = tg_tensor_mean(T(tg_tensor_square(T(tg_tensor_relu(y)))), nullptr, 0, 0);
  TRY(loss.p);
  if (tg_tensor_backward(loss) != TG_OK) return tg_last_error();
  for (tg_tensor* p : {m.weight.p, m.bias.p})
    if (tg_tensor_assign(p, T(tg_tensor_sub(p, T(tg_tensor_mul_scalar(T(tg_tensor_grad(p)), 0.05))))) != TG_OK) return tg_last_error();
  if (n_out) out[0] = loss.take();
  return TG_OK;
}
std::vector<float> run_bn(bool jit_on, Bn& m, std::vector<float>* mean_out) {
  std::optional<NoJit> off;
  if (!jit_on) off.emplace();
  Jit jit(bn_step, &m);
  std::vector<float> losses;
  for (int step = 0; step < 10; step++) {
    T x = from(randv(Bn::B * Bn::C, 50 + uint32_t(step), 2), {Bn::B, Bn::C});
    tg_tensor* in[1] = {x};
    tg_tensor* out = nullptr;
    EXPECT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK) << tg_last_error_message();
    T loss(out);
    losses.push_back(data(loss)[0]);
  }
  *mean_out = data(m.running_mean);
  return data(m.running_var);
}
}  // namespace

TEST(Jit, AssignedTensorsNotReturnedStillUpdateOnReplay) {
  Bn a, b;
  std::vector<float> mean_jit, mean_eager;
  std::vector<float> var_jit = run_bn(true, a, &mean_jit), var_eager = run_bn(false, b, &mean_eager);
  expect_close(mean_jit, mean_eager, 1e-5f, "running_mean");
  expect_close(var_jit, var_eager, 1e-5f, "running_var");
  expect_close(data(a.weight), data(b.weight), 1e-5f, "weight");
  // and they moved: after 10 steps of data with std 2, running_var is far from its initial 1
  EXPECT_GT(var_jit[0], 1.5f);
}

namespace {
tg_status add_one(void*, tg_tensor* const* in, size_t, tg_tensor** out, size_t n_out) {
  for (size_t i = 0; i < n_out; i++) TRY(out[i] = tg_tensor_add_scalar(in[0], 1.0 + double(i)));
  return TG_OK;
}
tg_status identity(void*, tg_tensor* const* in, size_t, tg_tensor** out, size_t n_out) {
  int64_t s[2] = {4, 4};
  if (n_out) TRY(out[0] = tg_tensor_reshape(in[0], s, 2));
  if (n_out > 1) TRY(out[1] = tg_tensor_add_scalar(in[0], 1));
  return TG_OK;
}
struct Counting {
  int calls = 0;
  tg_status fail_at = TG_OK;
  int fail_call = -1;
};
tg_status counting(void* u, tg_tensor* const* in, size_t n, tg_tensor** out, size_t n_out) {
  auto& c = *static_cast<Counting*>(u);
  if (c.calls++ == c.fail_call) {
    tg_tensor_reshape(in[0], nullptr, 3);  // sets this thread's error, as a failing library call in the function would
    return c.fail_at;
  }
  return add_one(u, in, n, out, n_out);
}
}  // namespace

TEST(Jit, ReplayTakesNewInputsEveryCall) {
  Jit jit(add_one, nullptr);
  for (int call = 0; call < 12; call++) {
    std::vector<float> v = randv(16, uint32_t(call));
    T x = from(v, {16});
    tg_tensor* in[1] = {x};
    tg_tensor* out[2] = {};
    ASSERT_EQ(tg_jit_call(jit, in, 1, out, 2), TG_OK) << tg_last_error_message();
    T a(out[0]), b(out[1]);
    std::vector<float> ra = data(a), rb = data(b);
    for (size_t i = 0; i < v.size(); i++) {
      ASSERT_EQ(ra[i], v[i] + 1);
      ASSERT_EQ(rb[i], v[i] + 2);
    }
  }
}

TEST(Jit, LazyAndViewInputsAreRealizedFirst) {
  Jit jit(add_one, nullptr);
  for (int call = 0; call < 5; call++) {
    std::vector<float> v = randv(32, 40 + uint32_t(call));
    T base = from(v, {2, 16});
    int64_t b[4] = {1, 2, 0, 16};
    T x = tg_tensor_shrink(T(tg_tensor_mul_scalar(base, 2)), b, 2);  // lazy, a view: the second row doubled
    int64_t s = 16;
    T flat = tg_tensor_reshape(x, &s, 1);
    tg_tensor* in[1] = {flat};
    tg_tensor* out = nullptr;
    ASSERT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK) << tg_last_error_message();
    T r(out);
    std::vector<float> got = data(r);
    for (size_t i = 0; i < 16; i++) ASSERT_FLOAT_EQ(got[i], 2 * v[16 + i] + 1);
  }
}

// a reshape of a reshape of a realized buffer (tg_dataset_mnist's (N, 1, 28, 28) images) is the buffer itself: a replay
// passes it as is, with no copy of it run first (one was, a 47 MB copy of the training set before every step)
TEST(Jit, ReshapesOfABufferAreNotCopiedOnReplay) {
  Jit jit(add_one, nullptr);
  std::vector<float> v = randv(64, 7);
  int64_t s1[2] = {4, 16}, s2[3] = {4, 1, 16};
  T x = tg_tensor_reshape(T(tg_tensor_reshape(T(from(v, {64})), s1, 2)), s2, 3), plain = from(v, {4, 1, 16});
  int64_t ran[5] = {};
  for (int call = 0; call < 5; call++) {
    tg_tensor* in[1] = {call == 4 ? (tg_tensor*)plain : (tg_tensor*)x};
    tg_tensor* out[2] = {};
    int64_t before = counters().kernel_count;
    ASSERT_EQ(tg_jit_call(jit, in, 1, out, 2), TG_OK) << tg_last_error_message();
    ran[call] = counters().kernel_count - before;
    T a(out[0]), b(out[1]);
    std::vector<float> got = data(a);
    for (size_t i = 0; i < v.size(); i++) ASSERT_EQ(got[i], v[i] + 1);
  }
  EXPECT_EQ(ran[2], ran[4]);  // a replay with the view runs what one with a plain buffer does
  EXPECT_EQ(ran[3], ran[4]);
}

TEST(Jit, OutputsThatViewAnInputFollowTheNewInput) {
  Jit jit(identity, nullptr);
  for (int call = 0; call < 4; call++) {
    std::vector<float> v = randv(16, 60 + uint32_t(call));
    T x = from(v, {16});
    tg_tensor* in[1] = {x};
    tg_tensor* out[2] = {};
    ASSERT_EQ(tg_jit_call(jit, in, 1, out, 2), TG_OK) << tg_last_error_message();
    T view(out[0]), plus(out[1]);
    EXPECT_EQ(data(view), v);
    std::vector<float> p = data(plus);
    for (size_t i = 0; i < 16; i++) ASSERT_EQ(p[i], v[i] + 1);
  }
}

TEST(Jit, MismatchedReplayIsAnErrorNamingTheInput) {
  Jit jit(add_one, nullptr);
  T x = from(randv(16, 1), {16});
  tg_tensor* in[1] = {x};
  for (int i = 0; i < 3; i++) {
    tg_tensor* out = nullptr;
    ASSERT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK);
    tg_tensor_release(out);
  }
  auto expect_err = [&](tg_tensor* bad, size_t n_in, size_t n_out, tg_status code, const char* what) {
    tg_tensor* ins[2] = {bad, bad};
    tg_tensor* outs[2] = {nullptr, nullptr};
    tg_counters before = counters();
    EXPECT_EQ(tg_jit_call(jit, ins, n_in, outs, n_out), code) << what;
    EXPECT_NE(std::string(tg_last_error_message()).find(what), std::string::npos) << tg_last_error_message();
    EXPECT_EQ(outs[0], nullptr);
    EXPECT_EQ(counters().kernel_count, before.kernel_count);  // nothing ran
  };
  T wrong_shape = from(randv(8, 2), {8}), wrong_dtype = from_i32(std::vector<int32_t>(16, 1), {16});
  expect_err(wrong_shape, 1, 1, TG_ERROR_SHAPE, "input 0 has shape (8,), captured with (16,)");
  expect_err(wrong_dtype, 1, 1, TG_ERROR_DTYPE, "input 0 is int32, captured as float32");
  expect_err(x, 2, 1, TG_ERROR_INVALID_ARGUMENT, "called with 2 inputs, captured with 1");
  expect_err(x, 1, 2, TG_ERROR_INVALID_ARGUMENT, "2 outputs asked, the function was captured with 1");
  expect_err(nullptr, 1, 1, TG_ERROR_INVALID_ARGUMENT, "inputs[0] is NULL");
  EXPECT_EQ(tg_jit_call(nullptr, in, 1, nullptr, 0), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_jit_create(nullptr, nullptr), nullptr);
  // and the jit still works
  tg_tensor* out = nullptr;
  ASSERT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK);
  tg_tensor_release(out);
}

TEST(Jit, FunctionErrorsComeBackAndAFailedCaptureCapturesAgain) {
  Counting c;
  c.fail_call = 1, c.fail_at = TG_ERROR_SHAPE;  // the capture call fails
  Jit jit(counting, &c);
  T x = from(randv(16, 3), {16});
  tg_tensor* in[1] = {x};
  tg_tensor* out = nullptr;
  ASSERT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK);
  tg_tensor_release(out), out = nullptr;
  EXPECT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_ERROR_SHAPE);
  EXPECT_NE(std::string(tg_last_error_message()).find("jit: the function returned TG_ERROR_SHAPE"), std::string::npos) << tg_last_error_message();
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(tg_jit_call_count(jit), 1);
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK);
    T r(out);
    EXPECT_FLOAT_EQ(data(r)[3], data(x)[3] + 1);
  }
  EXPECT_EQ(c.calls, 3);  // warm-up, failed capture, capture; then replays
  EXPECT_EQ(tg_jit_reset(jit), TG_OK);
  ASSERT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK);
  tg_tensor_release(out);
  EXPECT_EQ(c.calls, 4);
}

TEST(Jit, JitZeroRunsTheFunctionEveryCall) {
  NoJit off;
  Counting c;
  Jit jit(counting, &c);
  T x = from(randv(16, 3), {16});
  tg_tensor* in[1] = {x};
  for (int i = 0; i < 5; i++) {
    tg_tensor* out = nullptr;
    ASSERT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK);
    tg_tensor_release(out);
  }
  EXPECT_EQ(c.calls, 5);
}

TEST(Jit, ManyReplaysDoNotGrowMemory) {
  Bn m;
  Jit jit(bn_step, &m);
  T x = from(randv(Bn::B * Bn::C, 9), {Bn::B, Bn::C});
  tg_tensor* in[1] = {x};
  size_t before = 0;
  for (int i = 0; i < 100000; i++) {
    tg_tensor* out = nullptr;
    ASSERT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK) << tg_last_error_message();
    tg_tensor_release(out);
    if (i == 1000) before = rss_bytes();
  }
#ifndef __SANITIZE_ADDRESS__  // AddressSanitizer's quarantine holds freed memory on purpose; LeakSanitizer checks leaks there
  EXPECT_LT(rss_bytes(), before + (4 << 20)) << "resident memory grew by " << (rss_bytes() - before) << " bytes over 99000 replays";
#else
  (void)before;
#endif
}

// ---- plans: what a realize runs, and the memory planner ----
TEST(Plan, ListsKernelsAndTimesThenRealizes) {
  Mlp m;
  Batch b = batch(0);
  T h = tg_tensor_relu(T(tg_tensor_add(T(tg_tensor_matmul(b.x, m.w1)), m.b1)));
  T loss = tg_tensor_sparse_categorical_crossentropy(T(tg_tensor_add(T(tg_tensor_matmul(h, m.w2)), m.b2)), b.y, -1, 0, 1);
  std::vector<tg_tensor*> grads(4);
  ASSERT_EQ(tg_tensor_gradient(loss, m.params(), 4, grads.data()), TG_OK) << tg_last_error_message();
  std::vector<tg_tensor*> all = grads;
  all.push_back(loss);
  std::vector<std::vector<float>> expect;
  {  // the same values through a plain realize
    std::vector<T> copies;
    for (tg_tensor* t : all) copies.emplace_back(tg_tensor_contiguous(t));
    for (auto& c : copies) expect.push_back(data(T(tg_tensor_add_scalar(c, 0))));
  }
  tg_counters before = counters();
  tg_plan* plan = tg_plan_create(all.data(), all.size());
  ASSERT_NE(plan, nullptr) << tg_last_error_message();
  EXPECT_EQ(counters().kernel_count, before.kernel_count);  // nothing ran yet
  size_t n = tg_plan_kernel_count(plan);
  ASSERT_GT(n, 3u);
  for (size_t i = 0; i < n; i++) {
    tg_kernel_info k{};
    k.struct_size = sizeof k;
    ASSERT_EQ(tg_plan_kernel(plan, i, &k), TG_OK);
    EXPECT_GT(std::strlen(k.name), 1u);
    EXPECT_NE(std::string(k.source).find(k.name), std::string::npos);  // the source defines the kernel
    ASSERT_GE(k.n_buffers, 1u);
    for (size_t j = 0; j < k.n_buffers; j++) EXPECT_GT(k.buffer_nbytes[j], 0);
    EXPECT_EQ(k.time_s, -1.0);
  }
  int64_t inter = 0, peak = 0;
  ASSERT_EQ(tg_plan_memory(plan, &inter, &peak), TG_OK);
  EXPECT_GT(inter, 0);
  EXPECT_LE(peak, inter);
  ASSERT_EQ(tg_plan_run(plan), TG_OK) << tg_last_error_message();
  EXPECT_EQ(counters().kernel_count, before.kernel_count + n);
  for (size_t i = 0; i < n; i++) {
    tg_kernel_info k{};
    k.struct_size = sizeof k;
    ASSERT_EQ(tg_plan_kernel(plan, i, &k), TG_OK);
    EXPECT_GE(k.time_s, 0.0);
  }
  EXPECT_EQ(tg_plan_run(plan), TG_ERROR_INVALID_ARGUMENT);
  tg_kernel_info k{};
  k.struct_size = sizeof k;
  EXPECT_EQ(tg_plan_kernel(plan, n, &k), TG_ERROR_INVALID_ARGUMENT);
  tg_plan_release(plan);
  for (size_t i = 0; i < all.size(); i++) expect_close(data(all[i]), expect[i], 1e-6f, "output " + std::to_string(i));
  for (tg_tensor* g : grads) tg_tensor_release(g);
}

// An MLP's forward and backward in one realize, layer sizes `dims`, batch 64: the planner's peak over the intermediates' sum.
static double mlp_backward_peak_ratio(const std::vector<int64_t>& dims) {
  int64_t bs = 64;
  std::vector<T> ws, bs_;
  for (size_t i = 0; i + 1 < dims.size(); i++) {
    ws.push_back(from(randv(size_t(dims[i] * dims[i + 1]), uint32_t(i), 0.05f), {dims[i], dims[i + 1]}));
    bs_.push_back(from(randv(size_t(dims[i + 1]), 10 + uint32_t(i), 0.1f), {dims[i + 1]}));
    tg_tensor_set_requires_grad(ws.back(), 1), tg_tensor_set_requires_grad(bs_.back(), 1);
  }
  T h = from(randv(size_t(bs * dims[0]), 5), {bs, dims[0]});
  for (size_t i = 0; i < ws.size(); i++) {
    h = tg_tensor_add(T(tg_tensor_matmul(h, ws[i])), bs_[i]);
    if (i + 1 < ws.size()) h = tg_tensor_relu(h);
  }
  std::vector<int32_t> yv(static_cast<size_t>(bs));
  for (int64_t i = 0; i < bs; i++) yv[size_t(i)] = int32_t(i % dims.back());
  T loss = tg_tensor_sparse_categorical_crossentropy(h, T(from_i32(yv, {bs})), -1, 0, 1);
  std::vector<tg_tensor*> params, grads;
  for (size_t i = 0; i < ws.size(); i++) params.push_back(ws[i]), params.push_back(bs_[i]);
  grads.resize(params.size());
  EXPECT_EQ(tg_tensor_gradient(loss, params.data(), params.size(), grads.data()), TG_OK) << tg_last_error_message();
  grads.push_back(loss.take());
  tg_plan* plan = tg_plan_create(grads.data(), grads.size());
  EXPECT_NE(plan, nullptr) << tg_last_error_message();
  int64_t inter = 0, peak = 0;
  EXPECT_EQ(tg_plan_memory(plan, &inter, &peak), TG_OK);
  std::string name;
  for (auto d : dims) name += (name.empty() ? "" : "-") + std::to_string(d);
  std::printf("MLP %s batch 64 forward+backward: %zu kernels, intermediates %lld bytes, planned peak %lld bytes (%.0f%%)\n", name.c_str(),
              tg_plan_kernel_count(plan), (long long)inter, (long long)peak, 100.0 * double(peak) / double(inter));
  EXPECT_EQ(tg_plan_run(plan), TG_OK) << tg_last_error_message();
  tg_plan_release(plan);
  for (tg_tensor* g : grads) tg_tensor_release(g);
  return double(peak) / double(inter);
}

// Backprop keeps every activation until its gradient is computed, and the fused schedule has few other intermediates: a
// 2-layer MLP's two activation-sized buffers (h and dh) are alive together, so nothing can share; deeper ones free each
// activation's gradient after the layer below used it.
TEST(Plan, MemoryPlannerSharesIntermediatesOfAnMlpBackward) {
  EXPECT_LE(mlp_backward_peak_ratio({784, 128, 10}), 1.0);
  EXPECT_LE(mlp_backward_peak_ratio({784, 128, 128, 128, 10}), 0.85);
  EXPECT_LE(mlp_backward_peak_ratio({784, 128, 128, 128, 128, 128, 128, 10}), 0.75);
}

// A chain of 8 realized intermediates, each read only by the next kernel: two buffers' worth of memory serve them all.
TEST(Plan, MemoryPlannerReusesMemoryAlongAChain) {
  std::vector<float> v = randv(4096, 11);
  T x = from(v, {4096});
  T h = x;
  for (int i = 0; i < 8; i++) h = tg_tensor_contiguous(T(tg_tensor_mul_scalar(T(tg_tensor_add_scalar(h, 1)), 0.5)));
  T y = tg_tensor_sum(h, nullptr, 0, 0);
  tg_tensor* ys[1] = {y};
  tg_plan* plan = tg_plan_create(ys, 1);
  ASSERT_NE(plan, nullptr) << tg_last_error_message();
  int64_t inter = 0, peak = 0;
  ASSERT_EQ(tg_plan_memory(plan, &inter, &peak), TG_OK);
  EXPECT_EQ(inter, 8 * 4096 * 4);
  EXPECT_EQ(peak, 2 * 4096 * 4);
  ASSERT_EQ(tg_plan_run(plan), TG_OK) << tg_last_error_message();
  tg_plan_release(plan);
  double want = 0;
  for (float f : v) {
    double a = f;
    for (int i = 0; i < 8; i++) a = float((float(a) + 1) * 0.5f);
    want += a;
  }
  EXPECT_NEAR(data(y)[0], want, 1e-3 * std::fabs(want));
}

// ---- a Variable batch: one capture serves every batch size ----
namespace {
struct Net {
  T w1, b1, w2, b2;
  Net() {
    w1 = from(randv(24 * 16, 21, 0.3f), {24, 16}), b1 = from(randv(16, 22, 0.1f), {16});
    w2 = from(randv(16 * 5, 23, 0.3f), {16, 5}), b2 = from(randv(5, 24, 0.1f), {5});
    for (tg_tensor* p : {w1.p, b1.p, w2.p, b2.p}) tg_tensor_realize(p);
  }
};
// probabilities (n, 5) and the batch mean of the logits (5,)
tg_status net_fn(void* u, tg_tensor* const* in, size_t, tg_tensor** out, size_t n_out) {
  Net& m = *static_cast<Net*>(u);
  T h = tg_tensor_relu(T(tg_tensor_add(T(tg_tensor_matmul(in[0], m.w1)), m.b1)));
  T logits = tg_tensor_add(T(tg_tensor_matmul(h, m.w2)), m.b2);
  TRY(logits.p);
  int64_t ax = 0;
  T probs = tg_tensor_softmax(logits, -1), mean = tg_tensor_mean(logits, &ax, 1, 0);
  TRY(probs.p && mean.p);
  if (n_out > 0) out[0] = probs.take();
  if (n_out > 1) out[1] = mean.take();
  return TG_OK;
}
}  // namespace

TEST(Jit, VariableBatchServesEverySizeWithOneCompile) {
  Net net;
  const int64_t B = 64;
  std::vector<float> xv = randv(B * 24, 30);
  T x_full = from(xv, {B, 24});
  tg_expr* n = tg_expr_variable("batch", 1, B);
  Jit jit(net_fn, &net);
  std::vector<std::vector<float>> probs(B + 1), means(B + 1);
  tg_counters after_capture{};
  for (int64_t nv = 1; nv <= B; nv++) {
    T x = tg_tensor_shrink_var(x_full, 0, n, nv);
    ASSERT_NE(x.p, nullptr) << tg_last_error_message();
    tg_tensor* in[1] = {x};
    tg_tensor* out[2] = {};
    ASSERT_EQ(tg_jit_call(jit, in, 1, out, 2), TG_OK) << "batch " << nv << ": " << tg_last_error_message();
    T p(out[0]), m(out[1]);
    int64_t shape[2] = {};
    ASSERT_EQ(tg_tensor_ndim(p), 2);
    tg_tensor_shape(p, shape, 2);
    ASSERT_EQ(shape[0], nv);
    probs[size_t(nv)] = data(p), means[size_t(nv)] = data(m);
    if (nv == 2) after_capture = counters();
  }
  tg_counters end = counters();
  EXPECT_EQ(end.compile_count, after_capture.compile_count);  // batch sizes 3..64 compiled nothing
  EXPECT_EQ(end.schedule_count, after_capture.schedule_count);
  EXPECT_EQ(end.lower_count, after_capture.lower_count);
  // against the same function on plain (concrete) batches
  for (int64_t nv = 1; nv <= B; nv += 7) {
    int64_t bounds[4] = {0, nv, 0, 24};
    T x = tg_tensor_shrink(x_full, bounds, 2);
    tg_tensor* in[1] = {x};
    tg_tensor* out[2] = {};
    ASSERT_EQ(net_fn(&net, in, 1, out, 2), TG_OK);
    T p(out[0]), m(out[1]);
    expect_close(probs[size_t(nv)], data(p), 1e-5f, "probabilities at batch " + std::to_string(nv));
    expect_close(means[size_t(nv)], data(m), 1e-5f, "mean logits at batch " + std::to_string(nv));
  }
  // a plain input where a Variable one was captured, and the bound is checked
  T plain = from(randv(5 * 24, 31), {5, 24});
  tg_tensor* in[1] = {plain};
  tg_tensor* out[2] = {};
  EXPECT_EQ(tg_jit_call(jit, in, 1, out, 2), TG_ERROR_SHAPE);
  EXPECT_NE(std::string(tg_last_error_message()).find("captured with (batch="), std::string::npos) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_shrink_var(x_full, 0, n, 65), nullptr);
  T x3 = tg_tensor_shrink_var(x_full, 0, n, 3);
  T x9 = tg_tensor_rebind(x3, n, 9);
  int64_t s9[2] = {};
  tg_tensor_shape(x9, s9, 2);
  EXPECT_EQ(s9[0], 9);
  tg_expr_release(n);
}

namespace {
tg_status flip_plus_one(void*, tg_tensor* const* in, size_t, tg_tensor** out, size_t n_out) {
  int64_t ax = 0;
  if (n_out) TRY(out[0] = tg_tensor_add_scalar(T(tg_tensor_flip(in[0], &ax, 1)), 1));
  return TG_OK;
}
struct SelfUse {
  tg_jit* jit = nullptr;
  tg_status inner = TG_OK;
  bool release = false;
};
tg_status self_use(void* u, tg_tensor* const* in, size_t n, tg_tensor** out, size_t n_out) {
  auto& s = *static_cast<SelfUse*>(u);
  if (s.release) tg_jit_release(s.jit), s.release = false;
  else {
    tg_tensor* o = nullptr;
    s.inner = tg_jit_call(s.jit, in, n, &o, 1);
  }
  return add_one(u, in, n, out, n_out);
}
}  // namespace

// x = jit(x): a replay's output fed back as its input is read before the kernels overwrite it
TEST(Jit, OwnOutputFedBackIsCopiedFirst) {
  Jit jit(flip_plus_one, nullptr);
  std::vector<float> v = {0, 1, 2, 3, 4, 5}, want = v;
  T x = from(v, {6});
  for (int call = 0; call < 6; call++) {
    tg_tensor* in[1] = {x};
    tg_tensor* out = nullptr;
    ASSERT_EQ(tg_jit_call(jit, in, 1, &out, 1), TG_OK) << tg_last_error_message();
    x = T(out);
    std::reverse(want.begin(), want.end());
    for (auto& w : want) w += 1;
    EXPECT_EQ(data(x), want) << "call " << call;
  }
}

TEST(Jit, TheFunctionMayNotReenterItsJitButMayReleaseIt) {
  SelfUse s;
  s.jit = tg_jit_create(self_use, &s);
  T x = from(randv(16, 5), {16});
  tg_tensor* in[1] = {x};
  tg_tensor* out = nullptr;
  ASSERT_EQ(tg_jit_call(s.jit, in, 1, &out, 1), TG_OK);
  tg_tensor_release(out);
  EXPECT_EQ(s.inner, TG_ERROR_INVALID_ARGUMENT);
  s.release = true;  // the function drops the last reference: the call still finishes
  ASSERT_EQ(tg_jit_call(s.jit, in, 1, &out, 1), TG_OK);
  tg_tensor_release(out);
  EXPECT_EQ(tg_jit_call_count(s.jit), -1);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
}

TEST(Jit, CallsFromSeveralThreadsAreSerialized) {
  Jit jit(add_one, nullptr);
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 50; i++) {
        std::vector<float> v = randv(16, uint32_t(t * 100 + i));
        T x = from(v, {16});
        tg_tensor* in[1] = {x};
        tg_tensor* out[2] = {};
        if (tg_jit_call(jit, in, 1, out, 2) != TG_OK) {
          bad++;
          continue;
        }
        T a(out[0]), b(out[1]);
        std::vector<float> ra = data(a);  // another thread's replay may overwrite it after the call: check the first
        (void)ra;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0) << tg_last_error_message();
  EXPECT_EQ(tg_jit_call_count(jit), 200);
}

// ---- constants (TinyJit::set_constants, what the ONNX runner gives its initializers) ----

namespace {
tg::Tensor host(const std::vector<float>& v, tg::Shape s) {
  return tg::Tensor::from_data(v.data(), v.size() * 4, tg::dtypes::float32, s, "CPU").realize();
}
std::vector<float> fetch(tg::Tensor t, size_t n) {
  std::vector<float> out(n);
  t.to_data(out.data(), n * 4);
  return out;
}
}  // namespace

// A kernel of the constants alone (w transposed into a buffer of its own) runs at the capture, not at the replays; the
// kernels reading an input, a buffer the caller may change (b) or writing one the caller holds (an assign) replay. The
// results match the function run directly after b and the inputs change.
TEST(Jit, KernelsOfConstantsRunOnceAtTheCapture) {
  constexpr int64_t N = 6, K = 8, M = 5;
  auto wv = randv(M * K, 11, 1.0f), bv = randv(M, 12, 1.0f);
  tg::Tensor w = host(wv, {M, K}), b = host(bv, {M}), seen = host(std::vector<float>(M, 0), {M});
  tg::TinyJit jit([&](const std::vector<tg::Tensor>& xs) {
    tg::Tensor wt = w.permute({1, 0}).contiguous();  // (K, M): reads w only
    seen.assign(wt.sum({0}).add(b));                 // writes a buffer the caller holds: replays
    return std::vector<tg::Tensor>{xs[0].matmul(wt).add(b.mul(b).contiguous())};  // b*b reads b, which may change
  });
  jit.set_constants({w});
  for (int call = 0; call < 5; call++) {
    auto xv = randv(N * K, 100 + call, 1.0f);
    if (call == 3) {
      bv = randv(M, 13, 1.0f);
      b.assign(host(bv, {M})).realize();
    }
    tg::Tensor y = jit({host(xv, {N, K})})[0];
    if (call >= 2) {
      EXPECT_EQ(jit.hoisted(), 1u) << "call " << call;
    }
    auto got = fetch(y, N * M), s = fetch(seen, M);
    for (int64_t i = 0; i < N; i++)
      for (int64_t j = 0; j < M; j++) {
        double want = double(bv[size_t(j)]) * bv[size_t(j)];
        for (int64_t k = 0; k < K; k++) want += double(xv[size_t(i * K + k)]) * wv[size_t(j * K + k)];
        EXPECT_NEAR(got[size_t(i * M + j)], want, 1e-4 * (1 + std::abs(want))) << "call " << call << " at " << i << "," << j;
      }
    for (int64_t j = 0; j < M; j++) {
      double want = bv[size_t(j)];
      for (int64_t k = 0; k < K; k++) want += wv[size_t(j * K + k)];
      EXPECT_NEAR(s[size_t(j)], want, 1e-4 * (1 + std::abs(want))) << "call " << call;
    }
  }
  // without constants nothing is hoisted: w may change between calls
  tg::TinyJit plain([&](const std::vector<tg::Tensor>& xs) { return std::vector<tg::Tensor>{xs[0].matmul(w.permute({1, 0}).contiguous())}; });
  for (int call = 0; call < 3; call++) plain({host(randv(N * K, 200 + call, 1.0f), {N, K})});
  EXPECT_EQ(plain.hoisted(), 0u);
}
