// tg_tensor_qr and tg_tensor_svd through the C API, checked here in double precision: Q @ R and U @ diag(S) @ Vh give
// the input back, Q, U and Vh are orthonormal, R is upper triangular, S is descending and equals the singular values
// the test built the matrix from. float32 tolerances: 2e-5 * (1 + |a|max) for products, 1e-4 relative for S.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "capi_handles.h"
#include "nn_capi.h"
#include "tinygrad.h"

namespace {

using nn_capi::from;  // float32 tensors from vectors
using nn_capi::shape_of;
// (r x c) @ (c x k), row-major doubles
std::vector<double> mm(const std::vector<double>& a, const std::vector<double>& b, int64_t r, int64_t c, int64_t k) {
  std::vector<double> o(size_t(r * k), 0.0);
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++)
      for (int64_t l = 0; l < k; l++) o[size_t(i * k + l)] += a[size_t(i * c + j)] * b[size_t(j * k + l)];
  return o;
}
std::vector<double> tr(const std::vector<double>& a, int64_t r, int64_t c) {
  std::vector<double> o(a.size());
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) o[size_t(j * r + i)] = a[size_t(i * c + j)];
  return o;
}
std::vector<double> slice(const std::vector<float>& v, size_t at, size_t n) { return std::vector<double>(v.begin() + long(at), v.begin() + long(at + n)); }
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], tol) << what << " at " << i;
}
std::vector<double> eye(int64_t n) {
  std::vector<double> e(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; i++) e[size_t(i * n + i)] = 1;
  return e;
}
// an n x n orthogonal matrix: Gram-Schmidt of seeded random columns
std::vector<double> orthogonal(int64_t n, uint32_t seed) {
  auto r = randv(size_t(n * n), seed);
  std::vector<double> q(size_t(n * n));
  for (int64_t j = 0; j < n; j++) {
    std::vector<double> c(static_cast<size_t>(n), 0.0);
    for (int64_t i = 0; i < n; i++) c[size_t(i)] = r[size_t(i * n + j)];
    for (int64_t p = 0; p < j; p++) {
      double d = 0;
      for (int64_t i = 0; i < n; i++) d += c[size_t(i)] * q[size_t(i * n + p)];
      for (int64_t i = 0; i < n; i++) c[size_t(i)] -= d * q[size_t(i * n + p)];
    }
    double nn = 0;
    for (double x : c) nn += x * x;
    for (int64_t i = 0; i < n; i++) q[size_t(i * n + j)] = c[size_t(i)] / std::sqrt(nn);
  }
  return q;
}

// qr of (batch, m, n): Q @ R == A, Q^T Q == I, R upper triangular, per matrix
void check_qr(int64_t batch, int64_t m, int64_t n, uint32_t seed) {
  auto av = randv(size_t(batch * m * n), seed);
  T a = from(av, batch > 1 ? std::vector<int64_t>{batch, m, n} : std::vector<int64_t>{m, n});
  tg_tensor* out[2] = {nullptr, nullptr};
  ASSERT_EQ(tg_tensor_qr(a, out), TG_OK) << tg_last_error_message();
  T q(out[0]), r(out[1]);
  std::vector<int64_t> qs{m, m}, rs{m, n};
  if (batch > 1) qs.insert(qs.begin(), batch), rs.insert(rs.begin(), batch);
  ASSERT_EQ(shape_of(q), qs);
  ASSERT_EQ(shape_of(r), rs);
  auto qv = data(q), rv = data(r);
  std::string at = std::to_string(m) + "x" + std::to_string(n);
  for (int64_t b = 0; b < batch; b++) {
    auto qb = slice(qv, size_t(b * m * m), size_t(m * m)), rb = slice(rv, size_t(b * m * n), size_t(m * n)), ab = slice(av, size_t(b * m * n), size_t(m * n));
    expect_close(mm(qb, rb, m, m, n), ab, 2e-5 * 8, "Q@R " + at);
    expect_close(mm(tr(qb, m, m), qb, m, m, m), eye(m), 2e-5, "Q^T Q " + at);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < std::min(i, n); j++) EXPECT_EQ(rb[size_t(i * n + j)], 0.0) << "R below the diagonal " << at;
  }
}

TEST(Linalg, QrSquareTallWideBatched) {
  check_qr(1, 4, 4, 1);
  check_qr(1, 7, 3, 2);
  check_qr(1, 3, 7, 3);
  check_qr(3, 5, 4, 4);
}

// A = U0 diag(s0) V0^T built here (m >= n given; wide by transposing), so S is known exactly
void check_svd(int64_t m, int64_t n, bool wide, bool full, uint32_t seed) {
  std::vector<double> s0{5.0, 3.0, 2.0, 1.25, 0.5, 0.125};
  s0.resize(size_t(n));
  auto u0 = orthogonal(m, seed), v0 = orthogonal(n, seed + 100);
  std::vector<double> sd(size_t(m * n), 0.0);
  for (int64_t i = 0; i < n; i++) sd[size_t(i * n + i)] = s0[size_t(i)];
  auto ad = mm(mm(u0, sd, m, m, n), tr(v0, n, n), m, n, n);  // (m, n)
  int64_t rows = m, cols = n;
  if (wide) ad = tr(ad, m, n), rows = n, cols = m;
  std::vector<float> af(ad.begin(), ad.end());
  T a = from(af, {rows, cols});
  tg_tensor* out[3] = {nullptr, nullptr, nullptr};
  ASSERT_EQ(tg_tensor_svd(a, full ? 1 : 0, out), TG_OK) << tg_last_error_message();
  T u(out[0]), s(out[1]), vh(out[2]);
  int64_t k = n, ucols = full ? rows : k, vrows = full ? cols : k;
  std::string at = std::to_string(rows) + "x" + std::to_string(cols) + (full ? " full" : " reduced");
  ASSERT_EQ(shape_of(u), (std::vector<int64_t>{rows, ucols}));
  ASSERT_EQ(shape_of(s), (std::vector<int64_t>{k}));
  ASSERT_EQ(shape_of(vh), (std::vector<int64_t>{vrows, cols}));
  auto uv = data(u), sv = data(s), vv = data(vh);
  for (int64_t i = 0; i < k; i++) EXPECT_NEAR(sv[size_t(i)], s0[size_t(i)], 1e-4 * s0[0]) << "S " << at;
  std::vector<double> ud(uv.begin(), uv.end()), vd(vv.begin(), vv.end()), sdiag(size_t(ucols * vrows), 0.0);
  for (int64_t i = 0; i < k; i++) sdiag[size_t(i * vrows + i)] = sv[size_t(i)];
  expect_close(mm(mm(ud, sdiag, rows, ucols, vrows), vd, rows, vrows, cols), ad, 2e-5 * 6, "U S Vh " + at);
  expect_close(mm(tr(ud, rows, ucols), ud, ucols, rows, ucols), eye(ucols), 2e-5, "U^T U " + at);
  expect_close(mm(vd, tr(vd, vrows, cols), vrows, cols, vrows), eye(vrows), 2e-5, "Vh Vh^T " + at);
}

TEST(Linalg, SvdKnownSingularValues) {
  check_svd(4, 4, false, true, 1);
  check_svd(6, 5, false, true, 2);   // odd k: a padding column in the rotations
  check_svd(6, 3, true, true, 3);    // wide 3x6
  check_svd(6, 4, false, false, 4);  // reduced shapes
  check_svd(5, 3, true, false, 5);
  check_svd(3, 1, false, true, 6);   // one column
}

TEST(Linalg, SvdBatchedMatchesEachMatrix) {
  auto av = randv(2 * 3 * 4, 7);
  T a = from(av, {2, 3, 4});
  tg_tensor* out[3] = {};
  ASSERT_EQ(tg_tensor_svd(a, 0, out), TG_OK) << tg_last_error_message();
  T u(out[0]), s(out[1]), vh(out[2]);
  ASSERT_EQ(shape_of(u), (std::vector<int64_t>{2, 3, 3}));
  ASSERT_EQ(shape_of(vh), (std::vector<int64_t>{2, 3, 4}));
  auto sb = data(s);
  for (int64_t b = 0; b < 2; b++) {
    std::vector<float> one(av.begin() + b * 12, av.begin() + (b + 1) * 12);
    T a1 = from(one, {3, 4});
    tg_tensor* o1[3] = {};
    ASSERT_EQ(tg_tensor_svd(a1, 0, o1), TG_OK) << tg_last_error_message();
    T u1(o1[0]), s1(o1[1]), v1(o1[2]);
    auto s1v = data(s1);
    for (size_t i = 0; i < 3; i++) EXPECT_NEAR(sb[size_t(b * 3) + i], s1v[i], 1e-5) << "batch " << b;
    for (size_t i = 0; i + 1 < 3; i++) EXPECT_GE(s1v[i], s1v[i + 1]);
  }
}

TEST(Linalg, ZeroColumnGivesNoNan) {
  std::vector<float> av{1, 0, 2, 3, 0, -1, 0.5f, 0, 4, 2, 0, 1};  // (4, 3), column 1 zero
  T a = from(av, {4, 3});
  tg_tensor* qo[2] = {};
  ASSERT_EQ(tg_tensor_qr(a, qo), TG_OK) << tg_last_error_message();
  T q(qo[0]), r(qo[1]);
  tg_tensor* so[3] = {};
  ASSERT_EQ(tg_tensor_svd(a, 1, so), TG_OK) << tg_last_error_message();
  T u(so[0]), s(so[1]), vh(so[2]);
  for (tg_tensor* t : {q.p, r.p, u.p, s.p, vh.p})
    for (float x : data(t)) EXPECT_TRUE(std::isfinite(x));
  auto sv = data(s);
  EXPECT_NEAR(sv[2], 0.0, 1e-6);
  auto uv = data(u), vv = data(vh);
  std::vector<double> ud(uv.begin(), uv.end()), vd(vv.begin(), vv.end()), sd(12, 0.0);
  for (int i = 0; i < 3; i++) sd[size_t(i * 3 + i)] = sv[size_t(i)];
  expect_close(mm(mm(ud, sd, 4, 4, 3), vd, 4, 3, 3), std::vector<double>(av.begin(), av.end()), 1e-5 * 8, "U S Vh");
}

TEST(Linalg, Errors) {
  tg_tensor* out[3] = {};
  T v = from({1, 2, 3}, {3});
  EXPECT_EQ(tg_tensor_qr(v, out), TG_ERROR_SHAPE);
  EXPECT_NE(std::string(tg_last_error_message()).find("qr"), std::string::npos) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_svd(v, 1, out), TG_ERROR_SHAPE);
  EXPECT_NE(std::string(tg_last_error_message()).find("svd"), std::string::npos) << tg_last_error_message();
  int32_t iv[4] = {1, 2, 3, 4};
  int64_t sh[2] = {2, 2};
  T i(tg_tensor_from_data(iv, sizeof(iv), TG_INT32, sh, 2, nullptr));
  EXPECT_EQ(tg_tensor_qr(i, out), TG_ERROR_DTYPE);
  EXPECT_NE(std::string(tg_last_error_message()).find("qr"), std::string::npos) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_svd(i, 0, out), TG_ERROR_DTYPE);
  EXPECT_EQ(tg_tensor_qr(nullptr, out), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tg_last_error_message()).find("qr"), std::string::npos) << tg_last_error_message();
  EXPECT_EQ(tg_tensor_svd(nullptr, 1, out), TG_ERROR_INVALID_ARGUMENT);
  T m = from({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(tg_tensor_svd(m, 1, nullptr), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tg_last_error_message()).find("svd"), std::string::npos) << tg_last_error_message();
  for (tg_tensor* o : out) EXPECT_EQ(o, nullptr);  // nothing written on failure
}

}  // namespace
