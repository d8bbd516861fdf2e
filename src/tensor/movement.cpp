// Movement ops composed from the six primitive views (reshape, permute, expand, pad, shrink, flip): still views, no
// copies; cat and the pad modes become padded views added together, which fuse into the consumer's kernel.
#include <algorithm>
#include <numeric>

#include "tensor/tensor.h"

namespace tg {

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (ndim() == 0) return reshape({1});
  int64_t a = resolve_axis(start, "flatten"), b = resolve_axis(end, "flatten");
  TG_CHECK(a <= b, TG_ERROR_SHAPE, strformat("flatten: start_dim %lld is after end_dim %lld", (long long)start, (long long)end));
  Shape s(shape().begin(), shape().begin() + a);
  s.push_back(tg::prod(Shape(shape().begin() + a, shape().begin() + b + 1)));
  s.insert(s.end(), shape().begin() + b + 1, shape().end());
  return reshape(s);
}
Tensor Tensor::unflatten(int64_t dim, Shape sizes) const {
  int64_t d = resolve_axis(dim, "unflatten");
  TG_CHECK(ndim() > 0, TG_ERROR_SHAPE, "unflatten: a 0-d tensor has no dim to split");
  Tensor part = Tensor(UOp::const_(dtype(), 0), device()).reshape({1}).expand({shape()[size_t(d)]}).reshape(sizes);  // checks sizes
  Shape s(shape().begin(), shape().begin() + d);
  s.insert(s.end(), part.shape().begin(), part.shape().end());
  s.insert(s.end(), shape().begin() + d + 1, shape().end());
  return reshape(s);
}
Tensor Tensor::squeeze(std::optional<int64_t> dim) const {
  Shape s;
  if (!dim) {
    // a Variable dim bound to 1 is kept: at another binding it isn't 1
    const auto& sym = uop()->sym();
    std::vector<const UOp*> keep;
    for (size_t i = 0; i < shape().size(); i++)
      if (shape()[i] != 1 || (!sym.empty() && sym[i])) s.push_back(shape()[i]), keep.push_back(sym.empty() ? nullptr : sym[i]);
    return reshape(s, keep);
  }
  int64_t d = resolve_axis(*dim, "squeeze");
  if (ndim() == 0 || shape()[size_t(d)] != 1 || (!uop()->sym().empty() && uop()->sym()[size_t(d)])) return *this;
  s = shape();
  s.erase(s.begin() + d);
  std::vector<const UOp*> sym = uop()->sym();
  if (!sym.empty()) sym.erase(sym.begin() + d);
  return reshape(s, sym);
}
Tensor Tensor::unsqueeze(int64_t dim) const {
  int64_t n = ndim() + 1;
  TG_CHECK(dim >= -n && dim < n, TG_ERROR_SHAPE, strformat("unsqueeze: dim %lld is out of range for shape %s", (long long)dim, shape_str(shape()).c_str()));
  Shape s = shape();
  int64_t at = dim < 0 ? dim + n : dim;
  s.insert(s.begin() + at, 1);
  std::vector<const UOp*> sym = uop()->sym();
  if (!sym.empty()) sym.insert(sym.begin() + at, nullptr);
  return reshape(s, sym);
}
// (s0, s1) repeated (r0, r1): view as (1, s0, 1, s1), expand to (r0, s0, r1, s1), merge pairs
Tensor Tensor::repeat(std::vector<int64_t> reps) const {
  TG_CHECK(reps.size() >= shape().size(), TG_ERROR_SHAPE,
           strformat("repeat: %zu repeats for shape %s (at least one per dim)", reps.size(), shape_str(shape()).c_str()));
  Shape base(reps.size() - shape().size(), 1);
  base.insert(base.end(), shape().begin(), shape().end());
  Shape inter, big, out;
  for (size_t i = 0; i < reps.size(); i++) {
    TG_CHECK(reps[i] >= 0, TG_ERROR_SHAPE, "repeat: negative repeat count " + std::to_string(reps[i]));
    inter.push_back(1), inter.push_back(base[i]);
    big.push_back(reps[i]), big.push_back(base[i]);
    int64_t o;
    TG_CHECK(!__builtin_mul_overflow(reps[i], base[i], &o), TG_ERROR_SHAPE, "repeat: the result has more elements than fit in int64");
    out.push_back(o);
  }
  return reshape(inter).expand(big).reshape(out);
}
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  TG_CHECK(repeats >= 0, TG_ERROR_SHAPE, "repeat_interleave: negative repeat count " + std::to_string(repeats));
  Tensor x = dim ? *this : flatten();
  int64_t d = x.resolve_axis(dim.value_or(0), "repeat_interleave");
  Shape e = x.unsqueeze(d + 1).shape();
  e[size_t(d + 1)] = repeats;
  return x.unsqueeze(d + 1).expand(e).flatten(d, d + 1);
}
Tensor Tensor::roll(std::vector<int64_t> shifts, std::vector<int64_t> dims) const {
  TG_CHECK(shifts.size() == dims.size(), TG_ERROR_SHAPE, "roll: shifts and dims differ in length");
  Tensor x = *this;
  for (size_t k = 0; k < dims.size(); k++) {
    int64_t d = resolve_axis(dims[k], "roll");
    if (ndim() == 0) continue;
    int64_t n = shape()[size_t(d)];
    if (n == 0) continue;
    int64_t s = ((shifts[k] % n) + n) % n;
    if (s == 0) continue;
    std::vector<std::pair<int64_t, int64_t>> tail, head;
    for (int64_t i = 0; i < ndim(); i++) tail.emplace_back(0, shape()[size_t(i)]), head.emplace_back(0, shape()[size_t(i)]);
    tail[size_t(d)] = {n - s, n}, head[size_t(d)] = {0, n - s};
    x = Tensor::cat({x.shrink(tail), x.shrink(head)}, d);
  }
  return x;
}
// each piece padded to the full extent along dim and the pieces added: one elementwise graph, no copy kernels
Tensor Tensor::cat(const std::vector<Tensor>& ts, int64_t dim) {
  TG_CHECK(!ts.empty(), TG_ERROR_INVALID_ARGUMENT, "cat: no tensors");
  const Tensor& f = ts[0];
  TG_CHECK(f.ndim() > 0, TG_ERROR_SHAPE, "cat: zero-dimensional tensors can't be concatenated");
  int64_t d = f.resolve_axis(dim, "cat");
  DType dt = f.dtype();
  int64_t total = 0;
  for (auto& t : ts) {
    TG_CHECK(t.device() == f.device(), TG_ERROR_DEVICE, "cat: tensors are on different devices (" + f.device() + ", " + t.device() + ")");
    bool same = t.ndim() == f.ndim();
    for (int64_t i = 0; same && i < f.ndim(); i++) same = i == d || t.shape()[size_t(i)] == f.shape()[size_t(i)];
    TG_CHECK(same, TG_ERROR_SHAPE, "cat: shapes " + shape_str(f.shape()) + " and " + shape_str(t.shape()) + " differ outside dim " + std::to_string(d));
    dt = least_upper_dtype(dt, t.dtype());
    TG_CHECK(!__builtin_add_overflow(total, t.shape()[size_t(d)], &total), TG_ERROR_SHAPE, "cat: the result is too large");
  }
  if (ts.size() == 1) return f.cast(dt);
  auto sym_of = [&](const Tensor& t) { return t.uop()->sym().empty() ? nullptr : t.uop()->sym()[size_t(d)]; };
  if (std::any_of(ts.begin(), ts.end(), sym_of)) {
    // along a symbolic dim the offsets and the total are expressions of the Variables (i, i+2, i+j)
    auto size_of = [&](const Tensor& t) { return SymInt{t.shape()[size_t(d)], sym_of(t) ? sym_of(t)->ref() : UOpRef()}; };
    SymInt sum{0}, at{0};
    for (auto& t : ts) sum = sym_add(sum, size_of(t));
    std::optional<Tensor> out;
    for (auto& t : ts) {
      Tensor piece = t.cast(dt).pad_sym(d, at, sum);
      at = sym_add(at, size_of(t));
      out = !out ? piece : dtypes::is_bool(dt) ? out->bitwise_or(piece) : out->add(piece);
    }
    return *out;
  }
  std::optional<Tensor> out;
  int64_t at = 0;
  for (auto& t : ts) {
    std::vector<std::pair<int64_t, int64_t>> p(size_t(f.ndim()), {0, 0});
    int64_t n = t.shape()[size_t(d)];
    p[size_t(d)] = {at, total - at - n};
    at += n;
    Tensor piece = t.cast(dt).pad(p);
    out = !out ? piece : dtypes::is_bool(dt) ? out->bitwise_or(piece) : out->add(piece);
  }
  return *out;
}
Tensor Tensor::stack(const std::vector<Tensor>& ts, int64_t dim) {
  TG_CHECK(!ts.empty(), TG_ERROR_INVALID_ARGUMENT, "stack: no tensors");
  for (auto& t : ts)
    TG_CHECK(t.shape() == ts[0].shape(), TG_ERROR_SHAPE, "stack: shapes " + shape_str(ts[0].shape()) + " and " + shape_str(t.shape()) + " differ");
  std::vector<Tensor> us;
  for (auto& t : ts) us.push_back(t.unsqueeze(dim));
  return cat(us, dim < 0 ? dim + ts[0].ndim() + 1 : dim);
}
// 0..n-1 along dim `d` of t: symbolic as t's dim is (an arange at its largest size, shrunk to it)
static Tensor index_along(const Tensor& t, size_t d) {
  int64_t n = t.shape()[d];
  const UOp* e = t.uop()->sym().empty() ? nullptr : t.uop()->sym()[d];
  if (!e) return Tensor::arange(0, double(n), 1, dtypes::int64, t.device());
  UOps inner;
  if (e->op != Ops::DEFINE_VAR) {
    auto binds = graph_binds(t.uop().get());
    for (const UOp* v : sym_vars(e))
      if (binds.count(v)) inner.push_back(bound_var(v, binds.at(v)));
  }
  return Tensor::arange(0, double(sym_largest(e)), 1, dtypes::int64, t.device()).shrink_var(0, e->ref(), n, std::move(inner));
}
// keep [i, j] where j - i >= k (triu) or j - i <= k (tril), over the last two dims
static Tensor triangle(const Tensor& t, const Tensor& k, bool upper, const char* what) {
  TG_CHECK(t.ndim() >= 2, TG_ERROR_SHAPE, std::string(what) + ": needs at least 2 dims, got shape " + shape_str(t.shape()));
  TG_CHECK(k.ndim() == 0 && dtypes::is_int(k.dtype()), TG_ERROR_INVALID_ARGUMENT,
           std::string(what) + ": the diagonal must be a 0-d integer tensor, got " + k.dtype().name() + " " + sym_shape_str(k));
  size_t n = t.shape().size();
  Tensor i = index_along(t, n - 2).unsqueeze(-1), j = index_along(t, n - 1).unsqueeze(0);
  Tensor diff = j.sub(i).sub(k.cast(dtypes::int64));  // j - i - k
  Tensor zero = Tensor(UOp::const_int(dtypes::int64, 0), t.device());
  Tensor keep = upper ? diff.ge(zero) : diff.le(zero);
  return keep.expand(t.shape(), t.uop()->sym()).where(t, t.full_like(0));
}
static Tensor diag_const(const Tensor& t, int64_t k) { return Tensor(UOp::const_int(dtypes::int64, k), t.device()); }
Tensor Tensor::tril(int64_t k) const { return triangle(*this, diag_const(*this, k), false, "tril"); }
Tensor Tensor::triu(int64_t k) const { return triangle(*this, diag_const(*this, k), true, "triu"); }
Tensor Tensor::tril(const Tensor& k) const { return triangle(*this, k, false, "tril"); }
Tensor Tensor::triu(const Tensor& k) const { return triangle(*this, k, true, "triu"); }

// Negative padding crops, as tinygrad: constant and circular crop first (circular then wraps what is left), reflect and
// replicate pad from the whole dim first and crop after.
Tensor Tensor::pad(const std::vector<std::pair<int64_t, int64_t>>& pads, PadMode mode, double value) const {
  const char* what = mode == PadMode::Constant ? "pad" : mode == PadMode::Reflect ? "pad(reflect)" : mode == PadMode::Replicate ? "pad(replicate)" : "pad(circular)";
  TG_CHECK(int64_t(pads.size()) == ndim(), TG_ERROR_SHAPE, strformat("%s: %zu pairs given for shape %s", what, pads.size(), shape_str(shape()).c_str()));
  bool neg = false, after = mode == PadMode::Reflect || mode == PadMode::Replicate;
  std::vector<std::pair<int64_t, int64_t>> pos;
  for (size_t d = 0; d < pads.size(); d++) {
    auto [b, a] = pads[d];
    TG_CHECK(b > INT64_MIN && a > INT64_MIN, TG_ERROR_SHAPE, std::string(what) + ": padding out of range");
    pos.emplace_back(std::max<int64_t>(b, 0), std::max<int64_t>(a, 0));
    neg |= b < 0 || a < 0;
    // what is cropped must fit in the dim (padded first for reflect and replicate)
    int64_t room = shape()[d];
    if (after && (__builtin_add_overflow(room, pos.back().first, &room) || __builtin_add_overflow(room, pos.back().second, &room))) room = INT64_MAX;
    TG_CHECK(std::max<int64_t>(-b, 0) <= room && std::max<int64_t>(-a, 0) <= room - std::max<int64_t>(-b, 0), TG_ERROR_SHAPE,
             strformat("%s: padding (%lld, %lld) crops more than dim %zu of size %lld", what, (long long)b, (long long)a, d, (long long)shape()[d]));
  }
  if (!neg && mode == PadMode::Constant) return pad(pads, value);
  auto cropped = [&](const Tensor& t) {  // shrink the negative sides
    std::vector<std::pair<int64_t, int64_t>> b;
    for (size_t d = 0; d < pads.size(); d++) b.emplace_back(std::max<int64_t>(-pads[d].first, 0), t.shape()[d] - std::max<int64_t>(-pads[d].second, 0));
    return t.shrink(b);
  };
  if (neg) return after ? cropped(pad(pos, mode, value)) : cropped(*this).pad(pos, mode, value);
  Tensor x = *this;
  for (size_t d = 0; d < pads.size(); d++) {
    auto [b, a] = pads[d];
    if (!b && !a) continue;
    int64_t n = x.shape()[d];
    TG_CHECK(mode == PadMode::Replicate ? n > 0 : mode == PadMode::Reflect ? b < n && a < n : b <= n && a <= n, TG_ERROR_SHAPE,
             mode == PadMode::Reflect
                 ? strformat("%s: padding (%lld, %lld) should be less than the input size=%lld for dim=%zu", what, (long long)b, (long long)a, (long long)n, d)
             : mode == PadMode::Circular ? strformat("%s: padding value causes wrapping around more than once (padding (%lld, %lld), dim %zu of size %lld)", what,
                                                     (long long)b, (long long)a, d, (long long)n)
                                         : strformat("%s: can't replicate dim %zu of size 0", what, d));
    auto slice = [&](int64_t s, int64_t e) {
      std::vector<std::pair<int64_t, int64_t>> bounds;
      for (int64_t i = 0; i < x.ndim(); i++) bounds.emplace_back(0, x.shape()[size_t(i)]);
      bounds[d] = {s, e};
      return x.shrink(bounds);
    };
    auto along = [&](const Tensor& t, int64_t len) {  // a size-1 slice repeated len times along d
      Shape s = t.shape();
      s[d] = len;
      return t.expand(s);
    };
    std::vector<Tensor> parts;
    if (b) parts.push_back(mode == PadMode::Reflect ? slice(1, b + 1).flip({int64_t(d)}) : mode == PadMode::Replicate ? along(slice(0, 1), b) : slice(n - b, n));
    parts.push_back(x);
    if (a) parts.push_back(mode == PadMode::Reflect ? slice(n - 1 - a, n - 1).flip({int64_t(d)}) : mode == PadMode::Replicate ? along(slice(n - 1, n), a) : slice(0, a));
    x = Tensor::cat(parts, int64_t(d));
  }
  return x;
}

}  // namespace tg

namespace tg {

// pieces of the given sizes along dim (they must add up to its size)
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t dim) const {
  TG_CHECK(ndim() > 0, TG_ERROR_SHAPE, "split: a 0-d tensor can't be split");
  int64_t d = resolve_axis(dim, "split"), total = 0;
  for (auto s : sizes) {
    TG_CHECK(s >= 0 && !__builtin_add_overflow(total, s, &total), TG_ERROR_SHAPE, "split: negative or too large sizes");
  }
  TG_CHECK(total == shape()[size_t(d)], TG_ERROR_SHAPE,
           strformat("split: sizes add up to %lld, dim %lld has size %lld", (long long)total, (long long)d, (long long)shape()[size_t(d)]));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (auto s : sizes) {
    std::vector<std::pair<int64_t, int64_t>> b;
    for (auto x : shape()) b.emplace_back(0, x);
    b[size_t(d)] = {at, at + s};
    out.push_back(shrink(b));
    at += s;
  }
  return out;
}
// ceil(n / chunks) per piece, the last one smaller, as torch and tinygrad
int64_t Tensor::chunk_step(int64_t chunks, int64_t dim) const {
  TG_CHECK(chunks > 0, TG_ERROR_INVALID_ARGUMENT, "chunk: chunks must be positive");
  TG_CHECK(ndim() > 0, TG_ERROR_SHAPE, "chunk: a 0-d tensor can't be chunked");
  int64_t n = shape()[size_t(resolve_axis(dim, "chunk"))];
  return std::max<int64_t>(1, n / chunks + (n % chunks != 0));
}
int64_t Tensor::chunk_count(int64_t chunks, int64_t dim) const {
  int64_t step = chunk_step(chunks, dim), n = shape()[size_t(resolve_axis(dim, "chunk"))];
  return std::max<int64_t>(1, n / step + (n % step != 0));
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  int64_t step = chunk_step(chunks, dim), n = shape()[size_t(resolve_axis(dim, "chunk"))];
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < n; at += step) sizes.push_back(std::min(step, n - at));
  if (sizes.empty()) sizes.push_back(0);
  return split(sizes, dim);
}
// a 1-d tensor on the diagonal of a square matrix: each element followed by n zeros, viewed as (n, n+1), cut to n x n
Tensor Tensor::diag() const {
  TG_CHECK(ndim() == 1, TG_ERROR_SHAPE, "diag: needs a 1-d tensor, got shape " + shape_str(shape()));
  int64_t n = shape()[0];
  return unsqueeze(-1).pad({{0, 0}, {0, n}}).flatten().shrink({{0, n * n}}).reshape({n, n});
}
// the main diagonal of the last two dims (square or not): flatten them, keep every (cols + 1)-th element
Tensor Tensor::diagonal() const {
  TG_CHECK(ndim() >= 2, TG_ERROR_SHAPE, "diagonal: needs at least 2 dims, got shape " + shape_str(shape()));
  int64_t r = shape()[shape().size() - 2], c = shape().back(), m = std::min(r, c);
  Tensor x = flatten(-2, -1);
  std::vector<std::pair<int64_t, int64_t>> p(size_t(x.ndim()), {0, 0}), b;
  p.back() = {0, m * (c + 1) - r * c > 0 ? m * (c + 1) - r * c : 0};
  x = x.pad(p);
  for (auto s : x.shape()) b.emplace_back(0, s);
  b.back() = {0, m * (c + 1)};
  Shape s(x.shape().begin(), x.shape().end() - 1);
  s.push_back(m), s.push_back(c + 1);
  x = x.shrink(b).reshape(s);
  b.clear();
  for (auto v : x.shape()) b.emplace_back(0, v);
  b.back() = {0, 1};
  s.pop_back();
  return x.shrink(b).reshape(s);
}
std::vector<Tensor> Tensor::meshgrid(const std::vector<Tensor>& ts, bool xy) {
  TG_CHECK(!ts.empty(), TG_ERROR_INVALID_ARGUMENT, "meshgrid: no tensors");
  Shape full;
  for (auto& t : ts) {
    TG_CHECK(t.ndim() <= 1, TG_ERROR_SHAPE, "meshgrid: needs 0-d or 1-d tensors, got shape " + shape_str(t.shape()));
    full.push_back(t.numel());
  }
  if (xy && full.size() >= 2) std::swap(full[0], full[1]);
  std::vector<Tensor> out;
  for (size_t i = 0; i < ts.size(); i++) {
    size_t at = xy && ts.size() >= 2 && i < 2 ? 1 - i : i;
    Shape s(full.size(), 1);
    s[at] = full[at];
    out.push_back(ts[i].reshape(s).expand(full));
  }
  return out;
}
// windows of `size` every `step` along dim, as a new last dim (torch's unfold)
Tensor Tensor::unfold(int64_t dim, int64_t size, int64_t step) const {
  int64_t d = resolve_axis(dim, "unfold");
  TG_CHECK(ndim() > 0, TG_ERROR_SHAPE, "unfold: a 0-d tensor has no dim to unfold");
  TG_CHECK(size >= 0 && size <= shape()[size_t(d)] && step > 0, TG_ERROR_SHAPE,
           strformat("unfold: size %lld and step %lld for dim %lld of size %lld", (long long)size, (long long)step, (long long)d, (long long)shape()[size_t(d)]));
  if (size == 0) {
    Shape s = shape();
    s[size_t(d)] = shape()[size_t(d)] / step + 1, s.push_back(0);
    return Tensor::full(s, 0, dtype(), device());
  }
  Tensor w = transpose(d, -1).pool({size}, {step}, {1});  // (..., windows, size) with dim d moved last
  return w.transpose(d, -2);
}

}  // namespace tg
