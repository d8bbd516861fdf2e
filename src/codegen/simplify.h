// Reduce simplification before the optimizer (tinygrad's codegen/simplify.py): a REDUCE over a range that the math can
// sum in closed form goes away. Indexing by a tensor (`sum_r where(idx == r, x[r], 0)`) becomes the gated load
// `idx in [0, N) ? x[idx] : 0`; `sum_r where(r < upper, val, 0)` becomes `clamp(upper, 0, N) * val` (the arange trick);
// a range the reduced value doesn't use becomes a multiplication by its size.
#pragma once
#include "uop/pattern.h"

namespace tg {

// The kernel AST with every collapsible REDUCE range summed away; the REDUCEs must list plain RANGEs (cleanup_ast).
UOpRef collapse_reduces(const UOpRef& ast);

}  // namespace tg
