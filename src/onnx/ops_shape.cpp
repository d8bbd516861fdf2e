// ONNX movement, indexing, constant, sequence and optional operators, lowered to Tensor views and gathers. Shapes,
// axes, pads and slice bounds are read on the host (c.host_ints); the data never is, except where the output's size
// depends on it (NonZero, Compress, Unique), and then only the count comes back.
#include <algorithm>
#include <numeric>

#include "onnx/onnx.h"

namespace tg::onnx {

namespace {

using Vals = std::vector<Value>;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

Tensor i64(int64_t v, const std::string& dev) { return Tensor(UOp::const_int(dtypes::int64, v), dev); }
Tensor ints_tensor(const std::vector<int64_t>& v, const std::string& dev) {
  return Tensor::from_data(v.data(), v.size() * sizeof(int64_t), dtypes::int64, {int64_t(v.size())}, dev);
}
int64_t prod_of(const Shape& s, size_t from, size_t to) {
  return std::accumulate(s.begin() + long(from), s.begin() + long(to), int64_t(1), std::multiplies<>());
}
Tensor iota(int64_t n, const std::string& dev) { return Tensor::arange(0, double(n), 1, dtypes::int64, dev); }
// the first element of a host-read input that must hold exactly one
int64_t one_int(const OpCtx& c, size_t k, const char* what) {
  auto v = c.host_ints(k);
  if (v.size() != 1) c.invalid(std::string(what) + " must hold one value, got " + std::to_string(v.size()));
  return v[0];
}
Index tensor_index(const Tensor& t) {
  Index i;
  i.kind = Index::TensorIdx, i.tensor = std::make_shared<Tensor>(t);
  return i;
}
// x indexed along `axis` by an int tensor (numpy take): the index's shape replaces that dim
Tensor take(const Tensor& x, int64_t axis, const Tensor& idx) {
  std::vector<Index> ix(static_cast<size_t>(axis));
  ix.push_back(tensor_index(idx));
  return x.getitem(ix);
}
// negative indices count from the end of a dim of size n (n a tensor that broadcasts against idx)
Tensor wrap(const Tensor& idx, const Tensor& n) {
  Tensor i = idx.cast(dtypes::int64);
  return i.lt(i64(0, i.device())).where(i.add(n), i);
}
Tensor lanes(const Tensor& x, int64_t at, int64_t len) {  // x[at:at+len] along dim 0
  Pairs b;
  for (auto s : x.shape()) b.emplace_back(0, s);
  b[0] = {at, at + len};
  return x.shrink(b);
}
// an op's axes: the attribute before `opset_input`, input k from it (absent: nullopt)
std::optional<std::vector<int64_t>> axes_arg(const OpCtx& c, size_t k, int64_t opset_input) {
  if (c.opset < opset_input) return c.has_attr("axes") ? std::optional(c.ints("axes")) : std::nullopt;
  return c.has(k) ? std::optional(c.host_ints(k)) : std::nullopt;
}
int32_t elem_type(const Tensor& t) { return from_dtype(t.dtype()); }

// ---- constants and shapes ----

Vals constant(OpCtx& c) {
  const std::string& dev = c.device;
  if (auto* t = c.tensor_attr("value")) return {c.constant(*t)};
  if (c.has_attr("value_float")) return {Tensor::full({}, c.f("value_float", 0), dtypes::float32, dev)};
  if (c.has_attr("value_floats")) {
    auto v = c.floats("value_floats");
    return {Tensor::from_data(v.data(), v.size() * sizeof(float), dtypes::float32, {int64_t(v.size())}, dev)};
  }
  if (c.has_attr("value_int")) return {i64(c.i("value_int", 0), dev)};
  if (c.has_attr("value_ints")) return {ints_tensor(c.ints("value_ints"), dev)};
  if (c.has_attr("value_string") || c.has_attr("value_strings")) c.unsupported("string constants");
  if (c.has_attr("sparse_value")) c.unsupported("sparse_value constants");
  c.invalid("no value attribute");
}
Vals constant_of_shape(OpCtx& c) {
  Shape s = c.host_ints(0);
  for (auto d : s)
    if (d < 0) c.invalid("negative dim " + std::to_string(d) + " in the shape");
  if (auto* t = c.tensor_attr("value")) {
    Tensor v = c.constant(*t);
    if (v.numel() != 1) c.invalid("value must hold one element, got " + std::to_string(v.numel()));
    return {v.reshape({}).expand(s)};
  }
  return {Tensor::full(s, 0, dtypes::float32, c.device)};
}
Vals shape(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t r = x.ndim();
  auto clampdim = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  int64_t start = clampdim(c.i("start", 0)), end = std::max(start, clampdim(c.i("end", r)));
  return {ints_tensor(std::vector<int64_t>(x.shape().begin() + start, x.shape().begin() + end), c.device)};
}
Vals size(OpCtx& c) { return {i64(c.x(0).numel(), c.device)}; }

// ---- movement ----

Vals reshape(OpCtx& c) {
  const Tensor& x = c.x(0);
  std::vector<int64_t> s = c.opset < 5 ? c.ints("shape") : c.host_ints(1);
  bool allowzero = c.i("allowzero", 0) != 0;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == 0 && !allowzero) {
      // 0 copies the input's dim at that position
      if (int64_t(i) >= x.ndim()) c.invalid("shape has a 0 at position " + std::to_string(i) + " past the input's rank");
      s[i] = x.shape()[i];
    }
    if (s[i] < -1) c.invalid("negative dim " + std::to_string(s[i]) + " in the shape");
  }
  if (allowzero && std::count(s.begin(), s.end(), 0) && std::count(s.begin(), s.end(), -1)) c.invalid("allowzero with both 0 and -1 in the shape");
  return {x.reshape(s)};
}
Vals flatten(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t r = x.ndim(), axis = c.i("axis", 1);
  if (axis < -r || axis > r) c.invalid("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  Shape s = x.shape();
  return {x.reshape({prod_of(s, 0, size_t(axis)), prod_of(s, size_t(axis), s.size())})};
}
Vals transpose(OpCtx& c) {
  const Tensor& x = c.x(0);
  std::vector<int64_t> perm(size_t(x.ndim()));
  std::iota(perm.rbegin(), perm.rend(), 0);  // default: reversed
  if (c.has_attr("perm")) perm = c.ints("perm");
  if (int64_t(perm.size()) != x.ndim()) c.invalid("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.ndim()));
  return {x.permute(perm)};
}
Vals squeeze(OpCtx& c) {
  const Tensor& x = c.x(0);
  auto axes = axes_arg(c, 1, 13);
  if (!axes) return {x.squeeze()};
  std::vector<int64_t> ax = norm_axes(*axes, x.ndim(), c);
  Shape s;
  for (int64_t i = 0; i < x.ndim(); i++) {
    if (std::find(ax.begin(), ax.end(), i) == ax.end()) s.push_back(x.shape()[size_t(i)]);
    else if (x.shape()[size_t(i)] != 1) c.invalid("can't squeeze dim " + std::to_string(i) + " of size " + std::to_string(x.shape()[size_t(i)]));
  }
  return {x.reshape(s)};
}
Vals unsqueeze(OpCtx& c) {
  const Tensor& x = c.x(0);
  auto axes = axes_arg(c, 1, 13);
  if (!axes) c.invalid("axes are required");
  // the axes name positions in the output
  int64_t r = x.ndim() + int64_t(axes->size());
  std::vector<int64_t> ax = norm_axes(*axes, r, c);
  std::sort(ax.begin(), ax.end());
  if (std::adjacent_find(ax.begin(), ax.end()) != ax.end()) c.invalid("axes repeat");
  Shape s;
  size_t from = 0;
  for (int64_t i = 0; i < r; i++) s.push_back(std::binary_search(ax.begin(), ax.end(), i) ? 1 : x.shape()[from++]);
  return {x.reshape(s)};
}
Vals concat(OpCtx& c) {
  std::vector<Tensor> ts;
  for (size_t k = 0; k < c.n_in(); k++) ts.push_back(c.x(k));
  if (ts.empty()) c.invalid("no inputs");
  return {Tensor::cat(ts, norm_axis(c.i("axis", 0), ts[0].ndim(), c))};
}
Vals split(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t axis = norm_axis(c.i("axis", 0), x.ndim(), c), n = x.shape()[size_t(axis)];
  std::vector<int64_t> sizes = c.opset < 13 ? c.ints("split") : c.has(1) ? c.host_ints(1) : std::vector<int64_t>{};
  if (sizes.empty()) {
    // equal parts, the last one smaller when it doesn't divide (num_outputs, opset 18)
    int64_t parts = c.i("num_outputs", int64_t(c.node.outputs.size()));
    if (parts <= 0) c.invalid("no outputs to split into");
    int64_t step = (n + parts - 1) / parts;
    for (int64_t k = 0; k < parts; k++) sizes.push_back(std::max<int64_t>(0, std::min(step, n - k * step)));
  }
  int64_t total = 0;
  for (auto s : sizes) total += s;
  if (total != n) c.invalid("split sizes add up to " + std::to_string(total) + ", the dim is " + std::to_string(n));
  Vals out;
  for (auto& t : x.split(sizes, axis)) out.push_back(t);
  return out;
}
Vals slice(OpCtx& c) {
  const Tensor& x = c.x(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset < 10) starts = c.ints("starts"), ends = c.ints("ends"), axes = c.ints("axes");
  else {
    starts = c.host_ints(1), ends = c.host_ints(2);
    if (c.has(3)) axes = c.host_ints(3);
    if (c.has(4)) steps = c.host_ints(4);
  }
  if (axes.empty()) axes.resize(starts.size()), std::iota(axes.begin(), axes.end(), 0);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.invalid("starts, ends, axes and steps differ in length");
  axes = norm_axes(axes, x.ndim(), c);
  std::vector<Index> idx(size_t(x.ndim()));
  for (size_t k = 0; k < axes.size(); k++) {
    if (steps[k] == 0) c.invalid("a step is 0");
    // numpy's slice: huge starts and ends (INT64_MAX, INT64_MIN) clamp to the dim
    Index& ix = idx[size_t(axes[k])];
    ix.start = starts[k], ix.stop = ends[k], ix.step = steps[k], ix.has_start = ix.has_stop = ix.has_step = true;
  }
  return {x.getitem(idx)};
}
Vals expand(OpCtx& c) {
  const Tensor& x = c.x(0);
  std::vector<int64_t> s = c.host_ints(1);
  // bidirectional: the shape broadcasts against x's, either may hold the 1s
  size_t r = std::max(s.size(), size_t(x.ndim()));
  Shape out(r);
  for (size_t i = 0; i < r; i++) {
    int64_t a = i + x.shape().size() >= r ? x.shape()[i + x.shape().size() - r] : 1, b = i + s.size() >= r ? s[i + s.size() - r] : 1;
    if (a != b && a != 1 && b != 1) c.invalid("shape " + shape_str(s) + " doesn't broadcast with " + shape_str(x.shape()));
    out[i] = a == 1 ? b : a;
  }
  return {x.expand(out)};
}
Vals tile(OpCtx& c) {
  const Tensor& x = c.x(0);
  auto reps = c.host_ints(1);
  if (int64_t(reps.size()) != x.ndim()) c.invalid("repeats has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(x.ndim()));
  return {x.repeat(reps)};
}
Vals pad(OpCtx& c) {
  const Tensor& x = c.x(0);
  std::string mode = c.s("mode", "constant");
  std::vector<int64_t> pads, axes;
  double value = 0;
  if (c.opset < 11) pads = c.has_attr("pads") ? c.ints("pads") : c.ints("paddings"), value = c.f("value", 0);
  else {
    pads = c.host_ints(1);
    if (c.has(2)) {
      auto v = c.host_floats(2);
      if (v.size() != 1) c.invalid("constant_value must hold one value");
      value = v[0];
    }
    if (c.has(3)) axes = c.host_ints(3);
  }
  if (axes.empty()) axes.resize(size_t(x.ndim())), std::iota(axes.begin(), axes.end(), 0);
  axes = norm_axes(axes, x.ndim(), c);
  if (pads.size() != 2 * axes.size()) c.invalid(std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) + " axes");
  // ONNX lists all begins, then all ends
  Pairs p(size_t(x.ndim()), {0, 0});
  for (size_t k = 0; k < axes.size(); k++) p[size_t(axes[k])] = {pads[k], pads[k + axes.size()]};
  Tensor::PadMode m = mode == "constant" ? Tensor::PadMode::Constant : mode == "reflect" ? Tensor::PadMode::Reflect
                    : mode == "edge"     ? Tensor::PadMode::Replicate : mode == "wrap" ? Tensor::PadMode::Circular
                                         : (c.unsupported("pad mode '" + mode + "'"), Tensor::PadMode::Constant);
  return {x.pad(p, m, value)};
}
Vals depth_to_space(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t bs = c.i("blocksize", 0);
  if (x.ndim() != 4 || bs <= 0 || x.shape()[1] % (bs * bs)) c.invalid("needs a 4-d input with channels divisible by blocksize^2");
  int64_t n = x.shape()[0], ch = x.shape()[1] / (bs * bs), h = x.shape()[2], w = x.shape()[3];
  std::string mode = c.s("mode", "DCR");
  Tensor y = mode == "DCR" ? x.reshape({n, bs, bs, ch, h, w}).permute({0, 3, 4, 1, 5, 2})
           : mode == "CRD" ? x.reshape({n, ch, bs, bs, h, w}).permute({0, 1, 4, 2, 5, 3})
                           : (c.unsupported("mode '" + mode + "'"), x);
  return {y.reshape({n, ch, h * bs, w * bs})};
}
Vals space_to_depth(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t bs = c.i("blocksize", 0);
  if (x.ndim() != 4 || bs <= 0 || x.shape()[2] % bs || x.shape()[3] % bs) c.invalid("needs a 4-d input with spatial dims divisible by blocksize");
  int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2] / bs, w = x.shape()[3] / bs;
  return {x.reshape({n, ch, h, bs, w, bs}).permute({0, 3, 5, 1, 2, 4}).reshape({n, ch * bs * bs, h, w})};
}
Vals trilu(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t k = c.has(1) ? one_int(c, 1, "k") : 0;
  if (x.ndim() < 2) c.invalid("needs at least 2 dims");
  return {c.i("upper", 1) ? x.triu(k) : x.tril(k)};
}
Vals eye_like(OpCtx& c) {
  const Tensor& x = c.x(0);
  if (x.ndim() != 2) c.invalid("needs a 2-d input");
  DType dt = c.has_attr("dtype") ? to_dtype(int32_t(c.i("dtype", FLOAT)), "EyeLike dtype") : x.dtype();
  const std::string& dev = x.device();
  int64_t rows = x.shape()[0], cols = x.shape()[1];
  // ones where col - row == k
  Tensor d = iota(cols, dev).reshape({1, cols}).sub(iota(rows, dev).reshape({rows, 1}));
  return {d.eq(i64(c.i("k", 0), dev)).cast(dt)};
}
Vals range(OpCtx& c) {
  DType dt = c.x(0).dtype();
  auto one = [&](size_t k) {
    auto v = c.host_floats(k);
    if (v.size() != 1) c.invalid("start, limit and delta must be scalars");
    return v[0];
  };
  double start = one(0), limit = one(1), delta = one(2);
  if (delta == 0) c.invalid("delta is 0");
  return {Tensor::arange(start, limit, delta, dt, c.device)};
}

// ---- indexing ----

Vals gather(OpCtx& c) {
  const Tensor& x = c.x(0);
  if (x.ndim() == 0) c.invalid("can't gather from a 0-d tensor");
  return {take(x, norm_axis(c.i("axis", 0), x.ndim(), c), c.x(1))};
}
Vals gather_elements(OpCtx& c) {
  const Tensor& x = c.x(0);
  if (x.ndim() == 0) c.invalid("can't gather from a 0-d tensor");
  int64_t axis = norm_axis(c.i("axis", 0), x.ndim(), c);
  return {x.gather(axis, wrap(c.x(1), i64(x.shape()[size_t(axis)], x.device())))};
}
// the flat row-major position of each index tuple along idx's last dim within dims [first, first + k) of `shape`
Tensor flat_positions(const Tensor& idx, const Shape& shape, size_t first, const std::string& dev) {
  size_t k = size_t(idx.shape().back());
  std::vector<int64_t> dims(shape.begin() + long(first), shape.begin() + long(first + k)), strides(k, 1);
  for (size_t j = k; j-- > 1;) strides[j - 1] = strides[j] * dims[j];
  return wrap(idx, ints_tensor(dims, dev)).mul(ints_tensor(strides, dev)).sum({-1});
}
Vals gather_nd(OpCtx& c) {
  const Tensor& x = c.x(0);
  const Tensor& ind = c.x(1);
  int64_t b = c.i("batch_dims", 0), r = x.ndim(), q = ind.ndim();
  if (q < 1 || b < 0 || b >= std::min(q, r))
    c.invalid("batch_dims " + std::to_string(b) + " for data rank " + std::to_string(r) + ", indices rank " + std::to_string(q));
  int64_t k = ind.shape().back();
  if (k > r - b) c.invalid("index tuples of " + std::to_string(k) + " for " + std::to_string(r - b) + " dims");
  for (int64_t i = 0; i < b; i++)
    if (x.shape()[size_t(i)] != ind.shape()[size_t(i)]) c.invalid("batch dims differ between data and indices");
  const Shape& xs = x.shape();
  int64_t nb = prod_of(xs, 0, size_t(b)), m = prod_of(xs, size_t(b), size_t(b + k)), tail = prod_of(xs, size_t(b + k), size_t(r));
  Tensor pos = flat_positions(ind, xs, size_t(b), x.device());  // indices.shape[:-1]
  if (b > 0) {
    // each batch element reads its own block of m rows
    Shape bs(ind.shape().begin(), ind.shape().end() - 1);
    Shape ones(bs.size(), 1);
    std::copy(bs.begin(), bs.begin() + b, ones.begin());
    pos = pos.add(iota(nb, x.device()).mul(i64(m, x.device())).reshape(ones).expand(bs));
  }
  Shape out(ind.shape().begin(), ind.shape().end() - 1);
  out.insert(out.end(), xs.begin() + b + k, xs.end());
  return {take(x.reshape({nb * m, tail}), 0, pos).reshape(out)};
}
std::string scatter_reduce_name(const OpCtx& c) {
  std::string r = c.s("reduction", "none");
  if (r == "none") return "replace";
  if (r == "add") return "sum";
  if (r == "mul") return "prod";
  if (r == "max") return "amax";
  if (r == "min") return "amin";
  c.unsupported("reduction '" + r + "'");
}
Vals scatter_elements(OpCtx& c) {
  const Tensor& x = c.x(0);
  if (x.ndim() == 0) c.invalid("can't scatter into a 0-d tensor");
  int64_t axis = norm_axis(c.i("axis", 0), x.ndim(), c);
  Tensor idx = wrap(c.x(1), i64(x.shape()[size_t(axis)], x.device())), upd = c.x(2).cast(x.dtype());
  std::string red = scatter_reduce_name(c);
  return {red == "replace" ? x.scatter(axis, idx, upd) : x.scatter_reduce(axis, idx, upd, red)};
}
Vals scatter_nd(OpCtx& c) {
  const Tensor& x = c.x(0);
  const Tensor& ind = c.x(1);
  if (ind.ndim() < 1) c.invalid("indices need at least one dim");
  int64_t k = ind.shape().back();
  if (k > x.ndim()) c.invalid("index tuples of " + std::to_string(k) + " for rank " + std::to_string(x.ndim()));
  // every updated element's flat position: its tuple's block start plus its offset inside the block of the dims after k
  int64_t block = prod_of(x.shape(), size_t(k), x.shape().size());
  Tensor base = flat_positions(ind, x.shape(), 0, x.device()).mul(i64(block, x.device())).unsqueeze(-1);
  Tensor pos = base.add(iota(block, x.device()));
  Shape us(ind.shape().begin(), ind.shape().end() - 1);
  us.insert(us.end(), x.shape().begin() + k, x.shape().end());
  const Tensor& upd = c.x(2);
  if (upd.shape() != us) c.invalid("updates of shape " + shape_str(upd.shape()) + ", expected " + shape_str(us));
  return {x.put(pos, upd.reshape(pos.shape()), scatter_reduce_name(c))};
}
Vals one_hot(OpCtx& c) {
  const Tensor& ind = c.x(0);
  const Tensor& values = c.x(2);
  auto dv = c.host_floats(1);
  if (dv.size() != 1) c.invalid("depth must hold one value");
  int64_t depth = int64_t(dv[0]);
  if (depth < 1) c.invalid("depth must be positive");
  if (values.numel() != 2) c.invalid("values must hold [off, on]");
  int64_t axis = norm_axis(c.i("axis", -1), ind.ndim() + 1, c);
  const std::string& dev = ind.device();
  Tensor idx = wrap(ind.cast(dtypes::int64), i64(depth, dev)).unsqueeze(axis);
  Shape cls(size_t(ind.ndim() + 1), 1);
  cls[size_t(axis)] = depth;
  Tensor v = values.reshape({2});
  return {idx.eq(iota(depth, dev).reshape(cls)).where(lanes(v, 1, 1).reshape({}), lanes(v, 0, 1).reshape({}))};
}
Vals non_zero(OpCtx& c) {  // ONNX's is (ndim, count); the count is read back
  c.note_read(c.x(0));
  return {c.x(0).nonzero().permute({1, 0})};
}
Vals top_k(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t k = c.opset < 10 ? c.i("k", 0) : one_int(c, 1, "k");
  int64_t axis = norm_axis(c.i("axis", -1), x.ndim(), c);
  if (k < 0 || k > x.shape()[size_t(axis)]) c.invalid("k = " + std::to_string(k) + " for a dim of " + std::to_string(x.shape()[size_t(axis)]));
  // a stable sort: ties keep the lower index first, as ONNX asks
  auto [v, i] = x.topk(k, axis, c.i("largest", 1) != 0);
  return {v, i.cast(dtypes::int64)};
}
Vals compress(OpCtx& c) {
  Tensor x = c.x(0);
  const Tensor& cond = c.x(1);
  if (cond.ndim() != 1) c.invalid("condition must be 1-d");
  int64_t axis = 0;
  if (c.has_attr("axis")) axis = norm_axis(c.i("axis", 0), x.ndim(), c);
  else x = x.flatten();
  if (cond.shape()[0] > x.shape()[size_t(axis)]) c.invalid("condition is longer than the dim");
  c.note_read(cond);
  Tensor hits = cond.nonzero();
  int64_t n = hits.shape()[0];
  if (n == 0) {
    Pairs b;
    for (auto s : x.shape()) b.emplace_back(0, s);
    b[size_t(axis)] = {0, 0};
    return {x.shrink(b)};
  }
  return {take(x, axis, hits.reshape({n}))};
}
Vals reverse_sequence(OpCtx& c) {
  const Tensor& x = c.x(0);
  if (x.ndim() < 2) c.invalid("needs at least 2 dims");
  int64_t ba = norm_axis(c.i("batch_axis", 1), x.ndim(), c), ta = norm_axis(c.i("time_axis", 0), x.ndim(), c);
  if (ba == ta) c.invalid("batch_axis and time_axis are the same");
  int64_t nb = x.shape()[size_t(ba)], nt = x.shape()[size_t(ta)];
  const std::string& dev = x.device();
  Tensor len = c.x(1).cast(dtypes::int64);
  if (len.shape() != Shape{nb}) c.invalid("sequence_lens must have one entry per batch element");
  // along time, position t of batch b reads len[b]-1-t where t < len[b], else itself
  Tensor l = len.reshape({nb, 1}), t = iota(nt, dev).reshape({1, nt});
  Tensor src = t.lt(l).where(l.sub(i64(1, dev)).sub(t), t);  // (batch, time)
  if (ta < ba) src = src.permute({1, 0});
  Shape s(size_t(x.ndim()), 1);
  s[size_t(ba)] = nb, s[size_t(ta)] = nt;
  return {x.gather(ta, src.reshape(s).expand(x.shape()))};
}
// Rows (the slices along axis, or each element) compared pairwise: row i's group is the number of distinct rows before
// it (in sorted order, or in order of first appearance), and each group's first row is its representative. Only the
// number of groups is read back.
Vals unique(OpCtx& c) {
  const Tensor& x = c.x(0);
  const std::string& dev = x.device();
  std::optional<int64_t> axis;
  if (c.has_attr("axis")) axis = norm_axis(c.i("axis", 0), x.ndim(), c);
  Tensor rows = x.flatten().reshape({x.numel(), 1});
  if (axis) {
    std::vector<int64_t> perm{*axis};
    for (int64_t i = 0; i < x.ndim(); i++)
      if (i != *axis) perm.push_back(i);
    int64_t n = x.shape()[size_t(*axis)];
    rows = x.permute(perm).reshape({n, n ? x.numel() / n : 0});
  }
  int64_t n = rows.shape()[0], m = rows.shape()[1];
  Tensor empty = ints_tensor({}, dev);
  if (n == 0) return {x, empty, empty, empty};
  Tensor a = rows.reshape({n, 1, m}).expand({n, n, m}), b = rows.reshape({1, n, m}).expand({n, n, m});
  Tensor diff = a.ne(b);
  // the first column where two rows differ decides their order
  Tensor first = diff.bitwise_and(diff.cast(dtypes::int64).cumsum(2).eq(i64(1, dev)));
  Tensor lt = first.bitwise_and(a.lt(b)).any({2});  // [i, j]: row i sorts before row j
  Tensor eq = diff.any({2}).logical_not();
  Tensor ii = iota(n, dev).reshape({n, 1}), jj = iota(n, dev).reshape({1, n}), zero = i64(0, dev);
  Tensor is_first = eq.bitwise_and(jj.lt(ii)).any({1}).logical_not();  // no equal row earlier
  Tensor firsts = is_first.reshape({1, n});
  Tensor key = [&] {
    if (c.i("sorted", 1)) return lt.bitwise_and(is_first.reshape({n, 1})).cast(dtypes::int64).sum({0});
    Tensor f = eq.bitwise_and(firsts).where(jj, zero).sum({1});  // where row i first appears
    return firsts.bitwise_and(jj.lt(f.reshape({n, 1}))).cast(dtypes::int64).sum({1});
  }();
  int64_t u = c.read_ints(is_first.cast(dtypes::int64).sum())[0];
  Tensor hit = key.reshape({1, n}).eq(iota(u, dev).reshape({u, 1}));  // [group, row]
  Tensor indices = hit.bitwise_and(firsts).where(jj, zero).sum({1}).cast(dtypes::int64);
  Tensor counts = hit.cast(dtypes::int64).sum({1});
  Tensor y = axis ? take(x, *axis, indices) : take(x.flatten(), 0, indices);
  return {y, indices, key.cast(dtypes::int64), counts};
}

// ---- sequences and optionals ----

int64_t seq_pos(const OpCtx& c, size_t k, int64_t n, int64_t dflt, bool insert) {
  int64_t p = c.has(k) ? one_int(c, k, "position") : dflt;
  int64_t hi = insert ? n : n - 1;
  if (p < -n || p > hi) c.invalid("position " + std::to_string(p) + " out of range for a sequence of " + std::to_string(n));
  return p < 0 ? p + n : p;
}
int32_t seq_type(const OpCtx& c, size_t k) { return c.in[k].seq_elem; }
Vals sequence_construct(OpCtx& c) {
  std::vector<Tensor> ts;
  for (size_t k = 0; k < c.n_in(); k++) ts.push_back(c.x(k));
  if (ts.empty()) c.invalid("no inputs");
  int32_t et = elem_type(ts[0]);
  return {Value::sequence(std::move(ts), et)};
}
Vals sequence_empty(OpCtx& c) {
  int32_t et = int32_t(c.i("dtype", FLOAT));
  to_dtype(et, "SequenceEmpty dtype");  // refuses what a tensor can't hold
  return {Value::sequence({}, et)};
}
Vals sequence_at(OpCtx& c) {
  const auto& s = c.seq(0);
  return {s[size_t(seq_pos(c, 1, int64_t(s.size()), 0, false))]};
}
Vals sequence_insert(OpCtx& c) {
  std::vector<Tensor> s = c.seq(0);
  int64_t n = int64_t(s.size());
  s.insert(s.begin() + seq_pos(c, 2, n, n, true), c.x(1));
  return {Value::sequence(std::move(s), seq_type(c, 0))};
}
Vals sequence_erase(OpCtx& c) {
  std::vector<Tensor> s = c.seq(0);
  if (s.empty()) c.invalid("erase from an empty sequence");
  s.erase(s.begin() + seq_pos(c, 1, int64_t(s.size()), -1, false));
  return {Value::sequence(std::move(s), seq_type(c, 0))};
}
Vals sequence_length(OpCtx& c) { return {i64(int64_t(c.seq(0).size()), c.device)}; }
Vals concat_from_sequence(OpCtx& c) {
  const auto& s = c.seq(0);
  if (s.empty()) c.invalid("an empty sequence");
  if (!c.has_attr("axis")) c.invalid("axis is required");
  bool new_axis = c.i("new_axis", 0) != 0;
  int64_t axis = norm_axis(c.i("axis", 0), s[0].ndim() + (new_axis ? 1 : 0), c);
  return {new_axis ? Tensor::stack(s, axis) : Tensor::cat(s, axis)};
}
Vals split_to_sequence(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t axis = norm_axis(c.i("axis", 0), x.ndim(), c), n = x.shape()[size_t(axis)];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!c.has(1)) sizes.assign(size_t(n), 1), squeeze = c.i("keepdims", 1) == 0;
  else if (c.x(1).ndim() == 0) {
    // pieces of this size, the last one what remains
    int64_t step = one_int(c, 1, "split");
    if (step <= 0) c.invalid("split must be positive");
    for (int64_t at = 0; at < n; at += step) sizes.push_back(std::min(step, n - at));
  } else sizes = c.host_ints(1);
  int64_t total = 0;
  for (auto v : sizes) total += v;
  if (total != n) c.invalid("split sizes add up to " + std::to_string(total) + ", the dim is " + std::to_string(n));
  std::vector<Tensor> parts = x.split(sizes, axis);
  if (squeeze)
    for (auto& p : parts) p = p.squeeze(axis);
  return {Value::sequence(std::move(parts), elem_type(x))};
}
Vals optional_op(OpCtx& c) { return {c.has(0) ? c.in[0] : Value()}; }
Vals optional_has_element(OpCtx& c) { return {Tensor(UOp::const_(dtypes::bool_, c.has(0) ? 1 : 0), c.device)}; }
Vals optional_get_element(OpCtx& c) {
  if (!c.has(0)) c.invalid("the optional is empty");
  return {c.in[0]};
}

}  // namespace

void add_shape_ops(OpTable& t) {
  t["Constant"] = constant, t["ConstantOfShape"] = constant_of_shape, t["Shape"] = shape, t["Size"] = size;
  t["Reshape"] = reshape, t["Flatten"] = flatten, t["Transpose"] = transpose, t["Squeeze"] = squeeze, t["Unsqueeze"] = unsqueeze;
  t["Concat"] = concat, t["Split"] = split, t["Slice"] = slice, t["Expand"] = expand, t["Tile"] = tile, t["Pad"] = pad;
  t["DepthToSpace"] = depth_to_space, t["SpaceToDepth"] = space_to_depth, t["Trilu"] = trilu, t["EyeLike"] = eye_like, t["Range"] = range;
  t["Gather"] = gather, t["GatherElements"] = gather_elements, t["GatherND"] = gather_nd;
  t["ScatterElements"] = scatter_elements, t["Scatter"] = scatter_elements, t["ScatterND"] = scatter_nd;
  t["OneHot"] = one_hot, t["NonZero"] = non_zero, t["TopK"] = top_k, t["Compress"] = compress, t["ReverseSequence"] = reverse_sequence;
  t["Unique"] = unique;
  t["SequenceConstruct"] = sequence_construct, t["SequenceEmpty"] = sequence_empty, t["SequenceAt"] = sequence_at;
  t["SequenceInsert"] = sequence_insert, t["SequenceErase"] = sequence_erase, t["SequenceLength"] = sequence_length;
  t["ConcatFromSequence"] = concat_from_sequence, t["SplitToSequence"] = split_to_sequence;
  t["Optional"] = optional_op, t["OptionalHasElement"] = optional_has_element, t["OptionalGetElement"] = optional_get_element;
}

}  // namespace tg::onnx
