// Python-style indexing (tinygrad's __getitem__ / __setitem__): ints, slices with any step, None, an ellipsis and
// int tensors (numpy's advanced indexing). Basic indices are views: shrink, flip for negative steps, and a
// pad-reshape-shrink that keeps every step-th element. Tensor indices compare against an arange and reduce, so the
// lookup is generated inside the consumer's kernel.
#include <algorithm>
#include <numeric>

#include "tensor/tensor.h"

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
  bool is_int;
  int64_t n, first, len, step;  // source size; first element; number kept; step
};

}  // namespace

Tensor Tensor::getitem(const std::vector<Index>& idx_in) const {
  std::vector<Index> idx = expand_ellipsis(idx_in, ndim());
  // basic indexing: per input dim, shrink to the touched range, flip for negative steps, keep every step-th element
  Tensor x = *this;
  Shape after;               // the shape after basic indexing, before new axes are inserted and int dims removed
  std::vector<int64_t> keep;  // for each entry: the dim of x it maps to, or -1 (new axis), -2 (int: dropped)
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
  for (auto& ix : idx)
    TG_CHECK(ix.kind != Index::TensorIdx, TG_ERROR_UNSUPPORTED, "setitem: tensor indices are not supported in assignment (use scatter)");
  TG_CHECK(value.device() == device(), TG_ERROR_DEVICE, "setitem: value is on " + value.device() + ", the tensor on " + device());
  Tensor sel = getitem(idx_in);  // checks the indices, gives the target shape
  Tensor v = value.cast(dtype());
  Shape vs = v.shape();
  TG_CHECK(vs.size() <= sel.shape().size(), TG_ERROR_SHAPE, "setitem: value of shape " + shape_str(vs) + " doesn't broadcast to " + shape_str(sel.shape()));
  v = v.expand(sel.shape());
  Tensor mask = Tensor::full(sel.shape(), 1, dtypes::bool_, device());
  // undo the indexing: remove new axes, restore int dims, then per dim invert stride, flip and shrink
  Shape plain;
  size_t d = 0, k = 0;
  std::vector<DimOp> ops;
  for (auto& ix : idx) {
    if (ix.kind == Index::NewAxis) {
      k++;
      continue;
    }
    int64_t n = shape()[d];
    if (ix.kind == Index::Int) ops.push_back({true, n, ix.start < 0 ? ix.start + n : ix.start, 1, 1}), plain.push_back(1);
    else {
      DimSlice sl = normalize(ix, n);
      ops.push_back({false, n, sl.start, sl.len, sl.step}), plain.push_back(sl.len), k++;
    }
    d++;
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
