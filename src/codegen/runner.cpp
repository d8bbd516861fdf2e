#include "codegen/runner.h"

namespace tg {

std::shared_ptr<CompiledRunner> compile_program(const UOpRef& ast, const std::string& name, Device& dev, const std::vector<Opt>* opts) {
  if (DEBUG >= 3) std::fprintf(stderr, "=== kernel %s AST ===\n%s", name.c_str(), ast->str().c_str());
  auto c = compile_spec(get_program_cached(ast, name, dev.renderer(), opts, dev.compiler().ident()), dev);
  c->ast = ast;
  return c;
}

std::shared_ptr<CompiledRunner> compile_spec(ProgramSpec p, Device& dev) {
  auto c = std::make_shared<CompiledRunner>();
  c->name = p.name, c->src = std::move(p.src), c->vars = p.vars, c->threads = p.threads, c->ops = p.ops, c->mem = p.mem;
  c->global_size = p.global_size, c->local_size = p.local_size, c->nbufs = p.nbufs;
  if (DEBUG >= 4) std::fprintf(stderr, "=== kernel %s source ===\n%s", c->name.c_str(), c->src.c_str());
  for (size_t i = 0; i < c->vars.size(); i++)
    if (c->vars[i]->argv<VarArg>().name == "core_id") c->core_var = int(i);
  c->prog = dev.compiler().compile(c->name, c->src);
  return c;
}

// a launch size: products, sums and quotients of the kernel's variables
static int64_t eval_size(const UOp* u, const UOps& vars, const int64_t* vals) {
  switch (u->op) {
    case Ops::CONST: return std::get<int64_t>(u->arg);
    case Ops::DEFINE_VAR:
      for (size_t i = 0; i < vars.size(); i++)
        if (vars[i].get() == u) return vals[i];
      fail(TG_ERROR_INTERNAL, "launch size uses a variable the kernel doesn't take: " + u->render());
    default: {
      std::vector<double> v;
      for (auto& s : u->src) v.push_back(double(eval_size(s.get(), vars, vals)));
      return int64_t(exec_alu(u->op, u->dtype, v));
    }
  }
}
LaunchDims CompiledRunner::dims(const int64_t* vals) const {
  LaunchDims d;
  d.core_var = core_var, d.global[0] = threads, d.nbufs = nbufs;
  for (size_t i = 0; i < 3; i++) {
    if (global_size[i]) d.global[i] = eval_size(global_size[i].get(), vars, vals);
    if (local_size[i]) d.local[i] = eval_size(local_size[i].get(), vars, vals);
  }
  return d;
}

double run_kernel(const CompiledRunner& k, void** bufs) {
  std::vector<int64_t> vars(k.vars.size(), 0);  // every Variable at its largest value: buffers are laid out for it
  for (size_t i = 0; i < vars.size(); i++)
    if (int(i) != k.core_var) vars[i] = k.vars[i]->argv<VarArg>().vmax;
  return k.prog->timed_launch(bufs, vars.data(), vars.size(), k.dims(vars.data()));
}

}  // namespace tg
