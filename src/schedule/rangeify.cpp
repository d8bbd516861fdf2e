// Rangeify: movement ops become index arithmetic over RANGE loops, elementwise ops fuse into their consumers, and a
// kernel boundary appears only where a buffer must exist (a root, CONTIGUOUS, a reduce whose value would be recomputed
// under an EXPAND, a scatter).
#include <algorithm>
#include <iterator>
#include <list>
#include <optional>
#include <set>
#include <unordered_set>

#include "codegen/simplify.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "uop/symbolic.h"

namespace tg {

enum RangeKind : int64_t { LOOP = 0, REDUCE = 1 };
// work (elements) past which a value computed in several places is computed once into a buffer instead
constexpr int64_t kRecompute = 1 << 16;
constexpr int64_t kNestedReduce = 64;  // a reduce this long inside another gets a buffer (a matmul over 10 classes doesn't)

static Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}
static UOpRef idx_const(int64_t v) { return UOp::const_int(dtypes::index, v); }
static UOpRef linear_index(const UOps& idx, const Shape& shape) {
  Shape st = strides_of(shape);
  UOpRef out = idx_const(0);
  for (size_t i = 0; i < idx.size(); i++)
    if (shape[i] != 1) out = out + idx[i] * idx_const(st[i]);
  return out;
}
// a view of a PARAM buffer through movement ops only: no kernel is needed to realize it
static bool is_view_of_input(const UOp* u) {
  while (GroupOp::movement(u->op)) u = u->src[0].get();
  return u->op == Ops::PARAM;
}
static bool is_contiguous_input(const UOp* u) {
  if (u->op == Ops::RESHAPE) u = u->src[0].get();
  return u->op == Ops::PARAM;
}

// An ASSIGN writes its value into its target's buffer. Each assign is a new version of that buffer: a kernel reads one
// version (the PARAM is the first), and the kernel writing the next runs after every reader of the one before. The
// target is the version it replaces, or a view of it (movement ops, a DETACH): then only the view's elements are written.
static bool view_step(const UOp* u) { return GroupOp::movement(u->op) || u->op == Ops::DETACH; }
static int assign_target_slot(const UOp* a) {
  const UOp* t = a;
  while (t->op == Ops::ASSIGN || view_step(t)) t = t->src[0].get();
  TG_CHECK(t->op == Ops::PARAM, TG_ERROR_INTERNAL, "schedule: an assign's target is not a buffer");
  return int(t->arg_ints()[0]);
}
static const UOp* previous_version(const UOp* a) {
  const UOp* t = a->src[0].get();
  while (view_step(t)) t = t->src[0].get();
  return t;
}
// an assign to part of its buffer, or through a view that reorders it (anything but reshapes of the whole buffer)
static bool assigns_view(const UOp* a) {
  if (a->op != Ops::ASSIGN) return false;
  const UOp* t = a->src[0].get();
  while (t->op == Ops::RESHAPE) t = t->src[0].get();
  return t->op != Ops::PARAM && t->op != Ops::ASSIGN;
}

struct KernelBuilder;

struct ScheduleBuilder {
  Schedule& s;
  std::unordered_map<const UOp*, int> slot_of;          // tensor-level node that gets a buffer -> its slot
  std::vector<std::pair<const UOp*, int>> pending;      // nodes with a slot whose kernel isn't built yet
  std::vector<std::unordered_set<const UOp*>> reads;    // per kernel: the nodes whose buffers it loads
  std::unordered_map<const UOp*, size_t> producer;      // node -> the kernel that writes its buffer
  std::unordered_set<const UOp*> split;                 // nodes given a buffer: to keep kernels a compilable size, or shared reduces
  bool split_assigns = false;                           // every assign's value gets its own buffer, then is copied in
  std::unordered_set<int> root_slots;                   // slots the roots are realized into (never freed)
  std::unordered_map<const UOp*, std::unordered_set<const UOp*>> inlined_in;  // reduce -> the kernels computing it inline
  std::unordered_map<const UOp*, bool> no_load_memo;
  std::vector<std::pair<size_t, size_t>> after;  // (kernel, kernel it must run after) beyond what their buffers say
  std::unordered_map<const UOp*, int> users;      // how many nodes of the graph use each node

  void mark_splits(const UOpRef& sink);
  bool no_load(const UOp* n);

  int slot(const UOp* n);
  void build(const UOp* n, int out);
  bool build_scatter(const UOp* owner, const UOp* n, int out);
  const UOp* in_place_scatter(const UOp* n);
  bool add_kernel(const UOp* n, const KernelBuilder& kb, UOpRef ast, const std::string& name, bool check_in_place = true);
  static bool in_place_safe(const UOpRef& ast);
  void build_pending();
  bool order_kernels();  // false if the assigns make a cycle
};

// Builds one kernel: evaluates the tensor graph at symbolic indices. The walk keeps its own stack, so graphs of any
// depth (a lazy chain of a million ops, long movement chains) are safe on any thread's stack.
struct KernelBuilder {
  ScheduleBuilder& sb;
  const UOp* root;         // the node this kernel computes (its own slot must not be loaded)
  std::vector<int> slots;  // kernel arg -> schedule slot
  std::unordered_map<int, int64_t> arg_of;
  std::unordered_map<int, const UOp*> read_of;  // slot -> the node (buffer version) loaded from it
  int64_t next_axis = 0;
  std::vector<int64_t> reduce_sizes;
  struct Ctx {
    const UOp* n;
    UOps idx;
    UOpRef gate;
    bool expanded;
  };
  // holds its indices: a value need not reference them (a collapsed reduce, a pad's constant), and a freed index's
  // address may come back as another node
  struct Key {
    const UOp* n;
    UOps idx;
    UOpRef gate;
    bool expanded;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      size_t h = std::hash<const void*>()(k.n) ^ k.expanded;
      for (auto& p : k.idx) h = hash_combine(h, std::hash<const void*>()(p.get()));
      return hash_combine(h, std::hash<const void*>()(k.gate.get()));
    }
  };
  std::unordered_map<Key, UOpRef, KeyHash> memo;
  // one node being evaluated: either a value right away (`value`), or sources to evaluate first (`kids`) and a
  // combination of their values (`finish`)
  struct Frame {
    Ctx c;
    Key key;
    std::vector<Ctx> kids;
    UOps vals;
    UOpRef value, valid;  // valid: PAD's in-bounds condition, applied when finishing
    UOps rr;              // REDUCE_AXIS: its new reduce ranges
    bool collapse = false;  // REDUCE_AXIS: summed in closed form if the rules can (no buffer read, nothing to undo)
  };

  static Key key_of(const Ctx& c) { return Key{c.n, c.idx, c.gate, c.expanded}; }
  UOpRef global(int slot, DType dt, int64_t size) {
    auto [it, fresh] = arg_of.try_emplace(slot, int64_t(slots.size()));
    if (fresh) slots.push_back(slot);
    return UOp::make(Ops::DEFINE_GLOBAL, dt.ptr_to(size), {}, it->second);
  }
  UOpRef load(int slot, const UOp* n, const UOps& idx, const UOpRef& gate) {
    auto [it, fresh] = read_of.try_emplace(slot, n);
    TG_CHECK(fresh || it->second == n, TG_ERROR_UNSUPPORTED,
             "schedule: one kernel reads a buffer both before and after an assign to it; realize the assigned tensor first");
    auto [dt, size] = sb.s.slots[size_t(slot)];
    UOps isrc{global(slot, dt, size), linear_index(idx, n->shape())};
    if (gate) isrc.push_back(gate);
    return UOp::make(Ops::LOAD, dt, {UOp::make(Ops::INDEX, dt.ptr_to(size), isrc)});
  }

  void note_inlined(const UOp* n) {
    if (n != root) sb.inlined_in[n].insert(root);
  }

  static int64_t reduce_size(const UOp* r) {
    int64_t n = 1;
    for (size_t i = 1; i < r->arg_ints().size(); i++) n *= r->src[0]->shape()[size_t(r->arg_ints()[i])];
    return n;
  }
  static bool in_reduce(const UOps& idx) {  // an index that uses an enclosing reduce's range
    for (auto& i : idx)
      for (auto& u : i->toposort())
        if (u->op == Ops::RANGE && u->arg_ints()[1] == REDUCE) return true;
    return false;
  }

  int64_t iterations() const {  // of this kernel's loops, as far as known
    int64_t n = prod(root->shape());
    for (int64_t r : reduce_sizes) n = n > INT64_MAX / std::max<int64_t>(r, 1) ? INT64_MAX : n * r;
    return n;
  }

  UOpRef eval(Ctx start) {
    std::vector<Frame> stack;
    UOpRef done;
    auto push = [&](Ctx c) {
      Key k = key_of(c);
      if (auto it = memo.find(k); it != memo.end()) return it->second;
      stack.push_back(Frame{std::move(c), std::move(k), {}, {}, {}, {}, {}, false});
      plan(stack.back());
      return UOpRef();
    };
    if (UOpRef v = push(std::move(start))) return v;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (!f.value && f.vals.size() < f.kids.size()) {
        Ctx c = std::move(f.kids[f.vals.size()]);
        if (UOpRef v = push(std::move(c))) stack.back().vals.push_back(v);  // memo hit: no frame was pushed
        continue;
      }
      UOpRef v = f.value ? f.value : finish(f);
      memo.emplace(std::move(f.key), v);
      stack.pop_back();
      if (stack.empty()) done = v;
      else stack.back().vals.push_back(v);
    }
    return done;
  }

  void plan(Frame& f) {
    const UOp* n = f.c.n;
    const UOps& idx = f.c.idx;
    const UOpRef& gate = f.c.gate;
    const Shape& shape = n->shape();
    auto src0 = [&](UOps sidx, UOpRef g, bool ex) { f.kids.push_back(Ctx{n->src[0].get(), std::move(sidx), std::move(g), ex}); };
    if (n != root) {
      if (auto it = sb.slot_of.find(n); it != sb.slot_of.end()) {
        TG_CHECK(!assigns_view(n), TG_ERROR_UNSUPPORTED, "schedule: a kernel reads a view that an assign in the same graph writes; realize the assign first");
        f.value = load(it->second, n, idx, gate);
        return;
      }
      if (sb.split.count(n)) {
        f.value = load(sb.slot(n), n, idx, gate);
        return;
      }
    }
    switch (n->op) {
      case Ops::PARAM: f.value = load(sb.slot(n), n, idx, gate); return;
      case Ops::DEFINE_VAR: f.value = n->ref(); return;  // a bound Variable's value, a kernel argument
      case Ops::ASSIGN:  // the kernel of the assign itself computes its value; every other kernel loads it (above)
        f.kids.push_back(Ctx{n->src[1].get(), idx, gate, f.c.expanded});
        return;
      case Ops::CONST: f.value = n->ref(); return;
      case Ops::CONTIGUOUS:
        if (n == root || is_contiguous_input(n->src[0].get())) return src0(idx, gate, f.c.expanded);
        f.value = load(sb.slot(n), n, idx, gate);
        return;
      case Ops::SCATTER:  // its first kernel copies the target into its buffer (build_scatter's stores come after)
        if (n == root) return src0(idx, gate, f.c.expanded);
        f.value = load(sb.slot(n), n, idx, gate);
        return;
      case Ops::DETACH:
      case Ops::CONTIGUOUS_BACKWARD: return src0(idx, gate, f.c.expanded);
      case Ops::RESHAPE: {
        // a chain of reshapes maps as one, to the shape under the last of them: each maps the linear index divided out
        // over its source's shape, and through two the simplifier can't see that the second's products undo the first's
        // divisions (a (rows, blocks, 144) view flattened and cut kept a division by 144 in every load)
        const UOp* to = n->src[0].get();
        while (to->op == Ops::RESHAPE && to != root && !sb.slot_of.count(to) && !sb.split.count(to)) to = to->src[0].get();
        const Shape& ss = to->shape();
        // fast path: only size-1 dims differ, so indices map one to one
        Shape a, b;
        UOps nz;
        for (size_t i = 0; i < shape.size(); i++)
          if (shape[i] != 1) a.push_back(shape[i]), nz.push_back(idx[i]);
        for (auto d : ss)
          if (d != 1) b.push_back(d);
        UOps sidx;
        if (a == b) {
          size_t j = 0;
          for (auto d : ss) sidx.push_back(d == 1 ? idx_const(0) : nz[j++]);
        } else {
          UOpRef lin = linear_index(idx, shape);
          Shape st = strides_of(ss);
          for (size_t i = 0; i < ss.size(); i++) sidx.push_back(ss[i] == 1 ? idx_const(0) : (lin / idx_const(st[i])) % idx_const(ss[i]));
        }
        f.kids.push_back(Ctx{to, std::move(sidx), gate, f.c.expanded});
        return;
      }
      case Ops::PERMUTE: {
        auto& p = n->arg_ints();
        UOps sidx(idx.size());
        for (size_t i = 0; i < p.size(); i++) sidx[size_t(p[i])] = idx[i];
        return src0(std::move(sidx), gate, f.c.expanded);
      }
      case Ops::EXPAND: {
        const Shape& ss = n->src[0]->shape();
        UOps sidx(idx);
        bool ex = f.c.expanded;
        for (size_t i = 0; i < ss.size(); i++)
          if (ss[i] != shape[i]) sidx[i] = idx_const(0), ex |= shape[i] > 1;
        return src0(std::move(sidx), gate, ex);
      }
      case Ops::SHRINK: {
        auto& a = n->arg_ints();
        UOps sidx(idx);
        for (size_t i = 0; i < idx.size(); i++)
          if (a[2 * i]) sidx[i] = idx[i] + idx_const(a[2 * i]);
        return src0(std::move(sidx), gate, f.c.expanded);
      }
      case Ops::FLIP: {
        auto& a = n->arg_ints();
        UOps sidx(idx);
        for (size_t i = 0; i < idx.size(); i++)
          if (a[i]) sidx[i] = idx_const(shape[i] - 1) - idx[i];
        return src0(std::move(sidx), gate, f.c.expanded);
      }
      case Ops::PAD: {
        auto& a = n->arg_ints();
        const Shape& ss = n->src[0]->shape();
        UOps sidx(idx);
        UOpRef valid;
        // a dim padded by symbolic amounts (its tag): the source starts at the padding before (an expression of the
        // Variables, or a constant) and ends after its own size (its Variable or expression, or a constant)
        auto* sym_dims = std::get_if<std::vector<int64_t>>(&n->tag);
        auto sym_before = [&](size_t i) -> UOpRef {
          if (!sym_dims) return {};
          auto it = std::find(sym_dims->begin(), sym_dims->end(), int64_t(i));
          return it == sym_dims->end() ? UOpRef() : n->src[1 + 2 * size_t(it - sym_dims->begin())];
        };
        for (size_t i = 0; i < idx.size(); i++) {
          UOpRef before = sym_before(i);
          if (!a[2 * i] && !a[2 * i + 1] && !before) continue;
          if (!before) before = idx_const(a[2 * i]);
          const UOp* size = n->src[0]->sym().empty() ? nullptr : n->src[0]->sym()[i];
          sidx[i] = idx[i] - before;
          // before <= i < before + size, as two strict comparisons
          UOpRef v = ((before - idx_const(1)) < idx[i]) & (idx[i] < before + (size ? size->ref() : idx_const(ss[i])));
          valid = valid ? valid & v : v;
        }
        valid = valid->simplify();
        UOpRef g = gate ? (gate & valid)->simplify() : valid;
        if (g->is_const(0)) {
          f.value = UOp::const_(n->dtype, 0);
          return;
        }
        if (!g->is_const(1)) f.valid = valid;
        return src0(std::move(sidx), g->is_const(1) ? gate : g, f.c.expanded);
      }
      case Ops::REDUCE_AXIS: {
        // a sum that reads no buffer (arange) is tried inline first: if it sums away in closed form (finish), it is an
        // expression of the indices, cheap to recompute anywhere (tinygrad's pm_reduce_simplify in rangeify)
        f.collapse = Ops(n->arg_ints()[0]) == Ops::ADD && sb.no_load(n->src[0].get());
        // fused, it would be recomputed for every expanded element; a long one inside another reduce (a max-pool of a
        // conv's output) nests loops that the optimizer can't tile: its own kernel either way
        if ((f.c.expanded || (reduce_size(n) >= kNestedReduce && in_reduce(idx))) && !f.collapse) {
          f.value = load(sb.slot(n), n, idx, gate);
          return;
        }
        if (!f.collapse) note_inlined(n);
        auto& a = n->arg_ints();
        const Shape& ss = n->src[0]->shape();
        UOps sidx(idx);
        for (size_t i = 1; i < a.size(); i++) {
          size_t ax = size_t(a[i]);
          if (ss[ax] == 1) continue;
          const UOp* v = n->src[0]->sym().empty() ? nullptr : n->src[0]->sym()[ax];
          UOpRef r = v ? UOp::range(v->ref(), next_axis++, REDUCE) : UOp::range(ss[ax], next_axis++, REDUCE);
          reduce_sizes.push_back(ss[ax]);
          sidx[ax] = r, f.rr.push_back(r);
        }
        return src0(std::move(sidx), gate, f.c.expanded);
      }
      default: break;
    }
    if (GroupOp::alu(n->op) || n->op == Ops::CAST || n->op == Ops::BITCAST) {
      // a transcendental read through an expand is recomputed for every expanded element (softmax's exp in a matmul's
      // backward): past kRecompute evaluations it gets a buffer, computed once
      if (f.c.expanded && n != root && (n->op == Ops::EXP2 || n->op == Ops::LOG2 || n->op == Ops::SIN || n->op == Ops::POW) &&
          iterations() >= kRecompute) {
        f.value = load(sb.slot(n), n, idx, gate);
        return;
      }
      for (auto& x : n->src) f.kids.push_back(Ctx{x.get(), idx, gate, f.c.expanded});
      return;
    }
    fail(TG_ERROR_UNSUPPORTED, "schedule: can't lower tensor op " + std::string(op_name(n->op)));
  }

  UOpRef finish(Frame& f) {
    const UOp* n = f.c.n;
    if (n->op == Ops::PAD) return f.valid ? f.valid->where(f.vals[0], UOp::const_(n->dtype, 0)) : f.vals[0];
    if (n->op == Ops::REDUCE_AXIS) {
      if (f.rr.empty()) return f.vals[0];
      UOps src{f.vals[0]};
      src.insert(src.end(), f.rr.begin(), f.rr.end());
      UOpRef red = UOp::make(Ops::REDUCE, n->dtype, std::move(src), n->arg_ints()[0]);
      if (!f.collapse) return red;
      UOpRef c = collapse_reduces(red);
      auto t = c->toposort();
      if (std::none_of(t.begin(), t.end(), [](auto& u) { return u->op == Ops::REDUCE; })) {
        reduce_sizes.resize(reduce_sizes.size() - f.rr.size());  // its source has no reduce: its ranges are the last ones
        return c;
      }
      if (f.c.expanded) return load(sb.slot(n), n, f.c.idx, f.c.gate);
      note_inlined(n);
      return red;
    }
    if (GroupOp::alu(n->op) || n->op == Ops::CAST || n->op == Ops::BITCAST) return n->replace_src(std::move(f.vals));
    return f.vals[0];  // a view or a pass-through
  }
};

static std::string kernel_name(bool reduce, const Shape& out, const std::vector<int64_t>& red) {
  std::string s = reduce ? "r" : "E";
  for (auto d : out)
    if (d != 1) s += "_" + std::to_string(d);
  for (auto d : red) s += "_" + std::to_string(d);
  return s == "E" || s == "r" ? s + "_1" : s;
}

// Fused regions past these limits become several kernels. One kernel of a million lines, or reading 40k buffers, takes
// a C compiler minutes and gigabytes; a long chain of movement ops that don't simplify (reshapes of permutes) nests
// index arithmetic until compilers overflow their own stacks. A buffer every few hundred ops costs one memory pass.
// Inputs are the distinct buffers a region reads (a shared subgraph renders once), tracked as sorted sets capped
// just past the limit.
// A buffer never holds a window: a value between an EXPAND of data and the reduce that sums it (a conv's or a pool's
// sliding windows, a matmul's broadcast product) is many times the size of what it reads, 53 GB for a conv over 10k
// images. Where a limit is reached inside such a region, the values its expands read get the buffers instead, and the
// region counts from them; only a window region itself past a limit is split inside.
void ScheduleBuilder::mark_splits(const UOpRef& sink) {
  static const int64_t max_alu = getenv_int("TG_MAX_FUSED_ALU", 256), max_mv = getenv_int("TG_MAX_FUSED_MOVEMENT", 64),
                       max_in = getenv_int("TG_MAX_FUSED_INPUTS", 256);
  struct Depth {
    int64_t alu = 0, mv = 0;
    std::vector<const UOp*> in;  // sorted, at most max_in + 1 entries
  };
  struct Window {  // a node inside a window region
    Depth d;                        // its depth counted from the bases (as if they were buffers)
    std::vector<const UOp*> bases;  // sorted: the values (not windows) that the region's expands read
  };
  struct Node {
    Depth d;
    std::optional<Window> w;
  };
  std::unordered_map<const UOp*, Node> depth;
  std::vector<const UOp*> merged;
  auto merge_into = [&](std::vector<const UOp*>& into, const std::vector<const UOp*>& from) {
    merged.clear();
    std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(merged));
    if (int64_t(merged.size()) > max_in + 1) merged.resize(size_t(max_in + 1));
    into.swap(merged);
  };
  auto add = [&](Depth& into, const Depth& from) {
    into.alu = std::max(into.alu, from.alu), into.mv = std::max(into.mv, from.mv);
    merge_into(into.in, from.in);
  };
  auto over = [&](const Depth& d) { return d.alu >= max_alu || d.mv >= max_mv || int64_t(d.in.size()) > max_in; };
  // A reduce read through an EXPAND is computed into its own buffer when the kernels are built (a conv's output read by
  // the next conv's windows): the chains before it are not part of the kernels after it. Found from the roots down.
  auto topo = sink->toposort();
  std::unordered_set<const UOp*> under_expand, realized;
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const UOp* u = it->get();
    bool ex = under_expand.count(u);
    if (u->op == Ops::REDUCE_AXIS && ex) realized.insert(u), ex = false;
    if (u->op == Ops::CONTIGUOUS || u->op == Ops::SCATTER) ex = false;
    ex |= u->op == Ops::EXPAND && prod(u->shape()) > prod(u->src[0]->shape());
    if (ex)
      for (auto& x : u->src) under_expand.insert(x.get());
  }
  for (auto& u : topo) {
    for (auto& x : u->src) users[x.get()]++;
    Node nd;
    // an EXPAND of a value that reads a buffer starts a window; a reduce (or a buffer) ends it
    bool starts = u->op == Ops::EXPAND && prod(u->shape()) > prod(u->src[0]->shape()) && !depth[u->src[0].get()].d.in.empty();
    bool ends = u->op == Ops::REDUCE_AXIS || u->op == Ops::CONTIGUOUS || u->op == Ops::SCATTER || u->op == Ops::PARAM || u->op == Ops::BUFFER;
    // combined with a value of data (not a window, not a constant), the result is data-sized: a bias added to a conv's
    // output is not a window
    bool win = false, data = false;
    for (auto& x : u->src) {
      const Node& s = depth[x.get()];
      win |= s.w.has_value(), data |= !s.w && !s.d.in.empty();
    }
    bool inside = !ends && (starts || (win && !data));
    if (inside) nd.w.emplace();
    for (auto& x : u->src) {
      const Node& s = depth[x.get()];
      add(nd.d, s.d);
      if (!inside) continue;
      if (s.w) add(nd.w->d, s.w->d), merge_into(nd.w->bases, s.w->bases);
      else if (starts) nd.w->d.in = {x.get()}, nd.w->bases = {x.get()};  // the value read through the expand, as a buffer
      else add(nd.w->d, s.d);  // a constant
    }
    bool alu = GroupOp::alu(u->op) || u->op == Ops::CAST || u->op == Ops::BITCAST || u->op == Ops::REDUCE_AXIS;
    for (Depth* d : {&nd.d, nd.w ? &nd.w->d : nullptr})
      if (d) d->alu += alu, d->mv += GroupOp::movement(u->op);
    if (u->op == Ops::PARAM || u->op == Ops::BUFFER) nd.d.in = {u.get()};
    if (over(nd.d)) {
      if (nd.w && !over(nd.w->d)) {
        for (const UOp* b : nd.w->bases)  // a buffer already (counted from 0) needs no copy
          if (Depth& bd = depth[b].d; bd.alu || bd.mv) split.insert(b), bd = Depth{0, 0, {b}};
        nd.d = nd.w->d;
      } else {
        split.insert(u.get()), nd = Node{Depth{0, 0, {u.get()}}, {}};
      }
    }
    // an arange's sum reads no buffer: it is summed in closed form, not realized
    if (u->op == Ops::CONTIGUOUS || u->op == Ops::SCATTER || (realized.count(u.get()) && !nd.d.in.empty())) nd = Node{Depth{0, 0, {u.get()}}, {}};
    depth[u.get()] = std::move(nd);
  }
}

// The value of n reads no buffer: it is built from constants and index math only (movement ops, cheap ALU), with no
// reduce or kernel boundary inside, so evaluating it inline has no side effect to undo.
bool ScheduleBuilder::no_load(const UOp* n0) {
  std::vector<std::pair<const UOp*, size_t>> stack{{n0, 0}};
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (no_load_memo.count(n)) {
      stack.pop_back();
      continue;
    }
    bool ok = n->op == Ops::CONST || n->op == Ops::DEFINE_VAR || GroupOp::movement(n->op) || n->op == Ops::DETACH ||
              n->op == Ops::CONTIGUOUS_BACKWARD || n->op == Ops::CAST || n->op == Ops::BITCAST ||
              (GroupOp::alu(n->op) && n->op != Ops::EXP2 && n->op != Ops::LOG2 && n->op != Ops::SIN && n->op != Ops::POW);
    ok &= !slot_of.count(n) && !split.count(n);
    if (ok && i < n->src.size()) {
      const UOp* s = n->src[i++].get();
      if (auto it = no_load_memo.find(s); it == no_load_memo.end()) stack.emplace_back(s, 0);
      else if (!it->second) no_load_memo[n] = false, stack.pop_back();
      continue;
    }
    no_load_memo[n] = ok && std::all_of(n->src.begin(), n->src.end(), [&](auto& s) { return no_load_memo.at(s.get()); });
    stack.pop_back();
  }
  return no_load_memo.at(n0);
}

// A node that needs a buffer gets its slot now and its kernel later, so nested kernel boundaries never recurse.
int ScheduleBuilder::slot(const UOp* n) {
  if (auto it = slot_of.find(n); it != slot_of.end()) return it->second;
  if (n->op == Ops::PARAM) return int(n->arg_ints()[0]);
  if (n->op == Ops::ASSIGN) {
    int t = assign_target_slot(n);
    if (split_assigns) split.insert(n->src[1].get());
    slot_of[n] = t;
    pending.emplace_back(n, t);
    return t;
  }
  int out = int(s.slots.size());
  s.slots.emplace_back(n->dtype, prod(n->shape()));
  slot_of[n] = out;
  pending.emplace_back(n, out);
  return out;
}

void ScheduleBuilder::build(const UOp* n, int out) {
  const Shape& shape = n->shape();
  if (prod(shape) == 0) return;
  if (const UOp* sc = in_place_scatter(n); sc && build_scatter(n, sc, out)) return;
  KernelBuilder kb{*this, n, {}, {}};
  int64_t size = s.slots[size_t(out)].second;
  UOpRef buf = kb.global(out, n->dtype, size);
  UOps idx;
  // a dim bound to a Variable loops to its value; its buffer is laid out for the Variable's largest value
  for (size_t i = 0; i < shape.size(); i++) {
    const UOp* v = n->sym().empty() ? nullptr : n->sym()[i];
    idx.push_back(shape[i] == 1 ? idx_const(0) : v ? UOp::range(v->ref(), kb.next_axis++, LOOP) : UOp::range(shape[i], kb.next_axis++, LOOP));
  }
  UOpRef dst = UOp::make(Ops::INDEX, buf->dtype, {buf, linear_index(idx, shape)});
  if (assigns_view(n)) {
    // through the view: the address (and where the view pads, the gate) that reading the view there would load
    UOpRef t = kb.eval({n->src[0].get(), idx, {}, false});
    if (t->op == Ops::WHERE && t->src[1]->op == Ops::LOAD) t = t->src[1];
    TG_CHECK(t->op == Ops::LOAD && t->src[0]->src[0] == buf, TG_ERROR_UNSUPPORTED, "schedule: can't write through this view of a buffer");
    dst = t->src[0];
  }
  UOpRef v = kb.eval({n, idx, {}, false});
  UOpRef store = UOp::make(Ops::STORE, dtypes::void_, {dst, v});
  if (!add_kernel(n, kb, UOp::sink({store}), "")) return build(n, out);  // an assign not safe in place: its value got a buffer
  if (n->op == Ops::SCATTER) build_scatter(n, n, out);
}

// t.assign(t.put(...)) (setitem with tensor indices on a realized tensor), the put used only there: its stores can go
// straight into t's buffer, without the copy in and out
const UOp* ScheduleBuilder::in_place_scatter(const UOp* n) {
  if (n->op != Ops::ASSIGN || assigns_view(n) || split_assigns) return nullptr;
  const UOp* v = n->src[1].get();
  while (v->op == Ops::RESHAPE && users[v] == 1) v = v->src[0].get();
  if (v->op != Ops::SCATTER || users[v] != 1) return nullptr;
  const UOp* t = v->src[0].get();
  while (t->op == Ops::RESHAPE) t = t->src[0].get();
  return t == previous_version(n) ? v : nullptr;
}

// A scatter's second kernel: one loop over the positions and values in row-major order that stores each value through
// its loaded position, skipping positions outside the target. The loop is the AST's own (an END over REDUCE-kind
// ranges), which no optimizer splits over threads or lanes: a position named twice keeps the last value, or each
// value in turn is combined into the element. The owner is the node whose buffer it writes: the scatter itself, after
// the kernel that copies its target in, or an assign of it into its own target (in place; refused, adding nothing,
// where the positions or values read that buffer: they would see their own stores).
bool ScheduleBuilder::build_scatter(const UOp* owner, const UOp* n, int out) {
  const UOp *pos = n->src[1].get(), *val = n->src[2].get();
  const std::string& reduce = n->argv<std::string>();
  int64_t size = s.slots[size_t(out)].second;
  KernelBuilder kb{*this, owner, {}, {}};
  UOpRef buf = kb.global(out, n->dtype, size);
  UOps idx, rngs;
  for (auto d : pos->shape()) {
    idx.push_back(d == 1 ? idx_const(0) : UOp::range(d, kb.next_axis++, REDUCE));
    if (d != 1) rngs.push_back(idx.back());
  }
  UOpRef at = kb.eval({pos, idx, {}, false})->cast(dtypes::index), v = kb.eval({val, idx, {}, false});
  if (owner != n && kb.read_of.count(out)) return false;
  UOpRef dst = UOp::make(Ops::INDEX, buf->dtype, {buf, at, (idx_const(-1) < at) & (at < idx_const(size))});
  if (reduce != "replace") {
    UOpRef old = UOp::make(Ops::LOAD, n->dtype, {dst});
    bool b = dtypes::is_bool(n->dtype);
    v = reduce == "sum" ? (b ? old | v : old + v) : reduce == "prod" ? (b ? old & v : old * v) : reduce == "amax" ? old->alu(Ops::MAX, {v})
                                                                                                                    : (v < old)->where(v, old);
  }
  UOpRef st = UOp::make(Ops::STORE, dtypes::void_, {dst, v});
  if (!rngs.empty()) {
    rngs.insert(rngs.begin(), st);
    st = UOp::make(Ops::END, dtypes::void_, std::move(rngs));
  }
  std::string name = "scatter_" + std::to_string(prod(pos->shape()));
  if (owner != n) return add_kernel(owner, kb, UOp::sink({st}), name, false);
  size_t copy = producer.at(n);
  add_kernel(n, kb, UOp::sink({st}), name);
  after.emplace_back(producer.at(n), copy);
  return true;
}

// Simplifies a kernel's AST, numbers the globals it still uses from 0 and appends it as the producer of n's buffer. An
// assign whose value reads other elements of its target is not added (false): its value gets a buffer (build again).
bool ScheduleBuilder::add_kernel(const UOp* n, const KernelBuilder& kb, UOpRef ast, const std::string& name, bool check_in_place) {
  // the reduces summed in closed form (a gather's) are gone before the kernel is named
  ast = collapse_reduces(graph_rewrite(ast, symbolic(), nullptr, false, "rangeify"));
  std::vector<std::pair<int64_t, int64_t>> reduce_ranges;  // (axis, size), named in the order they were made
  for (auto& u : ast->toposort())
    if (u->op == Ops::RANGE && u->arg_ints()[1] == REDUCE) reduce_ranges.emplace_back(u->arg_ints()[0], u->vmax() + 1);
  std::sort(reduce_ranges.begin(), reduce_ranges.end());
  std::vector<int64_t> reduce_sizes;
  for (auto& [axis, size] : reduce_ranges) reduce_sizes.push_back(size);
  // simplification can drop every load of a buffer (x*0, a pad that is never in bounds): number the globals still used
  // 0..n-1 again, so the kernel takes exactly the buffers it reads
  std::vector<const UOp*> globals;
  for (auto& u : ast->toposort())
    if (u->op == Ops::DEFINE_GLOBAL) globals.push_back(u.get());
  std::sort(globals.begin(), globals.end(), [](const UOp* a, const UOp* b) { return a->argv<int64_t>() < b->argv<int64_t>(); });
  std::vector<int> used;
  UOpMap<UOpRef> renumber;
  for (auto* g : globals) {
    if (g->argv<int64_t>() != int64_t(used.size())) renumber[g->ref()] = g->replace_arg(int64_t(used.size()));
    used.push_back(kb.slots[size_t(g->argv<int64_t>())]);
  }
  if (!renumber.empty()) ast = ast->substitute(renumber);
  // in place, each element may read only its own old value: otherwise the value is computed into a buffer first
  if (check_in_place && n->op == Ops::ASSIGN && !in_place_safe(ast)) {
    TG_CHECK(split.insert(n->src[1].get()).second, TG_ERROR_INTERNAL, "schedule: can't make an assign safe in place");
    return false;
  }
  auto k = std::make_shared<ScheduleItem>();
  k->ast = ast, k->slots = used, k->name = name.empty() ? kernel_name(!reduce_sizes.empty(), n->shape(), reduce_sizes) : name;
  producer[n] = s.kernels.size();
  reads.emplace_back();
  for (auto& [sl, node] : kb.read_of) reads.back().insert(node);
  s.kernels.push_back(std::move(k));
  return true;
}

// the kernel's loads from its output buffer (global 0) all use the store's index, ungated
bool ScheduleBuilder::in_place_safe(const UOpRef& ast) {
  const UOp* st = ast->src[0].get();
  for (auto& u : ast->toposort())
    if (u->op == Ops::LOAD && u->src[0]->src[0]->op == Ops::DEFINE_GLOBAL && u->src[0]->src[0]->argv<int64_t>() == 0 &&
        (u->src[0]->src.size() > 2 || u->src[0]->src[1] != st->src[0]->src[1]))
      return false;
  return true;
}

void ScheduleBuilder::build_pending() {
  for (size_t i = 0; i < pending.size(); i++) build(pending[i].first, pending[i].second);  // build() may append
  pending.clear();
}

// kernels run after the kernels whose outputs they read, and an assign after the readers of the version it replaces:
// a depth-first post-order from the kernels in build order
bool ScheduleBuilder::order_kernels() {
  std::vector<std::vector<size_t>> deps(s.kernels.size());
  std::unordered_map<const UOp*, std::vector<size_t>> readers;
  for (size_t k = 0; k < reads.size(); k++)
    for (const UOp* r : reads[k]) {
      readers[r].push_back(k);
      if (auto it = producer.find(r); it != producer.end()) deps[k].push_back(it->second);
    }
  for (auto [k, d] : after) deps[k].push_back(d);
  for (auto& [n, k] : producer)
    if (n->op == Ops::ASSIGN)
      for (size_t r : readers[previous_version(n)])
        if (r != k) deps[k].push_back(r);
  size_t n = s.kernels.size();
  std::vector<size_t> pos(n), dfs;  // a depth-first post-order: the tie-break, and the cycle check
  std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the stack, 2 placed
  for (size_t k0 = 0; k0 < n; k0++) {
    std::vector<std::pair<size_t, size_t>> stack{{k0, 0}};
    while (!stack.empty()) {
      auto& [k, i] = stack.back();
      if (state[k] == 2) {
        stack.pop_back();
        continue;
      }
      state[k] = 1;
      if (i < deps[k].size()) {
        size_t d = deps[k][i++];
        if (state[d] == 1) return false;
        if (state[d] == 0) stack.emplace_back(d, 0);
        continue;
      }
      state[k] = 2, pos[k] = dfs.size(), dfs.push_back(k);
      stack.pop_back();
    }
  }
  // List scheduling for memory: of the kernels whose dependencies ran, the next is the one that grows live memory least
  // (its output's bytes minus the bytes of intermediates it reads last), so activations die as soon as their last reader
  // ran. The memory planner then finds the short lifetimes it can share.
  auto bytes = [&](int slot) { return int64_t(s.slots[size_t(slot)].second) * s.slots[size_t(slot)].first.itemsize(); };
  std::vector<int64_t> left(s.slots.size(), 0);  // kernels still to read each slot
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> waiting(n);
  for (size_t k = 0; k < n; k++) {
    for (size_t i = 1; i < s.kernels[k]->slots.size(); i++) left[size_t(s.kernels[k]->slots[i])]++;
    std::sort(deps[k].begin(), deps[k].end());
    deps[k].erase(std::unique(deps[k].begin(), deps[k].end()), deps[k].end());
    waiting[k] = deps[k].size();
    for (size_t d : deps[k]) users[d].push_back(k);
  }
  auto growth = [&](size_t k) {
    auto& sl = s.kernels[k]->slots;
    int64_t g = sl[0] >= s.n_inputs ? bytes(sl[0]) : 0;
    for (size_t i = 1; i < sl.size(); i++)
      if (sl[i] >= s.n_inputs && !root_slots.count(sl[i]) && left[size_t(sl[i])] == 1) g -= bytes(sl[i]);
    return g;
  };
  // the ready kernels by depth-first position; the choice looks at the first kWindow of them, so a schedule of 100k
  // independent kernels costs n * kWindow, not n^2
  constexpr size_t kWindow = 32;
  std::set<std::pair<size_t, size_t>> ready;  // (pos, kernel)
  for (size_t k = 0; k < n; k++)
    if (!waiting[k]) ready.emplace(pos[k], k);
  std::vector<std::shared_ptr<ScheduleItem>> out;
  while (!ready.empty()) {
    auto best = ready.begin();
    int64_t best_g = growth(best->second);
    size_t seen = 1;
    for (auto it = std::next(ready.begin()); it != ready.end() && seen < kWindow; ++it, ++seen)
      if (int64_t g = growth(it->second); g < best_g) best = it, best_g = g;
    size_t k = best->second;
    ready.erase(best);
    out.push_back(s.kernels[k]);
    for (size_t i = 1; i < s.kernels[k]->slots.size(); i++) left[size_t(s.kernels[k]->slots[i])]--;
    for (size_t u : users[k])
      if (--waiting[u] == 0) ready.emplace(pos[u], u);
  }
  s.kernels = std::move(out);
  return true;
}

using Inputs = std::vector<std::pair<DType, int64_t>>;

// The most iterations a reduce in r's kernel runs once the reduce rules summed away what they can. An arange, or a
// gather (a sum of where(idx == arange, x, 0)), runs none: split, it would only get a buffer of partial results.
static int64_t reduce_work(const UOp* r, const Inputs& inputs) {
  Schedule tmp;
  tmp.n_inputs = int(inputs.size()), tmp.slots = inputs;
  ScheduleBuilder sb{tmp};
  sb.mark_splits(r->ref());
  try {
    sb.build(r, sb.slot(r));
  } catch (const Error&) {  // what can't be built alone (an assign read before and after) is built as before
    return INT64_MAX;
  }
  int64_t work = 0;
  for (auto& u : tmp.kernels.back()->ast->toposort()) {  // built with the reduces collapsed
    if (u->op != Ops::REDUCE) continue;
    int64_t w = 1;
    for (size_t i = 1; i < u->src.size(); i++) {
      int64_t n = u->src[i]->op == Ops::RANGE ? u->src[i]->vmax() + 1 : INT64_MAX;
      w = w > INT64_MAX / std::max<int64_t>(n, 1) ? INT64_MAX : w * n;
    }
    work = std::max(work, w);
  }
  return work;
}

// A reduce of many elements into few outputs runs as two kernels (tinygrad's split_reduceop): the first reduces a
// contiguous stretch into each of up to 256 partial results, which gives the first kernel output rows to spread over
// cores and vector lanes; the second reduces the partials (along their first axis, where tinygrad has them last).
static UOpRef split_reduceop(const UOp* r, const Inputs& inputs) {
  const UOpRef& x = r->src[0];
  if (!x->has_shape() || !r->has_shape() || !std::holds_alternative<std::monostate>(r->tag) || !x->sym().empty()) return {};
  static const int64_t threshold = getenv_int("REDUCEOP_SPLIT_THRESHOLD", 16384), split_size = getenv_int("REDUCEOP_SPLIT_SIZE", 22);
  if (!getenv_int("SPLIT_REDUCEOP", 1)) return {};
  const Shape& xs = x->shape();
  int64_t in = prod(xs), out = prod(r->shape());
  if (in == 0 || out == 0 || in / out < threshold || reduce_work(r, inputs) < threshold) return {};
  auto& arg = r->arg_ints();
  for (size_t k = 1; k < arg.size(); k++) {
    size_t i = size_t(arg[k]);
    for (int64_t d = std::min<int64_t>(256, (int64_t(1) << split_size) / out); d >= 8; d--) {
      if (xs[i] % d) continue;
      Shape sp(xs.begin(), xs.begin() + long(i));
      sp.push_back(d), sp.push_back(xs[i] / d);
      sp.insert(sp.end(), xs.begin() + long(i) + 1, xs.end());
      // the partial results' axis goes first: the first kernel's outermost loop (and its threads) walks the stretches, so
      // the inputs one stretch reads stay in cache while its outputs are computed (a conv's weight gradient reads its
      // image and output gradient once per output tile: over all 512 images they spill the cache, over 8 they don't)
      std::vector<int64_t> perm{int64_t(i)}, rarg{arg[0]};
      for (int64_t j = 0; j < int64_t(sp.size()); j++)
        if (j != int64_t(i)) perm.push_back(j);
      for (size_t a = 1; a < arg.size(); a++) rarg.push_back(arg[a] + 1);
      UOpRef v = UOp::make(Ops::PERMUTE, x->dtype, {UOp::make(Ops::RESHAPE, x->dtype, {x}, sp)}, perm);
      // both halves are tagged: a split reduce is not split again
      UOpRef first = UOp::make(Ops::CONTIGUOUS, x->dtype, {UOp::make(Ops::REDUCE_AXIS, x->dtype, {v}, rarg, int64_t(1))});
      UOpRef second = UOp::make(Ops::REDUCE_AXIS, x->dtype, {first}, std::vector<int64_t>{arg[0], 0}, int64_t(1));
      return UOp::make(Ops::RESHAPE, x->dtype, {second}, r->shape());
    }
  }
  return {};
}

// One pass of scheduling, with `shared` reduces realized into their own buffers. Reports in `more` the reduces that
// several kernels computed inline (each would redo the work: an optimizer's gradient feeds m, v and w's updates), or
// one kernel while another stores it.
static std::shared_ptr<Schedule> schedule_once(const UOpRef& sink, const std::vector<std::pair<DType, int64_t>>& inputs, bool split_assigns,
                                               const std::unordered_set<const UOp*>& shared, std::vector<const UOp*>& more) {
  auto s = std::make_shared<Schedule>();
  s->n_inputs = int(inputs.size());
  s->slots = inputs;
  ScheduleBuilder sb{*s, {}, {}, {}, {}, shared, split_assigns, {}, {}};
  sb.mark_splits(sink);
  for (auto& root : sink->src) {
    if (is_view_of_input(root.get())) {
      s->outputs.push_back(root);
      continue;
    }
    int k = sb.slot(root.get());
    sb.root_slots.insert(k);
    if (assigns_view(root.get())) {  // the value is the view, of the new version
      UOpRef p = UOp::make(Ops::PARAM, root->dtype, {}, std::vector<int64_t>{k, s->slots[size_t(k)].second});
      s->outputs.push_back(root->src[0]->substitute({{previous_version(root.get())->ref(), p}}));
      continue;
    }
    UOpRef p = UOp::make(Ops::PARAM, root->dtype, {}, std::vector<int64_t>{k, prod(root->shape())});
    s->outputs.push_back(root->shape() == p->shape() ? p : UOp::make(Ops::RESHAPE, root->dtype, {p}, std::vector<int64_t>(root->shape())));
  }
  for (auto& u : sink->toposort())  // side effects happen even where no root's value needs them
    if (u->op == Ops::ASSIGN) sb.slot(u.get());
  sb.build_pending();
  // a big reduce computed inline by two kernels, or any computed inline by one while another kernel stores it (a conv's
  // output read through the next conv's windows, and again by its ReLU's backward): one buffer, which every kernel
  // loads. A value stored once and recomputed elsewhere in another order may differ in its last bit, and max-pool's
  // backward compares them for equality
  std::vector<const UOp*> found;
  for (auto& [r, ks] : sb.inlined_in)
    if ((ks.size() > 1 && prod(r->src[0]->shape()) >= kRecompute) || sb.slot_of.count(r)) found.push_back(r);
  // the outermost first: a reduce inside another one that gets a buffer is computed by that kernel alone (a quantized
  // matmul's per-block sums, in a matmul whose output two kernels read); if still shared, the next try says. Inside
  // means reached from it within one kernel, not across a buffer of this schedule: a chain of residual blocks (each
  // block's output stored for the next conv and computed again in the residual add) is then found in one try, where
  // walking the whole graph took a try per block and stopped after 8 (MobileNetV2 recomputed its later blocks)
  std::unordered_set<const UOp*> inside;
  for (const UOp* r : found) {
    std::vector<const UOp*> stack;
    for (auto& x : r->src) stack.push_back(x.get());
    while (!stack.empty()) {
      const UOp* u = stack.back();
      stack.pop_back();
      if (sb.slot_of.count(u) || !inside.insert(u).second) continue;
      for (auto& x : u->src) stack.push_back(x.get());
    }
  }
  for (const UOp* r : found)
    if (!inside.count(r)) more.push_back(r);
  return sb.order_kernels() ? s : nullptr;
}

// Assigns whose values read each other's old buffers (w1's update reads w2, w2's reads w1) can't all run in place in
// any order: then every assign's value is computed first and copied in (split_assigns).
std::shared_ptr<const Schedule> create_schedule(const UOpRef& sink_in, const Inputs& inputs) {
  static const PatternMatcher pm_split(
      {{UPat(Ops::REDUCE_AXIS, {UPat::var("x")}), [](const Match& m) { return split_reduceop(m.root, m.ctx<const Inputs>()); }}}, "split_reduceop");
  UOpRef sink = graph_rewrite(sink_in, pm_split, const_cast<Inputs*>(&inputs), false, "split reduceop");
  std::unordered_set<const UOp*> shared;
  bool split_assigns = false;
  for (int tries = 0;; tries++) {
    std::vector<const UOp*> more;
    auto s = schedule_once(sink, inputs, split_assigns, shared, more);
    if (!more.empty() && tries < 8) {
      shared.insert(more.begin(), more.end());
      continue;
    }
    if (s) return s;
    TG_CHECK(!split_assigns, TG_ERROR_UNSUPPORTED,
             "schedule: the assigns in this graph need an impossible order (a cycle); realize them one at a time");
    split_assigns = true;
  }
}

// ---- the schedule cache: key is the normalized sink (hash-consed, so the pointer is the structure) ----
static LruCache<UOpRef, std::shared_ptr<const Schedule>, UOpHash>& schedule_cache() {
  static auto* c = new LruCache<UOpRef, std::shared_ptr<const Schedule>, UOpHash>(size_t(getenv_int("TG_SCHEDULE_CACHE", 512)));
  return *c;
}
std::shared_ptr<const Schedule> get_schedule(const UOpRef& sink, const std::vector<std::pair<DType, int64_t>>& inputs) {
  if (auto s = schedule_cache().get(sink)) return *s;
  std::shared_ptr<const Schedule> s;
  {
    SimplifyMemo memo;
    s = create_schedule(sink, inputs);
  }
  GlobalCounters::schedule_count++;
  return schedule_cache().put(sink, std::move(s));
}
size_t schedule_cache_size() { return schedule_cache().size(); }

}  // namespace tg
