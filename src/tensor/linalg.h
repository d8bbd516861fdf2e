// Matrix decompositions composed from tensor ops (so they stay lazy, batch over leading dims and carry gradients).
#pragma once
#include <tuple>
#include <utility>

#include "tensor/tensor.h"

namespace tg {

// Householder QR of the last two dims (m, n): Q (m, m) orthogonal, R (m, n) upper triangular, Q @ R == t. The
// reflector's sign follows the pivot's (LAPACK's choice), reflecting the last pivot too (tinygrad's), so R's diagonal
// is nonzero-signed as tinygrad's.
std::pair<Tensor, Tensor> qr(const Tensor& t);
// SVD of the last two dims (m, n), k = min(m, n): U (m, m) or (m, k), S (k,) descending, Vh (n, n) or (k, n); QR first,
// then one-sided Jacobi rotations on the k x k triangle in parallel round-robin order.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& t, bool full_matrices = true);

}  // namespace tg
