// The C API fuzzer: every function of include/tinygrad.h (the call table is generated from the header by
// scripts/gen_capi_fuzz.py, so a new function is covered without a new test) is called with random and boundary
// arguments: 0, -1, INT64_MIN/MAX, 2^k+-1, NaN, +-inf, NULL, SIZE_MAX counts, released and garbage handles, tensors of
// every dtype including 0-d and size-0. Each call must return cleanly: a NULL or -1 or a status with the per-thread
// error set and a message, or a result that is consistent (a tensor's ndim, shape and numel agree). Run under
// `make asan`, any out-of-bounds access, leak or undefined behaviour fails the suite too.
//
// TG_FUZZ_CALLS (100000) and TG_FUZZ_SEED override the budget and the seed; `make fuzz` runs a long session.
// Calls that compile and run kernels (realize, to_data) get one call in 400, so a cold run stays under a minute.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tinygrad.h"

namespace {

struct Fuzz;
struct FuzzFn {
  const char* name;
  int expensive;
  void (*call)(Fuzz&);
};
template <class T>
struct Arr {
  T p;
  size_t n;
};
struct Bindings {
  const char* const* names;
  const int64_t* values;
  size_t n;
};

constexpr int64_t I64MIN = std::numeric_limits<int64_t>::min(), I64MAX = std::numeric_limits<int64_t>::max();
constexpr size_t kPoolMax = 48, kMaxPoolNumel = 4096;

struct Fuzz {
  std::mt19937_64 rng;
  std::vector<tg_tensor*> tensors;  // owned references
  std::vector<tg_expr*> exprs;
  std::vector<std::vector<uint8_t>> keep;  // argument buffers alive during one call
  std::vector<std::string> strs;
  std::string fn, args;
  int64_t last_bytes = -1;  // byte size of the last pooled tensor drawn, so to_data sometimes asks for exactly that
  int failures = 0;
  uint64_t calls = 0, errors = 0;

  explicit Fuzz(uint64_t seed) : rng(seed) {}
  ~Fuzz() { clear(); }
  uint64_t r(uint64_t n) { return n ? rng() % n : 0; }
  bool coin(int pct) { return r(100) < uint64_t(pct); }
  template <class T>
  T pick(const std::vector<T>& v) { return v[r(v.size())]; }
  void note(const std::string& s) { args += (args.empty() ? "" : ", ") + s; }
  void fail(const std::string& what) {
    ++failures;
    if (failures <= 20) ADD_FAILURE() << fn << "(" << args << "): " << what << " [last error " << tg_status_name(tg_last_error()) << ": " << tg_last_error_message() << "]";
  }

  // ---- scalars ----
  int64_t i64() {
    static const std::vector<int64_t> b{0, 1, -1, 2, -2, I64MIN, I64MAX, I64MIN + 1, I64MAX - 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536,
                                        int64_t(1) << 31, (int64_t(1) << 31) - 1, -(int64_t(1) << 31), int64_t(1) << 32, (int64_t(1) << 32) + 1,
                                        int64_t(1) << 62, (int64_t(1) << 62) - 1, (int64_t(1) << 62) + 1};
    int64_t v = coin(60) ? pick(b) : int64_t(r(17)) - 8;
    note(std::to_string(v));
    return v;
  }
  int i32() {
    static const std::vector<int> b{0, 1, -1, 2, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()};
    int v = pick(b);
    note(std::to_string(v));
    return v;
  }
  double f64() {
    static const std::vector<double> b{0.0, -0.0, 1.0, -1.0, NAN, INFINITY, -INFINITY, 1e308, -1e308, 1e-308, 5e-324, 9.223372036854775807e18,
                                       1.8446744073709552e19, 0.5, -2.5, 3.0, 65504.0, 1e19, 2147483648.0};
    double v = coin(70) ? pick(b) : double(int64_t(r(2001)) - 1000) / 8;
    note(std::to_string(v));
    return v;
  }
  size_t size() {
    static const std::vector<size_t> b{0, 1, 2, 3, 4, 8, 64, 65, SIZE_MAX, SIZE_MAX / 2 + 1, size_t(1) << 63, size_t(1) << 32};
    size_t v = pick(b);
    note(std::to_string(v));
    return v;
  }
  tg_dtype dtype() {
    static const std::vector<int> b{-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 1000, std::numeric_limits<int>::min()};
    int v = coin(85) ? int(r(13)) : pick(b);
    note("dtype " + std::to_string(v));
    return tg_dtype(v);
  }
  tg_binop binop() {
    int v = coin(90) ? int(r(8)) : pick(std::vector<int>{-1, 8, 77, std::numeric_limits<int>::max()});
    note("binop " + std::to_string(v));
    return tg_binop(v);
  }
  tg_status status() {
    int v = pick(std::vector<int>{-1, 0, 1, 5, 11, 12, 1000});
    note("status " + std::to_string(v));
    return tg_status(v);
  }
  const char* str() {
    static const std::vector<std::string> b{"", "CPU", "cpu", "cpu:0", "CPU:1", "NOPE", "CUDA", "CLANG", "x", "y", std::string(10000, 'A')};
    if (coin(10)) return note("NULL"), nullptr;
    strs.push_back(pick(b));
    note("\"" + strs.back().substr(0, 16) + "\"");
    return strs.back().c_str();
  }

  // ---- handles ----
  tg_tensor* garbage_tensor() { return reinterpret_cast<tg_tensor*>(uintptr_t(0x1000 + 16 * r(4096))); }
  tg_tensor* tensor() {
    uint64_t k = r(100);
    if (k < 5 || tensors.empty()) return note("NULL tensor"), nullptr;
    if (k < 10) return note("garbage tensor"), garbage_tensor();
    tg_tensor* t = pick(tensors);
    tg_dtype d = TG_FLOAT32;
    int64_t n = tg_tensor_numel(t);
    tg_tensor_dtype(t, &d);
    last_bytes = n * int64_t(tg_dtype_size(d));
    note("tensor" + shape_str(t) + " " + tg_dtype_name(d));
    return t;
  }
  tg_tensor* take_tensor() {  // the callee gets our reference (release)
    uint64_t k = r(100);
    if (k < 10 || tensors.empty()) return note("NULL tensor"), nullptr;
    if (k < 20) return note("garbage tensor"), garbage_tensor();
    size_t i = r(tensors.size());
    tg_tensor* t = tensors[i];
    tensors.erase(tensors.begin() + long(i));
    note("owned tensor");
    return t;
  }
  tg_expr* expr() {
    uint64_t k = r(100);
    if (k < 5 || exprs.empty()) return note("NULL expr"), nullptr;
    if (k < 10) return note("garbage expr"), reinterpret_cast<tg_expr*>(uintptr_t(0x2000 + 16 * r(4096)));
    note("expr");
    return pick(exprs);
  }
  tg_expr* take_expr() {
    if (exprs.empty() || coin(15)) return note("NULL expr"), nullptr;
    size_t i = r(exprs.size());
    tg_expr* e = exprs[i];
    exprs.erase(exprs.begin() + long(i));
    note("owned expr");
    return e;
  }

  // ---- arrays with their counts ----
  template <class T>
  T* buffer(size_t n) {
    keep.emplace_back(std::max<size_t>(n, 1) * sizeof(T));
    for (auto& b : keep.back()) b = uint8_t(rng());
    return reinterpret_cast<T*>(keep.back().data());
  }
  Arr<tg_tensor* const*> tensor_array() {
    size_t n = coin(85) ? r(6) : pick(std::vector<size_t>{SIZE_MAX, size_t(1) << 63, 100000});
    if (n > 8) return note("NULL tensors, n=" + std::to_string(n)), Arr<tg_tensor* const*>{nullptr, n};
    auto* p = buffer<tg_tensor*>(n);
    for (size_t i = 0; i < n; i++) p[i] = tensor();
    if (n == 0 && coin(50)) p = nullptr;
    return {p, n};
  }
  Arr<const int64_t*> int_array(size_t per) {
    size_t n = coin(85) ? r(6) : pick(std::vector<size_t>{64, 65, SIZE_MAX, size_t(1) << 63, (size_t(1) << 63) + 1, SIZE_MAX / 2 + 1});
    if (n > 64 || coin(5)) {  // too long to be read: the library must refuse from the count alone
      note(std::string(coin(50) ? "NULL" : "short") + " ints, n=" + std::to_string(n));
      return {n > 64 && coin(50) ? buffer<int64_t>(4) : nullptr, n};
    }
    auto* p = buffer<int64_t>(n * per);
    std::string d = "{";
    for (size_t i = 0; i < n * per; i++) {
      p[i] = coin(75) ? int64_t(r(7)) - 2 : pick(std::vector<int64_t>{I64MIN, I64MAX, int64_t(1) << 40, int64_t(1) << 62, -(int64_t(1) << 62), 4096, 5});
      d += std::to_string(p[i]) + (i + 1 < n * per ? "," : "");
    }
    note(d + "}, n=" + std::to_string(n));
    return {p, n};
  }
  Arr<const void*> in_bytes() {
    size_t n = pick(std::vector<size_t>{0, 1, 2, 4, 8, 12, 16, 24, 48, 64, 96, 128, SIZE_MAX, size_t(1) << 62, size_t(1) << 40});
    note("bytes n=" + std::to_string(n));
    if (n > (1 << 16)) return {nullptr, n};
    return {coin(5) ? nullptr : buffer<uint8_t>(n), n};
  }
  Arr<void*> out_bytes() {
    size_t n = last_bytes >= 0 && coin(60) ? size_t(last_bytes) : pick(std::vector<size_t>{0, 1, 4, 8, 64, 4096, SIZE_MAX, size_t(1) << 62});
    note("out bytes n=" + std::to_string(n));
    if (n > (size_t(1) << 20)) return {nullptr, n};
    return {coin(5) ? nullptr : buffer<uint8_t>(n), n};
  }
  Arr<char*> out_chars() {
    size_t n = pick(std::vector<size_t>{0, 1, 2, 3, 8, 64, 4096, SIZE_MAX});
    note("chars n=" + std::to_string(n));
    if (n > 4096) return {nullptr, n};
    return {coin(5) ? nullptr : buffer<char>(n), n};
  }
  Arr<int64_t*> out_ints() {
    size_t n = coin(85) ? r(9) : pick(std::vector<size_t>{64, SIZE_MAX});
    note("out ints n=" + std::to_string(n));
    if (n > 64) return {nullptr, n};
    return {coin(5) ? nullptr : buffer<int64_t>(n), n};
  }
  int64_t* out_i64() { return coin(10) ? (note("NULL out"), nullptr) : (note("out"), buffer<int64_t>(1)); }
  tg_dtype* out_dtype() { return coin(10) ? (note("NULL out"), nullptr) : (note("out"), buffer<tg_dtype>(1)); }
  tg_counters* counters() {
    if (coin(10)) return note("NULL counters"), nullptr;
    auto* c = buffer<tg_counters>(1);
    c->struct_size = pick(std::vector<size_t>{sizeof(tg_counters), 0, 8, 16, 24, SIZE_MAX});
    note("counters struct_size=" + std::to_string(c->struct_size));
    return c;
  }
  Bindings bindings() {
    size_t n = coin(90) ? r(4) : SIZE_MAX;
    if (n > 8) return note("NULL bindings, n=" + std::to_string(n)), Bindings{nullptr, nullptr, n};
    auto* names = buffer<const char*>(n);
    auto* values = buffer<int64_t>(n);
    for (size_t i = 0; i < n; i++) {
      names[i] = pick(std::vector<const char*>{"x", "y", "z", nullptr, ""});
      values[i] = coin(70) ? int64_t(r(21)) - 10 : pick(std::vector<int64_t>{I64MIN, I64MAX, 0});
    }
    note("bindings n=" + std::to_string(n));
    return {n && coin(5) ? nullptr : names, n && coin(5) ? nullptr : values, n};
  }

  // ---- results ----
  static std::string shape_str(tg_tensor* t) {
    int64_t s[64];
    int64_t n = tg_tensor_ndim(t);
    if (n < 0 || n > 64 || tg_tensor_shape(t, s, 64) != TG_OK) return "(?)";
    std::string o = "(";
    for (int64_t i = 0; i < n; i++) o += std::to_string(s[i]) + (i + 1 < n ? "," : "");
    return o + ")";
  }
  void expect_error_set(const char* what) {
    errors++;
    if (tg_last_error() == TG_OK) fail(std::string(what) + " without an error set");
    else if (!*tg_last_error_message()) fail(std::string(what) + " with an empty error message");
  }
  void ret_tensor(tg_tensor* t) {
    if (!t) return expect_error_set("NULL");
    if (tg_last_error() != TG_OK) fail("a tensor and an error at once");
    int64_t n = tg_tensor_ndim(t), numel = tg_tensor_numel(t), s[64];
    if (n < 0 || n > 64 || tg_tensor_shape(t, s, 64) != TG_OK) fail("a returned tensor has no readable shape");
    else {
      __int128 p = 1;
      for (int64_t i = 0; i < n; i++) {
        if (s[i] < 0) fail("negative dim in a returned tensor");
        p *= s[i];
        if (p > I64MAX) p = I64MAX;  // an overflowing shape shows up as a mismatch below
      }
      if (p != numel) fail("numel " + std::to_string(numel) + " disagrees with shape " + shape_str(t));
    }
    if (numel >= 0 && numel <= int64_t(kMaxPoolNumel)) {
      if (tensors.size() >= kPoolMax) {
        size_t i = r(tensors.size());
        tg_tensor_release(tensors[i]);
        tensors[i] = t;
      } else tensors.push_back(t);
    } else tg_tensor_release(t);
  }
  void ret_expr(tg_expr* e) {
    if (!e) return expect_error_set("NULL");
    if (exprs.size() >= 32) {
      size_t i = r(exprs.size());
      tg_expr_release(exprs[i]);
      exprs[i] = e;
    } else exprs.push_back(e);
  }
  void ret_status(tg_status s) {
    if (s != tg_last_error()) fail(std::string("returned ") + tg_status_name(s) + " but tg_last_error() is " + tg_status_name(tg_last_error()));
    if (s != TG_OK) expect_error_set("an error status");
  }
  void ret_str(const char* s) {
    if (s) (void)std::strlen(s);
  }
  void ret_i64(int64_t) {}

  // ---- pools ----
  void clear() {
    for (auto* t : tensors) tg_tensor_release(t);
    for (auto* e : exprs) tg_expr_release(e);
    tensors.clear(), exprs.clear();
  }
  void refill() {
    clear();
    static const std::vector<std::vector<int64_t>> shapes{{}, {0}, {1}, {3}, {2, 3}, {2, 1, 4}, {4, 4}, {1, 0, 2}, {3, 1}, {1, 3}};
    static const tg_dtype dts[] = {TG_FLOAT32, TG_FLOAT32, TG_INT32, TG_BOOL, TG_FLOAT16, TG_BFLOAT16, TG_UINT8, TG_INT8, TG_INT64, TG_UINT64, TG_FLOAT64, TG_INT16, TG_UINT32};
    for (int i = 0; i < 16; i++) {
      auto s = pick(shapes);
      tg_dtype d = dts[r(sizeof dts / sizeof *dts)];
      int64_t n = 1;
      for (auto x : s) n *= x;
      std::vector<uint8_t> data(size_t(n) * tg_dtype_size(d) + 1);
      for (auto& b : data) b = d == TG_BOOL ? uint8_t(r(2)) : coin(80) ? uint8_t(r(4)) : uint8_t(rng());  // mostly small, some NaN/huge
      tg_tensor* t = tg_tensor_from_data(data.data(), size_t(n) * tg_dtype_size(d), d, s.data(), s.size(), nullptr);
      EXPECT_NE(t, nullptr) << tg_last_error_message();
      if (t) tensors.push_back(t);
    }
    exprs.push_back(tg_expr_variable("x", 0, 10));
    exprs.push_back(tg_expr_variable("y", -5, 5));
    exprs.push_back(tg_expr_const(0));
    exprs.push_back(tg_expr_const(3));
    exprs.push_back(tg_expr_const(I64MIN));
  }
};

#include "capi_fuzz_calls.inc"

uint64_t env_u64(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : dflt;
}

TEST(CApiFuzz, EveryFunctionSurvivesRandomAndBoundaryArguments) {
  uint64_t seed = env_u64("TG_FUZZ_SEED", 20261122), total = env_u64("TG_FUZZ_CALLS", 100000);
  Fuzz f(seed);
  std::vector<const FuzzFn*> cheap, expensive;
  for (auto& fn : kFuzzFns) (fn.expensive ? expensive : cheap).push_back(&fn);
  std::vector<uint64_t> per_fn(std::size(kFuzzFns), 0);
  for (uint64_t i = 0; i < total && f.failures < 100; i++) {
    if (i % 1000 == 0) f.refill();
    const FuzzFn* fn = i % 400 == 399 && !expensive.empty() ? f.pick(expensive) : f.pick(cheap);
    f.fn = fn->name, f.args.clear(), f.keep.clear(), f.strs.clear(), f.last_bytes = -1;
    tg_clear_error();
    fn->call(f);
    f.calls++, per_fn[size_t(fn - kFuzzFns)]++;
  }
  f.clear();
  tg_clear_error();
  for (size_t i = 0; i < std::size(kFuzzFns); i++)
    EXPECT_GT(per_fn[i], 0u) << kFuzzFns[i].name << " was never called: raise TG_FUZZ_CALLS";
  std::printf("[ info     ] C API fuzz: seed %llu, %llu calls over %zu functions, %llu returned errors\n", (unsigned long long)seed,
              (unsigned long long)f.calls, std::size(kFuzzFns), (unsigned long long)f.errors);
  EXPECT_GE(f.calls, std::min<uint64_t>(total, 100000));
}

}  // namespace
