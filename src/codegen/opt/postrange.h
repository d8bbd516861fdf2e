// The optimizer's view of a kernel AST: its ranges (axes) in a canonical order, and the Opt actions that split and
// retype them. Every action rewrites the AST; the result is still a plain kernel AST that any later stage can read.
#pragma once
#include <algorithm>
#include <utility>
#include <vector>

#include "codegen/opt/opt.h"
#include "renderer/renderer.h"

namespace tg {

class Scheduler {
 public:
  Scheduler(UOpRef ast, const Renderer& ren);

  UOpRef ast;
  const Renderer* ren;
  std::vector<Opt> applied_opts;
  bool dont_use_locals = false;

  // the kernel's ranges of more than one iteration, ordered by (axis type position, path)
  UOps rngs() const;
  size_t shape_len() const { return rngs().size(); }
  // the axis number of range `r` (shape_len(): not one of the kernel's ranges)
  int64_t axis_of(const UOpRef& r) const {
    UOps all = rngs();
    return int64_t(std::find(all.begin(), all.end(), r) - all.begin());
  }
  std::vector<int64_t> full_shape() const;  // sizes (a symbolic size is its upper bound)
  std::vector<AxisType> axis_types() const;
  std::vector<int> axes_of(std::initializer_list<AxisType> types) const;
  std::vector<int> upcastable_dims() const;  // GLOBAL/LOCAL axes of constant size > 1
  std::vector<int> unrollable_dims() const;  // REDUCE/GROUP_REDUCE axes of constant size > 1
  int64_t upcast_size() const;               // lanes: product of UPCAST and UNROLL sizes
  UOps reduceops() const;
  UOps bufs() const;  // INDEX nodes: every buffer access
  UOps inputs() const;  // the LOADs of global buffers, by argument number (then order in the graph): PACK's numbering
  std::vector<int64_t> output_shape() const;
  std::string name(const std::string& base) const;  // base name with the optimized axes, e.g. r_64_4_16_32

  // Splits `rng` into (rng/amount, amount) and gives the `amount` part the type `t`: the new range is the less
  // significant part (top=false) or the more significant one (top=true). Returns (the rest, the new range).
  std::pair<UOpRef, UOpRef> shift_to(const UOpRef& rng, int64_t amount, AxisType t, bool top);
  // Applies one action, with tinygrad's legality checks; throws OptError (and leaves the kernel unchanged) if illegal.
  std::pair<UOpRef, UOpRef> apply_opt(const Opt& opt, bool append = true);
  // after TC: the N, M and K ranges left once the tensor core's pieces are split off (heuristics upcast them)
  UOps tc_axes;

 private:
  int real_axis(const Opt& opt) const;
  void pad_to(const UOpRef& rng, int64_t multiple);
  void pack(int64_t input, int64_t steps);
  void stage(int64_t input, const std::string& name, int64_t steps);
  UOps apply_tc(const Opt& opt);
  void set_ast(const UOpRef& a);
  // the ast's toposort and its sorted ranges, made once per ast: the heuristics ask for rngs() inside loops over axes,
  // and a walk of a large kernel each time made scheduling grow with a power of the kernel's size (Muon with many
  // Newton-Schulz steps). Keyed on the ast itself (held, so its address can't be reused); not for concurrent use.
  mutable UOpRef cached_for_;
  mutable UOps topo_, rngs_;
  void refresh() const;
};

// TC marks the reduce it rewrites with this tag while its actions run; the warp's range sorts after every other path
inline constexpr int64_t kTcTag = 2;
inline constexpr int64_t kWarpPath = int64_t(1) << 30;

// PACK marks a LOAD with this tag; lower_packs (codegen/late) copies what it reads into a scratch array
inline constexpr int64_t kPackTag = 1;
inline bool is_packed(const UOpRef& load) { return std::holds_alternative<int64_t>(load->tag) && std::get<int64_t>(load->tag) == kPackTag; }
// a panel lives on the stack of the thread running the kernel (8 MB on Linux). A core's L2 holds it: a matmul over
// K = 5632 (an LLM's FFN down projection) needs a 5632 x 32 panel of B, 720 KB; unpacked, its rows are 8 KB apart
inline constexpr int64_t kPackMaxBytes = 1024 << 10;

// whether `r` (a RANGE) is in `u`'s graph; the RANGEs in it
bool depends_on(const UOpRef& u, const UOpRef& r);
UOps ranges_in(const UOpRef& u);

// The AST after cleaning what actions leave behind: one-iteration ranges become 0, a REDUCE lists the RANGEs it
// runs over (not expressions of them), and index arithmetic is simplified.
UOpRef cleanup_ast(const UOpRef& ast);

// Optimizes a kernel: `opts` if given, else the hand-written heuristics unless NOOPT is set.
Scheduler optimize(const UOpRef& ast, const Renderer& ren, const std::vector<Opt>* opts);
void hand_coded_optimizations(Scheduler& k);

}  // namespace tg
