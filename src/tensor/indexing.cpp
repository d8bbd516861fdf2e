// Python-style indexing (tinygrad's __getitem__ / __setitem__): ints, slices with any step, None, an ellipsis and
// int tensors (numpy's advanced indexing). Basic indices are views: shrink, flip for negative steps, and a
// pad-reshape-shrink that keeps every step-th element. Tensor indices compare against an arange and reduce, so the
// lookup is generated inside the consumer's kernel.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "tensor/tensor.h"
#include "uop/spec.h"

namespace tg {

namespace {

using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// one dim's slice, normalized as Python's slice.indices(n) does
struct DimSlice {
  int64_t start, len, step;  // start index, number of elements, step (!= 0)
};
DimSlice normalize(const Index& ix, int64_t n) {
  int64_t step = ix.has_step ? ix.step : 1;
  TG_CHECK(step != 0, TG_ERROR_INVALID_ARGUMENT, "getitem: slice step cannot be zero");
  TG_CHECK(step != INT64_MIN, TG_ERROR_INVALID_ARGUMENT, "getitem: slice step is too large");
  // Python's slice.indices: negative counts from the end, then clamp to [0, n] (step > 0) or [-1, n-1] (step < 0)
  int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
  auto bound = [&](int64_t v) { return std::min(std::max(v < 0 ? (v < -n ? lo : v + n) : v, lo), hi); };
  int64_t start = ix.has_start ? bound(ix.start) : (step > 0 ? 0 : n - 1);
  int64_t stop = ix.has_stop ? bound(ix.stop) : (step > 0 ? n : -1);
  int64_t len = step > 0 ? (stop > start ? (stop - start - 1) / step + 1 : 0) : (start > stop ? (start - stop - 1) / (-step) + 1 : 0);
  return {start, len, step};
}

// the entries spelled out: one per input dim (int, slice, tensor) plus new axes; the ellipsis filled with full slices
std::vector<Index> expand_ellipsis(const std::vector<Index>& idx, int64_t ndim) {
  int64_t used = 0, ell = 0;
  for (auto& i : idx) used += i.kind == Index::Int || i.kind == Index::Slice || i.kind == Index::TensorIdx, ell += i.kind == Index::Ellipsis;
  TG_CHECK(ell <= 1, TG_ERROR_INVALID_ARGUMENT, "getitem: an index can only have a single ellipsis");
  TG_CHECK(used <= ndim, TG_ERROR_SHAPE, strformat("getitem: too many indices (%lld) for a tensor of %lld dims", (long long)used, (long long)ndim));
  std::vector<Index> out;
  for (auto& i : idx) {
    if (i.kind == Index::Ellipsis)
      for (int64_t k = 0; k < ndim - used; k++) out.push_back(Index{Index::Slice});
    else out.push_back(i);
  }
  if (!ell)
    for (int64_t k = 0; k < ndim - used; k++) out.push_back(Index{Index::Slice});
  return out;
}

// every step-th element of dim d (len elements kept): pad to len*step, view as (len, step), keep column 0
Tensor stride_dim(const Tensor& x, size_t d, int64_t step, int64_t len) {
  if (step == 1) return x;
  int64_t n = x.shape()[d], total;
  TG_CHECK(!__builtin_mul_overflow(len, step, &total), TG_ERROR_SHAPE, "getitem: slice too large");
  Pairs p(x.shape().size(), {0, 0}), b;
  Tensor y = total >= n ? x.pad((p[d] = {0, total - n}, p)) : x.shrink([&] {
    for (auto s : x.shape()) b.emplace_back(0, s);
    b[d] = {0, total};
    return b;
  }());
  Shape s = y.shape();
  s[d] = len, s.insert(s.begin() + long(d) + 1, step);
  y = y.reshape(s);
  Pairs k;
  for (auto v : y.shape()) k.emplace_back(0, v);
  k[d + 1] = {0, 1};
  s.erase(s.begin() + long(d) + 1);
  return y.shrink(k).reshape(s);
}
// the inverse for setitem: len elements back to their places in n, zeros between
Tensor unstride_dim(const Tensor& v, size_t d, int64_t step, int64_t n) {
  if (step == 1) return v;
  int64_t len = v.shape()[d];
  Shape s = v.shape();
  s.insert(s.begin() + long(d) + 1, 1);
  Pairs p(s.size(), {0, 0});
  p[d + 1] = {0, step - 1};
  Tensor y = v.reshape(s).pad(p);
  Shape m = v.shape();
  m[d] = len * step;
  y = y.reshape(m);
  Pairs b;
  for (auto x : m) b.emplace_back(0, x);
  b[d] = {0, std::min(n, len * step)};
  y = y.shrink(b);
  if (y.shape()[d] < n) {
    Pairs q(m.size(), {0, 0});
    q[d] = {0, n - y.shape()[d]};
    y = y.pad(q);
  }
  return y;
}

// what basic indexing does to each input dim, so setitem can undo it
struct DimOp {
  int64_t n, first, len, step;  // source size; first element; number kept; step
};

}  // namespace

Tensor Tensor::getitem(const std::vector<Index>& idx_in) const {
  std::vector<Index> idx = expand_ellipsis(idx_in, ndim());
  // basic indexing: per input dim, shrink to the touched range, flip for negative steps, keep every step-th element
  Tensor x = *this;
  std::vector<std::pair<int64_t, Tensor>> tidx;  // (dim in the result of basic indexing, index tensor)
  size_t d = 0;
  Shape out;
  for (auto& ix : idx) {
    if (ix.kind == Index::NewAxis) {
      out.push_back(1);
      continue;
    }
    int64_t n = shape()[d];
    if (ix.kind == Index::Int) {
      int64_t i = ix.start < 0 ? ix.start + n : ix.start;
      TG_CHECK(ix.start >= -n && i < n, TG_ERROR_SHAPE,
               strformat("getitem: index %lld is out of bounds for dim %zu with size %lld", (long long)ix.start, d, (long long)n));
      Pairs b;
      for (auto s : x.shape()) b.emplace_back(0, s);
      b[d] = {i, i + 1};
      x = x.shrink(b);
    } else if (ix.kind == Index::Slice) {
      DimSlice sl = normalize(ix, n);
      int64_t lo = sl.step > 0 ? sl.start : sl.start - (sl.len - 1) * (-sl.step), hi = sl.step > 0 ? sl.start + (sl.len - 1) * sl.step + 1 : sl.start + 1;
      if (sl.len == 0) lo = hi = 0;
      Pairs b;
      for (auto s : x.shape()) b.emplace_back(0, s);
      b[d] = {lo, hi};
      x = x.shrink(b);
      if (sl.step < 0) x = x.flip({int64_t(d)});
      x = stride_dim(x, d, sl.step < 0 ? -sl.step : sl.step, sl.len);
      out.push_back(sl.len);
    } else {  // a tensor index: the dim stays whole for now
      TG_CHECK(ix.tensor && dtypes::is_int(ix.tensor->dtype()), TG_ERROR_DTYPE,
               "getitem: tensor indices must be int tensors" + std::string(ix.tensor ? ", got " + ix.tensor->dtype().name() : ""));
      TG_CHECK(ix.tensor->device() == device(), TG_ERROR_DEVICE, "getitem: index tensor is on " + ix.tensor->device() + ", the tensor on " + device());
      tidx.emplace_back(int64_t(out.size()), *ix.tensor);
      out.push_back(n);
    }
    d++;
  }
  // drop int dims, insert new axes: one reshape
  Tensor r = x.reshape(out);
  if (tidx.empty()) return r;
  // advanced indexing: broadcast the index tensors to one shape B; result[B..., rest...] = sum over the indexed dims of
  // r[rest..., s...] * prod_j (I_j[B] == s_j)
  Shape bshape;
  for (auto& [dim, t] : tidx) {
    Shape a = bshape, b = t.shape();
    size_t m = std::max(a.size(), b.size());
    Shape o(m);
    for (size_t i = 0; i < m; i++) {
      int64_t p = i + a.size() >= m ? a[i + a.size() - m] : 1, q = i + b.size() >= m ? b[i + b.size() - m] : 1;
      TG_CHECK(p == q || p == 1 || q == 1, TG_ERROR_SHAPE, "getitem: index tensors of shapes " + shape_str(a) + " and " + shape_str(b) + " don't broadcast");
      o[i] = p == 1 ? q : p;
    }
    bshape = o;
  }
  std::vector<int64_t> rest, idims;
  for (int64_t i = 0; i < r.ndim(); i++) {
    bool indexed = std::any_of(tidx.begin(), tidx.end(), [&](auto& p) { return p.first == i; });
    (indexed ? idims : rest).push_back(i);
  }
  std::vector<int64_t> perm = rest;
  perm.insert(perm.end(), idims.begin(), idims.end());
  Tensor xr = r.permute(perm);  // (rest..., s...)
  size_t nb = bshape.size(), nr = rest.size(), nk = idims.size();
  Shape full = bshape;
  for (auto i : rest) full.push_back(r.shape()[size_t(i)]);
  for (auto i : idims) full.push_back(r.shape()[size_t(i)]);
  Shape xs(nb, 1);
  xs.insert(xs.end(), xr.shape().begin(), xr.shape().end());
  Tensor prod = xr.reshape(xs).expand(full);
  for (size_t j = 0; j < nk; j++) {
    Tensor it = tidx[j].second;
    int64_t n = r.shape()[size_t(tidx[j].first)];
    Tensor i64 = it.cast(dtypes::int64);
    Tensor zero(UOp::const_int(dtypes::int64, 0), device());
    i64 = i64.lt(zero).where(i64.add(Tensor(UOp::const_int(dtypes::int64, n), device())), i64);  // negative from the end
    Shape is(nb - size_t(it.ndim()), 1);
    is.insert(is.end(), it.shape().begin(), it.shape().end());
    is.insert(is.end(), nr + nk, 1);
    Shape ar(nb + nr + nk, 1);
    ar[nb + nr + j] = n;
    Tensor eq = i64.reshape(is).expand(full).eq(Tensor::arange(0, double(n), 1, dtypes::int64, device()).reshape(ar).expand(full));
    prod = eq.where(prod, prod.full_like(0));
  }
  std::vector<int64_t> axes;
  for (size_t j = 0; j < nk; j++) axes.push_back(int64_t(nb + nr + j));
  Tensor res = (dtypes::is_bool(dtype()) ? prod.any(axes) : prod.sum(axes)).cast(dtype());  // (B..., rest...)
  // numpy: consecutive indexed dims put B where they were; separated ones put B first
  bool consecutive = idims.back() - idims.front() == int64_t(nk) - 1;
  if (!consecutive || idims.front() == 0) return res;
  std::vector<int64_t> back;
  int64_t at = idims.front();  // rest dims before the indexed block, then B, then the others
  for (int64_t i = 0; i < at; i++) back.push_back(int64_t(nb) + i);
  for (size_t i = 0; i < nb; i++) back.push_back(int64_t(i));
  for (int64_t i = at; i < int64_t(nr); i++) back.push_back(int64_t(nb) + i);
  return res.permute(back);
}

Tensor& Tensor::setitem(const std::vector<Index>& idx_in, const Tensor& value) {
  std::vector<Index> idx = expand_ellipsis(idx_in, ndim());
  TG_CHECK(value.device() == device(), TG_ERROR_DEVICE, "setitem: value is on " + value.device() + ", the tensor on " + device());
  if (std::any_of(idx.begin(), idx.end(), [](const Index& ix) { return ix.kind == Index::TensorIdx; })) {
    // advanced indices: the flat position of every selected element (the same index applied to an arange: the gather
    // of an arange sums away in closed form, so this costs the selection's size), then the values put there (an element
    // selected twice takes the last value, as numpy). The arange counts from 1: an out-of-range index selects nothing
    // (getitem's one-hot gives 0), so its position is -1 and put skips it, as tinygrad's masked setitem, instead of
    // writing element 0
    Tensor pos = Tensor::arange(1, double(numel()) + 1, 1, dtypes::int64, device()).reshape(shape()).getitem(idx_in);
    pos = pos.sub(Tensor(UOp::const_int(dtypes::int64, 1), device()));
    Tensor v = value.cast(dtype());
    TG_CHECK(v.ndim() <= pos.ndim(), TG_ERROR_SHAPE, "setitem: value of shape " + shape_str(v.shape()) + " doesn't broadcast to " + shape_str(pos.shape()));
    return assign(put(pos, v));
  }
  Tensor sel = getitem(idx_in);  // checks the indices, gives the target shape
  Tensor v = value.cast(dtype());
  Shape vs = v.shape();
  TG_CHECK(vs.size() <= sel.shape().size(), TG_ERROR_SHAPE, "setitem: value of shape " + shape_str(vs) + " doesn't broadcast to " + shape_str(sel.shape()));
  v = v.expand(sel.shape());
  Tensor mask = Tensor::full(sel.shape(), 1, dtypes::bool_, device());
  // undo the indexing: remove new axes, restore int dims, then per dim invert stride, flip and shrink
  Shape plain;
  size_t d = 0;
  std::vector<DimOp> ops;
  for (auto& ix : idx) {
    if (ix.kind == Index::NewAxis) continue;
    int64_t n = shape()[d++];
    if (ix.kind == Index::Int) ops.push_back({n, ix.start < 0 ? ix.start + n : ix.start, 1, 1}), plain.push_back(1);
    else {
      DimSlice sl = normalize(ix, n);
      ops.push_back({n, sl.start, sl.len, sl.step}), plain.push_back(sl.len);
    }
  }
  v = v.reshape(plain), mask = mask.reshape(plain);
  for (size_t i = 0; i < ops.size(); i++) {
    const DimOp& o = ops[i];
    if (o.len == 0) continue;
    int64_t step = o.step < 0 ? -o.step : o.step, span = (o.len - 1) * step + 1;
    v = unstride_dim(v, i, step, span), mask = unstride_dim(mask, i, step, span);
    if (o.step < 0) v = v.flip({int64_t(i)}), mask = mask.flip({int64_t(i)});
    int64_t lo = o.step > 0 ? o.first : o.first - (o.len - 1) * step;
    Pairs p(v.shape().size(), {0, 0});
    p[i] = {lo, o.n - lo - span};
    v = v.pad(p), mask = mask.pad(p);
  }
  if (std::any_of(ops.begin(), ops.end(), [](auto& o) { return o.len == 0; })) return *this;  // nothing selected
  return assign(mask.where(v, *this));
}

}  // namespace tg

namespace tg {

// Sorting by ranks: rank[i] = #{j : x[j] before x[i]} (ties by position, so it is stable), then out[r] is the element
// whose rank is r. n^2 comparisons per row, all in fused kernels with no data-dependent control flow.
std::pair<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  if (ndim() == 0) return resolve_axis(dim, "sort"), std::pair{*this, full_like(0).cast(dtypes::int32)};
  int64_t d = resolve_axis(dim, "sort"), n = shape()[size_t(d)];
  Tensor x = transpose(d, -1);  // sort along the last dim
  Shape s = x.shape(), sij = s, si = s, sj = s;
  sij.push_back(n);             // (..., i, j)
  si.push_back(1);              // x[i] along dim -2
  sj.insert(sj.end() - 1, 1);   // x[j] along dim -1
  Tensor xi = x.reshape(si).expand(sij), xj = x.reshape(sj).expand(sij);
  Tensor ar = Tensor::arange(0, double(n), 1, dtypes::int32, device());
  Shape ri(sij.size(), 1), rj(sij.size(), 1);
  ri[ri.size() - 2] = n, rj.back() = n;
  Tensor ii = ar.reshape(ri).expand(sij), jj = ar.reshape(rj).expand(sij);
  // NaN sorts last ascending (first descending), as torch: compare with NaN mapped above every number
  auto before = [&](const Tensor& a, const Tensor& b) {  // a strictly before b
    Tensor lt = descending ? a.gt(b) : a.lt(b);
    if (!dtypes::is_float(dtype())) return lt;
    Tensor an = a.isnan(), bn = b.isnan();
    return descending ? an.bitwise_and(bn.logical_not()).bitwise_or(lt) : bn.bitwise_and(an.logical_not()).bitwise_or(lt);
  };
  Tensor same = before(xj, xi).logical_not().bitwise_and(before(xi, xj).logical_not());
  Tensor rank = before(xj, xi).bitwise_or(same.bitwise_and(jj.lt(ii))).cast(dtypes::int32).sum({-1});  // (..., i)
  // out[..., r] = x[..., i] with rank[i] == r: a one-hot over (i, r) reduced along i
  Tensor hit = rank.reshape(si).expand(sij).eq(jj);  // [i, r]
  Tensor vals = hit.where(xi, xi.full_like(0));
  Tensor sorted = (dtypes::is_bool(dtype()) ? vals.any({-2}) : vals.sum({-2})).cast(dtype());
  Tensor idx = hit.where(ii, ii.full_like(0)).sum({-2}).cast(dtypes::int32);
  return {sorted.transpose(d, -1), idx.transpose(d, -1)};
}
Tensor Tensor::argsort(int64_t dim, bool descending) const { return sort(dim, descending).second; }
std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest) const {
  int64_t d = resolve_axis(dim, "topk"), n = ndim() ? shape()[size_t(d)] : 1;
  TG_CHECK(k >= 0 && k <= n, TG_ERROR_SHAPE, strformat("topk: k = %lld for a dim of size %lld", (long long)k, (long long)n));
  // A long dim and a small k (a sampler's top 40 of a 32000-token vocabulary): the k first of each chunk of m, then the
  // k first of those. The sort ranks by comparing every pair (n^2: 1e9 for 32000); this is about n*m + (n/m*k)^2. The
  // same elements in the same order: the sort is stable by index, and the candidates keep the chunks' index order.
  // Padding sorts after every element (NaN sorts last ascending, -inf after NaN descending; ties go by index)
  int64_t m = k > 0 ? std::max<int64_t>(k, int64_t(std::cbrt(2.0 * double(n) * double(k) * double(k)))) : n;
  if (ndim() > 0 && n >= 4096 && 4 * m <= n) {
    int64_t c = (n + m - 1) / m;
    Tensor x = transpose(d, -1);
    Shape lead(x.shape().begin(), x.shape().end() - 1), cs = lead, ks = lead;
    cs.insert(cs.end(), {c, m});
    ks.push_back(c * k);
    double pad = !largest && dtypes::is_float(dtype()) ? NAN : largest ? (dtypes::is_float(dtype()) ? -INFINITY : dtypes::min(dtype())) : dtypes::max(dtype());
    Pairs p(lead.size(), {0, 0});
    p.emplace_back(0, c * m - n);
    auto [cv, ci] = x.pad(p, pad).reshape(cs).topk(k, -1, largest);  // (..., c, k), chunk-local indices
    Shape base(cs.size(), 1);
    base[base.size() - 2] = c;
    Tensor at = ci.add(Tensor::arange(0, double(c * m), double(m), ci.dtype(), device()).reshape(base)).reshape(ks);
    auto [v, j] = cv.reshape(ks).topk(k, -1, largest);
    return {v.transpose(d, -1), at.gather(-1, j.cast(dtypes::int64)).cast(ci.dtype()).transpose(d, -1)};
  }
  auto [v, i] = sort(dim, largest);
  if (ndim() == 0) return {v, i};
  std::vector<std::pair<int64_t, int64_t>> b;
  for (auto s : shape()) b.emplace_back(0, s);
  b[size_t(d)] = {0, k};
  return {v.shrink(b), i.shrink(b)};
}

Tensor Tensor::put(const Tensor& pos, const Tensor& values, const std::string& reduce) const {
  TG_CHECK(dtypes::is_int(pos.dtype()), TG_ERROR_DTYPE, "put: positions must be an int tensor, got " + pos.dtype().name());
  TG_CHECK(pos.device() == device() && values.device() == device(), TG_ERROR_DEVICE,
           "put: positions on " + pos.device() + " and values on " + values.device() + ", the tensor on " + device());
  TG_CHECK(spec::scatter_reduce_known(reduce), TG_ERROR_INVALID_ARGUMENT, "put: unknown reduce '" + reduce + "' (replace, sum, prod, amax, amin)");
  for (const Tensor* t : {this, &pos, &values})
    TG_CHECK(t->uop()->sym().empty() || std::none_of(t->uop()->sym().begin(), t->uop()->sym().end(), [](const UOp* v) { return v; }),
             TG_ERROR_UNSUPPORTED, "put: a tensor with a symbolic dim (" + shape_str(t->shape()) + "); positions are of the plain layout");
  Tensor v = values.cast(dtype());
  TG_CHECK(v.ndim() <= pos.ndim(), TG_ERROR_SHAPE, "put: values of shape " + shape_str(v.shape()) + " don't broadcast to positions " + shape_str(pos.shape()));
  v = v.expand(pos.shape());
  return Tensor(UOp::make(Ops::SCATTER, dtype(), {uop(), pos.uop(), v.uop()}, reduce), device());
}

// scatter_reduce: out[.. index[..i..] ..] = reduce(self there (include_self), src[..i..] for every i pointing there).
// Each source element's flat position in self (index along dim, its own coordinates elsewhere), then put: the work is
// the index's size. An index outside [0, n) along dim writes nothing.
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce, bool include_self) const {
  int64_t d = resolve_axis(dim, "scatter_reduce");
  TG_CHECK(ndim() > 0, TG_ERROR_SHAPE, "scatter_reduce: a 0-d tensor has no dim to scatter along");
  TG_CHECK(dtypes::is_int(index.dtype()), TG_ERROR_DTYPE, "scatter_reduce: index must be an int tensor, got " + index.dtype().name());
  TG_CHECK(index.ndim() == ndim() && src.ndim() == ndim(), TG_ERROR_SHAPE,
           "scatter_reduce: self " + shape_str(shape()) + ", index " + shape_str(index.shape()) + " and src " + shape_str(src.shape()) + " differ in rank");
  for (int64_t i = 0; i < ndim(); i++)
    TG_CHECK(index.shape()[size_t(i)] <= src.shape()[size_t(i)] && (i == d || index.shape()[size_t(i)] <= shape()[size_t(i)]), TG_ERROR_SHAPE,
             "scatter_reduce: index " + shape_str(index.shape()) + " is larger than src " + shape_str(src.shape()) + " or self " + shape_str(shape()));
  TG_CHECK(src.dtype() == dtype(), TG_ERROR_DTYPE, "scatter_reduce: src is " + src.dtype().name() + ", the tensor " + dtype().name() + " (tinygrad casts neither)");
  TG_CHECK(reduce == "mean" || spec::scatter_reduce_known(reduce), TG_ERROR_INVALID_ARGUMENT,
           "scatter_reduce: unknown reduce '" + reduce + "' (sum, prod, mean, amax, amin)");
  int64_t n = shape()[size_t(d)];
  std::vector<std::pair<int64_t, int64_t>> b;
  for (auto s : index.shape()) b.emplace_back(0, s);
  Tensor s = src.shrink(b);
  auto i64 = [&](int64_t v) { return Tensor(UOp::const_int(dtypes::int64, v), device()); };
  Tensor at = index.cast(dtypes::int64), pos = at.full_like(0);
  Shape strides(size_t(ndim()), 1);
  for (int64_t i = ndim() - 1; i > 0; i--) strides[size_t(i - 1)] = strides[size_t(i)] * shape()[size_t(i)];
  for (int64_t i = 0; i < ndim(); i++) {
    Shape as(size_t(ndim()), 1);
    as[size_t(i)] = index.shape()[size_t(i)];
    Tensor c = i == d ? at : Tensor::arange(0, double(as[size_t(i)]), 1, dtypes::int64, device()).reshape(as).expand(index.shape());
    pos = pos.add(c.mul(i64(strides[size_t(i)])));
  }
  pos = at.ge(i64(0)).bitwise_and(at.lt(i64(n))).where(pos, i64(-1));
  if (reduce == "replace") return put(pos, s);
  // without self, the elements a source reaches start from the reduce's identity
  Tensor touched = Tensor::full(shape(), 0, dtypes::bool_, device()).put(pos, Tensor::full(Shape{}, 1, dtypes::bool_, device()));
  double id = reduce == "prod" ? 1 : reduce == "amax" ? (dtypes::is_float(dtype()) ? -INFINITY : dtypes::min(dtype()))
            : reduce == "amin" ? (dtypes::is_float(dtype()) ? INFINITY : dtypes::max(dtype())) : 0;
  Tensor base = include_self ? *this : touched.where(full_like(id), *this);
  if (reduce != "mean") return base.put(pos, s, reduce);
  Tensor sum = base.put(pos, s, "sum");
  Tensor cnt = Tensor::full(shape(), include_self ? 1 : 0, dtypes::int32, device()).put(pos, Tensor::full(Shape{}, 1, dtypes::int32, device()), "sum");
  Tensor c = touched.where(cnt, cnt.full_like(1)).cast(dtype()), mean = c;  // 1 where untouched: no 0/0 in the gradient
  if (dtypes::is_float(dtype())) mean = sum.div(c);
  else {  // floored, as torch
    Tensor q = sum.idiv(c);
    mean = q.mul(c).ne(sum).bitwise_and(sum.lt(sum.full_like(0))).where(q.sub(q.full_like(1)), q);
  }
  return touched.where(mean.cast(dtype()), *this);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const { return scatter_reduce(dim, index, src, "replace", false); }
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const { return mask.where(value.cast(dtype()), *this); }

// The result's length depends on the data: the count is read back first (one small realize), then the positions come
// from a prefix sum of the mask, compared against arange(count).
Tensor Tensor::nonzero() const {
  TG_CHECK(numel() <= (int64_t(1) << 24), TG_ERROR_UNSUPPORTED,
           "nonzero: " + std::to_string(numel()) + " elements; at most 2^24 (the positions take count x numel work)");
  Tensor flat = flatten().ne(full_like(0).flatten());
  int64_t n = flat.shape()[0];
  Tensor cnt = flat.cast(dtypes::int64).sum();
  int64_t count = 0;
  cnt.to_data(&count, sizeof count);
  Tensor pos = flat.cast(dtypes::int64).cumsum(0).sub(Tensor(UOp::const_int(dtypes::int64, 1), device()));  // slot of each hit
  Tensor k = Tensor::arange(0, double(count), 1, dtypes::int64, device());
  Tensor sel = flat.reshape({1, n}).expand({count, n}).bitwise_and(pos.reshape({1, n}).expand({count, n}).eq(k.reshape({count, 1}).expand({count, n})));
  Tensor i = Tensor::arange(0, double(n), 1, dtypes::int64, device()).reshape({1, n}).expand({count, n});
  Tensor lin = sel.where(i, i.full_like(0)).sum({1});  // flat index of each hit, in order
  std::vector<Tensor> coords;
  int64_t stride = n;
  for (auto s : (ndim() ? shape() : Shape{1})) {
    stride = s ? stride / s : 0;
    Tensor st(UOp::const_int(dtypes::int64, std::max<int64_t>(stride, 1)), device()), sz(UOp::const_int(dtypes::int64, std::max<int64_t>(s, 1)), device());
    coords.push_back(lin.idiv(st).mod(sz).unsqueeze(1));
  }
  if (ndim() == 0) return Tensor::full({count, 0}, 0, dtypes::int64, device());
  return Tensor::cat(coords, 1);
}
// tinygrad's nonzero(size=, fill_value=) and masked_select(size=, fill_value=): `size` result rows (the first hits in
// row-major order; fill_value past the count), no read-back, so it stays lazy and jittable; size < 0 reads the count back.
// Hit k is the element whose prefix count of hits is k + 1: a (size, numel) match reduced to its flat index.
static Tensor nth_hits(const Tensor& flat_hit, int64_t& size, std::optional<Tensor>& valid, const char* what) {
  int64_t n = flat_hit.shape()[0];
  TG_CHECK(n <= (int64_t(1) << 24), TG_ERROR_UNSUPPORTED,
           strformat("%s: %lld elements; at most 2^24 (the positions take size x numel work)", what, (long long)n));
  Tensor hit32 = flat_hit.cast(dtypes::int32);
  Tensor count = hit32.sum();
  if (size < 0) {
    int32_t c = 0;
    count.to_data(&c, sizeof c);
    size = c;
  }
  TG_CHECK(size <= (int64_t(1) << 24), TG_ERROR_UNSUPPORTED, strformat("%s: size %lld is over 2^24", what, (long long)size));
  Tensor pos = hit32.cumsum(0).sub(Tensor(UOp::const_int(dtypes::int32, 1), flat_hit.device()));
  Tensor k = Tensor::arange(0, double(size), 1, dtypes::int32, flat_hit.device());
  valid = k.lt(count.reshape({1}).expand({size}));
  Tensor sel = flat_hit.reshape({1, n}).expand({size, n}).bitwise_and(pos.reshape({1, n}).expand({size, n}).eq(k.reshape({size, 1}).expand({size, n})));
  Tensor i = Tensor::arange(0, double(n), 1, dtypes::int32, flat_hit.device()).reshape({1, n}).expand({size, n});
  return sel.where(i, i.full_like(0)).sum({1}).cast(dtypes::int32);  // flat index of hit k (0 past the count)
}
Tensor Tensor::nonzero_sized(int64_t size, double fill_value) const {
  Tensor flat = flatten().ne(full_like(0).flatten());
  std::optional<Tensor> valid;
  Tensor lin = nth_hits(flat, size, valid, "nonzero");
  if (ndim() == 0) return Tensor::full({size, 0}, 0, dtypes::int32, device());
  std::vector<Tensor> coords;
  int64_t stride = numel();
  // the coordinates are int32: a fill that isn't a finite value of it would be a silent wrap (or undefined)
  TG_CHECK(std::isfinite(fill_value) && fill_value >= -2147483648.0 && fill_value <= 2147483647.0, TG_ERROR_INVALID_ARGUMENT,
           strformat("nonzero: fill_value %g is not an int32 (the coordinates' dtype)", fill_value));
  Tensor fill(UOp::const_int(dtypes::int32, int64_t(fill_value)), device());
  for (auto s : shape()) {
    stride = s ? stride / s : 0;
    Tensor st(UOp::const_int(dtypes::int32, std::max<int64_t>(stride, 1)), device()), sz(UOp::const_int(dtypes::int32, std::max<int64_t>(s, 1)), device());
    coords.push_back(valid->where(lin.idiv(st).mod(sz), fill.expand({size})).unsqueeze(1));
  }
  return Tensor::cat(coords, 1);
}
Tensor Tensor::masked_select_sized(const Tensor& mask, int64_t size, double fill_value) const {
  TG_CHECK(dtypes::is_bool(mask.dtype()), TG_ERROR_DTYPE, "masked_select: mask must be a bool tensor, got " + mask.dtype().name());
  Tensor m = mask;
  if (m.ndim() < ndim()) {  // broadcast to self's shape: size-1 dims in front first
    Shape s(size_t(ndim() - m.ndim()), 1);
    s.insert(s.end(), m.shape().begin(), m.shape().end());
    m = m.reshape(s);
  }
  if (m.shape() != shape()) m = m.expand(shape());
  Tensor x = flatten();
  std::optional<Tensor> valid;
  Tensor lin = nth_hits(m.flatten(), size, valid, "masked_select");
  if (size == 0 || x.shape()[0] == 0) return Tensor::full({size}, fill_value, dtype(), device());
  Tensor picked = x.getitem({Index{Index::TensorIdx, 0, 0, 1, false, false, false, std::make_shared<Tensor>(lin)}});
  return valid->where(picked, Tensor(UOp::const_(dtype(), fill_value), device()).expand({size}));
}
// a new buffer holding t's values: a CONTIGUOUS even over a realized buffer (contiguous() would return t itself)
Tensor Tensor::clone() const { return Tensor(UOp::make(Ops::CONTIGUOUS, dtype(), {s_->uop}), s_->device); }
Tensor Tensor::masked_select(const Tensor& mask) const {
  Tensor m = mask.cast(dtypes::bool_);
  Tensor a = broadcasted(m.cast(dtype()), "masked_select").first;
  Tensor full = m.expand(a.shape());
  Tensor idx = full.nonzero();  // (count, ndim)
  int64_t count = idx.shape()[0];
  if (count == 0) return Tensor::full({0}, 0, dtype(), device());
  Tensor l(UOp::const_int(dtypes::int64, 0), device());
  int64_t stride = 1;
  for (int64_t i = a.ndim() - 1; i >= 0; i--) {
    Tensor c = idx.shrink({{0, count}, {i, i + 1}}).reshape({count});
    l = l.add(c.mul(Tensor(UOp::const_int(dtypes::int64, stride), device())));
    stride *= a.shape()[size_t(i)];
  }
  return a.expand(a.shape()).flatten().getitem({Index{Index::TensorIdx, 0, 0, 1, false, false, false, std::make_shared<Tensor>(l)}});
}

}  // namespace tg
