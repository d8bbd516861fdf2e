// Regression tests for input that used to crash the process or give a silent wrong answer. Each test is named after
// the defect it pins: integer division by zero, deep graphs on small stacks, 0-d transpose/flip, wrapping pair counts,
// shapes whose size overflows, NaN into integer tensors, many inputs in one kernel, huge realize_many calls.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "capi_handles.h"
#include "tinygrad.h"
#include "runtime/device.h"
#include "uop/symbolic.h"
#include "uop/uop.h"

namespace {

struct H {  // an owned tensor handle
  tg_tensor* p = nullptr;
  H(tg_tensor* t = nullptr) : p(t) {}
  ~H() { tg_tensor_release(p); }
  H(const H&) = delete;
  H& operator=(const H&) = delete;
  H(H&& o) noexcept : p(o.p) { o.p = nullptr; }
  H& operator=(H&& o) noexcept {
    std::swap(p, o.p);
    return *this;
  }
  operator tg_tensor*() const { return p; }
};
using Shape = std::vector<int64_t>;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

template <class T>
H from(const std::vector<T>& v, tg_dtype dt, Shape s) {
  return H(tg_tensor_from_data(v.data(), v.size() * sizeof(T), dt, s.data(), s.size(), nullptr));
}
template <class T>
std::vector<T> read(tg_tensor* t) {
  std::vector<T> out(size_t(std::max<int64_t>(tg_tensor_numel(t), 0)));
  EXPECT_EQ(tg_tensor_to_data(t, out.data(), out.size() * sizeof(T)), TG_OK) << tg_last_error_message();
  return out;
}
// NULL with `code`, and a message that mentions `needle`
void expect_error(tg_tensor* t, tg_status code, const std::string& needle) {
  EXPECT_EQ(t, nullptr);
  tg_tensor_release(t);
  EXPECT_EQ(tg_last_error(), code) << tg_status_name(tg_last_error()) << ": " << tg_last_error_message();
  EXPECT_NE(std::string(tg_last_error_message()).find(needle), std::string::npos) << tg_last_error_message();
}

// ---- integer division: x//0 == 0, x%0 == x, MIN//-1 == MIN (wraps), on every integer dtype -------------------------

template <class T>
T ref_div(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return T(0 - static_cast<std::make_unsigned_t<T>>(a));  // wraps at MIN
  return T(a / b);
}
template <class T>
void check_idiv(tg_dtype dt) {
  using L = std::numeric_limits<T>;
  std::vector<T> a{7, T(-7), 0, L::min(), L::max(), 5, L::min(), 9}, b{0, 0, 0, T(-1), T(-1), 2, 0, 3};
  H x = from(a, dt, {8}), y = from(b, dt, {8});
  H q(tg_tensor_idiv(x, y));
  ASSERT_TRUE(q.p) << tg_last_error_message();
  std::vector<T> got = read<T>(q);
  for (size_t i = 0; i < a.size(); i++) EXPECT_EQ(got[i], ref_div(a[i], b[i])) << tg_dtype_name(dt) << " " << +a[i] << " // " << +b[i];
  // constant divisors take another path (folded or rendered without a guard): 0 and -1 must still be defined
  for (double c : {0.0, -1.0, 3.0}) {
    int64_t n = 8;
    H k(tg_tensor_full(&n, 1, c, dt, nullptr));
    H qc(tg_tensor_idiv(x, k));
    ASSERT_TRUE(qc.p) << tg_last_error_message();
    std::vector<T> gc = read<T>(qc);
    for (size_t i = 0; i < a.size(); i++) EXPECT_EQ(gc[i], ref_div(a[i], T(int64_t(c)))) << tg_dtype_name(dt) << " " << +a[i] << " // const " << c;
  }
}
TEST(Hardening, IntegerDivisionByZeroIsDefined) {
  check_idiv<int8_t>(TG_INT8);
  check_idiv<uint8_t>(TG_UINT8);
  check_idiv<int16_t>(TG_INT16);
  check_idiv<uint16_t>(TG_UINT16);
  check_idiv<int32_t>(TG_INT32);
  check_idiv<uint32_t>(TG_UINT32);
  check_idiv<int64_t>(TG_INT64);
  check_idiv<uint64_t>(TG_UINT64);
}
TEST(Hardening, ConstantFoldedDivModByZeroMatchesTheKernels) {
  using namespace tg;
  auto c = [](int64_t v) { return UOp::const_int(dtypes::int32, v); };
  EXPECT_EQ((c(7) / c(0))->simplify(), c(0));
  EXPECT_EQ((c(7) % c(0))->simplify(), c(7));
  EXPECT_EQ((c(INT32_MIN) / c(-1))->simplify(), c(INT32_MIN));
  EXPECT_EQ((c(INT32_MIN) % c(-1))->simplify(), c(0));
  auto x = UOp::variable("x", -10, 10, dtypes::int32);
  EXPECT_EQ((x / c(0))->simplify(), c(0));
  EXPECT_EQ((x % c(0))->simplify(), x);
  EXPECT_EQ(exec_alu(Ops::MOD, dtypes::int32, {7, 0}), 7);
  EXPECT_EQ(exec_alu(Ops::IDIV, dtypes::int32, {7, 0}), 0);
}

// ---- deep graphs: every walk over a user graph keeps its own stack ----------------------------------------------------

// c = c + 1, n times, never realized in between; realized once at the end
double deep_add_chain(int64_t n) {
  float zero = 0;
  int64_t one = 1;
  H c(tg_tensor_from_data(&zero, 4, TG_FLOAT32, &one, 1, nullptr));
  for (int64_t i = 0; i < n; i++) c = H(tg_tensor_add_scalar(c, 1));
  float out = -1;
  EXPECT_EQ(tg_tensor_to_data(c, &out, 4), TG_OK) << tg_last_error_message();
  return out;
}
// A kernel's packed panel (PACK) lives on the stack of the thread running it: an 8192 x 32 panel of B is the 1 MB
// limit, four times this thread's whole stack. A caller with a small stack leaves the launch to the workers.
TEST(Hardening, PackedMatmulOnASmallStackThread) {
  const int64_t m = 16, k = 8192, n = 64;
  std::vector<float> a(size_t(m * k)), b(size_t(k * n));
  for (size_t i = 0; i < a.size(); i++) a[i] = float(int(i % 7) - 3) * 0.25f;
  for (size_t i = 0; i < b.size(); i++) b[i] = float(int(i % 5) - 2) * 0.5f;
  on_small_stack([&] {
    int64_t as[2] = {m, k}, bs[2] = {k, n};
    H ta(tg_tensor_from_data(a.data(), a.size() * 4, TG_FLOAT32, as, 2, nullptr));
    H tb(tg_tensor_from_data(b.data(), b.size() * 4, TG_FLOAT32, bs, 2, nullptr));
    std::vector<float> got = read<float>(H(tg_tensor_matmul(ta, tb)));
    ASSERT_EQ(got.size(), size_t(m * n));
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double want = 0;  // small multiples of 1/8: every partial sum is exact in float
        for (int64_t x = 0; x < k; x++) want += double(a[size_t(i * k + x)]) * b[size_t(x * n + j)];
        ASSERT_EQ(got[size_t(i * n + j)], float(want)) << i << "," << j;
      }
  });
}
TEST(Hardening, DeepLazyChain1e5MainThread) { EXPECT_EQ(deep_add_chain(100000), 100000.0f); }
TEST(Hardening, DeepLazyChain1e6MainThread) { EXPECT_EQ(deep_add_chain(1000000), 1000000.0f); }
TEST(Hardening, DeepLazyChain1e5SmallStackThread) {
  on_small_stack([] { EXPECT_EQ(deep_add_chain(100000), 100000.0f); });
}
TEST(Hardening, DeepLazyChain1e6SmallStackThread) {
  on_small_stack([] { EXPECT_EQ(deep_add_chain(1000000), 1000000.0f); });
}
// a chain that can't fold away: every op stays in the kernel (split into several kernels as it grows)
TEST(Hardening, DeepUnfoldableChainSmallStackThread) {
  on_small_stack([] {
    std::vector<float> v{0.5f, -1.5f, 2.0f, 3.25f};
    int64_t n4 = 4;
    H c(tg_tensor_from_data(v.data(), 16, TG_FLOAT32, &n4, 1, nullptr)), x(tg_tensor_from_data(v.data(), 16, TG_FLOAT32, &n4, 1, nullptr));
    std::vector<double> ref(v.begin(), v.end());
    const int n = 20000;
    for (int i = 0; i < n; i++) {  // c = max(c, x) * 0.5 + x: keeps values bounded, nothing to fold
      c = H(tg_tensor_maximum(c, x));
      c = H(tg_tensor_mul_scalar(c, 0.5));
      c = H(tg_tensor_add(c, x));
      for (size_t j = 0; j < 4; j++) ref[j] = float(float(std::max(float(ref[j]), v[j]) * 0.5f) + v[j]);
    }
    std::vector<float> got = read<float>(c);
    for (size_t j = 0; j < 4; j++) EXPECT_FLOAT_EQ(got[j], float(ref[j]));
  });
}
TEST(Hardening, DeepMovementChainSmallStackThread) {
  on_small_stack([] {
    std::vector<float> v(12);
    for (size_t i = 0; i < 12; i++) v[i] = float(i);
    Shape s34{3, 4}, s12{12}, s43{4, 3};
    int64_t order[2] = {1, 0}, ax0 = 0;
    H c = from(v, TG_FLOAT32, s34);
    for (int i = 0; i < 20000; i++) {  // 80k movement ops: reshape, permute, flip twice, reshape back
      c = H(tg_tensor_reshape(c, s12.data(), 1));
      c = H(tg_tensor_reshape(c, s43.data(), 2));
      c = H(tg_tensor_permute(c, order, 2));
      c = H(tg_tensor_flip(c, &ax0, 1));
      c = H(tg_tensor_flip(c, &ax0, 1));
    }
    ASSERT_TRUE(c.p) << tg_last_error_message();
    std::vector<float> got = read<float>(c);
    // one round: (3,4) -> (4,3) by reshape, then transposed back to (3,4): out[i][j] = in_flat[j*3+i]; the flips cancel
    std::vector<float> ref2 = v;
    for (int r = 0; r < 20000; r++) {
      std::vector<float> nxt(12);
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) nxt[size_t(i * 4 + j)] = ref2[size_t(j * 3 + i)];
      ref2 = nxt;
    }
    EXPECT_EQ(got, ref2);
  });
}

// symbolic expressions are user graphs too: a 1e5-deep chain simplifies, evaluates and reports its bounds
TEST(Hardening, DeepSymbolicExpressionSmallStackThread) {
  on_small_stack([] {
    tg_expr* x = tg_expr_variable("x", 0, 10);
    tg_expr* e = tg_expr_retain(x);
    for (int i = 0; i < 100000; i++) {
      tg_expr* n = tg_expr_binary(i % 2 ? TG_ADD : TG_SUB, e, x);  // x - x + x - x ...: folds to 0 or x
      tg_expr_release(e);
      e = n;
    }
    ASSERT_TRUE(e) << tg_last_error_message();
    tg_expr* s = tg_expr_simplify(e);
    ASSERT_TRUE(s) << tg_last_error_message();
    char buf[64];
    EXPECT_GE(tg_expr_render(s, buf, sizeof buf), 0) << tg_last_error_message();
    EXPECT_STREQ(buf, "x");
    const char* names[1] = {"x"};
    int64_t v = 7, out = -1, lo = -1, hi = -1;
    EXPECT_EQ(tg_expr_eval(e, names, &v, 1, &out), TG_OK) << tg_last_error_message();
    EXPECT_EQ(out, 7);
    EXPECT_EQ(tg_expr_bounds(e, &lo, &hi), TG_OK) << tg_last_error_message();
    tg_expr_release(s), tg_expr_release(e), tg_expr_release(x);
  });
}

// ---- 0-d tensors and argument counts --------------------------------------------------------------------------------

TEST(Hardening, ScalarTransposeAndFlipAreIdentity) {
  float v = 3;
  H s(tg_tensor_from_data(&v, 4, TG_FLOAT32, nullptr, 0, nullptr));
  H t(tg_tensor_transpose(s, 0, 0)), t2(tg_tensor_transpose(s, -1, 0));
  int64_t ax = 0, axm = -1;
  H f(tg_tensor_flip(s, &ax, 1)), f2(tg_tensor_flip(s, &axm, 1));
  for (tg_tensor* r : {t.p, t2.p, f.p, f2.p}) {
    ASSERT_TRUE(r) << tg_last_error_message();
    EXPECT_EQ(tg_tensor_ndim(r), 0);
    EXPECT_EQ(read<float>(r), std::vector<float>{3});
  }
  expect_error(tg_tensor_transpose(s, 1, 0), TG_ERROR_SHAPE, "axis 1");
  int64_t bad = 1;
  expect_error(tg_tensor_flip(s, &bad, 1), TG_ERROR_SHAPE, "axis 1");
}
TEST(Hardening, PadShrinkHugePairCountsAreRejected) {
  std::vector<float> v(4, 1);
  H x = from(v, TG_FLOAT32, {2, 2});
  int64_t pairs[4] = {0, 0, 0, 0};
  for (size_t n : {size_t(1) << 63, ~size_t(0), (~size_t(0)) / 2 + 1, size_t(65)}) {
    expect_error(tg_tensor_pad(x, pairs, n, 0), TG_ERROR_INVALID_ARGUMENT, "pairs");
    expect_error(tg_tensor_shrink(x, pairs, n), TG_ERROR_INVALID_ARGUMENT, "pairs");
  }
}

// ---- sizes that don't fit: every function that makes a shape names it ----------------------------------------------

TEST(Hardening, OverflowingShapesAreRejected) {
  int64_t big1[1] = {int64_t(1) << 62}, big2[2] = {int64_t(1) << 40, int64_t(1) << 40}, huge2[2] = {kMax, kMax};
  expect_error(tg_tensor_zeros(big1, 1, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "(4611686018427387904,)");  // 2^62 * 4 bytes
  expect_error(tg_tensor_zeros(big2, 2, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "(1099511627776,1099511627776)");
  expect_error(tg_tensor_ones(big2, 2, TG_INT8, nullptr), TG_ERROR_SHAPE, "ones");
  expect_error(tg_tensor_full(huge2, 2, 1.0, TG_INT8, nullptr), TG_ERROR_SHAPE, "full");
  expect_error(tg_tensor_empty(big1, 1, TG_FLOAT64, nullptr), TG_ERROR_SHAPE, "empty");
  float one = 1;
  expect_error(tg_tensor_from_data(&one, 4, TG_FLOAT32, huge2, 2, nullptr), TG_ERROR_SHAPE, "from_data");
  expect_error(tg_tensor_arange(0, 1e19, 1, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "arange");
  expect_error(tg_tensor_arange(0, double(int64_t(1) << 62), 1, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "arange");
  expect_error(tg_tensor_eye(int64_t(1) << 32, TG_FLOAT32, nullptr), TG_ERROR_SHAPE, "eye");

  int64_t s1 = 1;
  H x(tg_tensor_from_data(&one, 4, TG_FLOAT32, &s1, 1, nullptr));
  expect_error(tg_tensor_reshape(x, huge2, 2), TG_ERROR_SHAPE, "reshape");  // (2^63-1)^2 wraps to 1 in int64
  int64_t wrap3[3] = {int64_t(1) << 32, int64_t(1) << 32, 0};
  H z(tg_tensor_reshape(x, wrap3, 3));  // 0 elements can't take a 1-element tensor, and must not overflow on the way
  EXPECT_EQ(z.p, nullptr);
  int64_t s11[2] = {1, 1};
  H x11(tg_tensor_reshape(x, s11, 2));
  expect_error(tg_tensor_expand(x11, huge2, 2), TG_ERROR_SHAPE, "expand");
  expect_error(tg_tensor_expand(x11, big2, 2), TG_ERROR_SHAPE, "expand");
  int64_t pads[2] = {kMax, 1};
  expect_error(tg_tensor_pad(x, pads, 1, 0), TG_ERROR_SHAPE, "pad");
  int64_t pads2[2] = {int64_t(1) << 62, 0};
  expect_error(tg_tensor_pad(x, pads2, 1, 0), TG_ERROR_SHAPE, "pad");  // 2^62+1 float32 elements: too many bytes
}
// a shape that fits but can't be allocated fails with an error at realize, never a heap overflow
TEST(Hardening, UnallocatableTensorFailsCleanly) {
  int64_t n = int64_t(1) << 58;  // 2^60 bytes of float32
  H z(tg_tensor_zeros(&n, 1, TG_FLOAT32, nullptr));
  ASSERT_TRUE(z.p) << tg_last_error_message();
  H y(tg_tensor_add_scalar(z, 1));
  ASSERT_TRUE(y.p) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_realize(y), TG_ERROR_OUT_OF_MEMORY) << tg_last_error_message();
}
TEST(Hardening, NonFiniteFillOfIntegerTensorIsAnError) {
  int64_t n = 3;
  for (tg_dtype dt : {TG_INT8, TG_INT32, TG_UINT32, TG_INT64, TG_UINT64})
    for (double v : {std::nan(""), double(INFINITY), -double(INFINITY)}) expect_error(tg_tensor_full(&n, 1, v, dt, nullptr), TG_ERROR_INVALID_ARGUMENT, "can't be stored");
  H b(tg_tensor_full(&n, 1, std::nan(""), TG_BOOL, nullptr));  // bool(nan) is true, as in Python
  ASSERT_TRUE(b.p) << tg_last_error_message();
  EXPECT_EQ(read<uint8_t>(b), (std::vector<uint8_t>{1, 1, 1}));
  H f(tg_tensor_full(&n, 1, std::nan(""), TG_FLOAT32, nullptr));
  ASSERT_TRUE(f.p);
  for (float x : read<float>(f)) EXPECT_TRUE(std::isnan(x));
}

// freed buffers are kept for reuse only up to TG_ALLOC_CACHE_MB (256 by default); the rest goes back to the system
TEST(Hardening, AllocatorCacheIsCapped) {
  {
    std::vector<H> ts;
    int64_t n = int64_t(40) << 20;  // 160 MB of float32 each, realized
    for (int i = 0; i < 3; i++) {
      H z(tg_tensor_zeros(&n, 1, TG_FLOAT32, nullptr));
      ts.emplace_back(tg_tensor_add_scalar(z, double(i)));
      ASSERT_EQ(tg_tensor_realize(ts.back()), TG_OK) << tg_last_error_message();
    }
  }
  EXPECT_LE(tg::get_device("CPU").allocator().cached_bytes(), size_t(256) << 20);
}

// over the limit the least recently freed memory goes back to the system, not the newest: a loop that frees and allocates
// the same sizes each step keeps reusing them after other work has filled the cache
TEST(Hardening, AllocatorCacheEvictsTheOldest) {
  struct Counting : tg::Allocator {
    int raw_allocs = 0, raw_frees = 0;
    std::vector<void*> freed;
    size_t cache_limit() const override { return 1000; }
    void* raw_alloc(size_t n) override { return raw_allocs++, std::malloc(n); }
    void raw_free(void* p, size_t) override { raw_frees++, freed.push_back(p), std::free(p); }
    ~Counting() override { clear_cache(); }
  } a;
  void *p1 = a.alloc(400), *p2 = a.alloc(300), *p3 = a.alloc(400);
  a.free(p1, 400), a.free(p2, 300), a.free(p3, 400);  // 1100 > 1000: p1, the oldest, goes
  EXPECT_EQ(a.freed, std::vector<void*>{p1});
  EXPECT_EQ(a.cached_bytes(), 700u);
  EXPECT_EQ(a.alloc(400), p3);  // the most recently freed of a size comes back first
  EXPECT_EQ(a.alloc(300), p2);
  EXPECT_EQ(a.raw_allocs, 3);
  void* big = a.alloc(2000);
  a.free(big, 2000);  // larger than the whole cache: straight back
  EXPECT_EQ(a.freed.back(), big);
  EXPECT_EQ(a.cached_bytes(), 0u);
  a.free(p2, 300), a.free(p3, 400);
  EXPECT_EQ(a.cached_bytes(), 700u);
}

// from 2 MiB the host allocator maps each block on its own, 2 MiB-aligned (huge pages advised): every byte of a block
// of an odd size is writable, and a freed block goes back to the system or to the cache whole
TEST(Hardening, HostBlocksFromTwoMiBAreAlignedAndWhole) {
  tg::Allocator& a = tg::get_device("CPU").allocator();
  size_t live = a.live_bytes();
  for (size_t n : {(size_t(2) << 20) + 12345, (size_t(6) << 20) - 1, size_t(300) << 20}) {
    auto* p = static_cast<unsigned char*>(a.alloc(n));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20), 0u) << n;
    std::memset(p, 0xab, n);
    EXPECT_EQ(p[0] + p[n - 1], 2 * 0xab);
    a.free(p, n);
  }
  EXPECT_EQ(a.live_bytes(), live);
}

// simplification removed every load of an input (x*0 for ints): the kernel must still get exactly the buffers it reads
TEST(Hardening, KernelWhoseInputFoldsAwayRuns) {
  std::vector<int32_t> a{1, 2, 3}, b{10, 20, 30};
  H x = from(a, TG_INT32, {3}), y = from(b, TG_INT32, {3});
  H z(tg_tensor_mul_scalar(x, 0)), w(tg_tensor_add(z, y)), v(tg_tensor_add(w, x));
  ASSERT_TRUE(w.p && v.p) << tg_last_error_message();
  EXPECT_EQ(read<int32_t>(w), b);
  EXPECT_EQ(read<int32_t>(v), (std::vector<int32_t>{11, 22, 33}));
}

// ---- wide graphs ----------------------------------------------------------------------------------------------------

TEST(Hardening, SumOfManySeparateTensors) {
  const int n = 40000;
  int64_t two = 2;
  std::vector<H> xs;
  for (int i = 0; i < n; i++) {
    float v[2] = {float(i % 7), 1};
    xs.emplace_back(tg_tensor_from_data(v, 8, TG_FLOAT32, &two, 1, nullptr));
  }
  // a balanced tree of adds: one kernel reading every input
  std::vector<H> level;
  for (auto& x : xs) level.emplace_back(tg_tensor_retain(x));
  while (level.size() > 1) {
    std::vector<H> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) next.emplace_back(tg_tensor_add(level[i], level[i + 1]));
    if (level.size() % 2) next.push_back(std::move(level.back()));
    level = std::move(next);
  }
  double want = 0;
  for (int i = 0; i < n; i++) want += i % 7;
  std::vector<float> got = read<float>(level[0]);
  EXPECT_EQ(got, (std::vector<float>{float(want), float(n)}));
}
// 1e5 distinct roots (each over its own buffer) in one realize: one schedule of 1e5 kernels sharing one compiled program
TEST(Hardening, RealizeManyHundredThousandTensors) {
  const int n = 100000;
  int64_t one = 1;
  std::vector<H> ts;
  std::vector<tg_tensor*> raw;
  for (int i = 0; i < n; i++) {
    float v = float(i);
    H x(tg_tensor_from_data(&v, 4, TG_FLOAT32, &one, 1, nullptr));
    ts.emplace_back(tg_tensor_mul_scalar(x, 2.0));
    raw.push_back(ts.back());
  }
  ASSERT_EQ(tg_tensor_realize_many(raw.data(), raw.size()), TG_OK) << tg_last_error_message();
  for (int i = 0; i < n; i += 997) EXPECT_EQ(read<float>(ts[size_t(i)]), std::vector<float>{2.0f * float(i)});
}

}  // namespace
