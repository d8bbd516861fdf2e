#include "codegen/codegen.h"

#include <algorithm>
#include <functional>

#include "codegen/late/late.h"
#include "codegen/linearize.h"
#include "codegen/opt/postrange.h"
#include "uop/viz.h"

namespace tg {

namespace {
// The late stages, in order: each takes the kernel AST to a lower form. DEBUG>=6 prints the AST after each.
struct Stage {
  const char* name;
  std::function<UOpRef(const UOpRef&, const Renderer&, ProgramSpec&)> run;
};
const std::vector<Stage>& late_stages() {
  static const std::vector<Stage> stages = {
      {"lower threads", [](const UOpRef& a, const Renderer&, ProgramSpec& p) { return lower_threads(a, &p.threads); }},
      {"packs", [](const UOpRef& a, const Renderer&, ProgramSpec&) { return lower_packs(a); }},
      {"group reduces", [](const UOpRef& a, const Renderer&, ProgramSpec&) { return lower_group_reduces(a); }},
      {"gpudims", [](const UOpRef& a, const Renderer& ren, ProgramSpec& p) { return add_gpudims(a, ren.target(), p.global_size, p.local_size); }},
      {"expander", [](const UOpRef& a, const Renderer&, ProgramSpec&) { return expand(a); }},
      {"dot products", [](const UOpRef& a, const Renderer& ren, ProgramSpec&) { return fuse_dot_products(a, ren); }},
      {"transcendentals", [](const UOpRef& a, const Renderer& ren, ProgramSpec&) { return decompose_transcendentals(a, ren); }},
      {"devectorizer", [](const UOpRef& a, const Renderer& ren, ProgramSpec&) { return devectorize(a, ren); }},
      {"reduce to accumulators", [](const UOpRef& a, const Renderer& ren, ProgramSpec&) { return reduce_to_acc(a, ren); }},
      {"fused multiply-adds", [](const UOpRef& a, const Renderer& ren, ProgramSpec&) { return fuse_multiply_adds(a, ren); }},
      {"semantics", [](const UOpRef& a, const Renderer& ren, ProgramSpec&) { return lower_semantics(a, ren); }},
  };
  return stages;
}
}  // namespace

ProgramSpec get_program(const UOpRef& ast, const std::string& name, const Renderer& ren, const std::vector<Opt>* opts, LinearProgram* lp_out) {
  size_t n_rw = viz::kernel_rewrites();
  Scheduler k = optimize(ast, ren, opts);
  viz::stage("opts", ast, k.ast, n_rw, true);  // the actions applied, then the cleanup rewrites they ran
  ProgramSpec p;
  p.name = k.name(name), p.opts = k.applied_opts;
  if (DEBUG >= 3 && !p.opts.empty()) std::fprintf(stderr, "=== kernel %s opts: %s ===\n", p.name.c_str(), opts_str(p.opts).c_str());
  UOpRef a = k.ast;
  for (auto& st : late_stages()) {
    UOpRef in = a;
    n_rw = viz::kernel_rewrites();
    a = st.run(a, ren, p);
    viz::stage(st.name, in, a, n_rw);
    if (DEBUG >= 6) std::fprintf(stderr, "=== %s: after stage '%s' ===\n%s", p.name.c_str(), st.name, a->str().c_str());
  }
  LinearProgram lp = linearize(a, p.name);
  lp.threads = p.threads;
  p.vars = lp.vars, p.nbufs = lp.globals.size(), p.mem = lp.mem, p.uops = lp.uops.size();
  // the ops of the whole launch: every THREAD core, work-group and work-item (symbolic sizes at their largest)
  p.ops = lp.ops * uint64_t(std::max<int64_t>(p.threads, 1));
  for (auto& dims : {p.global_size, p.local_size})
    for (auto& d : dims)
      if (d) p.ops *= uint64_t(std::max<int64_t>(d->vmax(), 1));
  p.src = ren.render(lp);
  if (viz::on()) {
    std::vector<std::string> o;
    for (auto& x : p.opts) o.push_back(x.str());
    viz::kernel_program(p.name, p.src, std::move(o), p.ops, p.mem, ast, UOp::make(Ops::SINK, dtypes::void_, lp.uops));
  }
  if (lp_out) *lp_out = std::move(lp);
  return p;
}

}  // namespace tg
