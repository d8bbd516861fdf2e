// Symbolic: the algebraic simplifier (constant folding, identities, reassociation, divmod by value range, comparisons).
#pragma once
#include "uop/pattern.h"

namespace tg {
const PatternMatcher& symbolic_simple();  // constant folding and identities, safe for floats
const PatternMatcher& symbolic();         // symbolic_simple + integer reassociation, divmod folding, comparison folding
// While one lives on this thread, UOp::simplify remembers its results: the scheduler simplifies the same gates and
// indices for every kernel of a repeated block (ResNet's stages). They are let go with it, so no node outlives its users.
class SimplifyMemo {
 public:
  SimplifyMemo();
  ~SimplifyMemo();
  SimplifyMemo(const SimplifyMemo&) = delete;
  SimplifyMemo& operator=(const SimplifyMemo&) = delete;

 private:
  UOpMap<UOpRef> memo_;
  SimplifyMemo* prev_;
  friend class UOp;
};
// floor/ceil helpers for integer bounds
inline int64_t floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
inline int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(-a, b); }
}  // namespace tg
