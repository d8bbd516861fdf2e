// Scatter (Tensor::put, and setitem / scatter / scatter_reduce over it): one kernel copies the target, a second walks
// the values once and stores each through its loaded position. Checked element by element against loops on the host:
// numpy's combined advanced-indexing setitem on a 12M-element tensor, repeated and out-of-range positions, every
// reduce with and without self, gradients, and the same results from the C renderer and OpenCL.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "codegen/codegen.h"
#include "codegen/opt/postrange.h"
#include "engine/realize.h"
#include "float_data.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"

namespace tg {
namespace {

using tg_test::randf;
using tg_test::read;
using tg_test::tf;

Tensor ti(const std::vector<int32_t>& v, Shape s, const char* device = "CPU") {
  return Tensor::from_data(v.data(), v.size() * sizeof(int32_t), dtypes::int32, s, device);
}
std::vector<int32_t> read_i(Tensor t) {
  std::vector<int32_t> out(size_t(t.numel()));
  t.to_data(out.data(), out.size() * sizeof(int32_t));
  return out;
}
Index tidx(const Tensor& t) {
  Index i;
  i.kind = Index::TensorIdx, i.tensor = std::make_shared<Tensor>(t);
  return i;
}
Index all() { return Index{}; }
std::vector<std::shared_ptr<const ScheduleItem>> kernels(const Tensor& t) {
  Normalized nz = normalize({t.uop()});
  auto s = create_schedule(nz.sink, nz.specs);
  return {s->kernels.begin(), s->kernels.end()};
}

// numpy's example: x.shape (10, 20, 30, 40, 50), ind_1 and ind_2 broadcast to (2, 3, 4); x[:, ind_1, :, ind_2] has
// shape (2, 3, 4, 10, 30, 50) and takes 360,000 values. Each is written once: a scatter over 12M elements per value
// would not finish.
TEST(Scatter, NumpyCombinedSetitemOn12MElements) {
  const int64_t A = 10, B = 20, C = 30, D = 40, E = 50, N = A * B * C * D * E;
  std::vector<float> x = randf(size_t(N), 1);
  std::mt19937_64 g(2);
  std::vector<int32_t> i1(24), i2(24);
  for (auto& i : i1) i = int32_t(std::uniform_int_distribution<int>(-B, B - 1)(g));
  for (auto& i : i2) i = int32_t(std::uniform_int_distribution<int>(-D, D - 1)(g));
  i1[5] = i1[4], i2[5] = i2[4];  // one pair named twice: the later values win, as numpy
  std::vector<float> v = randf(size_t(24 * A * C * E), 3);
  Tensor t = tf(x, {A, B, C, D, E}).contiguous().realize();
  t.setitem({all(), tidx(ti(i1, {2, 3, 4})), all(), tidx(ti(i2, {2, 3, 4})), all()}, tf(v, {2, 3, 4, A, C, E}));
  auto ks = kernels(t);
  for (auto& k : ks) {  // nothing loops over the 12M positions for each value
    ProgramSpec p = get_program(k->ast, k->name, get_device("CPU").renderer());
    EXPECT_LT(p.ops, uint64_t(64 * N)) << k->name;
  }
  std::vector<float> got = read(t), want = x;
  for (int64_t b = 0; b < 24; b++) {
    int64_t j1 = i1[size_t(b)] < 0 ? i1[size_t(b)] + B : i1[size_t(b)], j2 = i2[size_t(b)] < 0 ? i2[size_t(b)] + D : i2[size_t(b)];
    for (int64_t a = 0; a < A; a++)
      for (int64_t c = 0; c < C; c++)
        for (int64_t e = 0; e < E; e++) want[size_t((((a * B + j1) * C + c) * D + j2) * E + e)] = v[size_t(((b * A + a) * C + c) * E + e)];
  }
  size_t bad = 0;
  for (size_t k = 0; k < want.size(); k++) bad += got[k] != want[k];
  EXPECT_EQ(bad, 0u);
}

// put: positions in row-major order, the last of a repeated one wins, outside [0, numel) skipped (-1 included: no wrap)
TEST(Scatter, PutKeepsTheLastValueAndSkipsOutOfRange) {
  for (const char* dev : {"CPU", "CPU:CLANG", "CL"}) {
    SCOPED_TRACE(dev);
    try {
      get_device(dev);
    } catch (const Error& e) {
      continue;  // no OpenCL driver here
    }
    Tensor t = tf(std::vector<float>(10, 0.5f), {2, 5}, dev);
    Tensor r = t.put(ti({3, 3, -1, 10, 12, 0, 9, 3}, {2, 4}, dev), tf({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}, dev));
    EXPECT_EQ(read(r), (std::vector<float>{6, .5f, .5f, 8, .5f, .5f, .5f, .5f, .5f, 7}));
    // a long run of repeats: every value lands on two positions in turn, the last pass wins everywhere
    std::vector<int32_t> pos(4096);
    std::vector<float> val(4096);
    for (size_t k = 0; k < pos.size(); k++) pos[k] = int32_t(k % 2048), val[k] = float(k);
    std::vector<float> got = read(Tensor::full({2048}, 0, dtypes::float32, dev).put(ti(pos, {4096}, dev), tf(val, {4096}, dev)));
    for (size_t k = 0; k < got.size(); k++) ASSERT_EQ(got[k], float(k + 2048)) << k;
    // the values broadcast to the positions; a sum adds every value
    EXPECT_EQ(read(tf({1, 1, 1}, {3}, dev).put(ti({2, 2, 0}, {3}, dev), tf({5}, {}, dev), "sum")), (std::vector<float>{6, 1, 11}));
  }
}

// scatter_reduce against torch's rules written as loops: dim 0 and dim 1, with and without self, float and int
TEST(Scatter, ReduceModesMatchALoop) {
  const int64_t R = 6, K = 5, IR = 4, IK = 4;
  std::vector<float> self = randf(size_t(R * K), 4, -3, 3), src = randf(size_t(IR * K), 5, -3, 3);
  std::mt19937_64 g(6);
  std::vector<int32_t> idx(size_t(IR * IK));
  for (auto& i : idx) i = int32_t(std::uniform_int_distribution<int>(0, 3)(g));  // rows 0..3 get hits, 4 and 5 none
  idx[7] = 9;                                                                      // outside: writes nothing
  for (int64_t dim : {0, 1})
    for (const char* red : {"sum", "prod", "mean", "amax", "amin"})
      for (bool inc : {true, false})
        for (bool ints : {false, true}) {
          SCOPED_TRACE(std::string(red) + " dim " + std::to_string(dim) + (inc ? " self" : "") + (ints ? " int32" : ""));
          std::vector<double> want(self.begin(), self.end()), acc(want.size()), cnt(want.size(), 0);
          std::vector<float> s2 = src, sf = self;
          if (ints)
            for (auto* v : {&s2, &sf})
              for (auto& x : *v) x = std::round(x);
          for (size_t k = 0; k < want.size(); k++) want[k] = sf[k];
          for (int64_t a = 0; a < IR; a++)
            for (int64_t b = 0; b < IK; b++) {
              int64_t i = idx[size_t(a * IK + b)];
              if (i >= (dim == 0 ? R : K)) continue;
              size_t at = size_t(dim == 0 ? i * K + b : a * K + i);
              double v = s2[size_t(a * K + b)];
              if (cnt[at]++ == 0) acc[at] = v;
              else acc[at] = !strcmp(red, "prod") ? acc[at] * v : !strcmp(red, "amax") ? std::max(acc[at], v)
                           : !strcmp(red, "amin") ? std::min(acc[at], v) : acc[at] + v;
            }
          for (size_t k = 0; k < want.size(); k++) {
            if (!cnt[k]) continue;
            double s = sf[k], a = acc[k];
            if (!strcmp(red, "mean")) {
              double n = cnt[k] + inc, tot = a + (inc ? s : 0);
              want[k] = ints ? std::floor(tot / n) : tot / n;
            } else if (!inc) want[k] = a;
            else want[k] = !strcmp(red, "prod") ? a * s : !strcmp(red, "amax") ? std::max(a, s) : !strcmp(red, "amin") ? std::min(a, s) : a + s;
          }
          Tensor st = tf(sf, {R, K}), sr = tf(s2, {IR, K});
          if (ints) st = st.cast(dtypes::int32), sr = sr.cast(dtypes::int32);
          Tensor out = st.scatter_reduce(dim, ti(idx, {IR, IK}), sr, red, inc);
          std::vector<float> got = read(out.cast(dtypes::float32));
          for (size_t k = 0; k < want.size(); k++) ASSERT_NEAR(got[k], want[k], 1e-4 * (1 + std::abs(want[k]))) << k;
        }
}

// the scatter's kernel is one ordered loop: no opts from the heuristics, none accepted, none searched
TEST(Scatter, TheStoreKernelRunsInOrder) {
  Tensor r = Tensor::full({1000}, 0, dtypes::float32, "CPU").put(ti(std::vector<int32_t>(4096, 7), {64, 64}), tf(randf(4096, 8), {64, 64}));
  auto ks = kernels(r);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[1]->name, "scatter_4096");
  const Renderer& ren = get_device("CPU").renderer();
  EXPECT_TRUE(get_program(ks[1]->ast, ks[1]->name, ren).opts.empty());
  std::vector<Opt> up{Opt{OptOps::UPCAST, 0, 4}};
  EXPECT_THROW(optimize(ks[1]->ast, ren, &up), OptError);
  EXPECT_EQ(read(r)[7], randf(4096, 8).back());
}

// setitem with tensor indices on a realized tensor stores straight into its buffer: one kernel over the values, no
// copy in or out. Where the values read that buffer (t[[0, 1]] = t[[1, 0]] * 2), they get a buffer of their own first.
TEST(Scatter, SetitemOnARealizedTensorStoresInPlace) {
  std::vector<float> x = randf(1000, 12), v = randf(300, 13);
  Tensor t = tf(x, {10, 100});
  t.setitem({tidx(ti({3, 7, 3}, {3}))}, tf(v, {3, 100}));
  auto ks = kernels(t);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->name, "scatter_300");
  std::vector<float> got = read(t), want = x;
  for (int64_t j = 0; j < 100; j++) want[size_t(300 + j)] = v[size_t(200 + j)], want[size_t(700 + j)] = v[size_t(100 + j)];
  EXPECT_EQ(got, want);
  Tensor u = tf(x, {10, 100});
  u.setitem({tidx(ti({0, 1}, {2}))}, u.getitem({tidx(ti({1, 0}, {2}))}).mul(Tensor::full({}, 2, dtypes::float32, "CPU")));
  EXPECT_GT(kernels(u).size(), 1u);
  got = read(u), want = x;
  for (int64_t j = 0; j < 100; j++) want[size_t(j)] = 2 * x[size_t(100 + j)], want[size_t(100 + j)] = 2 * x[size_t(j)];
  EXPECT_EQ(got, want);
}

// d/dtarget: the gradient where nothing was put (a sum passes all of it); d/dvalues: the gradient at each position,
// for a repeated one too (as torch's index_put), 0 for a position outside. (amax, amin and prod: test_scatter.py, with
// torch's scatter_reduce as the reference.)
TEST(Scatter, Gradients) {
  std::vector<float> w = randf(12, 9), x = randf(12, 10), v = randf(5, 11);
  std::vector<int32_t> pos{3, 7, 3, 20, 0};
  for (const char* red : {"replace", "sum"}) {
    SCOPED_TRACE(red);
    Tensor X = tf(x, {3, 4}), V = tf(v, {5});
    auto gr = X.put(ti(pos, {5}), V, red).mul(tf(w, {3, 4})).sum().gradient({X, V});
    std::vector<float> gx = read(gr[0]), gv = read(gr[1]);
    for (size_t k = 0; k < 12; k++) {
      bool hit = std::find(pos.begin(), pos.end(), int32_t(k)) != pos.end();
      EXPECT_FLOAT_EQ(gx[k], hit && !strcmp(red, "replace") ? 0.f : w[k]) << k;
    }
    for (size_t k = 0; k < 5; k++) EXPECT_FLOAT_EQ(gv[k], pos[k] < 12 ? w[size_t(pos[k])] : 0.f) << k;
  }
}

TEST(Scatter, BadArguments) {
  Tensor t = tf({1, 2, 3}, {3});
  auto code = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code;
    }
    return TG_OK;
  };
  EXPECT_EQ(code([&] { t.put(tf({1}, {1}), tf({1}, {1})); }), TG_ERROR_DTYPE);           // float positions
  EXPECT_EQ(code([&] { t.put(ti({1}, {1}), tf({1, 2}, {2})); }), TG_ERROR_SHAPE);        // values don't broadcast
  EXPECT_EQ(code([&] { t.put(ti({1}, {1}), tf({1}, {1}), "max"); }), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(code([&] { t.put(ti({1}, {1}, "CPU:CLANG"), tf({1}, {1})); }), TG_ERROR_DEVICE);
}

}  // namespace
}  // namespace tg
