// Byte dot products, the integer form of a quantized matmul (what the LLM decode kernels compute): uint8 codes times
// int8 activations summed in groups of 4 into int32, then scaled and summed in float. Checked exactly against integer
// references on both CPU renderers (the sums stay below 2^24, so the float sums are exact in any order), and the LLVM
// kernel is checked to use VNNI's vpdpbusd exactly where the host has it (DOT4), reading each block's bytes as one
// vector although each byte serves two nibbles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "engine/realize.h"
#include "renderer/renderer.h"
#include "tensor/tensor.h"

namespace {

using tg::Tensor;
namespace dt = tg::dtypes;

constexpr int64_t kRows = 48, kBlocks = 64;  // (rows, blocks, 8 groups, 4 bytes)

template <class T>
std::vector<T> bytes(size_t n, uint64_t seed, int lo, int hi) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = T(u(g));
  return v;
}
template <class T>
Tensor tensor(const std::vector<T>& v, tg::Shape s, tg::DType d, const char* dev) {
  return Tensor::from_data(v.data(), v.size(), d, s, dev).realize();
}
// the LLVM sources of the kernels that compute `t`
std::string sources(const Tensor& t) {
  std::string s;
  for (auto& e : tg::lower_realize({t.uop()}, "CPU").items) s += e.prg->src;
  return s;
}
bool host_has_dot4() { return tg::cpu_target("CPU", 1).dot4_bytes > 0; }
bool host_has_dot2() { return tg::cpu_target("CPU", 1).dot2_bytes > 0; }

// codes (rows, blocks, 32) in [0, 15] and x (blocks, 32) int8: the per-group int32 sums and each row's float total
struct Case {
  std::vector<uint8_t> codes = bytes<uint8_t>(kRows * kBlocks * 32, 1, 0, 15);
  std::vector<int8_t> x = bytes<int8_t>(kBlocks * 32, 2, -128, 127);
  std::vector<int32_t> groups() const {
    std::vector<int32_t> g(size_t(kRows * kBlocks * 8));
    for (int64_t r = 0; r < kRows; r++)
      for (int64_t b = 0; b < kBlocks * 8; b++)
        for (int64_t k = 0; k < 4; k++) g[size_t(r * kBlocks * 8 + b)] += codes[size_t((r * kBlocks * 8 + b) * 4 + k)] * x[size_t(b * 4 + k)];
    return g;
  }
  std::vector<float> rows() const {
    auto g = groups();
    std::vector<float> out(kRows);
    for (int64_t r = 0; r < kRows; r++)
      for (int64_t b = 0; b < kBlocks * 8; b++) out[size_t(r)] += float(g[size_t(r * kBlocks * 8 + b)]) * 0.5f;
    return out;
  }
};

Tensor dot(const Tensor& codes, const Tensor& x) {
  return codes.reshape({kRows, kBlocks, 8, 4}).cast(dt::int32).mul(x.reshape({1, kBlocks, 8, 4}).cast(dt::int32)).sum({-1});
}
Tensor scaled(const Tensor& groups) { return groups.cast(dt::float32).mul(Tensor::full({1}, 0.5, dt::float32, groups.device())).sum({-1, -2}); }

TEST(QuantDot, GroupSumsAndScaledRowsAreExactOnBothRenderers) {
  Case c;
  auto want_g = c.groups();
  auto want_r = c.rows();
  for (const char* dev : {"CPU", "CPU:CLANG"}) {
    SCOPED_TRACE(dev);
    Tensor codes = tensor(c.codes, {kRows, kBlocks, 32}, dt::uint8, dev), x = tensor(c.x, {kBlocks, 32}, dt::int8, dev);
    std::vector<int32_t> g(want_g.size());
    dot(codes, x).to_data(g.data(), g.size() * 4);
    EXPECT_EQ(g, want_g);
    std::vector<float> r(kRows);
    scaled(dot(codes, x)).to_data(r.data(), r.size() * 4);
    EXPECT_EQ(r, want_r);
  }
}

TEST(QuantDot, UsesVnniWhereTheHostHasIt) {
  Case c;
  Tensor codes = tensor(c.codes, {kRows, kBlocks, 32}, dt::uint8, "CPU"), x = tensor(c.x, {kBlocks, 32}, dt::int8, "CPU");
  std::string src = sources(scaled(dot(codes, x)));
  EXPECT_EQ(src.find("vpdpbusd") != std::string::npos, host_has_dot4()) << src;
  // uint8 by uint8 has no such instruction: plain integer multiply-adds, the same sums
  Tensor ux = tensor(bytes<uint8_t>(kBlocks * 32, 3, 0, 255), {kBlocks, 32}, dt::uint8, "CPU");
  EXPECT_EQ(sources(scaled(dot(codes, ux))).find("vpdpbusd"), std::string::npos);
}

// Q4_0's nibbles: each byte of a block is two elements (low nibble first, then high), picked by an index-valued
// condition between the byte masked and the byte shifted; the kernel loads the 16 bytes once, as a vector
TEST(QuantDot, NibblesLoadTheirBytesOnceAsAVector) {
  auto packed = bytes<uint8_t>(kRows * kBlocks * 16, 4, 0, 255);
  auto xv = bytes<int8_t>(kBlocks * 32, 5, -128, 127);
  Tensor b = tensor(packed, {kRows, kBlocks, 1, 16}, dt::uint8, "CPU"), x = tensor(xv, {kBlocks, 32}, dt::int8, "CPU");
  Tensor hi = Tensor::arange(0, 2, 1, dt::int32, "CPU").reshape({1, 1, 2, 1}).eq(Tensor::full({1, 1, 2, 1}, 1, dt::int32, "CPU"));
  Tensor codes = hi.where(b.rshift(b.scalar_like(4)), b.bitwise_and(b.scalar_like(15))).reshape({kRows, kBlocks, 32});
  Tensor y = scaled(dot(codes, x));
  std::string src = sources(y);
  EXPECT_NE(src.find("load <16 x i8>"), std::string::npos) << src;
  EXPECT_EQ(src.find("load i8,"), std::string::npos) << src;
  std::vector<float> got(kRows), want(kRows);
  y.to_data(got.data(), got.size() * 4);
  for (int64_t r = 0; r < kRows; r++)
    for (int64_t bl = 0; bl < kBlocks; bl++)
      for (int64_t e = 0; e < 32; e++) {
        uint8_t byte = packed[size_t((r * kBlocks + bl) * 16 + e % 16)];
        want[size_t(r)] += float((e < 16 ? byte & 15 : byte >> 4) * xv[size_t(bl * 32 + e)]) * 0.5f;
      }
  EXPECT_EQ(got, want);
}

// A row short enough for the heuristics to unroll its reduce whole (8 blocks of 32, as a small model's Q8_0 GEMV):
// the groups of 4 bytes still take DOT4, and the row's 64 float lanes are added as a tree of vector adds, not a chain
// of 64 scalar multiply-adds (a latency chain that made such a GEMV 3x slower than its loads)
TEST(QuantDot, WholeUnrolledRowIsSummedAsATree) {
  const int64_t rows = 512, blocks = 8;
  auto cv = bytes<uint8_t>(size_t(rows * blocks * 32), 6, 0, 255);
  auto xv = bytes<int8_t>(size_t(blocks * 32), 7, -128, 127);
  Tensor codes = tensor(cv, {rows, blocks, 8, 4}, dt::uint8, "CPU"), x = tensor(xv, {1, blocks, 8, 4}, dt::int8, "CPU");
  Tensor y = codes.cast(dt::int32).mul(x.cast(dt::int32)).sum({-1}).cast(dt::float32).mul(Tensor::full({1}, 0.5, dt::float32, "CPU")).sum({-1, -2});
  std::string src = sources(y);
  size_t scalar_adds = 0;
  for (const char* op : {"fadd float ", "fma.f32("})
    for (size_t at = src.find(op); at != std::string::npos; at = src.find(op, at + 1)) scalar_adds++;
  EXPECT_LE(scalar_adds, 2u) << src;
  EXPECT_EQ(src.find("vpdpbusd") != std::string::npos, host_has_dot4()) << src;
  std::vector<float> got(rows), want(rows);
  y.to_data(got.data(), got.size() * 4);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t e = 0; e < blocks * 32; e++) want[size_t(r)] += float(int(cv[size_t(r * blocks * 32 + e)]) * xv[size_t(e)]) * 0.5f;
  EXPECT_EQ(got, want);
}

// A matmul's output read by two kernels gets a buffer; the per-group sums inside it don't (they were realized too, a
// 4 x 8 x larger buffer than the output, written and read again)
TEST(QuantDot, SharedOutputDoesNotRealizeTheSumsInsideIt) {
  Case c;
  Tensor codes = tensor(c.codes, {kRows, kBlocks, 32}, dt::uint8, "CPU"), x = tensor(c.x, {kBlocks, 32}, dt::int8, "CPU");
  Tensor y = scaled(dot(codes, x));
  Tensor z = y.div(y.abs().max());  // y read by the max's kernel and by the division's
  for (auto& e : tg::lower_realize({z.uop()}, "CPU").items) EXPECT_LE(e.bufs[0]->nbytes(), size_t(kRows * 4)) << e.prg->name;  // what it writes
  std::vector<float> got(kRows), want = c.rows();
  z.to_data(got.data(), got.size() * 4);
  float mx = 0;
  for (float v : want) mx = std::max(mx, std::abs(v));
  for (auto& v : want) v /= mx;
  EXPECT_EQ(got, want);
}

// A bfloat matmul in the pairs form the LLM's prompt products take: the right side laid out (K / 2, N, 2), each pair
// summed by its own reduce inside the one over K. On a host with AVX512-BF16 the LLVM kernel multiplies and adds each
// pair in one vdpbf16ps (DOT2), accumulating straight into the register tile; elsewhere, and in C, float multiply-adds.
// Products of bfloats are exact in float, so every element is checked against float64 to float32's summation error
TEST(BfloatPairs, MatmulUsesDot2WhereTheHostHasItAndMatchesFloat64) {
  constexpr int64_t M = 40, K = 256, N = 96;
  std::mt19937_64 g(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto bf = [](float f) {  // rounded to bfloat (nearest even), as a float
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
    std::memcpy(&f, &u, 4);
    return f;
  };
  std::vector<float> a(M * K), w(K * N);  // w as (K / 2, N, 2): w[(k / 2, n, k % 2)] is B[k][n]
  for (auto& v : a) v = bf(nd(g));
  for (auto& v : w) v = bf(nd(g));
  for (const char* dev : {"CPU", "CPU:CLANG"}) {
    SCOPED_TRACE(dev);
    Tensor A = Tensor::from_data(a.data(), a.size() * 4, dt::float32, {M, K}, dev).cast(dt::bfloat16).contiguous().realize();
    Tensor W = Tensor::from_data(w.data(), w.size() * 4, dt::float32, {K / 2, N, 2}, dev).cast(dt::bfloat16).contiguous().realize();
    Tensor Wt = W.permute({1, 0, 2}).reshape({1, N, K / 2, 2}).cast(dt::float32);
    Tensor y = A.reshape({M, 1, K / 2, 2}).cast(dt::float32).mul(Wt).sum({-1}).sum({-1});
    if (std::string(dev) == "CPU") EXPECT_EQ(sources(y).find("dpbf16ps") != std::string::npos, host_has_dot2());
    std::vector<float> got(M * N);
    y.to_data(got.data(), got.size() * 4);
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double want = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
          double p = double(a[size_t(m * K + k)]) * double(w[size_t((k / 2 * N + n) * 2 + k % 2)]);
          want += p, mag += std::abs(p);
        }
        ASSERT_NEAR(got[size_t(m * N + n)], want, 1e-6 * mag) << m << " " << n;
      }
  }
}

}  // namespace
