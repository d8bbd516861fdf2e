// tg_tensor_shape_vars and tg_tensor_at_binding: the symbolic shape of a tensor (what the bindings' Tensor.shape
// returns for a dim bound to a Variable) and the plain-shaped tensor at the binding, refused inside a tg_jit function.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "capi_handles.h"
#include "tinygrad.h"

namespace {
using E = Owned<tg_expr, tg_expr_retain, tg_expr_release>;
T from(const std::vector<float>& v, std::vector<int64_t> shape) {
  return tg_tensor_from_data(v.data(), v.size() * sizeof(float), TG_FLOAT32, shape.data(), shape.size(), nullptr);
}
std::vector<int64_t> shape(tg_tensor* t) {
  std::vector<int64_t> s(size_t(tg_tensor_ndim(t)));
  EXPECT_EQ(tg_tensor_shape(t, s.data(), s.size()), TG_OK);
  return s;
}
std::string render(tg_expr* e) {
  char buf[64];
  EXPECT_GE(tg_expr_render(e, buf, sizeof buf), 0);
  return buf;
}
}  // namespace

TEST(SymbolicBind, ShapeVarsNameTheBoundDims) {
  std::vector<float> xv = randv(3 * 10, 1);
  T x = from(xv, {3, 10});
  E v = tg_expr_variable("i", 1, 10);
  T s = tg_tensor_shrink_var(x, 1, v, 4);
  ASSERT_TRUE(s.p) << tg_last_error_message();
  tg_expr* out[2] = {nullptr, nullptr};
  ASSERT_EQ(tg_tensor_shape_vars(s, out, 2), TG_OK) << tg_last_error_message();
  E d0 = out[0], d1 = out[1];
  EXPECT_EQ(d0.p, nullptr);  // a plain dim
  ASSERT_NE(d1.p, nullptr);
  EXPECT_EQ(render(d1), "i");
  int64_t lo = 0, hi = 0;
  ASSERT_EQ(tg_expr_bounds(d1, &lo, &hi), TG_OK);
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 10);
  // the Variable it gives binds the same dim again
  T r = tg_tensor_rebind(s, d1, 7);
  ASSERT_TRUE(r.p) << tg_last_error_message();
  EXPECT_EQ(shape(r), (std::vector<int64_t>{3, 7}));

  tg_expr* plain[2] = {nullptr, nullptr};
  ASSERT_EQ(tg_tensor_shape_vars(x, plain, 2), TG_OK);
  EXPECT_EQ(plain[0], nullptr);
  EXPECT_EQ(plain[1], nullptr);
  tg_expr* small[1] = {nullptr};
  EXPECT_EQ(tg_tensor_shape_vars(s, small, 1), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(tg_last_error_message(), "shape_vars"), nullptr);
  EXPECT_EQ(small[0], nullptr);  // nothing written on an error
  EXPECT_EQ(tg_tensor_shape_vars(nullptr, small, 1), TG_ERROR_INVALID_ARGUMENT);
}

TEST(SymbolicBind, AtBindingPadsAndFlipsTheBoundDim) {
  std::vector<float> xv = randv(3 * 10, 2);
  T x = from(xv, {3, 10});
  E v = tg_expr_variable("i", 1, 10);
  for (int64_t n : {1, 4, 9}) {
    T s = tg_tensor_shrink_var(x, 1, v, n);
    int64_t pads[4] = {0, 0, 0, 10 - n};
    T sp = tg_tensor_pad(s, pads, 2, -1.0);  // a bound dim padded grows by the padding, symbolically: i+(10-n)
    ASSERT_TRUE(sp.p) << tg_last_error_message();
    tg_expr* grown[2] = {nullptr, nullptr};
    ASSERT_EQ(tg_tensor_shape_vars(sp, grown, 2), TG_OK);
    EXPECT_EQ(grown[0], nullptr);
    ASSERT_NE(grown[1], nullptr);
    tg_expr_release(grown[1]);
    T plain = tg_tensor_at_binding(s);
    ASSERT_TRUE(plain.p) << tg_last_error_message();
    tg_expr* vars[2] = {nullptr, nullptr};
    ASSERT_EQ(tg_tensor_shape_vars(plain, vars, 2), TG_OK);
    EXPECT_EQ(vars[1], nullptr);
    T p = tg_tensor_pad(plain, pads, 2, -1.0);
    ASSERT_TRUE(p.p) << tg_last_error_message();
    ASSERT_EQ(shape(p), (std::vector<int64_t>{3, 10}));
    std::vector<float> got = data(p);
    EXPECT_EQ(data(sp), got);
    for (int64_t r = 0; r < 3; r++)
      for (int64_t c = 0; c < 10; c++) ASSERT_EQ(got[size_t(r * 10 + c)], c < n ? xv[size_t(r * 10 + c)] : -1.0f) << n << " " << r << "," << c;
    int64_t ax = 1;
    std::vector<float> f = data(T(tg_tensor_flip(plain, &ax, 1)));
    for (int64_t r = 0; r < 3; r++)
      for (int64_t c = 0; c < n; c++) ASSERT_EQ(f[size_t(r * n + c)], xv[size_t(r * 10 + (n - 1 - c))]);
  }
  T same = tg_tensor_at_binding(x);  // no Variable dims: the tensor itself
  ASSERT_TRUE(same.p);
  EXPECT_EQ(data(same), xv);
  EXPECT_EQ(tg_tensor_at_binding(nullptr), nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
}

namespace {
tg_status pad_fn(void*, tg_tensor* const* in, size_t, tg_tensor** out, size_t n_out) {
  T p = tg_tensor_at_binding(in[0]);  // would fix the binding into the capture
  TRY(p.p);
  if (n_out) out[0] = p.take();
  return TG_OK;
}
}  // namespace

TEST(SymbolicBind, AtBindingInsideAJitFunctionIsRefused) {
  T x = from(randv(3 * 10, 3), {3, 10});
  E v = tg_expr_variable("i", 1, 10);
  T s = tg_tensor_shrink_var(x, 1, v, 3);
  Jit j(pad_fn, nullptr);
  tg_tensor* in[1] = {s};
  EXPECT_EQ(tg_jit_call(j, in, 1, nullptr, 0), TG_ERROR_UNSUPPORTED);
  EXPECT_NE(std::strstr(tg_last_error_message(), "TinyJit"), nullptr) << tg_last_error_message();
}

// A cat along a bound dim: the size is the expression i+j (tinygrad's symbolic cat), each binding's values are the
// pieces', and every binding after the first reuses the compiled kernel.
TEST(SymbolicBind, CatAlongBoundDimsIsAnExpression) {
  std::vector<float> av = randv(10 * 3, 5), bv = randv(10 * 3, 6);
  T a = from(av, {10, 3}), b = from(bv, {10, 3});
  E i = tg_expr_variable("i", 1, 10), j = tg_expr_variable("j", 1, 10);
  uint64_t compiled = 0;
  int k = 0;
  for (auto [n, m] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {5, 1}, {10, 10}, {1, 7}}) {
    T x = tg_tensor_shrink_var(a, 0, i, n), y = tg_tensor_shrink_var(b, 0, j, m);
    tg_tensor* parts[3] = {x, y, x};
    T c = tg_tensor_cat(parts, 3, 0);
    ASSERT_TRUE(c.p) << tg_last_error_message();
    EXPECT_EQ(shape(c), (std::vector<int64_t>{2 * n + m, 3}));
    tg_expr* vars[2] = {nullptr, nullptr};
    ASSERT_EQ(tg_tensor_shape_vars(c, vars, 2), TG_OK);
    E d0 = vars[0];
    ASSERT_NE(d0.p, nullptr);
    EXPECT_EQ(vars[1], nullptr);
    int64_t val = 0;
    const char* names[2] = {"i", "j"};
    int64_t vals[2] = {n, m};
    ASSERT_EQ(tg_expr_eval(d0, names, vals, 2, &val), TG_OK);
    EXPECT_EQ(val, 2 * n + m);
    std::vector<float> got = data(c);
    ASSERT_EQ(got.size(), size_t((2 * n + m) * 3));
    for (int64_t r = 0; r < 2 * n + m; r++)
      for (int64_t q = 0; q < 3; q++) {
        float want = r < n ? av[size_t(r * 3 + q)] : r < n + m ? bv[size_t((r - n) * 3 + q)] : av[size_t((r - n - m) * 3 + q)];
        ASSERT_EQ(got[size_t(r * 3 + q)], want) << n << "," << m << " at " << r << "," << q;
      }
    tg_counters cs{sizeof(tg_counters)};
    ASSERT_EQ(tg_counters_get(&cs), TG_OK);
    if (k++ == 0) compiled = cs.compile_count;
    else EXPECT_EQ(cs.compile_count, compiled) << "binding " << n << "," << m << " compiled again";
  }
}

// tinygrad's attention mask over a KV cache: full((t, p+t), -inf).triu(p+1), the width an expression made directly
// (tg_tensor_shrink_expr binding p and t) and the diagonal a bound expression (tg_tensor_triu_tensor), checked at every
// (p, t) against the mask written out; misuse is an error naming the problem.
TEST(SymbolicBind, ExpressionDimsAndASymbolicDiagonal) {
  E p = tg_expr_variable("p", 0, 5), t = tg_expr_variable("t", 1, 10);
  E w = tg_expr_binary(TG_ADD, p, t);
  E one = tg_expr_const(1);
  E k = tg_expr_binary(TG_ADD, p, one);
  for (auto [pv, tv] : std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {3, 4}, {5, 10}, {2, 1}}) {
    const char* names[2] = {"p", "t"};
    int64_t vals[2] = {pv, tv};
    int64_t big[2] = {10, 15};
    T full = tg_tensor_full(big, 2, -INFINITY, TG_FLOAT32, nullptr);
    T rows = tg_tensor_shrink_var(full, 0, t, tv);
    T m = tg_tensor_shrink_expr(rows, 1, w, names, vals, 2);
    ASSERT_TRUE(m.p) << tg_last_error_message();
    EXPECT_EQ(shape(m), (std::vector<int64_t>{tv, pv + tv}));
    tg_expr* vars[2] = {nullptr, nullptr};
    ASSERT_EQ(tg_tensor_shape_vars(m, vars, 2), TG_OK);
    E v0 = vars[0], v1 = vars[1];
    EXPECT_EQ(render(v0), "t");
    EXPECT_EQ(render(v1), render(w));
    T kt = tg_tensor_from_expr(k, names, vals, 2, TG_INT32, nullptr);
    T mask = tg_tensor_triu_tensor(m, kt);
    ASSERT_TRUE(mask.p) << tg_last_error_message();
    std::vector<float> got = data(mask);
    ASSERT_EQ(got.size(), size_t(tv * (pv + tv)));
    for (int64_t r = 0; r < tv; r++)
      for (int64_t c = 0; c < pv + tv; c++) ASSERT_EQ(got[size_t(r * (pv + tv) + c)], c - r >= pv + 1 ? -INFINITY : 0.0f) << pv << "," << tv;
    std::vector<float> low = data(T(tg_tensor_tril_tensor(m, kt)));
    for (int64_t r = 0; r < tv; r++)
      for (int64_t c = 0; c < pv + tv; c++) ASSERT_EQ(low[size_t(r * (pv + tv) + c)], c - r <= pv + 1 ? -INFINITY : 0.0f);
  }
  T x = from(randv(10 * 15, 7), {10, 15});
  const char* only_p[1] = {"p"};
  int64_t three[1] = {3};
  EXPECT_EQ(T(tg_tensor_shrink_expr(x, 1, w, only_p, three, 1)).p, nullptr);  // t left unbound
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(tg_last_error_message(), "'t'"), nullptr);
  E ten = tg_expr_const(10);
  E shrinking = tg_expr_binary(TG_SUB, ten, t);  // 10 - t: largest at t's smallest
  const char* only_t[1] = {"t"};
  EXPECT_EQ(T(tg_tensor_shrink_expr(x, 1, shrinking, only_t, three, 1)).p, nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_UNSUPPORTED);
  EXPECT_NE(std::strstr(tg_last_error_message(), "grow"), nullptr);
  // sizes at the Variables' largest values that overflow int64 are errors, not wrapped layouts
  E huge = tg_expr_variable("h", 0, INT64_MAX);
  T xh = tg_tensor_shrink_var(x, 0, huge, 3);
  ASSERT_TRUE(xh.p) << tg_last_error_message();
  T tail = from(randv(2 * 15, 8), {2, 15});
  tg_tensor* parts[2] = {xh, tail};
  EXPECT_EQ(T(tg_tensor_cat(parts, 2, 0)).p, nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_SHAPE);
  E big = tg_expr_const(INT64_MAX / 2);
  E times = tg_expr_binary(TG_MUL, t, big);  // t * (2^62): past int64 at t = 10
  const char* tn[1] = {"t"};
  int64_t zero_t[1] = {1};
  EXPECT_EQ(T(tg_tensor_shrink_expr(x, 1, times, tn, zero_t, 1)).p, nullptr);
  EXPECT_NE(tg_last_error(), TG_OK);
  T fk = tg_tensor_full(nullptr, 0, 1.5, TG_FLOAT32, nullptr);
  EXPECT_EQ(T(tg_tensor_tril_tensor(x, fk)).p, nullptr);  // a float diagonal
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(T(tg_tensor_tril_tensor(x, nullptr)).p, nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
}

// A window at a symbolic offset (tg_tensor_shrink_at): read at every binding from one compiled graph, written through
// by an assign (a KV cache row), and refused where the start can leave the dim or isn't an expression of Variables.
TEST(SymbolicBind, WindowAtASymbolicOffset) {
  std::vector<float> xv = randv(8 * 3, 9);
  T x = from(xv, {8, 3});
  E p = tg_expr_variable("p", 0, 6);
  const char* names[1] = {"p"};
  uint64_t compiled = 0;
  for (int64_t at : {0, 3, 6, 1}) {
    int64_t vals[1] = {at};
    T w = tg_tensor_shrink_at(x, 0, p, names, vals, 1, 2);
    ASSERT_TRUE(w.p) << tg_last_error_message();
    EXPECT_EQ(shape(w), (std::vector<int64_t>{2, 3}));
    T s = tg_tensor_mul(w, w);  // a kernel of its own, the same for every p
    std::vector<float> got = data(s);
    for (size_t k = 0; k < 6; k++) ASSERT_EQ(got[k], xv[size_t(at * 3) + k] * xv[size_t(at * 3) + k]) << at << " " << k;
    tg_counters cs{sizeof(tg_counters)};
    ASSERT_EQ(tg_counters_get(&cs), TG_OK);
    if (at == 0) compiled = cs.compile_count;
    else EXPECT_EQ(cs.compile_count, compiled) << "p=" << at << " compiled again";
  }
  // writes through: rows at..at+1 of the buffer, the rest kept
  T cache = from(std::vector<float>(8 * 3, 0.f), {8, 3});
  for (int64_t at : {5, 0, 2}) {
    int64_t vals[1] = {at};
    T w = tg_tensor_shrink_at(cache, 0, p, names, vals, 1, 2);
    T v = from(std::vector<float>(6, float(at + 1)), {2, 3});
    ASSERT_EQ(tg_tensor_assign(w, v), TG_OK) << tg_last_error_message();
  }
  std::vector<float> c = data(cache), want(8 * 3, 0.f);
  for (int64_t at : {5, 0, 2})
    for (int64_t k = 0; k < 6; k++) want[size_t(at * 3 + k)] = float(at + 1);
  EXPECT_EQ(c, want);
  // refused: a start that can pass the dim, a window past the end at this binding, a plain number as the start
  E big = tg_expr_variable("q", 0, 9);
  const char* qn[1] = {"q"};
  int64_t one[1] = {1}, seven[1] = {7};
  EXPECT_EQ(T(tg_tensor_shrink_at(x, 0, big, qn, one, 1, 2)).p, nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_SHAPE);
  EXPECT_EQ(T(tg_tensor_shrink_at(x, 0, p, names, seven, 1, 2)).p, nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);  // 7 is outside p's range
  int64_t six[1] = {6};
  EXPECT_EQ(T(tg_tensor_shrink_at(x, 0, p, names, six, 1, 3)).p, nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_SHAPE);
  E c3 = tg_expr_const(3);
  EXPECT_EQ(T(tg_tensor_shrink_at(x, 0, c3, nullptr, nullptr, 0, 2)).p, nullptr);
  EXPECT_EQ(tg_last_error(), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(T(tg_tensor_shrink_at(nullptr, 0, p, names, one, 1, 2)).p, nullptr);
}
