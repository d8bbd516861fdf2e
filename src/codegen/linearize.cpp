// Each node is placed in the innermost loop it depends on: a value that does not use a loop's index is computed
// before that loop opens. Loops nest as output axes (in order), then each REDUCE's axes inside the scope it needs.
#include "codegen/linearize.h"

#include "codegen/late/late.h"
#include "codegen/opt/opt.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace tg {

double reduce_identity(Ops op, DType dt) {
  if (op == Ops::ADD) return 0;
  if (op == Ops::MUL) return 1;
  return dtypes::is_float(dt) ? -std::numeric_limits<double>::infinity() : dtypes::min(dt);
}

namespace {
struct Scope {
  const UOp* range = nullptr;
  Scope* parent = nullptr;
  int depth = 0;
  uint64_t trip = 1;
  UOps body;
};

struct Linearizer {
  std::vector<std::unique_ptr<Scope>> scopes;
  std::unordered_map<const UOp*, Scope*> range_scope;
  std::unordered_map<const UOp*, UOpRef> done;         // emitted node -> what later uses read (the acc for a REDUCE)
  LinearProgram lp;
  int64_t acc_id = 0;
  std::function<bool(DType)> vector_acc;
  UOps keep;  // lane nodes made here, alive while they are emitted

  Scope* new_scope(Scope* parent, const UOp* range) {
    auto s = std::make_unique<Scope>();
    s->parent = parent, s->range = range, s->depth = parent ? parent->depth + 1 : 0;
    s->trip = (parent ? parent->trip : 1) * uint64_t(range ? std::max<int64_t>(range->src[0]->vmax(), 0) : 1);
    if (range) range_scope[range] = s.get();
    scopes.push_back(std::move(s));
    return scopes.back().get();
  }
  static Scope* deeper(Scope* a, Scope* b) { return !a ? b : !b ? a : (b->depth > a->depth ? b : a); }

  // the loops a node's value depends on (a REDUCE closes its own), for every node of the AST in one pass over its
  // toposort (no recursion: kernels can be deep)
  std::unordered_map<const UOp*, std::vector<const UOp*>> deps;
  void compute_deps(const UOpRef& ast) {
    for (auto& u : ast->toposort()) {
      const UOp* n = u.get();
      std::vector<const UOp*> r;
      if (n->op == Ops::RANGE) r.push_back(n);
      for (size_t i = 0; i < (n->op == Ops::REDUCE ? 1 : n->src.size()); i++)
        for (auto* x : deps.at(n->src[i].get()))
          if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
      if (n->op == Ops::REDUCE)
        for (size_t i = 1; i < n->src.size(); i++) r.erase(std::remove(r.begin(), r.end(), n->src[i].get()), r.end());
      deps[n] = std::move(r);
    }
  }
  const std::vector<const UOp*>& ranges_of(const UOp* n) { return deps.at(n); }
  // the innermost open loop scope this node's value depends on
  Scope* scope_of(const UOp* n) {
    Scope* s = scopes[0].get();
    for (auto* r : ranges_of(n)) s = deeper(s, range_scope.at(r));
    return s;
  }

  void close(Scope* s, Scope* into) {
    into->body.push_back(s->range->ref());
    into->body.insert(into->body.end(), s->body.begin(), s->body.end());
    into->body.push_back(UOp::make(Ops::END, dtypes::void_, {s->range->ref()}));
  }

  void push(Scope* s, const UOpRef& u) {
    s->body.push_back(u);
    if (GroupOp::alu(u->op) && u->dtype != dtypes::index) lp.ops += s->trip * uint64_t(u->dtype.count);
    // an accumulator's update: its ALU is rendered inside the store, not listed
    if (u->op == Ops::STORE && u->src[0]->op == Ops::DEFINE_REG && GroupOp::alu(u->src[1]->op)) lp.ops += s->trip * uint64_t(u->src[1]->dtype.count);
    if (u->op == Ops::WMMA) {  // a lane's share of the warp's 2*N*M*K
      auto& g = u->arg_ints();
      lp.ops += s->trip * uint64_t(2 * g[0] * g[1] * g[2] / std::max<int64_t>(g[3], 1));
    }
  }

  // A sum of WMMAs accumulates in the instruction: the lanes of a REDUCE's value that are a WMMA's whole result (with
  // a zero C) become WMMA(a, b, the accumulators) instead of accumulators + WMMA(a, b, 0). Lane -> (WMMA, element).
  static std::vector<std::pair<UOpRef, int64_t>> wmma_lanes(const UOp* r) {
    std::vector<std::pair<UOpRef, int64_t>> out(size_t(r->dtype.count));
    if (Ops(std::get<int64_t>(r->arg)) != Ops::ADD) return out;
    std::unordered_map<const UOp*, int64_t> seen;
    for (int64_t l = 0; l < r->dtype.count; l++) {
      UOpRef v = lane_of(r->src[0], l);
      if (v->op != Ops::GEP || v->src[0]->op != Ops::WMMA) continue;
      const UOpRef& w = v->src[0];
      bool zero = true;
      for (int64_t i = 0; i < w->src[2]->dtype.count; i++) zero &= lane_of(w->src[2], i)->is_const(0);
      if (zero) out[size_t(l)] = {w, v->arg_ints()[0]}, seen[w.get()] |= int64_t(1) << v->arg_ints()[0];
    }
    for (auto& [w, e] : out)  // only whole results
      if (w && seen[w.get()] != (int64_t(1) << w->dtype.count) - 1) w = nullptr;
    return out;
  }

  // Emits a node after its sources, depth first, with an explicit stack. A REDUCE opens its accumulator and loops
  // before its source is emitted (stage 0) and stores and closes them after (stage 1).
  void emit(const UOp* top) {
    struct Item {
      const UOp* n;
      int stage;
      std::vector<Scope*> chain;
      Scope* parent;
      UOpRef acc;
    };
    std::vector<Item> stack{{top, 0, {}, nullptr, {}}};
    // a REDUCE's loops close, innermost first, once its body is emitted
    auto close_chain = [&](const Item& r) {
      for (size_t i = r.chain.size(); i-- > 0;) close(r.chain[i], i ? r.chain[i - 1] : r.parent);
    };
    while (!stack.empty()) {
      Item it = std::move(stack.back());
      stack.pop_back();
      const UOp* n = it.n;
      if (it.stage == 0 && done.count(n)) continue;
      UOpRef out = n->ref();
      if (it.stage == 0) {
        switch (n->op) {
          case Ops::CONST:
          case Ops::RANGE: done[n] = out; continue;
          case Ops::DEFINE_GLOBAL: {
            size_t i = size_t(std::get<int64_t>(n->arg));
            if (lp.globals.size() <= i) lp.globals.resize(i + 1);
            lp.globals[i] = out;
            lp.mem += uint64_t(std::max<int64_t>(n->dtype.size, 0)) * uint64_t(n->dtype.base().itemsize());
            done[n] = out;
            continue;
          }
          case Ops::REDUCE: {
            Scope* parent = scope_of(n);
            Scope* inner = parent;
            std::vector<Scope*> chain;
            for (size_t i = 1; i < n->src.size(); i++) chain.push_back(inner = new_scope(inner, n->src[i].get()));
            if (n->dtype == dtypes::void_) {  // loops around stores (a PACK's copy): no accumulator
              stack.push_back({n, 1, std::move(chain), parent, {}});
              stack.push_back({n->src[0].get(), 0, {}, nullptr, {}});
              continue;
            }
            Ops rop = Ops(std::get<int64_t>(n->arg));
            bool split = n->dtype.count > 1 && vector_acc && !vector_acc(n->dtype);
            DType at = split ? n->dtype.scalar_of() : n->dtype;
            UOps accs;
            for (int64_t l = 0; l < (split ? n->dtype.count : 1); l++) {
              accs.push_back(UOp::make(Ops::DEFINE_REG, at.ptr_to(1, AddrSpace::Reg), {UOp::const_(at, reduce_identity(rop, at))}, acc_id++));
              push(parent, accs.back());
            }
            UOpRef acc = accs[0];
            if (split) lp.reduce_lanes[n->ref()] = accs;
            stack.push_back({n, 1, std::move(chain), parent, acc});
            if (split) {  // the lanes of the value, not the vector (a target without vectors can't hold it)
              auto wl = wmma_lanes(n);
              for (int64_t l = n->dtype.count; l-- > 0;) {
                if (const UOpRef& w = wl[size_t(l)].first) {  // the WMMA's operands; it is placed with the accumulators
                  for (int i : {1, 0}) stack.push_back({w->src[size_t(i)].get(), 0, {}, nullptr, {}});
                  continue;
                }
                keep.push_back(lane_of(n->src[0], l));
                stack.push_back({keep.back().get(), 0, {}, nullptr, {}});
              }
            } else stack.push_back({n->src[0].get(), 0, {}, nullptr, {}});
            continue;
          }
          default:  // INDEX is rendered inline by its LOAD/STORE: its sources are emitted, the node isn't placed
            stack.push_back({n, 1, {}, nullptr, {}});
            for (size_t i = n->src.size(); i-- > 0;) stack.push_back({n->src[i].get(), 0, {}, nullptr, {}});
            continue;
        }
      }
      if (n->op == Ops::REDUCE && n->dtype == dtypes::void_) {
        close_chain(it);
      } else if (n->op == Ops::REDUCE) {
        Ops rop = Ops(std::get<int64_t>(n->arg));
        Scope* inner = it.chain.empty() ? it.parent : it.chain.back();
        if (auto lanes = lp.reduce_lanes.find(n->ref()); lanes != lp.reduce_lanes.end()) {
          auto wl = wmma_lanes(n);
          std::vector<const UOp*> placed;
          for (size_t l = 0; l < lanes->second.size(); l++) {
            const UOpRef& w = wl[l].first;
            if (!w) continue;
            if (std::find(placed.begin(), placed.end(), w.get()) != placed.end()) continue;
            placed.push_back(w.get());
            UOps c(size_t(w->dtype.count)), at(c.size());
            for (size_t k = 0; k < wl.size(); k++)
              if (wl[k].first == w) at[size_t(wl[k].second)] = lanes->second[k];
            for (size_t i = 0; i < c.size(); i++) c[i] = UOp::make(Ops::LOAD, w->dtype.scalar_of(), {at[i]});
            UOpRef acc = UOp::make(Ops::WMMA, w->dtype, {w->src[0], w->src[1], UOp::make(Ops::VECTORIZE, w->dtype, c)}, w->arg);
            push(inner, acc);
            keep.push_back(acc);
            for (size_t i = 0; i < c.size(); i++) push(inner, UOp::make(Ops::STORE, dtypes::void_, {at[i], lane_of(acc, int64_t(i))}));
          }
          for (size_t l = 0; l < lanes->second.size(); l++) {
            if (wl[l].first) continue;
            const UOpRef& a = lanes->second[l];
            UOpRef v = lane_of(n->src[0], int64_t(l));
            push(inner, UOp::make(Ops::STORE, dtypes::void_, {a, UOp::make(Ops::LOAD, v->dtype, {a})->alu(rop, {done.at(v.get())})}));
          }
          close_chain(it);
          done[n] = out;
          continue;
        }
        UOpRef cur = UOp::make(Ops::LOAD, n->dtype, {it.acc});
        push(inner, UOp::make(Ops::STORE, dtypes::void_, {it.acc, cur->alu(rop, {done.at(n->src[0].get())})}));
        close_chain(it);
        out = cur;
        lp.reduce_acc[n->ref()] = it.acc;
      } else if (n->op != Ops::INDEX && n->op != Ops::GROUP) {  // a GROUP only collects stores
        push(scope_of(n), out);
      }
      done[n] = out;
    }
  }

  LinearProgram run(const UOpRef& ast, const std::string& name) {
    lp.name = name;
    Scope* root = new_scope(nullptr, nullptr);
    compute_deps(ast);
    // output loops: LOOP ranges in axis order, outermost first
    std::vector<const UOp*> loops;
    for (auto& u : ast->toposort()) {
      if (u->op == Ops::RANGE && range_kind(u.get()) == AxisType::GLOBAL) loops.push_back(u.get());
      if (u->op == Ops::DEFINE_VAR) lp.vars.push_back(u), done[u.get()] = u;  // kernel arguments, wherever they are used
    }
    std::sort(loops.begin(), loops.end(), [](auto* a, auto* b) { return range_path(a) < range_path(b); });
    std::vector<Scope*> chain{root};
    for (auto* r : loops) chain.push_back(new_scope(chain.back(), r));
    // reduce ranges get their scopes when their REDUCE is emitted, nested under the scope it needs
    for (auto& st : ast->src) emit(st.get());
    for (size_t i = chain.size(); i-- > 1;) close(chain[i], chain[i - 1]);
    lp.uops = root->body;
    return std::move(lp);
  }
};
}  // namespace

LinearProgram linearize(const UOpRef& ast, const std::string& name, const std::function<bool(DType)>& vector_acc) {
  Linearizer l;
  l.vector_acc = vector_acc;
  LinearProgram lp = l.run(ast, name);
  if (DEBUG >= 5) {
    std::fprintf(stderr, "=== linearized %s: %zu uops ===\n", name.c_str(), lp.uops.size());
    for (auto& u : lp.uops) std::fprintf(stderr, "  %-14s %-16s %s\n", op_name(u->op).data(), u->dtype.name().c_str(), arg_str(u->arg).c_str());
  }
  return lp;
}

}  // namespace tg
