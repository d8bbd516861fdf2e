// The Ops enum: one IR for tensor graphs and kernels, as in tinygrad's uop/__init__.py.
#pragma once
#include <cstdint>
#include <string_view>

namespace tg {

#define TG_OPS(X)                                                                                                            \
  /* graph structure */ X(NOOP) X(SINK) X(UNIQUE) X(DEVICE) X(KERNEL) X(GROUP) X(AFTER) X(CUSTOM) X(CUSTOMI)                \
  /* tensor level */ X(BUFFER) X(BUFFER_VIEW) X(PARAM) X(CONTIGUOUS) X(CONTIGUOUS_BACKWARD) X(DETACH) X(COPY) X(ASSIGN)     \
  X(CUSTOM_BACKWARD) X(MSELECT) X(MSTACK) X(MULTI) X(ALLREDUCE) X(SCATTER)                                                 \
  /* movement */ X(RESHAPE) X(PERMUTE) X(EXPAND) X(PAD) X(SHRINK) X(FLIP)                                                  \
  X(REDUCE_AXIS) X(REDUCE) X(DEFINE_VAR) X(BIND) X(CONST) X(VCONST)                                                         \
  /* kernel level */ X(DEFINE_GLOBAL) X(DEFINE_LOCAL) X(DEFINE_REG) X(RANGE) X(END) X(INDEX) X(LOAD) X(STORE) X(GEP)        \
  X(VECTORIZE) X(CAST) X(BITCAST) X(SPECIAL) X(BARRIER) X(IF) X(ENDIF) X(WMMA) X(UNROLL) X(CONTRACT)                        \
  /* unary ALU */ X(EXP2) X(LOG2) X(SIN) X(SQRT) X(RECIPROCAL) X(NEG) X(TRUNC)                                              \
  /* binary ALU */ X(ADD) X(SUB) X(MUL) X(IDIV) X(FDIV) X(MOD) X(MAX) X(CMPLT) X(CMPNE) X(CMPEQ) X(XOR) X(OR) X(AND) X(SHL)  \
  X(SHR) X(POW) X(THREEFRY)                                                                                                 \
  /* ternary ALU */ X(WHERE) X(MULACC)                                                                                       \
  /* a target's instruction, made by late lowering */ X(DOT4) X(DOT2)

enum class Ops : uint8_t {
#define TG_OP_ENUM(x) x,
  TG_OPS(TG_OP_ENUM)
#undef TG_OP_ENUM
      COUNT_
};
inline constexpr int kNumOps = int(Ops::COUNT_);

std::string_view op_name(Ops op);

// Groups of ops (tinygrad's GroupOp).
namespace GroupOp {
constexpr bool unary(Ops o) { return o >= Ops::EXP2 && o <= Ops::TRUNC; }
constexpr bool binary(Ops o) { return o >= Ops::ADD && o <= Ops::THREEFRY; }
constexpr bool ternary(Ops o) { return o == Ops::WHERE || o == Ops::MULACC; }
constexpr bool alu(Ops o) { return unary(o) || binary(o) || ternary(o); }
constexpr bool movement(Ops o) { return o >= Ops::RESHAPE && o <= Ops::FLIP; }
constexpr bool commutative(Ops o) {
  return o == Ops::ADD || o == Ops::MUL || o == Ops::MAX || o == Ops::CMPNE || o == Ops::CMPEQ || o == Ops::XOR || o == Ops::AND ||
         o == Ops::OR;
}
constexpr bool comparison(Ops o) { return o == Ops::CMPLT || o == Ops::CMPNE || o == Ops::CMPEQ; }
// idempotent: x op x == x
constexpr bool idempotent(Ops o) { return o == Ops::OR || o == Ops::AND || o == Ops::MAX; }
constexpr int alu_arity(Ops o) { return unary(o) ? 1 : binary(o) ? 2 : ternary(o) ? 3 : -1; }
}  // namespace GroupOp

}  // namespace tg
