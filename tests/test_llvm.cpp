// The LLVM IR renderer and the in-process JIT (DEV=CPU) against the C path (DEV=CPU:CLANG) and against C++ references.
// Scalar programs are built by hand so each op meets every dtype on random inputs (special values and edge cases
// included) and the two paths must agree bit for bit (NaN payloads aside). Vector programs (VECTORIZE, GEP, vector
// LOAD/STORE/ALU, vector accumulators) are checked against C++ references, since the C renderer has no vectors.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "codegen/late/late.h"
#include "renderer/cstyle.h"
#include "renderer/llvmir.h"
#include "runtime/llvm.h"
#include "tensor/tensor.h"

namespace {
using namespace tg;

// ---- hand-built linear programs -----------------------------------------------------------------------------------
struct Prog {
  LinearProgram lp;
  int64_t axis = 0;
  explicit Prog(const std::string& name) { lp.name = name; }
  UOpRef global(DType d, int64_t n) {
    UOpRef g = UOp::make(Ops::DEFINE_GLOBAL, d.ptr_to(n), {}, int64_t(lp.globals.size()));
    lp.globals.push_back(g);
    return g;
  }
  UOpRef range(const UOpRef& end) { return put(UOp::make(Ops::RANGE, dtypes::index, {end}, std::vector<int64_t>{axis++, 0})); }
  UOpRef range(int64_t n) { return range(UOp::const_int(dtypes::index, n)); }
  void end(const UOpRef& r) { put(UOp::make(Ops::END, dtypes::void_, {r})); }
  UOpRef put(UOpRef u) {
    lp.uops.push_back(u);
    return u;
  }
  static UOpRef index(const UOpRef& g, const UOpRef& i, UOpRef valid = nullptr) {
    UOps s{g, i};
    if (valid) s.push_back(valid);
    return UOp::make(Ops::INDEX, g->dtype, s);
  }
  UOpRef load(const UOpRef& g, const UOpRef& i, DType d, UOpRef valid = nullptr) { return put(UOp::make(Ops::LOAD, d, {index(g, i, valid)})); }
  void store(const UOpRef& g, const UOpRef& i, const UOpRef& v, UOpRef valid = nullptr) {
    put(UOp::make(Ops::STORE, dtypes::void_, {index(g, i, valid), v}));
  }
};
UOpRef vconst(DType d, double v) { return UOp::make(Ops::CONST, d, {}, UOp::const_(d.base(), v)->arg); }

Compiler& jit_compiler() {
  static std::unique_ptr<Compiler> c = make_llvm_compiler();
  return *c;
}
CPUProgram::Entry entry_of(const std::shared_ptr<Program>& p) { return static_cast<const CPUProgram&>(*p).entry; }
// the source of a program as get_program makes it: the shared semantics rewritten first (sources replaced, order kept)
std::string render(const Renderer& ren, LinearProgram lp) {
  lp.uops = lower_semantics(UOp::sink(lp.uops), ren)->src;
  return ren.render(lp);
}
CPUProgram::Entry llvm_entry(const LinearProgram& lp) { return entry_of(jit_compiler().compile(lp.name, render(LLVMRenderer(cpu_target("CPU", 1)), lp))); }
CPUProgram::Entry clang_entry(const LinearProgram& lp) {
  return entry_of(get_device("CPU:CLANG").compiler().compile(lp.name, render(CStyleRenderer(cpu_target("CPU:CLANG", 1)), lp)));
}

// ---- random inputs ------------------------------------------------------------------------------------------------
using Bytes = std::vector<uint8_t>;
// bit patterns for every dtype, with the values that break code: 0, -0, +-inf, NaN, subnormals, MIN, -1, 1
Bytes random_data(DType d, int64_t n, std::mt19937_64& rng, bool tame = false) {
  size_t isz = size_t(d.itemsize());
  Bytes out(size_t(n) * isz);
  for (int64_t i = 0; i < n; i++) {
    uint8_t* p = out.data() + size_t(i) * isz;
    uint64_t bits = rng();
    int pick = int(rng() % 8);
    if (dtypes::is_float(d)) {
      double v = std::uniform_real_distribution<double>(-8, 8)(rng);
      const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40, -3e-42, 65504.0};
      if (tame) v = std::uniform_real_distribution<double>(-300, 300)(rng);
      else if (pick == 0) v = special[rng() % 8];
      if (pick == 1 && !tame) {  // any bit pattern: subnormals and NaN payloads of the 16-bit types
        std::memcpy(p, &bits, isz);
        continue;
      }
      if (d == dtypes::float64) std::memcpy(p, &v, 8);
      else if (d == dtypes::float32) {
        float f = float(v);
        std::memcpy(p, &f, 4);
      } else if (d == dtypes::float16) {
        _Float16 h = _Float16(float(v));
        std::memcpy(p, &h, 2);
      } else {
        float f = float(v);
        uint32_t b;
        std::memcpy(&b, &f, 4);
        uint16_t h = uint16_t(b >> 16);
        std::memcpy(p, &h, 2);
      }
    } else if (dtypes::is_bool(d)) {
      *p = bits & 1;
    } else {
      const int64_t edge[] = {0, -1, 1, 2, std::numeric_limits<int64_t>::min() >> (64 - 8 * isz)};
      int64_t v = pick < 3 ? edge[rng() % 5] : int64_t(bits);
      std::memcpy(p, &v, isz);
    }
  }
  return out;
}
bool is_nan(DType d, const uint8_t* p) {
  if (d == dtypes::float64) return std::isnan(*reinterpret_cast<const double*>(p));
  if (d == dtypes::float32) return std::isnan(*reinterpret_cast<const float*>(p));
  uint16_t h;
  std::memcpy(&h, p, 2);
  return d == dtypes::float16 ? (h & 0x7c00) == 0x7c00 && (h & 0x3ff) : (h & 0x7f80) == 0x7f80 && (h & 0x7f);
}
// buffers equal element by element; NaN matches NaN whatever its payload
void expect_same(DType d, const Bytes& got, const Bytes& want, const std::string& what) {
  size_t isz = size_t(d.itemsize());
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size() / isz && bad < 5; i++) {
    const uint8_t *g = got.data() + i * isz, *w = want.data() + i * isz;
    if (std::memcmp(g, w, isz) == 0 || (dtypes::is_float(d) && is_nan(d, g) && is_nan(d, w))) continue;
    uint64_t gb = 0, wb = 0;
    std::memcpy(&gb, g, isz), std::memcpy(&wb, w, isz);
    ADD_FAILURE() << what << " " << d.name() << " [" << i << "]: llvm 0x" << std::hex << gb << ", clang 0x" << wb;
    bad++;
  }
}

// Runs one program on both paths: inputs random (globals 1..), outputs compared.
void compare_paths(const LinearProgram& lp, uint64_t seed, const std::vector<bool>& tame = {}) {
  std::mt19937_64 rng(seed);
  std::vector<Bytes> a(lp.globals.size()), b;
  for (size_t i = 0; i < lp.globals.size(); i++) {
    DType d = lp.globals[i]->dtype.base();
    int64_t n = lp.globals[i]->dtype.size;
    a[i] = random_data(d, n, rng, i < tame.size() && tame[i]);
  }
  b = a;
  std::vector<void*> pa, pb;
  for (size_t i = 0; i < a.size(); i++) pa.push_back(a[i].data()), pb.push_back(b[i].data());
  int64_t vars[1] = {0};
  llvm_entry(lp)(pa.data(), vars);
  clang_entry(lp)(pb.data(), vars);
  for (size_t i = 0; i < a.size(); i++) expect_same(lp.globals[i]->dtype.base(), a[i], b[i], lp.name + " buf" + std::to_string(i));
}

const int64_t N = 512;
// one program per dtype: out[k*N + i] = op_k(a[i], b[i]) for every op the dtype has (comparisons cast back to it: the C
// renderer writes only its first buffer)
LinearProgram alu_program(DType d) {
  bool f = dtypes::is_float(d);
  std::vector<Ops> ops = f ? std::vector<Ops>{Ops::ADD, Ops::SUB,  Ops::MUL,  Ops::FDIV, Ops::MAX,   Ops::CMPLT, Ops::CMPNE,      Ops::CMPEQ, Ops::NEG,
                                              Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::TRUNC, Ops::POW,  Ops::RECIPROCAL, Ops::MULACC, Ops::WHERE}
                           : std::vector<Ops>{Ops::ADD, Ops::SUB,   Ops::MUL,   Ops::IDIV, Ops::MOD, Ops::MAX, Ops::CMPLT, Ops::CMPNE,  Ops::CMPEQ,
                                              Ops::AND, Ops::OR,    Ops::XOR,   Ops::SHL,  Ops::SHR, Ops::NEG, Ops::MULACC, Ops::WHERE};
  if (dtypes::is_bool(d)) ops = {Ops::ADD, Ops::SUB, Ops::MUL, Ops::MAX, Ops::CMPLT, Ops::CMPNE, Ops::AND, Ops::OR, Ops::XOR, Ops::WHERE};
  Prog p("alu_" + d.name());
  int64_t K = int64_t(ops.size());
  UOpRef go = p.global(d, K * N), ga = p.global(d, N), gb = p.global(d, N), gc = p.global(dtypes::bool_, N);
  UOpRef r = p.range(N);
  UOpRef a = p.load(ga, r, d), b = p.load(gb, r, d), c = p.load(gc, r, dtypes::bool_);
  for (int64_t k = 0; k < K; k++) {
    Ops o = ops[size_t(k)];
    UOpRef v;
    if (o == Ops::WHERE) v = p.put(c->where(a, b));
    else if (o == Ops::MULACC) v = p.put(UOp::make(Ops::MULACC, d, {a, b, a}));
    else if (o == Ops::SHL || o == Ops::SHR) v = p.put(a->alu(o, {p.put(b & UOp::const_int(d, d.itemsize() * 8 - 1))}));  // amounts the type has
    else if (GroupOp::unary(o)) v = p.put(a->alu(o));
    else v = p.put(a->alu(o, {b}));
    if (v->dtype != d) v = p.put(v->cast(d));
    p.store(go, p.put(r + k * N), v);
  }
  p.end(r);
  return p.lp;
}

TEST(LLVM, EveryAluOpMatchesTheCPathOnEveryDtype) {
  for (DType d : dtypes::all()) compare_paths(alu_program(d), 1234 + uint64_t(d.scalar));
}

TEST(LLVM, CastsAndBitcastsMatchTheCPath) {
  // one program per target dtype: out[k*N + i] = cast(in_k[i]) from every dtype
  const auto& all = dtypes::all();
  for (DType to : all) {
    Prog p("cast_to_" + to.name());
    UOpRef go = p.global(to, int64_t(all.size()) * N);
    UOps ins;
    for (DType from : all) ins.push_back(p.global(from, N));
    UOpRef r = p.range(N);
    for (size_t k = 0; k < all.size(); k++) p.store(go, p.put(r + int64_t(k) * N), p.put(p.load(ins[k], r, all[k])->cast(to)));
    p.end(r);
    // float -> int of a value the int can't hold is undefined in C: those inputs stay in range
    std::vector<bool> tame(all.size() + 1, !dtypes::is_float(to));
    compare_paths(p.lp, 99 + uint64_t(to.scalar), tame);
  }
  for (auto [a, b] : std::vector<std::pair<DType, DType>>{{dtypes::float32, dtypes::int32}, {dtypes::float16, dtypes::int16}, {dtypes::bfloat16, dtypes::uint16},
                                                          {dtypes::uint16, dtypes::float16}, {dtypes::int64, dtypes::float64}}) {
    Prog p("bitcast_" + a.name());
    UOpRef o = p.global(b, N), i = p.global(a, N), r = p.range(N);
    p.store(o, r, p.put(p.load(i, r, a)->bitcast(b)));
    p.end(r);
    compare_paths(p.lp, 7);
  }
}

// ---- semantics against explicit expectations ------------------------------------------------------------------------
template <class T>
std::vector<T> run_binary(Ops op, DType d, std::vector<T> a, std::vector<T> b, std::optional<int64_t> const_b = std::nullopt) {
  Prog p(std::string("bin_") + std::string(op_name(op)) + "_" + d.name() + (const_b ? "_c" + std::to_string(*const_b) : ""));
  int64_t n = int64_t(a.size());
  UOpRef go = p.global(d, n), ga = p.global(d, n), gb = p.global(d, n), r = p.range(n);
  UOpRef y = const_b ? UOp::const_int(d, *const_b) : p.load(gb, r, d);
  p.store(go, r, p.put(p.load(ga, r, d)->alu(op, {y})));
  p.end(r);
  std::vector<T> out(a.size());
  void* bufs[] = {out.data(), a.data(), b.data()};
  llvm_entry(p.lp)(bufs, nullptr);
  return out;
}

TEST(LLVM, IntegerDivisionIsDefinedEverywhere) {
  const int32_t mn = std::numeric_limits<int32_t>::min();
  std::vector<int32_t> a{7, -7, 7, -7, mn, mn, 5, 0, 9}, b{2, 2, -2, 0, -1, 0, -1, 0, 3};
  EXPECT_EQ(run_binary(Ops::IDIV, dtypes::int32, a, b), (std::vector<int32_t>{3, -3, -3, 0, mn, 0, -5, 0, 3}));
  EXPECT_EQ(run_binary(Ops::MOD, dtypes::int32, a, b), (std::vector<int32_t>{1, -1, 1, -7, 0, mn, 0, 0, 0}));
  EXPECT_EQ(run_binary(Ops::IDIV, dtypes::int32, a, b, 0), std::vector<int32_t>(a.size(), 0));
  EXPECT_EQ(run_binary(Ops::MOD, dtypes::int32, a, b, 0), a);
  EXPECT_EQ(run_binary(Ops::IDIV, dtypes::int32, a, b, -1), (std::vector<int32_t>{-7, 7, -7, 7, mn, mn, -5, 0, -9}));
  EXPECT_EQ(run_binary(Ops::MOD, dtypes::int32, a, b, -1), std::vector<int32_t>(a.size(), 0));
  EXPECT_EQ(run_binary(Ops::IDIV, dtypes::int8, std::vector<int8_t>{-128, 100}, std::vector<int8_t>{-1, 0}), (std::vector<int8_t>{-128, 0}));
  EXPECT_EQ(run_binary(Ops::IDIV, dtypes::uint32, std::vector<uint32_t>{7, 4000000000u}, std::vector<uint32_t>{0, 3}), (std::vector<uint32_t>{0, 1333333333u}));
  EXPECT_EQ(run_binary(Ops::MOD, dtypes::uint32, std::vector<uint32_t>{7, 4000000000u}, std::vector<uint32_t>{0, 3}), (std::vector<uint32_t>{7, 1}));
  // a signed left shift into and past the sign bit wraps
  EXPECT_EQ(run_binary(Ops::SHL, dtypes::int32, std::vector<int32_t>{1, 3, -1}, std::vector<int32_t>{31, 31, 4}), (std::vector<int32_t>{mn, mn, -16}));
}

uint16_t bf16_round(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x40);
  return uint16_t((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
}
float bf16_float(uint16_t h) {
  uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(LLVM, SixteenBitFloatsRoundEveryResult) {
  // every result is the float result rounded once to the 16-bit type, subnormals included (no flush to zero)
  std::mt19937_64 rng(5);
  std::vector<uint16_t> a(4096), b(4096);
  for (size_t i = 0; i < a.size(); i++) a[i] = uint16_t(rng()), b[i] = uint16_t(rng());
  for (size_t i = 0; i < 64; i++) a[i] = uint16_t(i), b[i] = uint16_t(i * 3);  // subnormals of both types
  auto sum16 = run_binary(Ops::ADD, dtypes::float16, a, b), mul16 = run_binary(Ops::MUL, dtypes::float16, a, b);
  auto sumbf = run_binary(Ops::ADD, dtypes::bfloat16, a, b), mulbf = run_binary(Ops::MUL, dtypes::bfloat16, a, b);
  int bad = 0;
  for (size_t i = 0; i < a.size() && bad < 5; i++) {
    _Float16 ha, hb;
    std::memcpy(&ha, &a[i], 2), std::memcpy(&hb, &b[i], 2);
    _Float16 hs = _Float16(float(ha) + float(hb)), hm = _Float16(float(ha) * float(hb));
    uint16_t ws, wm;
    std::memcpy(&ws, &hs, 2), std::memcpy(&wm, &hm, 2);
    uint16_t bs = bf16_round(bf16_float(a[i]) + bf16_float(b[i])), bm = bf16_round(bf16_float(a[i]) * bf16_float(b[i]));
    auto nan16 = [](uint16_t x) { return (x & 0x7c00) == 0x7c00 && (x & 0x3ff); };
    auto nanbf = [](uint16_t x) { return (x & 0x7f80) == 0x7f80 && (x & 0x7f); };
    bool ok = (sum16[i] == ws || (nan16(sum16[i]) && nan16(ws))) && (mul16[i] == wm || (nan16(mul16[i]) && nan16(wm))) &&
              (sumbf[i] == bs || (nanbf(sumbf[i]) && nanbf(bs))) && (mulbf[i] == bm || (nanbf(mulbf[i]) && nanbf(bm)));
    if (!ok) bad++, ADD_FAILURE() << std::hex << "a 0x" << a[i] << " b 0x" << b[i] << ": half + 0x" << sum16[i] << " want 0x" << ws << ", * 0x" << mul16[i]
                                  << " want 0x" << wm << "; bfloat + 0x" << sumbf[i] << " want 0x" << bs << ", * 0x" << mulbf[i] << " want 0x" << bm;
  }
}

TEST(LLVM, NaNWinsInMax) {
  float nan = NAN;
  auto m = run_binary(Ops::MAX, dtypes::float32, std::vector<float>{nan, 1, nan, -0.0f, 2}, std::vector<float>{1, nan, nan, 0.0f, -INFINITY});
  EXPECT_TRUE(std::isnan(m[0]) && std::isnan(m[1]) && std::isnan(m[2]));
  EXPECT_EQ(m[4], 2);
  auto h = run_binary(Ops::MAX, dtypes::float16, std::vector<uint16_t>{0x7e00, 0x3c00}, std::vector<uint16_t>{0x3c00, 0x7e00});
  EXPECT_TRUE((h[0] & 0x7c00) == 0x7c00 && (h[0] & 0x3ff)) << std::hex << h[0];
  EXPECT_TRUE((h[1] & 0x7c00) == 0x7c00 && (h[1] & 0x3ff)) << std::hex << h[1];
}

TEST(LLVM, GatedLoadsReadNothingWhenOff) {
  Prog p("gated");
  UOpRef go = p.global(dtypes::float32, 8), gi = p.global(dtypes::float32, 4), r = p.range(8);
  UOpRef valid = p.put(r < 4);
  p.store(go, r, p.put(p.load(gi, r, dtypes::float32, valid)->alu(Ops::ADD, {UOp::const_(dtypes::float32, 1)})));
  p.end(r);
  std::vector<float> out(8), in{1, 2, 3, 4};
  void* bufs[] = {out.data(), in.data()};
  llvm_entry(p.lp)(bufs, nullptr);  // reads past `in` would be out of bounds (AddressSanitizer builds see them)
  EXPECT_EQ(out, (std::vector<float>{2, 3, 4, 5, 1, 1, 1, 1}));
}

TEST(LLVM, VariablesArePassedThroughTheEntry) {
  Prog p("vars");
  UOpRef n = UOp::variable("n", 1, 16), go = p.global(dtypes::int32, 16);
  p.lp.vars = {n};
  UOpRef r = p.range(n);
  p.store(go, r, p.put(r->cast(dtypes::int32)));
  p.end(r);
  std::vector<int32_t> out(16, -1);
  void* bufs[] = {out.data()};
  int64_t vars[] = {5};
  llvm_entry(p.lp)(bufs, vars);
  EXPECT_EQ(out, (std::vector<int32_t>{0, 1, 2, 3, 4, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}));
}

// ---- vectors --------------------------------------------------------------------------------------------------------
TEST(LLVM, VectorLoadsStoresAndAlu) {
  const int64_t G = 8;
  DType f4 = dtypes::float32.vec(4);
  Prog p("vec_alu");
  UOpRef go = p.global(dtypes::float32, 4 * G), gmin = p.global(dtypes::float32, 4 * G), glt = p.global(dtypes::bool_, 4 * G);
  UOpRef ga = p.global(dtypes::float32, 4 * G), gb = p.global(dtypes::float32, 4 * G), r = p.range(G);
  UOpRef i = p.put(r * 4);
  UOpRef a = p.load(ga, i, f4), b = p.load(gb, i, f4);
  p.store(go, i, p.put(p.put(a * b)->alu(Ops::ADD, {vconst(f4, 0.5)})));
  UOpRef lt = p.put(a->lt(b));
  p.store(gmin, i, p.put(lt->where(a, b)));
  p.store(glt, i, lt);
  p.end(r);
  std::vector<float> A(4 * G), B(4 * G), O(4 * G), M(4 * G);
  std::vector<uint8_t> L(4 * G, 7);
  for (size_t k = 0; k < A.size(); k++) A[k] = float(k) * 0.25f - 3, B[k] = float(k % 5) - 2;
  void* bufs[] = {O.data(), M.data(), L.data(), A.data(), B.data()};
  llvm_entry(p.lp)(bufs, nullptr);
  for (size_t k = 0; k < A.size(); k++) {
    EXPECT_EQ(O[k], A[k] * B[k] + 0.5f) << k;
    EXPECT_EQ(M[k], std::min(A[k], B[k])) << k;
    EXPECT_EQ(L[k], A[k] < B[k] ? 1 : 0) << k;  // bools are stored as bytes 0/1
  }
}

TEST(LLVM, VectorizeAndGep) {
  const int64_t G = 4;
  DType i4 = dtypes::int32.vec(4);
  Prog p("vec_gep");
  UOpRef grev = p.global(dtypes::int32, 4 * G), glane = p.global(dtypes::int32, G), gpair = p.global(dtypes::int32, 2 * G);
  UOpRef gi = p.global(dtypes::int32, 4 * G), r = p.range(G);
  UOpRef base = p.put(r * 4);
  UOps lanes;
  for (int k = 0; k < 4; k++) lanes.push_back(p.load(gi, p.put(base + k), dtypes::int32));
  UOpRef v = p.put(UOp::make(Ops::VECTORIZE, i4, lanes));
  p.store(grev, base, p.put(UOp::make(Ops::GEP, i4, {v}, std::vector<int64_t>{3, 2, 1, 0})));
  p.store(glane, r, p.put(UOp::make(Ops::GEP, dtypes::int32, {v}, std::vector<int64_t>{2})));
  p.store(gpair, p.put(r * 2), p.put(UOp::make(Ops::GEP, dtypes::int32.vec(2), {v}, std::vector<int64_t>{1, 3})));
  p.end(r);
  std::vector<int32_t> in(4 * G), rev(4 * G), lane(G), pair(2 * G);
  for (size_t k = 0; k < in.size(); k++) in[k] = int32_t(k * 10);
  void* bufs[] = {rev.data(), lane.data(), pair.data(), in.data()};
  llvm_entry(p.lp)(bufs, nullptr);
  for (int64_t g = 0; g < G; g++) {
    for (int k = 0; k < 4; k++) EXPECT_EQ(rev[size_t(g * 4 + k)], in[size_t(g * 4 + 3 - k)]);
    EXPECT_EQ(lane[size_t(g)], in[size_t(g * 4 + 2)]);
    EXPECT_EQ(pair[size_t(g * 2)], in[size_t(g * 4 + 1)]);
    EXPECT_EQ(pair[size_t(g * 2 + 1)], in[size_t(g * 4 + 3)]);
  }
}

TEST(LLVM, VectorAccumulatorInALoop) {
  // acc (float4) = 0; for j < 8: acc += a[j*4 .. j*4+3]; out = acc: four sums at once, in order
  DType f4 = dtypes::float32.vec(4);
  Prog p("vec_acc");
  UOpRef go = p.global(dtypes::float32, 4), ga = p.global(dtypes::float32, 32);
  UOpRef acc = p.put(UOp::make(Ops::DEFINE_REG, f4.ptr_to(1, AddrSpace::Reg), {}, int64_t(0)));
  p.put(UOp::make(Ops::STORE, dtypes::void_, {acc, vconst(f4, 0)}));
  UOpRef r = p.range(8);
  UOpRef cur = UOp::make(Ops::LOAD, f4, {acc});  // read where it is used, as the linearizer leaves it
  p.put(UOp::make(Ops::STORE, dtypes::void_, {acc, cur->alu(Ops::ADD, {p.load(ga, p.put(r * 4), f4)})}));
  p.end(r);
  p.store(go, UOp::const_int(dtypes::index, 0), p.put(UOp::make(Ops::LOAD, f4, {acc})));
  std::vector<float> a(32), out(4);
  for (size_t k = 0; k < a.size(); k++) a[k] = 0.1f * float(k) + 0.01f;
  void* bufs[] = {out.data(), a.data()};
  llvm_entry(p.lp)(bufs, nullptr);
  for (int k = 0; k < 4; k++) {
    float s = 0;
    for (int j = 0; j < 8; j++) s += a[size_t(j * 4 + k)];
    EXPECT_EQ(out[size_t(k)], s) << k;
  }
}

TEST(LLVM, VectorDivisionCastsHalvesAndGates) {
  DType i4 = dtypes::int32.vec(4), h4 = dtypes::float16.vec(4);
  Prog p("vec_misc");
  UOpRef gq = p.global(dtypes::int32, 8), gf = p.global(dtypes::float32, 8), gh = p.global(dtypes::float16, 8), gg = p.global(dtypes::int32, 8);
  UOpRef ga = p.global(dtypes::int32, 8), gb = p.global(dtypes::int32, 8), gx = p.global(dtypes::float16, 8), gs = p.global(dtypes::int32, 4);
  UOpRef r = p.range(2), i = p.put(r * 4);
  UOpRef a = p.load(ga, i, i4), b = p.load(gb, i, i4);
  p.store(gq, i, p.put(a->alu(Ops::IDIV, {b})));
  p.store(gf, i, p.put(a->cast(dtypes::float32.vec(4))));
  UOpRef x = p.load(gx, i, h4);
  p.store(gh, i, p.put(x->alu(Ops::ADD, {x})));
  p.store(gg, i, p.load(gs, i, i4, p.put(r < 1)));  // the second group's load is gated off: zeros, and `gs` has only 4
  p.end(r);
  std::vector<int32_t> A{7, -7, 5, std::numeric_limits<int32_t>::min(), 9, 8, 7, 6}, B{2, 0, -1, -1, 3, 3, 3, 0}, Q(8), G(8), S{1, 2, 3, 4};
  std::vector<float> F(8);
  std::vector<uint16_t> X(8), H(8);
  for (size_t k = 0; k < 8; k++) {
    _Float16 h = _Float16(0.1f * float(k) + 60000.0f * (k == 7));
    std::memcpy(&X[k], &h, 2);
  }
  void* bufs[] = {Q.data(), F.data(), H.data(), G.data(), A.data(), B.data(), X.data(), S.data()};
  llvm_entry(p.lp)(bufs, nullptr);
  EXPECT_EQ(Q, (std::vector<int32_t>{3, 0, -5, std::numeric_limits<int32_t>::min(), 3, 2, 2, 0}));
  for (size_t k = 0; k < 8; k++) {
    EXPECT_EQ(F[k], float(A[k]));
    _Float16 x, h;
    std::memcpy(&x, &X[k], 2), std::memcpy(&h, &H[k], 2);
    EXPECT_EQ(float(h), float(_Float16(float(x) + float(x)))) << k;  // 120000 overflows to inf in half
  }
  EXPECT_EQ(G, (std::vector<int32_t>{1, 2, 3, 4, 0, 0, 0, 0}));
}

// ---- the compiler ---------------------------------------------------------------------------------------------------
TEST(LLVM, CompileErrorIsAnErrorNotACrash) {
  for (std::string src : {std::string("define void @tg_entry(ptr %b, ptr %v) {\n  garbage\n}\n"),
                          std::string("define void @tg_entry(ptr %b, ptr %v) {\nentry:\n  %x = add i32 %y, 1\n  %y = add i32 %x, 1\n  ret void\n}\n")}) {
    try {
      jit_compiler().compile("broken", src);
      ADD_FAILURE() << "compiled: " << src;
    } catch (const Error& e) {
      EXPECT_EQ(e.code, TG_ERROR_COMPILE);
      EXPECT_NE(std::string(e.what()).find("--- source ---"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(src), std::string::npos) << e.what();
    }
  }
}

std::string store_kernel(int32_t v, uint64_t nonce) {
  return strformat("; %llu\ndefine void @tg_entry(ptr %%bufs, ptr %%vars) {\n  %%p = load ptr, ptr %%bufs\n  store i32 %d, ptr %%p\n  ret void\n}\n",
                   (unsigned long long)nonce, v);
}

TEST(LLVM, SameNameDifferentCodeCoexist) {
  uint64_t nonce = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  auto a = jit_compiler().compile("same", store_kernel(1, nonce)), b = jit_compiler().compile("same", store_kernel(2, nonce));
  int32_t x = 0, y = 0;
  void *ba[] = {&x}, *bb[] = {&y};
  entry_of(a)(ba, nullptr), entry_of(b)(bb, nullptr);
  EXPECT_EQ(x, 1);
  EXPECT_EQ(y, 2);
}

TEST(LLVM, DiskCacheServesASecondCompiler) {
  Context ctx{{"CACHELEVEL", 2}};
  uint64_t nonce = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ 0x5eed;
  std::string src = store_kernel(42, nonce);
  uint64_t c0 = GlobalCounters::compile_count;
  auto first = make_llvm_compiler(), second = make_llvm_compiler();
  first->compile("cached", src);
  EXPECT_EQ(GlobalCounters::compile_count - c0, 1u);
  auto p = second->compile("cached", src);
  EXPECT_EQ(GlobalCounters::compile_count - c0, 1u) << "the second compiler built again instead of loading the cached object";
  int32_t x = 0;
  void* bufs[] = {&x};
  entry_of(p)(bufs, nullptr);
  EXPECT_EQ(x, 42);
}

// Distinct sources each compile once (the time per kernel is printed for information; timings are the bench's job, not
// a test's: `compile time` in bench_ops)
TEST(LLVM, EveryNewSourceCompilesOnce) {
  Context ctx{{"CACHELEVEL", 0}};
  uint64_t nonce = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<std::string> srcs;
  for (DType d : {dtypes::float32, dtypes::int32, dtypes::float16}) {
    std::string s = render(LLVMRenderer(cpu_target("CPU", 1)), alu_program(d));
    for (int k = 0; k < 4; k++) srcs.push_back("; " + std::to_string(nonce + uint64_t(k)) + "\n" + s);
  }
  auto c = make_llvm_compiler();
  uint64_t c0 = GlobalCounters::compile_count;
  auto t0 = std::chrono::steady_clock::now();
  for (auto& s : srcs) EXPECT_NE(entry_of(c->compile("timed", s)), nullptr);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / double(srcs.size());
  std::printf("[ LLVM     ] %.2f ms per kernel (alu programs of ~20 outputs, O2, %zu kernels)\n", ms, srcs.size());
  EXPECT_EQ(GlobalCounters::compile_count - c0, srcs.size());
  for (auto& s : srcs) c->compile("timed", s);
  EXPECT_EQ(GlobalCounters::compile_count - c0, srcs.size()) << "a source compiled before was compiled again";
}

// ---- devices --------------------------------------------------------------------------------------------------------
TEST(LLVM, DeviceNames) {
  EXPECT_EQ(canonical_device("cpu"), "CPU");
  EXPECT_EQ(canonical_device("LLVM"), "CPU");
  EXPECT_EQ(canonical_device("cpu:llvm"), "CPU");
  EXPECT_EQ(canonical_device("clang"), "CPU:CLANG");
  EXPECT_EQ(canonical_device("CPU:CLANG:0"), "CPU:CLANG");
  EXPECT_EQ(get_device("CPU").name(), "CPU");
  EXPECT_EQ(get_device("CPU:CLANG").name(), "CPU:CLANG");
  EXPECT_EQ(&get_device("CPU").allocator(), &get_device("CPU:CLANG").allocator());
  EXPECT_EQ(canonical_device("gpu"), "CL");
  EXPECT_EQ(canonical_device("OpenCL:1"), "CL:1");
  EXPECT_EQ(canonical_device("nv"), "CUDA");
  EXPECT_EQ(canonical_device("cuda:0"), "CUDA");
  if (cuda_device_count() == 0) {  // no driver or no GPU: the error says so
    try {
      get_device("CUDA");
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_EQ(e.code, TG_ERROR_DEVICE);
      EXPECT_NE(std::string(e.what()).find("CUDA is not available"), std::string::npos) << e.what();
    }
  }
  try {
    get_device("TPU");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown device 'TPU'"), std::string::npos) << e.what();
  }
}

TEST(LLVM, TensorsOnBothDevicesAgree) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> x(16 * 24), w(24 * 8);
  for (auto& v : x) v = nd(rng);
  for (auto& v : w) v = nd(rng);
  std::vector<std::vector<float>> outs;
  for (const char* dev : {"CPU", "CPU:CLANG"}) {
    Tensor tx = Tensor::from_data(x.data(), x.size() * 4, dtypes::float32, {16, 24}, dev);
    Tensor tw = Tensor::from_data(w.data(), w.size() * 4, dtypes::float32, {24, 8}, dev);
    Tensor y = tx.matmul(tw).relu().softmax(1).add(tx.sum({1}, true).exp());
    EXPECT_EQ(y.device(), dev);
    std::vector<float> out(16 * 8);
    y.to_data(out.data(), out.size() * 4);
    outs.push_back(out);
  }
  EXPECT_EQ(outs[0], outs[1]);
}

}  // namespace
