#include "codegen/codegen.h"

#include "codegen/late/late.h"
#include "codegen/linearize.h"
#include "codegen/opt/kernel.h"

namespace tg {

ProgramSpec get_program(const UOpRef& ast, const std::string& name, const Renderer& ren, const std::vector<Opt>* opts) {
  Scheduler k = optimize(ast, ren, opts);
  ProgramSpec p;
  p.name = k.name(name), p.opts = k.applied_opts;
  if (DEBUG >= 3 && !p.opts.empty()) std::fprintf(stderr, "=== kernel %s opts: %s ===\n", p.name.c_str(), opts_str(p.opts).c_str());
  // the late stages, in order
  UOpRef a = lower_threads(k.ast, &p.threads);
  if (DEBUG >= 6) std::fprintf(stderr, "=== after lower threads ===\n%s", a->str().c_str());
  a = expand(a);
  a = decompose_transcendentals(a, ren);
  a = devectorize(a, ren);
  LinearProgram lp = linearize(a, p.name);
  lp.threads = p.threads;
  p.vars = lp.vars, p.ops = lp.ops, p.mem = lp.mem;
  p.src = ren.render(lp);
  return p;
}

}  // namespace tg
