// Optimizers through the C API (tg_optim_*, tg_optimizer_*): 10-step trajectories of every class against a double
// reference of tinygrad's rules, argument checking, the kernel count of an Adam step of an MLP, and steps under a JIT.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "capi_handles.h"
#include "tinygrad.h"

namespace {


T from(const std::vector<float>& v, std::vector<int64_t> shape, tg_dtype dt = TG_FLOAT32) {
  return tg_tensor_from_data(v.data(), v.size() * sizeof(float), dt, shape.data(), shape.size(), nullptr);
}
tg_optimizer_options defaults(tg_optimizer_kind kind) {
  tg_optimizer_options o{};
  o.struct_size = sizeof o;
  EXPECT_EQ(tg_optimizer_options_default(kind, &o), TG_OK) << tg_last_error_message();
  return o;
}
using Ctor = tg_optimizer* (*)(tg_tensor* const*, size_t, const tg_optimizer_options*);
const Ctor kCtors[] = {tg_optim_sgd, tg_optim_adam, tg_optim_adamw, tg_optim_lars, tg_optim_lamb, tg_optim_muon};
const char* const kNames[] = {"sgd", "adam", "adamw", "lars", "lamb", "muon"};
void expect_error(tg_status want, const char* needle) {
  EXPECT_EQ(tg_last_error(), want) << tg_last_error_message();
  EXPECT_NE(std::string(tg_last_error_message()).find(needle), std::string::npos) << "message: " << tg_last_error_message() << "\nwant: " << needle;
  tg_clear_error();
}

// ---- a double reference of tinygrad's rules -------------------------------------------------------------------------
using Vec = std::vector<double>;
struct RefParam {
  Vec w, c, d;  // loss = sum(c * w + d * w^2 / 2): grad = c + d * w
  int64_t rows, cols;
};
double norm(const Vec& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}
// tinygrad's newton_schulz on a rows x cols matrix
Vec newton_schulz(Vec x, int64_t rows, int64_t cols, int64_t steps, const Vec& coef) {
  bool tr = rows > cols;
  auto transpose = [](const Vec& a, int64_t r, int64_t c) {
    Vec t(a.size());
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < c; j++) t[size_t(j * r + i)] = a[size_t(i * c + j)];
    return t;
  };
  if (tr) x = transpose(x, rows, cols), std::swap(rows, cols);
  auto matmul = [](const Vec& a, const Vec& b, int64_t n, int64_t k, int64_t m) {
    Vec o(size_t(n * m), 0.0);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < m; j++)
        for (int64_t l = 0; l < k; l++) o[size_t(i * m + j)] += a[size_t(i * k + l)] * b[size_t(l * m + j)];
    return o;
  };
  double n = norm(x) + 1e-7;
  for (double& v : x) v /= n;
  for (int64_t s = 0; s < steps; s++) {
    Vec gg = matmul(x, transpose(x, rows, cols), rows, cols, rows), power = x, sum(x.size(), 0.0);
    for (size_t i = 0; i < coef.size(); i++) {
      if (i) power = matmul(gg, power, rows, rows, cols);
      for (size_t e = 0; e < sum.size(); e++) sum[e] += coef[i] * power[e];
    }
    x = sum;
  }
  return tr ? transpose(x, rows, cols) : x;
}
// `steps` steps of tinygrad's LARS (SGD, LARS, Muon) or LAMB (Adam, AdamW, LAMB) rule with options o
void reference(std::vector<RefParam>& ps, const tg_optimizer_options& o, bool lamb, int steps) {
  std::vector<Vec> b(ps.size()), m(ps.size()), v(ps.size());
  for (size_t i = 0; i < ps.size(); i++) b[i] = m[i] = v[i] = Vec(ps[i].w.size(), 0.0);
  double b1_t = 1, b2_t = 1;
  Vec coef(o.ns_coefficients, o.ns_coefficients + o.n_ns_coefficients);
  for (int s = 0; s < steps; s++) {
    b1_t *= o.b1, b2_t *= o.b2;
    for (size_t i = 0; i < ps.size(); i++) {
      Vec& w = ps[i].w;
      Vec g(w.size()), up(w.size());
      for (size_t e = 0; e < w.size(); e++) g[e] = ps[i].c[e] + ps[i].d[e] * w[e];
      if (lamb) {
        for (size_t e = 0; e < w.size(); e++) {
          m[i][e] = o.b1 * m[i][e] + (1 - o.b1) * g[e], v[i][e] = o.b2 * v[i][e] + (1 - o.b2) * g[e] * g[e];
          up[e] = (m[i][e] / (1 - b1_t)) / (std::sqrt(v[i][e] / (1 - b2_t)) + o.eps) + o.weight_decay * w[e];
        }
        double r1 = norm(w), r2 = norm(up), r = !o.adam && r1 > 0 && r2 > 0 ? r1 / r2 : 1;
        for (size_t e = 0; e < w.size(); e++) w[e] -= o.lr * r * up[e];
        continue;
      }
      double r1 = norm(w), r2 = norm(g), r = o.tcoef != 0 && r1 > 0 && r2 > 0 ? o.tcoef * r1 / (r2 + o.weight_decay * r1) : 1;
      if (o.pre_wd && o.weight_decay > 0)
        for (size_t e = 0; e < w.size(); e++) g[e] += o.weight_decay * w[e];
      if (o.classic)
        for (double& x : g) x *= r * o.lr;
      if (o.momentum != 0)
        for (size_t e = 0; e < w.size(); e++) b[i][e] = o.momentum * b[i][e] + g[e], g[e] = o.nesterov ? g[e] + o.momentum * b[i][e] : b[i][e];
      if (!coef.empty()) g = newton_schulz(g, ps[i].rows, ps[i].cols, o.ns_steps, coef);
      if (!o.classic)
        for (double& x : g) x *= r * o.lr;
      double decay = !o.pre_wd && o.weight_decay > 0 ? 1 - o.weight_decay * o.lr : 1;
      for (size_t e = 0; e < w.size(); e++) w[e] = w[e] * decay - g[e];
    }
  }
}

// the same problem through the C API: params (3,4) and (5,), 10 steps of kind with options o
struct Problem {
  std::vector<std::vector<int64_t>> shapes{{3, 4}, {5}};
  std::vector<RefParam> ref;
  std::vector<T> w, c, d;
  explicit Problem(uint32_t seed) {
    for (size_t i = 0; i < shapes.size(); i++) {
      int64_t n = 1;
      for (int64_t s : shapes[i]) n *= s;
      auto wv = randv(size_t(n), seed + 3 * uint32_t(i)), cv = randv(size_t(n), seed + 3 * uint32_t(i) + 1);
      auto dv = randv(size_t(n), seed + 3 * uint32_t(i) + 2, 0.2f, 1.0f);
      ref.push_back({Vec(wv.begin(), wv.end()), Vec(cv.begin(), cv.end()), Vec(dv.begin(), dv.end()), shapes[i][0], n / shapes[i][0]});
      w.push_back(from(wv, shapes[i])), c.push_back(from(cv, shapes[i])), d.push_back(from(dv, shapes[i]));
    }
  }
  T loss() const {
    T total;
    for (size_t i = 0; i < w.size(); i++) {
      T quad = tg_tensor_mul(T(tg_tensor_mul(d[i], T(tg_tensor_mul(w[i], w[i])))), T(tg_tensor_full(nullptr, 0, 0.5, TG_FLOAT32, nullptr)));
      T l = tg_tensor_sum(T(tg_tensor_add(T(tg_tensor_mul(c[i], w[i])), quad)), nullptr, 0, 0);
      total = total.p ? T(tg_tensor_add(total, l)) : l;
    }
    return total;
  }
  void run(tg_optimizer* opt, int steps) {
    for (int s = 0; s < steps; s++) {
      ASSERT_EQ(tg_optimizer_zero_grad(opt), TG_OK) << tg_last_error_message();
      ASSERT_EQ(tg_tensor_backward(loss()), TG_OK) << tg_last_error_message();
      ASSERT_EQ(tg_optimizer_step(opt), TG_OK) << tg_last_error_message();
    }
  }
};

void check_trajectory(tg_optimizer_kind kind, const tg_optimizer_options& o, const std::string& what, double tol = 2e-5) {
  Training on;
  Problem p(7 + uint32_t(kind));
  Opt opt(kCtors[kind](&p.w[0].p, p.w.size(), &o));
  ASSERT_TRUE(opt.p) << what << ": " << tg_last_error_message();
  p.run(opt, 10);
  reference(p.ref, o, kind == TG_OPTIM_ADAM || kind == TG_OPTIM_ADAMW || kind == TG_OPTIM_LAMB, 10);
  for (size_t i = 0; i < p.w.size(); i++) {
    auto got = data(p.w[i]);
    for (size_t e = 0; e < got.size(); e++)
      ASSERT_NEAR(got[e], p.ref[i].w[e], tol * (1 + std::fabs(p.ref[i].w[e]))) << what << ": param " << i << " [" << e << "]";
  }
}

TEST(OptimCApi, EveryClassFollowsTinygradsRuleFor10Steps) {
  for (int k = TG_OPTIM_SGD; k <= TG_OPTIM_MUON; k++) {
    tg_optimizer_options o = defaults(tg_optimizer_kind(k));
    o.lr = 0.01;
    check_trajectory(tg_optimizer_kind(k), o, std::string(kNames[k]) + " defaults, lr 0.01");
  }
}

TEST(OptimCApi, OptionsVaried) {
  struct Case {
    tg_optimizer_kind kind;
    const char* what;
    void (*set)(tg_optimizer_options&);
  };
  const Case cases[] = {
      {TG_OPTIM_SGD, "sgd momentum", [](tg_optimizer_options& o) { o.lr = 0.05, o.momentum = 0.9; }},
      {TG_OPTIM_SGD, "sgd nesterov wd", [](tg_optimizer_options& o) { o.lr = 0.05, o.momentum = 0.9, o.nesterov = 1, o.weight_decay = 0.1; }},
      {TG_OPTIM_SGD, "sgd classic momentum wd", [](tg_optimizer_options& o) { o.lr = 0.05, o.momentum = 0.8, o.classic = 1, o.weight_decay = 0.01; }},
      {TG_OPTIM_ADAM, "adam b1 b2 eps", [](tg_optimizer_options& o) { o.lr = 0.1, o.b1 = 0.8, o.b2 = 0.99, o.eps = 1e-6; }},
      {TG_OPTIM_ADAMW, "adamw wd 0.1", [](tg_optimizer_options& o) { o.lr = 0.1, o.weight_decay = 0.1; }},
      {TG_OPTIM_LAMB, "lamb wd", [](tg_optimizer_options& o) { o.lr = 0.05, o.weight_decay = 0.05; }},
      {TG_OPTIM_LAMB, "lamb adam=1", [](tg_optimizer_options& o) { o.lr = 0.05, o.adam = 1; }},
      {TG_OPTIM_LARS, "lars no momentum, post wd", [](tg_optimizer_options& o) { o.lr = 0.5, o.momentum = 0, o.pre_wd = 0, o.weight_decay = 0.01; }},
      {TG_OPTIM_LARS, "lars nesterov popular tcoef 0.01", [](tg_optimizer_options& o) { o.lr = 0.5, o.nesterov = 1, o.classic = 0, o.tcoef = 0.01; }},
      {TG_OPTIM_MUON, "muon no nesterov, 3 steps",
       [](tg_optimizer_options& o) {
         o.lr = 0.02, o.nesterov = 0, o.ns_steps = 3, o.n_ns_coefficients = 3;
         o.ns_coefficients[0] = 2, o.ns_coefficients[1] = -1.5, o.ns_coefficients[2] = 0.5;
       }},
      {TG_OPTIM_MUON, "muon no weight decay", [](tg_optimizer_options& o) { o.lr = 0.02, o.weight_decay = 0; }},
  };
  for (const Case& c : cases) {
    tg_optimizer_options o = defaults(c.kind);
    c.set(o);
    check_trajectory(c.kind, o, c.what);
  }
}

TEST(OptimCApi, DefaultsAreTinygrads) {
  tg_optimizer_options o = defaults(TG_OPTIM_SGD);
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.lr, 0.001); EXPECT_EQ(o.momentum, 0); EXPECT_EQ(o.weight_decay, 0); EXPECT_EQ(o.nesterov, 0); EXPECT_EQ(o.classic, 0);
  EXPECT_EQ(o.pre_wd, 1); EXPECT_EQ(o.tcoef, 0); EXPECT_EQ(o.n_ns_coefficients, 0u);
  o = defaults(TG_OPTIM_ADAM);
  EXPECT_EQ(o.lr, 0.001); EXPECT_EQ(o.b1, 0.9); EXPECT_EQ(o.b2, 0.999); EXPECT_EQ(o.eps, 1e-8); EXPECT_EQ(o.weight_decay, 0); EXPECT_EQ(o.adam, 1);
  o = defaults(TG_OPTIM_ADAMW);
  EXPECT_EQ(o.eps, 1e-8); EXPECT_EQ(o.weight_decay, 0.01); EXPECT_EQ(o.adam, 1);
  o = defaults(TG_OPTIM_LARS);
  EXPECT_EQ(o.momentum, 0.9); EXPECT_EQ(o.weight_decay, 1e-4); EXPECT_EQ(o.classic, 1); EXPECT_EQ(o.pre_wd, 1); EXPECT_EQ(o.tcoef, 0.001);
  o = defaults(TG_OPTIM_LAMB);
  EXPECT_EQ(o.eps, 1e-6); EXPECT_EQ(o.weight_decay, 0); EXPECT_EQ(o.adam, 0);
  o = defaults(TG_OPTIM_MUON);
  EXPECT_EQ(o.momentum, 0.95); EXPECT_EQ(o.weight_decay, 0.1); EXPECT_EQ(o.nesterov, 1); EXPECT_EQ(o.ns_steps, 5); EXPECT_EQ(o.pre_wd, 0);
  ASSERT_EQ(o.n_ns_coefficients, 3u);
  EXPECT_EQ(o.ns_coefficients[0], 3.4445); EXPECT_EQ(o.ns_coefficients[1], -4.775); EXPECT_EQ(o.ns_coefficients[2], 2.0315);
  // a caller with an older, smaller struct gets its prefix
  tg_optimizer_options small{};
  small.struct_size = offsetof(tg_optimizer_options, weight_decay);
  small.weight_decay = 42;
  ASSERT_EQ(tg_optimizer_options_default(TG_OPTIM_MUON, &small), TG_OK);
  EXPECT_EQ(small.struct_size, offsetof(tg_optimizer_options, weight_decay));
  EXPECT_EQ(small.momentum, 0.95); EXPECT_EQ(small.weight_decay, 42);
  // errors
  EXPECT_EQ(tg_optimizer_options_default(TG_OPTIM_SGD, nullptr), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_EQ(tg_optimizer_options_default(tg_optimizer_kind(6), &o), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "kind 6");
  o.struct_size = 0;
  EXPECT_EQ(tg_optimizer_options_default(TG_OPTIM_SGD, &o), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "struct_size");
}

TEST(OptimCApi, NullOptionsAndASmallerStructTakeDefaults) {
  Training on;
  // opts NULL is the defaults; a prefix holding only lr is lr and the defaults
  tg_optimizer_options prefix = defaults(TG_OPTIM_ADAMW);
  prefix.lr = 0.05;
  prefix.struct_size = offsetof(tg_optimizer_options, momentum);
  prefix.weight_decay = 123;  // past the prefix: not read
  tg_optimizer_options full = defaults(TG_OPTIM_ADAMW);
  full.lr = 0.05;
  for (const tg_optimizer_options* o : std::initializer_list<const tg_optimizer_options*>{&prefix, nullptr}) {
    Problem p(3);
    Opt opt(tg_optim_adamw(&p.w[0].p, p.w.size(), o));
    ASSERT_TRUE(opt.p) << tg_last_error_message();
    p.run(opt, 3);
    tg_optimizer_options want = o ? full : defaults(TG_OPTIM_ADAMW);
    reference(p.ref, want, true, 3);
    auto got = data(p.w[1]);
    for (size_t e = 0; e < got.size(); e++) EXPECT_NEAR(got[e], p.ref[1].w[e], 2e-5 * (1 + std::fabs(p.ref[1].w[e])));
  }
}

TEST(OptimCApi, BadArgumentsAreErrorsNamingThem) {
  Problem p(1);
  tg_tensor* ps[2] = {p.w[0], p.w[1]};
  for (int k = TG_OPTIM_SGD; k <= TG_OPTIM_MUON; k++) {
    SCOPED_TRACE(kNames[k]);
    EXPECT_EQ(kCtors[k](nullptr, 2, nullptr), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, "params is NULL");
    EXPECT_EQ(kCtors[k](ps, 0, nullptr), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, "no params");
    tg_tensor* with_null[2] = {p.w[0], nullptr};
    EXPECT_EQ(kCtors[k](with_null, 2, nullptr), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, "params[1] is NULL");
    tg_optimizer_options o = defaults(tg_optimizer_kind(k));
    o.lr = -1;
    EXPECT_EQ(kCtors[k](ps, 2, &o), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, "lr -1");
    o = defaults(tg_optimizer_kind(k));
    o.lr = NAN;
    EXPECT_EQ(kCtors[k](ps, 2, &o), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, "lr nan");
    o = defaults(tg_optimizer_kind(k));
    o.struct_size = sizeof o + 8;
    EXPECT_EQ(kCtors[k](ps, 2, &o), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, "larger than");
    o.struct_size = 4;
    EXPECT_EQ(kCtors[k](ps, 2, &o), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, "too small");
    o = defaults(tg_optimizer_kind(k));
    o.weight_decay = -0.5;
    EXPECT_EQ(kCtors[k](ps, 2, &o), nullptr);
    expect_error(TG_ERROR_INVALID_ARGUMENT, k == TG_OPTIM_ADAM ? "Adam does not take it" : "weight_decay -0.5 must be >= 0");
  }
  // a field the class does not take (options filled for another class)
  tg_optimizer_options o = defaults(TG_OPTIM_ADAM);
  EXPECT_EQ(tg_optim_sgd(ps, 2, &o), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "but SGD does not take it");  // the first field that differs
  o = defaults(TG_OPTIM_SGD);
  o.tcoef = 0.01;
  EXPECT_EQ(tg_optim_sgd(ps, 2, &o), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "opts->tcoef");
  o = defaults(TG_OPTIM_LARS);
  o.momentum = -0.1;
  EXPECT_EQ(tg_optim_lars(ps, 2, &o), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "momentum -0.1 must be >= 0");
  o = defaults(TG_OPTIM_MUON);
  o.n_ns_coefficients = 9;
  EXPECT_EQ(tg_optim_muon(ps, 2, &o), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "n_ns_coefficients is 9");
  o = defaults(TG_OPTIM_MUON);
  o.ns_steps = -1;
  EXPECT_EQ(tg_optim_muon(ps, 2, &o), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "ns_steps -1");
  // tensors that can't be params
  T scalar = from({1.0f}, {});
  EXPECT_EQ(tg_optim_muon(&scalar.p, 1, nullptr), nullptr);
  expect_error(TG_ERROR_SHAPE, "params[0] is 0-d");
  int32_t iv[2] = {1, 2};
  int64_t two = 2;
  T ints = tg_tensor_from_data(iv, sizeof iv, TG_INT32, &two, 1, nullptr);
  tg_tensor* mixed[2] = {p.w[0], ints};
  EXPECT_EQ(tg_optim_adam(mixed, 2, nullptr), nullptr);
  expect_error(TG_ERROR_DTYPE, "params[1] is int32");
  T dead = from({1.0f, 2.0f}, {2});
  tg_tensor* released = dead.p;
  tg_tensor_release(dead.p), dead.p = nullptr;
  EXPECT_EQ(tg_optim_sgd(&released, 1, nullptr), nullptr);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "params[0] is not a live tg_tensor handle");
  // NULL and released optimizer handles
  tg_optimizer* gone = tg_optim_sgd(ps, 2, nullptr);
  ASSERT_TRUE(gone) << tg_last_error_message();
  tg_optimizer_release(gone);
  for (tg_optimizer* h : {(tg_optimizer*)nullptr, gone}) {
    const char* what = h ? "optimizer is not a live tg_optimizer handle" : "optimizer is NULL";
    EXPECT_EQ(tg_optimizer_step(h), TG_ERROR_INVALID_ARGUMENT); expect_error(TG_ERROR_INVALID_ARGUMENT, what);
    EXPECT_EQ(tg_optimizer_zero_grad(h), TG_ERROR_INVALID_ARGUMENT); expect_error(TG_ERROR_INVALID_ARGUMENT, what);
    EXPECT_EQ(tg_optimizer_schedule_step(h, nullptr, 0), -1); expect_error(TG_ERROR_INVALID_ARGUMENT, what);
    EXPECT_EQ(tg_optimizer_params(h, nullptr, 0), -1); expect_error(TG_ERROR_INVALID_ARGUMENT, what);
    EXPECT_EQ(tg_optimizer_lr(h), nullptr); expect_error(TG_ERROR_INVALID_ARGUMENT, what);
    EXPECT_EQ(tg_optimizer_set_lr(h, 0.1), TG_ERROR_INVALID_ARGUMENT); expect_error(TG_ERROR_INVALID_ARGUMENT, what);
    EXPECT_EQ(tg_optimizer_retain(h), nullptr); expect_error(TG_ERROR_INVALID_ARGUMENT, what);
  }
  tg_optimizer_release(nullptr);  // a no-op
  EXPECT_EQ(tg_last_error(), TG_OK);
  tg_optimizer_release(gone);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "released twice");
}

TEST(OptimCApi, StepNeedsTrainingAndEveryGradAndAssignsNothingOtherwise) {
  Problem p(2);
  Opt opt(tg_optim_adam(&p.w[0].p, p.w.size(), nullptr));
  ASSERT_TRUE(opt.p) << tg_last_error_message();
  auto before0 = data(p.w[0]), before1 = data(p.w[1]);
  ASSERT_EQ(tg_tensor_backward(p.loss()), TG_OK);
  {
    ASSERT_EQ(tg_set_option("TRAINING", "0"), TG_OK);
    EXPECT_EQ(tg_optimizer_step(opt), TG_ERROR_INVALID_ARGUMENT);
    expect_error(TG_ERROR_INVALID_ARGUMENT, "TRAINING=0");
    tg_set_option("TRAINING", nullptr);
  }
  Training on;
  // a param without a grad: tinygrad's step fails on unwrap(t.grad); here before anything is assigned
  T extra = from({1.0f, 2.0f, 3.0f}, {3});
  tg_tensor* three[3] = {p.w[0], p.w[1], extra};
  Opt partial(tg_optim_sgd(three, 3, nullptr));
  ASSERT_TRUE(partial.p) << tg_last_error_message();
  EXPECT_EQ(tg_optimizer_step(partial), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "params[2] (3,) has no grad");
  // a capacity below the count: nothing assigned
  int64_t n = tg_optimizer_schedule_step(opt, nullptr, 0);
  EXPECT_EQ(n, 2 + 2 * 2 + 2);  // b1^t, b2^t, m and v per param, then the params
  tg_tensor* out[8] = {};
  EXPECT_EQ(tg_optimizer_schedule_step(opt, out, size_t(n - 1)), -1);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "capacity 7 is below the 8 tensors");
  EXPECT_EQ(out[0], nullptr);
  EXPECT_EQ(data(p.w[0]), before0);
  EXPECT_EQ(data(p.w[1]), before1);
  // zero_grad clears the grads: a step then has none
  ASSERT_EQ(tg_optimizer_zero_grad(opt), TG_OK);
  EXPECT_EQ(tg_tensor_grad(p.w[0]), nullptr);
  tg_clear_error();
  EXPECT_EQ(tg_optimizer_step(opt), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "params[0] (3,4) has no grad");
}

TEST(OptimCApi, DuplicatedParamsAreUpdatedOnce) {
  Training on;
  std::vector<std::vector<float>> got;
  for (int twice = 0; twice < 2; twice++) {
    Problem p(4);
    tg_tensor* ps[3] = {p.w[0], p.w[1], p.w[0]};
    Opt opt(tg_optim_adamw(ps, twice ? 3 : 2, nullptr));
    ASSERT_TRUE(opt.p) << tg_last_error_message();
    EXPECT_EQ(tg_optimizer_params(opt, nullptr, 0), 2);
    p.run(opt, 3);
    got.push_back(data(p.w[0]));
  }
  EXPECT_EQ(got[0], got[1]);
}

TEST(OptimCApi, ParamsAndRetain) {
  Problem p(5);
  Opt opt(tg_optim_lamb(&p.w[0].p, p.w.size(), nullptr));
  ASSERT_TRUE(opt.p) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_requires_grad(p.w[0]), 1);  // set by the optimizer, as tinygrad does
  tg_tensor* out[2] = {};
  EXPECT_EQ(tg_optimizer_params(opt, out, 1), -1);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "capacity 1");
  ASSERT_EQ(tg_optimizer_params(opt, out, 2), 2);
  T a(out[0]), b(out[1]);
  EXPECT_EQ(data(a), data(p.w[0]));
  EXPECT_EQ(tg_tensor_numel(b), 5);
  tg_optimizer* again = tg_optimizer_retain(opt);
  ASSERT_EQ(again, opt.p);
  tg_optimizer_release(again);
  EXPECT_EQ(tg_optimizer_params(opt, nullptr, 0), 2);  // still live
}

TEST(OptimCApi, LrIsATensorThatSetLrChanges) {
  Training on;
  Problem p(6);
  tg_optimizer_options o = defaults(TG_OPTIM_SGD);
  o.lr = 0.25;
  Opt opt(tg_optim_sgd(&p.w[0].p, p.w.size(), &o));
  T lr = tg_optimizer_lr(opt);
  ASSERT_TRUE(lr.p);
  EXPECT_EQ(data(lr), std::vector<float>{0.25f});
  EXPECT_EQ(tg_optimizer_set_lr(opt, -1), TG_ERROR_INVALID_ARGUMENT);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "lr -1");
  ASSERT_EQ(tg_optimizer_set_lr(opt, 0.125), TG_OK);
  EXPECT_EQ(data(lr), std::vector<float>{0.125f});  // the same tensor, assigned in place
  // assigning into the lr tensor works as well
  ASSERT_EQ(tg_tensor_assign(lr, T(from({0.5f}, {1}))), TG_OK);
  ASSERT_EQ(tg_tensor_realize(lr), TG_OK);
  p.run(opt, 1);
  o.lr = 0.5;
  reference(p.ref, o, false, 1);
  auto got = data(p.w[1]);
  for (size_t e = 0; e < got.size(); e++) EXPECT_NEAR(got[e], p.ref[1].w[e], 1e-5 * (1 + std::fabs(p.ref[1].w[e])));
}

TEST(OptimCApi, ZeroDimParam) {
  Training on;
  T w = from({2.0f}, {});
  Opt opt(tg_optim_sgd(&w.p, 1, nullptr));
  ASSERT_TRUE(opt.p) << tg_last_error_message();
  ASSERT_EQ(tg_tensor_backward(T(tg_tensor_mul(w, w))), TG_OK);
  ASSERT_EQ(tg_optimizer_step(opt), TG_OK) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_ndim(w), 0);
  EXPECT_NEAR(data(w)[0], 2.0f - 0.001f * 4.0f, 1e-6);
}

// ---- an MLP 784-128-10 trained by Adam: kernels per step, and the same steps under a JIT -----------------------------
struct Mlp {
  static constexpr int64_t IN = 784, HID = 128, OUT = 10, B = 32;
  T w1, b1, w2, b2;
  Opt opt;
  Mlp()
      : w1(from(randv(IN * HID, 1, 0.05f), {IN, HID})), b1(from(randv(HID, 2, 0.05f), {HID})), w2(from(randv(HID * OUT, 3, 0.1f), {HID, OUT})),
        b2(from(randv(OUT, 4, 0.1f), {OUT})), opt(make()) {}
  tg_optimizer* make() {
    tg_tensor* ps[4] = {w1, b1, w2, b2};
    return tg_optim_adam(ps, 4, nullptr);
  }
  // forward, backward and one Adam step scheduled; the tensors to realize (the loss first) into ts
  tg_status step(tg_tensor* x, tg_tensor* y, std::vector<T>& ts) {
    tg_optimizer_zero_grad(opt);
    T h = tg_tensor_relu(T(tg_tensor_linear(x, w1, b1)));
    T loss = tg_tensor_sparse_categorical_crossentropy(T(tg_tensor_linear(h, w2, b2)), y, -1, 0, 1);
    if (!loss.p || tg_tensor_backward(loss) != TG_OK) return tg_last_error();
    std::vector<tg_tensor*> out(size_t(tg_optimizer_schedule_step(opt, nullptr, 0)));
    if (tg_optimizer_schedule_step(opt, out.data(), out.size()) < 0) return tg_last_error();
    ts = {loss};
    for (tg_tensor* t : out) ts.emplace_back(t);
    return TG_OK;
  }
};
struct Batch {
  T x, y;
};
Batch batch(int step) {
  std::vector<int32_t> y(Mlp::B);
  for (int64_t i = 0; i < Mlp::B; i++) y[size_t(i)] = int32_t((i * 7 + step) % Mlp::OUT);
  int64_t n = Mlp::B;
  return {from(randv(Mlp::B * Mlp::IN, 100 + uint32_t(step)), {Mlp::B, Mlp::IN}),
          tg_tensor_from_data(y.data(), y.size() * sizeof(int32_t), TG_INT32, &n, 1, nullptr)};
}
uint64_t kernels_run() {
  tg_counters c{};
  c.struct_size = sizeof c;
  EXPECT_EQ(tg_counters_get(&c), TG_OK);
  return c.kernel_count;
}

TEST(OptimKernelCount, AdamStepOfAnMlpRealizedWithItsLoss) {
  Training on;
  Mlp m;
  ASSERT_TRUE(m.opt.p) << tg_last_error_message();
  std::vector<float> losses;
  for (int s = 0; s < 3; s++) {
    Batch b = batch(0);
    std::vector<T> ts;
    ASSERT_EQ(m.step(b.x, b.y, ts), TG_OK) << tg_last_error_message();
    std::vector<tg_tensor*> hs(ts.begin(), ts.end());
    tg_counters_reset();
    ASSERT_EQ(tg_tensor_realize_many(hs.data(), hs.size()), TG_OK) << tg_last_error_message();
    // forward, backward, and the update of 4 params, their m and v, and b1^t, b2^t: tinygrad 0.13 runs 42 kernels
    EXPECT_LE(kernels_run(), 42u) << "step " << s;
    if (s == 0) std::printf("Adam step of a 784-128-10 MLP with its loss: %llu kernels\n", (unsigned long long)kernels_run());
    losses.push_back(data(ts[0])[0]);
  }
  EXPECT_LT(losses.back(), losses.front());  // the same batch: it fits
}

// a jitted training step: inputs x, y; output the loss
tg_status jit_step(void* u, tg_tensor* const* in, size_t, tg_tensor** out, size_t n_out) {
  std::vector<T> ts;
  if (tg_status s = static_cast<Mlp*>(u)->step(in[0], in[1], ts); s != TG_OK) return s;
  std::vector<tg_tensor*> hs(ts.begin(), ts.end());  // realized with the loss: the step is done when the call returns
  if (tg_status s = tg_tensor_realize_many(hs.data(), hs.size()); s != TG_OK) return s;
  if (n_out) out[0] = tg_tensor_retain(ts[0]);
  return TG_OK;
}

TEST(OptimJit, AdamStepReplaysAsWithoutJit) {
  Training on;
  std::vector<std::vector<float>> runs;
  for (int jit_on = 0; jit_on < 2; jit_on++) {
    std::optional<NoJit> off;
    if (!jit_on) off.emplace();
    Mlp m;
    tg_jit* jit = tg_jit_create(jit_step, &m);
    std::vector<float> trace;
    for (int s = 0; s < 6; s++) {
      if (s == 4) ASSERT_EQ(tg_optimizer_set_lr(m.opt, 0.01), TG_OK);  // a new lr reaches the captured kernels
      Batch b = batch(s);
      tg_tensor* in[2] = {b.x, b.y};
      tg_tensor* out = nullptr;
      ASSERT_EQ(tg_jit_call(jit, in, 2, &out, 1), TG_OK) << tg_last_error_message();
      trace.push_back(data(T(out))[0]);
    }
    if (jit_on) EXPECT_EQ(tg_jit_call_count(jit), 6);
    tg_jit_release(jit);
    auto w = data(m.b2);
    trace.insert(trace.end(), w.begin(), w.end());
    runs.push_back(trace);
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t i = 0; i < runs[0].size(); i++) EXPECT_NEAR(runs[1][i], runs[0][i], 1e-5 * (1 + std::fabs(runs[0][i]))) << i;
}

}  // namespace

// The state under tinygrad's attribute names, after one step of loss = sum(w^2) (grad 2w): the tensors a step assigns.
TEST(OptimCApi, StateByTinygradsNames) {
  Training on;
  auto state = [](tg_optimizer* opt, const char* name) {
    int64_t n = tg_optimizer_state(opt, name, nullptr, 0);
    EXPECT_GE(n, 0) << name << ": " << tg_last_error_message();
    std::vector<tg_tensor*> out(size_t(std::max<int64_t>(n, 0)));
    EXPECT_EQ(tg_optimizer_state(opt, name, out.data(), out.size()), n);
    std::vector<std::vector<float>> vals;
    for (tg_tensor* t : out) vals.push_back(data(T(t)));
    return vals;
  };
  auto step = [](tg_optimizer* opt, tg_tensor* w) {
    T sq(tg_tensor_mul(w, w));
    T loss(tg_tensor_sum(sq, nullptr, 0, 0));
    ASSERT_EQ(tg_optimizer_zero_grad(opt), TG_OK);
    ASSERT_EQ(tg_tensor_backward(loss), TG_OK) << tg_last_error_message();
    ASSERT_EQ(tg_optimizer_step(opt), TG_OK) << tg_last_error_message();
  };
  T w(from({1.f, 2.f}, {2}));
  Opt adam(tg_optim_adam(&w.p, 1, nullptr));
  ASSERT_TRUE(adam.p) << tg_last_error_message();
  step(adam, w);
  using V = std::vector<std::vector<float>>;
  V m = state(adam, "m"), v = state(adam, "v");
  ASSERT_EQ(m.size(), 1u);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NEAR(m[0][0], 0.2f, 1e-6);  // (1 - b1) * g
  EXPECT_NEAR(m[0][1], 0.4f, 1e-6);
  EXPECT_NEAR(v[0][0], 0.004f, 1e-7);  // (1 - b2) * g^2
  EXPECT_NEAR(v[0][1], 0.016f, 1e-7);
  EXPECT_NEAR(state(adam, "b1_t")[0][0], 0.9f, 1e-6);
  EXPECT_NEAR(state(adam, "b2_t")[0][0], 0.999f, 1e-6);
  tg_tensor* one = nullptr;
  EXPECT_EQ(tg_optimizer_state(adam, "m", &one, 0), -1);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "capacity 0");
  EXPECT_EQ(tg_optimizer_state(adam, "b", nullptr, 0), -1);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "has no state 'b' (it has m, v, b1_t, b2_t)");
  EXPECT_EQ(tg_optimizer_state(adam, nullptr, nullptr, 0), -1);
  expect_error(TG_ERROR_INVALID_ARGUMENT, "name is NULL");
  EXPECT_EQ(tg_optimizer_state(nullptr, "m", nullptr, 0), -1);
  tg_clear_error();

  T w2(from({1.f, 2.f}, {2}));
  tg_optimizer_options o = defaults(TG_OPTIM_SGD);
  o.momentum = 0.9;
  Opt sgd(tg_optim_sgd(&w2.p, 1, &o));
  ASSERT_TRUE(sgd.p) << tg_last_error_message();
  step(sgd, w2);
  EXPECT_EQ(state(sgd, "b"), (V{{2.f, 4.f}}));  // momentum * 0 + g
  T w3(from({1.f}, {1}));
  Opt plain(tg_optim_sgd(&w3.p, 1, nullptr));
  EXPECT_EQ(tg_optimizer_state(plain, "b", nullptr, 0), 0);  // no momentum: no buffers
}
