// ONNX neural-network layers: convolutions, pooling, normalizations, dropout, resizing, recurrent cells, quantization,
// losses, object detection (NonMaxSuppression, RoiAlign) and random generators, each lowered to Tensor ops. The
// recurrent ops unroll their time steps on the host: a loop over steps that builds one lazy graph, never a loop over data.
#include <algorithm>
#include <array>
#include <cmath>

#include "onnx/onnx.h"

namespace tg::onnx {

using Vals = std::vector<Value>;
using PadPairs = Tensor::PadPairs;

// a 0-d constant of like's dtype: broadcasts against like without promoting it
static Tensor cst(const Tensor& like, double v) { return Tensor(UOp::const_(like.dtype(), v), like.device()); }
static Shape spatial(const Tensor& t) { return Shape(t.shape().begin() + 2, t.shape().end()); }
static std::vector<int64_t> range_axes(int64_t from, int64_t to) {
  std::vector<int64_t> r;
  for (int64_t a = from; a < to; a++) r.push_back(a);
  return r;
}
// (1, C, 1, ...): a per-channel tensor lined up with dim 1 of an input of rank nd
static Tensor per_channel(const Tensor& t, int64_t nd) {
  Shape s(size_t(nd), 1);
  s[1] = -1;
  return t.reshape(s);
}
static bool wants(const OpCtx& c, size_t k) { return k < c.node.outputs.size() && !c.node.outputs[k].empty(); }
static Tensor needs_nd(OpCtx& c, const Tensor& x) {
  if (x.ndim() < 3) c.invalid("input must be (N, C, spatial...), got rank " + std::to_string(x.ndim()));
  return x;
}

// ---- convolution and pooling ----

// A conv's or pool's window over the spatial dims `in`: explicit pads [b1..bn, e1..en], or auto_pad's SAME_UPPER /
// SAME_LOWER (output ceil(in / stride), the odd pad at the end / the start) or VALID
struct Window {
  Shape k, stride, dilation;
  PadPairs pads;
};
static Window window(OpCtx& c, const Shape& in, Shape k) {
  size_t n = in.size();
  Window w{std::move(k), c.ints("strides", Shape(n, 1)), c.ints("dilations", Shape(n, 1)), {}};
  if (w.k.size() != n || w.stride.size() != n || w.dilation.size() != n) c.invalid("kernel_shape, strides and dilations need one value per spatial dim");
  for (size_t j = 0; j < n; j++)
    if (w.k[j] <= 0 || w.stride[j] <= 0 || w.dilation[j] <= 0) c.invalid("kernel_shape, strides and dilations must be positive");
  std::string ap = c.s("auto_pad", "NOTSET");
  if (ap == "NOTSET") {
    Shape p = c.ints("pads", Shape(2 * n, 0));
    if (p.size() != 2 * n) c.invalid("pads needs two values per spatial dim");
    for (size_t j = 0; j < n; j++) w.pads.emplace_back(p[j], p[j + n]);
  } else if (ap == "VALID") {
    w.pads.assign(n, {0, 0});
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t j = 0; j < n; j++) {
      int64_t out = (in[j] + w.stride[j] - 1) / w.stride[j];
      int64_t total = std::max<int64_t>((out - 1) * w.stride[j] + (w.k[j] - 1) * w.dilation[j] + 1 - in[j], 0), half = total / 2;
      w.pads.push_back(ap == "SAME_UPPER" ? std::pair{half, total - half} : std::pair{total - half, half});
    }
  } else {
    c.invalid("unknown auto_pad '" + ap + "'");
  }
  return w;
}
static Window pool_window(OpCtx& c, const Tensor& x) {
  if (!c.has_attr("kernel_shape")) c.invalid("needs the 'kernel_shape' attribute");
  return window(c, spatial(needs_nd(c, x)), c.ints("kernel_shape"));
}

static Vals conv_op(OpCtx& c) {
  const Tensor &x = needs_nd(c, c.x(0)), &w = c.x(1);
  if (w.ndim() != x.ndim()) c.invalid("X and W need the same rank");
  Window win = window(c, spatial(x), c.ints("kernel_shape", spatial(w)));
  if (win.k != spatial(w)) c.invalid("kernel_shape differs from W's spatial dims");
  return {x.conv(w, c.opt(2), c.i("group", 1), win.stride, win.dilation, win.pads)};
}

// output_shape (or auto_pad SAME's in * stride) fixes the total padding, stride*(in-1) + output_padding + span - out,
// split as the spec says; a negative total pads the output with zeros
static Vals conv_transpose_op(OpCtx& c) {
  const Tensor &x = needs_nd(c, c.x(0)), &w = c.x(1);
  if (w.ndim() != x.ndim()) c.invalid("X and W need the same rank");
  Shape in = spatial(x), k = c.ints("kernel_shape", spatial(w));
  size_t n = in.size();
  Shape stride = c.ints("strides", Shape(n, 1)), dil = c.ints("dilations", Shape(n, 1)), op = c.ints("output_padding", Shape(n, 0));
  if (k != spatial(w)) c.invalid("kernel_shape differs from W's spatial dims");
  if (stride.size() != n || dil.size() != n || op.size() != n) c.invalid("strides, dilations and output_padding need one value per spatial dim");
  std::string ap = c.s("auto_pad", "NOTSET");
  Shape out = c.ints("output_shape");
  PadPairs pads;
  if (!out.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    if (out.empty())
      for (size_t j = 0; j < n; j++) out.push_back(in[j] * stride[j]);
    if (out.size() < n) c.invalid("output_shape needs one value per spatial dim");
    out.erase(out.begin(), out.end() - long(n));
    for (size_t j = 0; j < n; j++) {
      int64_t total = stride[j] * (in[j] - 1) + op[j] + (k[j] - 1) * dil[j] + 1 - out[j];
      int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor
      pads.push_back(ap == "SAME_UPPER" ? std::pair{half, total - half} : std::pair{total - half, half});
    }
  } else if (ap == "VALID") {
    pads.assign(n, {0, 0});
  } else if (ap == "NOTSET") {
    Shape p = c.ints("pads", Shape(2 * n, 0));
    if (p.size() != 2 * n) c.invalid("pads needs two values per spatial dim");
    for (size_t j = 0; j < n; j++) pads.emplace_back(p[j], p[j + n]);
  } else {
    c.invalid("unknown auto_pad '" + ap + "'");
  }
  return {x.conv_transpose(w, c.opt(2), c.i("group", 1), stride, dil, pads, op)};
}

// x - zero point in int32; a per-channel zero point (1-D) lines up with dim `axis`
static Tensor shifted(const Tensor& x, const std::optional<Tensor>& zp, int64_t axis) {
  Tensor t = x.cast(dtypes::int32);
  if (!zp) return t;
  Tensor z = zp->cast(dtypes::int32);
  if (z.ndim() == 1 && z.numel() > 1) {
    Shape s(size_t(x.ndim()), 1);
    s[size_t(axis)] = -1;
    z = z.reshape(s);
  }
  return t.sub(z);
}
// int32 convolution of (x - x_zero_point) and (w - w_zero_point): padding is the zero point, 0 after the shift
static Vals conv_integer_op(OpCtx& c) {
  const Tensor &x = needs_nd(c, c.x(0)), &w = c.x(1);
  Window win = window(c, spatial(x), c.ints("kernel_shape", spatial(w)));
  return {shifted(x, c.opt(2), 1).conv(shifted(w, c.opt(3), 0), std::nullopt, c.i("group", 1), win.stride, win.dilation, win.pads)};
}

// max, or with a second output the int64 index of each max into the whole input (((n*C + c)*H + h)*W + w), the
// spatial part column-major with storage_order=1
static Vals max_pool_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  Window win = pool_window(c, x);
  bool ceil = c.i("ceil_mode", 0) != 0;
  if (!wants(c, 1)) return {x.pool_nd(Tensor::PoolKind::Max, win.k, win.stride, win.dilation, win.pads, ceil, true)};
  auto [vals, idx] = x.max_pool_indices(win.k, win.stride, win.dilation, win.pads, ceil);
  Shape in = spatial(x);
  Tensor i = idx.cast(dtypes::int64);
  if (c.i("storage_order", 0)) {
    // row-major coordinates, recombined with the first spatial dim fastest
    Tensor rem = i, col = i.full_like(0);
    std::vector<Tensor> coord(in.size(), i);
    for (size_t j = in.size(); j-- > 0;) coord[j] = rem.mod(cst(i, double(in[j]))), rem = rem.idiv(cst(i, double(in[j])));
    int64_t step = 1;
    for (size_t j = 0; j < in.size(); j++) col = col.add(coord[j].mul(cst(i, double(step)))), step *= in[j];
    i = col;
  }
  int64_t nc = x.shape()[0] * x.shape()[1];
  Shape s{x.shape()[0], x.shape()[1]};
  s.insert(s.end(), in.size(), 1);
  Tensor base = Tensor::arange(0, double(nc), 1, dtypes::int64, x.device()).reshape(s).mul(cst(i, double(tg::prod(in))));
  return {vals, i.add(base)};
}
static Vals average_pool_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  Window win = pool_window(c, x);
  return {x.pool_nd(Tensor::PoolKind::Avg, win.k, win.stride, win.dilation, win.pads, c.i("ceil_mode", 0) != 0, c.i("count_include_pad", 0) != 0)
              .cast(x.dtype())};
}
// (sum over each window of |x|^p)^(1/p)
static Vals lp_pool_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  Window win = pool_window(c, x);
  if (c.i("ceil_mode", 0)) c.unsupported("LpPool with ceil_mode");
  double p = double(c.i("p", 2));
  PadPairs pads{{0, 0}, {0, 0}};
  pads.insert(pads.end(), win.pads.begin(), win.pads.end());
  Tensor a = x.abs().pow(cst(x, p)).pad(pads).pool(win.k, win.stride, win.dilation);
  return {a.sum(range_axes(a.ndim() - int64_t(win.k.size()), a.ndim())).pow(cst(x, 1 / p)).cast(x.dtype())};
}
enum class Global { Avg, Max, Lp };
template <Global G>
static Vals global_pool_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  if (x.ndim() < 2) c.invalid("input must be (N, C, spatial...)");
  std::vector<int64_t> axes = range_axes(2, x.ndim());
  if (axes.empty()) return {x};
  if (G == Global::Max) return {x.max(axes, true)};
  if (G == Global::Avg) return {x.mean(axes, true).cast(x.dtype())};
  double p = double(c.i("p", 2));
  return {x.abs().pow(cst(x, p)).sum(axes, true).pow(cst(x, 1 / p)).cast(x.dtype())};
}

// X (N, C, i...) scattered to the flat positions I names in the whole default output (N, C, o...), o = (i-1)*stride +
// k - pads; a larger output_shape pads that at the end of each dim (positions keep their coordinates, as the reference)
static Vals max_unpool_op(OpCtx& c) {
  const Tensor &x = needs_nd(c, c.x(0)), &idx = c.x(1);
  if (idx.shape() != x.shape()) c.invalid("I must have X's shape");
  Window win = pool_window(c, x);
  Shape in = spatial(x), out{x.shape()[0], x.shape()[1]};
  for (size_t j = 0; j < in.size(); j++) out.push_back((in[j] - 1) * win.stride[j] + win.k[j] - win.pads[j].first - win.pads[j].second);
  for (int64_t d : out)
    if (d <= 0) c.invalid("the output shape must be positive");
  Tensor y = Tensor::full(out, 0, x.dtype(), x.device()).put(idx.cast(dtypes::int64), x);
  if (!c.has(2)) return {y};
  Shape want = c.host_ints(2);
  if (want.size() != out.size()) c.invalid("output_shape must have X's rank");
  PadPairs pads;
  for (size_t j = 0; j < out.size(); j++) {
    if (want[j] < out[j] || (j < 2 && want[j] != out[j])) c.invalid("output_shape is smaller than the default output or differs in N, C");
    pads.emplace_back(0, want[j] - out[j]);
  }
  return {y.pad(pads)};
}

// ---- normalization ----

// inference: (x - mean) / sqrt(var + eps) * scale + B; training_mode: the batch's statistics (population variance),
// and the running ones updated with momentum as extra outputs
static Vals batchnorm_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  if (x.ndim() < 2) c.invalid("X must be (N, C, ...)");
  Tensor scale = c.x(1).cast(x.dtype()), bias = c.x(2).cast(x.dtype()), mean = c.x(3), var = c.x(4);
  double eps = c.f("epsilon", 1e-5), momentum = c.f("momentum", 0.9);
  bool training = c.opset >= 14 && c.i("training_mode", 0) != 0;
  if (!training) return {x.batchnorm(scale, bias, mean.cast(x.dtype()), var.cast(x.dtype()).add(cst(x, eps)).rsqrt())};
  std::vector<int64_t> axes = range_axes(0, x.ndim());
  axes.erase(axes.begin() + 1);
  Tensor bm = x.mean(axes), bv = x.var(axes, false, 0);
  Tensor y = x.batchnorm(scale, bias, bm, bv.add(cst(bv, eps)).rsqrt());
  auto running = [&](const Tensor& r, const Tensor& b) { return r.mul(cst(r, momentum)).add(b.cast(r.dtype()).mul(cst(r, 1 - momentum))); };
  return {y, running(mean, bm), running(var, bv)};
}
// per (n, c) over the spatial dims
static Vals instance_norm_op(OpCtx& c) {
  const Tensor& x = needs_nd(c, c.x(0));
  std::vector<int64_t> axes = range_axes(2, x.ndim());
  Tensor d = x.sub(x.mean(axes, true));
  Tensor y = d.mul(d.square().mean(axes, true).add(cst(x, c.f("epsilon", 1e-5))).rsqrt());
  return {y.mul(per_channel(c.x(1), x.ndim())).add(per_channel(c.x(2), x.ndim())).cast(x.dtype())};
}
// over dims axis.. in stash_type (float32 by default); Mean and InvStdDev keep those dims as 1s
static Vals layer_norm_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t axis = norm_axis(c.i("axis", -1), x.ndim(), c);
  DType sd = to_dtype(int32_t(c.i("stash_type", FLOAT)), c.where() + ": stash_type");
  std::vector<int64_t> axes = range_axes(axis, x.ndim());
  Tensor xf = x.cast(sd), mean = xf.mean(axes, true), d = xf.sub(mean);
  Tensor inv = d.square().mean(axes, true).add(cst(xf, c.f("epsilon", 1e-5))).rsqrt();
  Tensor y = d.mul(inv).mul(c.x(1).cast(sd));
  if (auto b = c.opt(2)) y = y.add(b->cast(sd));
  return {y.cast(x.dtype()), mean, inv};
}
// opset 18: channels split into num_groups groups, each normalized, then a per-channel scale and bias
static Vals group_norm_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  if (x.ndim() < 2) c.invalid("X must be (N, C, ...)");
  int64_t g = c.i("num_groups", 0), n = x.shape()[0], ch = x.shape()[1];
  if (g <= 0 || ch % g) c.invalid("num_groups must divide the channels");
  Tensor xg = x.reshape({n, g, -1});
  Tensor d = xg.sub(xg.mean({2}, true));
  Tensor y = d.mul(d.square().mean({2}, true).add(cst(x, c.f("epsilon", 1e-5))).rsqrt()).reshape(x.shape());
  Tensor scale = c.x(1), bias = c.x(2);
  if (scale.numel() == g && g != ch) scale = scale.reshape({g, 1}).expand({g, ch / g}).reshape({ch}), bias = bias.reshape({g, 1}).expand({g, ch / g}).reshape({ch});
  return {y.mul(per_channel(scale, x.ndim())).add(per_channel(bias, x.ndim())).cast(x.dtype())};
}
static Vals lp_norm_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t axis = norm_axis(c.i("axis", -1), x.ndim(), c), p = c.i("p", 2);
  if (p != 1 && p != 2) c.invalid("p must be 1 or 2");
  Tensor n = p == 1 ? x.abs().sum({axis}, true) : x.square().sum({axis}, true).sqrt();
  return {x.div(n).cast(x.dtype())};
}
// (x - E[x]) / (sqrt(E[(x - E[x])^2]) + 1e-9) over axes (default N, H, W), as the spec's function body
static Vals mvn_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  std::vector<int64_t> axes = norm_axes(c.ints("axes", {0, 2, 3}), x.ndim(), c);
  Tensor d = x.sub(x.mean(axes, true));
  return {d.div(d.square().mean(axes, true).sqrt().add(cst(x, 1e-9))).cast(x.dtype())};
}
// x / (bias + alpha / size * sum of x^2 over the channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta
static Vals lrn_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t size = c.i("size", 0);
  if (size <= 0) c.invalid("needs a positive 'size' attribute");
  if (x.ndim() < 2) c.invalid("X must be (N, C, ...)");
  int64_t ch = x.shape()[1], lo = (size - 1) / 2;
  PadPairs pads(size_t(x.ndim()), {0, 0}), b;
  pads[1] = {lo, size - 1 - lo};
  Tensor sq = x.square().pad(pads);
  for (int64_t d : x.shape()) b.emplace_back(0, d);
  Tensor sum = x.full_like(0);
  for (int64_t i = 0; i < size; i++) b[1] = {i, i + ch}, sum = sum.add(sq.shrink(b));  // one view per kernel tap
  Tensor den = sum.mul(cst(x, c.f("alpha", 1e-4) / double(size))).add(cst(x, c.f("bias", 1.0))).pow(cst(x, c.f("beta", 0.75)));
  return {x.div(den).cast(x.dtype())};
}

// inference (and ratio 0): the identity with an all-true mask; training_mode (opset 12+): a random keep mask, kept
// values scaled by 1 / (1 - ratio)
static Vals dropout_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  double ratio = c.opset >= 12 ? (c.has(1) ? c.host_floats(1).at(0) : 0.5) : c.f("ratio", 0.5);
  bool training = c.opset >= 12 && c.has(2) && c.host_ints(2).at(0) != 0;
  if (!training || ratio == 0) return {x, Tensor::full(x.shape(), 1, dtypes::bool_, x.device())};
  if (ratio < 0 || ratio >= 1) c.invalid("ratio must be in [0, 1)");
  Tensor keep = Tensor::rand(x.shape(), dtypes::float32, x.device()).ge(Tensor(UOp::const_(dtypes::float32, ratio), x.device()));
  return {keep.where(x.mul(cst(x, 1 / (1 - ratio))), x.full_like(0)), keep};
}

// opset 18: each of `axes` (default all) cropped or zero-padded to `shape` around its center (the odd element at the end)
static Vals center_crop_pad_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  Shape want = c.host_ints(1);
  std::vector<int64_t> axes = norm_axes(c.ints("axes", range_axes(0, x.ndim())), x.ndim(), c);
  if (want.size() != axes.size()) c.invalid("shape needs one value per axis");
  PadPairs crop, pad(size_t(x.ndim()), {0, 0});
  for (int64_t d : x.shape()) crop.emplace_back(0, d);
  for (size_t j = 0; j < axes.size(); j++) {
    int64_t in = x.shape()[size_t(axes[j])], to = want[j];
    if (to < 0) c.invalid("shape must be non-negative");
    if (to <= in) crop[size_t(axes[j])] = {(in - to) / 2, (in - to) / 2 + to};
    else pad[size_t(axes[j])] = {(to - in) / 2, to - in - (to - in) / 2};
  }
  return {x.shrink(crop).pad(pad)};
}

// ---- resize ----

struct ResizeOpts {
  std::string mode, ctm, nearest;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
};
// x resized along each dim with out[d] != in or scale[d] != 1, one dim at a time from the last (as the reference's
// nested 1-d interpolation). Per dim the source coordinate of every output position is computed from an arange; nearest
// gathers one index, linear and cubic contract the dim with an (out, in) matrix of tap weights. The reference's output
// width is scale * in, fractional where scales gave it, and align_corners and tf_crop_and_resize divide by it.
static Tensor resize(OpCtx& c, Tensor x, const std::vector<double>& scale, const Shape& out, const std::vector<double>& roi, const ResizeOpts& o) {
  DType dt = x.dtype();
  int64_t r = x.ndim();
  const std::string& dev = x.device();
  for (int64_t d = r - 1; d >= 0; d--) {
    int64_t in = x.shape()[size_t(d)], n = out[size_t(d)];
    double s = scale[size_t(d)], width = s * double(in);
    if (n == in && s == 1 && o.ctm != "tf_crop_and_resize") continue;
    if (in <= 0 || n <= 0) c.invalid("input and output dims must be positive");
    Tensor i = Tensor::arange(0, double(n), 1, dtypes::float32, dev);
    auto f = [&](double v) { return cst(i, v); };
    Tensor half = i.add(f(0.5)).div(f(s)), xo = half.sub(f(0.5));
    if (o.ctm == "half_pixel_symmetric") {
      double adj = double(n) / width, center = double(in) / 2;
      xo = xo.add(f(center * (1 - adj)));
    } else if (o.ctm == "pytorch_half_pixel") {
      if (n == 1) xo = i.full_like(0);
    } else if (o.ctm == "align_corners") {
      xo = width == 1 ? i.full_like(0) : i.mul(f(double(in - 1) / (width - 1)));
    } else if (o.ctm == "asymmetric") {
      xo = i.div(f(s));
    } else if (o.ctm == "tf_half_pixel_for_nn") {
      xo = half;
    } else if (o.ctm == "tf_crop_and_resize") {
      double a = roi.at(size_t(d)), b = roi.at(size_t(d + r));
      xo = width == 1 ? i.full_like((b - a) * double(in - 1) / 2 + a * double(in - 1))
                      : i.mul(f((b - a) * double(in - 1) / (width - 1))).add(f(a * double(in - 1)));
    } else if (o.ctm != "half_pixel") {
      c.unsupported("coordinate_transformation_mode '" + o.ctm + "'");
    }
    Shape rs(size_t(r), 1), full = x.shape();
    rs[size_t(d)] = full[size_t(d)] = n;
    auto clamp_idx = [&](const Tensor& t) { return t.clamp(0, double(in - 1)).cast(dtypes::int32); };
    Tensor y = x;
    if (o.mode == "nearest") {
      if (o.nearest != "round_prefer_floor" && o.nearest != "round_prefer_ceil" && o.nearest != "floor" && o.nearest != "ceil")
        c.unsupported("nearest_mode '" + o.nearest + "'");
      Tensor idx = o.nearest == "round_prefer_floor" ? xo.sub(f(0.5)).ceil()
                   : o.nearest == "round_prefer_ceil" ? xo.add(f(0.5)).floor()
                   : o.nearest == "floor"            ? xo.floor()
                                                     : xo.ceil();
      y = x.gather(d, clamp_idx(idx).reshape(rs).expand(full));
    } else {
      Tensor fl = xo.floor(), t = xo.sub(fl), one = f(1);
      std::vector<std::pair<Tensor, Tensor>> taps;  // (source index, weight)
      if (o.mode == "linear") {
        taps = {{fl, one.sub(t)}, {fl.add(one), t}};
      } else if (o.mode == "cubic") {
        double a = o.cubic_a;
        // Keys' kernel at distance u: within 1 (a+2)u^3 - (a+3)u^2 + 1, within 2 a u^3 - 5a u^2 + 8a u - 4a
        auto near = [&](const Tensor& u) { return u.mul(f(a + 2)).sub(f(a + 3)).mul(u).mul(u).add(one); };
        auto far = [&](const Tensor& u) { return u.mul(f(a)).sub(f(5 * a)).mul(u).add(f(8 * a)).mul(u).sub(f(4 * a)); };
        Tensor rt = one.sub(t);
        taps = {{fl.sub(one), far(t.add(one))}, {fl, near(t)}, {fl.add(one), near(rt)}, {fl.add(f(2)), far(rt.add(one))}};
      } else {
        c.unsupported("mode '" + o.mode + "'");
      }
      if (o.exclude_outside) {
        Tensor total = i.full_like(0);
        for (auto& [idx, w] : taps) w = idx.ge(f(0)).bitwise_and(idx.le(f(double(in - 1)))).where(w, i.full_like(0)), total = total.add(w);
        for (auto& tap : taps) tap.second = tap.second.div(total);
      }
      // m[j, k]: the weight of source k in output j; taps clamped to the edge add up there
      Tensor src = Tensor::arange(0, double(in), 1, dtypes::int32, dev).reshape({1, in}), m = Tensor::full({n, in}, 0, dtypes::float32, dev);
      for (auto& [idx, w] : taps) m = m.add(clamp_idx(idx).reshape({n, 1}).eq(src).where(w.reshape({n, 1}), m.full_like(0)));
      Tensor xf = x.cast(least_upper_float(dt));
      Shape ms(size_t(r) + 1, 1);
      ms[size_t(d)] = n, ms[size_t(d) + 1] = in;
      y = xf.unsqueeze(d).mul(m.reshape(ms).cast(xf.dtype())).sum({d + 1});
    }
    if (o.ctm == "tf_crop_and_resize") {
      Tensor outside = xo.lt(f(0)).bitwise_or(xo.gt(f(double(in - 1)))).reshape(rs);
      y = outside.where(cst(y, o.extrapolation), y);
    }
    x = y;
  }
  return x.cast(dt);
}
// opset 10: (X, scales), asymmetric; 11+: (X, roi, scales, sizes), either scales or sizes (opset 18: for `axes` only,
// sizes fitted by keep_aspect_ratio_policy)
static Vals resize_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t r = x.ndim();
  ResizeOpts o{c.s("mode", "nearest"), c.s("coordinate_transformation_mode", c.opset < 11 ? "asymmetric" : "half_pixel"),
               c.s("nearest_mode", "round_prefer_floor"), c.f("cubic_coeff_a", -0.75), c.f("extrapolation_value", 0.0),
               c.i("exclude_outside", 0) != 0};
  if (c.i("antialias", 0)) c.unsupported("Resize with antialias");
  std::vector<int64_t> axes = norm_axes(c.ints("axes", range_axes(0, r)), r, c);
  size_t scales_in = c.opset < 11 ? 1 : 2, sizes_in = 3;
  std::vector<double> scale(size_t(r), 1.0), roi;
  Shape out = x.shape();
  if (c.opset >= 11 && c.has(1) && c.x(1).numel() > 0) {
    std::vector<double> given = c.host_floats(1);
    if (given.size() != 2 * axes.size()) c.invalid("roi needs two values per resized axis");
    roi.assign(size_t(2 * r), 0);
    for (size_t j = 0; j < size_t(r); j++) roi[j + size_t(r)] = 1;
    for (size_t j = 0; j < axes.size(); j++) roi[size_t(axes[j])] = given[j], roi[size_t(axes[j] + r)] = given[j + axes.size()];
  } else if (o.ctm == "tf_crop_and_resize") {
    c.invalid("tf_crop_and_resize needs roi");
  }
  if (c.opset >= 11 && c.has(sizes_in) && c.x(sizes_in).numel() > 0) {
    Shape sizes = c.host_ints(sizes_in);
    if (sizes.size() != axes.size()) c.invalid("sizes needs one value per resized axis");
    std::string policy = c.s("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t j = 0; j < axes.size(); j++) out[size_t(axes[j])] = sizes[j], scale[size_t(axes[j])] = double(sizes[j]) / double(x.shape()[size_t(axes[j])]);
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double s = policy == "not_larger" ? INFINITY : 0;
      for (size_t j = 0; j < axes.size(); j++) {
        double v = double(sizes[j]) / double(x.shape()[size_t(axes[j])]);
        s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
      }
      for (int64_t a : axes) scale[size_t(a)] = s, out[size_t(a)] = int64_t(std::nearbyint(s * double(x.shape()[size_t(a)])));
    } else {
      c.invalid("unknown keep_aspect_ratio_policy '" + policy + "'");
    }
  } else if (c.has(scales_in) && c.x(scales_in).numel() > 0) {
    std::vector<double> s = c.host_floats(scales_in);
    if (s.size() != axes.size()) c.invalid("scales needs one value per resized axis");
    for (size_t j = 0; j < axes.size(); j++) {
      if (!(s[j] > 0)) c.invalid("scales must be positive");
      scale[size_t(axes[j])] = s[j], out[size_t(axes[j])] = int64_t(s[j] * double(x.shape()[size_t(axes[j])]));
    }
  } else {
    c.invalid("needs scales or sizes");
  }
  return {resize(c, x, scale, out, roi, o)};
}
// the deprecated Resize: scales as an attribute (opset 7) or an input (9), asymmetric coordinates, nearest floors
static Vals upsample_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  std::vector<double> s;
  if (c.opset >= 9) s = c.host_floats(1);
  else for (float v : c.floats("scales")) s.push_back(v);
  if (s.size() != size_t(x.ndim())) c.invalid("scales needs one value per dim");
  Shape out;
  for (size_t j = 0; j < s.size(); j++) {
    if (!(s[j] > 0)) c.invalid("scales must be positive");
    out.push_back(int64_t(s[j] * double(x.shape()[j])));
  }
  std::string mode = c.s("mode", "nearest");
  ResizeOpts o{mode == "bilinear" ? "linear" : mode, "asymmetric", "floor"};
  return {resize(c, x, s, out, {}, o)};
}

// opset 16, 2-d, as torch's grid_sample: grid (N, Ho, Wo, 2) holds (x, y) in [-1, 1]. Each output reads taps of X,
// gathered at their flat index in the (H, W) plane; a tap outside the plane weighs 0 (zeros), or its coordinate is
// clamped (border) or reflected (reflection) first: the source point for bilinear and nearest, each tap for bicubic.
static Vals grid_sample_op(OpCtx& c) {
  const Tensor &x = c.x(0), &grid = c.x(1);
  if (x.ndim() != 4 || grid.ndim() != 4 || grid.shape()[3] != 2 || grid.shape()[0] != x.shape()[0]) c.unsupported("GridSample other than 2-d (N, C, H, W)");
  std::string mode = c.s("mode", "bilinear"), pad = c.s("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") c.invalid("unknown mode '" + mode + "'");
  if (pad != "zeros" && pad != "border" && pad != "reflection") c.invalid("unknown padding_mode '" + pad + "'");
  bool align = c.i("align_corners", 0) != 0;
  int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2], w = x.shape()[3], ho = grid.shape()[1], wo = grid.shape()[2];
  Tensor g = grid.cast(dtypes::float32);
  auto f = [&](double v) { return cst(g, v); };
  auto coord = [&](int64_t k, int64_t size) {
    Tensor v = g.shrink({{0, n}, {0, ho}, {0, wo}, {k, k + 1}}).reshape({n, ho, wo}).add(f(1));
    return align ? v.mul(f(double(size - 1) / 2)) : v.mul(f(double(size))).sub(f(1)).div(f(2));
  };
  // the padding mode applied to a coordinate along a dim of `size`
  auto bound = [&](const Tensor& v, int64_t size) {
    if (pad == "zeros") return v;
    Tensor r = v;
    if (pad == "reflection") {
      double lo = align ? 0 : -0.5, span = align ? double(size - 1) : double(size);
      if (span <= 0) return v.full_like(0);
      Tensor d = v.sub(f(lo)).abs(), flips = d.div(f(span)).floor(), extra = d.sub(flips.mul(f(span)));
      r = flips.mod(f(2)).eq(f(0)).where(extra.add(f(lo)), f(span + lo).sub(extra));
    }
    return r.clamp(0, double(size - 1));
  };
  Tensor ix = coord(0, w), iy = coord(1, h);
  std::vector<std::tuple<Tensor, Tensor, Tensor>> taps;  // (x, y, weight)
  if (mode == "bicubic") {
    double a = -0.75;
    auto near = [&](const Tensor& u) { return u.mul(f(a + 2)).sub(f(a + 3)).mul(u).mul(u).add(f(1)); };
    auto far = [&](const Tensor& u) { return u.mul(f(a)).sub(f(5 * a)).mul(u).add(f(8 * a)).mul(u).sub(f(4 * a)); };
    auto coeffs = [&](const Tensor& t) {
      Tensor rt = f(1).sub(t);
      return std::vector<Tensor>{far(t.add(f(1))), near(t), near(rt), far(rt.add(f(1)))};
    };
    Tensor x0 = ix.floor(), y0 = iy.floor();
    std::vector<Tensor> cx = coeffs(ix.sub(x0)), cy = coeffs(iy.sub(y0));
    for (int64_t j = 0; j < 4; j++)
      for (int64_t i = 0; i < 4; i++)
        taps.emplace_back(bound(x0.add(f(double(i - 1))), w), bound(y0.add(f(double(j - 1))), h), cx[size_t(i)].mul(cy[size_t(j)]));
  } else {
    ix = bound(ix, w), iy = bound(iy, h);
    if (mode == "nearest") {
      taps.emplace_back(ix.round(), iy.round(), ix.full_like(1));
    } else {
      Tensor x0 = ix.floor(), y0 = iy.floor(), tx = ix.sub(x0), ty = iy.sub(y0), x1 = x0.add(f(1)), y1 = y0.add(f(1));
      taps = {{x0, y0, f(1).sub(tx).mul(f(1).sub(ty))}, {x1, y0, tx.mul(f(1).sub(ty))}, {x0, y1, f(1).sub(tx).mul(ty)}, {x1, y1, tx.mul(ty)}};
    }
  }
  Tensor plane = x.reshape({n, ch, h * w}), out = Tensor::full({n, ch, ho * wo}, 0, least_upper_float(x.dtype()), x.device());
  for (auto& [tx, ty, wt] : taps) {
    Tensor inside = tx.ge(f(0)).bitwise_and(tx.le(f(double(w - 1)))).bitwise_and(ty.ge(f(0))).bitwise_and(ty.le(f(double(h - 1))));
    Tensor idx = ty.clamp(0, double(h - 1)).mul(f(double(w))).add(tx.clamp(0, double(w - 1))).cast(dtypes::int32).reshape({n, 1, ho * wo});
    Tensor v = plane.gather(2, idx.expand({n, ch, ho * wo})).cast(out.dtype());
    out = out.add(inside.where(wt, wt.full_like(0)).reshape({n, 1, ho * wo}).cast(out.dtype()).mul(v));
  }
  return {out.reshape({n, ch, ho, wo}).cast(x.dtype())};
}

// ---- recurrent ----

enum class Cell { RNN, GRU, LSTM };
// t[i] along dim 0
static Tensor row(const Tensor& t, int64_t i) {
  PadPairs b;
  for (int64_t d : t.shape()) b.emplace_back(0, d);
  b[0] = {i, i + 1};
  return t.shrink(b).reshape(Shape(t.shape().begin() + 1, t.shape().end()));
}
// gate g (of size h) of the last dim
static Tensor gate(const Tensor& t, int64_t g, int64_t h) {
  PadPairs b;
  for (int64_t d : t.shape()) b.emplace_back(0, d);
  b.back() = {g * h, (g + 1) * h};
  return t.shrink(b);
}
static Tensor activation(OpCtx& c, const std::string& name, std::optional<double> alpha, std::optional<double> beta, const Tensor& x) {
  auto a = [&](double d) { return cst(x, alpha.value_or(d)); };
  auto b = [&](double d) { return cst(x, beta.value_or(d)); };
  if (name == "Sigmoid") return x.sigmoid();
  if (name == "Tanh") return x.tanh();
  if (name == "Relu") return x.relu();
  if (name == "Affine") return x.mul(a(1)).add(b(0));
  if (name == "LeakyRelu") return x.lt(cst(x, 0)).where(x.mul(a(0.01)), x);
  if (name == "ThresholdedRelu") return x.gt(a(1)).where(x, x.full_like(0));
  if (name == "ScaledTanh") return x.mul(b(1)).tanh().mul(a(1));
  if (name == "HardSigmoid") return x.mul(a(0.2)).add(b(0.5)).clamp(0, 1);
  if (name == "Elu") return x.lt(cst(x, 0)).where(x.exp().sub(cst(x, 1)).mul(a(1)), x);
  if (name == "Softsign") return x.softsign();
  if (name == "Softplus") return x.softplus();
  c.unsupported("activation '" + name + "'");
}
// X (seq, batch, in) (layout 1: batch first), W (dirs, G*h, in), R (dirs, G*h, h), B (dirs, 2*G*h) = Wb then Rb. Gates:
// RNN i; GRU z, r, h; LSTM i, o, f, c. Steps at or past a batch's sequence_lens keep its state and output zeros.
template <Cell K>
static Vals rnn_op(OpCtx& c) {
  Tensor x = c.x(0), w = c.x(1), r = c.x(2);
  bool batch_first = c.i("layout", 0) != 0;
  if (x.ndim() != 3 || w.ndim() != 3 || r.ndim() != 3) c.invalid("X, W and R must be 3-D");
  if (batch_first) x = x.transpose(0, 1);
  const int64_t G = K == Cell::LSTM ? 4 : K == Cell::GRU ? 3 : 1;
  int64_t h = r.shape()[2], T = x.shape()[0], B = x.shape()[1];
  std::string dir = c.s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") c.invalid("unknown direction '" + dir + "'");
  int64_t nd = dir == "bidirectional" ? 2 : 1;
  if (w.shape() != Shape{nd, G * h, x.shape()[2]} || r.shape() != Shape{nd, G * h, h}) c.invalid("W or R has the wrong shape");
  if (c.i("hidden_size", h) != h) c.invalid("hidden_size differs from R's");
  auto state = [&](size_t k) -> std::optional<Tensor> {
    auto t = c.opt(k);
    if (t && batch_first) t = t->transpose(0, 1);
    if (t && t->shape() != Shape{nd, B, h}) c.invalid("initial state has the wrong shape");
    return t;
  };
  std::optional<Tensor> bias = c.opt(3), lens = c.opt(4), h0 = state(5), c0 = K == Cell::LSTM ? state(6) : std::nullopt;
  std::optional<Tensor> peep = K == Cell::LSTM ? c.opt(7) : std::nullopt;
  if (bias && bias->shape() != Shape{nd, 2 * G * h}) c.invalid("B has the wrong shape");
  std::vector<std::string> acts = c.strings("activations");
  std::vector<float> alphas = c.floats("activation_alpha"), betas = c.floats("activation_beta");
  std::vector<std::string> dflt = K == Cell::LSTM ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                  : K == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                   : std::vector<std::string>{"Tanh"};
  size_t na = dflt.size();
  if (acts.empty())
    for (int64_t d = 0; d < nd; d++) acts.insert(acts.end(), dflt.begin(), dflt.end());
  if (acts.size() != na * size_t(nd)) c.invalid("activations needs " + std::to_string(na * size_t(nd)) + " names");
  std::optional<double> clip;
  if (c.has_attr("clip")) clip = c.f("clip", 0);
  bool couple = K == Cell::LSTM && c.i("input_forget", 0) != 0, lbr = K == Cell::GRU && c.i("linear_before_reset", 0) != 0;

  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < nd; d++) {
    auto act = [&](size_t k, const Tensor& v) {
      size_t at = size_t(d) * na + k;
      std::optional<double> al, be;
      if (at < alphas.size()) al = alphas[at];
      if (at < betas.size()) be = betas[at];
      return activation(c, acts[at], al, be, clip ? v.clamp(-*clip, *clip) : v);
    };
    Tensor wd = row(w, d), rd = row(r, d);
    Tensor xw = x.matmul(wd.transpose());  // every step's input projection at once: (T, B, G*h)
    std::optional<Tensor> wb, rb;
    if (bias) wb = gate(row(*bias, d), 0, G * h), rb = gate(row(*bias, d), 1, G * h), xw = xw.add(*wb);
    Tensor hcur = h0 ? row(*h0, d) : Tensor::full({B, h}, 0, x.dtype(), x.device());
    Tensor ccur = c0 ? row(*c0, d) : hcur.full_like(0);
    std::vector<Tensor> out(size_t(T), hcur);
    bool rev = dir == "reverse" || d == 1;
    for (int64_t step = 0; step < T; step++) {
      int64_t t = rev ? T - 1 - step : step;
      Tensor xt = row(xw, t), hr = hcur.matmul(rd.transpose());
      if (rb) hr = hr.add(*rb);
      Tensor hn = hcur, cn = ccur;
      if (K == Cell::RNN) {
        hn = act(0, xt.add(hr));
      } else if (K == Cell::GRU) {
        Tensor z = act(0, gate(xt, 0, h).add(gate(hr, 0, h))), rr = act(0, gate(xt, 1, h).add(gate(hr, 1, h)));
        // linear_before_reset: r * (H R_h + Rb_h); else (r * H) R_h + Rb_h
        Tensor hh = lbr ? rr.mul(gate(hr, 2, h)) : rr.mul(hcur).matmul(gate(rd.transpose(), 2, h));
        if (!lbr && rb) hh = hh.add(gate(*rb, 2, h));
        Tensor cand = act(1, gate(xt, 2, h).add(hh));
        hn = cand.add(z.mul(hcur.sub(cand)));  // (1 - z) * cand + z * H
      } else {
        Tensor g = xt.add(hr);
        auto peephole = [&](int64_t k, const Tensor& cell) { return peep ? cell.mul(gate(row(*peep, d), k, h)) : cell.full_like(0); };
        Tensor ig = act(0, gate(g, 0, h).add(peephole(0, ccur)));
        Tensor fg = couple ? cst(ig, 1).sub(ig) : act(0, gate(g, 2, h).add(peephole(2, ccur)));
        cn = fg.mul(ccur).add(ig.mul(act(1, gate(g, 3, h))));
        Tensor og = act(0, gate(g, 1, h).add(peephole(1, cn)));
        hn = og.mul(act(2, cn));
      }
      // each step's state in a buffer of its own: inlined, step t's kernel would recompute every step before it
      hn = hn.contiguous();
      if (K == Cell::LSTM) cn = cn.contiguous();
      if (lens) {
        Tensor live = cst(*lens, double(t)).lt(*lens).reshape({B, 1});
        out[size_t(t)] = live.where(hn, hn.full_like(0)), hcur = live.where(hn, hcur), ccur = live.where(cn, ccur);
      } else {
        out[size_t(t)] = hcur = hn, ccur = cn;
      }
    }
    ys.push_back(Tensor::stack(out, 0)), hs.push_back(hcur), cs.push_back(ccur);
  }
  Tensor y = Tensor::stack(ys, 1), yh = Tensor::stack(hs, 0), yc = Tensor::stack(cs, 0);  // (T, dirs, B, h), (dirs, B, h)
  if (batch_first) y = y.permute({2, 0, 1, 3}), yh = yh.transpose(0, 1), yc = yc.transpose(0, 1);
  if (K == Cell::LSTM) return {y, yh, yc};
  return {y, yh};
}

// ---- quantization ----

// a per-axis parameter (1-D) lined up with dim `axis` of x; a scalar broadcasts as it is
static Tensor along(OpCtx& c, const Tensor& p, const Tensor& x, int64_t axis) {
  if (p.ndim() == 0 || (p.ndim() == 1 && p.numel() == 1)) return p.reshape({});
  if (p.ndim() != 1) c.unsupported("blocked quantization (a scale of rank > 1)");
  Shape s(size_t(x.ndim()), 1);
  s[size_t(norm_axis(axis, x.ndim(), c))] = -1;
  return p.reshape(s);
}
// round half to even, then clamp to dt's range
static Tensor saturate(const Tensor& v, DType dt) { return v.round().clamp(dtypes::min(dt), dtypes::max(dt)).cast(dt); }
static Vals quantize_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t axis = c.i("axis", 1);
  std::optional<Tensor> zp = c.opt(2);
  DType dt = zp ? zp->dtype() : dtypes::uint8;
  if (dt != dtypes::uint8 && dt != dtypes::int8) c.unsupported("QuantizeLinear to " + dt.name());
  Tensor v = x.cast(dtypes::float32).div(along(c, c.x(1), x, axis).cast(dtypes::float32)).round();
  if (zp) v = v.add(along(c, *zp, x, axis).cast(dtypes::float32));
  return {saturate(v, dt)};
}
static Vals dequantize_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  int64_t axis = c.i("axis", 1);
  Tensor scale = along(c, c.x(1), x, axis), v = x.cast(dtypes::float32);
  if (auto zp = c.opt(2)) v = v.sub(along(c, *zp, x, axis).cast(dtypes::float32));
  return {v.mul(scale.cast(dtypes::float32)).cast(scale.dtype())};
}
// uint8 over [min(0, min x), max(0, max x)]: scale = range / 255, zero point = round(-min / scale)
static Vals dynamic_quantize_op(OpCtx& c) {
  Tensor x = c.x(0).cast(dtypes::float32);
  Tensor lo = x.min().minimum(cst(x, 0)), hi = x.max().maximum(cst(x, 0));
  Tensor scale = hi.sub(lo).div(cst(x, 255));
  Tensor zp = saturate(lo.neg().div(scale), dtypes::uint8);
  return {saturate(x.div(scale).round().add(zp.cast(dtypes::float32)), dtypes::uint8), scale, zp};
}
// an int32 accumulator requantized: round(acc * (a_scale * b_scale / y_scale)) + y_zero_point, saturated to y's type
static Tensor requantize(OpCtx& c, const Tensor& acc, const Tensor& ab_scale, size_t ys, size_t yzp) {
  Tensor v = acc.cast(dtypes::float32).mul(ab_scale.cast(dtypes::float32).div(c.x(ys).cast(dtypes::float32))).round();
  std::optional<Tensor> zp = c.opt(yzp);
  DType dt = zp ? zp->dtype() : dtypes::uint8;
  if (zp) v = v.add(zp->cast(dtypes::float32));
  return saturate(v, dt);
}
// inputs x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B (int32); w's scale and zero point may be per output channel
static Vals qlinear_conv_op(OpCtx& c) {
  const Tensor &x = needs_nd(c, c.x(0)), &w = c.x(3);
  Window win = window(c, spatial(x), c.ints("kernel_shape", spatial(w)));
  Tensor acc = shifted(x, c.opt(2), 1).conv(shifted(w, c.opt(5), 0), std::nullopt, c.i("group", 1), win.stride, win.dilation, win.pads);
  if (auto b = c.opt(8)) acc = acc.add(per_channel(b->cast(dtypes::int32), x.ndim()));
  Tensor ws = c.x(4).ndim() == 1 && c.x(4).numel() > 1 ? per_channel(c.x(4), x.ndim()) : c.x(4).reshape({});
  return {requantize(c, acc, c.x(1).reshape({}).cast(dtypes::float32).mul(ws.cast(dtypes::float32)), 6, 7)};
}
// a's scale and zero point may be per row (M,), b's per column (N,)
static Vals qlinear_matmul_op(OpCtx& c) {
  const Tensor &a = c.x(0), &b = c.x(3);
  auto shift = [&](const Tensor& t, size_t zk, bool rows) {
    Tensor v = t.cast(dtypes::int32), z = c.x(zk).cast(dtypes::int32);
    return v.sub(rows && z.ndim() == 1 && z.numel() > 1 ? z.unsqueeze(-1) : z);
  };
  Tensor as = c.x(1), bs = c.x(4);
  if (as.ndim() == 1 && as.numel() > 1) as = as.unsqueeze(-1);
  Tensor acc = shift(a, 2, true).matmul(shift(b, 5, false));
  return {requantize(c, acc, as.cast(dtypes::float32).mul(bs.cast(dtypes::float32)), 6, 7)};
}

// ---- object detection ----

// The corners of boxes (..., 4) as (y1, x1, y2, x2), each (..., 1): center_point_box 0 holds two corners in either
// order, 1 holds (x center, y center, width, height)
static std::array<Tensor, 4> corners(const Tensor& b, bool center) {
  auto col = [&](int64_t k) {
    PadPairs s;
    for (int64_t d : b.shape()) s.emplace_back(0, d);
    s.back() = {k, k + 1};
    return b.shrink(s);
  };
  Tensor a = col(0), p = col(1), q = col(2), r = col(3);
  if (center) {
    Tensor hw = q.div(cst(q, 2)), hh = r.div(cst(r, 2));
    return {p.sub(hh), a.sub(hw), p.add(hh), a.add(hw)};
  }
  return {a.minimum(q), p.minimum(r), a.maximum(q), p.maximum(r)};
}
// Greedy NMS per (batch, class), as onnxruntime: candidates above score_threshold by descending score (ties: lower
// index first); a candidate is dropped when its IoU with a kept box exceeds iou_threshold (an empty box or intersection
// never suppresses). The IoU matrix and the score order are tensor ops; their (small) results come back to the host
// once per batch for the selection, whose output size depends on the data.
static Vals nms_op(OpCtx& c) {
  const Tensor &boxes = c.x(0), &scores = c.x(1);
  if (boxes.ndim() != 3 || boxes.shape()[2] != 4) c.invalid("boxes must be (batch, boxes, 4)");
  if (scores.ndim() != 3 || scores.shape()[0] != boxes.shape()[0] || scores.shape()[2] != boxes.shape()[1])
    c.invalid("scores must be (batch, classes, boxes) matching boxes");
  int64_t nb = scores.shape()[0], nc = scores.shape()[1], n = scores.shape()[2];
  int64_t max_out = c.has(2) ? c.host_ints(2).at(0) : 0;
  double iou_thr = c.has(3) ? c.host_floats(3).at(0) : 0;
  if (iou_thr < 0 || iou_thr > 1) c.invalid("iou_threshold must be in [0, 1]");
  Tensor b = boxes.cast(least_upper_float(boxes.dtype()));
  auto [y1, x1, y2, x2] = corners(b, c.i("center_point_box", 0) != 0);
  auto t = [](const Tensor& v) { return v.transpose(1, 2); };  // (B, N, 1) -> (B, 1, N)
  Tensor area = y2.sub(y1).mul(x2.sub(x1)), zero = cst(area, 0);
  Tensor inter = y2.minimum(t(y2)).sub(y1.maximum(t(y1))).maximum(zero).mul(x2.minimum(t(x2)).sub(x1.maximum(t(x1))).maximum(zero));
  Tensor uni = area.add(t(area)).sub(inter);
  Tensor ok = inter.gt(zero).bitwise_and(area.gt(zero)).bitwise_and(t(area).gt(zero)).bitwise_and(uni.gt(zero));
  Tensor suppress = ok.where(inter.div(ok.where(uni, uni.full_like(1))), zero).gt(cst(area, iou_thr));  // (B, N, N)
  std::vector<int64_t> sel;
  if (max_out > 0 && n > 0) {
    auto [sorted, order] = scores.sort(-1, true);
    Tensor cand = order.cast(dtypes::int64);
    if (c.has(4)) cand = sorted.gt(cst(sorted, c.host_floats(4).at(0))).where(cand, cand.full_like(-1));
    std::vector<int64_t> cands = c.read_ints(cand);  // (B, C, N): box indices by score, -1 below the threshold
    for (int64_t bi = 0; bi < nb; bi++) {
      std::vector<int64_t> sup = c.read_ints(suppress.shrink({{bi, bi + 1}, {0, n}, {0, n}}));
      for (int64_t ci = 0; ci < nc; ci++) {
        std::vector<int64_t> kept;
        for (int64_t k = 0; k < n && int64_t(kept.size()) < max_out; k++) {
          int64_t i = cands[size_t((bi * nc + ci) * n + k)];
          if (i < 0) break;
          if (std::none_of(kept.begin(), kept.end(), [&](int64_t j) { return sup[size_t(i * n + j)] != 0; })) kept.push_back(i);
        }
        for (int64_t i : kept) sel.insert(sel.end(), {bi, ci, i});
      }
    }
  }
  int64_t rows = int64_t(sel.size() / 3);
  if (rows == 0) return {Tensor::full({0, 3}, 0, dtypes::int64, c.device)};
  return {Tensor::from_data(sel.data(), sel.size() * sizeof(int64_t), dtypes::int64, {rows, 3}, c.device)};
}

// One axis of RoiAlign's sampling grid, as onnxruntime: sample k of bin p sits at start + p*bin + (k + 0.5)*bin/grid;
// a sample outside [-1, size] weighs 0, one below 0 reads 0, one past size-1 reads the last row. Returns the two
// bilinear taps' one-hot rows (R, out, G, size) and weights (R, out, G), and the samples in the roi's grid (R, 1, G).
struct RoiAxis {
  std::array<Tensor, 2> hot, w;
  Tensor in_grid;
};
static RoiAxis roi_axis(const Tensor& start, const Tensor& bin, const Tensor& grid, int64_t out, int64_t g, int64_t size) {
  DType ft = start.dtype();
  auto f = [&](double v) { return cst(start, v); };
  Tensor p = Tensor::arange(0, double(out), 1, ft, start.device()).reshape({1, out, 1});
  Tensor k = Tensor::arange(0, double(g), 1, ft, start.device()).reshape({1, 1, g});
  Tensor v = start.add(p.mul(bin)).add(k.add(f(0.5)).mul(bin).div(grid));
  Tensor inside = v.ge(f(-1)).bitwise_and(v.le(f(double(size))));
  v = v.maximum(f(0));
  Tensor lo = v.floor(), edge = lo.ge(f(double(size - 1)));
  lo = edge.where(f(double(size - 1)), lo), v = edge.where(f(double(size - 1)), v);
  Tensor hi = edge.where(lo, lo.add(f(1))), l = v.sub(lo), valid = inside.bitwise_and(k.lt(grid));
  Tensor iota = Tensor::arange(0, double(size), 1, ft, start.device());
  auto hot = [&](const Tensor& i) { return i.unsqueeze(-1).eq(iota); };
  return {{hot(lo), hot(hi)}, {valid.where(f(1).sub(l), f(0)), valid.where(l, f(0))}, k.lt(grid)};
}
// X (N, C, H, W), rois (R, 4) as (x1, y1, x2, y2), batch_indices (R,) -> (R, C, oh, ow). Each tap is a one-hot row per
// axis, so reading X is two batched matmuls: avg folds the weights into the rows first (separable), max multiplies
// each tap's values by its weight and takes the max over taps, then over the bin's samples (onnxruntime's max).
static Vals roi_align_op(OpCtx& c) {
  const Tensor &x = c.x(0), &rois = c.x(1), &bidx = c.x(2);
  if (x.ndim() != 4) c.invalid("X must be (N, C, H, W)");
  if (rois.ndim() != 2 || rois.shape()[1] != 4) c.invalid("rois must be (num_rois, 4)");
  if (bidx.ndim() != 1 || bidx.shape()[0] != rois.shape()[0]) c.invalid("batch_indices must be (num_rois,)");
  std::string mode = c.s("mode", "avg"), ctm = c.s("coordinate_transformation_mode", "half_pixel");
  if (mode != "avg" && mode != "max") c.invalid("unknown mode '" + mode + "'");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") c.invalid("unknown coordinate_transformation_mode '" + ctm + "'");
  bool half = ctm == "half_pixel";
  int64_t oh = c.i("output_height", 1), ow = c.i("output_width", 1), ratio = c.i("sampling_ratio", 0);
  if (oh <= 0 || ow <= 0 || ratio < 0) c.invalid("output_height/width must be positive and sampling_ratio not negative");
  int64_t n = x.shape()[0], ch = x.shape()[1], h = x.shape()[2], w = x.shape()[3], r = rois.shape()[0];
  DType ft = least_upper_float(x.dtype());
  Tensor rf = rois.cast(ft);
  auto f = [&](double v) { return cst(rf, v); };
  auto col = [&](int64_t k) { return rf.shrink({{0, r}, {k, k + 1}}).reshape({r, 1, 1}).mul(f(c.f("spatial_scale", 1))).sub(f(half ? 0.5 : 0)); };
  Tensor sx = col(0), sy = col(1), rw = col(2).sub(sx), rh = col(3).sub(sy);
  if (!half) rw = rw.maximum(f(1)), rh = rh.maximum(f(1));
  Tensor bh = rh.div(f(double(oh))), bw = rw.div(f(double(ow)));
  // sampling_ratio 0: ceil(roi size / output size) samples per bin, per roi; the grid is as large as the largest roi's
  Tensor gh = ratio ? rh.full_like(double(ratio)) : bh.ceil(), gw = ratio ? rw.full_like(double(ratio)) : bw.ceil();
  int64_t gy = ratio, gx = ratio;
  if (!ratio) {
    std::vector<int64_t> m = r ? c.read_ints(Tensor::stack({gh.max(), gw.max()}).cast(dtypes::int64)) : std::vector<int64_t>{0, 0};
    gy = std::max<int64_t>(m[0], 1), gx = std::max<int64_t>(m[1], 1);
  }
  RoiAxis ay = roi_axis(sy, bh, gh, oh, gy, h), ax = roi_axis(sx, bw, gw, ow, gx, w);
  // each roi's image (R, C, H, W)
  Tensor xb = x.cast(ft).reshape({n, ch * h * w}).gather(0, bidx.cast(dtypes::int64).reshape({r, 1}).expand({r, ch * h * w})).reshape({r, ch, h, w});
  Tensor count = gh.mul(gw).reshape({r, 1, 1, 1});
  if (mode == "avg") {
    auto fold = [&](const RoiAxis& a, int64_t out, int64_t size) {
      Tensor m = a.hot[0].where(a.w[0].unsqueeze(-1), f(0)).add(a.hot[1].where(a.w[1].unsqueeze(-1), f(0)));
      return m.sum({2}).reshape({r, 1, out, size});
    };
    Tensor y = fold(ay, oh, h).matmul(xb).matmul(fold(ax, ow, w).transpose(2, 3));
    return {y.div(count.maximum(f(1))).cast(x.dtype())};
  }
  std::optional<Tensor> best;
  for (int ty = 0; ty < 2; ty++)
    for (int tx = 0; tx < 2; tx++) {
      Tensor sel_y = ay.hot[size_t(ty)].cast(ft).reshape({r, 1, oh * gy, h}), sel_x = ax.hot[size_t(tx)].cast(ft).reshape({r, 1, ow * gx, w});
      Tensor wt = ay.w[size_t(ty)].reshape({r, 1, oh * gy, 1}).mul(ax.w[size_t(tx)].reshape({r, 1, 1, ow * gx}));
      Tensor v = sel_y.matmul(xb).matmul(sel_x.transpose(2, 3)).mul(wt);
      best = best ? best->maximum(v) : v;
    }
  Tensor in_grid = ay.in_grid.reshape({r, 1, 1, gy, 1, 1}).bitwise_and(ax.in_grid.reshape({r, 1, 1, 1, 1, gx}));
  Tensor m = in_grid.where(best->reshape({r, ch, oh, gy, ow, gx}), f(-INFINITY)).max({3, 5});
  return {count.gt(f(0)).where(m, f(0)).cast(x.dtype())};
}

// ---- random ----

// The seed attribute is ignored: our generator is tinygrad's counter-based one (Tensor::manual_seed), which can't
// reproduce numpy's streams anyway, so outputs match the reference in shape, dtype and range only.
static DType random_dtype(OpCtx& c, DType dflt) {
  DType dt = c.has_attr("dtype") ? to_dtype(int32_t(c.i("dtype", FLOAT)), "dtype") : dflt;
  if (!dtypes::is_float(dt)) c.invalid("dtype must be a float type, got " + dt.name());
  return dt;
}
template <bool Normal, bool Like>
static Vals random_op(OpCtx& c) {
  Shape s = Like ? c.x(0).shape() : c.ints("shape");
  if (!Like && !c.has_attr("shape")) c.invalid("needs the 'shape' attribute");
  DType dt = random_dtype(c, Like ? c.x(0).dtype() : dtypes::float32);
  if (Normal) return {Tensor::normal(s, c.f("mean", 0), c.f("scale", 1), dt, c.device)};
  return {Tensor::uniform(s, c.f("low", 0), c.f("high", 1), dt, c.device)};
}
// 1 with probability p: a uniform draw in [0, 1) below p
static Vals bernoulli_op(OpCtx& c) {
  const Tensor& p = c.x(0);
  DType ft = least_upper_float(p.dtype());
  DType dt = c.has_attr("dtype") ? to_dtype(int32_t(c.i("dtype", FLOAT)), "dtype") : p.dtype();
  return {Tensor::rand(p.shape(), ft, c.device).lt(p.cast(ft)).cast(dt)};
}

// ---- losses ----

static int reduction(OpCtx& c) {
  std::string r = c.s("reduction", "mean");
  if (r == "none") return 0;
  if (r == "mean") return 1;
  if (r == "sum") return 2;
  c.invalid("unknown reduction '" + r + "'");
}
// input (N, C, d...) of log-probabilities, target (N, d...) class indices; the mean divides by the targets' total weight
static Tensor nll(OpCtx& c, const Tensor& logp) {
  std::optional<int64_t> ignore;
  if (c.has_attr("ignore_index")) ignore = c.i("ignore_index", 0);
  const Tensor& target = c.x(1);
  if (logp.ndim() < 2 || target.ndim() != logp.ndim() - 1) c.invalid("input must be (N, C, d...) and target (N, d...)");
  return logp.nll_loss(target, reduction(c), c.opt(2), ignore).cast(logp.dtype());
}
static Vals nll_loss_op(OpCtx& c) { return {nll(c, c.x(0))}; }
// the loss of log_softmax over the class dim; the log-probabilities are the optional second output
static Vals softmax_ce_op(OpCtx& c) {
  const Tensor& x = c.x(0);
  if (x.ndim() < 2) c.invalid("scores must be (N, C, d...)");
  Tensor logp = x.log_softmax(1).cast(x.dtype());
  return {nll(c, logp), logp};
}

void add_nn_ops(OpTable& t) {
  t["Conv"] = conv_op, t["ConvTranspose"] = conv_transpose_op, t["ConvInteger"] = conv_integer_op;
  t["MaxPool"] = max_pool_op, t["AveragePool"] = average_pool_op, t["LpPool"] = lp_pool_op, t["MaxUnpool"] = max_unpool_op;
  t["GlobalAveragePool"] = global_pool_op<Global::Avg>, t["GlobalMaxPool"] = global_pool_op<Global::Max>;
  t["GlobalLpPool"] = global_pool_op<Global::Lp>;
  t["BatchNormalization"] = batchnorm_op, t["InstanceNormalization"] = instance_norm_op, t["LayerNormalization"] = layer_norm_op;
  t["GroupNormalization"] = group_norm_op, t["LpNormalization"] = lp_norm_op, t["MeanVarianceNormalization"] = mvn_op, t["LRN"] = lrn_op;
  t["Dropout"] = dropout_op, t["Resize"] = resize_op, t["Upsample"] = upsample_op, t["GridSample"] = grid_sample_op;
  t["CenterCropPad"] = center_crop_pad_op;
  t["RNN"] = rnn_op<Cell::RNN>, t["GRU"] = rnn_op<Cell::GRU>, t["LSTM"] = rnn_op<Cell::LSTM>;
  t["QuantizeLinear"] = quantize_op, t["DequantizeLinear"] = dequantize_op, t["DynamicQuantizeLinear"] = dynamic_quantize_op;
  t["QLinearConv"] = qlinear_conv_op, t["QLinearMatMul"] = qlinear_matmul_op;
  t["NegativeLogLikelihoodLoss"] = nll_loss_op, t["SoftmaxCrossEntropyLoss"] = softmax_ce_op;
  t["NonMaxSuppression"] = nms_op, t["RoiAlign"] = roi_align_op;
  t["RandomUniform"] = random_op<false, false>, t["RandomNormal"] = random_op<true, false>;
  t["RandomUniformLike"] = random_op<false, true>, t["RandomNormalLike"] = random_op<true, true>, t["Bernoulli"] = bernoulli_op;
}

}  // namespace tg::onnx
