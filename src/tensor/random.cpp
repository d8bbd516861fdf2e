// Counter-based random numbers, as tinygrad: element i of a random tensor is threefry2x32(key, counter + i), built from
// uint32 ALU ops, so the generator runs inside the kernel that consumes the numbers. The key comes from the seed; the
// counter is a one-element buffer per device that each random tensor advances by its size with an in-place assign. So
// the graph of a random tensor is the same every time (one schedule, one compile), a captured TinyJit replays the
// counter's update and draws new numbers at every call, and a program gives the same numbers in every run and process
// (draw i starts where draws 0..i-1 ended).
#include <cmath>
#include <map>
#include <mutex>

#include "tensor/tensor.h"

namespace tg {

namespace {

std::mutex g_rng_mu;
uint64_t g_seed = 0;
std::map<std::string, Tensor>& counters() {  // device -> uint64 (1,) buffer; never destroyed (tensors may outlive statics)
  static auto* m = new std::map<std::string, Tensor>();
  return *m;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The device's counter before advancing it by n, copied into a buffer of its own, and the key. Both copy and advance
// run now (two one-element kernels), so every draw has its own start whatever order the draws are realized in; inside a
// TinyJit capture they are captured with the rest and replayed.
std::pair<Tensor, uint64_t> take_counts(int64_t n, const std::string& dev) {
  std::lock_guard<std::mutex> lk(g_rng_mu);
  auto it = counters().find(dev);
  if (it == counters().end()) {
    uint64_t zero = 0;
    it = counters().emplace(dev, Tensor::from_data(&zero, sizeof zero, dtypes::uint64, {1}, dev).realize()).first;
  }
  Tensor& c = it->second;
  Tensor start = Tensor::empty({1}, dtypes::uint64, dev);
  start.assign(c);
  c.assign(c.add(Tensor(UOp::const_int(dtypes::uint64, n), dev)));
  Tensor::realize_all({&start, &c});
  return {start, splitmix64(g_seed)};
}

Tensor u32(uint32_t v, const std::string& dev) { return Tensor(UOp::const_int(dtypes::uint32, v), dev); }
Tensor rotl(const Tensor& x, int r) { return x.lshift(r).bitwise_or(x.rshift(32 - r)); }

// Random123's threefry2x32 with 20 rounds on the counter (x0, x1): two independent uint32 words per counter
std::pair<Tensor, Tensor> threefry2x32(Tensor x0, Tensor x1, uint64_t key, const std::string& dev) {
  static constexpr int R[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t ks[3] = {uint32_t(key), uint32_t(key >> 32), 0x1BD11BDAu};
  ks[2] ^= ks[0] ^ ks[1];
  x0 = x0.add(u32(ks[0], dev)), x1 = x1.add(u32(ks[1], dev));
  for (int r = 0; r < 20; r++) {
    x0 = x0.add(x1);
    x1 = rotl(x1, R[r % 8]).bitwise_xor(x0);
    if (r % 4 == 3) {
      uint32_t s = uint32_t(r / 4 + 1);
      x0 = x0.add(u32(ks[s % 3], dev)), x1 = x1.add(u32(ks[(s + 1) % 3] + s, dev));
    }
  }
  return {x0, x1};
}

// n random words (uint32, or uint64 from both halves) for a tensor of `shape`
Tensor random_bits(const Shape& shape, bool wide, const std::string& dev, const char* what) {
  check_shape(shape, wide ? dtypes::uint64 : dtypes::uint32, what);
  int64_t n = tg::prod(shape);
  TG_CHECK(n < (int64_t(1) << 53), TG_ERROR_SHAPE, std::string(what) + ": at most 2^53 random numbers per tensor");
  auto [start, key] = take_counts(n, dev);
  Tensor i = Tensor::arange(0, double(n), 1, dtypes::uint64, dev).add(start);
  auto [a, b] = threefry2x32(i.cast(dtypes::uint32), i.rshift(32).cast(dtypes::uint32), key, dev);
  Tensor bits = wide ? b.cast(dtypes::uint64).lshift(32).bitwise_or(a.cast(dtypes::uint64)) : a;
  return bits.reshape(shape);
}
void check_float(DType dt, const char* what) {
  TG_CHECK(dtypes::is_float(dt), TG_ERROR_DTYPE, std::string(what) + ": needs a float dtype, got " + dt.name());
}

}  // namespace

void Tensor::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lk(g_rng_mu);
  g_seed = seed;
  counters().clear();
}

// the top m bits as the mantissa of a float32 in [1, 2), minus 1: uniform on [0, 1) in steps of 2^-m, m the dtype's
// mantissa width (23 for float32 and float64, 10 for float16, 7 for bfloat16), so the cast is exact and never rounds to 1
Tensor Tensor::rand(const Shape& shape, DType dtype, const std::string& device) {
  check_float(dtype, "rand");
  int m = dtype == dtypes::float16 ? 10 : dtype == dtypes::bfloat16 ? 7 : 23;
  Tensor bits = random_bits(shape, false, device, "rand");
  Tensor mant = m == 23 ? bits.rshift(9) : bits.rshift(32 - m).lshift(23 - m);
  Tensor one_two = Tensor(mant.bitwise_or(u32(0x3F800000u, device)).uop()->bitcast(dtypes::float32), device);
  return one_two.sub(one_two.full_like(1)).cast(dtype);
}
Tensor Tensor::uniform(const Shape& shape, double low, double high, DType dtype, const std::string& device) {
  TG_CHECK(std::isfinite(low) && std::isfinite(high), TG_ERROR_INVALID_ARGUMENT, strformat("uniform: bounds %g and %g must be finite", low, high));
  Tensor r = rand(shape, dtype, device);
  return r.mul(r.scalar_like(high - low)).add(r.scalar_like(low));
}
// Box-Muller on two independent uniforms: cos(2 pi u1) * sqrt(-2 ln(1 - u2)), computed in float32 as tinygrad
Tensor Tensor::randn(const Shape& shape, DType dtype, const std::string& device) {
  check_float(dtype, "randn");
  Shape two = shape;
  two.insert(two.begin(), 2);
  Tensor u = rand(two, dtypes::float32, device);
  std::vector<std::pair<int64_t, int64_t>> lo{{0, 1}}, hi{{1, 2}};
  for (auto d : shape) lo.emplace_back(0, d), hi.emplace_back(0, d);
  Tensor u1 = u.shrink(lo).reshape(shape), u2 = u.shrink(hi).reshape(shape);
  Tensor r = u1.mul(u1.scalar_like(2 * M_PI)).cos().mul(u2.scalar_like(1).sub(u2).log().mul(u2.scalar_like(-2)).sqrt());
  return r.cast(dtype);
}
Tensor Tensor::normal(const Shape& shape, double mean, double std, DType dtype, const std::string& device) {
  TG_CHECK(std::isfinite(mean) && std::isfinite(std), TG_ERROR_INVALID_ARGUMENT, strformat("normal: mean %g and std %g must be finite", mean, std));
  Tensor r = randn(shape, dtype, device);
  return r.mul(r.scalar_like(std)).add(r.scalar_like(mean));
}
// low + bits mod (high - low) on 64 random bits: the modulo bias is below 2^-32 for any range that fits int64
Tensor Tensor::randint(const Shape& shape, int64_t low, int64_t high, DType dtype, const std::string& device) {
  TG_CHECK(dtypes::is_int(dtype), TG_ERROR_DTYPE, "randint: needs an int dtype, got " + dtype.name());
  TG_CHECK(low < high, TG_ERROR_INVALID_ARGUMENT, strformat("randint: low %lld must be below high %lld", (long long)low, (long long)high));
  TG_CHECK(double(low) >= dtypes::min(dtype) && double(high) - 1 <= dtypes::max(dtype), TG_ERROR_INVALID_ARGUMENT,
           strformat("randint: [%lld, %lld) doesn't fit %s", (long long)low, (long long)high, dtype.name().c_str()));
  uint64_t range = uint64_t(high) - uint64_t(low);
  Tensor bits = random_bits(shape, true, device, "randint");
  Tensor off = Tensor(bits.uop()->alu(Ops::MOD, {UOp::const_int(dtypes::uint64, int64_t(range))}), device);
  return off.add(Tensor(UOp::const_int(dtypes::uint64, low), device)).cast(dtype);
}

}  // namespace tg

namespace tg {

Tensor Tensor::linspace(double start, double stop, int64_t steps, DType dtype, const std::string& device) {
  TG_CHECK(steps >= 0, TG_ERROR_SHAPE, "linspace: steps must be >= 0");
  TG_CHECK(std::isfinite(start) && std::isfinite(stop), TG_ERROR_INVALID_ARGUMENT, strformat("linspace: start %g and stop %g must be finite", start, stop));
  if (steps == 1) return Tensor::full({1}, start, dtype, device, "linspace");
  // the first half counts up from start, the second down from stop (as torch), so both ends are exact whether or not
  // a*b+c rounds once (TG_FMA): an int linspace's last value truncates to stop, not to one short of it
  Tensor i = Tensor::arange(0, double(steps), 1, dtypes::float64, device), step = i.scalar_like((stop - start) / double(steps - 1));
  Tensor up = i.mul(step).add(i.scalar_like(start)), down = i.sub(i.scalar_like(double(steps - 1))).mul(step).add(i.scalar_like(stop));
  return i.lt(i.scalar_like(double(steps / 2))).where(up, down).cast(dtype);
}
// fan_in = prod(shape[1:]) as tinygrad; glorot uses shape[0] + fan_in
static double fan_in(const Shape& s) {
  double f = 1;
  for (size_t i = 1; i < s.size(); i++) f *= double(s[i]);
  return f;
}
Tensor Tensor::scaled_uniform(const Shape& shape, DType dtype, const std::string& device) {
  return uniform(shape, -1, 1, dtype, device).mul(Tensor(UOp::const_(dtype, std::pow(double(std::max<int64_t>(tg::prod(shape), 1)), -0.5)), device));
}
Tensor Tensor::glorot_uniform(const Shape& shape, DType dtype, const std::string& device) {
  TG_CHECK(!shape.empty(), TG_ERROR_SHAPE, "glorot_uniform: needs at least one dim");
  double bound = std::sqrt(6.0 / (double(shape[0]) + fan_in(shape)));
  return uniform(shape, -bound, bound, dtype, device);
}
Tensor Tensor::kaiming_uniform(const Shape& shape, double a, DType dtype, const std::string& device) {
  double bound = std::sqrt(3.0) * std::sqrt(2.0 / (1 + a * a)) / std::sqrt(std::max(fan_in(shape), 1.0));
  return uniform(shape, -bound, bound, dtype, device);
}
Tensor Tensor::kaiming_normal(const Shape& shape, double a, DType dtype, const std::string& device) {
  double std = std::sqrt(2.0 / (1 + a * a)) / std::sqrt(std::max(fan_in(shape), 1.0));
  return normal(shape, 0, std, dtype, device);
}
// a random permutation: the ranks of n uniform numbers (ties have probability ~n^2 / 2^24: broken by position)
Tensor Tensor::randperm(int64_t n, DType dtype, const std::string& device) {
  TG_CHECK(n >= 0, TG_ERROR_SHAPE, "randperm: n must be >= 0");
  TG_CHECK(dtypes::is_int(dtype), TG_ERROR_DTYPE, "randperm: needs an int dtype, got " + dtype.name());
  return rand({n}, dtypes::float32, device).argsort(0).cast(dtype);
}
// samples with replacement by inverting the cumulative distribution of each row of weights
Tensor Tensor::multinomial(int64_t num_samples, bool replacement) const {
  TG_CHECK(ndim() == 1 || ndim() == 2, TG_ERROR_SHAPE, "multinomial: needs 1-d or 2-d weights, got shape " + shape_str(shape()));
  TG_CHECK(num_samples > 0, TG_ERROR_INVALID_ARGUMENT, "multinomial: num_samples must be positive");
  TG_CHECK(replacement || num_samples == 1, TG_ERROR_UNSUPPORTED, "multinomial: sampling without replacement needs num_samples == 1");
  Tensor w = (ndim() == 1 ? unsqueeze(0) : *this).cast(least_upper_float(dtype()));
  int64_t rows = w.shape()[0], n = w.shape()[1];
  Tensor cdf = w.cumsum(1).div(w.sum({1}, true));
  Tensor u = rand({rows, num_samples, 1}, cdf.dtype(), device());
  Tensor idx = u.expand({rows, num_samples, n}).ge(cdf.unsqueeze(1).expand({rows, num_samples, n})).cast(dtypes::int32).sum({2});
  idx = idx.minimum(Tensor(UOp::const_int(dtypes::int32, n - 1), device()));  // u just below 1 with rounding in the cdf
  return ndim() == 1 ? idx.reshape({num_samples}) : idx;
}

}  // namespace tg
