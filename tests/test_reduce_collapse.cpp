// Reduce collapse (codegen/simplify.cpp): kernels that sum over a range in closed form lose that loop, and still match a
// host reference. The kernels are written as the schedule writes indexing (`sum_r where(idx == r, x[r], 0)`) and the
// arange trick (`sum_r where(r < upper, val, 0)`), then compiled with the heuristics and run on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "codegen/codegen.h"
#include "codegen/linearize.h"
#include "codegen/opt/postrange.h"
#include "codegen/simplify.h"
#include "engine/realize.h"
#include "schedule/schedule.h"
#include "float_data.h"
#include "tensor/tensor.h"

namespace tg {
namespace {

using tg_test::randf;
using tg_test::read;
using tg_test::tf;

UOpRef global(int64_t slot, DType dt, int64_t n) { return UOp::make(Ops::DEFINE_GLOBAL, dt.ptr_to(n), {}, slot); }
UOpRef load(const UOpRef& buf, const UOpRef& i) { return UOp::make(Ops::LOAD, buf->dtype.base(), {UOp::make(Ops::INDEX, buf->dtype, {buf, i})}); }
UOpRef rng(int64_t n, int64_t axis, AxisType t) { return UOp::range(n, axis, int64_t(t)); }
UOpRef sum(const UOpRef& x, const UOpRef& r) { return UOp::make(Ops::REDUCE, x->dtype, {x, r}, int64_t(Ops::ADD)); }
UOpRef kernel(const UOpRef& out, const UOpRef& i, const UOpRef& v) {
  return UOp::sink({UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, out->dtype, {out, i}), v})});
}
UOpRef f32(double v) { return UOp::const_(dtypes::float32, v); }

// compiles `ast` with the heuristics, runs it on host buffers (output first), returns the output and the program
template <class T>
std::pair<std::vector<T>, ProgramSpec> run(const UOpRef& ast, int64_t out_n, std::vector<std::pair<const void*, std::pair<DType, int64_t>>> ins) {
  Device& dev = get_device("CPU");
  ProgramSpec p = get_program(ast, "test", dev.renderer());
  auto k = compile_program(ast, "test", dev, nullptr);
  std::vector<std::unique_ptr<Buffer>> bufs;
  bufs.push_back(std::make_unique<Buffer>("CPU", DType(dtypes::float32), out_n));
  for (auto& [data, spec] : ins) {
    bufs.push_back(std::make_unique<Buffer>("CPU", spec.first, spec.second));
    bufs.back()->copyin(data, size_t(spec.second * spec.first.itemsize()));
  }
  std::vector<void*> ptrs;
  for (auto& b : bufs) ptrs.push_back(b->ptr());
  run_kernel(*k, ptrs.data());
  std::vector<T> out(static_cast<size_t>(out_n));
  bufs[0]->copyout(out.data(), out.size() * sizeof(T));
  return {out, p};
}
int64_t reduces(const UOpRef& ast) {
  int64_t n = 0;
  for (auto& u : collapse_reduces(cleanup_ast(ast))->toposort()) n += u->op == Ops::REDUCE;
  return n;
}

// X[idx] as getitem builds it: negative indices count from the end, anything else outside [0, N) reads 0
TEST(ReduceCollapse, GatherRowsOfLargeTable) {
  constexpr int64_t N = 60000, D = 64, B = 128;
  auto x = randf(size_t(N * D), 1);
  std::vector<int32_t> idx(B);
  std::mt19937_64 g(2);
  for (auto& i : idx) i = int32_t(std::uniform_int_distribution<int64_t>(-N - 50, N + 50)(g));
  idx[0] = -1, idx[1] = -N, idx[2] = N, idx[3] = -N - 1, idx[4] = 0, idx[5] = N - 1;
  UOpRef out = global(0, dtypes::float32, B * D), ib = global(1, dtypes::int32, B), xb = global(2, dtypes::float32, N * D);
  UOpRef i = rng(B, 0, AxisType::GLOBAL), c = rng(D, 1, AxisType::GLOBAL), r = rng(N, 2, AxisType::REDUCE);
  UOpRef ii = load(ib, i)->cast(dtypes::int64);
  ii = (ii < 0)->where(ii + N, ii);
  UOpRef ast = kernel(out, i * D + c, sum(ii->eq(r)->where(load(xb, r * D + c), f32(0)), r));
  EXPECT_EQ(reduces(ast), 0);
  auto [y, p] = run<float>(ast, B * D, {{idx.data(), {dtypes::int32, B}}, {x.data(), {dtypes::float32, N * D}}});
  EXPECT_LT(p.ops, uint64_t(64 * B * D)) << "a loop over the indexed dim is left:\n" << p.src;
  EXPECT_EQ(p.name.find("60000"), std::string::npos) << p.name;
  for (int64_t b = 0; b < B; b++) {
    int64_t k = idx[size_t(b)] < 0 ? idx[size_t(b)] + N : idx[size_t(b)];
    for (int64_t j = 0; j < D; j++) ASSERT_EQ(y[size_t(b * D + j)], k >= 0 && k < N ? x[size_t(k * D + j)] : 0.f) << b << " " << j;
  }
}

// Embedding-style: where(idx + 3 != r, 0, w[r]) (the x+y != c lift), and one_hot * w: float(idx == r) * w[r]
TEST(ReduceCollapse, EmbeddingAndOneHotStyle) {
  constexpr int64_t V = 1000, D = 16, B = 40;
  auto w = randf(size_t(V * D), 3);
  std::vector<int32_t> idx(B);
  for (int64_t b = 0; b < B; b++) idx[size_t(b)] = int32_t((b * 37) % (V + 10) - 5);
  UOpRef out = global(0, dtypes::float32, B * D), ib = global(1, dtypes::int32, B), wb = global(2, dtypes::float32, V * D);
  UOpRef i = rng(B, 0, AxisType::GLOBAL), c = rng(D, 1, AxisType::GLOBAL), r = rng(V, 2, AxisType::REDUCE);
  UOpRef ii = load(ib, i)->cast(dtypes::int64), wr = load(wb, r * D + c);
  UOpRef lifted = kernel(out, i * D + c, sum((ii + 3)->ne(r)->where(f32(0), wr), r));
  UOpRef onehot = kernel(out, i * D + c, sum(wr * ii->eq(r)->cast(dtypes::float32), r));
  for (auto& [ast, shift] : {std::pair{lifted, int64_t(3)}, std::pair{onehot, int64_t(0)}}) {
    EXPECT_EQ(reduces(ast), 0);
    auto [y, p] = run<float>(ast, B * D, {{idx.data(), {dtypes::int32, B}}, {w.data(), {dtypes::float32, V * D}}});
    EXPECT_LT(p.ops, uint64_t(64 * B * D)) << p.src;
    for (int64_t b = 0; b < B; b++) {
      int64_t k = idx[size_t(b)] + shift;
      for (int64_t j = 0; j < D; j++) ASSERT_EQ(y[size_t(b * D + j)], k >= 0 && k < V ? w[size_t(k * D + j)] : 0.f) << b << " " << j;
    }
  }
}

// sum_r [lo <= r < hi] * v == clamp(min(hi,N) - max(lo,0), 0, N) * v, with the bounds below 0 and past N
TEST(ReduceCollapse, RangeCompare) {
  static constexpr int64_t N = 50, M = 120;
  auto v = randf(size_t(M), 4);
  UOpRef out = global(0, dtypes::float32, M), vb = global(1, dtypes::float32, M);
  UOpRef i = rng(M, 0, AxisType::GLOBAL), r = rng(N, 1, AxisType::REDUCE);
  UOpRef lo = i - 30, hi = i * 2 - 70, vi = load(vb, i);
  using Count = std::function<int64_t(int64_t)>;
  std::vector<std::pair<UOpRef, Count>> cases = {
      // r <= i - 30 (the cumsum mask, a <= b as (a < b) | (a == b)) and i - 30 < r (the padded-window form)
      {sum(((r < lo) | r->eq(lo))->where(vi, f32(0)), r), Count([](int64_t k) { return std::clamp<int64_t>(k - 30 + 1, 0, N); })},
      {sum((lo < r)->where(vi, f32(0)), r), Count([](int64_t k) { return std::clamp<int64_t>(N - std::max<int64_t>(k - 30 + 1, 0), 0, N); })},
      {sum(((r < lo)->logical_not() & (r < hi))->where(vi, f32(0)), r),
       Count([](int64_t k) { return std::clamp<int64_t>(std::min<int64_t>(k * 2 - 70, N) - std::max<int64_t>(k - 30, 0), 0, N); })},
      // a sum of sums splits, the part without r multiplies by N: N*v + 10*v
      {sum(vi + (r < 10)->where(vi, f32(0)), r), Count([](int64_t) { return N + 10; })},
  };
  for (size_t t = 0; t < cases.size(); t++) {
    UOpRef ast = kernel(out, i, cases[t].first);
    EXPECT_EQ(reduces(ast), 0) << t;
    auto [y, p] = run<float>(ast, M, {{v.data(), {dtypes::float32, M}}});
    EXPECT_LT(p.ops, uint64_t(64 * M)) << t << "\n" << p.src;
    for (int64_t k = 0; k < M; k++) {
      double want = double(cases[t].second(k)) * v[size_t(k)];
      ASSERT_NEAR(y[size_t(k)], want, 1e-4 * (1 + std::abs(want))) << t << " " << k;
    }
  }
}

// tinygrad's arange through the Tensor API: the window sum of padded ones, sum_k [i+k >= n], is one loop-free kernel
TEST(ReduceCollapse, PaddedOnesWindowIsArange) {
  constexpr int64_t n = 3000, L = 2 * n;
  Tensor w = Tensor::full({n}, 1, dtypes::int32, "CPU").pad({{n, 0}}).reshape({1, L}).expand({n, L}).reshape({n * L});
  Tensor a = w.pad({{0, n}}).reshape({n, L + 1}).shrink({{0, n}, {0, n}}).sum({1});
  Normalized nz = normalize({a.uop()});
  auto sched = create_schedule(nz.sink, nz.specs);
  ASSERT_EQ(sched->kernels.size(), 1u);
  EXPECT_EQ(reduces(sched->kernels[0]->ast), 0);
  std::vector<int32_t> got(static_cast<size_t>(n));
  a.to_data(got.data(), got.size() * sizeof(int32_t));
  for (int64_t k = 0; k < n; k++) ASSERT_EQ(got[size_t(k)], k);
}

// What must not collapse still computes: a sum whose value reads x[r] under r < i (cumsum), an index compared with r*r
TEST(ReduceCollapse, NotCollapsible) {
  constexpr int64_t N = 64;
  auto v = randf(size_t(N), 5);
  std::vector<int32_t> sq(N);
  for (int64_t k = 0; k < N; k++) sq[size_t(k)] = int32_t(k % 9 == 0 ? k : k + 1);
  UOpRef out = global(0, dtypes::float32, N), vb = global(1, dtypes::float32, N), sb = global(2, dtypes::int32, N);
  UOpRef i = rng(N, 0, AxisType::GLOBAL), r = rng(N, 1, AxisType::REDUCE);
  UOpRef cumsum = kernel(out, i, sum((r < i + 1)->where(load(vb, r), f32(0)), r));
  UOpRef square = kernel(out, i, sum(load(sb, i)->cast(dtypes::int64)->eq(r * r)->where(load(vb, r), f32(0)), r));
  EXPECT_EQ(reduces(cumsum), 1);
  EXPECT_EQ(reduces(square), 1);
  auto [c, pc] = run<float>(cumsum, N, {{v.data(), {dtypes::float32, N}}});
  auto [s, ps] = run<float>(square, N, {{v.data(), {dtypes::float32, N}}, {sq.data(), {dtypes::int32, N}}});
  double acc = 0;
  for (int64_t k = 0; k < N; k++) {
    acc += v[size_t(k)];
    ASSERT_NEAR(c[size_t(k)], acc, 1e-4) << k;
    int64_t root = -1;
    for (int64_t q = 0; q < N; q++) root = q * q == sq[size_t(k)] ? q : root;
    ASSERT_EQ(s[size_t(k)], root >= 0 ? v[size_t(root)] : 0.f) << k;
  }
}

// The kernels realizing `roots`, compiled with the heuristics, and the sizes of the buffers they write (roots included)
struct Plan {
  std::vector<ProgramSpec> progs;
  std::vector<int64_t> written;
};
Plan plan(const std::vector<Tensor>& roots) {
  std::vector<UOpRef> r;
  for (auto& t : roots) r.push_back(t.uop());
  Normalized nz = normalize(r);
  auto sched = create_schedule(nz.sink, nz.specs);
  Plan out;
  for (auto& k : sched->kernels) out.progs.push_back(get_program(k->ast, k->name, get_device("CPU").renderer()));
  for (size_t i = size_t(sched->n_inputs); i < sched->slots.size(); i++) out.written.push_back(sched->slots[i].second);
  return out;
}
Tensor gather(const Tensor& x, const Tensor& idx) {
  Index i;
  i.kind = Index::TensorIdx, i.tensor = std::make_shared<Tensor>(idx);
  return x.getitem({i});
}

// X[idx] and Y[idx] through Tensor::getitem (a sum over the rows of where(idx == arange(N), X, 0)): the arange is
// index math inside the gather's kernel, and the gather a load of X[idx[i], j]; nothing loops over the N rows, and no
// buffer of N partial results appears. The gradient w.r.t. X (a scatter-add, which loops over the indices) is exact.
TEST(ReduceCollapse, TensorGatherOfLargeTable) {
  constexpr int64_t N = 60000, D = 24, B = 128;
  auto x = randf(size_t(N * D), 6), w = randf(size_t(B * D), 7);
  std::vector<uint8_t> y(N);
  for (int64_t k = 0; k < N; k++) y[size_t(k)] = uint8_t(k * 7 % 251);
  std::vector<int32_t> idx(B);
  std::mt19937_64 g(8);
  for (auto& i : idx) i = int32_t(std::uniform_int_distribution<int64_t>(-N, N - 1)(g));
  idx[0] = 0, idx[1] = N - 1, idx[2] = -1, idx[3] = -N, idx[4] = idx[5] = 17;  // the ends, from the end, a repeat
  auto row = [&](int64_t b) { return idx[size_t(b)] < 0 ? idx[size_t(b)] + N : idx[size_t(b)]; };
  Tensor X = Tensor::from_data(x.data(), x.size() * sizeof(float), dtypes::float32, {N, D}, "CPU");
  Tensor Y = Tensor::from_data(y.data(), y.size(), dtypes::uint8, {N}, "CPU");
  Tensor I = Tensor::from_data(idx.data(), idx.size() * sizeof(int32_t), dtypes::int32, {B}, "CPU");
  Tensor xb = gather(X, I), yb = gather(Y, I);
  for (auto& [t, n] : {std::pair{xb, B * D}, std::pair{yb, B}}) {
    Plan p = plan({t});
    ASSERT_EQ(p.progs.size(), 1u);
    EXPECT_LT(p.progs[0].ops, uint64_t(64 * n)) << "a loop over the indexed dim is left:\n" << p.progs[0].src;
    EXPECT_EQ(p.progs[0].name.find("60000"), std::string::npos) << p.progs[0].name;
    EXPECT_EQ(p.written, std::vector<int64_t>{n});
  }
  std::vector<float> gx(size_t(B * D));
  std::vector<uint8_t> gy{std::vector<uint8_t>(size_t(B))};
  xb.to_data(gx.data(), gx.size() * sizeof(float));
  yb.to_data(gy.data(), gy.size());
  for (int64_t b = 0; b < B; b++) {
    ASSERT_EQ(gy[size_t(b)], y[size_t(row(b))]) << b;
    for (int64_t j = 0; j < D; j++) ASSERT_EQ(gx[size_t(b * D + j)], x[size_t(row(b) * D + j)]) << b << " " << j;
  }
  // d sum(X[idx] * W) / dX: row r gets the sum of W's rows b with idx[b] == r
  Tensor W = Tensor::from_data(w.data(), w.size() * sizeof(float), dtypes::float32, {B, D}, "CPU");
  Tensor dX = gather(X, I).mul(W).sum().gradient({X})[0];
  for (auto& k : plan({dX}).written) EXPECT_LE(k, N * D) << "a buffer larger than X";
  std::vector<float> got(size_t(N * D)), want(size_t(N * D), 0.f);
  dX.to_data(got.data(), got.size() * sizeof(float));
  for (int64_t b = 0; b < B; b++)
    for (int64_t j = 0; j < D; j++) want[size_t(row(b) * D + j)] += w[size_t(b * D + j)];
  for (size_t k = 0; k < got.size(); k++) ASSERT_NEAR(got[k], want[k], 1e-5) << k / D << " " << k % D;
}

// Tensor::gather (torch's gather along dim 0: a one_hot mask, int32 cast to bool, picking rows) collapses the same
// way, for a float table and for the uint8 blocks of a quantized embedding, whose bytes are read by several loads each
TEST(ReduceCollapse, GatherAlongDimOfLargeTable) {
  constexpr int64_t N = 32000, D = 18, B = 3;
  std::vector<uint8_t> q(size_t(N * D));
  for (size_t k = 0; k < q.size(); k++) q[k] = uint8_t(k * 13 % 253);
  std::vector<int32_t> idx{5, N - 1, 0};
  Tensor Q = Tensor::from_data(q.data(), q.size(), dtypes::uint8, {N, D}, "CPU");
  Tensor I = Tensor::from_data(idx.data(), idx.size() * sizeof(int32_t), dtypes::int32, {B, 1}, "CPU");
  Tensor rows = Q.gather(0, I.expand({B, D}));
  Tensor lo = rows.shrink({{0, B}, {0, 1}}).cast(dtypes::uint16), hi = rows.shrink({{0, B}, {1, 2}}).cast(dtypes::uint16);
  Tensor both = lo.bitwise_or(hi.lshift(8)).cast(dtypes::float32).add(rows.shrink({{0, B}, {2, D}}).cast(dtypes::float32));
  for (auto& t : {rows, both}) {  // `both` reads the gathered bytes at three offsets: the gather may be its own kernel
    Plan p = plan({t});
    ASSERT_LE(p.progs.size(), 2u);
    for (auto& k : p.progs) {
      EXPECT_EQ(k.name.find("32000"), std::string::npos) << k.name;
      EXPECT_LT(k.ops, uint64_t(64 * B * D)) << "a loop over the indexed dim is left:\n" << k.src;
    }
    for (auto n : p.written) EXPECT_LE(n, B * D);
  }
  std::vector<float> got(size_t(B * (D - 2)));
  both.to_data(got.data(), got.size() * sizeof(float));
  for (int64_t b = 0; b < B; b++) {
    const uint8_t* r = &q[size_t(idx[size_t(b)] * D)];
    for (int64_t j = 0; j < D - 2; j++) ASSERT_EQ(got[size_t(b * (D - 2) + j)], float(r[0] | r[1] << 8) + float(r[2 + j])) << b << " " << j;
  }
}

}  // namespace
}  // namespace tg
