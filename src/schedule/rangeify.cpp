// Rangeify: movement ops become index arithmetic over RANGE loops, elementwise ops fuse into their consumers, and a
// kernel boundary appears only where a buffer must exist (a root, CONTIGUOUS, a reduce whose value would be recomputed
// under an EXPAND).
#include <algorithm>
#include <list>

#include "schedule/schedule.h"
#include "uop/symbolic.h"

namespace tg {

enum RangeKind : int64_t { LOOP = 0, REDUCE = 1 };

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

struct ScheduleBuilder {
  Schedule& s;
  std::unordered_map<const UOp*, int> slot_of;  // realized tensor-level node -> slot (nodes live in the sink being scheduled)

  int slot(const UOp* n);
};

// Builds one kernel: evaluates the tensor graph at symbolic indices.
struct KernelBuilder {
  ScheduleBuilder& sb;
  std::vector<int> slots;  // kernel arg -> schedule slot
  int64_t next_axis = 0;
  std::vector<int64_t> reduce_sizes;
  struct Key {
    const UOp* n;
    std::vector<const UOp*> idx;
    const UOp* gate;
    bool expanded;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      size_t h = std::hash<const void*>()(k.n) ^ k.expanded;
      for (auto* p : k.idx) h = hash_combine(h, std::hash<const void*>()(p));
      return hash_combine(h, std::hash<const void*>()(k.gate));
    }
  };
  std::unordered_map<Key, UOpRef, KeyHash> memo;

  UOpRef global(int slot, DType dt, int64_t size) {
    auto it = std::find(slots.begin(), slots.end(), slot);
    int64_t arg = it - slots.begin();
    if (it == slots.end()) slots.push_back(slot);
    return UOp::make(Ops::DEFINE_GLOBAL, dt.ptr_to(size), {}, arg);
  }
  UOpRef load(int slot, const UOp* n, const UOps& idx, const UOpRef& gate) {
    auto [dt, size] = sb.s.slots[size_t(slot)];
    UOps isrc{global(slot, dt, size), linear_index(idx, n->shape())};
    if (gate) isrc.push_back(gate);
    return UOp::make(Ops::LOAD, dt, {UOp::make(Ops::INDEX, dt.ptr_to(size), isrc)});
  }

  UOpRef eval(const UOp* n, const UOps& idx, const UOpRef& gate, bool expanded) {
    Key k{n, {}, gate.get(), expanded};
    for (auto& i : idx) k.idx.push_back(i.get());
    if (auto it = memo.find(k); it != memo.end()) return it->second;
    UOpRef r = eval_(n, idx, gate, expanded);
    memo.emplace(std::move(k), r);
    return r;
  }

  UOpRef eval_(const UOp* n, const UOps& idx, const UOpRef& gate, bool expanded) {
    const Shape& shape = n->shape();
    if (auto it = sb.slot_of.find(n); it != sb.slot_of.end()) return load(it->second, n, idx, gate);
    switch (n->op) {
      case Ops::PARAM: return load(sb.slot(n), n, idx, gate);
      case Ops::CONST: return n->ref();
      case Ops::CONTIGUOUS:
        if (is_contiguous_input(n->src[0].get())) return eval(n->src[0].get(), idx, gate, expanded);
        return load(sb.slot(n), n, idx, gate);
      case Ops::DETACH:
      case Ops::CONTIGUOUS_BACKWARD: return eval(n->src[0].get(), idx, gate, expanded);
      case Ops::RESHAPE: {
        const Shape& ss = n->src[0]->shape();
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
        return eval(n->src[0].get(), sidx, gate, expanded);
      }
      case Ops::PERMUTE: {
        auto& p = n->arg_ints();
        UOps sidx(idx.size());
        for (size_t i = 0; i < p.size(); i++) sidx[size_t(p[i])] = idx[i];
        return eval(n->src[0].get(), sidx, gate, expanded);
      }
      case Ops::EXPAND: {
        const Shape& ss = n->src[0]->shape();
        UOps sidx(idx);
        bool ex = expanded;
        for (size_t i = 0; i < ss.size(); i++)
          if (ss[i] != shape[i]) sidx[i] = idx_const(0), ex |= shape[i] > 1;
        return eval(n->src[0].get(), sidx, gate, ex);
      }
      case Ops::SHRINK: {
        auto& a = n->arg_ints();
        UOps sidx(idx);
        for (size_t i = 0; i < idx.size(); i++)
          if (a[2 * i]) sidx[i] = idx[i] + idx_const(a[2 * i]);
        return eval(n->src[0].get(), sidx, gate, expanded);
      }
      case Ops::FLIP: {
        auto& a = n->arg_ints();
        UOps sidx(idx);
        for (size_t i = 0; i < idx.size(); i++)
          if (a[i]) sidx[i] = idx_const(shape[i] - 1) - idx[i];
        return eval(n->src[0].get(), sidx, gate, expanded);
      }
      case Ops::PAD: {
        auto& a = n->arg_ints();
        const Shape& ss = n->src[0]->shape();
        UOps sidx(idx);
        UOpRef valid;
        for (size_t i = 0; i < idx.size(); i++) {
          if (!a[2 * i] && !a[2 * i + 1]) continue;
          sidx[i] = idx[i] - idx_const(a[2 * i]);
          // before <= i < before + size, as two strict comparisons
          UOpRef v = (idx_const(a[2 * i] - 1) < idx[i]) & (idx[i] < idx_const(a[2 * i] + ss[i]));
          valid = valid ? valid & v : v;
        }
        valid = valid->simplify();
        UOpRef g = gate ? (gate & valid)->simplify() : valid;
        if (g->is_const(0)) return UOp::const_(n->dtype, 0);
        UOpRef v = eval(n->src[0].get(), sidx, g->is_const(1) ? gate : g, expanded);
        return g->is_const(1) ? v : valid->where(v, UOp::const_(n->dtype, 0));
      }
      case Ops::REDUCE_AXIS: {
        if (expanded) return load(sb.slot(n), n, idx, gate);  // fused, it would be recomputed for every expanded element
        auto& a = n->arg_ints();
        const Shape& ss = n->src[0]->shape();
        UOps sidx(idx), rr;
        for (size_t i = 1; i < a.size(); i++) {
          size_t ax = size_t(a[i]);
          if (ss[ax] == 1) continue;
          UOpRef r = UOp::range(ss[ax], next_axis++, REDUCE);
          reduce_sizes.push_back(ss[ax]);
          sidx[ax] = r, rr.push_back(r);
        }
        UOpRef v = eval(n->src[0].get(), sidx, gate, expanded);
        if (rr.empty()) return v;
        rr.insert(rr.begin(), v);
        return UOp::make(Ops::REDUCE, n->dtype, rr, a[0]);
      }
      default: break;
    }
    if (GroupOp::alu(n->op) || n->op == Ops::CAST || n->op == Ops::BITCAST) {
      UOps src;
      for (auto& x : n->src) src.push_back(eval(x.get(), idx, gate, expanded));
      return n->replace_src(std::move(src));
    }
    fail(TG_ERROR_UNSUPPORTED, "schedule: can't lower tensor op " + std::string(op_name(n->op)));
  }
};

static std::string kernel_name(bool reduce, const Shape& out, const std::vector<int64_t>& red) {
  std::string s = reduce ? "r" : "E";
  for (auto d : out)
    if (d != 1) s += "_" + std::to_string(d);
  for (auto d : red) s += "_" + std::to_string(d);
  return s == "E" || s == "r" ? s + "_1" : s;
}

int ScheduleBuilder::slot(const UOp* n) {
  if (auto it = slot_of.find(n); it != slot_of.end()) return it->second;
  if (n->op == Ops::PARAM) return int(n->arg_ints()[0]);
  int out = int(s.slots.size());
  s.slots.emplace_back(n->dtype, prod(n->shape()));
  KernelBuilder kb{*this};
  kb.slots.push_back(out);
  const Shape& shape = n->shape();
  if (prod(shape) > 0) {
    UOps idx;
    for (size_t i = 0; i < shape.size(); i++) idx.push_back(shape[i] == 1 ? idx_const(0) : UOp::range(shape[i], kb.next_axis++, LOOP));
    const UOp* body = n->op == Ops::CONTIGUOUS ? n->src[0].get() : n;
    UOpRef v = kb.eval(body, idx, {}, false);
    UOpRef store = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, n->dtype.ptr_to(prod(shape)), {kb.global(out, n->dtype, prod(shape)), linear_index(idx, shape)}), v});
    UOpRef ast = graph_rewrite(UOp::sink({store}), symbolic(), nullptr, false, "rangeify");
    auto k = std::make_shared<KernelItem>();
    k->ast = ast, k->slots = kb.slots, k->name = kernel_name(!kb.reduce_sizes.empty(), shape, kb.reduce_sizes);
    s.kernels.push_back(std::move(k));
  }
  slot_of[n] = out;
  return out;
}

std::shared_ptr<const Schedule> create_schedule(const UOpRef& sink, const std::vector<std::pair<DType, int64_t>>& inputs) {
  auto s = std::make_shared<Schedule>();
  s->n_inputs = int(inputs.size());
  s->slots = inputs;
  ScheduleBuilder sb{*s, {}};
  for (auto& root : sink->src) {
    if (is_view_of_input(root.get())) {
      s->outputs.push_back(root);
      continue;
    }
    int k = sb.slot(root.get());
    UOpRef p = UOp::make(Ops::PARAM, root->dtype, {}, std::vector<int64_t>{k, prod(root->shape())});
    s->outputs.push_back(root->shape() == p->shape() ? p : UOp::make(Ops::RESHAPE, root->dtype, {p}, std::vector<int64_t>(root->shape())));
  }
  return s;
}

// ---- the schedule cache: key is the normalized sink (hash-consed, so the pointer is the structure) ----
static std::mutex cache_mu;
static std::list<std::pair<UOpRef, std::shared_ptr<const Schedule>>>& cache_list() {
  static auto* l = new std::list<std::pair<UOpRef, std::shared_ptr<const Schedule>>>();
  return *l;
}
static std::unordered_map<const UOp*, std::list<std::pair<UOpRef, std::shared_ptr<const Schedule>>>::iterator>& cache_map() {
  static auto* m = new std::unordered_map<const UOp*, std::list<std::pair<UOpRef, std::shared_ptr<const Schedule>>>::iterator>();
  return *m;
}
std::shared_ptr<const Schedule> get_schedule(const UOpRef& sink, const std::vector<std::pair<DType, int64_t>>& inputs) {
  static const size_t limit = size_t(getenv_int("TG_SCHEDULE_CACHE", 512));
  {
    std::lock_guard<std::mutex> lk(cache_mu);
    if (auto it = cache_map().find(sink.get()); it != cache_map().end()) {
      cache_list().splice(cache_list().begin(), cache_list(), it->second);  // most recently used first
      return it->second->second;
    }
  }
  auto s = create_schedule(sink, inputs);
  std::lock_guard<std::mutex> lk(cache_mu);
  if (cache_map().count(sink.get())) return s;
  cache_list().emplace_front(sink, s);
  cache_map()[sink.get()] = cache_list().begin();
  while (cache_list().size() > limit) {
    cache_map().erase(cache_list().back().first.get());
    cache_list().pop_back();
  }
  return s;
}
size_t schedule_cache_size() {
  std::lock_guard<std::mutex> lk(cache_mu);
  return cache_list().size();
}

}  // namespace tg
