// nn functional ops, as tinygrad's Tensor methods: linear layers, convolution and pooling through _pool (sliding
// windows made of movement ops only, so a convolution is one fused multiply-reduce), normalization, attention, losses.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <unordered_map>

#include "engine/realize.h"
#include "tensor/multi.h"
#include "tensor/tensor.h"

namespace tg {

namespace {
int64_t ceildiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }  // a >= 0, b > 0, no overflow
// a*b+c, or TG_ERROR_SHAPE naming `what` when it doesn't fit int64 (kernel and stride sizes come from callers)
int64_t checked(int64_t a, int64_t b, int64_t c, const char* what) {
  int64_t r;
  TG_CHECK(!__builtin_mul_overflow(a, b, &r) && !__builtin_add_overflow(r, c, &r), TG_ERROR_SHAPE, std::string(what) + ": sizes overflow int64");
  return r;
}
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
// a per-spatial-dim argument: one value for every dim, or one each
Shape per_dim(Shape v, size_t n, const char* fn, const char* what) {
  if (v.size() == 1) v.assign(n, v[0]);
  TG_CHECK(v.size() == n, TG_ERROR_SHAPE, strformat("%s: %s has %zu values for %zu spatial dims", fn, what, v.size(), n));
  return v;
}
Pairs whole(const Tensor& t) {
  Pairs p;
  for (auto d : t.shape()) p.emplace_back(0, d);
  return p;
}
}  // namespace

Tensor Tensor::linear(const Tensor& w, const std::optional<Tensor>& b) const {
  Tensor x = w.ndim() == 1 ? mul(w) : matmul(w);
  return b ? x.add(*b) : x;
}

// Sliding windows over the last k.size() dims: (..., i...) -> (..., o..., k...), with o = ceil((i - d*(k-1)) / s).
// Each window is a view: repeat the input, then reshape and shrink so that consecutive windows start s apart.
Tensor Tensor::pool(const Shape& k, const Shape& s, const Shape& d) const {
  size_t nk = k.size(), lead = size_t(ndim()) - nk;
  TG_CHECK(size_t(ndim()) >= nk, TG_ERROR_SHAPE, "pool: can't pool shape " + shape_str(shape()) + " with a kernel of " + std::to_string(nk) + " dims");
  Shape i(shape().end() - long(nk), shape().end()), o(nk);
  for (size_t j = 0; j < nk; j++) {
    TG_CHECK(k[j] > 0 && s[j] > 0 && d[j] > 0, TG_ERROR_INVALID_ARGUMENT, "pool: kernel, stride and dilation must be positive");
    TG_CHECK(checked(d[j], k[j] - 1, 1, "pool") <= i[j], TG_ERROR_SHAPE,
             strformat("pool: kernel %lld (dilation %lld) is larger than the input's size %lld", (long long)k[j], (long long)d[j], (long long)i[j]));
    o[j] = ceildiv(i[j] - d[j] * (k[j] - 1), s[j]);
  }
  Shape noop(shape().begin(), shape().begin() + long(lead));
  auto with = [&](const Shape& tail) {
    Shape r = noop;
    r.insert(r.end(), tail.begin(), tail.end());
    return r;
  };
  auto bounds = [&](const Pairs& tail) {
    Pairs r;
    for (auto x : noop) r.emplace_back(0, x);
    r.insert(r.end(), tail.begin(), tail.end());
    return r;
  };
  std::vector<int64_t> perm(lead);
  std::iota(perm.begin(), perm.end(), 0);
  for (size_t j = 0; j < nk; j++) perm.push_back(int64_t(lead + 2 * j));
  for (size_t j = 0; j < nk; j++) perm.push_back(int64_t(lead + 2 * j + 1));
  bool apart = true;
  for (size_t j = 0; j < nk; j++) apart &= k[j] <= s[j] && d[j] == 1;
  if (apart) {
    // windows that don't overlap (a 2x2 max-pool of stride 2): each dim cut to o*s, split into (o, s) and cut to
    // (o, k). No repeat, so the gradient is a pad, not a masked sum over repeats
    Pairs b1, b2;
    Shape r;
    for (size_t j = 0; j < nk; j++) {
      b1.emplace_back(0, o[j] * s[j]), b2.emplace_back(0, o[j]), b2.emplace_back(0, k[j]);
      r.push_back(o[j]), r.push_back(s[j]);
    }
    Tensor x = *this;
    PadPairs grow;
    for (size_t j = 0; j < lead; j++) grow.emplace_back(0, 0);
    for (size_t j = 0; j < nk; j++) grow.emplace_back(0, std::max<int64_t>(0, o[j] * s[j] - i[j]));
    x = x.pad(grow, PadMode::Constant);  // rows past the last window's end only: never read
    x = x.shrink(bounds(b1)).reshape(with(r)).shrink(bounds(b2));
    return x.permute(perm);
  }
  // f repeats the input enough (i*f + d >= o*s) that the stride shrink below always fits, even for a stride past the input
  Shape f(nk), rep, kx, xs, shr;
  for (size_t j = 0; j < nk; j++) f[j] = std::max<int64_t>(1, ceildiv(std::max<int64_t>(checked(o[j], s[j], -d[j], "pool"), 0), i[j]));
  for (size_t j = 0; j < nk; j++) rep.push_back(ceildiv(checked(k[j], checked(i[j], f[j], d[j], "pool"), 0, "pool"), i[j]));
  Shape reps(lead, 1);
  reps.insert(reps.end(), rep.begin(), rep.end());
  Tensor x = repeat(reps);
  Pairs b1, b2, b3;
  Shape r1, r2, r3;
  for (size_t j = 0; j < nk; j++) {
    int64_t w = i[j] * f[j] + d[j];
    b1.emplace_back(0, k[j] * w), r1.push_back(k[j]), r1.push_back(w);
    b2.emplace_back(0, k[j]), b2.emplace_back(0, o[j] * s[j]), r2.push_back(k[j]), r2.push_back(o[j]), r2.push_back(s[j]);
    b3.emplace_back(0, k[j]), b3.emplace_back(0, o[j]), b3.emplace_back(0, 1), r3.push_back(k[j]), r3.push_back(o[j]);
  }
  x = x.shrink(bounds(b1)).reshape(with(r1));  // dilation: rows of k windows, each w apart
  x = x.shrink(bounds(b2)).reshape(with(r2));  // stride
  x = x.shrink(bounds(b3)).reshape(with(r3));  // (k, o) per dim
  std::vector<int64_t> kperm(lead);
  std::iota(kperm.begin(), kperm.end(), 0);
  for (size_t j = 0; j < nk; j++) kperm.push_back(int64_t(lead + 2 * j + 1));
  for (size_t j = 0; j < nk; j++) kperm.push_back(int64_t(lead + 2 * j));
  return x.permute(kperm);
}

namespace {
// Winograd F(4, 3) (Lavin and Gray, arXiv:1509.09308): a 3-tap correlation over 4 outputs from 6 inputs in 6 products.
// Per spatial dim: the input tile's transform Bt (6x6), the kernel's G (6x3) and the output's At (4x6).
constexpr double kWinoBt[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                  {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
constexpr double kWinoG[6][3] = {{1. / 4, 0, 0},           {-1. / 6, -1. / 6, -1. / 6}, {-1. / 6, 1. / 6, -1. / 6},
                                 {1. / 24, 1. / 12, 1. / 6}, {1. / 24, -1. / 12, 1. / 6}, {0, 0, 1}};
constexpr double kWinoAt[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

// kron(m, ..., m) for n dims as a (rows^n, cols^n) tensor: the transform of a whole n-d tile is one small matmul
template <size_t R, size_t C>
Tensor wino_matrix(const double (&m)[R][C], size_t n, DType dt, const std::string& device) {
  int64_t rows = 1, cols = 1;
  for (size_t j = 0; j < n; j++) rows *= int64_t(R), cols *= int64_t(C);
  std::vector<float> k(size_t(rows * cols));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      double v = 1;
      for (int64_t j = 0, rr = r, cc = c; j < int64_t(n); j++, rr /= int64_t(R), cc /= int64_t(C)) v *= m[rr % int64_t(R)][cc % int64_t(C)];
      k[size_t(r * cols + c)] = float(v);
    }
  return Tensor::from_data(k.data(), k.size() * sizeof(float), dtypes::float32, {rows, cols}, device).cast(dt);
}
}  // namespace

bool Tensor::use_winograd(const Tensor& w, int64_t groups, const Shape& stride, const Shape& dilation, const PadPairs& padding) const {
  size_t n = size_t(w.ndim()) - 2;
  if (WINO == 0 || n < 1 || n > 3 || !dtypes::is_float(dtype()) || !dtypes::is_float(w.dtype()) || !uop()->sym().empty() || !w.uop()->sym().empty())
    return false;
  for (size_t j = 0; j < n; j++)
    if (w.shape()[2 + j] != 3 || stride[j] != 1 || dilation[j] != 1 || padding[j].first < 0 || padding[j].second < 0) return false;
  if (WINO == 1) return true;
  if (BEAM >= 1) return winograd_faster(w, groups, stride, dilation, padding);
  // The direct conv runs near the CPU's peak for few channels or small images, where the transforms' memory traffic and
  // the tiles' padding cost more than the products saved. Measured on 2-d float32 convs (AVX-512, 1 and 2 threads): 128
  // channels at 28x28 2.6-3.3x faster, 96 at 28x28 1.9-2.7x, 64 at 56x56 1.15-1.3x, 64 at 28x28 1.05-1.15x; 32
  // channels, 64 at 14x14 and 256 at 14x14 as fast or slower, 512 at 7x7 6x slower (two tiles a row: a thin matmul).
  if (n != 2 || dtype() != dtypes::float32 || w.dtype() != dtypes::float32 || w.shape()[1] < 64 || w.shape()[0] / groups < 64) return false;
  for (size_t j = 0; j < n; j++)
    if (shape()[2 + j] + padding[j].first + padding[j].second - 2 < 24) return false;
  return true;
}

// Under BEAM: both forms timed once per process for each conv's shapes, dtype, padding and device (their kernels
// searched by BEAM as they are lowered, then the median of 3 runs after a warm-up), and the faster kept. The probes are realized
// inside a CaptureScope of their own, so a TinyJit capturing around this conv does not record them; their inputs are
// an arange, so the user's random stream is untouched.
bool Tensor::winograd_faster(const Tensor& w, int64_t groups, const Shape& stride, const Shape& dilation, const PadPairs& padding) const {
  if (is_multi_device(device())) return false;  // timed on one device only
  std::string key = device() + " " + dtype().name() + " " + shape_str(shape()) + " " + shape_str(w.shape());
  for (auto [b, a] : padding) key += strformat(" %lld,%lld", (long long)b, (long long)a);
  static std::mutex mu;
  static auto* chosen = new std::unordered_map<std::string, bool>();  // never destroyed: read until the process ends
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = chosen->find(key); it != chosen->end()) return it->second;
  }
  double best[2];
  {
    CaptureScope trial;
    auto probe = [&](const Tensor& like) {
      Tensor r = Tensor::arange(0, double(tg::prod(like.shape())), 1, dtypes::float32, device());
      return r.mul(r.full_like(1e-6)).cast(like.dtype()).reshape(like.shape()).realize();
    };
    Tensor xs = probe(*this), ws = probe(w);
    // the kernels alone, lowered once and run again as a replay runs them (a realize's scheduling and its fresh
    // intermediates' first touch would weigh on Winograd's seven kernels more than on the direct one)
    auto kernel_time = [&](const Tensor& y) {
      Lowered l = lower_realize({y.uop()}, device());
      Device& dev = get_device(device());
      std::vector<double> ts;
      for (int i = 0; i < 4; i++) {
        auto t0 = std::chrono::steady_clock::now();
        for (auto& e : l.items) e.run();
        dev.synchronize();
        if (i > 0) ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ts.begin(), ts.end());
      return ts[1];
    };
    {
      Context direct({{"WINO", 0}});
      best[0] = kernel_time(xs.conv(ws, std::nullopt, groups, stride, dilation, padding));
    }
    best[1] = kernel_time(xs.conv_winograd(ws, groups, padding));
  }
  if (DEBUG >= 2) std::fprintf(stderr, "conv %s: direct %.3f ms, Winograd %.3f ms\n", key.c_str(), best[0] * 1e3, best[1] * 1e3);
  std::lock_guard<std::mutex> lock(mu);
  return chosen->emplace(key, best[1] < 0.95 * best[0]).first->second;  // a tie keeps the direct sum (its rounding is tighter)
}

// A 3x3 (3, 3x3x3) stride-1 convolution by Winograd F(4, 3): each 6^n input tile and each kernel are transformed, the
// channels summed by one batched matmul per tile position (6^n of them, 2.25x fewer products than the direct sum in 1-d,
// 4x in 2-d), and 4^n outputs taken back out of each tile. Every transform is a small matmul by a constant matrix.
Tensor Tensor::conv_winograd(const Tensor& w, int64_t groups, const PadPairs& padding) const {
  size_t n = size_t(w.ndim()) - 2;
  int64_t bs = shape()[0], cin_ = shape()[1], cout = w.shape()[0], cin = w.shape()[1], rcout = cout / groups;
  PadPairs pads{{0, 0}, {0, 0}};
  Shape out, tiles;
  int64_t ntiles = 1, t6 = 1, t4 = 1, t3 = 1;
  for (size_t j = 0; j < n; j++) {  // pad after so the output is whole tiles of 4
    int64_t o = shape()[2 + j] + padding[j].first + padding[j].second - 2, t = ceildiv(o, 4);
    out.push_back(o), tiles.push_back(t), ntiles *= t, t6 *= 6, t4 *= 4, t3 *= 3;
    pads.emplace_back(padding[j].first, padding[j].second + 4 * t - o);
  }
  // the input is realized (conv does it): the tiles overlap, each element read up to 2^n times
  Tensor d = pad(pads, PadMode::Constant).pool(Shape(n, 6), Shape(n, 4), Shape(n, 1));  // (bs, cin_, t..., 6...)
  std::vector<int64_t> perm;
  for (size_t j = 0; j < n; j++) perm.push_back(int64_t(2 + n + j));
  perm.push_back(1), perm.push_back(0);
  for (size_t j = 0; j < n; j++) perm.push_back(int64_t(2 + j));
  int64_t cols = cin_ * bs * ntiles;
  // (6^n, cin_ * bs * tiles): Bt d B of every tile, its channels and batch along the columns. The tiles are copied in
  // their own shape, then merged: copied as (6^n, cols) each load's index was a div/mod of the merged column, a scalar
  // gather (64 channels at 56x56: 332 -> 85 us)
  Tensor v = wino_matrix(kWinoBt, n, dtype(), device()).matmul(d.permute(perm).contiguous().reshape({t6, cols})).contiguous();
  // (6^n, cout * cin): G g Gt of every kernel
  std::vector<int64_t> wperm;
  for (size_t j = 0; j < n; j++) wperm.push_back(int64_t(2 + j));
  wperm.push_back(0), wperm.push_back(1);
  // the kernels transposed first, by a copy: the transform's matmul then reads whole vectors of them where it gathered
  // elements 3^n apart (128 channels: 0.53 -> 0.16 ms per call, which a model's replays pay every time)
  Tensor u = wino_matrix(kWinoG, n, w.dtype(), device()).matmul(w.permute(wperm).reshape({t3, cout * cin}).contiguous()).contiguous();
  // per tile position, (groups, rcout, cin) @ (groups, cin, bs * tiles)
  Tensor m = u.reshape({t6, groups, rcout, cin}).matmul(v.reshape({t6, groups, cin, bs * ntiles})).contiguous();
  // (4^n, cout * bs * tiles) -> (4..., cout, bs, t...) -> (bs, cout, t0, 4, t1, 4, ...) -> (bs, cout, out...)
  Tensor y = wino_matrix(kWinoAt, n, m.dtype(), device()).matmul(m.reshape({t6, cout * bs * ntiles})).contiguous();
  Shape ys(n, 4);
  ys.push_back(cout), ys.push_back(bs), ys.insert(ys.end(), tiles.begin(), tiles.end());
  std::vector<int64_t> yperm{int64_t(n) + 1, int64_t(n)};
  Shape whole{bs, cout};
  Pairs crop{{0, bs}, {0, cout}};
  for (size_t j = 0; j < n; j++) {
    yperm.push_back(int64_t(n + 2 + j)), yperm.push_back(int64_t(j));
    whole.push_back(4 * tiles[j]), crop.emplace_back(0, out[j]);
  }
  // realized: a consumer reading the tiles through this permute (the next conv's windows) gathers every element
  return y.reshape(ys).permute(yperm).reshape(whole).shrink(crop).contiguous();
}

// N-d convolution as tinygrad's: the padded input's sliding windows (a view) times the weight, summed over (cin, k...)
Tensor Tensor::conv(const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, Shape stride, Shape dilation, PadPairs padding) const {
  TG_CHECK(ndim() >= 3 && w.ndim() == ndim(), TG_ERROR_SHAPE, "conv: input " + shape_str(shape()) + " and weight " + shape_str(w.shape()) + " need the same rank >= 3");
  size_t nsp = size_t(w.ndim()) - 2;
  if (stride.empty()) stride.push_back(1);
  if (dilation.empty()) dilation.push_back(1);
  stride = per_dim(stride, nsp, "conv", "stride"), dilation = per_dim(dilation, nsp, "conv", "dilation");
  if (padding.empty()) padding.assign(nsp, {0, 0});
  TG_CHECK(padding.size() == nsp, TG_ERROR_SHAPE, strformat("conv: %zu padding pairs for %zu spatial dims", padding.size(), nsp));
  int64_t bs = shape()[0], cin_ = shape()[1], cout = w.shape()[0], cin = w.shape()[1];
  int64_t gc;
  TG_CHECK(groups > 0 && cout % groups == 0 && !__builtin_mul_overflow(groups, cin, &gc) && gc == cin_, TG_ERROR_SHAPE,
           strformat("conv: input channels %lld don't match weight %s with %lld groups", (long long)cin_, shape_str(w.shape()).c_str(), (long long)groups));
  // the input realized first (a no-op for a buffer, and for a reduce only its kernel's epilogue): every element is read
  // once per tap and per tile of output channels, so an unrealized producer (the last block's residual add and ReLU)
  // would be recomputed at each read, its loads gathered twice over (ResNet-18's kernels 27.0 -> 19.4 ms on 2 threads;
  // a stride-2 conv 3.0 -> 1.15 ms)
  if (Tensor xin = contiguous(); xin.uop() != uop()) return xin.conv(w, bias, groups, stride, dilation, padding);
  if (use_winograd(w, groups, stride, dilation, padding)) return conv_finish(conv_winograd(w, groups, padding), w, bias, groups, stride, dilation, padding);
  bool f32_64 = dtype() == dtypes::float32 || dtype() == dtypes::float64;
  if (nsp == 2 && cin == 1 && cout == groups && stride == Shape{2, 2} && dilation == Shape{1, 1} && f32_64 &&
      std::all_of(padding.begin(), padding.end(), [](auto p) { return p.first >= 0 && p.second >= 0; }))
    return conv_finish(conv_depthwise_s2(w, padding), w, bias, groups, stride, dilation, padding);
  Shape hw(w.shape().begin() + 2, w.shape().end());
  PadPairs pads{{0, 0}, {0, 0}};
  pads.insert(pads.end(), padding.begin(), padding.end());
  Tensor x = pad(pads, PadMode::Constant).pool(hw, stride, dilation);  // (bs, cin_, o..., k...); negative pads crop
  Shape oyx(x.shape().begin() + 2, x.shape().begin() + 2 + long(nsp));
  int64_t rcout = cout / groups;
  Shape s1{bs, groups, cin, 1}, s2{bs, groups, cin, rcout};
  s1.insert(s1.end(), oyx.begin(), oyx.end()), s1.insert(s1.end(), hw.begin(), hw.end());
  s2.insert(s2.end(), oyx.begin(), oyx.end()), s2.insert(s2.end(), hw.begin(), hw.end());
  std::vector<int64_t> perm{0, 1, 3};
  for (size_t j = 0; j < nsp; j++) perm.push_back(int64_t(4 + j));
  perm.push_back(2);
  for (size_t j = 0; j < nsp; j++) perm.push_back(int64_t(4 + nsp + j));
  x = x.reshape(s1).expand(s2).permute(perm);  // (bs, groups, rcout, o..., cin, k...)
  Shape ws{1, groups, rcout};
  ws.insert(ws.end(), nsp, 1), ws.push_back(cin), ws.insert(ws.end(), hw.begin(), hw.end());
  std::vector<int64_t> axes;
  for (size_t j = 0; j <= nsp; j++) axes.push_back(-1 - int64_t(j));
  Shape out{bs, cout};
  out.insert(out.end(), oyx.begin(), oyx.end());
  return conv_finish(x.mul(w.reshape(ws)).sum(axes, true).reshape(out), w, bias, groups, stride, dilation, padding);
}
// A depthwise 2-d conv with stride 2 (MobileNet's downsampling). Through the window view its vector loads step by 2
// elements: gathers. Here the padded input is split once into its four phases (even or odd rows x even or odd
// columns), so that each tap reads a contiguous window of one phase, and the conv is one elementwise sum of kh*kw
// products whose loads are vectors (MobileNetV2's 96 channels at 112x112: 0.92 ms on one thread through the window).
Tensor Tensor::conv_depthwise_s2(const Tensor& w, const PadPairs& padding) const {
  int64_t n = shape()[0], c = shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  int64_t hp = shape()[2] + padding[0].first + padding[0].second, wp = shape()[3] + padding[1].first + padding[1].second;
  TG_CHECK(hp >= kh && wp >= kw, TG_ERROR_SHAPE,
           "conv: the padded input " + shape_str({hp, wp}) + " is smaller than the kernel " + shape_str({kh, kw}));
  int64_t oh = (hp - kh) / 2 + 1, ow = (wp - kw) / 2 + 1;
  Tensor xp = pad({{0, 0}, {0, 0}, {padding[0].first, padding[0].second + hp % 2}, {padding[1].first, padding[1].second + wp % 2}});
  int64_t h2 = (hp + 1) / 2, w2 = (wp + 1) / 2;
  Tensor phases = xp.reshape({n, c, h2, 2, w2, 2}).permute({0, 1, 3, 5, 2, 4}).contiguous();  // (n, c, row phase, col phase, h2, w2)
  std::optional<Tensor> acc;
  for (int64_t ky = 0; ky < kh; ky++)
    for (int64_t kx = 0; kx < kw; kx++) {
      Tensor v = phases.shrink({{0, n}, {0, c}, {ky % 2, ky % 2 + 1}, {kx % 2, kx % 2 + 1}, {ky / 2, ky / 2 + oh}, {kx / 2, kx / 2 + ow}});
      v = v.reshape({n, c, oh, ow});
      Tensor term = v.mul(w.shrink({{0, c}, {0, 1}, {ky, ky + 1}, {kx, kx + 1}}).reshape({1, c, 1, 1}).cast(dtype()));
      acc = acc ? acc->add(term) : term;
    }
  return *acc;
}
Tensor Tensor::conv_finish(Tensor ret, const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, const Shape& stride, const Shape& dilation,
                           const PadPairs& padding) const {
  size_t nsp = size_t(w.ndim()) - 2;
  // autograd takes the conv's own backward (conv_backward) instead of differentiating the window view, whose gradient
  // is a masked sum over every repeat of the input: the arg is {groups, stride..., dilation..., (before, after)...}
  std::vector<int64_t> arg{groups};
  arg.insert(arg.end(), stride.begin(), stride.end()), arg.insert(arg.end(), dilation.begin(), dilation.end());
  for (auto [b, a] : padding) arg.push_back(b), arg.push_back(a);
  ret = Tensor(UOp::make(Ops::CUSTOM_BACKWARD, ret.dtype(), {ret.uop(), uop(), w.uop()}, arg), device());
  if (!bias) return ret;
  Shape bsh{1, -1};
  bsh.insert(bsh.end(), nsp, 1);
  return ret.add(bias->reshape(bsh));
}
std::pair<Tensor, Tensor> Tensor::conv_backward(const Tensor& g, const Tensor& x, const Tensor& w, const std::vector<int64_t>& arg) {
  size_t nsp = size_t(w.ndim()) - 2;
  int64_t groups = arg[0], bs = x.shape()[0], cout = w.shape()[0], cin = w.shape()[1], rcout = cout / groups;
  Shape stride(arg.begin() + 1, arg.begin() + 1 + long(nsp)), dilation(arg.begin() + 1 + long(nsp), arg.begin() + 1 + 2 * long(nsp));
  Shape hw(w.shape().begin() + 2, w.shape().end()), oyx(g.shape().begin() + 2, g.shape().end()), outpad;
  PadPairs padding, pads{{0, 0}, {0, 0}};
  for (size_t j = 0; j < nsp; j++) {
    int64_t b = arg[1 + 2 * nsp + 2 * j], a = arg[2 + 2 * nsp + 2 * j];
    padding.emplace_back(b, a), pads.emplace_back(b, a);
    // the padded input's rows past the last window, which the transposed conv does not reach
    outpad.push_back(x.shape()[2 + j] + b + a - ((oyx[j] - 1) * stride[j] + dilation[j] * (hw[j] - 1) + 1));
  }
  // both gradients read g through windows, cout*k or cin*k times over: an elementwise chain behind it (BatchNorm's and
  // the activation's backward) is computed once into a buffer, not once per read
  Tensor gb = g.contiguous();
  Tensor dx = gb.conv_transpose(w, std::nullopt, groups, stride, dilation, padding, outpad);
  // d w[g, co, ci, k...] = sum over batch and o... of the window view x[n, g*cin + ci, o..., k...] times g[n, g*rcout + co, o...]
  Tensor xv = x.pad(pads, PadMode::Constant).pool(hw, stride, dilation);
  Shape xs{bs, groups, 1, cin}, gs{bs, groups, rcout, 1};
  xs.insert(xs.end(), oyx.begin(), oyx.end()), xs.insert(xs.end(), hw.begin(), hw.end());
  gs.insert(gs.end(), oyx.begin(), oyx.end()), gs.insert(gs.end(), nsp, 1);
  std::vector<int64_t> axes{0};
  for (size_t j = 0; j < nsp; j++) axes.push_back(int64_t(4 + j));
  Shape ws{cout, cin};
  ws.insert(ws.end(), hw.begin(), hw.end());
  Tensor dw = xv.reshape(xs).mul(gb.reshape(gs)).sum(axes).cast(w.dtype()).reshape(ws);
  return {dx.cast(x.dtype()), dw};
}
Tensor Tensor::conv2d(const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, Shape stride, Shape dilation, Shape padding) const {
  size_t nsp = w.ndim() >= 2 ? size_t(w.ndim()) - 2 : 0;
  PadPairs p;
  for (auto v : per_dim(padding, std::max<size_t>(nsp, 1), "conv2d", "padding")) {
    TG_CHECK(v >= 0, TG_ERROR_SHAPE, "conv2d: negative padding");
    p.emplace_back(v, v);
  }
  return conv(w, bias, groups, std::move(stride), std::move(dilation), p);
}

namespace {
// tinygrad's ceil_mode: more padding after each dim so the last partial window counts, but no window may start in it
Tensor::PadPairs ceil_pads(const Shape& in, const Shape& k, const Shape& s, const Shape& d, Tensor::PadPairs p) {
  for (size_t j = 0; j < k.size(); j++) {
    auto [b, a] = p[j];
    int64_t span = d[j] * (k[j] - 1) + 1, padded = in[j] + b + a;
    TG_CHECK(padded >= span, TG_ERROR_SHAPE, "pool: kernel size cannot be greater than the padded input size");
    int64_t o = ceildiv(padded - span, s[j]) + 1;
    p[j].second = a + s[j] * (o - 1) + span - padded - std::max<int64_t>(s[j] * (o - 1) - (b + in[j] - 1), 0);
  }
  return p;
}
}  // namespace

// max or average over kernel windows of the last k.size() dims, as tinygrad's max_pool2d/avg_pool2d (any number of dims)
Tensor Tensor::pool_nd(PoolKind kind, Shape k, Shape stride, Shape dilation, PadPairs padding, bool ceil_mode, bool count_include_pad) const {
  const char* fn = kind == PoolKind::Max ? "max_pool" : "avg_pool";
  size_t n = k.size();
  TG_CHECK(n >= 1 && size_t(ndim()) >= n, TG_ERROR_SHAPE, strformat("%s: kernel of %zu dims for shape %s", fn, n, shape_str(shape()).c_str()));
  stride = stride.empty() ? k : per_dim(stride, n, fn, "stride");
  dilation = dilation.empty() ? Shape(n, 1) : per_dim(dilation, n, fn, "dilation");
  if (padding.empty()) padding.assign(n, {0, 0});
  TG_CHECK(padding.size() == n, TG_ERROR_SHAPE, strformat("%s: %zu padding pairs for %zu pooled dims", fn, padding.size(), n));
  for (size_t j = 0; j < n; j++) TG_CHECK(k[j] > 0 && stride[j] > 0 && dilation[j] > 0, TG_ERROR_INVALID_ARGUMENT, std::string(fn) + ": kernel, stride and dilation must be positive");
  Shape in(shape().end() - long(n), shape().end());
  PadPairs pads = ceil_mode ? ceil_pads(in, k, stride, dilation, padding) : padding;
  std::vector<int64_t> axes;
  for (size_t j = 0; j < n; j++) axes.push_back(-1 - int64_t(j));
  auto lead = [&](const PadPairs& p) {
    PadPairs r(size_t(ndim()) - n, {0, 0});
    r.insert(r.end(), p.begin(), p.end());
    return r;
  };
  if (kind == PoolKind::Max) {
    double lowest = dtypes::is_float(dtype()) ? -INFINITY : dtypes::min(dtype());
    // Overlapping windows read each element several times: the input realized first, as a conv's (for a conv's
    // output, its bias and ReLU go into that kernel's epilogue). Fused into the pool's loads they were recomputed at
    // each read, and made the heuristics tile rows that share nothing: ResNet-18's max pool 1.45 -> 0.77 ms
    bool overlap = false;
    for (size_t j = 0; j < n; j++) {
      int64_t span = 0;  // the window's extent less one; an overflow is a window no input holds (pool() refuses it)
      overlap |= __builtin_mul_overflow(dilation[j], k[j] - 1, &span) || stride[j] <= span;
    }
    if (overlap)
      if (Tensor xin = contiguous(); xin.uop() != uop()) return xin.pool_nd(kind, k, stride, dilation, padding, ceil_mode, count_include_pad);
    // the input's gradient realized once: BatchNorm's backward (and a conv's) reads it in several reductions, each of
    // which would redo the window comparisons
    return contiguous_backward().pad(lead(pads), PadMode::Constant, lowest).pool(k, stride, dilation).max(axes);
  }
  auto windows = [&](const Tensor& t, const PadPairs& p) { return t.pad(lead(p), PadMode::Constant).pool(k, stride, dilation); };
  if (!count_include_pad) return windows(*this, pads).sum(axes).div(windows(full_like(1), pads).sum(axes));
  if (!ceil_mode) return windows(*this, pads).mean(axes);
  // the user's padding counts in the mean, the extra ceil padding doesn't
  PadPairs extra;
  for (size_t j = 0; j < n; j++) extra.emplace_back(pads[j].first - padding[j].first, pads[j].second - padding[j].second);
  Tensor ones = pad(lead(padding), PadMode::Constant).full_like(1);
  return windows(*this, pads).sum(axes).div(windows(ones, extra).sum(axes));
}
Tensor Tensor::max_pool2d(Shape k, Shape stride, Shape dilation, Shape padding) const {
  PadPairs p;
  for (auto x : padding) p.emplace_back(x, x);
  return pool_nd(PoolKind::Max, std::move(k), std::move(stride), std::move(dilation), p, false, true);
}
// count_include_pad as torch's default: padded zeros count in the mean
Tensor Tensor::avg_pool2d(Shape k, Shape stride, Shape padding, bool count_include_pad) const {
  PadPairs p;
  for (auto x : padding) p.emplace_back(x, x);
  return pool_nd(PoolKind::Avg, std::move(k), std::move(stride), {}, p, false, count_include_pad);
}
// the index of each window's max as tinygrad: positions numbered down from the plane's size, so the largest surviving number
// is the first max in row-major order
std::pair<Tensor, Tensor> Tensor::max_pool_indices(Shape k, Shape stride, Shape dilation, PadPairs padding, bool ceil_mode) const {
  size_t n = k.size();
  Tensor vals = pool_nd(PoolKind::Max, k, stride, dilation, padding, ceil_mode, true);  // checks the arguments
  stride = stride.empty() ? k : per_dim(stride, n, "max_pool", "stride");
  dilation = dilation.empty() ? Shape(n, 1) : per_dim(dilation, n, "max_pool", "dilation");
  if (padding.empty()) padding.assign(n, {0, 0});
  Shape sp(shape().end() - long(n), shape().end());
  PadPairs pads = ceil_mode ? ceil_pads(sp, k, stride, dilation, padding) : padding;
  int64_t plane = tg::prod(sp);
  TG_CHECK(plane < (int64_t(1) << 31), TG_ERROR_SHAPE, "max_pool: the pooled plane has too many elements for int32 indices");
  std::vector<int64_t> axes;
  for (size_t j = 0; j < n; j++) axes.push_back(-1 - int64_t(j));
  PadPairs lead(size_t(ndim()) - n, {0, 0});
  lead.insert(lead.end(), pads.begin(), pads.end());
  double lowest = dtypes::is_float(dtype()) ? -INFINITY : dtypes::min(dtype());
  Tensor win = pad(lead, PadMode::Constant, lowest).pool(k, stride, dilation);
  Tensor is_max = win.eq(win.max(axes, true));
  Tensor idx = Tensor::arange(double(plane), 0, -1, dtypes::int32, device()).reshape(sp);
  Tensor idxw = idx.pad(pads, PadMode::Constant, double(INT32_MIN)).pool(k, stride, dilation);
  Shape ones(size_t(ndim()) - n, 1);
  ones.insert(ones.end(), idxw.shape().begin(), idxw.shape().end());
  Tensor iw = idxw.reshape(ones).expand(win.shape());
  Tensor picked = is_max.where(iw, iw.full_like(0)).max(axes);
  return {vals, picked.full_like(double(plane)).sub(picked)};
}
Tensor Tensor::max_unpool(const Tensor& indices, Shape k, Shape stride, Shape dilation, PadPairs padding, Shape output_size) const {
  TG_CHECK(ndim() >= 3, TG_ERROR_SHAPE, "max_unpool: needs (N, C, spatial...), got shape " + shape_str(shape()));
  TG_CHECK(indices.shape() == shape(), TG_ERROR_SHAPE, "max_unpool: indices " + shape_str(indices.shape()) + " and input " + shape_str(shape()) + " differ");
  TG_CHECK(dtypes::is_int(indices.dtype()), TG_ERROR_DTYPE, "max_unpool: indices must be an int tensor, got " + indices.dtype().name());
  size_t n = size_t(ndim()) - 2;
  Shape sp(shape().begin() + 2, shape().end());
  if (output_size.empty()) {
    k = per_dim(k, n, "max_unpool", "kernel_size");
    stride = stride.empty() ? k : per_dim(stride, n, "max_unpool", "stride");
    dilation = dilation.empty() ? Shape(n, 1) : per_dim(dilation, n, "max_unpool", "dilation");
    if (padding.empty()) padding.assign(n, {0, 0});
    TG_CHECK(padding.size() == n, TG_ERROR_SHAPE, strformat("max_unpool: %zu padding pairs for %zu spatial dims", padding.size(), n));
    for (size_t j = 0; j < n; j++) output_size.push_back((sp[j] - 1) * stride[j] - (padding[j].first + padding[j].second) + dilation[j] * (k[j] - 1) + 1);
  } else {
    TG_CHECK(output_size.size() >= n, TG_ERROR_SHAPE, strformat("max_unpool: output_size has %zu dims, needs at least %zu", output_size.size(), n));
    output_size.erase(output_size.begin(), output_size.end() - long(n));  // its batch and channel dims are ignored, as tinygrad
  }
  for (auto o : output_size) TG_CHECK(o > 0, TG_ERROR_SHAPE, "max_unpool: output size " + shape_str(output_size) + " is not positive");
  int64_t bs = shape()[0], c = shape()[1], total = tg::prod(output_size), l = tg::prod(sp);
  // each element put at its index in its (batch, channel) row of the output, one store per element: a repeated index
  // sums (as tinygrad's one-hot sum over the windows), an index outside the row writes nothing
  auto i64 = [&](int64_t v) { return Tensor(UOp::const_int(dtypes::int64, v), device()); };
  Tensor idx = indices.reshape({bs, c, l}).cast(dtypes::int64);
  Tensor row = Tensor::arange(0, double(bs * c), 1, dtypes::int64, device()).reshape({bs, c, 1}).mul(i64(total)).expand({bs, c, l});
  Tensor pos = idx.ge(i64(0)).bitwise_and(idx.lt(i64(total))).where(idx.add(row), i64(-1));
  Tensor ret = Tensor::full({bs, c, total}, 0, dtype(), device()).put(pos, reshape({bs, c, l}), "sum");
  Shape out{bs, c};
  out.insert(out.end(), output_size.begin(), output_size.end());
  return ret.reshape(out);
}

Tensor Tensor::layernorm(std::vector<int64_t> axes, double eps) const {
  Tensor x = cast(least_upper_float(dtype()));
  Tensor y = x.sub(x.mean(axes, true));
  return y.mul(y.square().mean(axes, true).add(y.scalar_like(eps)).rsqrt());
}
// (x - mean) * weight * invstd + bias, the per-channel tensors broadcast along dim 1
Tensor Tensor::batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& mean, const Tensor& invstd) const {
  TG_CHECK(ndim() >= 2, TG_ERROR_SHAPE, "batchnorm: needs at least 2 dims, got shape " + shape_str(shape()));
  Shape s{1, -1};
  s.insert(s.end(), size_t(ndim()) - 2, 1);
  Tensor x = sub(mean.reshape(s));
  if (weight) x = x.mul(weight->reshape(s));
  x = x.mul(invstd.ndim() == 1 ? invstd.reshape(s) : invstd);
  return bias ? x.add(bias->reshape(s)) : x;
}
Tensor Tensor::dropout(double p) const {
  TG_CHECK(p >= 0 && p <= 1, TG_ERROR_INVALID_ARGUMENT, strformat("dropout: p = %g is not in [0, 1]", p));
  if (p == 0) return *this;
  if (p == 1) return full_like(0);
  Tensor keep = Tensor::rand(shape(), dtypes::float32, device()).ge(Tensor(UOp::const_(dtypes::float32, p), device()));
  return keep.where(*this, full_like(0)).mul(scalar_like(1.0 / (1.0 - p)));
}
Tensor Tensor::scaled_dot_product_attention(const Tensor& key, const Tensor& value, const std::optional<Tensor>& mask, bool is_causal,
                                            bool enable_gqa) const {
  TG_CHECK(ndim() >= 2 && key.ndim() >= 2 && value.ndim() >= 2, TG_ERROR_SHAPE, "scaled_dot_product_attention: query, key and value need at least 2 dims");
  TG_CHECK(!(mask && is_causal), TG_ERROR_INVALID_ARGUMENT, "scaled_dot_product_attention: cannot set a mask when is_causal is set");
  Tensor k = key, v = value;
  if (enable_gqa) {
    TG_CHECK(ndim() >= 3 && key.ndim() >= 3 && value.ndim() >= 3, TG_ERROR_SHAPE, "scaled_dot_product_attention: enable_gqa needs a heads dim (-3)");
    int64_t hq = shape()[size_t(ndim() - 3)], hk = key.shape()[size_t(key.ndim() - 3)], hv = value.shape()[size_t(value.ndim() - 3)];
    TG_CHECK(hk > 0 && hv > 0 && hq % hk == 0 && hq % hv == 0, TG_ERROR_SHAPE,
             strformat("scaled_dot_product_attention: %lld query heads are not a multiple of %lld key / %lld value heads", (long long)hq,
                       (long long)hk, (long long)hv));
    k = key.repeat_interleave(hq / hk, -3), v = value.repeat_interleave(hq / hv, -3);
  }
  Tensor q = cast(least_upper_float(dtype()));
  Tensor qk = q.matmul(k.transpose(-2, -1)).div(q.scalar_like(std::sqrt(double(shape().back()))));  // sqrt of the query's size, as tinygrad
  std::optional<Tensor> m = mask;
  if (is_causal) {
    int64_t t = qk.shape()[qk.shape().size() - 2], s = qk.shape().back();
    m = Tensor::full({t, s}, 1, dtypes::bool_, device()).tril(0);
  }
  if (m) qk = qk.add(dtypes::is_bool(m->dtype()) ? m->where(qk.full_like(0), qk.full_like(-INFINITY)) : *m);
  return qk.softmax(-1).matmul(v);
}

static Tensor reduce_loss(const Tensor& t, int reduction, const char* what) {
  TG_CHECK(reduction >= 0 && reduction <= 2, TG_ERROR_INVALID_ARGUMENT, strformat("%s: unknown reduction %d (0 none, 1 mean, 2 sum)", what, reduction));
  return reduction == 0 ? t : reduction == 1 ? t.mean() : t.sum();
}
// (N, d1, ..., C) -> (N, C, d1, ...): a one-hot's class dim where losses keep it
static Tensor class_dim_second(const Tensor& t) {
  std::vector<int64_t> perm{0, t.ndim() - 1};
  for (int64_t i = 1; i < t.ndim() - 1; i++) perm.push_back(i);
  return t.permute(perm);
}
// one-hot along a new last dim: index == arange(num_classes)
Tensor Tensor::one_hot(int64_t num_classes) const {
  TG_CHECK(dtypes::is_int(dtype()), TG_ERROR_DTYPE, "one_hot: needs an int tensor, got " + dtype().name());
  TG_CHECK(num_classes >= 0, TG_ERROR_INVALID_ARGUMENT, "one_hot: num_classes must be >= 0");
  Tensor idx = unsqueeze(-1).cast(dtypes::int64);
  Shape s = idx.shape();
  s.back() = num_classes;
  Tensor classes = Tensor::arange(0, double(num_classes), 1, dtypes::int64, device());
  return idx.expand(s).eq(classes.expand(s, idx.uop()->sym())).cast(dtypes::int32);  // a Variable batch stays one
}
// as tinygrad: the class dim is 1, or 0 for one sample (C,); a target of the logits' shape is probabilities, one of the
// logits' shape without the class dim is class indices, anything else a shape error
Tensor Tensor::cross_entropy(const Tensor& y, double label_smoothing, int reduction) const {
  TG_CHECK(ndim() >= 1, TG_ERROR_SHAPE, "cross_entropy: logits need a class dim, got a 0-d tensor");
  int64_t cd = ndim() == 1 ? 0 : 1, c = shape()[size_t(cd)];
  Shape no_class = shape();
  no_class.erase(no_class.begin() + cd);
  TG_CHECK(y.shape() == shape() || y.shape() == no_class, TG_ERROR_SHAPE,
           "cross_entropy: target " + shape_str(y.shape()) + " is neither " + shape_str(shape()) + " (probabilities) nor " + shape_str(no_class) +
               " (class indices)");
  Tensor target = y.shape() == shape() ? y : cd == 0 ? y.one_hot(c) : class_dim_second(y.one_hot(c));
  Tensor tf = target.cast(least_upper_float(dtype()));
  tf = tf.mul(tf.scalar_like(1 - label_smoothing)).add(tf.scalar_like(label_smoothing / double(c)));
  Tensor ret = log_softmax(cd).mul(tf).sum({cd}).neg();
  return reduce_loss(ret, reduction, "cross_entropy");
}
Tensor Tensor::sparse_categorical_crossentropy(const Tensor& y, int64_t ignore_index, double label_smoothing, int reduction) const {
  TG_CHECK(ndim() >= 1, TG_ERROR_SHAPE, "sparse_categorical_crossentropy: 0-d logits have no class dim");
  // as tinygrad: the labels' one-hot broadcasts against the logits (labels of one dim less, or any shape that broadcasts),
  // and the default ignore_index -1 ignores nothing (a -1 label's one-hot is all zeros, and it counts in the mean)
  Tensor log_probs = log_softmax(-1);
  Tensor keep = ignore_index != -1 ? y.ne(Tensor(UOp::const_int(y.dtype(), ignore_index), device())) : y.full_like(1).cast(dtypes::bool_);
  Tensor yo = y.one_hot(shape().back()).cast(log_probs.dtype()).mul(keep.unsqueeze(-1).cast(log_probs.dtype()));
  Tensor kf = keep.cast(log_probs.dtype());
  Tensor smoothing = log_probs.mean({-1}).mul(kf).mul(kf.scalar_like(label_smoothing));
  Tensor unreduced = log_probs.mul(yo).sum({-1}).mul(kf.scalar_like(1 - label_smoothing)).add(smoothing);
  if (reduction == 1) return unreduced.sum().div(kf.sum()).neg();
  return reduce_loss(unreduced.neg(), reduction, "sparse_categorical_crossentropy");
}
Tensor Tensor::nll_loss(const Tensor& y, int reduction, const std::optional<Tensor>& weight, std::optional<int64_t> ignore_index) const {
  TG_CHECK(ndim() >= 2, TG_ERROR_SHAPE, "nll_loss: log-probabilities need a class dim (N, C, ...), got " + shape_str(shape()));
  int64_t c = shape()[1];
  Tensor target = class_dim_second(y.one_hot(c)).cast(dtype());
  Tensor nll = mul(target).sum({1}).neg();
  if (!weight && !ignore_index) return reduce_loss(nll, reduction, "nll_loss");
  // each target's weight (1 without a weight tensor), 0 where it is ignored; the mean divides by their total, as torch
  Tensor w = nll.full_like(1);
  if (weight) {
    TG_CHECK(weight->shape() == Shape{c}, TG_ERROR_SHAPE, "nll_loss: weight " + shape_str(weight->shape()) + " must be (C,) = " + shape_str(Shape{c}));
    Shape ws(size_t(ndim()), 1);
    ws[1] = c;
    w = target.mul(weight->cast(dtype()).reshape(ws)).sum({1});
  }
  if (ignore_index) w = w.mul(y.ne(Tensor(UOp::const_int(y.dtype(), *ignore_index), device())).cast(dtype()));
  nll = nll.mul(w);
  TG_CHECK(reduction >= 0 && reduction <= 2, TG_ERROR_INVALID_ARGUMENT, strformat("nll_loss: unknown reduction %d (0 none, 1 mean, 2 sum)", reduction));
  return reduction == 1 ? nll.sum().div(w.sum()) : reduce_loss(nll, reduction, "nll_loss");
}
Tensor Tensor::binary_crossentropy(const Tensor& y, int reduction) const {
  Tensor p = cast(least_upper_float(dtype())), one = p.scalar_like(1);
  Tensor yf = y.cast(p.dtype());
  return reduce_loss(yf.neg().mul(p.log()).sub(one.sub(yf).mul(one.sub(p).log())), reduction, "binary_crossentropy");
}
// max(x, 0) - y*x + log(1 + exp(-|x|)): stable for large |x|
Tensor Tensor::binary_crossentropy_logits(const Tensor& y, int reduction, const std::optional<Tensor>& pos_weight) const {
  Tensor x = cast(least_upper_float(dtype()));
  Tensor yf = y.cast(x.dtype());
  if (pos_weight) {  // -(pos_weight * y * logsigmoid(x) + (1 - y) * logsigmoid(-x)), as torch and tinygrad
    Tensor one = x.scalar_like(1);
    Tensor l = pos_weight->mul(yf).mul(x.logsigmoid()).add(one.sub(yf).mul(x.neg().logsigmoid()));
    return reduce_loss(l.neg(), reduction, "binary_crossentropy_logits");
  }
  return reduce_loss(x.relu().sub(yf.mul(x)).add(x.abs().neg().exp().add(x.scalar_like(1)).log()), reduction, "binary_crossentropy_logits");
}

// out[..., i, ...] = t[..., index[..., i, ...], ...] along dim: a one-hot of the index reduced against t
Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  TG_CHECK(ndim() > 0, TG_ERROR_SHAPE, "gather: a 0-d tensor has no dim to gather along");
  int64_t d = resolve_axis(dim, "gather");
  TG_CHECK(index.ndim() == ndim(), TG_ERROR_SHAPE, "gather: index " + shape_str(index.shape()) + " and tensor " + shape_str(shape()) + " differ in rank");
  TG_CHECK(dtypes::is_int(index.dtype()), TG_ERROR_DTYPE, "gather: index must be an int tensor, got " + index.dtype().name());
  for (int64_t i = 0; i < ndim(); i++)
    TG_CHECK(i == d || index.shape()[size_t(i)] <= shape()[size_t(i)], TG_ERROR_SHAPE,
             "gather: index " + shape_str(index.shape()) + " is larger than tensor " + shape_str(shape()) + " outside dim " + std::to_string(d));
  int64_t n = shape()[size_t(d)];
  Pairs b = whole(*this);
  for (int64_t i = 0; i < ndim(); i++)
    if (i != d) b[size_t(i)] = {0, index.shape()[size_t(i)]};
  Tensor x = shrink(b).unsqueeze(-1).transpose(-1, d);  // (..., 1 at d, ..., n)
  Tensor oh = index.one_hot(n).cast(dtypes::bool_);     // (..., index size at d, ..., n)
  Shape s = oh.shape();
  Tensor xe = x.expand(s);
  Tensor picked = oh.where(xe, xe.full_like(0));  // a select, not a multiply: inf * 0 would be NaN
  return (dtypes::is_bool(dtype()) ? picked.any({-1}) : picked.sum({-1})).cast(dtype());
}

// The buffer a view writes through: movement ops (but no expand: several elements would be one) and DETACHes over a
// realized buffer, or over an assign to one. Null for anything else.
static const UOp* written_buffer(const UOp* u) {
  while (u->op == Ops::DETACH || assign_arg(u) || (GroupOp::movement(u->op) && u->op != Ops::EXPAND)) u = u->src[0].get();
  return u->op == Ops::BUFFER ? u : nullptr;
}

// A tensor backed by a buffer is updated in place: realizing it writes the value into that buffer (an ASSIGN), so every
// holder of the buffer and every replay of a captured JIT sees the update. A view of a buffer (t[1:3], t.T, t[::-1])
// writes its elements of the buffer, at once, so every holder sees them as tinygrad's do. A lazy tensor just takes the
// value's graph.
Tensor& Tensor::assign(const Tensor& value) {
  TG_CHECK(value.shape() == shape(), TG_ERROR_SHAPE, "assign: value of shape " + shape_str(value.shape()) + " for a tensor of shape " + shape_str(shape()));
  TG_CHECK(value.device() == device(), TG_ERROR_DEVICE, "assign: value is on " + value.device() + ", the tensor on " + device());
  UOpRef v = value.cast(dtype()).uop();
  const UOp* base = s_->uop.get();
  while (assign_arg(base)) base = base->src[0].get();
  // under tensor_state_mu (another thread's backward may read it); the old graph is freed after the lock
  auto set = [&](UOpRef u) {
    std::lock_guard<std::mutex> lk(tensor_state_mu());
    std::swap(s_->uop, u);
  };
  // a multi tensor whose shards are buffers is updated in place too, one assign per device
  auto shard_buffer = [](const UOpRef& p) { return is_buffer_view(p.get(), tg::prod(p->shape())); };
  bool whole = is_buffer_view(base, numel()) || (base->op == Ops::MULTI && std::all_of(base->src.begin(), base->src.end(), shard_buffer));
  if ((!whole && !written_buffer(s_->uop.get())) || v == s_->uop) {
    set(v);
    return *this;
  }
  auto id = UOp::make(Ops::UNIQUE, dtypes::void_, {}, std::shared_ptr<const ArgExt>(std::make_shared<AssignArg>()));
  set(UOp::make(Ops::ASSIGN, dtype(), {s_->uop, v, id}));
  note_assign(s_);
  if (!whole) realize();  // the buffer's other holders can't see a pending write to a view of it
  return *this;
}

}  // namespace tg

namespace tg {

Tensor Tensor::dot(const Tensor& o) const { return matmul(o); }

// Every operand viewed over all the formula's letters (permuted, size-1 dims for letters it lacks, expanded), the
// product summed over the letters the output drops: one multiply-reduce, like a matmul. As torch/tinygrad: "..." stands
// for the dims no letter names (right-aligned across operands), and a letter repeated within an operand takes that
// operand's diagonal ("ii->i", "ii->" a trace).
Tensor Tensor::einsum(const std::string& formula, const std::vector<Tensor>& xs_in) {
  std::string f;
  for (char c : formula)
    if (c != ' ') f += c;
  size_t arrow = f.find("->");
  std::string lhs = f.substr(0, arrow), out;
  std::optional<std::string> rhs;
  if (arrow != std::string::npos) rhs = f.substr(arrow + 2);
  std::vector<std::string> ins;
  for (size_t at = 0;;) {
    size_t comma = lhs.find(',', at);
    ins.push_back(lhs.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  std::vector<Tensor> xs = xs_in;
  TG_CHECK(ins.size() == xs.size() && !xs.empty(), TG_ERROR_INVALID_ARGUMENT,
           strformat("einsum: '%s' names %zu operands, %zu given", formula.c_str(), ins.size(), xs.size()));
  if (f.find("...") != std::string::npos) {  // "..." -> letters the formula doesn't use, the most dims first
    std::string spare;
    for (char c = 'A'; c <= 'z'; c++)
      if (std::isalpha((unsigned char)c) && f.find(c) == std::string::npos) spare += c;
    std::vector<int64_t> nell(ins.size(), 0);
    int64_t most = 0;
    for (size_t k = 0; k < ins.size(); k++) {
      size_t p = ins[k].find("...");
      if (p == std::string::npos) continue;
      TG_CHECK(ins[k].find("...", p + 3) == std::string::npos, TG_ERROR_INVALID_ARGUMENT,
               strformat("einsum: operand %zu ('%s') has more than one ellipsis", k, ins[k].c_str()));
      nell[k] = xs[k].ndim() - int64_t(ins[k].size() - 3);
      TG_CHECK(nell[k] >= 0, TG_ERROR_SHAPE, strformat("einsum: operand %zu has %lld dims, '%s' names more", k, (long long)xs[k].ndim(), ins[k].c_str()));
      most = std::max(most, nell[k]);
    }
    TG_CHECK(most <= int64_t(spare.size()), TG_ERROR_UNSUPPORTED, "einsum: too many dims under the ellipsis");
    std::string singles;  // the output without "->": the ellipsis dims, then the letters used once, sorted
    for (auto& s : ins)
      for (char c : s)
        if (std::isalpha((unsigned char)c) && std::count(lhs.begin(), lhs.end(), c) == 1 && singles.find(c) == std::string::npos) singles += c;
    std::sort(singles.begin(), singles.end());
    for (size_t k = 0; k < ins.size(); k++)
      if (size_t p = ins[k].find("..."); p != std::string::npos) ins[k].replace(p, 3, spare.substr(size_t(most - nell[k]), size_t(nell[k])));
    if (rhs) {
      size_t p = rhs->find("...");
      if (p != std::string::npos) rhs->replace(p, 3, spare.substr(0, size_t(most)));
    } else {
      rhs = spare.substr(0, size_t(most)) + singles;
    }
  }
  if (!rhs) {  // the letters used once, sorted (a repeated letter within one operand is summed: "ii" is a trace)
    std::string once;
    for (char c : lhs)
      if (std::isalpha((unsigned char)c) && std::count(lhs.begin(), lhs.end(), c) == 1) once += c;
    std::sort(once.begin(), once.end());
    rhs = once;
  }
  out = *rhs;
  std::map<char, int64_t> size;
  for (size_t k = 0; k < ins.size(); k++) {
    TG_CHECK(int64_t(ins[k].size()) == xs[k].ndim(), TG_ERROR_SHAPE,
             strformat("einsum: operand %zu has %lld dims, '%s' names %zu", k, (long long)xs[k].ndim(), ins[k].c_str(), ins[k].size()));
    for (char c : ins[k])
      TG_CHECK(std::isalpha((unsigned char)c), TG_ERROR_INVALID_ARGUMENT, strformat("einsum: '%c' in '%s' is not a letter", c, formula.c_str()));
    // a letter twice in one operand: its diagonal over those two dims, as a last dim with that letter
    for (size_t i = 0; i < ins[k].size(); i++) {
      char c = ins[k][i];
      size_t j = ins[k].find(c, i + 1);
      if (j == std::string::npos) continue;
      int64_t n = xs[k].shape()[i];
      TG_CHECK(xs[k].shape()[j] == n, TG_ERROR_SHAPE,
               strformat("einsum: letter '%c' repeats in operand %zu with sizes %lld and %lld", c, k, (long long)n, (long long)xs[k].shape()[j]));
      std::vector<int64_t> perm;
      for (int64_t d = 0; d < xs[k].ndim(); d++)
        if (d != int64_t(i) && d != int64_t(j)) perm.push_back(d);
      perm.push_back(int64_t(i)), perm.push_back(int64_t(j));
      xs[k] = xs[k].permute(perm).diagonal();
      std::string rest;
      for (size_t d = 0; d < ins[k].size(); d++)
        if (d != i && d != j) rest += ins[k][d];
      ins[k] = rest + c;
      i = size_t(-1);  // rescan: the letter may repeat again
    }
    for (size_t i = 0; i < ins[k].size(); i++) {
      char c = ins[k][i];
      int64_t n = xs[k].shape()[i];
      auto [it, fresh] = size.try_emplace(c, n);
      TG_CHECK(fresh || it->second == n || it->second == 1 || n == 1, TG_ERROR_SHAPE,
               strformat("einsum: letter '%c' has sizes %lld and %lld", c, (long long)it->second, (long long)n));
      it->second = std::max(it->second, n);
    }
  }
  for (char c : out) TG_CHECK(size.count(c) && std::count(out.begin(), out.end(), c) == 1, TG_ERROR_INVALID_ARGUMENT, strformat("einsum: bad output '%s'", out.c_str()));
  std::string all;  // output letters first, then the summed ones
  all = out;
  for (auto& [c, n] : size)
    if (out.find(c) == std::string::npos) all += c;
  Shape full;
  for (char c : all) full.push_back(size[c]);
  std::optional<Tensor> prod;
  for (size_t k = 0; k < xs.size(); k++) {
    std::vector<int64_t> perm;
    Shape view;
    for (char c : all)
      if (size_t p = ins[k].find(c); p != std::string::npos) perm.push_back(int64_t(p));
    Tensor x = xs[k].permute(perm);
    size_t j = 0;
    for (char c : all) view.push_back(ins[k].find(c) != std::string::npos ? x.shape()[j++] : 1);
    x = x.reshape(view).expand(full);
    prod = prod ? prod->mul(x) : x;
  }
  std::vector<int64_t> axes;
  for (size_t i = out.size(); i < all.size(); i++) axes.push_back(int64_t(i));
  return axes.empty() ? *prod : prod->sum(axes).cast(prod->dtype());
}

// the transposed convolution as tinygrad: zeros between input pixels for the stride, the flipped kernel with in/out
// swapped, and padding (k-1)*d - before, (k-1)*d - after + output_padding (negative padding crops)
Tensor Tensor::conv_transpose(const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, Shape stride, Shape dilation, PadPairs padding,
                              Shape output_padding) const {
  TG_CHECK(ndim() >= 3 && w.ndim() == ndim(), TG_ERROR_SHAPE, "conv_transpose: input " + shape_str(shape()) + " and weight " + shape_str(w.shape()) + " need the same rank >= 3");
  TG_CHECK(groups > 0 && w.shape()[0] % groups == 0, TG_ERROR_SHAPE, "conv_transpose: weight's first dim must divide by groups");
  size_t nsp = size_t(w.ndim()) - 2;
  const int64_t lim = int64_t(1) << 31;  // small enough that (k-1)*d - p can't overflow
  auto arg = [&](Shape v, const char* what) {
    v = per_dim(std::move(v), nsp, "conv_transpose", what);
    for (auto x : v) TG_CHECK(x >= 0 && x < lim, TG_ERROR_SHAPE, strformat("conv_transpose: %s out of range", what));
    return v;
  };
  for (Shape* v : {&stride, &dilation}) if (v->empty()) v->push_back(1);
  if (output_padding.empty()) output_padding.push_back(0);
  stride = arg(stride, "stride"), dilation = arg(dilation, "dilation"), output_padding = arg(output_padding, "output_padding");
  if (padding.empty()) padding.assign(nsp, {0, 0});
  TG_CHECK(padding.size() == nsp, TG_ERROR_SHAPE, strformat("conv_transpose: %zu padding pairs for %zu spatial dims", padding.size(), nsp));
  for (auto [b, a] : padding) TG_CHECK(b > -lim && b < lim && a > -lim && a < lim, TG_ERROR_SHAPE, "conv_transpose: padding out of range");
  for (size_t j = 0; j < nsp; j++) TG_CHECK(stride[j] > 0 && dilation[j] > 0, TG_ERROR_SHAPE, "conv_transpose: stride and dilation must be positive");
  Shape hw(w.shape().begin() + 2, w.shape().end());
  // (groups*cin_g, cout_g, k...) -> (groups, cout_g, cin_g, k...) flipped -> (groups*cout_g, cin_g, k...)
  Shape u{groups, w.shape()[0] / groups};
  u.insert(u.end(), w.shape().begin() + 1, w.shape().end());
  std::vector<int64_t> flips;
  for (size_t j = 0; j < nsp; j++) flips.push_back(int64_t(3 + j));
  Tensor ww = w.reshape(u).transpose(1, 2).flip(flips).flatten(0, 1);
  Tensor x = *this;
  int64_t lead = x.ndim() - int64_t(nsp);
  for (size_t j = 0; j < nsp; j++) {  // (n) -> (n, 1) -> padded (n, s) -> (n*s) -> the first n*s - (s-1)
    size_t d = size_t(lead) + j;
    int64_t n = x.shape()[d], s = stride[j];
    if (s == 1) continue;
    Shape a = x.shape();
    a.insert(a.begin() + long(d) + 1, 1);
    PadPairs p(a.size(), {0, 0});
    p[d + 1] = {0, s - 1};
    Shape m = x.shape();
    m[d] = n * s;
    x = x.reshape(a).pad(p).reshape(m);
    PadPairs b;
    for (auto v : x.shape()) b.emplace_back(0, v);
    b[d] = {0, n * s - (s - 1)};
    x = x.shrink(b);
  }
  PadPairs pads;
  for (size_t j = 0; j < nsp; j++)
    pads.emplace_back((hw[j] - 1) * dilation[j] - padding[j].first, (hw[j] - 1) * dilation[j] - padding[j].second + output_padding[j]);
  return x.conv(ww, bias, groups, Shape(nsp, 1), dilation, pads);
}
Tensor Tensor::conv_transpose2d(const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, Shape stride, Shape dilation, Shape padding,
                                Shape output_padding) const {
  size_t nsp = w.ndim() >= 2 ? size_t(w.ndim()) - 2 : 0;
  PadPairs p;
  for (auto v : per_dim(padding, std::max<size_t>(nsp, 1), "conv_transpose2d", "padding")) {
    TG_CHECK(v >= 0, TG_ERROR_SHAPE, "conv_transpose2d: padding out of range");
    p.emplace_back(v, v);
  }
  return conv_transpose(w, bias, groups, std::move(stride), std::move(dilation), p, std::move(output_padding));
}

// nearest or (bi)linear resizing of the last size.size() dims, as tinygrad: a gather of the source positions, and a
// lerp between the two neighbours for linear
Tensor Tensor::interpolate(const Shape& size, const std::string& mode, bool align_corners) const {
  TG_CHECK(mode == "linear" || mode == "nearest" || mode == "nearest-exact", TG_ERROR_INVALID_ARGUMENT,
           "interpolate: unknown mode '" + mode + "' (linear, nearest, nearest-exact)");
  TG_CHECK(size.size() <= size_t(ndim()) && !size.empty(), TG_ERROR_SHAPE, "interpolate: " + std::to_string(size.size()) + " sizes for shape " + shape_str(shape()));
  Tensor x = cast(least_upper_float(dtype()));
  Shape expand = shape();
  for (int64_t i = -1; i >= -int64_t(size.size()); i--) {
    size_t d = size_t(ndim() + i);
    int64_t to = size[size.size() + size_t(i)], from = shape()[d];
    TG_CHECK(to > 0 && from > 0, TG_ERROR_SHAPE, "interpolate: sizes must be positive");
    double ac = align_corners ? 1 : 0;
    double scale = to - ac > 0 ? (double(from) - ac) / (double(to) - ac) : 0;
    Tensor arr = Tensor::arange(0, double(to), 1, dtypes::float32, device());
    Shape rs(size_t(ndim()), 1);
    rs[d] = expand[d] = to;
    if (mode == "linear") {
      Tensor index = align_corners ? arr.mul(arr.scalar_like(scale)) : arr.add(arr.scalar_like(0.5)).mul(arr.scalar_like(scale)).sub(arr.scalar_like(0.5));
      index = index.clamp(0, double(from - 1));
      Tensor lo = index.floor(), hi = index.ceil(), perc = index.sub(lo);
      auto as_idx = [&](const Tensor& t) { return t.cast(dtypes::int32).reshape(rs).expand(expand); };
      x = x.gather(int64_t(d), as_idx(lo)).lerp(x.gather(int64_t(d), as_idx(hi)), perc.reshape(rs).expand(expand).cast(x.dtype()));
    } else {
      Tensor index = mode == "nearest-exact" ? arr.add(arr.scalar_like(0.5)).mul(arr.scalar_like(scale)) : arr.mul(arr.scalar_like(scale));
      index = index.cast(dtypes::int32).minimum(Tensor(UOp::const_int(dtypes::int32, from - 1), device()));
      x = x.gather(int64_t(d), index.reshape(rs).expand(expand));
    }
  }
  return x.cast(dtype());
}

}  // namespace tg
