// Symbolic: the algebraic simplifier (constant folding, identities, reassociation, divmod by value range, comparisons).
#pragma once
#include "uop/pattern.h"

namespace tg {
const PatternMatcher& symbolic_simple();  // constant folding and identities, safe for floats
const PatternMatcher& symbolic();         // symbolic_simple + integer reassociation, divmod folding, comparison folding
// floor/ceil helpers for integer bounds
inline int64_t floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
inline int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(-a, b); }
}  // namespace tg
