/*
 * tinygrad.hpp: a header-only C++17 (and C++20) RAII layer over libtinygrad's C ABI (tinygrad.h).
 *
 * Everything here lives on the caller's side and calls only tg_* functions, so it works against any libtinygrad.so of
 * the same major version. The namespace is `tinygrad` (not `tg`, which the library's own C++ sources use internally).
 *  - Handles (Tensor, Expr, Module, Optimizer, State, Plan, Jit) own one reference each: the destructor releases it,
 *    a move transfers it, a copy takes another (tg_*_retain; Plan and Jit have no retain and are move-only). A
 *    default-constructed handle is empty (NULL): passed where the C API takes an optional tensor, it means "none".
 *  - Every failing call throws tinygrad::Error (a std::runtime_error) carrying the library's status and message;
 *    what() is the C message, code_name() the status name ("TG_ERROR_SHAPE").
 *  - Threads: as in the C API, one handle is used by one thread at a time; distinct handles from distinct threads.
 *    The error state the exceptions are built from is per thread, so an exception always describes its own call.
 *  - Comparison operators (==, <, ...) between tensors build bool Tensors, like tinygrad's; they don't compare handles.
 */
#ifndef TINYGRAD_HPP
#define TINYGRAD_HPP

#include <tinygrad.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tinygrad {

// ---- errors -----------------------------------------------------------------------------------------------------------
class Error : public std::runtime_error {
 public:
  Error(tg_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  tg_status status() const noexcept { return status_; }
  const char* code_name() const noexcept { return tg_status_name(status_); }

 private:
  tg_status status_;
};

namespace detail {
// The one place C failures become exceptions: the code and message are this thread's last error.
[[noreturn]] inline void raise(tg_status s = tg_last_error()) {
  throw Error(s == TG_OK ? TG_ERROR_INTERNAL : s, tg_last_error_message());
}
inline void check(tg_status s) {
  if (s != TG_OK) raise(s);
}
template <class P>
P* check(P* p) {
  if (!p) raise();
  return p;
}
inline int64_t check(int64_t v, int64_t err) {
  if (v == err) raise();
  return v;
}
// For results where the error value is also valid (@errors(0, last_error)): clear before, look after.
template <class F>
auto check_cleared(F f) {
  tg_clear_error();
  auto v = f();
  if (tg_last_error() != TG_OK) raise();
  return v;
}
inline std::string str(const char* s) { return s ? s : ""; }

// A handle owning one reference. Move-only: Plan and Jit have no retain.
template <class C, void (*Release)(C*)>
class Unique {
 public:
  Unique() noexcept = default;
  explicit Unique(C* adopt) noexcept : p_(adopt) {}
  Unique(Unique&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Unique& operator=(Unique&& o) noexcept {
    if (this != &o) Release(std::exchange(p_, std::exchange(o.p_, nullptr)));
    return *this;
  }
  ~Unique() { Release(p_); }
  C* raw() const noexcept { return p_; }                     // borrowed
  C* into_raw() noexcept { return std::exchange(p_, nullptr); }  // the reference becomes the caller's
  explicit operator bool() const noexcept { return p_ != nullptr; }

 protected:
  C* p_ = nullptr;
};

// A handle whose copies share the object through the library's reference count.
template <class C, C* (*Retain)(C*), void (*Release)(C*)>
class Shared : public Unique<C, Release> {
  using Base = Unique<C, Release>;

 public:
  using Base::Base;
  Shared() noexcept = default;
  Shared(const Shared& o) : Base(o.p_ ? check(Retain(o.p_)) : nullptr) {}
  Shared(Shared&&) noexcept = default;
  Shared& operator=(const Shared& o) { return o.p_ == this->p_ ? *this : *this = Shared(o); }
  Shared& operator=(Shared&&) noexcept = default;
};
}  // namespace detail

// ---- dtypes -----------------------------------------------------------------------------------------------------------
enum class DType : int32_t {
  Bool = TG_BOOL, Int8 = TG_INT8, UInt8 = TG_UINT8, Int16 = TG_INT16, UInt16 = TG_UINT16, Int32 = TG_INT32,
  UInt32 = TG_UINT32, Int64 = TG_INT64, UInt64 = TG_UINT64, Float16 = TG_FLOAT16, BFloat16 = TG_BFLOAT16,
  Float32 = TG_FLOAT32, Float64 = TG_FLOAT64,
};
inline tg_dtype c(DType d) { return static_cast<tg_dtype>(d); }
inline size_t dtype_size(DType d) { return static_cast<size_t>(detail::check(static_cast<int64_t>(tg_dtype_size(c(d))), 0)); }
inline std::string dtype_name(DType d) { return detail::check(tg_dtype_name(c(d))); }
inline DType promote(DType a, DType b) {
  tg_dtype out;
  detail::check(tg_dtype_promote(c(a), c(b), &out));
  return static_cast<DType>(out);
}
inline bool is_float(DType d) { return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64; }

// The dtype of a C++ element type; types without one (float16 has no standard C++ type) don't compile.
template <class T>
struct dtype_of;
#define TINYGRAD_DTYPE_OF(T, D) \
  template <>                   \
  struct dtype_of<T> {          \
    static constexpr DType value = DType::D; \
  };
TINYGRAD_DTYPE_OF(bool, Bool)
TINYGRAD_DTYPE_OF(int8_t, Int8)
TINYGRAD_DTYPE_OF(uint8_t, UInt8)
TINYGRAD_DTYPE_OF(int16_t, Int16)
TINYGRAD_DTYPE_OF(uint16_t, UInt16)
TINYGRAD_DTYPE_OF(int32_t, Int32)
TINYGRAD_DTYPE_OF(uint32_t, UInt32)
TINYGRAD_DTYPE_OF(int64_t, Int64)
TINYGRAD_DTYPE_OF(uint64_t, UInt64)
TINYGRAD_DTYPE_OF(float, Float32)
TINYGRAD_DTYPE_OF(double, Float64)
#undef TINYGRAD_DTYPE_OF
template <class T>
constexpr DType dtype_of_v = dtype_of<T>::value;

// A borrowed list of int64s for shapes, axes, pads: {2, 3}, a std::vector, or nothing ({}).
class Ints {
 public:
  Ints() noexcept = default;
  // only as a parameter: the list lives until the call returns
  Ints(std::initializer_list<int64_t> l) noexcept { p_ = l.begin(), n_ = l.size(); }
  Ints(const std::vector<int64_t>& v) noexcept : p_(v.data()), n_(v.size()) {}
  template <size_t N>
  Ints(const std::array<int64_t, N>& a) noexcept : p_(a.data()), n_(N) {}
  const int64_t* data() const noexcept { return n_ ? p_ : nullptr; }
  size_t size() const noexcept { return n_; }
  int64_t numel() const noexcept {
    int64_t n = 1;
    for (size_t i = 0; i < n_; i++) n *= p_[i];
    return n;
  }

 private:
  const int64_t* p_ = nullptr;
  size_t n_ = 0;
};
using Pair = std::array<int64_t, 2>;  // (h, w) of convolutions and pools

class Tensor;
class Expr;
class Uop;
class Index;
inline void realize(const std::vector<Tensor>& ts);

// start:stop:step of an index; a field is used only where its has_* flag is set (Python's None otherwise)
struct Slice {
  bool has_start = false, has_stop = false, has_step = false;
  int64_t start = 0, stop = 0, step = 1;
};
// ---- tensors ----------------------------------------------------------------------------------------------------------
class Tensor : public detail::Shared<tg_tensor, tg_tensor_retain, tg_tensor_release> {
  using Base = detail::Shared<tg_tensor, tg_tensor_retain, tg_tensor_release>;

 public:
  using Base::Base;
  // A new reference from the C API: NULL (failure) throws.
  static Tensor adopt(tg_tensor* p) { return Tensor(detail::check(p)); }

  // creation
  template <class T>
  static Tensor from_vector(const std::vector<T>& data, Ints shape, const char* device = nullptr) {
    if (static_cast<int64_t>(data.size()) != shape.numel())
      throw Error(TG_ERROR_SHAPE, "from_vector: " + std::to_string(data.size()) + " values for a shape of " +
                                      std::to_string(shape.numel()) + " elements");
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed bits: unpack to one byte per element
      std::unique_ptr<bool[]> b(new bool[data.size() + 1]);
      for (size_t i = 0; i < data.size(); i++) b[i] = data[i];
      return from_data(b.get(), data.size() * sizeof(bool), DType::Bool, shape, device);
    } else {
      return from_data(data.data(), data.size() * sizeof(T), dtype_of_v<T>, shape, device);
    }
  }
  template <class T>
  static Tensor from_vector(const std::vector<T>& data, const char* device = nullptr) {
    return from_vector(data, {static_cast<int64_t>(data.size())}, device);
  }
  template <class T>
  static Tensor from_vector(std::initializer_list<T> data, Ints shape, const char* device = nullptr) {
    return from_vector(std::vector<T>(data), shape, device);
  }
  template <class T>
  static Tensor from_vector(std::initializer_list<T> data, const char* device = nullptr) {
    return from_vector(std::vector<T>(data), device);
  }
  template <class T>
  static Tensor scalar(T v, const char* device = nullptr) { return from_vector(std::vector<T>{v}, Ints{}, device); }
  static Tensor from_data(const void* data, size_t nbytes, DType dtype, Ints shape, const char* device = nullptr) {
    return adopt(tg_tensor_from_data(data, nbytes, c(dtype), shape.data(), shape.size(), device));
  }
  static Tensor empty(Ints shape, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_empty(shape.data(), shape.size(), c(dt), device));
  }
  static Tensor zeros(Ints shape, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_zeros(shape.data(), shape.size(), c(dt), device));
  }
  static Tensor ones(Ints shape, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_ones(shape.data(), shape.size(), c(dt), device));
  }
  static Tensor full(Ints shape, double value, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_full(shape.data(), shape.size(), value, c(dt), device));
  }
  static Tensor arange(double start, double stop, double step = 1, DType dt = DType::Int32, const char* device = nullptr) {
    return adopt(tg_tensor_arange(start, stop, step, c(dt), device));
  }
  static Tensor arange(double stop, DType dt = DType::Int32) { return arange(0, stop, 1, dt); }
  static Tensor eye(int64_t n, DType dt = DType::Float32, const char* device = nullptr) { return adopt(tg_tensor_eye(n, c(dt), device)); }
  static Tensor linspace(double start, double stop, int64_t steps, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_linspace(start, stop, steps, c(dt), device));
  }
  static Tensor from_idx(const std::string& path, const char* device = nullptr) { return adopt(tg_tensor_from_idx(path.c_str(), device)); }
  // DLPack: takes `managed` on success (the library calls its deleter); the caller keeps it when this throws.
  static Tensor from_dlpack(DLManagedTensor* managed) { return adopt(tg_tensor_from_dlpack(managed)); }
  DLManagedTensor* to_dlpack() const { return detail::check(tg_tensor_to_dlpack(p_)); }

  // random numbers (tg_manual_seed makes them reproducible)
  static Tensor rand(Ints shape, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_rand(shape.data(), shape.size(), c(dt), device));
  }
  static Tensor randn(Ints shape, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_randn(shape.data(), shape.size(), c(dt), device));
  }
  static Tensor uniform(Ints shape, double low = 0, double high = 1, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_uniform(shape.data(), shape.size(), low, high, c(dt), device));
  }
  static Tensor normal(Ints shape, double mean = 0, double std = 1, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_normal(shape.data(), shape.size(), mean, std, c(dt), device));
  }
  static Tensor randint(Ints shape, int64_t low, int64_t high, DType dt = DType::Int32, const char* device = nullptr) {
    return adopt(tg_tensor_randint(shape.data(), shape.size(), low, high, c(dt), device));
  }
  static Tensor scaled_uniform(Ints shape, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_scaled_uniform(shape.data(), shape.size(), c(dt), device));
  }
  static Tensor glorot_uniform(Ints shape, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_glorot_uniform(shape.data(), shape.size(), c(dt), device));
  }
  static Tensor kaiming_uniform(Ints shape, double a = 0.01, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_kaiming_uniform(shape.data(), shape.size(), a, c(dt), device));
  }
  static Tensor kaiming_normal(Ints shape, double a = 0.01, DType dt = DType::Float32, const char* device = nullptr) {
    return adopt(tg_tensor_kaiming_normal(shape.data(), shape.size(), a, c(dt), device));
  }
  static Tensor randperm(int64_t n, DType dt = DType::Int32, const char* device = nullptr) { return adopt(tg_tensor_randperm(n, c(dt), device)); }
  Tensor multinomial(int64_t num_samples = 1, bool replacement = false) const { return op(tg_tensor_multinomial, num_samples, int(replacement)); }
  Tensor rand_like() const { return op(tg_tensor_rand_like); }
  Tensor randn_like() const { return op(tg_tensor_randn_like); }
  Tensor full_like(double value) const { return op(tg_tensor_full_like, value); }
  Tensor zeros_like() const { return op(tg_tensor_zeros_like); }
  Tensor ones_like() const { return op(tg_tensor_ones_like); }

  // properties
  int64_t ndim() const { return detail::check(tg_tensor_ndim(p_), -1); }
  int64_t numel() const { return detail::check(tg_tensor_numel(p_), -1); }
  std::vector<int64_t> shape() const {
    std::vector<int64_t> s(static_cast<size_t>(ndim()));
    detail::check(tg_tensor_shape(p_, s.data(), s.size()));
    return s;
  }
  DType dtype() const {
    tg_dtype d;
    detail::check(tg_tensor_dtype(p_, &d));
    return static_cast<DType>(d);
  }
  std::string device() const { return detail::check(tg_tensor_device(p_)); }
  Tensor to(const char* device) const { return op(tg_tensor_to, device); }
  // this tensor (every handle on it) takes x's graph, dtype and device (tinygrad's replace)
  void replace(const Tensor& x) { detail::check(tg_tensor_replace(p_, x.p_)); }
  // sharded over devices (docs/distributed.md): split along axis, or a whole copy on each with axis -1
  Tensor shard(const std::vector<std::string>& devices, int64_t axis = -1) const {
    std::vector<const char*> names;
    for (auto& d : devices) names.push_back(d.c_str());
    return adopt(tg_tensor_shard(p_, names.data(), names.size(), axis));
  }
  Tensor shard_like(const Tensor& like) const { return op(tg_tensor_shard_like, like.p_); }
  std::vector<std::string> devices() const {
    int64_t n = detail::check(tg_tensor_device_count(p_), int64_t(-1));
    std::vector<std::string> out;
    for (int64_t i = 0; i < n; i++) out.push_back(detail::check(tg_tensor_device_at(p_, size_t(i))));
    return out;
  }
  int64_t shard_axis() const {
    int64_t a;
    detail::check(tg_tensor_shard_axis(p_, &a));
    return a;
  }
  std::vector<std::pair<int64_t, int64_t>> shard_bounds() const {
    std::vector<int64_t> b(2 * devices().size());
    detail::check(tg_tensor_shard_bounds(p_, b.data(), b.size()));
    std::vector<std::pair<int64_t, int64_t>> out;
    for (size_t i = 0; i + 1 < b.size(); i += 2) out.push_back({b[i], b[i + 1]});
    return out;
  }
  Tensor shard_get(size_t i) const { return op(tg_tensor_shard_get, i); }

  // data out: realizes. T must be the tensor's element type (no silent conversion: cast() first).
  template <class T>
  std::vector<T> to_vector() const {
    if (dtype() != dtype_of_v<T>)
      throw Error(TG_ERROR_DTYPE, "to_vector<" + dtype_name(dtype_of_v<T>) + ">: the tensor is " + dtype_name(dtype()));
    auto n = static_cast<size_t>(numel());
    if constexpr (std::is_same_v<T, bool>) {
      std::unique_ptr<bool[]> b(new bool[n + 1]);
      detail::check(tg_tensor_to_data(p_, b.get(), n * sizeof(bool)));
      return std::vector<bool>(b.get(), b.get() + n);
    } else {
      std::vector<T> v(n);
      detail::check(tg_tensor_to_data(p_, v.data(), n * sizeof(T)));
      return v;
    }
  }
  template <class T>
  T item() const {
    if (numel() != 1) throw Error(TG_ERROR_SHAPE, "item: the tensor has " + std::to_string(numel()) + " elements, not 1");
    return to_vector<T>()[0];
  }
  void to_data(void* out, size_t nbytes) const { detail::check(tg_tensor_to_data(p_, out, nbytes)); }

  // elementwise: Tensor or scalar operands
  Tensor add(const Tensor& b) const { return op(tg_tensor_add, b.p_); }
  Tensor sub(const Tensor& b) const { return op(tg_tensor_sub, b.p_); }
  Tensor mul(const Tensor& b) const { return op(tg_tensor_mul, b.p_); }
  Tensor div(const Tensor& b) const { return op(tg_tensor_div, b.p_); }
  Tensor pow(const Tensor& b) const { return op(tg_tensor_pow, b.p_); }
  Tensor add(double b) const { return op(tg_tensor_add_scalar, b); }
  Tensor sub(double b) const { return op(tg_tensor_sub_scalar, b); }
  Tensor mul(double b) const { return op(tg_tensor_mul_scalar, b); }
  Tensor div(double b) const { return op(tg_tensor_div_scalar, b); }
  Tensor pow(double b) const { return op(tg_tensor_pow_scalar, b); }
  Tensor idiv(const Tensor& b) const { return op(tg_tensor_idiv, b.p_); }
  Tensor maximum(const Tensor& b) const { return op(tg_tensor_maximum, b.p_); }
  Tensor minimum(const Tensor& b) const { return op(tg_tensor_minimum, b.p_); }
  Tensor lt(const Tensor& b) const { return op(tg_tensor_lt, b.p_); }
  Tensor le(const Tensor& b) const { return op(tg_tensor_le, b.p_); }
  Tensor gt(const Tensor& b) const { return op(tg_tensor_gt, b.p_); }
  Tensor ge(const Tensor& b) const { return op(tg_tensor_ge, b.p_); }
  Tensor eq(const Tensor& b) const { return op(tg_tensor_eq, b.p_); }
  Tensor ne(const Tensor& b) const { return op(tg_tensor_ne, b.p_); }
  Tensor mod(const Tensor& b) const { return op(tg_tensor_mod, b.p_); }
  Tensor fmod(const Tensor& b) const { return op(tg_tensor_fmod, b.p_); }
  Tensor bitwise_and(const Tensor& b) const { return op(tg_tensor_bitwise_and, b.p_); }
  Tensor bitwise_or(const Tensor& b) const { return op(tg_tensor_bitwise_or, b.p_); }
  Tensor bitwise_xor(const Tensor& b) const { return op(tg_tensor_bitwise_xor, b.p_); }
  Tensor copysign(const Tensor& b) const { return op(tg_tensor_copysign, b.p_); }
  Tensor logaddexp(const Tensor& b) const { return op(tg_tensor_logaddexp, b.p_); }
  Tensor lerp(const Tensor& end, const Tensor& weight) const { return op(tg_tensor_lerp, end.p_, weight.p_); }
  Tensor isclose(const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const {
    return op(tg_tensor_isclose, b.p_, rtol, atol, int(equal_nan));
  }
  // this ? x : y
  Tensor where(const Tensor& x, const Tensor& y) const { return op(tg_tensor_where, x.p_, y.p_); }
  Tensor cast(DType dt) const { return op(tg_tensor_cast, c(dt)); }
  Tensor bitcast(DType dt) const { return op(tg_tensor_bitcast, c(dt)); }
  Tensor lshift(int64_t bits) const { return op(tg_tensor_lshift, bits); }
  Tensor rshift(int64_t bits) const { return op(tg_tensor_rshift, bits); }
  // elementwise counts (int tensors, broadcast)
  Tensor lshift(const Tensor& bits) const { return op(tg_tensor_lshift_tensor, bits.p_); }
  Tensor rshift(const Tensor& bits) const { return op(tg_tensor_rshift_tensor, bits.p_); }
  // A 0-d tensor of `v` that combines with this one as tinygrad's Python scalars do: this dtype, or float32 when v
  // is fractional and this is an int tensor.
  Tensor scalar_like(double v) const {
    DType d = dtype();
    if (!is_float(d) && v != std::trunc(v)) d = DType::Float32;
    return full({}, v, d, device().c_str());
  }

  // unary
  Tensor neg() const { return op(tg_tensor_neg); }
  Tensor exp() const { return op(tg_tensor_exp); }
  Tensor exp2() const { return op(tg_tensor_exp2); }
  Tensor log() const { return op(tg_tensor_log); }
  Tensor log2() const { return op(tg_tensor_log2); }
  Tensor sqrt() const { return op(tg_tensor_sqrt); }
  Tensor rsqrt() const { return op(tg_tensor_rsqrt); }
  Tensor reciprocal() const { return op(tg_tensor_reciprocal); }
  Tensor square() const { return op(tg_tensor_square); }
  Tensor abs() const { return op(tg_tensor_abs); }
  Tensor sign() const { return op(tg_tensor_sign); }
  Tensor sin() const { return op(tg_tensor_sin); }
  Tensor cos() const { return op(tg_tensor_cos); }
  Tensor tan() const { return op(tg_tensor_tan); }
  Tensor asin() const { return op(tg_tensor_asin); }
  Tensor acos() const { return op(tg_tensor_acos); }
  Tensor atan() const { return op(tg_tensor_atan); }
  Tensor sinh() const { return op(tg_tensor_sinh); }
  Tensor cosh() const { return op(tg_tensor_cosh); }
  Tensor tanh() const { return op(tg_tensor_tanh); }
  Tensor asinh() const { return op(tg_tensor_asinh); }
  Tensor acosh() const { return op(tg_tensor_acosh); }
  Tensor atanh() const { return op(tg_tensor_atanh); }
  Tensor erf() const { return op(tg_tensor_erf); }
  Tensor trunc() const { return op(tg_tensor_trunc); }
  Tensor floor() const { return op(tg_tensor_floor); }
  Tensor ceil() const { return op(tg_tensor_ceil); }
  Tensor round() const { return op(tg_tensor_round); }
  Tensor isnan() const { return op(tg_tensor_isnan); }
  Tensor isinf() const { return op(tg_tensor_isinf); }
  Tensor isfinite() const { return op(tg_tensor_isfinite); }
  Tensor logical_not() const { return op(tg_tensor_logical_not); }
  Tensor bitwise_not() const { return op(tg_tensor_bitwise_not); }

  // activations
  Tensor relu() const { return op(tg_tensor_relu); }
  Tensor relu6() const { return op(tg_tensor_relu6); }
  Tensor sigmoid() const { return op(tg_tensor_sigmoid); }
  Tensor leaky_relu(double neg_slope = 0.01) const { return op(tg_tensor_leaky_relu, neg_slope); }
  Tensor elu(double alpha = 1.0) const { return op(tg_tensor_elu, alpha); }
  Tensor celu(double alpha = 1.0) const { return op(tg_tensor_celu, alpha); }
  Tensor selu() const { return op(tg_tensor_selu); }
  Tensor gelu() const { return op(tg_tensor_gelu); }
  Tensor quick_gelu() const { return op(tg_tensor_quick_gelu); }
  Tensor silu() const { return op(tg_tensor_silu); }
  Tensor mish() const { return op(tg_tensor_mish); }
  Tensor hardsigmoid() const { return op(tg_tensor_hardsigmoid); }
  Tensor logsigmoid() const { return op(tg_tensor_logsigmoid); }
  Tensor softplus(double beta = 1.0) const { return op(tg_tensor_softplus, beta); }
  Tensor softsign() const { return op(tg_tensor_softsign); }
  Tensor hardswish() const { return op(tg_tensor_hardswish); }
  Tensor hardtanh(double min_val = -1, double max_val = 1) const { return op(tg_tensor_hardtanh, min_val, max_val); }
  Tensor clamp(double min_val, double max_val) const { return op(tg_tensor_clamp, min_val, max_val); }

  // reductions: no axes means every axis
  Tensor sum(Ints axes = {}, bool keepdim = false) const { return op(tg_tensor_sum, axes.data(), axes.size(), int(keepdim)); }
  Tensor prod(Ints axes = {}, bool keepdim = false) const { return op(tg_tensor_prod, axes.data(), axes.size(), int(keepdim)); }
  Tensor max(Ints axes = {}, bool keepdim = false) const { return op(tg_tensor_max, axes.data(), axes.size(), int(keepdim)); }
  Tensor min(Ints axes = {}, bool keepdim = false) const { return op(tg_tensor_min, axes.data(), axes.size(), int(keepdim)); }
  Tensor mean(Ints axes = {}, bool keepdim = false) const { return op(tg_tensor_mean, axes.data(), axes.size(), int(keepdim)); }
  Tensor all(Ints axes = {}, bool keepdim = false) const { return op(tg_tensor_all, axes.data(), axes.size(), int(keepdim)); }
  Tensor any(Ints axes = {}, bool keepdim = false) const { return op(tg_tensor_any, axes.data(), axes.size(), int(keepdim)); }
  Tensor logsumexp(Ints axes = {}, bool keepdim = false) const { return op(tg_tensor_logsumexp, axes.data(), axes.size(), int(keepdim)); }
  Tensor std(Ints axes = {}, bool keepdim = false, double correction = 1) const {
    return op(tg_tensor_std, axes.data(), axes.size(), int(keepdim), correction);
  }
  Tensor var(Ints axes = {}, bool keepdim = false, double correction = 1) const {
    return op(tg_tensor_var, axes.data(), axes.size(), int(keepdim), correction);
  }
  std::pair<Tensor, Tensor> std_mean(Ints axes = {}, bool keepdim = false, double correction = 1) const {
    return pair_out(tg_tensor_std_mean, axes.data(), axes.size(), int(keepdim), correction);
  }
  std::pair<Tensor, Tensor> var_mean(Ints axes = {}, bool keepdim = false, double correction = 1) const {
    return pair_out(tg_tensor_var_mean, axes.data(), axes.size(), int(keepdim), correction);
  }
  Tensor argmax(int64_t axis, bool keepdim = false) const { return op(tg_tensor_argmax, axis, int(keepdim), 0); }
  Tensor argmin(int64_t axis, bool keepdim = false) const { return op(tg_tensor_argmin, axis, int(keepdim), 0); }
  Tensor argmax() const { return op(tg_tensor_argmax, int64_t(0), 0, 1); }  // over the flattened tensor
  Tensor argmin() const { return op(tg_tensor_argmin, int64_t(0), 0, 1); }
  Tensor cumsum(int64_t axis = 0) const { return op(tg_tensor_cumsum, axis); }
  Tensor cumprod(int64_t axis = 0) const { return op(tg_tensor_cumprod, axis); }
  Tensor cummax(int64_t axis = 0) const { return op(tg_tensor_cummax, axis); }
  Tensor cummin(int64_t axis = 0) const { return op(tg_tensor_cummin, axis); }
  Tensor softmax(int64_t axis = -1) const { return op(tg_tensor_softmax, axis); }
  Tensor log_softmax(int64_t axis = -1) const { return op(tg_tensor_log_softmax, axis); }

  // movement (views)
  Tensor reshape(Ints shape) const { return op(tg_tensor_reshape, shape.data(), shape.size()); }
  Tensor permute(Ints order) const { return op(tg_tensor_permute, order.data(), order.size()); }
  Tensor expand(Ints shape) const { return op(tg_tensor_expand, shape.data(), shape.size()); }
  // pads: (before, after) per dim, flattened
  Tensor pad(Ints pads, double value = 0) const { return op(tg_tensor_pad, pads.data(), pads.size() / 2, value); }
  enum PadMode { Constant = 0, Reflect = 1, Replicate = 2, Circular = 3 };
  Tensor pad(Ints pads, PadMode mode, double value = 0) const {
    return op(tg_tensor_pad_mode, pads.data(), pads.size() / 2, int(mode), value);
  }
  // bounds: (start, end) per dim, flattened
  Tensor shrink(Ints bounds) const { return op(tg_tensor_shrink, bounds.data(), bounds.size() / 2); }
  inline Tensor shrink(int64_t axis, const Expr& var, int64_t value) const;
  // t[..., 0:e, ...] with e an expression of Variables bound here (tg_tensor_shrink_expr)
  inline Tensor shrink(int64_t axis, const Expr& e, const std::vector<std::pair<std::string, int64_t>>& bindings) const;
  // t[..., s:s+size, ...] with the start s an expression of Variables bound here (tg_tensor_shrink_at)
  inline Tensor shrink_at(int64_t axis, const Expr& start, const std::vector<std::pair<std::string, int64_t>>& bindings, int64_t size) const;
  inline Tensor rebind(const Expr& var, int64_t value) const;
  // dim `axis` padded to `size` (`before` in front): on a Variable dim, `size` at every binding (tg_tensor_pad_to)
  Tensor pad_to(int64_t axis, int64_t before, int64_t size, double value = 0) const { return op(tg_tensor_pad_to, axis, before, size, value); }
  // a 0-d tensor of a bound expression's value (tinygrad's Tensor(v.bind(3) + 1)), symbolic in a Jit (docs/C-API.md)
  static inline Tensor from_expr(const Expr& e, const std::vector<std::pair<std::string, int64_t>>& bindings, DType dtype = DType::Int32,
                                 const char* device = nullptr);
  // the Variable each dim is bound to (an empty Expr for a plain dim)
  inline std::vector<Expr> shape_vars() const;
  // the graph in hand: this tensor's node now, and the ASTs of the kernels realizing it (and `more`) would run
  inline Uop uop() const;
  inline std::vector<Uop> schedule(const std::vector<Tensor>& more = {}) const;
  Tensor flip(Ints axes) const { return op(tg_tensor_flip, axes.data(), axes.size()); }
  Tensor transpose(int64_t dim0 = 1, int64_t dim1 = 0) const { return op(tg_tensor_transpose, dim0, dim1); }
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const { return op(tg_tensor_flatten, start_dim, end_dim); }
  Tensor unflatten(int64_t dim, Ints sizes) const { return op(tg_tensor_unflatten, dim, sizes.data(), sizes.size()); }
  Tensor squeeze(int64_t dim) const { return op(tg_tensor_squeeze, dim); }
  Tensor squeeze() const { return op(tg_tensor_squeeze_all); }
  Tensor unsqueeze(int64_t dim) const { return op(tg_tensor_unsqueeze, dim); }
  Tensor repeat(Ints repeats) const { return op(tg_tensor_repeat, repeats.data(), repeats.size()); }
  Tensor repeat_interleave(int64_t repeats, int64_t dim) const { return op(tg_tensor_repeat_interleave, repeats, dim); }
  Tensor roll(Ints shifts, Ints dims) const {
    if (shifts.size() != dims.size()) throw Error(TG_ERROR_INVALID_ARGUMENT, "roll: shifts and dims differ in length");
    return op(tg_tensor_roll, shifts.data(), dims.data(), dims.size());
  }
  Tensor tril(int64_t k = 0) const { return op(tg_tensor_tril, k); }
  Tensor triu(int64_t k = 0) const { return op(tg_tensor_triu, k); }
  // the diagonal a 0-d integer tensor: a symbolic one from from_expr
  Tensor tril(const Tensor& k) const { return op(tg_tensor_tril_tensor, k.p_); }
  Tensor triu(const Tensor& k) const { return op(tg_tensor_triu_tensor, k.p_); }
  Tensor diag() const { return op(tg_tensor_diag); }
  Tensor diagonal() const { return op(tg_tensor_diagonal); }
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const { return op(tg_tensor_unfold, dim, size, step); }
  static Tensor cat(const std::vector<Tensor>& ts, int64_t dim = 0) {
    auto r = raws(ts);
    return adopt(tg_tensor_cat(r.data(), r.size(), dim));
  }
  static Tensor stack(const std::vector<Tensor>& ts, int64_t dim = 0) {
    auto r = raws(ts);
    return adopt(tg_tensor_stack(r.data(), r.size(), dim));
  }
  std::vector<Tensor> split(Ints sizes, int64_t dim = 0) const {
    std::vector<tg_tensor*> out(sizes.size());
    detail::check(tg_tensor_split(p_, sizes.data(), sizes.size(), dim, out.data()));
    return adopt_all(out);
  }
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const {
    std::vector<tg_tensor*> out(chunks > 0 ? static_cast<size_t>(chunks) : 0);
    out.resize(static_cast<size_t>(detail::check(tg_tensor_chunk(p_, chunks, dim, out.data(), out.size()), -1)));
    return adopt_all(out);
  }
  static std::vector<Tensor> meshgrid(const std::vector<Tensor>& ts, bool xy_indexing = false) {
    auto r = raws(ts);
    std::vector<tg_tensor*> out(r.size());
    detail::check(tg_tensor_meshgrid(r.data(), r.size(), int(xy_indexing), out.data()));
    return adopt_all(out);
  }

  // indexing: t[{1, slice(0, 4), Index::newaxis(), idx_tensor}]
  inline Tensor getitem(const std::vector<Index>& idx) const;
  inline Tensor operator[](std::initializer_list<Index> idx) const;
  inline Tensor operator[](int64_t i) const;
  // this[idx...] = value; this handle then refers to the result, as tinygrad's __setitem__.
  inline void setitem(const std::vector<Index>& idx, const Tensor& value);
  Tensor gather(int64_t dim, const Tensor& index) const { return op(tg_tensor_gather, dim, index.p_); }
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const { return op(tg_tensor_scatter, dim, index.p_, src.p_); }
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce, bool include_self = true) const {
    return op(tg_tensor_scatter_reduce, dim, index.p_, src.p_, reduce.c_str(), int(include_self));
  }
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const { return op(tg_tensor_masked_fill, mask.p_, value.p_); }
  Tensor masked_select(const Tensor& mask) const { return op(tg_tensor_masked_select, mask.p_); }
  Tensor nonzero() const { return op(tg_tensor_nonzero); }
  // the first `size` indices (fill_value past the count): a fixed shape, so it captures in a Jit
  Tensor nonzero(int64_t size, double fill_value = 0) const { return op(tg_tensor_nonzero_sized, size, fill_value); }
  Tensor masked_select(const Tensor& mask, int64_t size, double fill_value = 0) const {
    return op(tg_tensor_masked_select_sized, mask.p_, size, fill_value);
  }
  Tensor clone() const { return op(tg_tensor_clone); }
  Tensor at_binding() const { return op(tg_tensor_at_binding); }
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const { return pair_out(tg_tensor_sort, dim, int(descending)); }
  Tensor argsort(int64_t dim = -1, bool descending = false) const { return op(tg_tensor_argsort, dim, int(descending)); }
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true) const {
    return pair_out(tg_tensor_topk, k, dim, int(largest));
  }

  // linear algebra and nn functional (an empty Tensor() is "none" for optional operands)
  Tensor matmul(const Tensor& b) const { return op(tg_tensor_matmul, b.p_); }
  Tensor dot(const Tensor& b) const { return op(tg_tensor_dot, b.p_); }
  Tensor linear(const Tensor& weight, const Tensor& bias = Tensor()) const { return op(tg_tensor_linear, weight.p_, bias.p_); }
  static Tensor einsum(const std::string& formula, const std::vector<Tensor>& ts) {
    auto r = raws(ts);
    return adopt(tg_tensor_einsum(formula.c_str(), r.data(), r.size()));
  }
  // decompositions of the last two dims: (Q, R) and (U, S, Vh), as tinygrad's Tensor.qr / Tensor.svd
  std::pair<Tensor, Tensor> qr() const { return pair_out(tg_tensor_qr); }
  std::tuple<Tensor, Tensor, Tensor> svd(bool full_matrices = true) const {
    tg_tensor* out[3] = {nullptr, nullptr, nullptr};
    detail::check(tg_tensor_svd(p_, int(full_matrices), out));
    return {Tensor(out[0]), Tensor(out[1]), Tensor(out[2])};
  }
  Tensor conv2d(const Tensor& weight, const Tensor& bias = Tensor(), int64_t groups = 1, Pair stride = {1, 1}, Pair dilation = {1, 1},
                Pair padding = {0, 0}) const {
    return op(tg_tensor_conv2d, weight.p_, bias.p_, groups, stride[0], stride[1], dilation[0], dilation[1], padding[0], padding[1]);
  }
  Tensor conv_transpose2d(const Tensor& weight, const Tensor& bias = Tensor(), int64_t groups = 1, Pair stride = {1, 1},
                          Pair dilation = {1, 1}, Pair padding = {0, 0}, Pair output_padding = {0, 0}) const {
    return op(tg_tensor_conv_transpose2d, weight.p_, bias.p_, groups, stride[0], stride[1], dilation[0], dilation[1], padding[0],
              padding[1], output_padding[0], output_padding[1]);
  }
  // Any number of spatial dims (the weight's rank - 2): stride and dilation one value or one per dim ({}: 1), padding one
  // (before, after) pair per spatial dim ({}: none; negative crops).
  Tensor conv(const Tensor& weight, const Tensor& bias = Tensor(), int64_t groups = 1, Ints stride = {}, Ints dilation = {},
              const std::vector<Pair>& padding = {}) const {
    return op(tg_tensor_conv, weight.p_, bias.p_, groups, stride.data(), stride.size(), dilation.data(), dilation.size(), pairs(padding),
              padding.size());
  }
  Tensor conv_transpose(const Tensor& weight, const Tensor& bias = Tensor(), int64_t groups = 1, Ints stride = {}, Ints dilation = {},
                        const std::vector<Pair>& padding = {}, Ints output_padding = {}) const {
    return op(tg_tensor_conv_transpose, weight.p_, bias.p_, groups, stride.data(), stride.size(), dilation.data(), dilation.size(),
              pairs(padding), padding.size(), output_padding.data(), output_padding.size());
  }
  // Pools the last kernel.size() dims; stride {}: the kernel, dilation {}: 1.
  Tensor max_pool(Ints kernel, Ints stride = {}, Ints dilation = {}, const std::vector<Pair>& padding = {}, bool ceil_mode = false) const {
    return op(tg_tensor_pool, 0, kernel.data(), kernel.size(), stride.data(), stride.size(), dilation.data(), dilation.size(), pairs(padding),
              padding.size(), int(ceil_mode), 1);
  }
  Tensor avg_pool(Ints kernel, Ints stride = {}, Ints dilation = {}, const std::vector<Pair>& padding = {}, bool ceil_mode = false,
                  bool count_include_pad = true) const {
    return op(tg_tensor_pool, 1, kernel.data(), kernel.size(), stride.data(), stride.size(), dilation.data(), dilation.size(), pairs(padding),
              padding.size(), int(ceil_mode), int(count_include_pad));
  }
  // (maxima, int32 indices within each pooled plane)
  std::pair<Tensor, Tensor> max_pool_indices(Ints kernel, Ints stride = {}, Ints dilation = {}, const std::vector<Pair>& padding = {},
                                             bool ceil_mode = false) const {
    return pair_out(tg_tensor_max_pool_indices, kernel.data(), kernel.size(), stride.data(), stride.size(), dilation.data(), dilation.size(),
                    pairs(padding), padding.size(), int(ceil_mode));
  }
  Tensor max_unpool(const Tensor& indices, Ints kernel, Ints stride = {}, Ints dilation = {}, const std::vector<Pair>& padding = {},
                    Ints output_size = {}) const {
    return op(tg_tensor_max_unpool, indices.p_, kernel.data(), kernel.size(), stride.data(), stride.size(), dilation.data(), dilation.size(),
              pairs(padding), padding.size(), output_size.data(), output_size.size());
  }
  Tensor interpolate(Ints size, const std::string& mode = "linear", bool align_corners = false) const {
    return op(tg_tensor_interpolate, size.data(), size.size(), mode.c_str(), int(align_corners));
  }
  // stride {0, 0}: the kernel size, as tinygrad's default
  Tensor max_pool2d(Pair kernel = {2, 2}, Pair stride = {0, 0}, Pair dilation = {1, 1}, Pair padding = {0, 0}) const {
    return op(tg_tensor_max_pool2d, kernel[0], kernel[1], stride[0] ? stride[0] : kernel[0], stride[1] ? stride[1] : kernel[1],
              dilation[0], dilation[1], padding[0], padding[1]);
  }
  Tensor avg_pool2d(Pair kernel = {2, 2}, Pair stride = {0, 0}, Pair padding = {0, 0}, bool count_include_pad = true) const {
    return op(tg_tensor_avg_pool2d, kernel[0], kernel[1], stride[0] ? stride[0] : kernel[0], stride[1] ? stride[1] : kernel[1],
              padding[0], padding[1], int(count_include_pad));
  }
  Tensor layernorm(Ints axes = {}, double eps = 1e-5) const { return op(tg_tensor_layernorm, axes.data(), axes.size(), eps); }
  Tensor batchnorm(const Tensor& weight, const Tensor& bias, const Tensor& mean, const Tensor& invstd) const {
    return op(tg_tensor_batchnorm, weight.p_, bias.p_, mean.p_, invstd.p_);
  }
  Tensor dropout(double p = 0.5) const { return op(tg_tensor_dropout, p); }
  Tensor scaled_dot_product_attention(const Tensor& k, const Tensor& v, const Tensor& mask = Tensor(), bool is_causal = false) const {
    return op(tg_tensor_scaled_dot_product_attention, k.p_, v.p_, mask.p_, int(is_causal));
  }
  // enable_gqa: k's and v's heads (dim -3) repeated to this query's
  Tensor scaled_dot_product_attention(const Tensor& k, const Tensor& v, const Tensor& mask, bool is_causal, bool enable_gqa) const {
    return op(tg_tensor_scaled_dot_product_attention_gqa, k.p_, v.p_, mask.p_, int(is_causal), int(enable_gqa));
  }
  Tensor one_hot(int64_t num_classes) const { return op(tg_tensor_one_hot, num_classes); }
  enum Reduction { None = 0, Mean = 1, Sum = 2 };
  Tensor cross_entropy(const Tensor& target, double label_smoothing = 0, Reduction r = Mean) const {
    return op(tg_tensor_cross_entropy, target.p_, label_smoothing, int(r));
  }
  Tensor sparse_categorical_crossentropy(const Tensor& labels, int64_t ignore_index = -1, double label_smoothing = 0,
                                         Reduction r = Mean) const {
    return op(tg_tensor_sparse_categorical_crossentropy, labels.p_, ignore_index, label_smoothing, int(r));
  }
  Tensor nll_loss(const Tensor& target, Reduction r = Mean) const { return op(tg_tensor_nll_loss, target.p_, int(r)); }
  // weight per class (an empty Tensor() for none); targets equal to ignore_index skipped when use_ignore_index
  Tensor nll_loss(const Tensor& target, const Tensor& weight, Reduction r, bool use_ignore_index = false, int64_t ignore_index = -100) const {
    return op(tg_tensor_nll_loss_weighted, target.p_, weight.p_, int(use_ignore_index), ignore_index, int(r));
  }
  Tensor binary_crossentropy(const Tensor& y, Reduction r = Mean) const { return op(tg_tensor_binary_crossentropy, y.p_, int(r)); }
  Tensor binary_crossentropy_logits(const Tensor& y, Reduction r = Mean) const {
    return op(tg_tensor_binary_crossentropy_logits, y.p_, int(r));
  }
  Tensor binary_crossentropy_logits(const Tensor& y, const Tensor& pos_weight, Reduction r = Mean) const {
    return op(tg_tensor_binary_crossentropy_logits_weighted, y.p_, pos_weight.p_, int(r));
  }

  // autograd
  Tensor& requires_grad(bool on) {
    detail::check(tg_tensor_set_requires_grad(p_, int(on)));
    return *this;
  }
  bool requires_grad() const { return detail::check(tg_tensor_requires_grad(p_), -1) != 0; }
  void backward() const { detail::check(tg_tensor_backward(p_)); }
  // also: tensors that take a grad whatever their requires_grad (when the loss depends on them), as current tinygrad's
  void backward(const std::vector<Tensor>& also) const {
    auto r = raws(also);
    detail::check(tg_tensor_backward_also(p_, r.data(), r.size()));
  }
  Tensor grad() const { return op(tg_tensor_grad); }
  void set_grad(const Tensor& g) const { detail::check(tg_tensor_set_grad(p_, g.p_)); }  // Tensor(): clear it
  std::vector<Tensor> gradient(const std::vector<Tensor>& wrt) const {
    auto r = raws(wrt);
    std::vector<tg_tensor*> out(r.size());
    detail::check(tg_tensor_gradient(p_, r.data(), r.size(), out.data()));
    return adopt_all(out);
  }
  Tensor detach() const { return op(tg_tensor_detach); }
  Tensor contiguous_backward() const { return op(tg_tensor_contiguous_backward); }

  // realization
  Tensor contiguous() const { return op(tg_tensor_contiguous); }
  const Tensor& realize() const {
    detail::check(tg_tensor_realize(p_));
    return *this;
  }
  // this takes value's contents (a realized tensor's in-place update, as tinygrad's assign)
  const Tensor& assign(const Tensor& value) const {
    detail::check(tg_tensor_assign(p_, value.p_));
    return *this;
  }

  // C arrays of the borrowed handles of `ts`
  static std::vector<tg_tensor*> raws(const std::vector<Tensor>& ts) {
    std::vector<tg_tensor*> r;
    r.reserve(ts.size());
    for (auto& t : ts) r.push_back(t.p_);
    return r;
  }
  // Tensors owning the new references in `out` (filled by a successful call)
  static std::vector<Tensor> adopt_all(const std::vector<tg_tensor*>& out) {
    std::vector<Tensor> ts;
    ts.reserve(out.size());
    for (auto* p : out) ts.emplace_back(p);
    return ts;
  }

 private:
  template <class F, class... A>
  Tensor op(F f, A... a) const { return adopt(f(p_, a...)); }
  template <class F, class... A>
  std::pair<Tensor, Tensor> pair_out(F f, A... a) const {
    tg_tensor* out[2] = {nullptr, nullptr};
    detail::check(f(p_, a..., out));
    return {Tensor(out[0]), Tensor(out[1])};
  }
  // (before, after) pairs as the C API's flat int64 list: std::array has no padding, so the vector's storage is that list
  static const int64_t* pairs(const std::vector<Pair>& p) {
    static_assert(sizeof(Pair) == 2 * sizeof(int64_t));
    return p.empty() ? nullptr : p.data()->data();
  }
  static inline std::vector<tg_index> raw_index(const std::vector<Index>& idx);
};

// One entry of t[...]: an int, a Slice, a new axis, an ellipsis, or an int tensor (numpy's advanced indexing).
class Index {
 public:
  Index(int64_t i) { raw_.kind = TG_INDEX_INT, raw_.start = i; }
  Index(const Slice& s) {
    raw_.kind = TG_INDEX_SLICE, raw_.start = s.start, raw_.stop = s.stop, raw_.step = s.step;
    raw_.has_start = s.has_start, raw_.has_stop = s.has_stop, raw_.has_step = s.has_step;
  }
  Index(const Tensor& t) : keep_(t) { raw_.kind = TG_INDEX_TENSOR, raw_.tensor = t.raw(); }
  static Index newaxis() { return Index(TG_INDEX_NEWAXIS); }
  static Index ellipsis() { return Index(TG_INDEX_ELLIPSIS); }
  const tg_index& raw() const noexcept { return raw_; }

 private:
  explicit Index(tg_index_kind k) { raw_.kind = k; }
  tg_index raw_{};
  Tensor keep_;  // a tensor entry keeps its tensor alive
};
inline std::vector<tg_index> Tensor::raw_index(const std::vector<Index>& idx) {
  std::vector<tg_index> r;
  r.reserve(idx.size());
  for (auto& i : idx) r.push_back(i.raw());
  return r;
}
inline Tensor Tensor::getitem(const std::vector<Index>& idx) const {
  auto r = raw_index(idx);
  return op(tg_tensor_getitem, r.data(), r.size());
}
inline Tensor Tensor::operator[](std::initializer_list<Index> idx) const { return getitem(idx); }
inline Tensor Tensor::operator[](int64_t i) const { return getitem({i}); }
inline void Tensor::setitem(const std::vector<Index>& idx, const Tensor& value) {
  auto r = raw_index(idx);
  detail::check(tg_tensor_setitem(p_, r.data(), r.size(), value.p_));
}

// Slices: slice(1, 4), slice(0, 8, 2); slice_from(2) is 2:, slice_to(3) is :3, slice_all() is :.
inline Slice slice(int64_t start, int64_t stop, int64_t step = 1) { return {true, true, true, start, stop, step}; }
inline Slice slice_from(int64_t start, int64_t step = 1) { return {true, false, true, start, 0, step}; }
inline Slice slice_to(int64_t stop, int64_t step = 1) { return {false, true, true, 0, stop, step}; }
inline Slice slice_all() { return {}; }

// Realize several tensors in one schedule (shared work done once).
inline void realize(const std::vector<Tensor>& ts) {
  auto r = Tensor::raws(ts);
  detail::check(tg_tensor_realize_many(r.data(), r.size()));
}
inline Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) { return cond.where(x, y); }
// One tensor per device of this process combined elementwise (tg_tensor_allreduce); one result per input, on its device.
inline std::vector<Tensor> allreduce(const std::vector<Tensor>& ts, tg_reduce op = TG_REDUCE_SUM) {
  auto r = Tensor::raws(ts);
  std::vector<tg_tensor*> out(ts.size());
  detail::check(tg_tensor_allreduce(r.data(), r.size(), op, out.data()));
  std::vector<Tensor> res;
  for (tg_tensor* t : out) res.push_back(Tensor::adopt(t));
  return res;
}

// operators; a double operand is tinygrad's Python scalar (Tensor::scalar_like)
inline Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
inline Tensor operator%(const Tensor& a, const Tensor& b) { return a.mod(b); }
inline Tensor operator&(const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }
inline Tensor operator|(const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }
inline Tensor operator^(const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }
inline Tensor operator<<(const Tensor& a, int64_t bits) { return a.lshift(bits); }
inline Tensor operator>>(const Tensor& a, int64_t bits) { return a.rshift(bits); }
inline Tensor operator-(const Tensor& a) { return a.neg(); }
inline Tensor operator~(const Tensor& a) { return a.bitwise_not(); }
inline Tensor operator+(const Tensor& a, double b) { return a.add(b); }
inline Tensor operator-(const Tensor& a, double b) { return a.sub(b); }
inline Tensor operator*(const Tensor& a, double b) { return a.mul(b); }
inline Tensor operator/(const Tensor& a, double b) { return a.div(b); }
inline Tensor operator+(double a, const Tensor& b) { return b.add(a); }
inline Tensor operator-(double a, const Tensor& b) { return b.scalar_like(a).sub(b); }
inline Tensor operator*(double a, const Tensor& b) { return b.mul(a); }
inline Tensor operator/(double a, const Tensor& b) { return b.scalar_like(a).div(b); }
#define TINYGRAD_COMPARE(OP, F)                                                                       \
  inline Tensor operator OP(const Tensor& a, const Tensor& b) { return a.F(b); }                      \
  inline Tensor operator OP(const Tensor& a, double b) { return a.F(a.scalar_like(b)); }              \
  inline Tensor operator OP(double a, const Tensor& b) { return b.scalar_like(a).F(b); }
TINYGRAD_COMPARE(<, lt)
TINYGRAD_COMPARE(<=, le)
TINYGRAD_COMPARE(>, gt)
TINYGRAD_COMPARE(>=, ge)
TINYGRAD_COMPARE(==, eq)
TINYGRAD_COMPARE(!=, ne)
#undef TINYGRAD_COMPARE

// ---- symbolic expressions ---------------------------------------------------------------------------------------------
class Expr : public detail::Shared<tg_expr, tg_expr_retain, tg_expr_release> {
  using Base = detail::Shared<tg_expr, tg_expr_retain, tg_expr_release>;

 public:
  using Base::Base;
  // a constant (any integer: i * 4 + 1 reads as it should; a template so that 0 isn't taken for a NULL handle)
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Expr(T value) : Base(detail::check(tg_expr_const(static_cast<int64_t>(value)))) {}
  static Expr variable(const std::string& name, int64_t min, int64_t max) {
    return Expr(detail::check(tg_expr_variable(name.c_str(), min, max)));
  }
  Expr binary(tg_binop op, const Expr& b) const { return Expr(detail::check(tg_expr_binary(op, p_, b.p_))); }
  Expr simplify() const { return Expr(detail::check(tg_expr_simplify(p_))); }
  std::string render() const {
    std::string s(static_cast<size_t>(detail::check(tg_expr_render(p_, nullptr, 0), -1)), '\0');
    detail::check(tg_expr_render(p_, s.data(), s.size() + 1), -1);  // C++11 strings keep room for the NUL
    return s;
  }
  int64_t eval(const std::vector<std::pair<std::string, int64_t>>& bindings = {}) const {
    std::vector<const char*> names;
    std::vector<int64_t> values;
    for (auto& [n, v] : bindings) names.push_back(n.c_str()), values.push_back(v);
    int64_t out;
    detail::check(tg_expr_eval(p_, names.data(), values.data(), names.size(), &out));
    return out;
  }
  std::pair<int64_t, int64_t> bounds() const {
    int64_t lo, hi;
    detail::check(tg_expr_bounds(p_, &lo, &hi));
    return {lo, hi};
  }
  Expr max(const Expr& b) const { return binary(TG_MAX, b); }
  Expr min(const Expr& b) const { return binary(TG_MIN, b); }
};
inline Expr operator+(const Expr& a, const Expr& b) { return a.binary(TG_ADD, b); }
inline Expr operator-(const Expr& a, const Expr& b) { return a.binary(TG_SUB, b); }
inline Expr operator*(const Expr& a, const Expr& b) { return a.binary(TG_MUL, b); }
inline Expr operator/(const Expr& a, const Expr& b) { return a.binary(TG_IDIV, b); }
inline Expr operator%(const Expr& a, const Expr& b) { return a.binary(TG_MOD, b); }
inline Expr operator<(const Expr& a, const Expr& b) { return a.binary(TG_LT, b); }

inline Tensor Tensor::shrink(int64_t axis, const Expr& var, int64_t value) const { return op(tg_tensor_shrink_var, axis, var.raw(), value); }
inline Tensor Tensor::shrink(int64_t axis, const Expr& e, const std::vector<std::pair<std::string, int64_t>>& bindings) const {
  std::vector<const char*> names;
  std::vector<int64_t> values;
  for (auto& [n, v] : bindings) names.push_back(n.c_str()), values.push_back(v);
  return op(tg_tensor_shrink_expr, axis, e.raw(), names.data(), values.data(), names.size());
}
inline Tensor Tensor::shrink_at(int64_t axis, const Expr& start, const std::vector<std::pair<std::string, int64_t>>& bindings, int64_t size) const {
  std::vector<const char*> names;
  std::vector<int64_t> values;
  for (auto& [n, v] : bindings) names.push_back(n.c_str()), values.push_back(v);
  return op(tg_tensor_shrink_at, axis, start.raw(), names.data(), values.data(), names.size(), size);
}
inline Tensor Tensor::rebind(const Expr& var, int64_t value) const { return op(tg_tensor_rebind, var.raw(), value); }
inline Tensor Tensor::from_expr(const Expr& e, const std::vector<std::pair<std::string, int64_t>>& bindings, DType dtype, const char* device) {
  std::vector<const char*> names;
  std::vector<int64_t> values;
  for (auto& [n, v] : bindings) names.push_back(n.c_str()), values.push_back(v);
  return adopt(tg_tensor_from_expr(e.raw(), names.data(), values.data(), names.size(), static_cast<tg_dtype>(dtype), device));
}
inline std::vector<Expr> Tensor::shape_vars() const {
  std::vector<tg_expr*> raw(static_cast<size_t>(ndim()), nullptr);
  detail::check(tg_tensor_shape_vars(p_, raw.data(), raw.size()));
  std::vector<Expr> out;
  for (tg_expr* e : raw) out.push_back(Expr(e));  // adopts the reference (NULL: a plain dim)
  return out;
}

// ---- the graph in hand: read-only nodes ---------------------------------------------------------------------------------
class Uop : public detail::Shared<tg_uop, tg_uop_retain, tg_uop_release> {
  using Base = detail::Shared<tg_uop, tg_uop_retain, tg_uop_release>;
  template <class F>
  std::string text(F f) const {
    std::string s(static_cast<size_t>(detail::check(f(p_, nullptr, 0), -1)), '\0');
    detail::check(f(p_, s.data(), s.size() + 1), -1);
    return s;
  }
  template <class F>
  static std::vector<Uop> nodes(F f) {
    std::vector<tg_uop*> raw(static_cast<size_t>(detail::check(f(nullptr, 0), -1)), nullptr);
    if (!raw.empty()) detail::check(f(raw.data(), raw.size()), -1);
    std::vector<Uop> out;
    for (tg_uop* u : raw) out.push_back(Uop(u));  // adopts each reference
    return out;
  }
  friend class Tensor;

 public:
  using Base::Base;
  std::string op() const { return detail::check(tg_uop_op(p_)); }
  std::string dtype() const { return text(tg_uop_dtype); }
  std::string arg() const { return text(tg_uop_arg); }
  std::string print() const { return text(tg_uop_print); }  // tinygrad's print(uop)
  uint64_t id() const { return tg_uop_id(p_); }
  bool operator==(const Uop& o) const { return id() == o.id(); }
  std::vector<Uop> src() const { return nodes([&](tg_uop** o, size_t n) { return tg_uop_srcs(p_, o, n); }); }
  std::vector<Uop> toposort() const { return nodes([&](tg_uop** o, size_t n) { return tg_uop_toposort(p_, o, n); }); }
};
inline Uop Tensor::uop() const { return Uop(detail::check(tg_tensor_uop(p_))); }
inline std::vector<Uop> Tensor::schedule(const std::vector<Tensor>& more) const {
  std::vector<tg_tensor*> ts{p_};
  for (auto& t : more) ts.push_back(t.raw());
  return Uop::nodes([&](tg_uop** o, size_t n) { return tg_tensor_schedule(ts.data(), ts.size(), o, n); });
}

// ---- nn: state dicts ---------------------------------------------------------------------------------------------------
class State : public detail::Shared<tg_state, tg_state_retain, tg_state_release> {
  using Base = detail::Shared<tg_state, tg_state_retain, tg_state_release>;

 public:
  using Base::Base;
  static State create() { return State(detail::check(tg_state_create())); }
  static State load(const std::string& path, const char* device = nullptr) { return State(detail::check(tg_state_load(path.c_str(), device))); }
  static State load_memory(const void* data, size_t nbytes, const char* name = nullptr, const char* device = nullptr) {
    return State(detail::check(tg_state_load_memory(data, nbytes, name, device)));
  }
  size_t size() const { return static_cast<size_t>(detail::check(tg_state_count(p_), -1)); }
  std::string name(size_t i) const { return detail::check(tg_state_name(p_, i)); }
  std::vector<std::string> names() const {
    std::vector<std::string> r;
    for (size_t i = 0, n = size(); i < n; i++) r.push_back(name(i));
    return r;
  }
  std::pair<DType, std::vector<int64_t>> info(const std::string& name) const {
    tg_dtype d;
    int64_t nd;
    detail::check(tg_state_info(p_, name.c_str(), &d, nullptr, 0, &nd));
    std::vector<int64_t> shape(static_cast<size_t>(nd));
    detail::check(tg_state_info(p_, name.c_str(), &d, shape.data(), shape.size(), &nd));
    return {static_cast<DType>(d), shape};
  }
  Tensor get(const std::string& name) const { return Tensor::adopt(tg_state_get(p_, name.c_str())); }
  void set(const std::string& name, const Tensor& t) { detail::check(tg_state_set(p_, name.c_str(), t.raw())); }
  void save(const std::string& path) const { detail::check(tg_state_save(p_, path.c_str())); }
  // metadata as (key, value text) pairs; metadata_json(i) gives a value as JSON
  std::vector<std::pair<std::string, std::string>> metadata() const {
    std::vector<std::pair<std::string, std::string>> r;
    for (size_t i = 0, n = static_cast<size_t>(detail::check(tg_state_metadata_count(p_), -1)); i < n; i++)
      r.emplace_back(detail::check(tg_state_metadata_key(p_, i)), detail::check(tg_state_metadata_value(p_, i)));
    return r;
  }
  std::string metadata_json(size_t i) const { return detail::check(tg_state_metadata_json(p_, i)); }
  void set_metadata(const std::string& key, const std::string& value) { detail::check(tg_state_metadata_set(p_, key.c_str(), value.c_str())); }
};

// ---- nn: modules -------------------------------------------------------------------------------------------------------
class Module : public detail::Shared<tg_module, tg_module_retain, tg_module_release> {
  using Base = detail::Shared<tg_module, tg_module_retain, tg_module_release>;

 public:
  using Base::Base;
  static Module adopt(tg_module* m) { return Module(detail::check(m)); }
  Tensor operator()(const Tensor& x) const { return Tensor::adopt(tg_module_call(p_, x.raw())); }
  // One LSTMCell step from (h, c) (empty Tensors: zeros) to the new (h, c).
  std::pair<Tensor, Tensor> lstm_step(const Tensor& x, const Tensor& h = Tensor(), const Tensor& c = Tensor()) const {
    tg_tensor *ho = nullptr, *co = nullptr;
    detail::check(tg_lstm_cell_step(p_, x.raw(), h.raw(), c.raw(), &ho, &co));
    return {Tensor(ho), Tensor(co)};
  }
  std::string kind() const { return detail::check(tg_module_kind(p_)); }
  Tensor get(const std::string& name) const { return Tensor::adopt(tg_module_get(p_, name.c_str())); }
  State state() const { return State(detail::check(tg_module_state(p_))); }
  std::vector<Tensor> parameters() const {
    std::vector<tg_tensor*> out(detail::check_cleared([&] { return tg_module_parameter_count(p_); }));
    detail::check(tg_module_parameters(p_, out.data(), out.size()));
    return Tensor::adopt_all(out);
  }
  void load_state(const State& s, bool strict = true) const { detail::check(tg_module_load_state(p_, s.raw(), int(strict))); }
};

namespace nn {
inline Module linear(int64_t in, int64_t out, bool bias = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_linear(in, out, int(bias), device));
}
inline Module conv2d(int64_t in, int64_t out, Pair kernel, int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1,
                     bool bias = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_conv2d(in, out, kernel[0], kernel[1], stride, padding, dilation, groups, int(bias), device));
}
inline Module conv1d(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1,
                     bool bias = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_conv1d(in, out, kernel, stride, padding, dilation, groups, int(bias), device));
}
inline Module conv_transpose2d(int64_t in, int64_t out, Pair kernel, int64_t stride = 1, int64_t padding = 0, int64_t output_padding = 0,
                               int64_t dilation = 1, int64_t groups = 1, bool bias = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_conv_transpose2d(in, out, kernel[0], kernel[1], stride, padding, output_padding, dilation, groups, int(bias), device));
}
inline Module conv_transpose1d(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t padding = 0, int64_t output_padding = 0,
                               int64_t dilation = 1, int64_t groups = 1, bool bias = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_conv_transpose1d(in, out, kernel, stride, padding, output_padding, dilation, groups, int(bias), device));
}
// Conv / ConvTranspose over kernel.size() spatial dims; stride, dilation, output_padding one value or one per dim ({}: 1, 1, 0).
inline Module conv(int64_t in, int64_t out, Ints kernel, Ints stride = {}, const std::vector<Pair>& padding = {}, Ints dilation = {},
                   int64_t groups = 1, bool bias = true, bool transposed = false, Ints output_padding = {}, const char* device = nullptr) {
  return Module::adopt(tg_nn_conv(in, out, kernel.data(), kernel.size(), stride.data(), stride.size(),
                                  padding.empty() ? nullptr : padding.data()->data(), padding.size(), dilation.data(), dilation.size(), groups,
                                  int(bias), int(transposed), output_padding.data(), output_padding.size(), device));
}
inline Module batchnorm(int64_t features, double eps = 1e-5, double momentum = 0.1, bool affine = true, bool track_running_stats = true,
                        const char* device = nullptr) {
  return Module::adopt(tg_nn_batchnorm(features, eps, momentum, int(affine), int(track_running_stats), device));
}
inline Module layernorm(Ints normalized_shape, double eps = 1e-5, bool elementwise_affine = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_layernorm(normalized_shape.data(), normalized_shape.size(), eps, int(elementwise_affine), device));
}
inline Module rmsnorm(int64_t dim, double eps = 1e-6, bool elementwise_affine = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_rmsnorm(dim, eps, int(elementwise_affine), device));
}
inline Module groupnorm(int64_t groups, int64_t channels, double eps = 1e-5, bool affine = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_groupnorm(groups, channels, eps, int(affine), device));
}
inline Module instancenorm(int64_t features, double eps = 1e-5, bool affine = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_instancenorm(features, eps, int(affine), device));
}
inline Module embedding(int64_t vocab, int64_t embed, const char* device = nullptr) { return Module::adopt(tg_nn_embedding(vocab, embed, device)); }
inline Module lstm_cell(int64_t input, int64_t hidden, bool bias = true, const char* device = nullptr) {
  return Module::adopt(tg_nn_lstm_cell(input, hidden, int(bias), device));
}
// A parameterless layer by its Tensor method's name: "relu", "gelu", "flatten", ...
inline Module function(const std::string& name) { return Module::adopt(tg_nn_function(name.c_str())); }
inline Module sequential(const std::vector<Module>& layers) {
  std::vector<tg_module*> r;
  for (auto& l : layers) r.push_back(l.raw());
  return Module::adopt(tg_nn_sequential(r.data(), r.size()));
}
}  // namespace nn

// ---- nn: optimizers ----------------------------------------------------------------------------------------------------
using OptimizerOptions = tg_optimizer_options;
enum class Optim : int32_t {
  SGD = TG_OPTIM_SGD, Adam = TG_OPTIM_ADAM, AdamW = TG_OPTIM_ADAMW, LARS = TG_OPTIM_LARS, LAMB = TG_OPTIM_LAMB, Muon = TG_OPTIM_MUON
};
// tinygrad's defaults for `kind`: change the fields its class reads, then pass them to the matching constructor.
inline OptimizerOptions optimizer_defaults(Optim kind) {
  OptimizerOptions o{};
  o.struct_size = sizeof o;
  detail::check(tg_optimizer_options_default(static_cast<tg_optimizer_kind>(kind), &o));
  return o;
}

class Optimizer : public detail::Shared<tg_optimizer, tg_optimizer_retain, tg_optimizer_release> {
  using Base = detail::Shared<tg_optimizer, tg_optimizer_retain, tg_optimizer_release>;
  using Make = tg_optimizer* (*)(tg_tensor* const*, size_t, const tg_optimizer_options*);
  static Optimizer make(Make f, const std::vector<Tensor>& params, const OptimizerOptions* o) {
    auto r = Tensor::raws(params);
    return Optimizer(detail::check(f(r.data(), r.size(), o)));
  }

 public:
  using Base::Base;
  // `opts` null: tinygrad's defaults for the class
  static Optimizer sgd(const std::vector<Tensor>& params, const OptimizerOptions* opts = nullptr) { return make(tg_optim_sgd, params, opts); }
  static Optimizer adam(const std::vector<Tensor>& params, const OptimizerOptions* opts = nullptr) { return make(tg_optim_adam, params, opts); }
  static Optimizer adamw(const std::vector<Tensor>& params, const OptimizerOptions* opts = nullptr) { return make(tg_optim_adamw, params, opts); }
  static Optimizer lars(const std::vector<Tensor>& params, const OptimizerOptions* opts = nullptr) { return make(tg_optim_lars, params, opts); }
  static Optimizer lamb(const std::vector<Tensor>& params, const OptimizerOptions* opts = nullptr) { return make(tg_optim_lamb, params, opts); }
  static Optimizer muon(const std::vector<Tensor>& params, const OptimizerOptions* opts = nullptr) { return make(tg_optim_muon, params, opts); }
  static Optimizer sgd(const std::vector<Tensor>& params, const OptimizerOptions& o) { return sgd(params, &o); }
  static Optimizer adam(const std::vector<Tensor>& params, const OptimizerOptions& o) { return adam(params, &o); }
  static Optimizer adamw(const std::vector<Tensor>& params, const OptimizerOptions& o) { return adamw(params, &o); }
  static Optimizer lars(const std::vector<Tensor>& params, const OptimizerOptions& o) { return lars(params, &o); }
  static Optimizer lamb(const std::vector<Tensor>& params, const OptimizerOptions& o) { return lamb(params, &o); }
  static Optimizer muon(const std::vector<Tensor>& params, const OptimizerOptions& o) { return muon(params, &o); }

  void zero_grad() const { detail::check(tg_optimizer_zero_grad(p_)); }
  void step() const { detail::check(tg_optimizer_step(p_)); }
  // The step's lazy assigns (state, then params): realize them with the loss (tinygrad::realize) for the fewest kernels.
  std::vector<Tensor> schedule_step() const {
    std::vector<tg_tensor*> out(static_cast<size_t>(detail::check(tg_optimizer_schedule_step(p_, nullptr, 0), -1)));
    out.resize(static_cast<size_t>(detail::check(tg_optimizer_schedule_step(p_, out.data(), out.size()), -1)));
    return Tensor::adopt_all(out);
  }
  std::vector<Tensor> params() const {
    std::vector<tg_tensor*> out(static_cast<size_t>(detail::check(tg_optimizer_params(p_, nullptr, 0), -1)));
    out.resize(static_cast<size_t>(detail::check(tg_optimizer_params(p_, out.data(), out.size()), -1)));
    return Tensor::adopt_all(out);
  }
  // tinygrad's state attribute by name: "b" (SGD/LARS/Muon), "m", "v", "b1_t", "b2_t" (Adam/AdamW/LAMB)
  std::vector<Tensor> state(const std::string& name) const {
    std::vector<tg_tensor*> out(static_cast<size_t>(detail::check(tg_optimizer_state(p_, name.c_str(), nullptr, 0), -1)));
    out.resize(static_cast<size_t>(detail::check(tg_optimizer_state(p_, name.c_str(), out.data(), out.size()), -1)));
    return Tensor::adopt_all(out);
  }
  Tensor lr() const { return Tensor::adopt(tg_optimizer_lr(p_)); }
  void set_lr(double lr) const { detail::check(tg_optimizer_set_lr(p_, lr)); }
};

// ---- looking inside a realize ------------------------------------------------------------------------------------------
struct KernelInfo {
  std::string name, source;
  std::vector<int64_t> buffer_nbytes;
  double time_s;
  int64_t threads;
  uint64_t ops, mem;
};

class Plan : public detail::Unique<tg_plan, tg_plan_release> {
  using Base = detail::Unique<tg_plan, tg_plan_release>;

 public:
  using Base::Base;
  static Plan create(const std::vector<Tensor>& ts) {
    auto r = Tensor::raws(ts);
    return Plan(detail::check(tg_plan_create(r.data(), r.size())));
  }
  void run() const { detail::check(tg_plan_run(p_)); }
  size_t size() const { return detail::check_cleared([&] { return tg_plan_kernel_count(p_); }); }
  KernelInfo kernel(size_t i) const {
    tg_kernel_info k{};
    k.struct_size = sizeof k;
    detail::check(tg_plan_kernel(p_, i, &k));
    return {detail::str(k.name), detail::str(k.source), std::vector<int64_t>(k.buffer_nbytes, k.buffer_nbytes + k.n_buffers),
            k.time_s, k.threads, k.ops, k.mem};
  }
  std::vector<KernelInfo> kernels() const {
    std::vector<KernelInfo> r;
    for (size_t i = 0, n = size(); i < n; i++) r.push_back(kernel(i));
    return r;
  }
  // (bytes of the intermediates each in its own buffer, bytes they take sharing memory)
  std::pair<int64_t, int64_t> memory() const {
    int64_t a, b;
    detail::check(tg_plan_memory(p_, &a, &b));
    return {a, b};
  }
};

// ---- TinyJit -----------------------------------------------------------------------------------------------------------
// A captured function: the first call runs fn, the second captures its kernels, later ones replay them. fn gets the
// inputs (borrowed for the call) and returns at least n_outputs tensors; an exception in fn becomes the call's error.
class Jit {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  explicit Jit(Fn fn) : fn_(new Fn(std::move(fn))), h_(detail::check(tg_jit_create(&Jit::trampoline, fn_.get()))) {}
  Jit(Jit&&) noexcept = default;
  Jit& operator=(Jit&& o) noexcept {  // the old JIT goes before the function it calls
    h_ = std::move(o.h_), fn_ = std::move(o.fn_);
    return *this;
  }
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, size_t n_outputs = 1) const {
    auto r = Tensor::raws(inputs);
    std::vector<tg_tensor*> out(n_outputs);
    detail::check(tg_jit_call(h_.raw(), r.data(), r.size(), out.data(), out.size()));
    return Tensor::adopt_all(out);
  }
  // with the values of Variables fn uses besides its inputs' dims (tg_jit_call_vars)
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const std::vector<std::pair<std::string, int64_t>>& vars,
                                 size_t n_outputs = 1) const {
    auto r = Tensor::raws(inputs);
    std::vector<const char*> names;
    std::vector<int64_t> values;
    for (auto& [n, v] : vars) names.push_back(n.c_str()), values.push_back(v);
    std::vector<tg_tensor*> out(n_outputs);
    detail::check(tg_jit_call_vars(h_.raw(), r.data(), r.size(), names.data(), values.data(), names.size(), out.data(), out.size()));
    return Tensor::adopt_all(out);
  }
  int64_t call_count() const { return detail::check(tg_jit_call_count(h_.raw()), -1); }
  void reset() const { detail::check(tg_jit_reset(h_.raw())); }
  Plan plan() const { return Plan(detail::check(tg_jit_plan(h_.raw()))); }
  // the capture as C in `dir` (docs/export.md); target: nullptr for "native"; threads > 1: a pthread pool in the C
  void export_c(const std::string& dir, const std::string& name, const char* target = nullptr, int threads = 0) const {
    tg_export_options o{sizeof(tg_export_options), dir.c_str(), name.c_str(), target, threads};
    detail::check(tg_jit_export(h_.raw(), &o));
  }
  tg_jit* raw() const noexcept { return h_.raw(); }

 private:
  static tg_status trampoline(void* ud, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) noexcept {
    try {
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < n_in; i++) inputs.push_back(Tensor(detail::check(tg_tensor_retain(in[i]))));
      auto outs = (*static_cast<Fn*>(ud))(inputs);
      if (outs.size() < n_out) return TG_ERROR_INVALID_ARGUMENT;  // no message can be set from here: the status says it
      for (size_t i = 0; i < n_out; i++) out[i] = outs[i].into_raw();
      return TG_OK;
    } catch (const Error& e) {
      return e.status();
    } catch (...) {  // an exception may not unwind through C frames
      return TG_ERROR_INTERNAL;
    }
  }
  std::unique_ptr<Fn> fn_;                      // userdata: a stable address that outlives the handle (declared first,
  detail::Unique<tg_jit, tg_jit_release> h_;  // destroyed last)
};

// ---- process-wide ------------------------------------------------------------------------------------------------------
inline std::string version() { return tg_version(); }
inline int version_number() { return tg_version_number(); }
inline void manual_seed(uint64_t seed) { tg_manual_seed(seed); }
inline int64_t live_handles() { return tg_live_handles(); }
// Options by their environment variable's name ("DEBUG", "BEAM", "TRAINING", ...); unset_option lets the environment apply.
inline void set_option(const std::string& name, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  detail::check(tg_set_option(name.c_str(), buf));
}
inline void unset_option(const std::string& name) { detail::check(tg_set_option(name.c_str(), nullptr)); }
inline double get_option(const std::string& name) {
  double v;
  detail::check(tg_get_option(name.c_str(), &v));
  return v;
}
inline tg_counters counters() {
  tg_counters c{};
  c.struct_size = sizeof c;
  detail::check(tg_counters_get(&c));
  return c;
}
inline void reset_counters() { tg_counters_reset(); }
// devices
inline int64_t device_count() { return detail::check(tg_device_count(), -1); }
inline std::string device_name(int64_t i) { return detail::check(tg_device_name(i)); }
inline std::string device_description(int64_t i) { return detail::check(tg_device_description(i)); }
inline void open_device(const std::string& name) { detail::check(tg_device_open(name.c_str())); }
inline void synchronize_device(const std::string& name) { detail::check(tg_device_synchronize(name.c_str())); }
// the MNIST-format files of `dir` (null: Debian's fashion-mnist): x_train, y_train, x_test, y_test
inline std::array<Tensor, 4> mnist(const char* dir = nullptr, const char* device = nullptr) {
  tg_tensor* t[4] = {};
  detail::check(tg_dataset_mnist(dir, device, &t[0], &t[1], &t[2], &t[3]));
  return {Tensor(t[0]), Tensor(t[1]), Tensor(t[2]), Tensor(t[3])};
}

}  // namespace tinygrad

#endif  // TINYGRAD_HPP
