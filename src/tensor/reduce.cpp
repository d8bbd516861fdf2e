// Reductions and scans built on sum/max: statistics, argmax, logsumexp, and the cumulative ops.
#include <algorithm>
#include <cmath>

#include "schedule/graph.h"
#include "tensor/tensor.h"

namespace tg {

std::vector<int64_t> Tensor::resolve_axes(std::vector<int64_t> axes, const char* what) const {
  if (axes.empty())
    for (int64_t i = 0; i < ndim(); i++) axes.push_back(i);
  for (auto& a : axes) a = resolve_axis(a, what);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (ndim() == 0) axes.clear();
  return axes;
}

namespace {
// The number of elements t reduces over `axes` (resolved), a tensor of like's dtype: with dims bound to Variables, a product of
// their BINDs, a value each kernel reads (a TinyJit replays it at every binding), not a constant.
Tensor reduced_count(const Tensor& t, const std::vector<int64_t>& axes, const Tensor& like) {
  double plain = 1;
  Tensor count = like.scalar_like(1);
  for (auto a : axes) {
    const UOp* v = t.uop()->sym()[size_t(a)];
    if (!v) plain *= double(t.shape()[size_t(a)]);
    else count = count.mul(Tensor(bound_var(v, t.shape()[size_t(a)]), t.device()).cast(like.dtype()));
  }
  return count.mul(like.scalar_like(plain));
}
}  // namespace

Tensor Tensor::mean(std::vector<int64_t> axes, bool keepdim) const {
  if (!uop()->sym().empty()) {
    std::vector<int64_t> ax = resolve_axes(axes, "mean");
    Tensor s = sum(ax, keepdim, "mean");
    Tensor f = s.cast(least_upper_float(s.dtype()));
    return f.div(reduced_count(*this, ax, f));
  }
  Tensor s = sum(axes, keepdim, "mean");
  double n = s.numel() == 0 ? 0 : double(numel()) / double(s.numel());
  if (s.numel() == 0 && numel() == 0) n = 1;
  if (numel() == 0 && s.numel() > 0) n = 0;  // mean over an empty axis is nan, like numpy
  Tensor f = s.cast(least_upper_float(s.dtype()));
  return f.div(f.scalar_like(n));
}
// sum((x - mean)^2) / max(0, N - correction), N the number of elements reduced
Tensor Tensor::var(std::vector<int64_t> axes, bool keepdim, double correction) const {
  axes = resolve_axes(axes, "var");
  Tensor x = cast(least_upper_float(dtype()));
  int64_t n = 1;
  for (auto a : axes) n *= shape()[size_t(a)];
  Tensor sq = x.sub(x.mean(axes, true)).square().sum(axes, keepdim, "var");
  if (!uop()->sym().empty()) return sq.div(reduced_count(*this, axes, sq).sub(sq.scalar_like(correction)).maximum(sq.scalar_like(0)));
  return sq.div(sq.scalar_like(std::max(0.0, double(n) - correction)));
}
Tensor Tensor::std(std::vector<int64_t> axes, bool keepdim, double correction) const { return var(std::move(axes), keepdim, correction).sqrt(); }
Tensor Tensor::any(std::vector<int64_t> axes, bool keepdim) const { return cast(dtypes::bool_).max(std::move(axes), keepdim, "any"); }
Tensor Tensor::all(std::vector<int64_t> axes, bool keepdim) const { return logical_not().any(std::move(axes), keepdim).logical_not(); }
// max + log(sum(exp(x - max))); an all -inf slice keeps -inf instead of making NaN
Tensor Tensor::logsumexp(std::vector<int64_t> axes, bool keepdim) const {
  axes = resolve_axes(axes, "logsumexp");
  Tensor x = cast(least_upper_float(dtype()));
  Tensor m = x.max(axes, true, "logsumexp");
  m = m.isinf().where(m.full_like(0), m).detach();
  Tensor r = x.sub(m.expand(x.shape())).exp().sum(axes, true, "logsumexp").log().add(m);
  if (keepdim) return r;
  Shape s;
  for (int64_t i = 0; i < ndim(); i++)
    if (!std::binary_search(axes.begin(), axes.end(), i)) s.push_back(shape()[size_t(i)]);
  return r.reshape(s);
}

// the first index of the max: mark the maxima, weight each by (N - i), and the largest weight is the first one
Tensor Tensor::argmax(std::optional<int64_t> axis, bool keepdim) const {
  if (!axis) {
    Tensor r = flatten().argmax(0);
    return keepdim ? r.reshape(Shape(shape().size(), 1)) : r;
  }
  int64_t ax = ndim() ? resolve_axis(*axis, "argmax") : (resolve_axis(*axis, "argmax"), 0);
  if (ndim() == 0) return full_like(0).cast(dtypes::int32);
  int64_t n = shape()[size_t(ax)];
  TG_CHECK(n > 0, TG_ERROR_SHAPE, "argmax: axis " + std::to_string(ax) + " of shape " + shape_str(shape()) + " is empty");
  Tensor is_max = eq(max({ax}, true, "argmax").expand(shape()));
  if (dtypes::is_float(dtype())) is_max = is_max.bitwise_or(isnan());  // NaN is the max, as numpy
  Shape rs(shape().size(), 1);
  rs[size_t(ax)] = n;
  Tensor weight = Tensor::arange(double(n), 0, -1, dtypes::int32, device()).reshape(rs).expand(shape());
  Tensor best = is_max.where(weight, weight.full_like(0)).max({ax}, keepdim, "argmax");
  return best.scalar_like(double(n)).cast(dtypes::int32).sub(best);
}
Tensor Tensor::argmin(std::optional<int64_t> axis, bool keepdim) const { return order_inverse(*this).argmax(axis, keepdim); }

// An inclusive scan along `axis` as one reduction over a triangle: out[..., j] = op over i <= j of x[..., i]. That is
// n^2 work for a scan of length n, but one fused kernel with no sequential dependence.
Tensor Tensor::cumalu(int64_t axis, Ops op, const char* what) const {
  if (ndim() == 0) return resolve_axis(axis, what), op == Ops::ADD ? cast(sum().dtype()) : *this;  // a sum's dtype, as tinygrad
  int64_t ax = resolve_axis(axis, what), n = shape()[size_t(ax)];
  Tensor x = transpose(ax, -1);  // scan along the last dim
  Shape s = x.shape();
  Shape xs = s, full = s;
  xs.insert(xs.end() - 1, 1);         // (..., 1, n): i runs along the last dim
  full.insert(full.end() - 1, n);     // (..., n, n): [j, i]
  Tensor i = Tensor::arange(0, double(n), 1, dtypes::int32, device());
  Tensor keep = i.reshape({1, n}).le(i.reshape({n, 1}));  // [j, i]: i <= j
  Shape ks(full.size(), 1);
  ks[ks.size() - 2] = n, ks.back() = n;
  keep = keep.reshape(ks).expand(full);
  Tensor xe = x.reshape(xs).expand(full);
  double id = op == Ops::ADD ? 0 : op == Ops::MUL ? 1 : dtypes::is_float(dtype()) ? -INFINITY : dtypes::min(dtype());
  Tensor masked = keep.where(xe, xe.full_like(id));
  Tensor r = op == Ops::ADD ? masked.sum({-1}) : op == Ops::MUL ? masked.prod({-1}) : masked.max({-1});
  return r.transpose(ax, -1);
}
Tensor Tensor::cumsum(int64_t axis) const { return cumalu(axis, Ops::ADD, "cumsum"); }
Tensor Tensor::cumprod(int64_t axis) const { return cumalu(axis, Ops::MUL, "cumprod"); }
Tensor Tensor::cummax(int64_t axis) const { return cumalu(axis, Ops::MAX, "cummax"); }
Tensor Tensor::cummin(int64_t axis) const { return order_inverse(order_inverse(*this).cumalu(axis, Ops::MAX, "cummin")); }

}  // namespace tg
