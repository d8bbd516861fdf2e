#include "tensor/tensor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/realize.h"
#include "tensor/multi.h"

namespace tg {


// Every shape a tensor can take: dims >= 0, and its nonzero dims multiply to an element count whose bytes fit in int64.
// Zeros don't excuse huge dims: a permute or a reduction over the empty axis would otherwise make a huge nonempty
// shape, so sizes, strides and the kernels' int64 index arithmetic never overflow.
void check_shape(const Shape& s, DType dt, const char* what) {
  int64_t n = 1;
  for (auto d : s) {
    TG_CHECK(d >= 0, TG_ERROR_SHAPE, std::string(what) + ": negative dimension in shape " + shape_str(s));
    TG_CHECK(!__builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n), TG_ERROR_SHAPE,
             std::string(what) + ": shape " + shape_str(s) + " has more elements than fit in int64");
  }
  int64_t bytes;
  TG_CHECK(!__builtin_mul_overflow(n, int64_t(dt.itemsize()), &bytes), TG_ERROR_SHAPE,
           strformat("%s: shape %s of %s is %lld elements, more bytes than fit in int64", what, shape_str(s).c_str(), dt.name().c_str(), (long long)n));
}
static UOpRef view_as(UOpRef u, const Shape& shape) {
  return u->shape() == shape ? u : UOp::make(Ops::RESHAPE, u->dtype, {u}, std::vector<int64_t>(shape));
}

Tensor Tensor::from_data(const void* data, size_t nbytes, DType dtype, const Shape& shape, const std::string& device) {
  check_shape(shape, dtype, "from_data");
  size_t need = size_t(tg::prod(shape)) * size_t(dtype.itemsize());
  TG_CHECK(nbytes == need, TG_ERROR_INVALID_ARGUMENT,
           strformat("from_data: %zu bytes given, shape %s of %s needs %zu", nbytes, shape_str(shape).c_str(), dtype.name().c_str(), need));
  TG_CHECK(data || nbytes == 0, TG_ERROR_INVALID_ARGUMENT, "from_data: data is NULL");
  if (is_multi_device(device)) return shard(from_data(data, nbytes, dtype, shape, split_devices(device)[0]), split_devices(device), std::nullopt);
  auto buf = std::make_shared<Buffer>(device, dtype, tg::prod(shape));
  // a bool is one byte, 0 or 1: the C renderer types it _Bool, so a 2 from the caller would cast to 2 and negate to 3
  // there while LLVM gives 1 and 0; any nonzero byte is true, stored as 1
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (dtype == dtypes::bool_ && std::any_of(bytes, bytes + nbytes, [](uint8_t v) { return v > 1; })) {
    std::vector<uint8_t> canon(bytes, bytes + nbytes);
    for (auto& v : canon) v = v != 0;
    buf->copyin(canon.data(), nbytes);
  } else buf->copyin(data, nbytes);
  return Tensor(view_as(buffer_uop(std::move(buf)), shape), device);
}
Tensor Tensor::empty(const Shape& shape, DType dtype, const std::string& device) {
  check_shape(shape, dtype, "empty");
  if (is_multi_device(device)) {  // a whole copy on each device
    std::string devs = join_devices(split_devices(device), "empty");
    UOps parts;
    for (auto& d : split_devices(devs)) parts.push_back(empty(shape, dtype, d).uop());
    return multi_tensor(std::move(parts), -1, devs);
  }
  return Tensor(view_as(buffer_uop(std::make_shared<Buffer>(device, dtype, tg::prod(shape))), shape), device);
}
Tensor Tensor::full(const Shape& shape, double value, DType dtype, const std::string& device, const char* what) {
  check_shape(shape, dtype, what);
  check_devices(device);
  // tinygrad raises for int(nan) and int(inf): a silent 0 or 2^63 would be a lie
  TG_CHECK(std::isfinite(value) || dtypes::is_float(dtype) || dtypes::is_bool(dtype), TG_ERROR_INVALID_ARGUMENT,
           strformat("%s: %g can't be stored in %s", what, value, dtype.name().c_str()));
  UOpRef c = UOp::const_(dtype, value);
  if (shape.empty()) return Tensor(c, device);
  c = UOp::make(Ops::RESHAPE, dtype, {c}, std::vector<int64_t>(shape.size(), 1));
  return Tensor(UOp::make(Ops::EXPAND, dtype, {c}, std::vector<int64_t>(shape)), device);
}
// 0..n-1 as int64, tinygrad's window sum: n zeros then n ones, viewed as n overlapping windows of n (row i starts at i),
// summed: sum_{j<n} [i+j >= n] == i. The 2n^2 view is index math only, and the reduce collapses to the range itself
// (codegen/simplify), so a consumer computes arange in its own kernel with no loop over n.
static Tensor iota(int64_t n, const std::string& device) {
  // the view's bytes, 16n^2, must fit in int64: past that, i == hi*B + lo with both digits windows of their own
  constexpr int64_t B = int64_t(1) << 28;
  if (n > B) {
    int64_t hi = (n + B - 1) / B;
    Tensor h = iota(hi, device).mul(Tensor(UOp::const_int(dtypes::int64, B), device)).reshape({hi, 1}).expand({hi, B});
    return h.add(iota(B, device).reshape({1, B}).expand({hi, B})).reshape({hi * B}).shrink({{0, n}});
  }
  if (n <= 1) return Tensor::full({n}, 0, dtypes::int64, device);
  return Tensor::full({n}, 1, dtypes::int64, device)
      .pad({{n, 0}})
      .reshape({1, 2 * n})
      .expand({n, 2 * n})
      .reshape({2 * n * n})
      .pad({{0, n}})
      .reshape({n, 2 * n + 1})
      .shrink({{0, n}, {0, n}})
      .sum({1});
}

Tensor Tensor::arange(double start, double stop, double step, DType dtype, const std::string& device) {
  TG_CHECK(step != 0 && std::isfinite(step) && std::isfinite(start) && std::isfinite(stop), TG_ERROR_INVALID_ARGUMENT,
           strformat("arange: start %g, stop %g, step %g must be finite with step != 0", start, stop, step));
  double len = std::max(0.0, std::ceil((stop - start) / step));  // clamped before the int64 conversion
  TG_CHECK(len < 9.2e18, TG_ERROR_SHAPE, strformat("arange: start %g, stop %g, step %g gives %g elements, more than fit in int64", start, stop, step, len));
  int64_t n = int64_t(len);
  check_shape({n}, dtype, "arange");
  check_devices(device);
  // start + i*step, in float64 like the host formula it replaces, then converted to dtype
  Tensor i = iota(n, device).cast(dtypes::float64);
  Tensor v = i.mul(Tensor(UOp::const_(dtypes::float64, step), device)).add(Tensor(UOp::const_(dtypes::float64, start), device));
  return v.cast(dtype);
}
// tinygrad's trick: ones (n,1) padded to rows of n+1 puts the ones n+1 apart; flattened and cut to n*n, they are the diagonal
Tensor Tensor::eye(int64_t n, DType dtype, const std::string& device) {
  TG_CHECK(n >= 0, TG_ERROR_SHAPE, strformat("eye: n=%lld must be >= 0", (long long)n));
  check_shape({n, n}, dtype, "eye");
  int64_t nn = n * n;
  check_shape({n, n + 1}, dtype, "eye");
  return Tensor::full({n, 1}, 1, dtype, device, "eye").pad({{0, 0}, {0, n}}).reshape({n * (n + 1)}).shrink({{0, nn}}).reshape({n, n});
}

// ---- elementwise ----
static Shape broadcast_shape(const Shape& a, const Shape& b, const char* what) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    int64_t x = i + a.size() >= n ? a[i + a.size() - n] : 1, y = i + b.size() >= n ? b[i + b.size() - n] : 1;
    TG_CHECK(x == y || x == 1 || y == 1, TG_ERROR_SHAPE, std::string(what) + ": shapes " + shape_str(a) + " and " + shape_str(b) + " can't be broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}
// The Variable dims of tensors broadcast to `out`: a Variable dim meets only itself or a 1 (a concrete dim of the same
// bound value would stop matching at another binding).
static std::vector<const UOp*> broadcast_sym(const std::vector<const Tensor*>& ts, const Shape& out, const char* what) {
  std::vector<const UOp*> sym(out.size(), nullptr);
  bool any = false;
  for (auto* t : ts) any |= !t->uop()->sym().empty();
  if (!any) return {};
  for (auto* t : ts) {
    size_t off = out.size() - t->shape().size();
    for (size_t i = 0; i < t->shape().size(); i++)
      if (const UOp* v = t->uop()->sym().empty() ? nullptr : t->uop()->sym()[i]) {
        TG_CHECK(!sym[off + i] || sym[off + i] == v, TG_ERROR_SHAPE, std::string(what) + ": dims bound to different Variables don't broadcast");
        sym[off + i] = v;
      }
  }
  for (auto* t : ts) {
    size_t off = out.size() - t->shape().size();
    for (size_t i = 0; i < t->shape().size(); i++) {
      bool mine = !t->uop()->sym().empty() && t->uop()->sym()[i];
      TG_CHECK(!sym[off + i] || mine || t->shape()[i] == 1, TG_ERROR_SHAPE,
               strformat("%s: dim %zu is bound to Variable '%s' in one operand and a plain %lld in another", what, off + i,
                         sym_name(sym[off + i]).c_str(), (long long)t->shape()[i]));
    }
  }
  return sym;
}
std::pair<Tensor, Tensor> Tensor::broadcasted(const Tensor& o, const char* what) const {
  TG_CHECK(s_->device == o.s_->device, TG_ERROR_DEVICE, std::string(what) + ": tensors are on different devices (" + s_->device + ", " + o.s_->device + ")");
  DType dt = least_upper_dtype(dtype(), o.dtype());
  Shape out = broadcast_shape(shape(), o.shape(), what);
  check_shape(out, dt, what);
  auto sym = broadcast_sym({this, &o}, out, what);
  return {cast(dt).expand(out, sym), o.cast(dt).expand(out, sym)};
}
Tensor Tensor::scalar_like(double v) const {
  DType dt = dtype();
  bool integral = std::floor(v) == v && std::isfinite(v);
  if (!dtypes::is_float(dt) && !integral) dt = dtypes::default_float;  // int tensor op 2.5 -> float
  else if (dtypes::is_bool(dt) && !(v == 0 || v == 1)) dt = dtypes::default_int;
  return Tensor(UOp::const_(dt, v), s_->device);
}
Tensor Tensor::alu(Ops op, const Tensor& o) const {
  auto [a, b] = broadcasted(o, op_name(op).data());
  return Tensor(a.s_->uop->alu(op, {b.s_->uop}), s_->device);
}
Tensor Tensor::add(const Tensor& o) const { return alu(Ops::ADD, o); }
Tensor Tensor::sub(const Tensor& o) const {
  auto [a, b] = broadcasted(o, "sub");
  return Tensor(a.s_->uop->alu(Ops::SUB, {b.s_->uop}), s_->device);
}
Tensor Tensor::mul(const Tensor& o) const { return alu(Ops::MUL, o); }
Tensor Tensor::div(const Tensor& o) const {
  auto [a, b] = broadcasted(o, "div");
  DType ft = least_upper_float(a.dtype());
  return Tensor(a.cast(ft).s_->uop->alu(Ops::FDIV, {b.cast(ft).s_->uop}), s_->device);
}
Tensor Tensor::idiv(const Tensor& o) const {
  auto [a, b] = broadcasted(o, "idiv");
  TG_CHECK(dtypes::is_int(a.dtype()), TG_ERROR_DTYPE, "idiv: needs integer tensors, got " + a.dtype().name());
  return Tensor(a.s_->uop->alu(Ops::IDIV, {b.s_->uop}), s_->device);
}
Tensor Tensor::maximum(const Tensor& o) const { return alu(Ops::MAX, o); }
Tensor Tensor::minimum(const Tensor& o) const {
  auto [a, b] = broadcasted(o, "minimum");
  if (dtypes::is_float(a.dtype())) return a.neg().maximum(b.neg()).neg();  // NaN propagates through MAX
  return a.lt(b).where(a, b);
}
Tensor Tensor::pow(const Tensor& o) const {
  // a float to a constant small whole power by multiplications (as tinygrad: squarings), which fuse as any ALU does;
  // the device's pow is a scalar call per element (LayerNorm's square: 115 us where its mean took 2)
  if (o.uop()->op == Ops::CONST && !dtypes::is_bool(dtype())) {
    double e = o.uop()->const_value();
    DType dt = least_upper_dtype(dtype(), o.dtype());
    if (dtypes::is_float(dt) && e >= 1 && e <= 64 && e == std::floor(e)) {
      Tensor x = cast(dt);
      std::optional<Tensor> r;
      for (auto k = int64_t(e);; x = x.mul(x)) {
        if (k & 1) r = r ? r->mul(x) : x;
        if (!(k >>= 1)) return *r;
      }
    }
  }
  auto [a, b] = broadcasted(o, "pow");
  DType dt = a.dtype(), ct = dtypes::is_float(dt) ? dt : dtypes::float64;  // integer powers are exact through float64
  TG_CHECK(!dtypes::is_bool(dt), TG_ERROR_DTYPE, "pow: bool tensors have no power");
  Tensor r(a.cast(ct).s_->uop->alu(Ops::POW, {b.cast(ct).s_->uop}), s_->device);
  // a device's pow may be an ulp or two off (CUDA's (-3.0)^1.0 is -2.9999999999999996): integers round, not truncate
  return (ct == dt ? r : r.round()).cast(dt);
}
Tensor Tensor::lt(const Tensor& o) const { return alu(Ops::CMPLT, o); }
Tensor Tensor::gt(const Tensor& o) const { return o.alu(Ops::CMPLT, *this); }
Tensor Tensor::eq(const Tensor& o) const { return alu(Ops::CMPEQ, o); }
Tensor Tensor::ne(const Tensor& o) const { return alu(Ops::CMPNE, o); }
Tensor Tensor::le(const Tensor& o) const { return lt(o).alu(Ops::OR, eq(o)); }
Tensor Tensor::ge(const Tensor& o) const { return gt(o).alu(Ops::OR, eq(o)); }
Tensor Tensor::where(const Tensor& x, const Tensor& y) const {
  auto [bx, by] = x.broadcasted(y, "where");
  TG_CHECK(s_->device == x.s_->device, TG_ERROR_DEVICE, "where: condition is on " + s_->device + ", values on " + x.s_->device);
  Shape out = broadcast_shape(shape(), bx.shape(), "where");
  auto sym = broadcast_sym({this, &bx}, out, "where");
  return Tensor(cast(dtypes::bool_).expand(out, sym).s_->uop->where(bx.expand(out, sym).s_->uop, by.expand(out, sym).s_->uop), s_->device);
}
Tensor Tensor::cast(DType dt) const {
  if (dt == dtype()) return *this;
  check_shape(shape(), dt, "cast");  // a wider dtype may not fit the same shape
  return Tensor(s_->uop->cast(dt.base()), s_->device);
}
Tensor Tensor::logical_not() const { return cast(dtypes::bool_).ne(Tensor(UOp::const_(dtypes::bool_, 1), s_->device)); }
Tensor Tensor::neg() const { return dtypes::is_bool(dtype()) ? logical_not() : Tensor(s_->uop->alu(Ops::NEG), s_->device); }
Tensor Tensor::unary_float(Ops op) const {
  Tensor x = cast(least_upper_float(dtype()));
  return Tensor(x.s_->uop->alu(op), s_->device);
}
Tensor Tensor::exp2() const { return unary_float(Ops::EXP2); }
Tensor Tensor::log2() const { return unary_float(Ops::LOG2); }
Tensor Tensor::sqrt() const { return unary_float(Ops::SQRT); }
Tensor Tensor::reciprocal() const { return unary_float(Ops::RECIPROCAL); }
Tensor Tensor::sin() const { return unary_float(Ops::SIN); }
Tensor Tensor::exp() const {
  Tensor x = cast(least_upper_float(dtype()));
  return x.mul(x.scalar_like(1.0 / M_LN2)).exp2();
}
Tensor Tensor::log() const {
  Tensor l = log2();
  return l.mul(l.scalar_like(M_LN2));
}
Tensor Tensor::cos() const {
  Tensor x = cast(least_upper_float(dtype()));
  return x.scalar_like(M_PI / 2).sub(x).sin();
}
Tensor Tensor::abs() const {
  if (dtypes::is_unsigned(dtype()) || dtypes::is_bool(dtype())) return *this;
  if (dtypes::is_float(dtype())) return mul(sign());  // as tinygrad: the gradient at 0 is 0 (torch's), at +-inf +-1
  return lt(scalar_like(0)).where(neg(), *this);
}
Tensor Tensor::relu() const { return gt(scalar_like(0)).where(*this, scalar_like(0)); }
// exp only of -|x| (at most 1): 1/(1+exp(-x)) would make inf at x << 0, and its gradient inf*0 = NaN, where tinygrad's
// symbolic rules and torch give 0. The -|x| is a where, not abs(), so that the gradient at x == 0 is 1/4.
Tensor Tensor::sigmoid() const {
  Tensor x = cast(least_upper_float(dtype())), zero = x.full_like(0);
  Tensor neg = x.lt(zero);
  Tensor e = neg.where(x, x.neg()).exp(), r = e.add(e.scalar_like(1)).reciprocal();
  return neg.where(e.mul(r), r);
}
Tensor Tensor::tanh() const {
  Tensor x = cast(least_upper_float(dtype()));
  return x.mul(x.scalar_like(2)).sigmoid().mul(x.scalar_like(2)).sub(x.scalar_like(1));
}

// ---- reductions ----
int64_t Tensor::resolve_axis(int64_t axis, const char* what) const {
  int64_t n = ndim();
  TG_CHECK(axis >= -std::max<int64_t>(n, 1) && axis < std::max<int64_t>(n, 1), TG_ERROR_SHAPE,
           strformat("%s: axis %lld is out of range for shape %s", what, (long long)axis, shape_str(shape()).c_str()));
  return axis < 0 ? axis + n : axis;
}
Tensor Tensor::reduce(Ops op, std::vector<int64_t> axes, bool keepdim, const char* what) const {
  axes = resolve_axes(std::move(axes), what);
  if (ndim() == 0) return *this;
  std::vector<int64_t> arg{int64_t(op)};
  arg.insert(arg.end(), axes.begin(), axes.end());
  Tensor r(UOp::make(Ops::REDUCE_AXIS, dtype(), {s_->uop}, arg), s_->device);
  if (keepdim) return r;
  Shape s;
  for (int64_t i = 0; i < ndim(); i++)
    if (!std::binary_search(axes.begin(), axes.end(), i)) s.push_back(shape()[size_t(i)]);
  return r.reshape(s);
}
Tensor Tensor::sum(std::vector<int64_t> axes, bool keepdim, const char* what) const {
  Tensor r = cast(sum_acc_dtype(dtype())).reduce(Ops::ADD, std::move(axes), keepdim, what);
  return dtype() == dtypes::float16 || dtype() == dtypes::bfloat16 ? r.cast(dtype()) : r;
}
Tensor Tensor::prod(std::vector<int64_t> axes, bool keepdim) const {
  Tensor r = cast(sum_acc_dtype(dtype())).reduce(Ops::MUL, std::move(axes), keepdim, "prod");
  return dtype() == dtypes::float16 || dtype() == dtypes::bfloat16 ? r.cast(dtype()) : r;
}
Tensor Tensor::max(std::vector<int64_t> axes, bool keepdim, const char* what) const { return reduce(Ops::MAX, std::move(axes), keepdim, what); }
Tensor order_inverse(const Tensor& t) {
  return dtypes::is_float(t.dtype()) ? t.neg() : dtypes::is_bool(t.dtype()) ? t.logical_not() : t.bitwise_not();
}
Tensor Tensor::min(std::vector<int64_t> axes, bool keepdim) const { return order_inverse(order_inverse(*this).max(std::move(axes), keepdim, "min")); }
Tensor Tensor::softmax(int64_t axis) const {
  Tensor x = cast(least_upper_float(dtype()));
  Tensor m = x.sub(x.max({axis}, true).detach());  // shift-invariant: the max needs no gradient
  Tensor e = m.exp();
  return e.div(e.sum({axis}, true));
}
Tensor Tensor::log_softmax(int64_t axis) const {
  Tensor x = cast(least_upper_float(dtype()));
  Tensor m = x.sub(x.max({axis}, true).detach());  // shift-invariant: the max needs no gradient
  return m.sub(m.exp().sum({axis}, true).log());
}

// ---- movement ----
Tensor Tensor::mv(Ops op, std::vector<int64_t> arg) const {
  UOpRef u = UOp::make(op, dtype(), {s_->uop}, std::move(arg));
  check_shape(u->shape(), dtype(), op_name(op).data());
  return Tensor(u, s_->device);
}
Tensor Tensor::reshape(Shape s) const {
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == -1) {
      TG_CHECK(infer < 0, TG_ERROR_SHAPE, "reshape: only one dimension can be -1 in " + shape_str(s));
      infer = int64_t(i);
    } else {
      TG_CHECK(s[i] >= 0, TG_ERROR_SHAPE, "reshape: negative dimension in " + shape_str(s));
      TG_CHECK(!__builtin_mul_overflow(known, s[i], &known), TG_ERROR_SHAPE, "reshape: shape " + shape_str(s) + " has more elements than fit in int64");
    }
  }
  if (infer >= 0) {
    TG_CHECK(known != 0 && numel() % known == 0, TG_ERROR_SHAPE, "reshape: can't reshape " + shape_str(shape()) + " to " + shape_str(s));
    s[size_t(infer)] = numel() / known;
  }
  TG_CHECK(tg::prod(s) == numel(), TG_ERROR_SHAPE, "reshape: can't reshape " + shape_str(shape()) + " to " + shape_str(s));
  if (s == shape()) return *this;
  Tensor r = mv(Ops::RESHAPE, s);
  auto count = [](const std::vector<const UOp*>& v) { return std::count_if(v.begin(), v.end(), [](const UOp* x) { return x != nullptr; }); };
  TG_CHECK(count(r.uop()->sym()) == count(uop()->sym()), TG_ERROR_UNSUPPORTED,
           "reshape: " + shape_str(shape()) + " to " + shape_str(s) + " would merge or split a Variable dimension");
  return r;
}
Tensor Tensor::reshape(Shape s, const std::vector<const UOp*>& sym) const {
  Tensor r = reshape(s);
  const auto& in = uop()->sym();
  if (in.empty() || r.uop()->sym() == sym || r.uop() == uop()) return r;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < sym.size() && i < s.size(); i++)
    if (sym[i]) dims.push_back(int64_t(i));
  // the wanted Variable dims must be the source's, in order, each at its size
  std::vector<size_t> from;
  for (size_t i = 0; i < in.size(); i++)
    if (in[i]) from.push_back(i);
  bool ok = from.size() == dims.size() && sym.size() == s.size();
  for (size_t k = 0; ok && k < dims.size(); k++) ok = in[from[k]] == sym[size_t(dims[k])] && shape()[from[k]] == s[size_t(dims[k])];
  TG_CHECK(ok, TG_ERROR_UNSUPPORTED, "reshape: " + sym_shape_str(*this) + " to " + sym_shape_str(s, sym) + " would merge or split a Variable dimension");
  return Tensor(UOp::make(Ops::RESHAPE, dtype(), {uop()}, std::vector<int64_t>(s), dims), device());
}
Tensor Tensor::permute(std::vector<int64_t> order) const {
  TG_CHECK(int64_t(order.size()) == ndim(), TG_ERROR_SHAPE, "permute: order " + shape_str(order) + " doesn't match shape " + shape_str(shape()));
  std::vector<bool> seen(order.size());
  for (auto& o : order) {
    o = resolve_axis(o, "permute");
    TG_CHECK(!seen[size_t(o)], TG_ERROR_SHAPE, "permute: order " + shape_str(order) + " repeats an axis");
    seen[size_t(o)] = true;
  }
  bool ident = true;
  for (size_t i = 0; i < order.size(); i++) ident &= order[i] == int64_t(i);
  return ident ? *this : mv(Ops::PERMUTE, order);
}
Tensor Tensor::expand(Shape s) const { return expand(std::move(s), {}); }
Tensor Tensor::expand(Shape s, const std::vector<const UOp*>& sym) const {
  TG_CHECK(s.size() >= shape().size(), TG_ERROR_SHAPE, "expand: can't expand " + shape_str(shape()) + " to " + shape_str(s));
  Shape src(s.size() - shape().size(), 1);
  src.insert(src.end(), shape().begin(), shape().end());
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == -1) s[i] = src[i];
    TG_CHECK(s[i] == src[i] || (src[i] == 1 && s[i] >= 0), TG_ERROR_SHAPE, "expand: can't expand " + shape_str(shape()) + " to " + shape_str(s));
  }
  check_shape(s, dtype(), "expand");
  Tensor r = reshape(src);
  // dims expanded to a Variable's size are bound to it: the EXPAND's tag lists them, its extra sources are their BINDs
  std::vector<int64_t> dims;
  UOps src_nodes{r.uop()};
  for (size_t i = 0; i < sym.size() && i < s.size(); i++)
    if (sym[i] && src[i] == 1 && (r.uop()->sym().empty() || !r.uop()->sym()[i])) dims.push_back(int64_t(i)), src_nodes.push_back(bound_var(sym[i], s[i]));
  if (dims.empty()) return s == src ? r : r.mv(Ops::EXPAND, s);
  return Tensor(UOp::make(Ops::EXPAND, dtype(), std::move(src_nodes), std::vector<int64_t>(s), dims), device());
}
// a view that changes a Variable dim's extent would make its size an expression of the Variable
static void check_sym_fixed(const Tensor& t, size_t dim, bool changes, const char* what) {
  TG_CHECK(!changes || t.uop()->sym().empty() || !t.uop()->sym()[dim], TG_ERROR_UNSUPPORTED,
           strformat("%s: dim %zu is bound to Variable '%s'; it can't be flipped or shrunk", what, dim, sym_name(t.uop()->sym()[dim]).c_str()));
}
Tensor Tensor::pad(const std::vector<std::pair<int64_t, int64_t>>& pads, double value) const {
  TG_CHECK(int64_t(pads.size()) == ndim(), TG_ERROR_SHAPE, strformat("pad: %zu pairs given for shape %s", pads.size(), shape_str(shape()).c_str()));
  std::vector<int64_t> arg;
  Shape out = shape();
  bool any = false;
  for (size_t i = 0; i < pads.size(); i++) {
    auto [b, a] = pads[i];
    TG_CHECK(b >= 0 && a >= 0, TG_ERROR_SHAPE, "pad: padding must be >= 0");
    TG_CHECK(!__builtin_add_overflow(out[i], b, &out[i]) && !__builtin_add_overflow(out[i], a, &out[i]), TG_ERROR_SHAPE,
             strformat("pad: padding (%lld,%lld) of dim %zu of shape %s overflows int64", (long long)b, (long long)a, i, shape_str(shape()).c_str()));
    arg.push_back(b), arg.push_back(a), any |= b || a;
  }
  check_shape(out, dtype(), "pad");
  if (!any) return *this;
  // a symbolic dim padded grows by the amounts: i+2
  const auto& sym = uop()->sym();
  std::vector<size_t> sym_dims;
  for (size_t i = 0; i < sym.size(); i++)
    if (sym[i] && (pads[i].first || pads[i].second)) sym_dims.push_back(i);
  if (!sym_dims.empty()) {
    auto plain = pads;
    for (size_t i : sym_dims) plain[i] = {0, 0};
    Tensor r = pad(plain, value);
    for (size_t i : sym_dims) r = r.pad_sym(int64_t(i), {pads[i].first}, sym_add({shape()[i], sym[i]->ref()}, {pads[i].first + pads[i].second}), value);
    return r;
  }
  Tensor p = mv(Ops::PAD, arg);
  if (value == 0) return p;
  Tensor mask = Tensor::full(shape(), 1, dtypes::bool_, s_->device).mv(Ops::PAD, arg);
  return mask.where(p, p.scalar_like(value).cast(dtype()));
}
Tensor Tensor::pad_to(int64_t axis, int64_t before, int64_t size, double value) const {
  TG_CHECK(ndim() > 0, TG_ERROR_SHAPE, "pad_to: a 0-d tensor has no dim to pad");
  int64_t d = resolve_axis(axis, "pad_to"), have = shape()[size_t(d)], room = 0;
  TG_CHECK(before >= 0 && !__builtin_sub_overflow(size, before, &room) && room >= have, TG_ERROR_SHAPE,
           strformat("pad_to: dim %lld of %s padded by %lld in front doesn't fit in %lld", (long long)d, sym_shape_str(*this).c_str(), (long long)before,
                     (long long)size));
  if (!uop()->sym().empty() && uop()->sym()[size_t(d)]) return pad_sym(d, {before}, {size}, value);
  std::vector<std::pair<int64_t, int64_t>> pads(size_t(ndim()), {0, 0});
  pads[size_t(d)] = {before, size - before - have};
  return pad(pads, value);
}
SymInt sym_add(const SymInt& a, const SymInt& b) {
  if (!a.e && !b.e) return {a.v + b.v};
  auto node = [](const SymInt& x) { return x.e ? x.e : UOp::const_int(dtypes::index, x.v); };
  return {a.v + b.v, (node(a) + node(b))->simplify()};
}
Tensor Tensor::pad_sym(int64_t axis, const SymInt& before, const SymInt& size, double value) const {
  int64_t d = resolve_axis(axis, "pad");
  const UOp* in = uop()->sym().empty() ? nullptr : uop()->sym()[size_t(d)];
  int64_t have = shape()[size_t(d)];
  auto largest = [](const SymInt& x) { return x.e ? sym_largest(x.e.get()) : x.v; };
  for (const SymInt* x : {&before, &size})
    TG_CHECK(!x->e || sym_grows(x->e.get()), TG_ERROR_UNSUPPORTED,
             "pad: the size " + sym_name(x->e.get()) + " doesn't grow with its Variables");
  TG_CHECK(before.v >= 0 && size.v - before.v >= have, TG_ERROR_SHAPE,
           strformat("pad: dim %lld of %s padded by %lld in front doesn't fit in %lld", (long long)d, sym_shape_str(*this).c_str(), (long long)before.v,
                     (long long)size.v));
  // every binding lays the buffer out at the largest values: the source there must fit too
  int64_t src_max = in ? sym_largest(in) : have;
  TG_CHECK(largest(before) + src_max <= largest(size), TG_ERROR_SHAPE,
           strformat("pad: dim %lld of %s, up to %lld, padded by %s in front doesn't fit in %s at the Variables' largest values", (long long)d,
                     sym_shape_str(*this).c_str(), (long long)src_max, before.e ? sym_name(before.e.get()).c_str() : std::to_string(before.v).c_str(),
                     size.e ? sym_name(size.e.get()).c_str() : std::to_string(size.v).c_str()));
  Shape out = shape();
  out[size_t(d)] = size.v;
  check_shape(out, dtype(), "pad");
  std::vector<int64_t> arg(2 * size_t(ndim()), 0);
  arg[2 * size_t(d)] = before.v, arg[2 * size_t(d) + 1] = size.v - before.v - have;
  auto carrier = [](const SymInt& x) { return x.e ? bound_var(x.e.get(), x.v) : UOp::const_int(dtypes::index, x.v); };
  auto padded = [&](const Tensor& t) {
    return Tensor(UOp::make(Ops::PAD, t.dtype(), {t.uop(), carrier(before), carrier(size)}, arg, std::vector<int64_t>{d}), t.device());
  };
  Tensor p = padded(*this);
  if (value == 0) return p;
  return padded(full_like(1).cast(dtypes::bool_)).where(p, p.scalar_like(value).cast(dtype()));
}
Tensor Tensor::shrink(const std::vector<std::pair<int64_t, int64_t>>& bounds) const {
  TG_CHECK(int64_t(bounds.size()) == ndim(), TG_ERROR_SHAPE, strformat("shrink: %zu pairs given for shape %s", bounds.size(), shape_str(shape()).c_str()));
  std::vector<int64_t> arg;
  bool any = false;
  for (size_t i = 0; i < bounds.size(); i++) {
    auto [s, e] = bounds[i];
    TG_CHECK(0 <= s && s <= e && e <= shape()[i], TG_ERROR_SHAPE,
             strformat("shrink: bounds (%lld,%lld) outside dim %zu of shape %s", (long long)s, (long long)e, i, shape_str(shape()).c_str()));
    arg.push_back(s), arg.push_back(e), any |= s != 0 || e != shape()[i];
    check_sym_fixed(*this, i, s != 0 || e != shape()[i], "shrink");
  }
  return any ? mv(Ops::SHRINK, arg) : *this;
}
std::string sym_shape_str(const Shape& s, const std::vector<const UOp*>& sym) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); i++)
    out += (i ? "," : "") + (i < sym.size() && sym[i] ? sym_name(sym[i]) + "=" + std::to_string(s[i]) : std::to_string(s[i]));
  return out + (s.size() == 1 ? ",)" : ")");
}
std::string sym_shape_str(const Tensor& t) { return sym_shape_str(t.shape(), t.uop()->sym()); }
Tensor Tensor::shrink_var(int64_t dim, const UOpRef& size, int64_t value, UOps inner) const {
  int64_t d = resolve_axis(dim, "shrink_var");
  TG_CHECK(size && dtypes::is_int(size->dtype) && !size->dtype.ptr && size->dtype.count == 1 && !sym_vars(size.get()).empty(), TG_ERROR_INVALID_ARGUMENT,
           "shrink_var: needs a Variable or an integer expression of Variables");
  std::string name = sym_name(size.get());
  TG_CHECK(ndim() > 0, TG_ERROR_SHAPE, "shrink_var: a 0-d tensor has no dim to bind");
  // as tinygrad, the range may pass the dim (a buffer laid out for the largest size is padded to it); the value may not
  int64_t lo = size->vmin(), hi = size->vmax();
  TG_CHECK(lo >= 0, TG_ERROR_SHAPE, strformat("shrink_var: %s in [%lld, %lld] can be negative", name.c_str(), (long long)lo, (long long)hi));
  // a size is laid out at its Variables' largest values: it must be largest there
  TG_CHECK(sym_grows(size.get()), TG_ERROR_UNSUPPORTED,
           "shrink_var: the size " + name + " doesn't grow with its Variables");
  TG_CHECK(value >= lo && value <= hi, TG_ERROR_INVALID_ARGUMENT,
           strformat("shrink_var: %lld is outside %s's range [%lld, %lld]", (long long)value, name.c_str(), (long long)lo, (long long)hi));
  TG_CHECK(value <= shape()[size_t(d)], TG_ERROR_SHAPE,
           strformat("shrink_var: %s=%lld is more than %lld, the size of dim %lld", name.c_str(), (long long)value, (long long)shape()[size_t(d)], (long long)d));
  check_sym_fixed(*this, size_t(d), true, "shrink_var");
  std::vector<int64_t> arg;
  for (int64_t i = 0; i < ndim(); i++) arg.push_back(0), arg.push_back(i == d ? value : shape()[size_t(i)]);
  return Tensor(UOp::make(Ops::SHRINK, dtype(), {uop(), bound_var(size.get(), value, std::move(inner))}, arg, std::vector<int64_t>{d}), device());
}
Tensor Tensor::shrink_sym(int64_t axis, int64_t start, const SymInt& size) const {
  int64_t d = resolve_axis(axis, "shrink");
  const UOp* in = uop()->sym().empty() ? nullptr : uop()->sym()[size_t(d)];
  int64_t have = shape()[size_t(d)], room = in ? sym_largest(in) : have, big = size.e ? sym_largest(size.e.get()) : size.v;
  TG_CHECK(start >= 0 && size.v >= 0 && start + size.v <= have && start + big <= room, TG_ERROR_SHAPE,
           strformat("shrink: %lld elements from %lld of dim %lld of %s (up to %lld) don't fit", (long long)size.v, (long long)start, (long long)d,
                     sym_shape_str(*this).c_str(), (long long)big));
  std::vector<int64_t> arg;
  for (int64_t i = 0; i < ndim(); i++) arg.push_back(i == d ? start : 0), arg.push_back(i == d ? start + size.v : shape()[size_t(i)]);
  UOpRef carrier = size.e ? bound_var(size.e.get(), size.v) : UOp::const_int(dtypes::index, size.v);  // a CONST: a plain dim
  return Tensor(UOp::make(Ops::SHRINK, dtype(), {uop(), carrier}, arg, std::vector<int64_t>{d}), device());
}
// A PAD by n - s in front to 2n, then the plain window from n: the index math is i + s whatever s is, and the layout
// the same (the padding before is largest at s's smallest value, the rest makes up 2n)
Tensor Tensor::shrink_at(int64_t axis, const UOpRef& start, int64_t value, int64_t size, UOps inner) const {
  TG_CHECK(ndim() > 0, TG_ERROR_SHAPE, "shrink_at: a 0-d tensor has no dim to shrink");
  int64_t d = resolve_axis(axis, "shrink_at");
  TG_CHECK(start && dtypes::is_int(start->dtype) && !start->dtype.ptr && start->dtype.count == 1 && !sym_vars(start.get()).empty(),
           TG_ERROR_INVALID_ARGUMENT, "shrink_at: the start must be a Variable or an integer expression of Variables");
  check_sym_fixed(*this, size_t(d), true, "shrink_at");
  int64_t n = shape()[size_t(d)], lo = start->vmin(), hi = start->vmax();
  std::string name = sym_name(start.get());
  TG_CHECK(lo >= 0 && hi <= n, TG_ERROR_SHAPE,
           strformat("shrink_at: the start %s in [%lld, %lld] leaves dim %lld of size %lld", name.c_str(), (long long)lo, (long long)hi, (long long)d, (long long)n));
  TG_CHECK(size >= 0 && value >= lo && value <= hi && value + size <= n, TG_ERROR_SHAPE,
           strformat("shrink_at: %lld elements from %s=%lld don't fit in dim %lld of size %lld", (long long)size, name.c_str(), (long long)value, (long long)d,
                     (long long)n));
  UOpRef before = (UOp::const_int(start->dtype, n) - start)->simplify();
  std::vector<int64_t> arg(2 * size_t(ndim()), 0);
  arg[2 * size_t(d)] = n - value, arg[2 * size_t(d) + 1] = value;
  UOpRef padded = UOp::make(Ops::PAD, dtype(), {uop(), bound_var(before.get(), n - value, std::move(inner)), UOp::const_int(dtypes::index, 2 * n)},
                            std::move(arg), std::vector<int64_t>{d});
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t i = 0; i < ndim(); i++) b.emplace_back(i == d ? n : 0, i == d ? n + size : shape()[size_t(i)]);
  return Tensor(padded, device()).shrink(b);
}
Tensor Tensor::flip(std::vector<int64_t> axes) const {
  std::vector<int64_t> flags(static_cast<size_t>(ndim()), 0);
  for (auto a : axes) {
    int64_t r = resolve_axis(a, "flip");
    if (ndim() == 0) continue;  // a scalar's only axis (0 or -1) flips to itself, as in torch
    TG_CHECK(!flags[size_t(r)], TG_ERROR_SHAPE, "flip: axis repeated");
    check_sym_fixed(*this, size_t(r), true, "flip");
    flags[size_t(r)] = 1;
  }
  return std::count(flags.begin(), flags.end(), 1) ? mv(Ops::FLIP, flags) : *this;
}
Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  std::vector<int64_t> order(static_cast<size_t>(ndim()));
  std::iota(order.begin(), order.end(), 0);
  int64_t a0 = resolve_axis(d0, "transpose"), a1 = resolve_axis(d1, "transpose");
  if (ndim() == 0) return *this;  // a scalar transposes to itself, as in torch
  std::swap(order[size_t(a0)], order[size_t(a1)]);
  return permute(order);
}

// An elementwise graph (down to buffers, reduces and realized values) with a transcendental, a division or more than a
// few ops: what a consumer that reads each element several times should not recompute (a ReLU or a bias add is cheap)
static bool costly_to_recompute(const UOp* root) {
  std::vector<const UOp*> stack{root};
  std::unordered_set<const UOp*> seen{root};
  int ops = 0;
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op == Ops::BUFFER || u->op == Ops::REDUCE_AXIS || u->op == Ops::CONTIGUOUS || u->op == Ops::CONST) continue;
    if (GroupOp::alu(u->op)) {
      if ((GroupOp::unary(u->op) && u->op != Ops::NEG) || u->op == Ops::FDIV || u->op == Ops::POW || ++ops > 6) return true;
    }
    for (auto& s : u->src)
      if (seen.insert(s.get()).second) stack.push_back(s.get());
  }
  return false;
}

Tensor Tensor::matmul(const Tensor& w) const {
  int64_t n1 = ndim(), n2 = w.ndim();
  TG_CHECK(n1 >= 1 && n2 >= 1, TG_ERROR_SHAPE, "matmul: both operands need at least 1 dimension, got shapes " + shape_str(shape()) + " and " + shape_str(w.shape()));
  int64_t kw = w.shape()[size_t(n2 - std::min<int64_t>(n2, 2))];
  TG_CHECK(shape().back() == kw, TG_ERROR_SHAPE, "matmul: shapes " + shape_str(shape()) + " and " + shape_str(w.shape()) + " don't match");
  int64_t ones = std::min<int64_t>({n1 - 1, n2 - 1, 1});
  Shape xs(shape().begin(), shape().end() - 1), ws(w.shape().begin(), w.shape().end() - std::min<int64_t>(n2, 2));
  xs.insert(xs.end(), size_t(ones), 1), xs.push_back(shape().back());
  ws.insert(ws.end(), size_t(ones), 1), ws.insert(ws.end(), w.shape().end() - std::min<int64_t>(n2, 2), w.shape().end());
  // a contracted dim bound to a Variable whose value is 1 beside the inserted 1s: say where it goes
  auto with_ones = [&](const Tensor& t, size_t at) {
    std::vector<const UOp*> s = t.uop()->sym();
    if (!s.empty()) s.insert(s.begin() + int64_t(at), size_t(ones), nullptr);
    return s;
  };
  // The left operand computed by elementwise ops (a layernorm's output, a GELU) is realized first when it has rows
  // enough for register tiles and more output columns than one vector block: fused, it is recomputed in every block of
  // columns (BERT-tiny's FFN down projection: GELU's erf 4x over, 0.37 ms against 0.07 for the plain matmul). A GEMV's
  // single row costs little to recompute and a kernel more to realize. The right operand is packed per column block
  // anyway (PACK), so its producer runs once.
  int64_t rows = numel() / std::max<int64_t>(1, shape().back());
  if (GroupOp::alu(uop()->op) && w.shape().back() > 32 && rows >= 16 && costly_to_recompute(uop().get())) return contiguous().matmul(w);
  Tensor x = reshape(xs, with_ones(*this, size_t(n1 - 1))), ww = w.reshape(ws, with_ones(w, size_t(n2 - std::min<int64_t>(n2, 2)))).transpose(-1, -std::min<int64_t>(n2, 2));
  return x.mul(ww).sum({-1}).cast(least_upper_dtype(dtype(), w.dtype()));
}

bool is_buffer_view(const UOp* u, int64_t numel) {
  // reshapes of reshapes (mnist's (N, 1, 28, 28) of (N, 28, 28)). Tensor::reshape keeps the chain: autograd reaches a
  // tensor's gradient through its own UOp, which a reshape folded onto its source's source would skip
  while (u->op == Ops::RESHAPE) u = u->src[0].get();
  return u->op == Ops::BUFFER && std::get<int64_t>(u->arg) == numel;
}
static thread_local std::vector<std::weak_ptr<TensorState>>* g_assign_log = nullptr;
AssignLog::AssignLog() : prev(g_assign_log) { g_assign_log = &tensors; }
AssignLog::~AssignLog() { g_assign_log = prev; }
void note_assign(const std::shared_ptr<TensorState>& s) {
  if (g_assign_log) g_assign_log->push_back(s);
}
Tensor Tensor::contiguous() const {
  // an assign realizes into its target's buffer, which is contiguous
  if (is_buffer_view(s_->uop.get(), numel()) || s_->uop->op == Ops::CONTIGUOUS || assign_arg(s_->uop.get())) return *this;
  return Tensor(UOp::make(Ops::CONTIGUOUS, dtype(), {s_->uop}), s_->device);
}
Tensor Tensor::detach() const { return Tensor(UOp::make(Ops::DETACH, dtype(), {s_->uop}), s_->device); }

Tensor& Tensor::realize() {
  realize_all({this});
  return *this;
}
void Tensor::realize_all(const std::vector<Tensor*>& ts) {
  // one schedule per device, in the order the devices first appear; tensors sharded over one tuple of devices together
  std::vector<std::pair<std::string, std::vector<Tensor*>>> groups;
  for (auto* t : ts) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](auto& x) { return x.first == t->s_->device; });
    if (g == groups.end()) g = groups.insert(groups.end(), {t->s_->device, {}});
    g->second.push_back(t);
  }
  if (groups.empty()) groups.push_back({"CPU", {}});
  for (auto& [dev, group] : groups) {
    if (is_multi_device(dev)) {
      realize_multi(group);
      continue;
    }
    std::vector<UOpRef> roots;
    for (auto* t : group) roots.push_back(t->s_->uop);
    std::vector<UOpRef> outs = realize_uops(roots, dev);
    for (size_t i = 0; i < group.size(); i++) group[i]->became(outs[i]);
  }
}
void Tensor::to_data(void* out, size_t nbytes) {
  size_t need = size_t(numel()) * size_t(dtype().itemsize());
  TG_CHECK(nbytes == need, TG_ERROR_INVALID_ARGUMENT,
           strformat("to_data: buffer of %zu bytes given, tensor %s of %s needs %zu", nbytes, shape_str(shape()).c_str(), dtype().name().c_str(), need));
  TG_CHECK(out || nbytes == 0, TG_ERROR_INVALID_ARGUMENT, "to_data: out is NULL");
  if (is_multi_device(device())) return multi_gather(*this, split_devices(device())[0]).to_data(out, nbytes);
  bool sym = !uop()->sym().empty();
  if (sym) {  // the symbolic graph runs (and stays) symbolic
    realize();
    // bound along its first dim only, its values are the first numel of the buffer laid out for the largest binding
    const UOp* v = uop().get();
    bool prefix = v->op == Ops::SHRINK;
    for (size_t i = 0, seen_big = 0; prefix && i < shape().size(); i++) {
      prefix &= v->arg_ints()[2 * i] == 0 && (v->sym()[i] ? !seen_big : v->arg_ints()[2 * i + 1] == v->src[0]->shape()[i]);
      seen_big |= shape()[i] != 1 || v->sym()[i] != nullptr;
    }
    const UOp* b = prefix ? v->src[0].get() : nullptr;
    while (b && b->op == Ops::RESHAPE) b = b->src[0].get();
    if (b && b->op == Ops::BUFFER) {
      if (nbytes) buffer_of(b)->copyout(out, nbytes, 0);
      return;
    }
  }
  // elsewhere bound, it is copied at this binding (a kernel for each bound value)
  Tensor c = sym ? Tensor(at_binding(uop()), device()).contiguous() : contiguous();
  c.realize();
  const UOp* b = c.s_->uop.get();
  while (b->op == Ops::RESHAPE) b = b->src[0].get();
  TG_CHECK(b->op == Ops::BUFFER, TG_ERROR_INTERNAL, "to_data: realized tensor is not a buffer");
  if (nbytes) buffer_of(b)->copyout(out, nbytes);
  if (!sym && s_->uop != c.s_->uop && !is_buffer_view(s_->uop.get(), numel())) became(c.s_->uop);  // keep the computed result
}

Tensor Tensor::to(const std::string& dev) const {
  if (is_multi_device(dev)) return shard(*this, split_devices(dev), std::nullopt);
  if (is_multi_device(device())) return multi_gather(*this, dev);
  get_device(dev);
  if (dev == device()) return *this;
  auto dst = std::make_shared<Buffer>(dev, dtype(), numel());
  copy_step(dst, contiguous_buffer("to"));
  return on_buffer(std::move(dst), shape());
}

void Tensor::replace(const Tensor& x) {
  TG_CHECK(x.shape() == shape(), TG_ERROR_SHAPE, "replace: shapes " + shape_str(shape()) + " and " + shape_str(x.shape()) + " differ");
  if (x.same(*this)) return;
  UOpRef old;
  std::shared_ptr<TensorState> g;
  {
    std::lock_guard<std::mutex> lk(tensor_state_mu());
    old = std::exchange(s_->uop, x.uop());
    s_->device = x.device();
    g = std::exchange(s_->grad, nullptr);
    s_->origin = UOpRef();
  }
}

std::shared_ptr<Buffer> Tensor::contiguous_buffer(const char* what) const {
  TG_CHECK(!is_multi_device(device()), TG_ERROR_UNSUPPORTED,
           std::string(what) + ": a tensor sharded over " + device() + "; gather it with to() first");
  TG_CHECK(uop()->sym().empty(), TG_ERROR_UNSUPPORTED, std::string(what) + ": a tensor with Variable dims; bind it first");
  Tensor c = contiguous();
  c.realize();
  const UOp* b = c.uop().get();
  while (b->op == Ops::RESHAPE) b = b->src[0].get();
  TG_CHECK(b->op == Ops::BUFFER && buffer_of(b)->size() == numel(), TG_ERROR_INTERNAL, std::string(what) + ": the realized tensor is not one buffer");
  return buffer_of(b);
}

Tensor Tensor::on_buffer(std::shared_ptr<Buffer> b, const Shape& shape) {
  std::string dev = b->device();
  return Tensor(view_as(buffer_uop(std::move(b)), shape), dev);
}


UOpRef rebind_vars(const UOpRef& root, const std::unordered_map<std::string, int64_t>& vals) {
  UOps topo = root->toposort();
  // a Variable not rebound keeps the value the graph binds it to: an expression of it and a rebound one changes too
  std::unordered_map<const UOp*, int64_t> old;
  for (auto& u : topo)
    if (u->op == Ops::BIND && u->src[0]->op == Ops::DEFINE_VAR) old[u->src[0].get()] = int64_t(u->src[1]->const_value());
  auto value = [&](const UOp* v) {
    auto it = vals.find(v->argv<VarArg>().name);
    if (it != vals.end()) return it->second;
    auto o = old.find(v);
    return o == old.end() ? int64_t(-1) : o->second;
  };
  auto now = [](const UOp* c) { return int64_t(c->op == Ops::BIND ? c->src[1]->const_value() : c->const_value()); };
  UOpMap<UOpRef> m;
  for (auto& u : topo) {
    UOps src;
    bool same = true;
    for (auto& x : u->src) src.push_back(m.count(x) ? m.at(x) : x), same &= src.back() == x;
    if (u->op == Ops::BIND) {
      int64_t v = sym_eval(u->src[0].get(), value);
      if (v >= 0) src[1] = UOp::const_int(u->dtype, v);
      m[u] = UOp::make(Ops::BIND, u->dtype, std::move(src));
    } else if (u->op == Ops::PAD && src.size() > 1) {
      // padded by symbolic amounts: the carriers' new values give the arg
      std::vector<int64_t> arg = u->arg_ints();
      auto& dims = std::get<std::vector<int64_t>>(u->tag);
      for (size_t k = 0; k < dims.size(); k++) {
        size_t d = size_t(dims[k]);
        arg[2 * d] = now(src[1 + 2 * k].get());
        arg[2 * d + 1] = now(src[2 + 2 * k].get()) - arg[2 * d] - src[0]->shape()[d];
      }
      m[u] = UOp::make(u->op, u->dtype, std::move(src), std::move(arg), u->tag);
    } else if (!u->sym().empty() && (u->op == Ops::RESHAPE || u->op == Ops::EXPAND || u->op == Ops::SHRINK)) {
      // a dim of a Variable that isn't rebound keeps its size
      auto size = [&](const UOp* e, int64_t cur) {
        int64_t v = sym_eval(e, value);
        return v >= 0 ? v : cur;
      };
      m[u] = UOp::make(u->op, u->dtype, std::move(src), sym_arg(u.get(), size), u->tag);
    } else if (!same) {
      m[u] = u->replace_src(std::move(src));
    }
  }
  return m.count(root) ? m.at(root) : root;
}
Tensor Tensor::rebind(const UOpRef& var, int64_t value) const {
  TG_CHECK(var && var->op == Ops::DEFINE_VAR, TG_ERROR_INVALID_ARGUMENT, "rebind: needs a plain Variable");
  auto& v = var->argv<VarArg>();
  TG_CHECK(value >= v.vmin && value <= v.vmax, TG_ERROR_INVALID_ARGUMENT,
           strformat("rebind: %lld is outside Variable '%s''s range [%lld, %lld]", (long long)value, v.name.c_str(), (long long)v.vmin, (long long)v.vmax));
  bool found = false;
  for (const UOp* s : uop()->sym())
    if (s)
      for (const UOp* x : sym_vars(s)) found |= x == var.get();
  TG_CHECK(found, TG_ERROR_INVALID_ARGUMENT, "rebind: no dim of this tensor is bound to Variable '" + v.name + "'");
  return Tensor(rebind_vars(uop(), {{v.name, value}}), device());
}

// The graph with every Variable at its bound value: plain dims, BINDs as constants.
UOpRef at_binding(const UOpRef& root) {
  UOpMap<UOpRef> m;
  for (auto& u : root->toposort()) {
    if (u->op == Ops::BIND) m[u] = u->src[1];
    else if ((u->op == Ops::EXPAND || u->op == Ops::SHRINK || u->op == Ops::PAD) && u->src.size() > 1) {
      const UOpRef& x = m.count(u->src[0]) ? m.at(u->src[0]) : u->src[0];
      m[u] = UOp::make(u->op, u->dtype, {x}, u->arg);
    } else {
      UOps src;
      bool same = true;
      for (auto& x : u->src) src.push_back(m.count(x) ? m.at(x) : x), same &= src.back() == x;
      if (!same) m[u] = u->replace_src(std::move(src));
    }
  }
  return m.count(root) ? m.at(root) : root;
}

}  // namespace tg
