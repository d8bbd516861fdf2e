// DType: promotion lattice (against a hand-written copy of tinygrad's table), sizes, names, the C enum round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "tinygrad.h"
#include "helpers.h"
#include "uop/dtype.h"

using namespace tg;

namespace {
// the dtypes in tg_dtype / priority order, with short names for the table below
const char* kShort[] = {"b", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"};
constexpr int kN = 13;
// least_upper_dtype(row, col) in tinygrad's lattice, written out by hand (no fp8 here, so int64+uint64 meet at float16)
const char* kPromo[kN] =
    {
        // b    i8   u8   i16  u16  i32  u32  i64  u64  f16  bf16  f32  f64
        "b    i8   u8   i16  u16  i32  u32  i64  u64  f16  bf16  f32  f64",  // b
        "i8   i8   i16  i16  i32  i32  i64  i64  f16  f16  bf16  f32  f64",  // i8
        "u8   i16  u8   i16  u16  i32  u32  i64  u64  f16  bf16  f32  f64",  // u8
        "i16  i16  i16  i16  i32  i32  i64  i64  f16  f16  bf16  f32  f64",  // i16
        "u16  i32  u16  i32  u16  i32  u32  i64  u64  f16  bf16  f32  f64",  // u16
        "i32  i32  i32  i32  i32  i32  i64  i64  f16  f16  bf16  f32  f64",  // i32
        "u32  i64  u32  i64  u32  i64  u32  i64  u64  f16  bf16  f32  f64",  // u32
        "i64  i64  i64  i64  i64  i64  i64  i64  f16  f16  bf16  f32  f64",  // i64
        "u64  f16  u64  f16  u64  f16  u64  f16  u64  f16  bf16  f32  f64",  // u64
        "f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32   f32  f64",  // f16
        "bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  bf16  f32  f64",  // bf16
        "f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32   f32  f64",  // f32
        "f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64   f64  f64",  // f64
};
int short_index(const std::string& s) {
  for (int i = 0; i < kN; i++)
    if (s == kShort[i]) return i;
  ADD_FAILURE() << "bad table entry " << s;
  return 0;
}
std::vector<std::vector<int>> promo_table() {
  std::vector<std::vector<int>> t;
  for (auto row : kPromo) {
    std::istringstream in(row);
    std::vector<int> r;
    for (std::string w; in >> w;) r.push_back(short_index(w));
    EXPECT_EQ(r.size(), size_t(kN)) << row;
    t.push_back(r);
  }
  return t;
}
DType dt(int i) { return dtypes::all().at(size_t(i)); }
}  // namespace

TEST(DType, PromotionTableMatchesTinygrad) {
  auto t = promo_table();
  ASSERT_EQ(dtypes::all().size(), size_t(kN));
  for (int a = 0; a < kN; a++)
    for (int b = 0; b < kN; b++) {
      EXPECT_EQ(t[a][b], t[b][a]) << "hand table not symmetric at " << kShort[a] << "," << kShort[b];
      EXPECT_EQ(least_upper_dtype(dt(a), dt(b)), dt(t[a][b])) << dt(a).name() << " + " << dt(b).name();
    }
}

TEST(DType, PromotionNamedCases) {
  struct C {
    DType a, b, want;
  } cases[] = {
      {dtypes::int8, dtypes::uint8, dtypes::int16},      {dtypes::int32, dtypes::uint32, dtypes::int64},
      {dtypes::int64, dtypes::uint64, dtypes::float16},  {dtypes::float16, dtypes::bfloat16, dtypes::float32},
      {dtypes::bool_, dtypes::float16, dtypes::float16}, {dtypes::int32, dtypes::float16, dtypes::float16},
      {dtypes::uint8, dtypes::int8, dtypes::int16},      {dtypes::uint64, dtypes::bfloat16, dtypes::bfloat16},
  };
  for (auto& c : cases) EXPECT_EQ(least_upper_dtype(c.a, c.b), c.want) << c.a.name() << " + " << c.b.name();
}

TEST(DType, PromotionLatticeLaws) {
  for (int a = 0; a < kN; a++) {
    EXPECT_EQ(least_upper_dtype(dt(a), dt(a)), dt(a));                 // idempotent
    EXPECT_EQ(least_upper_dtype(dtypes::bool_, dt(a)), dt(a));         // bool is the bottom
    EXPECT_EQ(least_upper_dtype(dt(a), dtypes::float64), dtypes::float64);  // float64 is the top
    EXPECT_EQ(least_upper_dtype(dt(a).vec(4), dt(a)), dt(a));          // vectors promote as their scalar
    for (int b = 0; b < kN; b++) {
      DType ab = least_upper_dtype(dt(a), dt(b));
      EXPECT_EQ(ab, least_upper_dtype(dt(b), dt(a)));                  // symmetric
      EXPECT_EQ(least_upper_dtype(ab, dt(a)), ab);                     // an upper bound of both
      EXPECT_EQ(least_upper_dtype(ab, dt(b)), ab);
      // the least of the common upper bounds, by priority (not associative: int64+uint64 has two minimal bounds)
      for (int c = 0; c < kN; c++)
        if (least_upper_dtype(dt(a), dt(c)) == dt(c) && least_upper_dtype(dt(b), dt(c)) == dt(c)) {
          EXPECT_LE(int(ab.scalar), c) << dt(a).name() << " + " << dt(b).name();
        }
    }
  }
}

TEST(DType, AccumulatorAndFloatPromotion) {
  // tinygrad's sum_acc_dtype: unsigned -> meet with uint32, int/bool -> meet with int32, float -> meet with float32
  std::pair<DType, DType> acc[] = {{dtypes::bool_, dtypes::int32},     {dtypes::int8, dtypes::int32},      {dtypes::uint8, dtypes::uint32},
                                   {dtypes::int16, dtypes::int32},     {dtypes::uint16, dtypes::uint32},   {dtypes::int32, dtypes::int32},
                                   {dtypes::uint32, dtypes::uint32},   {dtypes::int64, dtypes::int64},     {dtypes::uint64, dtypes::uint64},
                                   {dtypes::float16, dtypes::float32}, {dtypes::bfloat16, dtypes::float32}, {dtypes::float64, dtypes::float64}};
  for (auto& [d, want] : acc) EXPECT_EQ(sum_acc_dtype(d), want) << d.name();
  EXPECT_EQ(least_upper_float(dtypes::int32), dtypes::float32);
  EXPECT_EQ(least_upper_float(dtypes::float16), dtypes::float16);
  EXPECT_EQ(least_upper_float(dtypes::bool_), dtypes::float32);
}

TEST(DType, SizesKindsAndRanges) {
  struct C {
    DType d;
    int size;
    bool is_int, is_unsigned, is_float, is_bool;
    double lo, hi;
  } cases[] = {
      {dtypes::bool_, 1, false, false, false, true, 0, 1},
      {dtypes::int8, 1, true, false, false, false, -128, 127},
      {dtypes::uint8, 1, true, true, false, false, 0, 255},
      {dtypes::int16, 2, true, false, false, false, -32768, 32767},
      {dtypes::uint16, 2, true, true, false, false, 0, 65535},
      {dtypes::int32, 4, true, false, false, false, -2147483648.0, 2147483647.0},
      {dtypes::uint32, 4, true, true, false, false, 0, 4294967295.0},
      {dtypes::int64, 8, true, false, false, false, -9223372036854775808.0, 9223372036854775807.0},
      {dtypes::uint64, 8, true, true, false, false, 0, 18446744073709551615.0},
      {dtypes::float16, 2, false, false, true, false, -INFINITY, INFINITY},
      {dtypes::bfloat16, 2, false, false, true, false, -INFINITY, INFINITY},
      {dtypes::float32, 4, false, false, true, false, -INFINITY, INFINITY},
      {dtypes::float64, 8, false, false, true, false, -INFINITY, INFINITY},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.d.name());
    EXPECT_EQ(c.d.itemsize(), c.size);
    EXPECT_EQ(c.d.vec(4).itemsize(), 4 * c.size);
    EXPECT_EQ(c.d.ptr_to().itemsize(), 8);
    EXPECT_EQ(dtypes::is_int(c.d), c.is_int);
    EXPECT_EQ(dtypes::is_unsigned(c.d), c.is_unsigned);
    EXPECT_EQ(dtypes::is_float(c.d), c.is_float);
    EXPECT_EQ(dtypes::is_bool(c.d), c.is_bool);
    EXPECT_EQ(dtypes::min(c.d), c.lo);
    EXPECT_EQ(dtypes::max(c.d), c.hi);
  }
  EXPECT_EQ(dtypes::void_.itemsize(), 0);
  EXPECT_EQ(dtypes::index, dtypes::int64);
}

TEST(DType, NamesVectorsPointers) {
  std::pair<DType, const char*> names[] = {
      {dtypes::float32, "float32"},
      {dtypes::bfloat16, "bfloat16"},
      {dtypes::uint8, "uint8"},
      {dtypes::float32.vec(4), "float32.vec(4)"},
      {dtypes::int32.ptr_to(), "int32.ptr()"},
      {dtypes::float16.ptr_to(16), "float16.ptr(16)"},
      {dtypes::float32.ptr_to(8, AddrSpace::Local), "float32.ptr(8, local)"},
      {dtypes::float32.vec(4).ptr_to(), "float32.vec(4).ptr()"},
  };
  for (auto& [d, want] : names) EXPECT_EQ(d.name(), want);
  DType v = dtypes::float32.vec(4), p = dtypes::float32.ptr_to(16);
  EXPECT_EQ(v.base(), dtypes::float32);
  EXPECT_EQ(dtypes::float32.vec(1), dtypes::float32);
  EXPECT_EQ(p.deref(), dtypes::float32);
  EXPECT_EQ(p.base(), dtypes::float32);
  EXPECT_NE(p, dtypes::float32.ptr_to(8));  // the size is part of a pointer type
  EXPECT_NE(p, dtypes::float32.ptr_to(16, AddrSpace::Local));
  EXPECT_NE(v, dtypes::float32);
  EXPECT_NE(v.hash(), dtypes::float32.hash());
}

TEST(DType, FromName) {
  std::pair<const char*, DType> names[] = {{"float", dtypes::float32}, {"half", dtypes::float16}, {"double", dtypes::float64},
                                           {"int", dtypes::int32},     {"long", dtypes::int64},   {"uchar", dtypes::uint8},
                                           {"bool", dtypes::bool_},    {"bfloat16", dtypes::bfloat16}};
  for (auto& [n, d] : names) EXPECT_EQ(dtypes::from_name(n), d) << n;
  for (int i = 0; i < kN; i++) EXPECT_EQ(dtypes::from_name(dt(i).name()), dt(i));  // every name round-trips
  EXPECT_FALSE(dtypes::from_name("float8"));
  EXPECT_FALSE(dtypes::from_name(""));
}

TEST(DType, CApiEnumRoundTrip) {
  auto t = promo_table();
  const size_t sizes[] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
  for (int a = 0; a < kN; a++) {
    tg_dtype ea = tg_dtype(a);
    EXPECT_EQ(tg_dtype_size(ea), sizes[a]);
    ASSERT_NE(tg_dtype_name(ea), nullptr);
    EXPECT_EQ(dtypes::from_name(tg_dtype_name(ea)), dt(a)) << tg_dtype_name(ea);
    for (int b = 0; b < kN; b++) {
      tg_dtype out = TG_BOOL;
      ASSERT_EQ(tg_dtype_promote(ea, tg_dtype(b), &out), TG_OK);
      EXPECT_EQ(int(out), t[a][b]) << kShort[a] << "," << kShort[b];
    }
  }
  EXPECT_EQ(tg_dtype_size(tg_dtype(99)), 0u);
  EXPECT_EQ(tg_dtype_size(tg_dtype(-1)), 0u);
  EXPECT_EQ(tg_dtype_name(tg_dtype(13)), nullptr);
  tg_dtype out;
  EXPECT_EQ(tg_dtype_promote(tg_dtype(13), TG_INT8, &out), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tg_last_error_message()).find("unknown dtype"), std::string::npos);
  EXPECT_EQ(tg_dtype_promote(TG_INT8, TG_INT8, nullptr), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tg_last_error_message()).find("out is NULL"), std::string::npos);
}

TEST(DType, VecOfOneKeepsPointer) {  // known bug in dtype.cpp: vec(1) rebuilds the scalar and drops ptr/size
  DType p = dtypes::float32.ptr_to(16, AddrSpace::Local);
  EXPECT_EQ(p.vec(1), p);
}

// the software half conversions (helpers.h) against the compiler's _Float16 where it has one (x86-64): every half back
// and forth, and floats across the whole bit range (a stride through all 2^32 patterns, plus the rounding boundaries)
#if defined(__x86_64__) && defined(__FLT16_MAX__)
TEST(DType, SoftwareHalfMatchesFloat16) {
  for (uint32_t h = 0; h < 0x10000; h++) {
    _Float16 x;
    uint16_t hb = uint16_t(h);
    std::memcpy(&x, &hb, 2);
    float f = tg::f16_bits_to_f32(hb), want = float(x);
    ASSERT_TRUE(std::memcmp(&f, &want, 4) == 0 || (std::isnan(f) && std::isnan(want))) << std::hex << h;
    if (!std::isnan(f)) ASSERT_EQ(tg::f32_to_f16_bits(f), hb) << std::hex << h;
  }
  auto check = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    _Float16 x = _Float16(f);
    uint16_t want;
    std::memcpy(&want, &x, 2);
    uint16_t got = tg::f32_to_f16_bits(f);
    if (std::isnan(f)) return (got & 0x7c00) == 0x7c00 && (got & 0x3ff) != 0 && (got & 0x8000) == (want & 0x8000);
    return got == want;
  };
  for (uint64_t b = 0; b < (1ull << 32); b += 4099) ASSERT_TRUE(check(uint32_t(b))) << std::hex << b;
  for (uint32_t h = 0; h < 0x7c00; h++)  // halfway between neighbouring halves, and one bit either side
    for (int sign = 0; sign < 2; sign++) {
      float lo = tg::f16_bits_to_f32(uint16_t(h)), hi = tg::f16_bits_to_f32(uint16_t(h + 1));
      float mid = (lo + hi) / 2;  // exact in float
      uint32_t m;
      std::memcpy(&m, &mid, 4);
      m |= uint32_t(sign) << 31;
      ASSERT_TRUE(check(m) && check(m - 1) && check(m + 1)) << std::hex << h;
    }
}
#endif
