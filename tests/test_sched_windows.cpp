// Sliding windows (conv, pool, unfold) are never realized into window buffers, whatever the graph's input is: a
// reshaped, permuted, shrunk or cast view of a buffer, or one behind a long chain of movement ops. The scheduler's
// fusion limits once split tinygrad's beautiful_mnist model inside its 4th conv's windows when the input was the
// dataset's (N,28,28) -> (N,1,28,28) reshape: a 53 GB buffer for 10k images.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "engine/realize.h"
#include "float_data.h"
#include "tensor/tensor.h"

namespace {

using tg_test::randf;
using tg_test::read;
using tg_test::tf;

using tg::Shape;
using tg::Tensor;
namespace dt = tg::dtypes;

// uint8 images (n, 28, 28), realized: what nn.datasets.mnist() holds
Tensor images(int64_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<uint8_t> v(size_t(n * 28 * 28));
  for (auto& x : v) x = uint8_t(g() % 256);
  return Tensor::from_data(v.data(), v.size(), dt::uint8, {n, 28, 28}, "CPU").realize();
}

// tinygrad's beautiful_mnist model in eval mode: Conv2d(1,32,5) relu Conv2d(32,32,5) relu BatchNorm(32) max_pool2d
// Conv2d(32,64,3) relu Conv2d(64,64,3) relu BatchNorm(64) max_pool2d flatten Linear(576,10)
struct Model {
  std::vector<Tensor> p;
  Model() {
    uint64_t seed = 100;
    auto param = [&](Shape s, float scale) {
      p.push_back(tf(randf(size_t(tg::prod(s)), seed++, -scale, scale), s).realize());
      return p.size() - 1;
    };
    for (auto [o, i, k] : {std::tuple{32, 1, 5}, {32, 32, 5}, {64, 32, 3}, {64, 64, 3}}) {
      float sc = 1.f / std::sqrt(float(i * k * k));
      param({o, i, k, k}, sc), param({o}, sc);
    }
    for (int c : {32, 64}) param({c}, 1), param({c}, 1), param({c}, 1), p.push_back(tf(randf(size_t(c), seed++, 0.5f, 1.5f), {c}).realize());
    param({576, 10}, 1.f / 24), param({10}, 1.f / 24);
  }
  Tensor operator()(Tensor x) const {
    auto conv = [&](Tensor v, size_t i) { return v.conv2d(p[i], p[i + 1], 1, {1}, {1}, {0}).relu(); };
    auto bn = [&](Tensor v, size_t i) { return v.batchnorm(p[i], p[i + 1], p[i + 2], p[i + 3]); };
    x = bn(conv(conv(x, 0), 2), 8).max_pool2d({2, 2});
    x = bn(conv(conv(x, 4), 6), 12).max_pool2d({2, 2});
    return x.flatten(1).linear(p[16], p[17]);
  }
};

struct PlanInfo {
  std::vector<std::string> names;
  size_t peak = 0, largest = 0;  // the planner's peak; the largest buffer a kernel writes
};
PlanInfo plan(const Tensor& y) {
  tg::Lowered l = tg::lower_realize({y.uop()}, "CPU");
  PlanInfo p;
  p.peak = l.mem.peak_bytes;
  for (auto& e : l.items) p.names.push_back(e.prg->name), p.largest = std::max(p.largest, e.bufs[0]->nbytes());
  return p;
}
std::string names(const PlanInfo& p) {
  std::string s;
  for (auto& n : p.names) s += n + " ";
  return s;
}
// a window of the 4th conv is (N, 64, 6, 6, 64, 3, 3) floats, 4 KB an image; the largest activation is 73 KB an image
void expect_no_window(const PlanInfo& p, int64_t n) {
  EXPECT_LE(p.largest, size_t(n) * 32 * 24 * 24 * 4) << names(p);
  for (auto& k : p.names) EXPECT_FALSE(k.rfind("E_", 0) == 0 && k.find("_3_3") != std::string::npos) << "a window kernel: " << names(p);
}

// the dataset's tensor, and other views of a buffer (n, 28, 28), as the model's input; the shrink takes n images of
// `big`, a buffer of more
std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> views(int64_t n, const Tensor& big) {
  return {
      {"reshape", [n](const Tensor& b) { return b.reshape({n, 1, 28, 28}); }},
      {"permute", [n](const Tensor& b) { return b.permute({0, 2, 1}).reshape({n, 1, 28, 28}); }},
      {"shrink", [n, big](const Tensor&) { return big.shrink({{2, n + 2}, {0, 28}, {0, 28}}).reshape({n, 1, 28, 28}); }},
      {"cast", [n](const Tensor& b) { return b.reshape({n, 1, 28, 28}).cast(dt::float32); }},
      {"cast_permute", [n](const Tensor& b) { return b.cast(dt::float32).permute({0, 2, 1}).reshape({n, 1, 28, 28}); }},
  };
}

TEST(SchedWindows, MnistModelOnViewsOfTenThousandImagesPlansNoWindow) {
  const int64_t N = 10000;
  Model m;
  Tensor b = images(N, 1);
  for (auto& [name, view] : views(N, images(N + 5, 2))) {
    SCOPED_TRACE(name);
    PlanInfo p = plan(m(view(b)).argmax(1));
    expect_no_window(p, N);
    EXPECT_LT(p.peak, size_t(2) << 30) << names(p);
  }
}

TEST(SchedWindows, MnistModelValuesOnViewsMatchContiguousInput) {
  const int64_t N = 6;
  Model m;
  Tensor b = images(N, 3);
  for (auto& [name, view] : views(N, images(N + 5, 4))) {
    SCOPED_TRACE(name);
    std::vector<float> want = read(m(view(b).contiguous().realize()));
    Tensor y = m(view(b));
    expect_no_window(plan(y), N);
    std::vector<float> got = read(y);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-3 + 1e-4 * std::fabs(want[i])) << i;
  }
}

// plain loops: a 3x3 conv, no padding, of x (n, c, h, w)
std::vector<double> conv_ref(const std::vector<float>& x, const std::vector<float>& w, int n, int c, int h, int wd, int o) {
  std::vector<double> out;
  for (int b = 0; b < n; b++)
    for (int k = 0; k < o; k++)
      for (int i = 0; i + 2 < h; i++)
        for (int j = 0; j + 2 < wd; j++) {
          double acc = 0;
          for (int ch = 0; ch < c; ch++)
            for (int a = 0; a < 3; a++)
              for (int e = 0; e < 3; e++) acc += double(x[size_t(((b * c + ch) * h + i + a) * wd + j + e)]) * w[size_t(((k * c + ch) * 3 + a) * 3 + e)];
          out.push_back(acc);
        }
  return out;
}

// t times: a transpose of the last two dims, read back as (..., h, w): a chain of 2t movement ops that don't fold
Tensor scramble(Tensor x, int t) {
  Shape s = x.shape();
  for (int i = 0; i < t; i++) x = x.permute({0, 1, 3, 2}).reshape(s);
  return x;
}
std::vector<float> scramble_ref(std::vector<float> v, int planes, int h, int w, int t) {
  std::vector<float> o(v.size());
  for (int i = 0; i < t; i++, v.swap(o))
    for (int p = 0; p < planes; p++)
      for (int a = 0; a < w; a++)
        for (int b = 0; b < h; b++) o[size_t((p * w + a) * h + b)] = v[size_t((p * h + b) * w + a)];
  return v;
}

// a long chain of movement ops before a conv (a user's transposes) puts the fusion limit inside the conv's windows for
// some chain length: the chain's end gets the buffer, never the window
TEST(SchedWindows, ConvAfterLongMovementChainsSplitsBeforeTheWindow) {
  const int n = 3, c = 4, h = 10, w = 9, o = 5;
  auto xv = randf(size_t(n * c * h * w), 3), wv = randf(size_t(o * c * 9), 4);
  for (int t = 20; t < 36; t++) {
    SCOPED_TRACE("transposes: " + std::to_string(t));
    Tensor y = scramble(tf(xv, {n, c, h, w}), t).conv2d(tf(wv, {o, c, 3, 3}), std::nullopt, 1, {1}, {1}, {0}).relu();
    PlanInfo p = plan(y);
    EXPECT_LE(p.largest, size_t(n * c * h * w) * 4) << names(p);  // a window is n*o*8*7*c*9 floats
    std::vector<double> want = conv_ref(scramble_ref(xv, n * c, h, w, t), wv, n, c, h, w, o);
    std::vector<float> got = read(y);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], std::max(want[i], 0.0), 1e-4 + 1e-5 * std::fabs(want[i])) << i;
  }
}

// the same for max_pool2d, avg_pool2d and unfold's windows
TEST(SchedWindows, PoolsAfterLongMovementChainsPlanNoWindow) {
  const int n = 2, c = 3, h = 8, w = 7, oh = h - 2, ow = w - 2;
  auto xv = randf(size_t(n * c * h * w), 5);
  for (int t = 20; t < 36; t++) {
    SCOPED_TRACE("transposes: " + std::to_string(t));
    Tensor x = scramble(tf(xv, {n, c, h, w}), t);
    std::vector<float> xs = scramble_ref(xv, n * c, h, w, t);
    for (auto& [name, y] : std::vector<std::pair<std::string, Tensor>>{{"max_pool2d", x.max_pool2d({3, 3}, {1, 1})},
                                                                        {"avg_pool2d", x.avg_pool2d({3, 3}, {1, 1})},
                                                                        {"unfold_max", x.unfold(2, 3, 1).unfold(3, 3, 1).max({4, 5})}}) {
      SCOPED_TRACE(name);
      PlanInfo p = plan(y);
      EXPECT_LE(p.largest, size_t(n * c * h * w) * 4) << names(p);  // a window is n*c*6*5*9 floats
      std::vector<float> got = read(y);
      ASSERT_EQ(got.size(), size_t(n * c * oh * ow));
      for (int q = 0; q < n * c; q++)
        for (int i = 0; i < oh; i++)
          for (int j = 0; j < ow; j++) {
            double mx = -INFINITY, sum = 0;
            for (int a = 0; a < 3; a++)
              for (int e = 0; e < 3; e++) {
                double v = xs[size_t(q * h * w + (i + a) * w + j + e)];
                mx = std::max(mx, v), sum += v;
              }
            EXPECT_NEAR(got[size_t((q * oh + i) * ow + j)], name == "avg_pool2d" ? sum / 9 : mx, 1e-5) << q << " " << i << " " << j;
          }
    }
  }
}

// kernels of the schedule that realizes `ys` whose AST compares values (a max's backward: which window element is the
// max)
int comparing_kernels(const std::vector<Tensor>& ys) {
  std::vector<tg::UOpRef> roots;
  for (auto& y : ys) roots.push_back(y.uop());
  int count = 0;
  for (auto& e : tg::lower_realize(roots, "CPU").items) {
    bool cmp = false;
    if (e.prg->ast)
      for (auto& u : e.prg->ast->toposort()) cmp |= tg::GroupOp::comparison(u->op);
    count += cmp;
  }
  return count;
}

// A max-pool's input gradient (compare each window element with its max, route the gradient there) is realized once:
// BatchNorm's backward reads it in several reductions, each of which recomputed it before (beautiful_mnist's step,
// 237 -> 217 ms of kernels)
TEST(SchedWindows, MaxPoolGradientIsComputedOnceForSeveralReductions) {
  Tensor x = tf(randf(8 * 4 * 12 * 12, 5), {8, 4, 12, 12}).realize(), r = tf(randf(8 * 4 * 6 * 6, 6), {8, 4, 6, 6}).realize();
  Tensor g = x.max_pool2d({2, 2}).mul(r).sum().gradient({x})[0];
  Tensor sum = g.sum({0, 2, 3}), sum_x = g.mul(x).sum({0, 2, 3});
  // the count of each window's maxima (ties share the gradient), and the gradient: nothing else compares
  EXPECT_EQ(comparing_kernels({sum, sum_x}), 2);
  // the values: each window's max element gets r, the others 0
  std::vector<float> xv = read(x), rv = read(r), got = read(Tensor::cat({sum, sum_x}));
  std::vector<double> s(4), sx(4);
  for (int64_t n = 0; n < 8; n++)
    for (int64_t c = 0; c < 4; c++)
      for (int64_t i = 0; i < 6; i++)
        for (int64_t j = 0; j < 6; j++) {
          int64_t best = -1;
          for (int64_t di = 0; di < 2; di++)
            for (int64_t dj = 0; dj < 2; dj++) {
              int64_t at = ((n * 4 + c) * 12 + 2 * i + di) * 12 + 2 * j + dj;
              if (best < 0 || xv[size_t(at)] > xv[size_t(best)]) best = at;
            }
          double gr = rv[size_t(((n * 4 + c) * 6 + i) * 6 + j)];
          s[size_t(c)] += gr, sx[size_t(c)] += gr * xv[size_t(best)];
        }
  for (size_t c = 0; c < 4; c++) {
    EXPECT_NEAR(got[c], s[c], 1e-4) << c;
    EXPECT_NEAR(got[4 + c], sx[c], 1e-4) << c;
  }
}

}  // namespace
