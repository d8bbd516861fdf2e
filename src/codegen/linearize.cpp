// Each node is placed in the innermost loop it depends on: a value that does not use a loop's index is computed
// before that loop opens. Loops nest as output axes (in order), then each END's ranges inside the scope it needs.
#include "codegen/linearize.h"

#include "codegen/opt/opt.h"

#include <algorithm>
#include <memory>
#include <unordered_set>

namespace tg {

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
  std::unordered_set<const UOp*> done;
  LinearProgram lp;

  Scope* new_scope(Scope* parent, const UOp* range) {
    auto s = std::make_unique<Scope>();
    s->parent = parent, s->range = range, s->depth = parent ? parent->depth + 1 : 0;
    s->trip = (parent ? parent->trip : 1) * uint64_t(range ? std::max<int64_t>(range->src[0]->vmax(), 0) : 1);
    if (range) range_scope[range] = s.get();
    scopes.push_back(std::move(s));
    return scopes.back().get();
  }
  static Scope* deeper(Scope* a, Scope* b) { return !a ? b : !b ? a : (b->depth > a->depth ? b : a); }

  // the loops a node's value depends on (an END closes its own), for every node of the AST in one pass over its
  // toposort (no recursion: kernels can be deep)
  std::unordered_map<const UOp*, std::vector<const UOp*>> deps;
  void compute_deps(const UOpRef& ast) {
    for (auto& u : ast->toposort()) {
      const UOp* n = u.get();
      std::vector<const UOp*> r;
      if (n->op == Ops::RANGE) r.push_back(n);
      for (size_t i = 0; i < (n->op == Ops::END ? 1 : n->src.size()); i++)
        for (auto* x : deps.at(n->src[i].get()))
          if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
      if (n->op == Ops::END)
        for (size_t i = 1; i < n->src.size(); i++) r.erase(std::remove(r.begin(), r.end(), n->src[i].get()), r.end());
      deps[n] = std::move(r);
    }
  }
  // the innermost open loop scope this node's value depends on
  Scope* scope_of(const UOp* n) {
    Scope* s = scopes[0].get();
    for (auto* r : deps.at(n)) s = deeper(s, range_scope.at(r));
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
    if (u->op == Ops::DOT4 || u->op == Ops::DOT2) lp.ops += s->trip * uint64_t(u->dtype.count * (u->op == Ops::DOT4 ? 8 : 4));
    if (u->op == Ops::WMMA) {  // a lane's share of the warp's 2*N*M*K
      auto& g = u->arg_ints();
      lp.ops += s->trip * uint64_t(2 * g[0] * g[1] * g[2] / std::max<int64_t>(g[3], 1));
    }
  }

  // Emits a node after its sources, depth first, with an explicit stack. An END opens its loops before its body is
  // emitted and closes them, innermost first, after.
  void emit(const UOp* top) {
    struct Item {
      const UOp* n;
      bool after = false;
      std::vector<Scope*> chain;
      Scope* parent = nullptr;
    };
    std::vector<Item> stack{{top}};
    while (!stack.empty()) {
      Item it = std::move(stack.back());
      stack.pop_back();
      const UOp* n = it.n;
      if (it.after) {
        if (n->op == Ops::END)
          for (size_t i = it.chain.size(); i-- > 0;) close(it.chain[i], i ? it.chain[i - 1] : it.parent);
        // INDEX is rendered inline by its LOAD/STORE and AFTER names its register: their sources are placed, they aren't;
        // a GROUP only collects stores
        else if (n->op != Ops::INDEX && n->op != Ops::AFTER && n->op != Ops::GROUP) push(scope_of(n), n->ref());
        continue;
      }
      if (!done.insert(n).second || n->op == Ops::CONST || n->op == Ops::RANGE) continue;
      if (n->op == Ops::DEFINE_GLOBAL) {
        size_t i = size_t(std::get<int64_t>(n->arg));
        if (lp.globals.size() <= i) lp.globals.resize(i + 1);
        lp.globals[i] = n->ref();
        lp.mem += uint64_t(std::max<int64_t>(n->dtype.size, 0)) * uint64_t(n->dtype.base().itemsize());
      } else if (n->op == Ops::END) {
        Scope* parent = scope_of(n);
        std::vector<Scope*> chain;
        for (size_t i = 1; i < n->src.size(); i++) chain.push_back(new_scope(chain.empty() ? parent : chain.back(), n->src[i].get()));
        stack.push_back({n, true, std::move(chain), parent});
        stack.push_back({n->src[0].get()});
      } else {
        stack.push_back({n, true});
        for (size_t i = n->src.size(); i-- > 0;) stack.push_back({n->src[i].get()});
      }
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
      if (u->op == Ops::DEFINE_VAR) lp.vars.push_back(u), done.insert(u.get());  // kernel arguments, wherever they are used
    }
    std::sort(loops.begin(), loops.end(), [](auto* a, auto* b) { return range_path(a) < range_path(b); });
    std::vector<Scope*> chain{root};
    for (auto* r : loops) chain.push_back(new_scope(chain.back(), r));
    // the other ranges get their scopes when their END is emitted, nested under the scope it needs
    for (auto& st : ast->src) emit(st.get());
    for (size_t i = chain.size(); i-- > 1;) close(chain[i], chain[i - 1]);
    lp.uops = root->body;
    return std::move(lp);
  }
};
}  // namespace

namespace {
// a buffer that may well have left the L2 since it was last read (256 x 2048 weights in Q4_0 are 295 KB)
constexpr uint64_t kPrefetchMinBytes = 1 << 17;

// bytes from one iteration's address of `idx` to the next iteration's of loop `r`; 0 where not a constant
int64_t stride_bytes(const UOpRef& idx, const UOp* r) {
  UOpRef at = idx->src[1], rr = r->ref();
  UOpRef d = (at->substitute({{rr, rr + rr->const_like(1)}}) - at)->simplify();
  return d->is_const() ? int64_t(d->const_value()) * idx->src[0]->dtype.base().itemsize() : 0;
}
}  // namespace

void plan_prefetches(LinearProgram& lp, const Target& t) {
  if (t.prefetch_bytes <= 0) return;
  // what each loop's loads read of each buffer, summed over the loads: four blocks' 16-byte runs 18 bytes apart are
  // four loads that each read under a quarter of the buffer, and together most of it
  struct Stream {
    const UOp* first;  // the load the prefetch goes with
    uint64_t bytes, loaded;
  };
  std::vector<std::pair<std::pair<const UOp*, const UOp*>, Stream>> streams;  // (buffer, loop), in program order
  std::vector<const UOp*> open;
  std::vector<uint64_t> trips{uint64_t(std::max<int64_t>(lp.threads, 1))};  // how often the body of each open loop runs
  for (auto& u : lp.uops) {
    if (u->op == Ops::RANGE) {
      open.push_back(u.get());
      trips.push_back(trips.back() * uint64_t(std::max<int64_t>(u->src[0]->vmax(), 0)));
    } else if (u->op == Ops::END && !open.empty()) {
      open.pop_back(), trips.pop_back();
    } else if (u->op == Ops::LOAD && !open.empty() && range_kind(open.back()) == AxisType::REDUCE) {
      const UOpRef& idx = u->src[0];
      if (idx->op != Ops::INDEX || idx->src.size() > 2 || idx->src[0]->op != Ops::DEFINE_GLOBAL) continue;
      DType buf = idx->src[0]->dtype;
      std::pair<const UOp*, const UOp*> key{idx->src[0].get(), open.back()};
      auto it = std::find_if(streams.begin(), streams.end(), [&](auto& s) { return s.first == key; });
      if (it == streams.end())
        it = streams.insert(streams.end(), {key, Stream{u.get(), uint64_t(std::max<int64_t>(buf.size, 0)) * uint64_t(buf.base().itemsize()), 0}});
      it->second.loaded += trips.back() * uint64_t(u->dtype.count) * uint64_t(u->dtype.base().itemsize());
    }
  }
  for (auto& [key, s] : streams) {
    // read about once, most of it by this loop, forward by at least half a cache line and at most an eighth of the
    // distance: a stream (a matmul reads its tiles many times, from cache; a walk down a column would fetch lines it
    // never reads; a scalar load of 4 bytes would ask for each line 16 times). One per buffer and loop: a block's two
    // loads 18 bytes apart would ask for the same lines twice
    if (s.bytes < kPrefetchMinBytes || s.loaded * 4 < s.bytes || s.loaded > 2 * s.bytes) continue;
    int64_t step = stride_bytes(s.first->src[0], key.second);
    if (step >= 32 && step * 8 <= t.prefetch_bytes) lp.prefetch.push_back(s.first);
  }
}

LinearProgram linearize(const UOpRef& ast, const std::string& name) {
  LinearProgram lp = Linearizer{}.run(ast, name);
  if (DEBUG >= 5) {
    std::fprintf(stderr, "=== linearized %s: %zu uops ===\n", name.c_str(), lp.uops.size());
    for (auto& u : lp.uops) std::fprintf(stderr, "  %-14s %-16s %s\n", op_name(u->op).data(), u->dtype.name().c_str(), arg_str(u->arg).c_str());
  }
  return lp;
}

}  // namespace tg
