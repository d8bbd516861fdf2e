// TC: a reduce of a product of two inputs becomes tensor core instructions (WMMA) across a warp, as tinygrad's
// _apply_tc_opt. The kernel's N, M and K axes are split into the tensor core's size-2 pieces: lane-id bits of one WARP
// range, element bits (UPCAST) and unrolled K bits (UNROLL). A and B then read their pieces through the tensor core's
// swizzle, and the WMMA node lists which element ranges make up each operand's vector, so the expander can gather them.
#include <algorithm>

#include "codegen/opt/postrange.h"

namespace tg {

static void by_path_desc(UOps& v) {
  std::sort(v.begin(), v.end(), [](const UOpRef& a, const UOpRef& b) { return range_path(a.get()) > range_path(b.get()); });
}

// the product a reduce sums, under a CAST to the accumulator's dtype and PADTO's WHERE (redundant here: the padded
// loads are gated to 0, so their product is 0)
static UOpRef product_of(const UOpRef& red) {
  UOpRef v = red->src[0];
  if (v->op == Ops::WHERE && v->src[2]->is_const(0)) v = v->src[1];
  if (v->op == Ops::CAST) v = v->src[0];
  return v->op == Ops::MUL ? v : UOpRef();
}

UOps Scheduler::apply_tc(const Opt& opt) {
  const Target& tg = ren->target();
  opt_check(!tg.tensor_cores.empty(), "target " + tg.device + " has no tensor cores");
  opt_check(applied_opts.empty(), "tensor core opts must be first");
  auto [select, level, use] = opt.tc;
  opt_check(level >= 0 && level <= 2, "tensor core opts must have valid tc_opt");
  opt_check(use > 0 && use <= 2, "use_tensor_cores value is not valid");
  opt_check(select >= -1 && select < int64_t(tg.tensor_cores.size()), "tensor core opts must have valid tc_select");
  opt_check(opt.axis >= 0, "invalid axis " + std::to_string(opt.axis) + " for TC");
  UOps reduces = reduceops();
  opt_check(!reduces.empty(), "no reduce ops for TensorCore");
  UOpRef red = reduces[0];
  opt_check(Ops(std::get<int64_t>(red->arg)) == Ops::ADD, "tensor cores need a sum");
  UOpRef mul = product_of(red);
  opt_check(bool(mul), "tensor cores need a sum of products");
  std::vector<TensorCore> tcs = select == -1 ? tg.tensor_cores : std::vector<TensorCore>{tg.tensor_cores[size_t(select)]};
  const Scheduler saved = *this;
  for (const TensorCore& tc : tcs) {
    if (tc.dtype_in != mul->src[0]->dtype || tc.dtype_in != mul->src[1]->dtype || tc.dtype_out != red->dtype) continue;
    // the tensor core's N is a range only B uses, M one only A uses, K one the reduce runs over
    UOps in0 = ranges_in(mul->src[0]), in1 = ranges_in(mul->src[1]), own0, own1, rr(red->src.begin() + 1, red->src.end());
    for (auto& r : in0)
      if (std::find(in1.begin(), in1.end(), r) == in1.end()) own0.push_back(r);
    for (auto& r : in1)
      if (std::find(in0.begin(), in0.end(), r) == in0.end()) own1.push_back(r);
    by_path_desc(own0), by_path_desc(own1), by_path_desc(rr);
    size_t choices = own1.size() * own0.size() * rr.size();
    if (size_t(opt.axis) >= choices) continue;
    size_t c = size_t(opt.axis);
    UOps axes{own1[c / (own0.size() * rr.size())], own0[c / rr.size() % own0.size()], rr[c % rr.size()]};
    for (int i = 0; i < 2; i++) opt_check(range_kind(axes[size_t(i)].get()) != AxisType::REDUCE, "tensor core X/Y axes can't be REDUCE");
    // mark the reduce: the actions below rebuild it
    set_ast(ast->substitute({{red, red->with_tag(kTcTag)}}));
    try {
      for (size_t i = 0; i < 3; i++) {
        if (axes[i]->src[0]->op == Ops::CONST && axes[i]->src[0]->vmax() % tc.dims[i] == 0) continue;
        opt_check(level >= 2, "tc padding requires opt_level >= 2");
        int64_t idx = axis_of(axes[i]);
        apply_opt(Opt{OptOps::PADTO, idx, tc.dims[i]}, false);
        axes[i] = rngs()[size_t(idx)];
      }
    } catch (const OptError&) {
      *this = saved;
      continue;
    }
    // the pieces, in base_shape_str order; LOCAL ones become bits of the warp below
    UOps pieces, lanes;
    for (auto& o : tc.opts) {
      size_t d = size_t(o[1] - '0');
      auto [rest, added] = shift_to(axes[d], 2, o[0] == 'l' ? AxisType::LOCAL : AxisType::UPCAST, false);
      axes[d] = rest, pieces.push_back(added);
      if (o[0] == 'l') lanes.push_back(added);
    }
    for (int64_t i = 0; i < tc.reduce_pieces(); i++) {
      auto [rest, added] = shift_to(axes[2], 2, AxisType::UNROLL, false);
      axes[2] = rest, pieces.push_back(added);
    }
    UOpRef tagged;
    for (auto& u : ast->toposort())
      if (u->op == Ops::REDUCE && u->tag == Arg(kTcTag)) tagged = u;
    TG_CHECK(bool(tagged), TG_ERROR_INTERNAL, "TC: the marked reduce was lost");
    UOpRef repl = tagged->with_tag(Arg());
    if (use != 2) {
      UOpRef m = product_of(tagged);
      TG_CHECK(bool(m), TG_ERROR_INTERNAL, "TC: the reduce lost its product");
      auto perms = tc.permutes();
      UOps srcs;
      for (size_t ab = 0; ab < 2; ab++) {  // piece j is read where the swizzle puts it: ne[j] -> ne[p^-1(j)]
        UOpMap<UOpRef> sub;
        for (size_t k = 0; k < pieces.size(); k++) sub[pieces[perms[ab][k]]] = pieces[k];
        srcs.push_back(m->src[ab]->substitute(sub));
      }
      auto shape = tc.base_shape_str(), ups = tc.upcast_pieces();
      std::vector<int64_t> arg{tc.dims[0], tc.dims[1], tc.dims[2], tc.threads};
      srcs.push_back(UOp::const_(tc.dtype_out, 0));
      for (size_t i = 0; i < 3; i++) {  // each operand's element ranges, most significant first
        int64_t n = tc.element_pieces(i);
        for (int64_t j = 0; j < n; j++) srcs.push_back(pieces[size_t(std::find(shape.begin(), shape.end(), ups[size_t(j)]) - shape.begin())]);
        arg.push_back(n);
      }
      repl = UOp::make(Ops::WMMA, tc.dtype_out, srcs, arg);
      UOps keep{repl};  // the reduce's ranges the tensor core doesn't take
      for (size_t i = 1; i < tagged->src.size(); i++)
        if (std::find(pieces.begin(), pieces.end(), tagged->src[i]) == pieces.end()) keep.push_back(tagged->src[i]);
      if (keep.size() > 1) repl = UOp::make(Ops::REDUCE, tc.dtype_out, keep, tagged->arg);
    }
    // the lane-id pieces are bits of one WARP range, the lowest first: gpudims puts it on x, so it is the hardware lane
    UOpRef warp = UOp::make(Ops::RANGE, dtypes::index, {UOp::const_int(dtypes::index, tc.threads)}, std::vector<int64_t>{kWarpPath, int64_t(AxisType::WARP)});
    UOpMap<UOpRef> bits;
    for (size_t i = 0; i < lanes.size(); i++)
      bits[lanes[i]] = warp->alu(Ops::IDIV, {UOp::const_int(dtypes::index, int64_t(1) << i)})->alu(Ops::MOD, {UOp::const_int(dtypes::index, 2)});
    set_ast(ast->substitute({{tagged, repl}})->substitute(bits));
    return axes;
  }
  *this = saved;
  throw OptError("no tensor core of " + tg.device + " takes this kernel (dtypes " + std::string(mul->src[0]->dtype.name()) + " x " +
                 std::string(mul->src[1]->dtype.name()) + " -> " + std::string(red->dtype.name()) + ", axis " + std::to_string(opt.axis) + ")");
}

}  // namespace tg
