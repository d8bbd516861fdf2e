#include "codegen/codegen.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <typeinfo>
#include <unordered_map>

#include "codegen/late/late.h"
#include "codegen/linearize.h"
#include "codegen/opt/postrange.h"
#include "runtime/diskcache.h"
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
      {"packs", [](const UOpRef& a, const Renderer& ren, ProgramSpec&) { return lower_packs(a, ren.target()); }},
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

namespace {
// late lowering, linearizing and rendering of an optimized kernel
ProgramSpec lower_program(const UOpRef& ast, const Scheduler& k, const std::string& name, const Renderer& ren, size_t n_rw, LinearProgram* lp_out) {
  viz::stage("opts", ast, k.ast, n_rw, true);  // the actions applied, then the cleanup rewrites they ran
  ProgramSpec p;
  p.name = name, p.opts = k.applied_opts;
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
  if (ren.target().has_local) {
    lp.local_items = 1;
    for (auto& d : p.local_size)
      if (d) lp.local_items *= std::max<int64_t>(d->vmax(), 1);
  }
  plan_prefetches(lp, ren.target());
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

// ---- a ProgramSpec as a record of text (program_cache_get/put): its numbers, its opts, its vars, its launch sizes as
// expressions of the vars, its name and its source. Strings are length-prefixed ("5:hello"). ----
std::string dtype_rec(DType d) {
  return strformat("%d %d %d %d %lld", int(d.scalar), int(d.count), int(d.ptr), int(d.addrspace), (long long)d.size);
}
// a launch size: "_" for none, "v<i>" a var, "c<dtype> <int>" a constant, "(<op> <dtype> <n> ...)" an ALU of those;
// false for anything else (the spec is then not kept)
bool expr_rec(const UOp* u, const UOps& vars, std::string& out, int depth = 0) {
  if (!u) return out += " _", true;
  if (depth > 32) return false;
  if (u->op == Ops::DEFINE_VAR) {
    for (size_t i = 0; i < vars.size(); i++)
      if (vars[i].get() == u) return out += " v" + std::to_string(i), true;
    return false;
  }
  if (u->op == Ops::CONST && std::holds_alternative<int64_t>(u->arg) && u->tag.index() == 0)
    return out += " c " + dtype_rec(u->dtype) + " " + std::to_string(std::get<int64_t>(u->arg)), true;
  if (GroupOp::alu_arity(u->op) != int(u->src.size()) || u->arg.index() != 0 || u->tag.index() != 0) return false;
  out += strformat(" ( %d ", int(u->op)) + dtype_rec(u->dtype) + " " + std::to_string(u->src.size());
  for (auto& s : u->src)
    if (!expr_rec(s.get(), vars, out, depth + 1)) return false;
  return out += " )", true;
}
std::string str_rec(const std::string& s) { return " " + std::to_string(s.size()) + ":" + s; }
// the AST as the record key's text: each node once, sources before users, a source by its number. Iterative (str()
// recurses once per level, which a deep kernel on a small thread stack can't afford) and linear in the nodes
std::string ast_rec(const UOpRef& ast) {
  std::unordered_map<const UOp*, size_t> id;
  std::string out;
  for (auto& n : ast->toposort()) {
    out += std::to_string(int(n->op)) + " " + dtype_rec(n->dtype) + str_rec(arg_str(n->arg)) + str_rec(arg_str(n->tag));
    for (auto& x : n->src) out += " " + std::to_string(id.at(x.get()));
    out += "\n";
    size_t next = id.size();
    id.emplace(n.get(), next);
  }
  return out;
}

std::optional<std::string> write_spec(const ProgramSpec& p) {
  std::string r = strformat(" %lld %zu %llu %llu %zu", (long long)p.threads, p.nbufs, (unsigned long long)p.ops, (unsigned long long)p.mem, p.uops);
  r += str_rec(opts_str(p.opts)) + " " + std::to_string(p.vars.size());
  for (auto& v : p.vars) {
    if (v->op != Ops::DEFINE_VAR || !v->src.empty() || v->tag.index() != 0) return std::nullopt;
    auto& a = v->argv<VarArg>();
    r += " " + dtype_rec(v->dtype) + strformat(" %lld %lld", (long long)a.vmin, (long long)a.vmax) + str_rec(a.name);
  }
  for (auto& dims : {p.global_size, p.local_size})
    for (auto& d : dims)
      if (!expr_rec(d.get(), p.vars, r)) return std::nullopt;
  return r + str_rec(p.name) + str_rec(p.src);
}

// the reader: nullopt for any record it can't read whole (cut short, from elsewhere), which is then rendered again
struct SpecReader {
  const std::string& s;
  size_t at = 0;
  bool ok = true;
  void space() {
    if (at < s.size() && s[at] == ' ') at++;
    else ok = false;
  }
  int64_t num() {
    space();
    size_t n = 0;
    bool neg = at < s.size() && s[at] == '-';
    uint64_t v = 0;
    for (at += neg; at < s.size() && s[at] >= '0' && s[at] <= '9' && n < 19; at++, n++) v = v * 10 + uint64_t(s[at] - '0');
    if (n == 0) ok = false;
    return neg ? -int64_t(v) : int64_t(v);
  }
  std::string str() {
    int64_t n = num();
    if (!ok || at >= s.size() || s[at] != ':' || n < 0 || uint64_t(n) > s.size() - at - 1) return ok = false, "";
    at += 1 + size_t(n);
    return s.substr(at - size_t(n), size_t(n));
  }
  char tok() {
    space();
    return ok && at < s.size() ? s[at++] : (ok = false, '\0');
  }
  DType dtype() {
    int64_t sc = num(), c = num(), ptr = num(), as = num(), size = num();
    if (sc < 0 || sc > int64_t(Scalar::Void) || c < 1 || c > 65535 || ptr < 0 || ptr > 1 || as < 0 || as > int64_t(AddrSpace::Reg)) ok = false;
    return ok ? DType(Scalar(sc), uint16_t(c), ptr != 0, AddrSpace(as), size) : DType();
  }
  UOpRef expr(const UOps& vars, int depth = 0) {
    char c = tok();
    if (!ok || depth > 32) return ok = false, nullptr;
    if (c == '_') return nullptr;
    if (c == 'v') {
      int64_t i = 0, n = 0;
      for (; at < s.size() && s[at] >= '0' && s[at] <= '9' && n < 9; at++, n++) i = i * 10 + (s[at] - '0');
      if (n == 0 || size_t(i) >= vars.size()) return ok = false, nullptr;
      return vars[size_t(i)];
    }
    if (c == 'c') {
      DType dt = dtype();
      int64_t v = num();
      return ok ? UOp::make(Ops::CONST, dt, {}, v) : nullptr;
    }
    if (c != '(') return ok = false, nullptr;
    int64_t op = num();
    DType dt = dtype();
    int64_t n = num();
    if (!ok || op < 0 || op > 255 || GroupOp::alu_arity(Ops(op)) != n) return ok = false, nullptr;
    UOps src;
    for (int64_t i = 0; i < n && ok; i++) {
      src.push_back(expr(vars, depth + 1));
      if (!src.back()) ok = false;
    }
    if (tok() != ')' || !ok) return ok = false, nullptr;
    return UOp::make(Ops(op), dt, std::move(src));
  }
};
std::optional<ProgramSpec> read_spec(const std::string& s) {
  SpecReader r{s};
  ProgramSpec p;
  p.threads = r.num(), p.nbufs = size_t(r.num()), p.ops = uint64_t(r.num()), p.mem = uint64_t(r.num()), p.uops = size_t(r.num());
  std::string opts = r.str();
  int64_t nvars = r.num();
  if (!r.ok || nvars < 0 || nvars > 4096) return std::nullopt;
  for (int64_t i = 0; i < nvars && r.ok; i++) {
    DType dt = r.dtype();
    int64_t lo = r.num(), hi = r.num();
    std::string name = r.str();
    if (r.ok) p.vars.push_back(UOp::make(Ops::DEFINE_VAR, dt, {}, VarArg{name, lo, hi}));
  }
  for (auto* dims : {&p.global_size, &p.local_size})
    for (auto& d : *dims) d = r.expr(p.vars);
  p.name = r.str(), p.src = r.str();
  if (!r.ok || r.at != s.size()) return std::nullopt;
  try {
    p.opts = parse_opts(opts);
  } catch (const Error&) {
    return std::nullopt;
  }
  return p;
}

// the kernel with its actions applied (and, DEBUG>=3, printed), its name, and the rewrite count before them (VIZ)
struct Optimized {
  size_t n_rw;
  Scheduler k;
  std::string name;
};
Optimized optimized(const UOpRef& ast, const std::string& name, const Renderer& ren, const std::vector<Opt>* opts) {
  size_t n_rw = viz::kernel_rewrites();
  Scheduler k = optimize(ast, ren, opts);
  std::string nm = k.name(name);
  if (DEBUG >= 3 && !k.applied_opts.empty()) std::fprintf(stderr, "=== kernel %s opts: %s ===\n", nm.c_str(), opts_str(k.applied_opts).c_str());
  return {n_rw, std::move(k), std::move(nm)};
}
}  // namespace

ProgramSpec get_program(const UOpRef& ast, const std::string& name, const Renderer& ren, const std::vector<Opt>* opts, LinearProgram* lp_out) {
  auto [n_rw, k, nm] = optimized(ast, name, ren, opts);
  return lower_program(ast, k, nm, ren, n_rw, lp_out);
}

ProgramSpec get_program_cached(const UOpRef& ast, const std::string& name, const Renderer& ren, const std::vector<Opt>* opts,
                               const std::string& ident) {
  auto [n_rw, k, nm] = optimized(ast, name, ren, opts);
  if (viz::on() || DEBUG >= 6 || CACHELEVEL <= 0) return lower_program(ast, k, nm, ren, n_rw, nullptr);
  // what decides the source besides the build: the compiler, the renderer and its target, the name, the optimized AST
  const Target& t = ren.target();
  std::string what = ident + "\n" + typeid(ren).name() + "\n" + t.device;
  what += strformat(" %d%d%d %d %d %d %d %d %d", int(t.has_local), int(t.has_shared), int(t.has_threads), int(t.warp_size), t.vector_bytes,
                    int(t.fma), t.dot4_bytes, t.dot2_bytes, t.prefetch_bytes);
  for (auto v : {t.global_max[0], t.global_max[1], t.global_max[2], t.local_max[0], t.local_max[1], t.local_max[2], t.shared_max,
                 t.local_threads_max})
    what += " " + std::to_string(v);
  for (auto& tc : t.tensor_cores) what += " " + tc.name();
  what += "\n" + nm + "\n" + ast_rec(k.ast);
  if (auto rec = program_cache_get(what); !rec.empty())
    if (auto p = read_spec(rec); p && p->name == nm) return std::move(*p);
  ProgramSpec p = lower_program(ast, k, nm, ren, n_rw, nullptr);
  // kept only when it reads back as written, the very nodes (hash-consed) included: a var or launch size the record
  // can't say is rendered every time
  if (auto rec = write_spec(p))
    if (auto back = read_spec(*rec); back && back->vars == p.vars && back->global_size == p.global_size && back->local_size == p.local_size &&
                                     write_spec(*back) == rec)
      program_cache_put(what, *rec);
  return p;
}

}  // namespace tg
