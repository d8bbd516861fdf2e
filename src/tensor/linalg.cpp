// QR (Householder) and SVD (QR, then one-sided Jacobi) from tensor ops. Every step's shapes are the same and the
// step-dependent constants come in as small buffers, so the kernels of one step are the kernels of every step: a
// decomposition compiles a handful of programs however many steps it takes.
#include "tensor/linalg.h"

#include <vector>

#include "helpers.h"

namespace tg {
namespace {

void check_matrix(const Tensor& t, const char* fn) {
  TG_CHECK(t.ndim() >= 2, TG_ERROR_SHAPE, strformat("%s: expected two or more dimensions, got %lld", fn, (long long)t.ndim()));
  TG_CHECK(dtypes::is_float(t.dtype()), TG_ERROR_DTYPE, std::string(fn) + ": needs a float tensor, got " + t.dtype().name());
  const auto& sym = t.uop()->sym();
  TG_CHECK(sym.empty() || (!sym[sym.size() - 1] && !sym[sym.size() - 2]), TG_ERROR_SHAPE,
           std::string(fn) + ": the matrix dims must be plain sizes, not bound variables: " + sym_shape_str(t));
}

// t[..., a:b] along dim d (negative from the end)
Tensor slice(const Tensor& t, int64_t d, int64_t a, int64_t b) {
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (int64_t s : t.shape()) bounds.emplace_back(0, s);
  bounds[size_t(t.ndim() + d)] = {a, b};
  return t.shrink(bounds);
}

Shape with_matrix(const Shape& batch, int64_t r, int64_t c) {
  Shape s = batch;
  s.push_back(r), s.push_back(c);
  return s;
}

// a constant vector as a buffer of dtype dt (so a kernel reading it doesn't change with its values)
Tensor consts(const std::vector<float>& v, DType dt, const std::string& device) {
  return Tensor::from_data(v.data(), v.size() * sizeof(float), dtypes::float32, {int64_t(v.size())}, device).cast(dt);
}

}  // namespace

std::pair<Tensor, Tensor> qr(const Tensor& a) {
  check_matrix(a, "qr");
  const Shape& sh = a.shape();
  Shape batch(sh.begin(), sh.end() - 2);
  int64_t m = sh[sh.size() - 2], n = sh.back();
  DType dt = a.dtype();
  Tensor r = a, q = Tensor::eye(m, dt, a.device()).expand(with_matrix(batch, m, m));
  for (int64_t i = 0; i < std::min(m, n); i++) {
    // the reflector works on rows i.. of column i: `below` keeps them, `at` picks the pivot
    std::vector<float> below(size_t(m), 0.f), at(size_t(m), 0.f);
    for (int64_t k = i; k < m; k++) below[size_t(k)] = 1.f;
    at[size_t(i)] = 1.f;
    Tensor below_t = consts(below, dt, a.device()), at_t = consts(at, dt, a.device());
    Tensor col = slice(r, -1, i, i + 1).reshape(Shape(sh.begin(), sh.end() - 1));  // (..., m)
    Tensor x = col.mul(below_t);
    Tensor norm = x.square().sum({-1}, true).sqrt();
    Tensor x0 = col.mul(at_t).sum({-1}, true);
    Tensor one = x0.scalar_like(1), zero = x0.scalar_like(0);
    Tensor sgn = x0.ne(zero).where(x0.sign(), one), active = norm.ne(zero);
    Tensor u0 = x0.add(sgn.mul(norm));  // the pivot of x + sgn*|x|*e_i; |u0| >= |x| so dividing by it is safe when x != 0
    // v = (x + sgn*|x|*e_i) / u0 (v[i] = 1), w = tau*v with tau = 2 / (v.v) = sgn*u0/|x|; a zero column reflects nothing
    Tensor is_at = at_t.ne(at_t.scalar_like(0));
    Tensor v = is_at.where(u0, x).div(active.where(u0, one));
    Tensor w = active.where(sgn.mul(u0).div(active.where(norm, one)), zero).mul(v);
    Tensor vc = v.unsqueeze(-1), wc = w.unsqueeze(-1);  // (..., m, 1)
    r = r.sub(wc.matmul(vc.transpose(-2, -1).matmul(r))).contiguous().contiguous_backward();
    q = q.sub(q.matmul(vc).matmul(wc.transpose(-2, -1))).contiguous().contiguous_backward();
  }
  return {q, r.triu()};  // below the diagonal is zero up to rounding: make it exactly zero
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full_matrices) {
  check_matrix(a, "svd");
  const Shape& sh = a.shape();
  Shape batch(sh.begin(), sh.end() - 2);
  int64_t m = sh[sh.size() - 2], n = sh.back();
  bool tall = m >= n;
  int64_t big = tall ? m : n, k = tall ? n : m;
  DType dt = a.dtype();
  auto [q, rr] = qr(tall ? a : a.transpose(-2, -1));  // q (big, big), rr (big, k): the work is on its k x k top
  Tensor b = slice(rr, -2, 0, k);
  // B's and V's columns, stacked (rows 0..k B, rows k..2k V) so one rotation moves both; an odd k gets a zero column,
  // which no rotation touches (its products are all zero), so every round pairs all columns
  int64_t ke = k + (k % 2), h = ke / 2;
  Tensor w = Tensor::cat({b, Tensor::eye(k, dt, a.device()).expand(with_matrix(batch, k, k))}, -2);
  if (ke != k) {
    std::vector<std::pair<int64_t, int64_t>> pads(size_t(w.ndim()), {0, 0});
    pads.back() = {0, 1};
    w = w.pad(pads);
  }
  std::vector<int64_t> at(static_cast<size_t>(ke), 0);  // at[p]: which column of B sits at position p (k: the zero column)
  for (int64_t p = 0; p < ke; p++) at[size_t(p)] = p;
  // round-robin (circle) order: position p < h pairs with p + h; after each round position 0 stays and the others turn
  // one place, so every pair of columns meets once in ke - 1 rounds. Jacobi converges quadratically: 6 sweeps reach
  // float32 rounding for these sizes (tinygrad runs ~4).
  const int64_t sweeps = 6, rounds = ke == 2 ? sweeps : sweeps * (ke - 1);
  w = w.contiguous().contiguous_backward();
  for (int64_t round = 0; round < rounds && k > 0; round++) {
    Tensor lft = slice(w, -1, 0, h), rgt = slice(w, -1, h, ke);
    Tensor lb = slice(lft, -2, 0, k), rb = slice(rgt, -2, 0, k);
    Tensor alpha = lb.square().sum({-2}, true), beta = rb.square().sum({-2}, true), gamma = lb.mul(rb).sum({-2}, true);
    Tensor one = gamma.scalar_like(1), zero = gamma.scalar_like(0);
    // the rotation zeroing the pair's inner product: zeta = cot(2 theta), t = tan(theta), the smaller root
    Tensor rot = gamma.ne(zero);
    Tensor zeta = beta.sub(alpha).div(rot.where(gamma, one).mul(gamma.scalar_like(2)));
    Tensor t = zeta.ne(zero).where(zeta.sign(), one).div(zeta.abs().add(one.add(zeta.square()).sqrt()));
    t = rot.where(t, zero);
    Tensor c = one.add(t.square()).rsqrt(), s = c.mul(t);
    Tensor nl = c.mul(lft).sub(s.mul(rgt)), nr = s.mul(lft).add(c.mul(rgt));
    if (h == 1) {
      w = Tensor::cat({nl, nr}, -1).contiguous().contiguous_backward();
      continue;
    }
    // turn the circle: top = [t0, b0, t1 .. t(h-2)], bottom = [b1 .. b(h-1), t(h-1)]
    w = Tensor::cat({slice(nl, -1, 0, 1), slice(nr, -1, 0, 1), slice(nl, -1, 1, h - 1), slice(nr, -1, 1, h), slice(nl, -1, h - 1, h)}, -1)
            .contiguous().contiguous_backward();
    std::vector<int64_t> nxt;
    nxt.push_back(at[0]), nxt.push_back(at[size_t(h)]);
    for (int64_t p = 1; p < h - 1; p++) nxt.push_back(at[size_t(p)]);
    for (int64_t p = h + 1; p < ke; p++) nxt.push_back(at[size_t(p)]);
    nxt.push_back(at[size_t(h - 1)]);
    at = nxt;
  }
  if (ke != k) {  // drop the zero column wherever it went; the others' order doesn't matter, the sort below sets it
    int64_t p = 0;
    while (at[size_t(p)] != k) p++;
    w = Tensor::cat({slice(w, -1, 0, p), slice(w, -1, p + 1, ke)}, -1);
  }
  Tensor bf = slice(w, -2, 0, k), vf = slice(w, -2, k, 2 * k);
  // B's columns are now orthogonal: their norms are the singular values, the columns over their norms the vectors
  auto [sv, order] = bf.square().sum({-2}).sqrt().sort(-1, true);
  Tensor idx = order.unsqueeze(-2).expand(with_matrix(batch, k, k));
  Tensor u = bf.gather(-1, idx).div(sv.ne(sv.scalar_like(0)).where(sv, sv.scalar_like(1)).unsqueeze(-2));
  Tensor v = vf.gather(-1, idx);
  // the big side's vectors: Q's first k columns turned by u; the rest of Q completes the basis
  Tensor qk = slice(q, -1, 0, k), big_u = qk.matmul(u);
  if (full_matrices && big > k) big_u = Tensor::cat({big_u, slice(q, -1, k, big)}, -1);
  if (tall) return {big_u, sv, v.transpose(-2, -1)};
  return {v, sv, big_u.transpose(-2, -1)};
}

}  // namespace tg
