// Tensor core descriptions: the names of a shape's pieces and the permutations that put each lane's elements where the
// hardware's fragment layout wants them (tinygrad's tc.py).
#include <algorithm>

#include "renderer/renderer.h"

namespace tg {

std::string TensorCore::name() const {
  return strformat("WMMA_%lld_%lld_%lld_", (long long)dims[0], (long long)dims[1], (long long)dims[2]) + std::string(dtype_in.name()) + "_" +
         std::string(dtype_out.name());
}
static int64_t log2_ceil(int64_t x) {
  int64_t n = 0;
  while ((int64_t(1) << n) < x) n++;
  return n;
}
int64_t TensorCore::reduce_pieces() const { return log2_ceil(dims[2]); }
int64_t TensorCore::element_pieces(size_t operand) const { return log2_ceil(elements[operand]); }
std::vector<std::string> TensorCore::base_shape_str() const {
  std::vector<std::string> out;
  int nu = 0, nl = 0;
  for (auto& o : opts) out.push_back(o[0] == 'u' ? "u" + std::to_string(nu++) : "l" + std::to_string(nl++));
  for (int64_t i = 0; i < reduce_pieces(); i++) out.push_back("r" + std::to_string(i));
  return out;
}
std::array<std::vector<size_t>, 2> TensorCore::permutes() const {
  // the places, in order: l0.., u0.., r0..; swizzle[i] names the piece each place reads
  std::vector<std::string> places;
  int64_t nl = std::count_if(opts.begin(), opts.end(), [](auto& o) { return o[0] == 'l'; }), nu = int64_t(opts.size()) - nl;
  for (int64_t i = 0; i < nl; i++) places.push_back("l" + std::to_string(i));
  for (int64_t i = 0; i < nu; i++) places.push_back("u" + std::to_string(i));
  for (int64_t i = 0; i < reduce_pieces(); i++) places.push_back("r" + std::to_string(i));
  auto shape = base_shape_str();
  std::array<std::vector<size_t>, 2> out;
  for (size_t ab = 0; ab < 2; ab++) {
    std::vector<std::string> from;
    for (auto& part : swizzle[ab]) from.insert(from.end(), part.begin(), part.end());
    TG_CHECK(from.size() == places.size(), TG_ERROR_INTERNAL, "tensor core " + name() + ": swizzle has the wrong size");
    for (size_t i = 0; i < shape.size(); i++) {
      size_t at = size_t(std::find(places.begin(), places.end(), shape[i]) - places.begin());
      out[ab].push_back(size_t(std::find(shape.begin(), shape.end(), from[at]) - shape.begin()));
    }
  }
  return out;
}
std::vector<std::string> TensorCore::upcast_pieces() const {
  std::vector<std::string> out;
  int64_t nu = std::count_if(opts.begin(), opts.end(), [](auto& o) { return o[0] == 'u'; });
  for (int64_t i = nu; i-- > 0;) out.push_back("u" + std::to_string(i));
  for (int64_t i = reduce_pieces(); i-- > 0;) out.push_back("r" + std::to_string(i));
  return out;
}

// PTX ISA, "Matrix Fragments for mma.m16n8k16": lane = 4 * groupID + threadID_in_group; A's element e is row
// groupID + 8 * (e/2 % 2), column 2 * threadID_in_group + e % 2 + 8 * (e/4); B's is row 2 * threadID_in_group + e % 2 + 8 * (e/2),
// column groupID; C's is row groupID + 8 * (e/2), column 2 * threadID_in_group + e % 2. m16n8k8 with 16-bit floats: A
// row groupID + 8 * (e/2), column 2 * threadID_in_group + e % 2; B row 2 * threadID_in_group + e % 2. m16n8k8 with tf32:
// A row groupID + 8 * (e % 2), column threadID_in_group + 4 * (e/2); B row threadID_in_group + 4 * e. The swizzles below
// are those layouts (the same as tinygrad's).
std::vector<TensorCore> cuda_tensor_cores(int major, int minor, bool tf32) {
  std::vector<TensorCore> out;
  int sm = major * 10 + minor;
  if (sm < 75) return out;  // mma.sync m16n8k8 needs sm_75 (Turing); older GPUs run without tensor cores
  const std::vector<std::string> opts{"u0", "l0", "l0", "l1", "l1", "l1", "u1"};
  if (sm >= 80)  // m16n8k16, and bfloat16, need sm_80 (Ampere)
    for (auto [in, acc] : std::vector<std::pair<DType, DType>>{{dtypes::float16, dtypes::float32}, {dtypes::bfloat16, dtypes::float32},
                                                                {dtypes::float16, dtypes::float16}})
      out.push_back(TensorCore{{8, 16, 16},
                               32,
                               {8, 4, 4},
                               in,
                               acc,
                               opts,
                               {{{{{"r1", "r2", "l2", "l3", "l4"}, {"u1", "r3"}, {"l0", "l1", "u0", "r0"}}},
                                 {{{"r1", "r2", "u0", "l0", "l1"}, {"r0", "r3"}, {"l2", "l3", "l4", "u1"}}}}}});
  for (DType acc : {dtypes::float32, dtypes::float16})
    out.push_back(TensorCore{{8, 16, 8},
                             32,
                             {4, 2, 4},
                             dtypes::float16,
                             acc,
                             opts,
                             {{{{{"r1", "r2", "l2", "l3", "l4"}, {"r0", "u1"}, {"l0", "l1", "u0"}}},
                               {{{"r1", "r2", "u0", "l0", "l1"}, {"u1", "r0"}, {"l2", "l3", "l4"}}}}}});
  // float32 products on tensor cores round the inputs to tf32 (10 mantissa bits): only when asked, as PyTorch
  if (sm >= 80 && tf32)
    out.push_back(TensorCore{{8, 16, 8},
                             32,
                             {4, 2, 4},
                             dtypes::float32,
                             dtypes::float32,
                             opts,
                             {{{{{"r0", "r1", "l2", "l3", "l4"}, {"u1", "r2"}, {"l0", "l1", "u0"}}},
                               {{{"r0", "r1", "u0", "l0", "l1"}, {"u1", "r2"}, {"l2", "l3", "l4"}}}}}});
  return out;
}

}  // namespace tg
