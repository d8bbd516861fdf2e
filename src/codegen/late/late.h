// Late lowering: the rewrite stages between an optimized kernel AST and the linearizer, in get_program's order, each in
// the file named before it.
#pragma once
#include "renderer/renderer.h"
#include "uop/pattern.h"

namespace tg {

// gpudims.cpp: a THREAD range becomes the kernel's core_id variable; `threads` gets its size (1: none).
UOpRef lower_threads(const UOpRef& ast, int64_t* threads);
// pack.cpp: PACK: a marked input is copied into a contiguous scratch array once per iteration of the output loops it
// uses, and read from there; on a GPU target the work-group copies it into local memory together, once per step of its
// outermost reduce loop.
UOpRef lower_packs(const UOpRef& ast, const Target& target);
// pack.cpp: where a GPU's staged copy of a packed input's panel sits in local memory (PACK checks it fits)
struct StagedPanel {
  UOpRef step;                   // the outermost reduce loop the read uses (null: none): one copy per iteration of it
  UOps ranges;                   // the panel's ranges (the read's but the output loops and the step), outermost first
  std::vector<int64_t> strides;  // theirs in the array: row-major, the innermost row padded
  int64_t elems = 1, size = 1;   // elements copied per step; elements the array holds
};
StagedPanel staged_panel(const UOpRef& load);
// group_reduce.cpp: GROUP/GROUPTOP reduces: partial results per work-item through local memory and a barrier, then
// reduced again.
UOpRef lower_group_reduces(const UOpRef& ast);
// gpudims.cpp: GPU targets: GLOBAL and LOCAL ranges become work-group and work-item ids; `global`/`local` get the grid.
UOpRef add_gpudims(const UOpRef& ast, const Target& t, std::array<UOpRef, 3>& global, std::array<UOpRef, 3>& local);
// expander.cpp: UPCAST/UNROLL ranges become vector lanes. Values compute as vectors; index arithmetic stays scalar per
// lane so that loads and stores fold into vector memory operations; an UNROLLed reduce keeps one accumulator lane per
// unrolled element and combines them after its loop.
UOpRef expand(const UOpRef& ast);
// dot.cpp: on a target with DOT4 (Renderer::native_op), four int32 products of uint8 and int8 lanes added into each lane
// (an unrolled reduce of a quantized matmul) become one DOT4.
UOpRef fuse_dot_products(const UOpRef& ast, const Renderer& ren);
// transcendental.cpp: EXP2, LOG2 and SIN on floats the renderer has no native form of (Renderer::native_op) become
// polynomials over plain ALU ops, lane-wise (16-bit floats through float32), accurate to a few ulp.
UOpRef decompose_transcendentals(const UOpRef& ast, const Renderer& ren);
// devectorize.cpp: memory operations of a lane list become vector loads/stores of runs of consecutive addresses; vector
// values the renderer can't hold are split into lanes (split_lanes: one such op as a VECTORIZE of its lanes, or null).
UOpRef devectorize(const UOpRef& ast, const Renderer& ren);
UOpRef split_lanes(const UOp* n, const Renderer& ren);
// reduce.cpp: each REDUCE becomes an accumulator (DEFINE_REG) set to the identity where its scope opens, updated inside
// its loops (END) and read after them; a vector the renderer can't hold in a register is one scalar accumulator per
// lane, and a sum of WMMAs accumulates in the instruction. A void REDUCE (a PACK's copy) becomes its loops.
UOpRef reduce_to_acc(const UOpRef& ast, const Renderer& ren);
double reduce_identity(Ops op, DType dt);
// semantics.cpp: on a target with fused multiply-add (Target::fma), a float a*b+c becomes MULACC, one rounding.
UOpRef fuse_multiply_adds(const UOpRef& ast, const Renderer& ren);
// semantics.cpp: what every renderer means by an op, as rewrites: integer division defined everywhere, shifts in C's
// widths, MAX that NaN wins. A renderer then only spells ops.
UOpRef lower_semantics(const UOpRef& ast, const Renderer& ren);

// gpudims.cpp: the row-major position of `rngs`' current iteration (the first most significant), and the number of
// positions: a slot in a local array (GROUP reduces' partial results, PACK's panels).
std::pair<UOpRef, int64_t> row_major(const UOps& rngs);

}  // namespace tg
