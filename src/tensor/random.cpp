// Counter-based random numbers, as tinygrad: element i of a random tensor is threefry2x32(key, i), built from uint32
// ALU ops, so the generator runs inside the kernel that consumes the numbers and no state lives on the device. The
// key comes from the seed and the number of random tensors made since it was set: the same program gives the same
// numbers in every run and process.
#include <cmath>
#include <mutex>

#include "tensor/tensor.h"

namespace tg {

namespace {

std::mutex g_rng_mu;
uint64_t g_seed = 0, g_made = 0;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t next_key() {
  std::lock_guard<std::mutex> lk(g_rng_mu);
  return splitmix64(splitmix64(g_seed) ^ g_made++);
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
  Tensor i = Tensor::arange(0, double(n), 1, dtypes::int64, dev);
  TG_CHECK(n < (int64_t(1) << 53), TG_ERROR_SHAPE, std::string(what) + ": at most 2^53 random numbers per tensor");
  auto [a, b] = threefry2x32(i.cast(dtypes::uint32), i.rshift(32).cast(dtypes::uint32), next_key(), dev);
  Tensor bits = wide ? b.cast(dtypes::uint64).lshift(32).bitwise_or(a.cast(dtypes::uint64)) : a;
  return bits.reshape(shape);
}
void check_float(DType dt, const char* what) {
  TG_CHECK(dtypes::is_float(dt), TG_ERROR_DTYPE, std::string(what) + ": needs a float dtype, got " + dt.name());
}

}  // namespace

void Tensor::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lk(g_rng_mu);
  g_seed = seed, g_made = 0;
}

// the top 23 bits as a float32 mantissa of a number in [1, 2), minus 1: uniform on [0, 1) in steps of 2^-23
Tensor Tensor::rand(const Shape& shape, DType dtype, const std::string& device) {
  check_float(dtype, "rand");
  Tensor bits = random_bits(shape, false, device, "rand");
  Tensor one_two = Tensor(bits.rshift(9).bitwise_or(u32(0x3F800000u, device)).uop()->bitcast(dtypes::float32), device);
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
