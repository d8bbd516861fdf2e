// Optimization actions over a kernel's ranges (tinygrad's Opt): a kernel AST plus a list of Opts is a reproducible
// description of a program. Heuristics choose a list by hand; BEAM searches over exactly these lists.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "helpers.h"
#include "uop/uop.h"

namespace tg {

// What a RANGE is for: arg = [path..., AxisType]. The path orders ranges: a split keeps the original's path and appends
// 0 for the more significant part and 1 for the less, so loops and vector lanes follow memory order.
enum class AxisType : int64_t { GLOBAL = 0, REDUCE = 1, UPCAST = 2, UNROLL = 3, LOCAL = 4, GROUP_REDUCE = 5, THREAD = 6, WARP = 7 };
AxisType range_kind(const UOp* r);
std::vector<int64_t> range_path(const UOp* r);
char axis_letter(AxisType t);
// A kernel whose AST states its own loop (an END among the SINK's sources: a scatter's stores, in order): its order is
// its meaning, so no action applies to it and BEAM has nothing to search.
bool sequential_kernel(const UOpRef& ast);

// MERGE (an action for CPUs, not tinygrad's): one axis of a x b iterations replaces two adjacent global axes, so a vector
// can span the rows of an image whose width its lanes don't divide (56 x 56 -> 3136 = 196 vectors of 16).
// PACK (also for CPUs): an input is copied, once per iteration of the output loops it depends on, into a contiguous
// scratch array that the inner loops then read (a matmul's panel of B), as a BLAS packs its operands.
enum class OptOps : uint8_t { TC, UPCAST, UNROLL, LOCAL, THREAD, GROUP, GROUPTOP, NOLOCALS, PADTO, SWAP, MERGE, PACK };
std::string_view optops_name(OptOps op);

struct Opt {
  OptOps op;
  int64_t axis = -1;            // -1: none (NOLOCALS); PACK: which input, counting the loaded buffers in argument order
  int64_t arg = 0;              // amount (0: the whole axis), PADTO's multiple, SWAP's other axis (MERGE, PACK: unused)
  std::array<int64_t, 3> tc{};  // TC: (tc_select, tc_opt, use_tensor_cores)
  bool operator==(const Opt&) const = default;
  std::string str() const;  // tinygrad's repr: Opt(op=OptOps.UPCAST, axis=0, arg=4)
};
std::string opts_str(const std::vector<Opt>& opts);  // "[Opt(...), Opt(...)]"
std::vector<Opt> parse_opts(const std::string& s);   // the inverse; TG_ERROR_INVALID_ARGUMENT naming what is wrong

// An action that does not apply to this kernel on this target: heuristics and BEAM skip it, a user sees the reason.
struct OptError : Error {
  explicit OptError(const std::string& m) : Error(TG_ERROR_INVALID_ARGUMENT, "opt: " + m) {}
};
inline void opt_check(bool cond, const std::string& msg) {
  if (!cond) throw OptError(msg);
}

}  // namespace tg
