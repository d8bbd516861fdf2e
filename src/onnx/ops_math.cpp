// ONNX elementwise math, activations, logic, casts, reductions and matmuls, each lowered to Tensor ops. ONNX binary
// ops take operands of one type (Pow and BitShift aside), so Tensor's promotion leaves their dtype alone; the unary
// float functions keep the input's dtype (a float16 input stays float16).
#include <cmath>

#include "onnx/onnx.h"

namespace tg::onnx {

using Vals = std::vector<Value>;

// a 0-d constant of like's dtype: broadcasts against like without promoting it
static Tensor cst(const Tensor& like, double v) { return Tensor(UOp::const_(like.dtype(), v), like.device()); }
static bool is_half(DType d) { return d == dtypes::float16 || d == dtypes::bfloat16; }

// ---- elementwise ----
template <Tensor (Tensor::*F)() const>
static Vals unary(OpCtx& c) {
  const Tensor& x = c.x(0);
  return {(x.*F)().cast(x.dtype())};
}
template <Tensor (Tensor::*F)() const>
static Vals predicate(OpCtx& c) {
  return {(c.x(0).*F)()};
}
template <Tensor (Tensor::*F)(const Tensor&) const>
static Vals binary(OpCtx& c) {
  return {(c.x(0).*F)(c.x(1))};
}

// integer Div truncates toward zero, as C's
static Vals div_op(OpCtx& c) {
  const Tensor &a = c.x(0), &b = c.x(1);
  return {dtypes::is_int(a.dtype()) ? a.idiv(b) : a.div(b)};
}
// fmod=0: the divisor's sign (numpy's mod); fmod=1: the dividend's (C's fmod). Halves go through float32, whose
// quotient is exact enough that the remainder rounds once, as numpy's.
static Vals mod_op(OpCtx& c) {
  Tensor a = c.x(0), b = c.x(1);
  DType dt = a.dtype();
  if (is_half(dt)) a = a.cast(dtypes::float32), b = b.cast(dtypes::float32);
  return {(c.i("fmod", 0) ? a.fmod(b) : a.mod(b)).cast(dt)};
}
// the result has the base's dtype; an integer base with a float exponent truncates as numpy's astype, except where
// float64 pow lands an ulp off an exact integer power
static Vals pow_op(OpCtx& c) {
  const Tensor &a = c.x(0), &b = c.x(1);
  if (dtypes::is_bool(a.dtype()) || dtypes::is_bool(b.dtype())) c.unsupported("Pow of bool tensors");
  // a constant scalar exponent (an initializer: LayerNorm's 2) as a constant, so Tensor::pow can multiply
  if (dtypes::is_float(a.dtype()) && b.numel() == 1 && b.ndim() <= a.ndim() && !c.from_inputs(b))
    return {a.pow(a.scalar_like(c.read_floats(b)[0])).cast(a.dtype())};
  if (dtypes::is_float(a.dtype()) || !dtypes::is_float(b.dtype())) return {a.pow(b).cast(a.dtype())};
  Tensor r = a.cast(dtypes::float64).pow(b.cast(dtypes::float64)), near = r.round();
  Tensor exact = r.sub(near).abs().le(near.abs().add(cst(near, 1)).mul(cst(near, 1e-12)));
  return {exact.where(near, r.trunc()).cast(a.dtype())};
}
static Vals bitshift_op(OpCtx& c) {
  std::string d = c.s("direction", "");
  if (d == "LEFT") return {c.x(0).lshift(c.x(1))};
  if (d == "RIGHT") return {c.x(0).rshift(c.x(1))};
  c.invalid("direction must be LEFT or RIGHT, got '" + d + "'");
}
static Vals isinf_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  bool pos = c.i("detect_positive", 1) != 0, neg = c.i("detect_negative", 1) != 0;
  if (!dtypes::is_float(x.dtype()) || (!pos && !neg)) return {x.full_like(0).cast(dtypes::bool_)};
  if (pos && neg) return {x.isinf()};
  return {x.eq(cst(x, pos ? INFINITY : -INFINITY))};
}
static Vals where_op(OpCtx& c) { return {c.x(0).where(c.x(1), c.x(2))}; }
static Vals not_op(OpCtx& c) { return {c.x(0).logical_not()}; }

// min/max are attributes before opset 11, optional inputs from 11 (integer types too); NaN passes through
static Vals clip_op(OpCtx& c) {
  Tensor x = c.x(0);
  std::optional<Tensor> lo, hi;
  if (c.opset < 11) {
    if (c.has_attr("min")) lo = cst(x, c.f("min", 0));
    if (c.has_attr("max")) hi = cst(x, c.f("max", 0));
  } else {
    lo = c.opt(1), hi = c.opt(2);
  }
  // min first, then max: with min > max every element is max, as numpy's clip
  if (lo) x = x.lt(*lo).where(lo->cast(x.dtype()), x);
  if (hi) x = x.gt(*hi).where(hi->cast(x.dtype()), x);
  return {x};
}

// ---- variadic ----
static Tensor fold(OpCtx& c, Tensor (Tensor::*f)(const Tensor&) const) {
  if (c.n_in() == 0) c.invalid("needs at least one input");
  Tensor r = c.x(0);
  for (size_t k = 1; k < c.n_in(); k++) r = (r.*f)(c.x(k));
  return r;
}
static Vals max_op(OpCtx& c) { return {fold(c, &Tensor::maximum)}; }
static Vals min_op(OpCtx& c) { return {fold(c, &Tensor::minimum)}; }
static Vals sum_op(OpCtx& c) { return {fold(c, &Tensor::add)}; }
static Vals mean_op(OpCtx& c) {
  Tensor s = fold(c, &Tensor::add);
  if (c.n_in() == 1) return {s};
  return {s.div(cst(s, double(c.n_in()))).cast(s.dtype())};
}

// ---- activations ----
static Vals leaky_relu_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  return {x.leaky_relu(c.f("alpha", 0.01)).cast(x.dtype())};
}
static Vals elu_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  return {x.elu(c.f("alpha", 1.0)).cast(x.dtype())};
}
static Vals celu_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  return {x.celu(c.f("alpha", 1.0)).cast(x.dtype())};
}
// gamma * (x > 0 ? x : alpha * (exp(x) - 1)), with the spec's float32 defaults
static Vals selu_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  double alpha = c.f("alpha", 1.67326319217681884765625), gamma = c.f("gamma", 1.05070102214813232421875);
  Tensor neg = x.exp().sub(cst(x, 1)).mul(cst(x, alpha));
  return {x.gt(cst(x, 0)).where(x, neg).mul(cst(x, gamma)).cast(x.dtype())};
}
static Vals hard_sigmoid_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  return {x.mul(cst(x, c.f("alpha", 0.2))).add(cst(x, c.f("beta", 0.5))).clamp(0, 1).cast(x.dtype())};
}
static Vals softplus_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  return {x.softplus().cast(x.dtype())};
}
static Vals thresholded_relu_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  return {x.gt(cst(x, c.f("alpha", 1.0))).where(x, cst(x, 0))};
}
static Vals prelu_op(OpCtx& c) {
  const Tensor &x = c.x(0), &slope = c.x(1);
  return {x.lt(cst(x, 0)).where(x.mul(slope), x).cast(x.dtype())};
}
// x < -lambd: x + bias; x > lambd: x - bias; else 0 (in float, so unsigned inputs don't wrap at -lambd)
static Vals shrink_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  Tensor f = x.cast(least_upper_float(x.dtype()));
  double l = c.f("lambd", 0.5), b = c.f("bias", 0.0);
  Tensor r = f.lt(cst(f, -l)).where(f.add(cst(f, b)), f.gt(cst(f, l)).where(f.sub(cst(f, b)), cst(f, 0)));
  return {r.cast(x.dtype())};
}

// ---- casts ----
static Vals cast_op(OpCtx& c) {
  if (!c.has_attr("to")) c.invalid("needs the 'to' attribute");
  return {c.x(0).cast(to_dtype(int32_t(c.i("to", 0)), c.where() + ": Cast to"))};
}
static Vals cast_like_op(OpCtx& c) { return {c.x(0).cast(c.x(1).dtype())}; }
// passes any value through: a tensor, a sequence, or an absent optional
static Vals identity_op(OpCtx& c) {
  if (c.n_in() == 0) c.invalid("needs an input");
  return {c.in[0]};
}

// ---- reductions ----
enum class Red { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };
// axes: an attribute before opset 13 (ReduceSum) / 18 (the others), an optional input after. Empty axes reduce every
// axis, or none with noop_with_empty_axes (the elementwise part, e.g. the square, still applies). The result keeps
// the input's dtype; halves accumulate in float32.
template <Red R>
static Vals reduce_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  bool from_input = c.opset >= (R == Red::Sum ? 13 : 18);
  std::vector<int64_t> axes = from_input ? (c.has(1) ? c.host_ints(1) : std::vector<int64_t>{}) : c.ints("axes");
  bool keep = c.i("keepdims", 1) != 0, noop = axes.empty() && c.i("noop_with_empty_axes", 0) != 0;
  axes = norm_axes(axes, x.ndim(), c);
  Tensor w = is_half(x.dtype()) ? x.cast(dtypes::float32) : x;
  auto sum = [&](const Tensor& t) { return noop ? t : t.sum(axes, keep); };
  Tensor r = w;
  switch (R) {
    case Red::Sum: r = sum(w); break;
    case Red::Mean: r = noop ? w : w.mean(axes, keep); break;
    case Red::Max: r = noop ? w : w.max(axes, keep); break;
    case Red::Min: r = noop ? w : w.min(axes, keep); break;
    case Red::Prod: r = noop ? w : w.prod(axes, keep); break;
    case Red::L1: r = sum(w.abs()); break;
    case Red::L2: r = sum(w.square()).sqrt(); break;
    case Red::LogSum: r = sum(w).log(); break;
    case Red::LogSumExp: r = noop ? w : w.logsumexp(axes, keep); break;
    case Red::SumSquare: r = sum(w.square()); break;
  }
  return {r.cast(x.dtype())};
}
// int64 indices; select_last_index: the first index of the flipped axis, counted from the end
template <bool Min>
static Vals arg_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t ax = norm_axis(c.i("axis", 0), x.ndim(), c);
  bool keep = c.i("keepdims", 1) != 0, last = c.i("select_last_index", 0) != 0;
  Tensor t = last ? x.flip({ax}) : x;
  Tensor r = Min ? t.argmin(ax, keep) : t.argmax(ax, keep);
  if (last) r = cst(r, double(x.shape()[size_t(ax)] - 1)).sub(r);
  return {r.cast(dtypes::int64)};
}

enum class Smx { Soft, LogSoft, Hard };
// before opset 13 the input is coerced to 2-D, (dims before axis) x (dims from axis), and normalized along the second;
// from 13 along the axis itself
template <Smx K>
static Vals softmax_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  bool coerce = c.opset < 13;
  int64_t ax = norm_axis(c.i("axis", coerce ? 1 : -1), x.ndim(), c);
  auto along = [&](const Tensor& t, int64_t a) {
    if (K == Smx::Soft) return t.softmax(a);
    if (K == Smx::LogSoft) return t.log_softmax(a);
    // one-hot of the first maximum
    int64_t n = t.shape()[size_t(a)];
    Shape rs(size_t(t.ndim()), 1);
    rs[size_t(a)] = n;
    return Tensor::arange(0, double(n), 1, dtypes::int32, t.device()).reshape(rs).eq(t.argmax(a, true)).cast(t.dtype());
  };
  if (!coerce) return {along(x, ax).cast(x.dtype())};
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.ndim(); i++) (i < ax ? outer : inner) *= x.shape()[size_t(i)];
  return {along(x.reshape({outer, inner}), 1).reshape(x.shape()).cast(x.dtype())};
}
// exclusive: shift in a zero along the axis; reverse: scan from the end
static Vals cumsum_op(OpCtx& c) {
  Tensor x = c.x(0);
  std::vector<int64_t> a = c.host_ints(1);
  if (a.size() != 1) c.invalid("axis must hold one value");
  int64_t ax = norm_axis(a[0], x.ndim(), c), n = x.shape()[size_t(ax)];
  bool reverse = c.i("reverse", 0) != 0;
  if (reverse) x = x.flip({ax});
  if (c.i("exclusive", 0)) {
    std::vector<std::pair<int64_t, int64_t>> pads(size_t(x.ndim()), {0, 0}), bounds;
    pads[size_t(ax)] = {1, 0};
    for (int64_t i = 0; i < x.ndim(); i++) bounds.push_back({0, x.shape()[size_t(i)]});
    x = x.pad(pads).shrink(bounds);
  }
  Tensor r = n ? x.cumsum(ax) : x;
  if (reverse) r = r.flip({ax});
  return {r.cast(c.x(0).dtype())};
}

// ---- matmul ----
static Vals matmul_op(OpCtx& c) {
  const Tensor &a = c.x(0), &b = c.x(1);
  return {a.matmul(b).cast(a.dtype())};
}
// alpha * A' @ B' + beta * C, C broadcast to (M, N)
static Vals gemm_op(OpCtx& c) {
  Tensor a = c.x(0), b = c.x(1);
  if (a.ndim() != 2 || b.ndim() != 2) c.invalid("A and B must be 2-D");
  if (c.i("transA", 0)) a = a.transpose();
  if (c.i("transB", 0)) b = b.transpose();
  double alpha = c.f("alpha", 1.0), beta = c.f("beta", 1.0);
  Tensor r = a.matmul(b);
  if (alpha != 1) r = r.mul(cst(r, alpha));
  if (auto bias = c.opt(2)) r = r.add(beta == 1 ? *bias : bias->mul(cst(*bias, beta)));
  return {r.cast(c.x(0).dtype())};
}
// (A - a_zero_point) @ (B - b_zero_point) in int32; a per-row zero point of A (M,) lines up with A's rows, a per-column
// one of B (N,) broadcasts as it is
static Vals matmul_integer_op(OpCtx& c) {
  auto shifted = [&](size_t k) {
    Tensor t = c.x(k).cast(dtypes::int32);
    if (auto zp = c.opt(k + 2)) {
      Tensor z = zp->cast(dtypes::int32);
      if (k == 0 && z.ndim() == 1 && z.numel() > 1) z = z.unsqueeze(-1);
      t = t.sub(z);
    }
    return t;
  };
  return {shifted(0).matmul(shifted(1))};
}
static Vals einsum_op(OpCtx& c) {
  std::vector<Tensor> xs;
  for (size_t k = 0; k < c.n_in(); k++) xs.push_back(c.x(k));
  if (xs.empty()) c.invalid("needs at least one input");
  if (!c.has_attr("equation")) c.invalid("needs the 'equation' attribute");
  return {Tensor::einsum(c.s("equation", ""), xs).cast(xs[0].dtype())};
}

// rows [r0, r1) and columns [c0, c1) of the last two dims
static Tensor block(const Tensor& t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t i = 0; i + 2 < t.ndim(); i++) b.push_back({0, t.shape()[size_t(i)]});
  b.push_back({r0, r1}), b.push_back({c0, c1});
  return t.shrink(b);
}
// Gaussian elimination with partial pivoting, unrolled over the matrix size (a shape, so the graph is static): det is
// the product of the pivots, negated once per row swap. Each step swaps the pivot row to the top with one-hot masks
// and leaves the (s-1)x(s-1) Schur complement.
static Vals det_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t nd = x.ndim();
  if (nd < 2 || x.shape()[size_t(nd - 1)] != x.shape()[size_t(nd - 2)]) c.invalid("needs square matrices in the last two dims");
  if (!dtypes::is_float(x.dtype())) c.unsupported("Det of " + x.dtype().name() + " tensors");
  Tensor m = is_half(x.dtype()) ? x.cast(dtypes::float32) : x;
  int64_t n = x.shape().back();
  Shape batch(x.shape().begin(), x.shape().end() - 2), ones = batch;
  ones.push_back(1), ones.push_back(1);
  Tensor det = Tensor::full(ones, 1, m.dtype(), x.device());
  for (int64_t s = n; s > 0; s--) {
    Tensor p = block(m, 0, s, 0, 1).abs().argmax(nd - 2, true);  // (..., 1, 1): the pivot's row
    Tensor pick = Tensor::arange(0, double(s), 1, dtypes::int32, x.device()).reshape({s, 1}).eq(p).cast(m.dtype());  // (..., s, 1)
    Tensor prow = m.mul(pick).sum({nd - 2}, true), top = block(m, 0, 1, 0, s);                                         // (..., 1, s)
    Tensor pivot = block(prow, 0, 1, 0, 1);
    det = det.mul(pivot).mul(p.ne(cst(p, 0)).where(cst(m, -1), cst(m, 1)));
    if (s == 1) break;
    Tensor rest = block(m, 1, s, 0, s).add(block(pick, 1, s, 0, 1).mul(top.sub(prow)));  // rows 1.. after the swap
    Tensor safe = pivot.eq(cst(pivot, 0)).where(cst(pivot, 1), pivot);                 // a zero pivot: det is 0 already
    m = block(rest, 0, s - 1, 1, s).sub(block(rest, 0, s - 1, 0, 1).div(safe).mul(block(prow, 0, 1, 1, s)));
  }
  return {det.reshape(batch).cast(x.dtype())};
}

void add_math_ops(OpTable& t) {
  t["Add"] = binary<&Tensor::add>, t["Sub"] = binary<&Tensor::sub>, t["Mul"] = binary<&Tensor::mul>, t["Div"] = div_op;
  t["Pow"] = pow_op, t["Mod"] = mod_op;
  t["Neg"] = unary<&Tensor::neg>, t["Abs"] = unary<&Tensor::abs>, t["Exp"] = unary<&Tensor::exp>, t["Log"] = unary<&Tensor::log>;
  t["Sqrt"] = unary<&Tensor::sqrt>, t["Reciprocal"] = unary<&Tensor::reciprocal>;
  t["Sin"] = unary<&Tensor::sin>, t["Cos"] = unary<&Tensor::cos>, t["Tan"] = unary<&Tensor::tan>;
  t["Asin"] = unary<&Tensor::asin>, t["Acos"] = unary<&Tensor::acos>, t["Atan"] = unary<&Tensor::atan>;
  t["Sinh"] = unary<&Tensor::sinh>, t["Cosh"] = unary<&Tensor::cosh>, t["Asinh"] = unary<&Tensor::asinh>;
  t["Acosh"] = unary<&Tensor::acosh>, t["Atanh"] = unary<&Tensor::atanh>, t["Erf"] = unary<&Tensor::erf>;
  t["Sign"] = unary<&Tensor::sign>, t["Floor"] = unary<&Tensor::floor>, t["Ceil"] = unary<&Tensor::ceil>, t["Round"] = unary<&Tensor::round>;
  t["IsNaN"] = predicate<&Tensor::isnan>, t["IsInf"] = isinf_op;
  t["Relu"] = unary<&Tensor::relu>, t["LeakyRelu"] = leaky_relu_op, t["Elu"] = elu_op, t["Celu"] = celu_op, t["Selu"] = selu_op;
  t["Sigmoid"] = unary<&Tensor::sigmoid>, t["HardSigmoid"] = hard_sigmoid_op, t["HardSwish"] = unary<&Tensor::hardswish>;
  t["Softplus"] = softplus_op, t["Softsign"] = unary<&Tensor::softsign>, t["Tanh"] = unary<&Tensor::tanh>, t["Mish"] = unary<&Tensor::mish>;
  t["ThresholdedRelu"] = thresholded_relu_op, t["PRelu"] = prelu_op, t["Clip"] = clip_op, t["Shrink"] = shrink_op;
  t["Max"] = max_op, t["Min"] = min_op, t["Sum"] = sum_op, t["Mean"] = mean_op;
  t["Equal"] = binary<&Tensor::eq>, t["Less"] = binary<&Tensor::lt>, t["LessOrEqual"] = binary<&Tensor::le>;
  t["Greater"] = binary<&Tensor::gt>, t["GreaterOrEqual"] = binary<&Tensor::ge>;
  t["And"] = binary<&Tensor::bitwise_and>, t["Or"] = binary<&Tensor::bitwise_or>, t["Xor"] = binary<&Tensor::bitwise_xor>, t["Not"] = not_op;
  t["BitShift"] = bitshift_op, t["BitwiseAnd"] = binary<&Tensor::bitwise_and>, t["BitwiseOr"] = binary<&Tensor::bitwise_or>;
  t["BitwiseXor"] = binary<&Tensor::bitwise_xor>, t["BitwiseNot"] = unary<&Tensor::bitwise_not>;
  t["Where"] = where_op, t["Cast"] = cast_op, t["CastLike"] = cast_like_op, t["Identity"] = identity_op;
  t["ReduceSum"] = reduce_op<Red::Sum>, t["ReduceMean"] = reduce_op<Red::Mean>, t["ReduceMax"] = reduce_op<Red::Max>;
  t["ReduceMin"] = reduce_op<Red::Min>, t["ReduceProd"] = reduce_op<Red::Prod>, t["ReduceL1"] = reduce_op<Red::L1>;
  t["ReduceL2"] = reduce_op<Red::L2>, t["ReduceLogSum"] = reduce_op<Red::LogSum>, t["ReduceLogSumExp"] = reduce_op<Red::LogSumExp>;
  t["ReduceSumSquare"] = reduce_op<Red::SumSquare>;
  t["ArgMax"] = arg_op<false>, t["ArgMin"] = arg_op<true>;
  t["Softmax"] = softmax_op<Smx::Soft>, t["LogSoftmax"] = softmax_op<Smx::LogSoft>, t["Hardmax"] = softmax_op<Smx::Hard>;
  t["CumSum"] = cumsum_op, t["Einsum"] = einsum_op, t["MatMul"] = matmul_op, t["Gemm"] = gemm_op;
  t["MatMulInteger"] = matmul_integer_op, t["Det"] = det_op;
}

}  // namespace tg::onnx
