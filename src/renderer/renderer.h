// Renderer: a target's facts (what the optimizer, heuristics and late lowering may use) and linear program -> source.
#pragma once
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {

// A tensor core (tinygrad's tc.py): D(M,N) = A(M,K) * B(K,N) + C(M,N), one instruction across a warp of `threads` lanes,
// each lane holding `elements` of A, of B and of C/D. `opts` splits N ("x0") and M ("x1") into size-2 pieces in order:
// "l" makes the piece a bit of the lane id, "u" a bit of a lane's element number; K splits into log2(K) unrolled pieces
// r0, r1, ... . `swizzle` tells, for A and for B, which piece each place (l0.., u0.., r0..) reads, so that the elements
// a lane holds are the ones the hardware's fragment layout gives it.
struct TensorCore {
  std::array<int64_t, 3> dims;  // N, M, K
  int64_t threads;
  std::array<int64_t, 3> elements;  // per lane: of A, of B, of C/D
  DType dtype_in, dtype_out;
  std::vector<std::string> opts;
  std::array<std::array<std::vector<std::string>, 3>, 2> swizzle;  // for A, B: (local, upcast, reduce) places

  std::string name() const;  // WMMA_8_16_16_float16_float32
  int64_t reduce_pieces() const;  // log2(K)
  int64_t element_pieces(size_t operand) const;  // log2(elements[operand]): A 0, B 1, C/D 2
  // the pieces in the order the TC action makes them: "u0", "l0", "l1", ... (opts), then "r0", "r1", ...
  std::vector<std::string> base_shape_str() const;
  // for A and B: where each piece of base_shape_str goes
  std::array<std::vector<size_t>, 2> permutes() const;
  // the pieces that number a lane's elements, most significant first: A, B and C/D take the first log2(elements) of them
  std::vector<std::string> upcast_pieces() const;
};
// NVIDIA's mma.sync shapes this project renders, by compute capability: m16n8k16 (sm_80: half or bfloat16 in, float or
// half out), m16n8k8 (sm_75: half in), and with tf32 (ALLOW_TF32=1) m16n8k8 tf32 (sm_80: float in and out)
std::vector<TensorCore> cuda_tensor_cores(int major, int minor, bool tf32);

// A linear program, the linearizer's output and what a renderer renders: RANGE opens a loop, END closes it; DEFINE_REG
// declares an accumulator, a STORE to it (or to an AFTER of it, which only orders) sets it and a LOAD reads it. Every
// other node is computed once where it is listed.
struct LinearProgram {
  std::string name;
  UOps globals;  // DEFINE_GLOBALs by arg index
  UOps uops;
  UOps vars;            // DEFINE_VARs in the order of the entry's `vars` array
  int64_t threads = 1;  // the kernel runs once for each value of its `core_id` var in [0, threads) (THREAD)
  int64_t local_items = 0;  // GPUs: the most work-items one work-group launches with (0: not known)
  uint64_t ops = 0;  // estimated arithmetic ops of one thread or work-item (get_program scales it to the whole launch)
  uint64_t mem = 0;  // bytes of the buffers it touches
  // loads to prefetch Target::prefetch_bytes past their address, each iteration of their loop (plan_prefetches)
  std::vector<const UOp*> prefetch;
  bool prefetched(const UOp* load) const { return std::find(prefetch.begin(), prefetch.end(), load) != prefetch.end(); }
};

struct Target {
  std::string device;
  bool has_local = false, has_shared = false, has_threads = false;
  std::array<int64_t, 3> global_max{0, 0, 0}, local_max{0, 0, 0};
  int64_t shared_max = 0;
  int64_t local_threads_max = 0;  // work-items in one work-group (GPUs)
  int warp_size = 1;              // work-items that execute together (32 on NVIDIA)
  int vector_bytes = 16;  // the widest vector register: loads, stores and ALU vectors are sized to it
  // a float a*b+c is one fused multiply-add (MULACC, one rounding) as tinygrad's CPU backends contract it: where the
  // hardware has the instruction it doubles the arithmetic a core retires (a multiply and an add share the same ports)
  bool fma = false;
  // the widest vector (bytes) of x86's VNNI vpdpbusd: each int32 lane plus the 4 products of its bytes of a uint8 and an
  // int8 vector (DOT4), 64 multiply-adds in one instruction where float needs 16 and a conversion of each byte; 0: none
  int dot4_bytes = 0;
  // the widest vector (bytes) of x86's AVX512-BF16 vdpbf16ps: each float lane plus the 2 products of its pair of bfloat
  // lanes (DOT2), 32 multiply-adds in one instruction where float32 does 16; 0: none
  int dot2_bytes = 0;
  // a reduce loop that streams a large buffer and computes much per byte (a quantized GEMV) asks for its bytes this far
  // ahead: the hardware prefetchers alone let the loads wait on memory between bursts of arithmetic; 0: never
  int prefetch_bytes = 0;
  // OpenCL has none of its own: with EMULATE=CUDA it takes CUDA's, computed by each warp's work-items together
  // through local memory in mma.sync's layout, so the tensor core lowering runs on any OpenCL device
  std::vector<TensorCore> tensor_cores;
};

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual const Target& target() const = 0;
  virtual std::string render(const LinearProgram& lp) const = 0;
  // whether a vector value of `dt` made by `op` is rendered as a vector; the devectorizer splits the rest into lanes
  virtual bool holds_vector(Ops op, DType dt) const = 0;
  // whether `op` on `dt` (scalar or vector) is rendered as is; late lowering decomposes the rest (EXP2/LOG2/SIN) and
  // makes a target instruction (DOT4, DOT2) only where it is
  virtual bool native_op(Ops op, DType dt) const { return op != Ops::DOT4 && op != Ops::DOT2; }
};

// the host CPU as a target; `threads`: the cores THREAD may spread a kernel over (the runtime device counts them)
Target cpu_target(const std::string& device, int64_t threads);

}  // namespace tg
