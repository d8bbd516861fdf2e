// Tensor ops against a plain C++ reference: every op, every dtype where it is defined, several shapes (broadcasting,
// size-0 / size-1 / 0-d, non-contiguous views before the op). The reference (Nd) computes in double with the same
// method names as tg::Tensor, so each case is one generic lambda applied to both. Every element is compared.
//
// Tolerances (|got - ref| <= atol + rtol * |ref|; ints and bool exact after wrapping the reference to the dtype):
//   float64 1e-12 / 1e-12, float32 1e-5 / 1e-6 (transcendentals 1e-5 / 1e-5), float16 2e-3 / 1e-3,
//   bfloat16 1e-2 / 1e-2. Sums and matmuls scale rtol by the same reduction over |inputs| (cancellation).
// Kernel budget (each distinct kernel is one clang run on a cold cache): every op meets every dtype at one shared shape;
// the shape/view cases are dealt out round robin over the ops, so each case meets several ops. About 650 kernels here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "reference.h"
#include "tensor/tensor.h"

namespace {

using namespace tg_ref;  // the reference (Nd) and its helpers

// ---- comparison -------------------------------------------------------------------------------------------------------
enum class Kind { Arith, Transc };
struct Tol {
  double rtol, atol;
};
Tol tol_for(DType d, Kind k) {
  if (d == dt::float64) return {1e-12, 1e-12};
  if (d == dt::float32) return k == Kind::Transc ? Tol{1e-5, 1e-5} : Tol{1e-5, 1e-6};
  if (d == dt::float16) return {2e-3, 1e-3};
  if (d == dt::bfloat16) return {1e-2, 1e-2};
  return {0, 0};
}

// every element of `t` against `ref`; `mag` (same shape) replaces |ref| in the rtol term where it is larger
void expect_match(Tensor t, const Nd& ref, Kind kind = Kind::Arith, const Nd* mag = nullptr) {
  ASSERT_EQ(shape_s(t.shape()), shape_s(ref.shape)) << "shape";
  ASSERT_EQ(t.dtype().name(), ref.dt.name()) << "dtype";
  DType d = ref.dt;
  size_t isz = size_t(d.itemsize());
  std::vector<uint8_t> out(ref.v.size() * isz);
  t.to_data(out.data(), out.size());
  Tol tol = tol_for(d, kind);
  int bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < ref.v.size(); i++) {
    const uint8_t* p = out.data() + i * isz;
    std::string got, want;
    if (isf(d)) {
      double g = get_float(d, p), r = ref.v[i];
      double scale = std::max(std::fabs(r), mag ? std::fabs(mag->v[i]) : 0.0);
      bool ok = (std::isnan(r) && std::isnan(g)) || g == r || std::fabs(g - r) <= tol.atol + tol.rtol * scale;
      if (ok) continue;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", g), got = buf;
      std::snprintf(buf, sizeof buf, "%.9g", r), want = buf;
    } else {
      i128 g = get_int(d, p), r = wrap_int(d, ref.v[i]);
      if (g == r) continue;
      got = i128_str(g), want = i128_str(r);
    }
    if (bad++ < 6) msg << "  [" << i << "] got " << got << " want " << want << "\n";
  }
  EXPECT_EQ(bad, 0) << bad << " of " << ref.v.size() << " elements differ (" << d.name() << " rtol " << tol.rtol << " atol " << tol.atol
                    << "):\n"
                    << msg.str();
}

// One case: f (a generic lambda over a vector of inputs) runs on the reference and on Tensors, then every element is
// compared. `mag` recomputes the reference on |inputs| to scale the tolerance of sums and matmuls.
template <class F>
void check(const std::string& name, const std::vector<Nd>& in, F f, Kind kind = Kind::Arith, bool mag = false) {
  SCOPED_TRACE(name);
  try {
    Nd ref = f(in);
    std::optional<Nd> m;
    if (mag) {
      std::vector<Nd> a = in;
      for (auto& x : a) x = x.abs();
      m = f(a);
    }
    std::vector<Tensor> ts;
    for (auto& n : in) ts.push_back(to_tensor(n));
    expect_match(f(ts), ref, kind, m ? &*m : nullptr);
  } catch (const tg::Error& e) {
    ADD_FAILURE() << name << ": library threw " << tg_status_name(e.code) << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": threw " << e.what();
  }
}

const std::vector<DType>& all_dtypes() { return dt::all(); }
std::string nm(const std::string& a, DType d, const std::string& b = "") { return a + " " + d.name() + (b.empty() ? "" : " " + b); }

// ---- binary ops ---------------------------------------------------------------------------------------------------------
enum Mask : unsigned { kBool = 1, kInt = 2, kFloat = 4, kAll = 7, kNum = 6 };
bool in_mask(DType d, unsigned m) { return (isbool(d) && (m & kBool)) || (isint(d) && (m & kInt)) || (isf(d) && (m & kFloat)); }

struct BinOp {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> t;
  std::function<Nd(const Nd&, const Nd&)> r;
  Dom da, db;
  unsigned mask;
};
template <class F>
BinOp bin(std::string n, F f, Dom da, Dom db, unsigned mask) {
  return {std::move(n), f, f, da, db, mask};
}
Tensor call(const BinOp& o, const Tensor& a, const Tensor& b) { return o.t(a, b); }
Nd call(const BinOp& o, const Nd& a, const Nd& b) { return o.r(a, b); }

// bool subtraction is not defined (numpy raises; tinygrad computes a | !b): left out
const std::vector<BinOp>& bin_ops() {
  static const std::vector<BinOp> ops = {
      bin("add", [](auto a, auto b) { return a.add(b); }, Dom::Any, Dom::Any, kAll),
      bin("sub", [](auto a, auto b) { return a.sub(b); }, Dom::Any, Dom::Any, kNum),
      bin("mul", [](auto a, auto b) { return a.mul(b); }, Dom::Any, Dom::Any, kAll),
      bin("div", [](auto a, auto b) { return a.div(b); }, Dom::Any, Dom::NonZero, kAll),
      bin("idiv", [](auto a, auto b) { return a.idiv(b); }, Dom::Any, Dom::NonZero, kInt),
      bin("maximum", [](auto a, auto b) { return a.maximum(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("minimum", [](auto a, auto b) { return a.minimum(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("pow", [](auto a, auto b) { return a.pow(b); }, Dom::PowBase, Dom::PowExp, kNum),
      bin("lt", [](auto a, auto b) { return a.lt(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("le", [](auto a, auto b) { return a.le(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("gt", [](auto a, auto b) { return a.gt(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("ge", [](auto a, auto b) { return a.ge(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("eq", [](auto a, auto b) { return a.eq(b); }, Dom::Disc, Dom::Disc, kAll),
      bin("ne", [](auto a, auto b) { return a.ne(b); }, Dom::Disc, Dom::Disc, kAll),
  };
  return ops;
}

// a pair of input shapes and the views taken before the op (generic: the same lambda runs on Nd and Tensor)
struct View2 {
  std::string name;
  Shape sa, sb;
  std::function<std::pair<Tensor, Tensor>(const Tensor&, const Tensor&)> t;
  std::function<std::pair<Nd, Nd>(const Nd&, const Nd&)> r;
};
template <class F>
View2 view2(std::string n, Shape sa, Shape sb, F f) {
  return {std::move(n), std::move(sa), std::move(sb), f, f};
}
std::pair<Tensor, Tensor> call(const View2& v, const Tensor& a, const Tensor& b) { return v.t(a, b); }
std::pair<Nd, Nd> call(const View2& v, const Nd& a, const Nd& b) { return v.r(a, b); }
auto ident2 = [](const auto& a, const auto& b) { return std::pair{a, b}; };

// The padded/flipped/... operand is always the first one, so a divisor never gets a padded zero.
const std::vector<View2>& bin_views() {
  static const std::vector<View2> v = {
      view2("bcast (4,5)x(5,)", {4, 5}, {5}, ident2),
      view2("same (2,3,4)", {2, 3, 4}, {2, 3, 4}, ident2),
      view2("outer (3,1)x(1,4)", {3, 1}, {1, 4}, ident2),
      view2("0-d x (3,)", {}, {3}, ident2),
      view2("size-0 (0,3)x(1,3)", {0, 3}, {1, 3}, ident2),
      view2("size-1 (1,1,5)x(1,)", {1, 1, 5}, {1}, ident2),
      view2("permute", {4, 3}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.permute({1, 0}), b}; }),
      view2("flip", {3, 4}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.flip({0, 1}), b.flip({-1})}; }),
      view2("shrink", {5, 6}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.shrink({{1, 4}, {2, 6}}), b}; }),
      view2("pad", {2, 3}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.pad({{1, 0}, {0, 1}}), b}; }),
      view2("pad value", {2, 3}, {3, 4}, [](const auto& a, const auto& b) { return std::pair{a.pad({{0, 1}, {1, 0}}, 1.5), b}; }),
      view2("expand", {3, 1}, {2, 1, 4}, [](const auto& a, const auto& b) { return std::pair{a.expand({2, 3, 4}), b.expand({2, 3, 4})}; }),
      view2("permute+flip+shrink+reshape", {2, 3, 4}, {3, 6},
            [](const auto& a, const auto& b) { return std::pair{a.permute({2, 1, 0}).flip({0}).shrink({{1, 4}, {0, 3}, {0, 2}}).reshape({3, 6}), b}; }),
      view2("transposed both", {4, 3}, {4, 3}, [](const auto& a, const auto& b) { return std::pair{a.transpose(), b.transpose(-1, -2)}; }),
  };
  return v;
}

void check_binary(const BinOp& op, const View2& v, DType d) {
  std::string name = op.name + " " + d.name() + " " + v.name;
  std::mt19937_64 g(seed_of(name));
  check(name, {rnd(v.sa, d, op.da, g), rnd(v.sb, d, op.db, g)}, [&](const auto& x) {
    auto [a, b] = call(v, x[0], x[1]);
    return call(op, a, b);
  });
}

// le/gt/ge are compositions of lt/eq (and checked over every shape case below): they share the dtypes out round robin
TEST(TensorOps, BinaryEveryDtype) {
  auto& ds = all_dtypes();
  for (auto& op : bin_ops()) {
    int k = op.name == "le" ? 0 : op.name == "gt" ? 1 : op.name == "ge" ? 2 : -1;
    for (size_t i = 0; i < ds.size(); i++)
      if (in_mask(ds[i], op.mask) && (k < 0 || int(i % 3) == k)) check_binary(op, bin_views()[0], ds[i]);
  }
}

// every op in float32 over three of the shape/view cases (round robin, so every case meets several ops); add in float32
// and idiv in int32 over all of them
TEST(TensorOps, BinaryShapesAndViews) {
  auto& views = bin_views();
  size_t nv = views.size();
  for (size_t i = 0; i < bin_ops().size(); i++) {
    auto& op = bin_ops()[i];
    DType d = in_mask(dt::float32, op.mask) ? dt::float32 : dt::int32;
    for (size_t k = 1; k <= 3; k++) check_binary(op, views[(i * 3 + k) % nv], d);
  }
  for (auto& v : views) check_binary(bin_ops()[0], v, dt::float32);
  for (auto& v : views) check_binary(bin_ops()[4], v, dt::int32);
}

TEST(TensorOps, BinaryMixedDtypes) {
  struct M {
    DType a, b, out;
  };
  for (auto [a, b, out] : std::vector<M>{{dt::int8, dt::uint8, dt::int16},
                                         {dt::int32, dt::float16, dt::float16},
                                         {dt::bool_, dt::int32, dt::int32},
                                         {dt::float32, dt::float64, dt::float64},
                                         {dt::uint32, dt::int32, dt::int64},
                                         {dt::bfloat16, dt::float16, dt::float32},
                                         {dt::uint8, dt::float32, dt::float32}}) {
    std::string name = std::string("mixed ") + a.name() + "+" + b.name();
    std::mt19937_64 g(seed_of(name));
    Nd x = rnd({3, 4}, a, Dom::Any, g), y = rnd({4}, b, Dom::Any, g);
    EXPECT_EQ(x.add(y).dt.name(), out.name()) << name;  // the reference promotes like the library's lattice: pin it
    check(name, {x, y}, [](const auto& v) { return v[0].add(v[1]); });
    check(name + " mul", {x, y}, [](const auto& v) { return v[0].mul(v[1]); });
    check(name + " lt", {x, y}, [](const auto& v) { return v[0].lt(v[1]); });
  }
  // an int tensor divided truly is float32; idiv of unsigned truncates
  std::mt19937_64 g(7);
  check("int32 div -> float32", {rnd({2, 3}, dt::int32, Dom::Any, g), rnd({2, 3}, dt::int32, Dom::NonZero, g)},
        [](const auto& v) { return v[0].div(v[1]); });
}

// NaN and infinities through the binary ops and the max/min reductions (IEEE comparisons; max/min propagate NaN)
TEST(TensorOps, BinarySpecialValues) {
  Nd a({8}, dt::float32, {NAN, 1, NAN, -INFINITY, INFINITY, 0.0, -0.0, 2}), b({8}, dt::float32, {1, NAN, NAN, 1, 1, -0.0, 0.0, INFINITY});
  for (auto& op : bin_ops())
    if (in_mask(dt::float32, op.mask) && op.name != "pow")
      check(op.name + " special values", {a, b}, [&](const auto& x) { return call(op, x[0], x[1]); });
  Nd pa({8}, dt::float32, {-2, -2, 0, 0, 2, -0.5, INFINITY, NAN}), pb({8}, dt::float32, {3, 0.5, 0, -1, -INFINITY, 2, 0, 0});
  check("pow special values", {pa, pb}, [](const auto& x) { return x[0].pow(x[1]); });  // C pow: (-2)^3 = -8, (-2)^0.5 = nan, 0^0 = 1
  Nd r({2, 3}, dt::float32, {1, NAN, 3, -INFINITY, 2, INFINITY});
  check("max special values", {r}, [](const auto& x) { return x[0].max({1}); });
  check("min special values", {r}, [](const auto& x) { return x[0].min({1}); });
  check("sum special values", {r}, [](const auto& x) { return x[0].sum({1}); });
  check("max all special values", {r}, [](const auto& x) { return x[0].max(); });
}

// 64-bit integers beyond double's 2^53: an exact (__int128) reference. Signed results stay in range (overflow is UB in
// the generated C); unsigned ones wrap modulo 2^64, and their order is unsigned (values >= 2^63 are large, not negative).
TEST(TensorOps, Int64ExactBigValues) {
  auto run = [](DType d, const std::vector<i128>& a, const std::vector<i128>& b) {
    auto tensor = [&](const std::vector<i128>& v) {
      std::vector<uint64_t> raw;
      for (auto x : v) raw.push_back(uint64_t(x));
      return Tensor::from_data(raw.data(), raw.size() * 8, d, {int64_t(raw.size())}, "CPU");
    };
    auto wrap = [&](i128 x) { return isuint(d) ? i128(uint64_t(x)) : i128(int64_t(uint64_t(x))); };
    auto read = [&](Tensor t) {
      std::vector<uint64_t> raw(size_t(t.numel()));
      t.to_data(raw.data(), raw.size() * 8);
      std::vector<i128> r;
      for (auto x : raw) r.push_back(isuint(d) ? i128(x) : i128(int64_t(x)));
      return r;
    };
    Tensor ta = tensor(a), tb = tensor(b);
    struct Op {
      const char* name;
      std::function<Tensor(const Tensor&, const Tensor&)> t;
      std::function<i128(i128, i128)> r;
    };
    std::vector<Op> ops = {{"add", [](auto x, auto y) { return x.add(y); }, [](i128 x, i128 y) { return x + y; }},
                           {"sub", [](auto x, auto y) { return x.sub(y); }, [](i128 x, i128 y) { return x - y; }},
                           {"mul", [](auto x, auto y) { return x.mul(y); }, [](i128 x, i128 y) { return x * y; }},
                           {"idiv", [](auto x, auto y) { return x.idiv(y); }, [](i128 x, i128 y) { return x / y; }},
                           {"maximum", [](auto x, auto y) { return x.maximum(y); }, [](i128 x, i128 y) { return std::max(x, y); }},
                           {"minimum", [](auto x, auto y) { return x.minimum(y); }, [](i128 x, i128 y) { return std::min(x, y); }},
                           {"lt", [](auto x, auto y) { return x.lt(y).cast(dt::int64); }, [](i128 x, i128 y) { return i128(x < y); }},
                           {"eq", [](auto x, auto y) { return x.eq(y).cast(dt::int64); }, [](i128 x, i128 y) { return i128(x == y); }}};
    for (auto& op : ops) {
      SCOPED_TRACE(std::string(op.name) + " " + d.name());
      try {
        auto got = read(op.t(ta, tb));
        for (size_t i = 0; i < a.size(); i++) {
          i128 want = wrap(op.r(a[i], b[i]));
          if (!isuint(d)) {
            ASSERT_TRUE(op.r(a[i], b[i]) == want) << "test data overflows int64 at " << i;
          }
          EXPECT_TRUE(got[i] == want) << "[" << i << "] got " << i128_str(got[i]) << " want " << i128_str(want);
        }
      } catch (const tg::Error& e) {
        ADD_FAILURE() << e.what();
      }
    }
    // reductions over everything: sum wraps like the dtype, max/min use the dtype's order
    i128 sum = 0, mx = a[0], mn = a[0];
    for (auto x : a) sum += x, mx = std::max(mx, x), mn = std::min(mn, x);
    try {
      EXPECT_TRUE(read(ta.sum().reshape({1}))[0] == wrap(sum)) << "sum " << d.name();
      EXPECT_TRUE(read(ta.max().reshape({1}))[0] == mx) << "max " << d.name() << ": got " << i128_str(read(ta.max().reshape({1}))[0]);
      EXPECT_TRUE(read(ta.min().reshape({1}))[0] == mn) << "min " << d.name() << ": got " << i128_str(read(ta.min().reshape({1}))[0]);
    } catch (const tg::Error& e) {
      ADD_FAILURE() << e.what();
    }
  };
  i128 p61 = i128(1) << 61;
  run(dt::int64, {p61 + 1, -p61 - 3, INT64_MAX - 10, INT64_MIN + 10, 123456789012345678, -5}, {3, -3, -1, 1, -7, 7});
  run(dt::uint64, {i128(UINT64_MAX), i128(1) << 63, (i128(1) << 63) - 1, i128(12345678901234567890ULL), 0, 5},
      {2, i128(1) << 63, 1, 3, 1, i128(UINT64_MAX)});
}

// ---- where / cast ---------------------------------------------------------------------------------------------------------
TEST(TensorOps, WhereEveryDtype) {
  for (DType d : all_dtypes()) {
    std::string name = nm("where", d, "(3,1)?(1,4):(3,4)");
    std::mt19937_64 g(seed_of(name));
    check(name, {rnd({3, 1}, dt::bool_, Dom::Any, g), rnd({1, 4}, d, Dom::Any, g), rnd({3, 4}, d, Dom::Any, g)},
          [](const auto& x) { return x[0].where(x[1], x[2]); });
  }
  std::mt19937_64 g(11);
  // a non-bool condition is cast to bool; mixed value dtypes promote; views on every operand
  check("where float cond", {rnd({3, 4}, dt::float32, Dom::Disc, g), rnd({3, 4}, dt::float32, Dom::Any, g), rnd({4}, dt::float32, Dom::Any, g)},
        [](const auto& x) { return x[0].where(x[1], x[2]); });
  check("where int8:float32", {rnd({2, 3}, dt::bool_, Dom::Any, g), rnd({2, 3}, dt::int8, Dom::Any, g), rnd({2, 3}, dt::float32, Dom::Any, g)},
        [](const auto& x) { return x[0].where(x[1], x[2]); });
  check("where views", {rnd({4, 3}, dt::bool_, Dom::Any, g), rnd({3, 5}, dt::int32, Dom::Any, g), rnd({1}, dt::int32, Dom::Any, g)},
        [](const auto& x) { return x[0].transpose().where(x[1].flip({1}).shrink({{0, 3}, {1, 5}}), x[2]); });
  check("where 0-d cond", {rnd({}, dt::bool_, Dom::Any, g), rnd({2, 2}, dt::float32, Dom::Any, g), rnd({2, 2}, dt::float32, Dom::Any, g)},
        [](const auto& x) { return x[0].where(x[1], x[2]); });
}

TEST(TensorOps, CastEveryDtype) {
  auto cast_case = [](DType from, DType to, Dom dom, Shape s = {3, 4}) {
    std::string name = std::string("cast ") + from.name() + "->" + to.name();
    std::mt19937_64 g(seed_of(name));
    check(name, {rnd(s, from, dom, g)}, [&](const auto& x) { return x[0].cast(to); });
  };
  for (DType d : all_dtypes()) cast_case(d, dt::float32, Dom::Any);
  // float -> int truncates toward zero; float -> unsigned of a negative value wraps (through int64, like numpy)
  for (DType d : all_dtypes()) cast_case(dt::float32, d, Dom::Any);
  cast_case(dt::int32, dt::int8, Dom::Big);  // 1000..100000 wraps modulo 256
  cast_case(dt::int64, dt::int32, Dom::Any);
  cast_case(dt::uint8, dt::int8, Dom::Big);  // 127..255 -> negative
  cast_case(dt::int8, dt::uint16, Dom::Any);
  cast_case(dt::int16, dt::uint64, Dom::Any);
  cast_case(dt::int32, dt::bool_, Dom::Disc);
  cast_case(dt::bool_, dt::float16, Dom::Any);
  cast_case(dt::float64, dt::float16, Dom::Any);
  cast_case(dt::float16, dt::bfloat16, Dom::Any);
  cast_case(dt::bfloat16, dt::float64, Dom::Any);
  cast_case(dt::float16, dt::int16, Dom::Big);
  cast_case(dt::float64, dt::int64, Dom::Big);
  cast_case(dt::uint16, dt::float16, Dom::Any);
  // a cast after a view
  std::mt19937_64 g(3);
  check("cast permuted int8->float64", {rnd({2, 3, 4}, dt::int8, Dom::Any, g)}, [](const auto& x) { return x[0].permute({2, 0, 1}).cast(dt::float64); });
}

// ---- unary ops ------------------------------------------------------------------------------------------------------------
struct UnOp {
  std::string name;
  std::function<Tensor(const Tensor&)> t;
  std::function<Nd(const Nd&)> r;
  Dom dom;
  Kind kind;
};
template <class F>
UnOp un(std::string n, F f, Dom d, Kind k) {
  return {std::move(n), f, f, d, k};
}
Tensor call(const UnOp& o, const Tensor& a) { return o.t(a); }
Nd call(const UnOp& o, const Nd& a) { return o.r(a); }
const std::vector<UnOp>& un_ops() {
  static const std::vector<UnOp> ops = {
      un("neg", [](auto a) { return a.neg(); }, Dom::Any, Kind::Arith),
      un("exp", [](auto a) { return a.exp(); }, Dom::Any, Kind::Transc),
      un("exp2", [](auto a) { return a.exp2(); }, Dom::Any, Kind::Transc),
      un("log", [](auto a) { return a.log(); }, Dom::Pos, Kind::Transc),
      un("log2", [](auto a) { return a.log2(); }, Dom::Pos, Kind::Transc),
      un("sqrt", [](auto a) { return a.sqrt(); }, Dom::Pos, Kind::Transc),
      un("reciprocal", [](auto a) { return a.reciprocal(); }, Dom::NonZero, Kind::Arith),
      un("sin", [](auto a) { return a.sin(); }, Dom::Any, Kind::Transc),
      un("cos", [](auto a) { return a.cos(); }, Dom::Any, Kind::Transc),
      un("abs", [](auto a) { return a.abs(); }, Dom::Any, Kind::Arith),
      un("relu", [](auto a) { return a.relu(); }, Dom::Any, Kind::Arith),
      un("sigmoid", [](auto a) { return a.sigmoid(); }, Dom::Any, Kind::Transc),
      un("tanh", [](auto a) { return a.tanh(); }, Dom::Any, Kind::Transc),
  };
  return ops;
}
struct View1 {
  std::string name;
  Shape s;
  std::function<Tensor(const Tensor&)> t;
  std::function<Nd(const Nd&)> r;
};
template <class F>
View1 view1(std::string n, Shape s, F f) {
  return {std::move(n), std::move(s), f, f};
}
Tensor call(const View1& v, const Tensor& a) { return v.t(a); }
Nd call(const View1& v, const Nd& a) { return v.r(a); }
auto ident1 = [](const auto& a) { return a; };
const std::vector<View1>& un_views() {
  static const std::vector<View1> v = {
      view1("(3,4)", {3, 4}, ident1),
      view1("0-d", {}, ident1),
      view1("size-0 (2,0)", {2, 0}, ident1),
      view1("size-1 (1,3,1)", {1, 3, 1}, ident1),
      view1("permute", {2, 3, 4}, [](const auto& a) { return a.permute({1, 2, 0}); }),
      view1("flip", {3, 4}, [](const auto& a) { return a.flip({0}); }),
      view1("shrink", {4, 5}, [](const auto& a) { return a.shrink({{1, 3}, {0, 5}}); }),
      view1("pad", {2, 3}, [](const auto& a) { return a.pad({{1, 1}, {0, 2}}); }),
      view1("expand", {1, 3}, [](const auto& a) { return a.expand({4, 3}); }),
  };
  return v;
}
void check_unary(const UnOp& op, const View1& v, DType d) {
  std::string name = op.name + " " + d.name() + " " + v.name;
  std::mt19937_64 g(seed_of(name));
  check(name, {rnd(v.s, d, op.dom, g)}, [&](const auto& x) { return call(op, call(v, x[0])); }, op.kind);
}

// exp, log, sin, ... of ints and bool are computed in float32 (the reference's result dtype says so)
// neg/abs/relu keep the dtype: every dtype. The float-valued ops run on every float dtype; for bool and ints they
// all take the same path (cast to float32, then the op), so the 9 non-float dtypes are dealt out round robin, two each.
TEST(TensorOps, UnaryEveryDtype) {
  std::vector<DType> nonfloat;
  for (DType d : all_dtypes())
    if (!isf(d)) nonfloat.push_back(d);
  size_t j = 0;
  for (auto& op : un_ops()) {
    bool keeps = op.name == "neg" || op.name == "abs" || op.name == "relu";
    for (DType d : all_dtypes())
      if (keeps || isf(d)) check_unary(op, un_views()[0], d);
    if (!keeps)
      for (size_t k = 0; k < 2; k++, j++) check_unary(op, un_views()[0], nonfloat[j % nonfloat.size()]);
  }
}

TEST(TensorOps, UnaryShapesAndViews) {
  auto& views = un_views();
  size_t nv = views.size();
  for (size_t i = 0; i < un_ops().size(); i++)
    for (size_t k = 1; k <= 2; k++) check_unary(un_ops()[i], views[(i * 2 + k) % nv], dt::float32);
  for (auto& v : views) check_unary(un_ops()[1], v, dt::float32);  // exp over every case
  for (auto& v : views) check_unary(un_ops()[0], v, dt::int32);    // neg over every case
}

// special values the C library gives: log(0) = -inf, sqrt(-1) = nan, 1/0 = inf, exp(-inf) = 0
TEST(TensorOps, UnarySpecialValues) {
  Nd x({6}, dt::float32, {0.0, -1.0, INFINITY, -INFINITY, 1.0, -0.0});
  // random inputs of the same shape first: the special-value cases below then reuse these kernels
  for (size_t i : {1, 3, 5, 6, 11}) check_unary(un_ops()[i], view1("(6,)", {6}, ident1), dt::float32);
  check("log special", {x}, [](const auto& v) { return v[0].log(); }, Kind::Transc);
  check("sqrt special", {x}, [](const auto& v) { return v[0].sqrt(); }, Kind::Transc);
  check("reciprocal special", {x}, [](const auto& v) { return v[0].reciprocal(); });
  check("exp special", {x}, [](const auto& v) { return v[0].exp(); }, Kind::Transc);
  check("sigmoid special", {x}, [](const auto& v) { return v[0].sigmoid(); }, Kind::Transc);
}

// ---- reductions -----------------------------------------------------------------------------------------------------------
struct RedOp {
  std::string name;
  std::function<Tensor(const Tensor&, std::vector<int64_t>, bool)> t;
  std::function<Nd(const Nd&, std::vector<int64_t>, bool)> r;
  Dom dom;
  bool mag;  // sum-like: scale the tolerance by the reduction of |x|
};
template <class F>
RedOp red(std::string n, F f, Dom d, bool mag) {
  return {std::move(n), f, f, d, mag};
}
Tensor call(const RedOp& o, const Tensor& a, std::vector<int64_t> ax, bool k) { return o.t(a, std::move(ax), k); }
Nd call(const RedOp& o, const Nd& a, std::vector<int64_t> ax, bool k) { return o.r(a, std::move(ax), k); }
const std::vector<RedOp>& red_ops() {
  static const std::vector<RedOp> ops = {
      red("sum", [](auto a, std::vector<int64_t> ax, bool k) { return a.sum(ax, k); }, Dom::Any, true),
      red("max", [](auto a, std::vector<int64_t> ax, bool k) { return a.max(ax, k); }, Dom::Any, false),
      red("prod", [](auto a, std::vector<int64_t> ax, bool k) { return a.prod(ax, k); }, Dom::Prod, false),
      red("min", [](auto a, std::vector<int64_t> ax, bool k) { return a.min(ax, k); }, Dom::Any, false),
      red("mean", [](auto a, std::vector<int64_t> ax, bool k) { return a.mean(ax, k); }, Dom::Any, true),
  };
  return ops;
}
void check_reduce(const RedOp& op, DType d, Shape s, std::vector<int64_t> axes, bool keep, Dom dom, const std::string& extra = "") {
  std::string name = op.name + " " + d.name() + " " + shape_s(s) + " axes " + shape_s(axes) + (keep ? " keepdim" : "") + extra;
  std::mt19937_64 g(seed_of(name));
  check(name, {rnd(s, d, dom, g)}, [&](const auto& x) { return call(op, x[0], axes, keep); }, Kind::Arith, op.mag && isf(d));
}

TEST(TensorReduce, EveryDtype) {
  for (auto& op : red_ops())
    for (DType d : all_dtypes()) check_reduce(op, d, {3, 8}, {1}, false, op.dom);
}

// ints accumulate in int32/uint32: sums and products that overflow the input dtype come out right
TEST(TensorReduce, IntAccumulation) {
  for (DType d : {dt::int8, dt::uint8, dt::int16, dt::uint16, dt::bool_}) check_reduce(red_ops()[0], d, {3, 8}, {1}, false, Dom::Big, " big");
  check_reduce(red_ops()[0], dt::uint8, {2, 8}, {}, false, Dom::Big, " big all");
  for (DType d : {dt::int8, dt::uint8}) {
    std::string name = std::string("prod big ") + d.name();
    std::mt19937_64 g(seed_of(name));
    Nd x({4, 3}, d);
    for (auto& v : x.v) v = double(std::uniform_int_distribution<int>(5, 10)(g));  // up to 1000 > 255
    check(name, {x}, [](const auto& a) { return a[0].prod({1}); });
  }
  check_reduce(red_ops()[4], dt::int8, {3, 8}, {1}, false, Dom::Big, " big");  // mean of int8 sums in int32, then float32
}

TEST(TensorReduce, AxesAndKeepdim) {
  std::vector<std::pair<std::vector<int64_t>, bool>> cfg = {{{}, false}, {{0}, false}, {{-1}, true}, {{0, 2}, false}, {{1}, true}, {{-3, -1}, true}};
  for (size_t i = 0; i < red_ops().size(); i++) {
    auto& op = red_ops()[i];
    for (size_t k = 0; k < cfg.size(); k++)
      if (i < 2 || k % 3 == i % 3) check_reduce(op, dt::float32, {2, 3, 4}, cfg[k].first, cfg[k].second, op.dom);
  }
  check_reduce(red_ops()[0], dt::int32, {2, 3, 4}, {0, 2}, true, Dom::Any);
  check_reduce(red_ops()[1], dt::int8, {2, 3, 4}, {}, false, Dom::Any);
  check_reduce(red_ops()[3], dt::uint16, {2, 3, 4}, {1}, false, Dom::Any);
  check_reduce(red_ops()[0], dt::float32, {1000}, {}, false, Dom::Any);  // a longer reduction
}

TEST(TensorReduce, EmptyAndSizeOne) {
  // over a size-0 axis: sum 0, prod 1, max -inf (the dtype's min for ints), min +inf, mean nan
  for (auto& op : red_ops()) check_reduce(op, dt::float32, {0, 3}, {0}, false, op.dom);
  check_reduce(red_ops()[1], dt::int32, {0, 3}, {0}, false, Dom::Any);
  check_reduce(red_ops()[0], dt::float32, {3, 0}, {1}, true, Dom::Any);
  check_reduce(red_ops()[0], dt::float32, {0}, {}, false, Dom::Any);    // 0-d result from nothing
  check_reduce(red_ops()[0], dt::float32, {0, 3}, {1}, false, Dom::Any);  // size-0 result: no kernel
  check_reduce(red_ops()[0], dt::float32, {3, 1}, {1}, false, Dom::Any);  // size-1 axis
  check_reduce(red_ops()[1], dt::float32, {1}, {}, true, Dom::Any);
  check_reduce(red_ops()[0], dt::float32, {}, {}, false, Dom::Any);  // 0-d input
  check_reduce(red_ops()[0], dt::int8, {}, {}, false, Dom::Any);     // 0-d int8 input: int32 result
}

TEST(TensorReduce, AfterViews) {
  std::mt19937_64 g(5);
  Nd x = rnd({3, 4}, dt::float32, Dom::Any, g), c = rnd({3, 1}, dt::float32, Dom::Any, g), i = rnd({3, 4}, dt::int32, Dom::Any, g);
  check("sum permuted", {x}, [](const auto& v) { return v[0].permute({1, 0}).sum({1}); }, Kind::Arith, true);
  check("sum flipped", {x}, [](const auto& v) { return v[0].flip({1}).sum({0}, true); }, Kind::Arith, true);
  check("sum padded value", {x}, [](const auto& v) { return v[0].pad({{1, 1}, {2, 0}}, 1.5).sum({1}); }, Kind::Arith, true);
  check("sum shrunk", {x}, [](const auto& v) { return v[0].shrink({{1, 3}, {1, 4}}).sum(); }, Kind::Arith, true);
  check("sum expanded", {c}, [](const auto& v) { return v[0].expand({3, 5}).sum({1}); }, Kind::Arith, true);
  check("max padded -inf side", {x}, [](const auto& v) { return v[0].pad({{0, 0}, {1, 1}}, -5).max({1}); });
  check("min of flipped int32", {i}, [](const auto& v) { return v[0].flip({0, 1}).min({0}); });
  check("mean transposed", {x}, [](const auto& v) { return v[0].transpose().mean({0}); }, Kind::Arith, true);
  check("prod expanded", {c}, [](const auto& v) { return v[0].expand({3, 2}).prod({1}, true); });
  check("sum of reduce result", {x}, [](const auto& v) { return v[0].max({1}).sum(); }, Kind::Arith, true);
}

TEST(TensorReduce, SoftmaxLogSoftmax) {
  struct S {
    DType d;
    Shape s;
    int64_t axis;
  };
  for (auto [d, s, axis] : std::vector<S>{{dt::float32, {4, 7}, -1},
                                          {dt::float32, {2, 3, 5}, 1},
                                          {dt::float64, {4, 7}, 0},
                                          {dt::float16, {4, 7}, -1},
                                          {dt::bfloat16, {3, 5}, -1},
                                          {dt::int32, {3, 4}, -1}}) {
    std::string name = std::string(d.name()) + " " + shape_s(s) + " axis " + std::to_string(axis);
    std::mt19937_64 g(seed_of(name));
    Nd x = rnd(s, d, Dom::Any, g);
    check("softmax " + name, {x}, [&](const auto& v) { return v[0].softmax(axis); }, Kind::Transc);
    check("log_softmax " + name, {x}, [&](const auto& v) { return v[0].log_softmax(axis); }, Kind::Transc);
  }
  std::mt19937_64 g(9);
  check("softmax of a permuted view", {rnd({5, 3}, dt::float32, Dom::Any, g)}, [](const auto& v) { return v[0].transpose().softmax(-1); }, Kind::Transc);
  // large logits: max subtraction keeps it finite
  Nd big({2, 3}, dt::float32, {1000, 1001, 1002, -1000, -1001, -1002});
  check("softmax large logits", {big}, [](const auto& v) { return v[0].softmax(); }, Kind::Transc);
  check("log_softmax large logits", {big}, [](const auto& v) { return v[0].log_softmax(); }, Kind::Transc);
}

// ---- matmul ---------------------------------------------------------------------------------------------------------------
TEST(TensorMatmul, ShapesAndDtypes) {
  struct C {
    std::string name;
    DType da, db;
    Shape sa, sb;
    bool transpose_a;
  };
  std::vector<C> cases = {
      {"2D", dt::float32, dt::float32, {3, 4}, {4, 5}, false},
      {"1D x 2D", dt::float32, dt::float32, {4}, {4, 5}, false},
      {"2D x 1D", dt::float32, dt::float32, {3, 4}, {4}, false},
      {"1D x 1D", dt::float32, dt::float32, {4}, {4}, false},
      {"batched", dt::float32, dt::float32, {2, 3, 4}, {2, 4, 5}, false},
      {"batch broadcast", dt::float32, dt::float32, {2, 1, 3, 4}, {3, 4, 2}, false},
      {"1D x batched", dt::float32, dt::float32, {4}, {2, 4, 3}, false},
      {"transposed operand", dt::float32, dt::float32, {4, 3}, {4, 5}, true},
      {"K=0", dt::float32, dt::float32, {3, 0}, {0, 2}, false},
      {"M=0", dt::float32, dt::float32, {0, 4}, {4, 2}, false},
      {"row x col", dt::float32, dt::float32, {1, 4}, {4, 1}, false},
      {"larger", dt::float32, dt::float32, {16, 32}, {32, 8}, false},
      {"float64", dt::float64, dt::float64, {5, 6}, {6, 3}, false},
      {"float16", dt::float16, dt::float16, {4, 8}, {8, 3}, false},
      {"bfloat16", dt::bfloat16, dt::bfloat16, {4, 8}, {8, 3}, false},
      {"int32", dt::int32, dt::int32, {3, 4}, {4, 2}, false},
      {"int8 (wraps)", dt::int8, dt::int8, {3, 4}, {4, 2}, false},
      {"uint8 x float32", dt::uint8, dt::float32, {3, 4}, {4, 2}, false},
  };
  for (auto& c : cases) {
    std::string name = "matmul " + c.name + " " + c.da.name() + " " + shape_s(c.sa) + "@" + shape_s(c.sb);
    std::mt19937_64 g(seed_of(name));
    bool t = c.transpose_a;
    check(name, {rnd(c.sa, c.da, Dom::Any, g), rnd(c.sb, c.db, Dom::Any, g)},
          [&](const auto& x) { return (t ? x[0].transpose() : x[0]).matmul(x[1]); }, Kind::Arith, isf(c.da) || isf(c.db));
  }
}

// ---- movement -------------------------------------------------------------------------------------------------------------
TEST(TensorMovement, ViewsThenContiguous) {
  auto mv = [](const std::string& name, DType d, Shape s, auto f) {
    std::mt19937_64 g(seed_of(name));
    check(name + " " + d.name(), {rnd(s, d, Dom::Any, g)}, [&](const auto& x) { return f(x[0]); });  // to_data makes it contiguous
  };
  mv("permute", dt::float32, {2, 3, 4}, [](const auto& a) { return a.permute({2, 0, 1}); });
  mv("permute", dt::int64, {2, 3, 4}, [](const auto& a) { return a.permute({2, 0, 1}); });
  mv("reshape of permuted", dt::float32, {4, 3}, [](const auto& a) { return a.permute({1, 0}).reshape({2, 6}); });
  mv("reshape -1", dt::float32, {2, 3, 4}, [](const auto& a) { return a.reshape({4, -1}); });
  mv("reshape to 0-d", dt::float32, {1, 1}, [](const auto& a) { return a.reshape({}); });
  mv("reshape size-0", dt::float32, {0, 4}, [](const auto& a) { return a.reshape({2, 0, 2}); });
  mv("expand", dt::float32, {3, 1}, [](const auto& a) { return a.expand({2, -1, 4}); });
  mv("expand 0-d", dt::float32, {}, [](const auto& a) { return a.expand({2, 3}); });
  mv("expand to size-0", dt::float32, {3, 1}, [](const auto& a) { return a.expand({3, 0}); });
  mv("pad", dt::float32, {2, 3}, [](const auto& a) { return a.pad({{1, 2}, {0, 1}}); });
  mv("pad value", dt::float32, {2, 3}, [](const auto& a) { return a.pad({{1, 2}, {0, 1}}, -2.5); });
  mv("pad value", dt::int8, {2, 3}, [](const auto& a) { return a.pad({{0, 1}, {2, 0}}, -3); });
  mv("pad value", dt::bool_, {2, 3}, [](const auto& a) { return a.pad({{0, 1}, {2, 0}}, 1); });
  mv("pad value", dt::float16, {2, 3}, [](const auto& a) { return a.pad({{0, 1}, {2, 0}}, 0.5); });
  mv("pad value", dt::uint64, {2, 3}, [](const auto& a) { return a.pad({{0, 1}, {2, 0}}, 7); });
  mv("pad size-0", dt::float32, {0, 2}, [](const auto& a) { return a.pad({{1, 1}, {0, 0}}, 3); });
  mv("shrink", dt::float32, {4, 5, 6}, [](const auto& a) { return a.shrink({{1, 3}, {0, 5}, {2, 4}}); });
  mv("shrink", dt::uint16, {4, 5}, [](const auto& a) { return a.shrink({{1, 3}, {2, 4}}); });
  mv("shrink to size-0", dt::float32, {4, 5}, [](const auto& a) { return a.shrink({{2, 2}, {0, 5}}); });
  mv("flip", dt::float32, {2, 3, 4}, [](const auto& a) { return a.flip({0, 2}); });
  mv("flip", dt::float64, {2, 3, 4}, [](const auto& a) { return a.flip({-1}); });
  mv("transpose", dt::float32, {2, 3, 4}, [](const auto& a) { return a.transpose(-1, 0); });
  mv("transpose", dt::bfloat16, {3, 5}, [](const auto& a) { return a.transpose(); });
  mv("chain", dt::float32, {3, 4},
     [](const auto& a) { return a.pad({{1, 1}, {0, 2}}, 0.25).shrink({{0, 4}, {1, 6}}).flip({1}).permute({1, 0}).reshape({5, 2, 2}).expand({2, 5, 2, 2}); });
  mv("contiguous of a buffer", dt::float32, {3, 4}, [](const auto& a) { return a.contiguous(); });
  mv("contiguous of a view", dt::float32, {2, 3, 4}, [](const auto& a) { return a.permute({2, 0, 1}).contiguous(); });
  mv("view of a contiguous", dt::float32, {3, 4}, [](const auto& a) { return a.flip({0}).contiguous().transpose(); });
}

// ---- creation -------------------------------------------------------------------------------------------------------------
TEST(TensorCreation, FromDataRoundTripsEveryDtype) {
  for (DType d : all_dtypes()) {
    // extremes of every dtype, and inf / nan / -0.0 / subnormals for floats
    std::vector<uint8_t> bytes(size_t(7 * d.itemsize()));
    std::mt19937_64 g(seed_of(d.name()));
    for (auto& b : bytes) b = uint8_t(g());
    if (isbool(d))
      for (auto& b : bytes) b &= 1;
    if (isf(d)) {
      std::vector<double> special = {INFINITY, -INFINITY, NAN, -0.0, 1e-40, 65504, -1.5};
      for (size_t i = 0; i < special.size(); i++) put(d, bytes.data() + i * size_t(d.itemsize()), special[i]);
    }
    Tensor t = Tensor::from_data(bytes.data(), bytes.size(), d, {7}, "CPU");
    EXPECT_EQ(shape_s(t.shape()), "(7,)");
    EXPECT_EQ(t.dtype().name(), d.name());
    std::vector<uint8_t> out(bytes.size());
    t.to_data(out.data(), out.size());
    EXPECT_EQ(out, bytes) << d.name();
    // the same bytes seen as (7,1) and as 0-d / size-0 tensors
    Tensor t2 = Tensor::from_data(bytes.data(), bytes.size(), d, {7, 1}, "CPU");
    EXPECT_EQ(t2.numel(), 7);
    Tensor t0 = Tensor::from_data(bytes.data(), size_t(d.itemsize()), d, {}, "CPU");
    std::vector<uint8_t> one(size_t(d.itemsize()));
    t0.to_data(one.data(), one.size());
    EXPECT_TRUE(std::equal(one.begin(), one.end(), bytes.begin())) << d.name();
    Tensor te = Tensor::from_data(nullptr, 0, d, {0, 5}, "CPU");
    EXPECT_EQ(te.numel(), 0);
    te.to_data(nullptr, 0);
  }
}

TEST(TensorCreation, EmptyHasShapeOnly) {
  for (DType d : {dt::float32, dt::int8, dt::bool_, dt::bfloat16}) {
    Tensor t = Tensor::empty({2, 3, 4}, d, "CPU");
    EXPECT_EQ(shape_s(t.shape()), "(2,3,4)");
    EXPECT_EQ(t.dtype().name(), d.name());
    EXPECT_EQ(t.numel(), 24);
    std::vector<uint8_t> out(size_t(24 * d.itemsize()));
    EXPECT_NO_THROW(t.to_data(out.data(), out.size()));  // contents are unspecified, but readable
  }
  Tensor z = Tensor::empty({0, 3}, dt::float32, "CPU");
  EXPECT_EQ(z.numel(), 0);
  Tensor s = Tensor::empty({}, dt::float64, "CPU");
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.numel(), 1);
}

TEST(TensorCreation, FullZerosOnes) {
  auto full_case = [](Shape s, double value, DType d) {
    std::string name = "full " + shape_s(s) + " " + std::to_string(value) + " " + d.name();
    SCOPED_TRACE(name);
    try {
      Nd ref(s, d);
      for (auto& x : ref.v) x = norm(d, value);
      expect_match(Tensor::full(s, value, d, "CPU"), ref);
    } catch (const tg::Error& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  };
  for (DType d : all_dtypes()) full_case({2, 3}, isbool(d) ? 1 : isuint(d) ? 9 : isint(d) ? -7 : -2.5, d);
  for (DType d : {dt::float32, dt::int64, dt::bool_}) full_case({2, 3}, 0, d);  // zeros
  for (DType d : {dt::float16, dt::uint8, dt::bfloat16}) full_case({2, 3}, 1, d);  // ones
  full_case({}, 3.25, dt::float32);
  full_case({0, 4}, 1, dt::float32);
  full_case({1, 1, 5}, 1e30, dt::float64);
}

TEST(TensorCreation, Arange) {
  struct A {
    double start, stop, step;
    DType d;
  };
  for (auto [start, stop, step, d] : std::vector<A>{{0, 10, 1, dt::int32},
                                                    {5, -5, -1.5, dt::float32},
                                                    {0, 1, 0.1, dt::float64},
                                                    {3, 3, 1, dt::float32},
                                                    {3, 0, 1, dt::int32},
                                                    {0, 5, 2, dt::int64},
                                                    {-3, 3, 1, dt::int8},
                                                    {0, 4, 0.5, dt::float16}}) {
    std::string name = "arange " + std::to_string(start) + " " + std::to_string(stop) + " " + std::to_string(step) + " " + d.name();
    SCOPED_TRACE(name);
    std::vector<double> v;
    int64_t n = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
    for (int64_t i = 0; i < n; i++) v.push_back(norm(d, start + double(i) * step));
    try {
      expect_match(Tensor::arange(start, stop, step, d, "CPU"), Nd({n}, d, v));
    } catch (const tg::Error& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
}

TEST(TensorCreation, Eye) {
  for (auto [n, d] : std::vector<std::pair<int64_t, DType>>{{4, dt::float32}, {3, dt::int32}, {1, dt::bool_}, {0, dt::float32}, {5, dt::float16}}) {
    SCOPED_TRACE("eye " + std::to_string(n) + " " + d.name());
    Nd ref({n, n}, d);
    for (int64_t i = 0; i < n; i++) ref.v[size_t(i * n + i)] = 1;
    try {
      expect_match(Tensor::eye(n, d, "CPU"), ref);
    } catch (const tg::Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

// the reference itself: a few hand-computed values, so a bug in Nd can't hide a bug in the library
TEST(TensorReference, HandChecked) {
  Nd a({2, 3}, dt::float32, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(a.permute({1, 0}).v, (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(a.flip({1}).v, (std::vector<double>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(a.shrink({{1, 2}, {0, 2}}).v, (std::vector<double>{4, 5}));
  EXPECT_EQ(a.pad({{0, 1}, {1, 0}}, 9).v, (std::vector<double>{9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9}));
  EXPECT_EQ(Nd({2, 1}, dt::float32, {1, 2}).expand({2, 2, 3}).v, (std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(a.sum({1}).v, (std::vector<double>{6, 15}));
  EXPECT_EQ(shape_s(a.sum({0}, true).shape), "(1,3)");
  EXPECT_EQ(a.max().v, (std::vector<double>{6}));
  EXPECT_EQ(a.matmul(a.transpose()).v, (std::vector<double>{14, 32, 32, 77}));
  EXPECT_EQ(shape_s(Nd({4}, dt::float32).matmul(Nd({4}, dt::float32)).shape), "()");
  EXPECT_EQ(Nd({2}, dt::uint8, {5, 3}).sub(Nd({2}, dt::uint8, {10, 1})).v, (std::vector<double>{251, 2}));
  EXPECT_EQ(Nd({2}, dt::int8, {100, -7}).mul(Nd({2}, dt::int8, {2, 3})).v, (std::vector<double>{-56, -21}));
  EXPECT_EQ(Nd({2}, dt::int32, {-7, 7}).idiv(Nd({2}, dt::int32, {2, -2})).v, (std::vector<double>{-3, -3}));
  EXPECT_EQ(Nd({1}, dt::float32, {-2.7}).cast(dt::uint8).v, (std::vector<double>{254}));
  EXPECT_TRUE(wrap_int(dt::uint64, -3) == i128(UINT64_MAX) - 2);
  EXPECT_EQ(a.sum().dt.name(), "float32");
  EXPECT_EQ(Nd({2}, dt::int8).sum().dt.name(), "int32");
  EXPECT_EQ(Nd({2}, dt::uint16).prod().dt.name(), "uint32");
  EXPECT_EQ(Nd({2}, dt::float16).mean().dt.name(), "float16");
  EXPECT_EQ(Nd({2}, dt::int16).mean().dt.name(), "float32");
  EXPECT_NEAR(Nd({2}, dt::float32, {0, 0}).softmax().v[0], 0.5, 1e-15);
  EXPECT_EQ(round_to(dt::float16, 1.0 + 1.0 / 4096), 1.0);
  EXPECT_EQ(round_to(dt::bfloat16, 1.0 + 1.0 / 512), 1.0);
}

}  // namespace
