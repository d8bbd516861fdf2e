// Signal processing (windows, DFT, STFT, mel weights) and the ai.onnx.preview.training optimizers. Transforms are
// matmuls against cos/sin matrices built on the device from aranges, so a DFT is one fused kernel like any matmul.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "onnx/onnx.h"

namespace tg::onnx {

using Vals = std::vector<Value>;

// a 0-d constant of like's dtype: broadcasts against like without promoting it
static Tensor cst(const Tensor& like, double v) { return Tensor(UOp::const_(like.dtype(), v), like.device()); }
static bool is_half(DType d) { return d == dtypes::float16 || d == dtypes::bfloat16; }
static int64_t host_scalar(const OpCtx& c, size_t k, const char* what) {
  auto v = c.host_ints(k);
  if (v.size() != 1) c.invalid(std::string(what) + " must hold one value");
  return v[0];
}

// ---- windows: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1 (symmetric) ----
template <double A0, double A1, double A2>
static Vals window_op(OpCtx& c) {
  int64_t size = host_scalar(c, 0, "size");
  if (size < 0) c.invalid("size must be >= 0, got " + std::to_string(size));
  double N = double(c.i("periodic", 1) ? size : size - 1);
  Tensor n = Tensor::arange(0, double(size), 1, dtypes::float32, c.device);
  Tensor th = n.mul(cst(n, 2 * std::numbers::pi / N)), y = cst(th, A0).sub(th.cos().mul(cst(th, A1)));
  if (A2 != 0) y = y.add(th.mul(cst(th, 2)).cos().mul(cst(th, A2)));
  return {y.cast(to_dtype(int32_t(c.i("output_datatype", FLOAT)), "output_datatype"))};
}

// The (n*ch, 2k) matrix taking a signal of n points (ch = 1: real, ch = 2: interleaved re, im) to k frequencies as
// interleaved re, im: X[m] = sum_j x[j] e^(-+ 2 pi i jm/n), scaled by 1/n for the inverse. The angle 2 pi jm/n is
// reduced in integers to a quadrant and an offset in [0, pi/2), so sin(pi) is exactly 0 and symmetric terms cancel.
static Tensor dft_matrix(int64_t n, int64_t k, int64_t ch, bool inverse, DType dt, const std::string& dev) {
  DType it = 4 * n * std::max(n, k) < (int64_t(1) << 31) ? dtypes::int32 : dtypes::int64;
  auto ic = [&](int64_t v) { return Tensor(UOp::const_(it, double(v)), dev); };
  Tensor j = Tensor::arange(0, double(n), 1, it, dev).reshape({n, 1}), m = Tensor::arange(0, double(k), 1, it, dev).reshape({1, k});
  Tensor q = j.mul(m).mod(ic(n)).mul(ic(4)), quad = q.idiv(ic(n));  // the angle is (pi/2) q/n
  Tensor t = q.mod(ic(n)).cast(dt).mul(Tensor(UOp::const_(dt, std::numbers::pi / 2 / double(n)), dev)), st = t.sin(), ct = t.cos();
  auto pick = [&](const Tensor& a, const Tensor& b, const Tensor& c2, const Tensor& d) {
    return quad.eq(ic(0)).where(a, quad.eq(ic(1)).where(b, quad.eq(ic(2)).where(c2, d)));
  };
  Tensor co = pick(ct, st.neg(), ct.neg(), st), si = inverse ? pick(st, ct, st.neg(), ct.neg()) : pick(st.neg(), ct.neg(), st, ct);
  if (inverse) co = co.div(cst(co, double(n))), si = si.div(cst(si, double(n)));
  // (re + i im)(co + i si) = (re co - im si) + i (re si + im co)
  Tensor from_re = Tensor::stack({co, si}, -1);
  if (ch == 1) return from_re.reshape({n, 2 * k});
  Tensor from_im = Tensor::stack({si.neg(), co}, -1);
  return Tensor::stack({from_re, from_im}, 1).reshape({n * 2, 2 * k});
}

// x (..., n, ch) -> (..., k, 2): the transform of its second-to-last dim
static Tensor dft_last(const Tensor& x, int64_t k, bool inverse) {
  Shape s = x.shape();
  int64_t n = s[s.size() - 2], ch = s.back();
  DType dt = is_half(x.dtype()) ? dtypes::float32 : x.dtype();
  Tensor y = x.cast(dt).flatten(x.ndim() - 2).matmul(dft_matrix(n, k, ch, inverse, dt, x.device()));
  s[s.size() - 2] = k, s.back() = 2;
  return y.reshape(s).cast(x.dtype());
}

static Vals dft_op(OpCtx& c) {
  Tensor x = c.x(0);
  int64_t r = x.ndim();
  if (r < 2 || (x.shape().back() != 1 && x.shape().back() != 2)) c.invalid("input must end in a dim of 1 (real) or 2 (complex)");
  if (!dtypes::is_float(x.dtype())) c.unsupported("DFT of a non-float input");
  // opset 20 moved axis to an input (default -2); before it, an attribute (default 1)
  int64_t axis = c.opset >= 20 ? (c.has(2) ? host_scalar(c, 2, "axis") : -2) : c.i("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r - 1) c.invalid("axis " + std::to_string(c.i("axis", 1)) + " is out of range for the signal dims");
  bool inverse = c.i("inverse", 0) != 0, onesided = c.i("onesided", 0) != 0;
  if (inverse && onesided) c.unsupported("an inverse onesided DFT");
  int64_t len = x.shape()[size_t(axis)], n = c.has(1) ? host_scalar(c, 1, "dft_length") : len;
  if (n < 1) c.invalid("dft_length must be >= 1, got " + std::to_string(n));
  // the signal axis just before the complex dim; zero-padded or cut to dft_length
  std::vector<int64_t> order;
  for (int64_t d = 0; d < r - 1; d++)
    if (d != axis) order.push_back(d);
  order.push_back(axis), order.push_back(r - 1);
  Tensor t = x.permute(order);
  if (n > len) t = t.pad_to(r - 2, 0, n);
  if (n < len) {
    std::vector<std::pair<int64_t, int64_t>> b;
    for (int64_t d : t.shape()) b.push_back({0, d});
    b[size_t(r - 2)].second = n;
    t = t.shrink(b);
  }
  Tensor y = dft_last(t, onesided ? n / 2 + 1 : n, inverse);
  std::vector<int64_t> back(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; d++) back[size_t(order[size_t(d)])] = d;
  return {y.permute(back)};
}

// signal (batch, length, ch) -> (batch, frames, bins, 2): the DFT of each (windowed) frame
static Vals stft_op(OpCtx& c) {
  Tensor x = c.x(0);
  if (x.ndim() != 3 || (x.shape()[2] != 1 && x.shape()[2] != 2)) c.invalid("signal must be (batch, length, 1 or 2)");
  if (!dtypes::is_float(x.dtype())) c.unsupported("STFT of a non-float signal");
  int64_t step = host_scalar(c, 1, "frame_step");
  std::optional<Tensor> win = c.opt(2);
  if (win && win->ndim() != 1) c.invalid("window must be 1-d");
  int64_t len = c.has(3) ? host_scalar(c, 3, "frame_length") : win ? win->shape()[0] : -1;
  if (len < 1) c.invalid("a frame_length >= 1 or a window is needed");
  if (win && win->shape()[0] != len) c.invalid("window length differs from frame_length");
  if (step < 1 || len > x.shape()[1]) c.invalid("frame_step must be >= 1 and frame_length at most the signal length");
  Tensor frames = x.unfold(1, len, step).permute({0, 1, 3, 2});  // (batch, frames, len, ch)
  if (win) frames = frames.mul(win->cast(x.dtype()).reshape({len, 1}));
  return {dft_last(frames, c.i("onesided", 1) ? len / 2 + 1 : len, false)};
}

// (dft_length / 2 + 1, num_mel_bins) triangles between mel-spaced bin edges. The edges are scalar math on the host;
// the matrix is built on the device from them.
static Vals melweightmatrix_op(OpCtx& c) {
  int64_t mels = host_scalar(c, 0, "num_mel_bins"), dft = host_scalar(c, 1, "dft_length"), rate = host_scalar(c, 2, "sample_rate");
  auto lo_hz = c.host_floats(3), hi_hz = c.host_floats(4);
  if (mels < 1 || dft < 1 || rate < 1 || lo_hz.size() != 1 || hi_hz.size() != 1) c.invalid("needs positive sizes and scalar edges");
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double low = mel(lo_hz[0]), step = (mel(hi_hz[0]) - low) / double(mels + 2);
  std::vector<float> edge(size_t(mels + 2));
  for (int64_t i = 0; i < mels + 2; i++)
    edge[size_t(i)] = float(std::floor(double(dft + 1) * 700 * (std::pow(10, (double(i) * step + low) / 2595) - 1) / double(rate)));
  Tensor e = Tensor::from_data(edge.data(), edge.size() * sizeof(float), dtypes::float32, {mels + 2}, c.device).reshape({1, mels + 2});
  Tensor lo = e.shrink({{0, 1}, {0, mels}}), ce = e.shrink({{0, 1}, {1, mels + 1}}), hi = e.shrink({{0, 1}, {2, mels + 2}});
  Tensor j = Tensor::arange(0, double(dft / 2 + 1), 1, dtypes::float32, c.device).reshape({dft / 2 + 1, 1});
  Tensor one = cst(j, 1), zero = cst(j, 0);
  // rising edge on [lo, ce] (just 1 at ce when they meet), falling edge on [ce, hi)
  Tensor rise = j.ge(lo).where(j.le(ce).where(j.sub(lo).div(ce.sub(lo).maximum(one)), zero), zero);
  rise = ce.eq(lo).where(j.eq(ce).where(one, zero), rise);
  Tensor fall = hi.sub(j).div(hi.sub(ce).maximum(one));
  Tensor y = j.ge(ce).where(j.lt(hi).where(fall, rise), rise);
  return {y.cast(to_dtype(int32_t(c.i("output_datatype", FLOAT)), "output_datatype"))};
}

// ---- ai.onnx.preview.training optimizers: inputs R, T, then per tensor group X..., G..., (V... / H...) ----
static int64_t groups(const OpCtx& c, int64_t per) {
  int64_t n = (int64_t(c.n_in()) - 2) / per;
  if (n < 1 || int64_t(c.n_in()) != 2 + n * per) c.invalid("needs R, T and " + std::to_string(per) + " inputs per optimized tensor");
  return n;
}
// R and T as 0-d tensors of x's dtype
static std::pair<Tensor, Tensor> rate_step(const OpCtx& c, const Tensor& x) {
  if (!dtypes::is_float(x.dtype())) c.unsupported("optimizing a non-float tensor");
  return {c.x(0).cast(x.dtype()).reshape({}), c.x(1).cast(x.dtype()).reshape({})};
}

static Vals adagrad_op(OpCtx& c) {
  int64_t n = groups(c, 3);
  double norm = c.f("norm_coefficient", 0), eps = c.f("epsilon", 1e-6), decay = c.f("decay_factor", 0);
  Vals xs, hs;
  for (int64_t i = 0; i < n; i++) {
    const Tensor &x = c.x(size_t(2 + i)), &g = c.x(size_t(2 + n + i)), &h = c.x(size_t(2 + 2 * n + i));
    auto [r, t] = rate_step(c, x);
    Tensor lr = r.div(cst(t, 1).add(t.mul(cst(t, decay)))), gr = x.mul(cst(x, norm)).add(g), h2 = h.add(gr.mul(gr));
    xs.push_back(x.sub(lr.mul(gr).div(h2.sqrt().add(cst(h2, eps))))), hs.push_back(h2);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

static Vals adam_op(OpCtx& c) {
  int64_t n = groups(c, 4);
  double norm = c.f("norm_coefficient", 0), post = c.f("norm_coefficient_post", 0), eps = c.f("epsilon", 1e-6);
  double alpha = c.f("alpha", 0.9), beta = c.f("beta", 0.999);
  Vals xs, vs, hs;
  for (int64_t i = 0; i < n; i++) {
    const Tensor &x = c.x(size_t(2 + i)), &g = c.x(size_t(2 + n + i)), &v = c.x(size_t(2 + 2 * n + i)), &h = c.x(size_t(2 + 3 * n + i));
    auto [r, t] = rate_step(c, x);
    Tensor gr = x.mul(cst(x, norm)).add(g);
    Tensor v2 = v.mul(cst(v, alpha)).add(gr.mul(cst(gr, 1 - alpha))), h2 = h.mul(cst(h, beta)).add(gr.mul(gr).mul(cst(gr, 1 - beta)));
    // bias correction from the first step on: r sqrt(1 - beta^t) / (1 - alpha^t)
    Tensor lr = t.gt(cst(t, 0)).where(r.mul(cst(t, 1).sub(cst(t, beta).pow(t)).sqrt()).div(cst(t, 1).sub(cst(t, alpha).pow(t))), r);
    Tensor x2 = x.sub(lr.mul(v2.div(h2.sqrt().add(cst(h2, eps)))));
    xs.push_back(x2.mul(cst(x2, 1 - post))), vs.push_back(v2), hs.push_back(h2);
  }
  xs.insert(xs.end(), vs.begin(), vs.end()), xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

static Vals momentum_op(OpCtx& c) {
  int64_t n = groups(c, 3);
  for (const char* a : {"alpha", "beta", "norm_coefficient", "mode"})
    if (!c.has_attr(a)) c.invalid(std::string("attribute ") + a + " is required");
  double norm = c.f("norm_coefficient", 0), alpha = c.f("alpha", 0), beta = c.f("beta", 0);
  std::string mode = c.s("mode", "");
  if (mode != "standard" && mode != "nesterov") c.invalid("mode must be 'standard' or 'nesterov', got '" + mode + "'");
  Vals xs, vs;
  for (int64_t i = 0; i < n; i++) {
    const Tensor &x = c.x(size_t(2 + i)), &g = c.x(size_t(2 + n + i)), &v = c.x(size_t(2 + 2 * n + i));
    auto [r, t] = rate_step(c, x);
    Tensor gr = x.mul(cst(x, norm)).add(g);
    // the gradient's coefficient is 1 on the first step
    Tensor v2 = v.mul(cst(v, alpha)).add(gr.mul(t.gt(cst(t, 0)).where(cst(t, beta), cst(t, 1))));
    xs.push_back(x.sub(r.mul(mode == "standard" ? v2 : gr.add(v2.mul(cst(v2, alpha)))))), vs.push_back(v2);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

void add_signal_ops(OpTable& t) {
  t["HannWindow"] = window_op<0.5, 0.5, 0.0>, t["HammingWindow"] = window_op<25.0 / 46, 21.0 / 46, 0.0>;
  t["BlackmanWindow"] = window_op<0.42, 0.5, 0.08>;
  t["DFT"] = dft_op, t["STFT"] = stft_op, t["MelWeightMatrix"] = melweightmatrix_op;
  t["Adagrad"] = adagrad_op, t["Adam"] = adam_op, t["Momentum"] = momentum_op;
}

}  // namespace tg::onnx
