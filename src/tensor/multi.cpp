// Allreduce between the devices of one process. Each input is made one flat buffer on its device; a copy between two
// devices is a copy_step (an item, like a kernel), and every combination a kernel on the device that receives. Parts of
// an input are read by offset (a copy's, a kernel's index), never through a Buffer view, so a TinyJit that swaps in the
// next call's input buffers finds them in every item.
#include "tensor/multi.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_set>

#include "engine/realize.h"
#include "runtime/device.h"

namespace tg {

const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return names[int(op)];
}

Tensor reduce_pair(const Tensor& a, const Tensor& b, ReduceOp op) {
  bool logical = a.dtype() == dtypes::bool_;
  switch (op) {
    case ReduceOp::Prod: return logical ? a.bitwise_and(b) : a.mul(b);
    case ReduceOp::Max: return logical ? a.bitwise_or(b) : a.maximum(b);
    case ReduceOp::Min: return logical ? a.bitwise_and(b) : a.minimum(b);
    default: return logical ? a.bitwise_or(b) : a.add(b);
  }
}

namespace {

// elements [start, start + n) of flat buffer b copied to device `dev`, now, as an item (the whole buffer by default)
std::shared_ptr<Buffer> copy_to(const std::shared_ptr<Buffer>& b, const std::string& dev, int64_t start = 0, int64_t n = -1) {
  if (n < 0) n = b->size();
  auto d = std::make_shared<Buffer>(dev, b->dtype(), n);
  size_t item = size_t(b->dtype().itemsize());
  copy_step(d, b, 0, size_t(start) * item, size_t(n) * item);
  return d;
}

}  // namespace

std::vector<Tensor> allreduce_devices(const std::vector<Tensor>& ts, ReduceOp op) {
  size_t n = ts.size();
  TG_CHECK(n > 0, TG_ERROR_INVALID_ARGUMENT, "allreduce: no tensors");
  const Tensor& t0 = ts[0];
  std::set<std::string> devs;
  for (size_t i = 0; i < n; i++) {
    const Tensor& t = ts[i];
    TG_CHECK(t.dtype() == t0.dtype(), TG_ERROR_DTYPE,
             strformat("allreduce: tensor %zu is %s, tensor 0 %s", i, t.dtype().name().c_str(), t0.dtype().name().c_str()));
    TG_CHECK(t.shape() == t0.shape(), TG_ERROR_SHAPE,
             strformat("allreduce: tensor %zu has shape %s, tensor 0 %s", i, sym_shape_str(t).c_str(), sym_shape_str(t0).c_str()));
    TG_CHECK(devs.insert(t.device()).second, TG_ERROR_DEVICE, strformat("allreduce: two tensors on %s (one per device)", t.device().c_str()));
  }
  DType dt = t0.dtype();
  TG_CHECK(op != ReduceOp::Avg || dtypes::is_float(dt), TG_ERROR_DTYPE, "allreduce: avg of " + dt.name() + " (avg is for floats: sum, then divide)");
  DType wide = dt == dtypes::float16 || dt == dtypes::bfloat16 ? dtypes::float32 : dt;
  int64_t numel = t0.numel();
  // every input one flat buffer on its device, in the dtype it is combined in (a kernel first where it is a view or lazy)
  std::vector<std::shared_ptr<Buffer>> flat;
  for (auto& t : ts) flat.push_back((wide == dt ? t : t.cast(wide)).contiguous_buffer("allreduce"));

  auto on = [](const std::shared_ptr<Buffer>& b) { return Tensor::on_buffer(b, {b->size()}); };
  bool ring = n > 1 && numel > 0 && (RING >= 2 || (n > 2 && numel > RING_ALLREDUCE_THRESHOLD && RING >= 1));
  std::vector<std::optional<Tensor>> out(n);
  if (numel == 0) {
    for (size_t i = 0; i < n; i++) out[i] = on(flat[i]);
  } else if (!ring) {
    // every device adds the n tensors in the same order, so every device gets the same bits
    for (size_t i = 0; i < n; i++) {
      std::optional<Tensor> acc;
      for (size_t j = 0; j < n; j++) {
        Tensor x = on(j == i ? flat[i] : copy_to(flat[j], ts[i].device()));
        acc = acc ? reduce_pair(*acc, x, op) : x;
      }
      out[i] = acc;
    }
  } else {
    // n chunks, each a whole number of 64-byte units but the last
    int64_t unit = std::max<int64_t>(1, 64 / wide.itemsize());
    int64_t units = (numel + unit - 1) / unit, base = units / int64_t(n), left = units % int64_t(n);
    std::vector<std::pair<int64_t, int64_t>> chunks;
    for (int64_t i = 0, at = 0; i < int64_t(n); i++) {
      int64_t len = std::min(numel - at, (base + (i < left)) * unit);
      chunks.push_back({at, len}), at += len;
    }
    // reduce-scatter: chunk i starts on device i and gathers one more device's part at each of n-1 hops
    std::vector<std::shared_ptr<Buffer>> reduced(n);
    std::vector<size_t> holder(n);
    for (size_t i = 0; i < n; i++) {
      auto [s, len] = chunks[i];
      if (len == 0) continue;
      std::shared_ptr<Buffer> r;
      for (size_t step = 0; step + 1 < n; step++) {
        size_t dst = (i + step + 1) % n;
        Tensor mine = on(flat[dst]).shrink({{s, s + len}});
        r = reduce_pair(on(r ? copy_to(r, ts[dst].device()) : copy_to(flat[i], ts[dst].device(), s, len)), mine, op).contiguous_buffer("allreduce");
      }
      reduced[i] = r, holder[i] = (i + n - 1) % n;
    }
    // all-gather: each finished chunk goes around the ring once more, into its place in every device's result
    std::vector<std::shared_ptr<Buffer>> whole(n);
    for (size_t j = 0; j < n; j++) whole[j] = std::make_shared<Buffer>(ts[j].device(), wide, numel);
    size_t item = size_t(wide.itemsize());
    for (size_t i = 0; i < n; i++) {
      if (!reduced[i]) continue;
      size_t off = size_t(chunks[i].first) * item, len = size_t(chunks[i].second) * item;
      copy_step(whole[holder[i]], reduced[i], off, 0, len);  // on the device that finished it
      for (size_t step = 0, from = holder[i]; step + 1 < n; step++) {
        size_t dst = (i + step) % n;
        copy_step(whole[dst], whole[from], off, off, len);
        from = dst;
      }
    }
    for (size_t j = 0; j < n; j++) out[j] = on(whole[j]);
  }
  std::vector<Tensor> res;
  for (size_t i = 0; i < n; i++) {
    Tensor r = *out[i];
    if (op == ReduceOp::Avg) r = r.div(r.scalar_like(double(n)));
    r = r.reshape(t0.shape());
    res.push_back(r.dtype() == dt ? r : r.cast(dt));
  }
  return res;
}

}  // namespace tg

// ---- tensors sharded over devices ----
namespace tg {

bool is_multi_device(const std::string& dev) { return dev.find(',') != std::string::npos; }
std::vector<std::string> split_devices(const std::string& dev) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    size_t c = dev.find(',', at);
    out.push_back(dev.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) return out;
    at = c + 1;
  }
}
std::string join_devices(const std::vector<std::string>& devs, const char* what) {
  TG_CHECK(!devs.empty(), TG_ERROR_INVALID_ARGUMENT, std::string(what) + ": no devices");
  std::string out;
  std::set<std::string> seen;
  for (auto& d : devs) {
    TG_CHECK(d.find(',') == std::string::npos, TG_ERROR_DEVICE, std::string(what) + ": '" + d + "' is not one device name");
    std::string c = canonical_device(d.c_str());
    get_device(c);
    TG_CHECK(seen.insert(c).second, TG_ERROR_INVALID_ARGUMENT, std::string(what) + ": device " + c + " is named twice");
    out += (out.empty() ? "" : ",") + c;
  }
  return out;
}
void check_devices(const std::string& dev) {
  for (auto& d : split_devices(dev)) get_device(d);
}

namespace {

UOpRef cut(const UOpRef& x, int64_t axis, int64_t start, int64_t end) {
  const Shape& s = x->shape();
  if (start == 0 && end == s[size_t(axis)]) return x;
  std::vector<int64_t> arg;
  for (size_t i = 0; i < s.size(); i++) arg.push_back(int64_t(i) == axis ? start : 0), arg.push_back(int64_t(i) == axis ? end : s[i]);
  return UOp::make(Ops::SHRINK, x->dtype, {x}, std::move(arg));
}

// A node's value on each device: the whole of it (axis -1) or its part along `axis`.
struct Split {
  UOps per;
  int64_t axis = -1;
  std::vector<int64_t> sizes() const {
    std::vector<int64_t> out;
    for (auto& u : per) out.push_back(axis < 0 ? 0 : u->shape()[size_t(axis)]);
    return out;
  }
};

ReduceOp reduce_op_of(Ops op) { return op == Ops::MUL ? ReduceOp::Prod : op == Ops::MAX ? ReduceOp::Max : ReduceOp::Sum; }

// The graph above MULTI leaves, lowered to one graph per device (tinygrad's schedule/multi.py rules). Collectives are
// nodes: ALLREDUCE(parts..., arg {reduce op, d}) is device d's copy of the parts combined, MSTACK(shards..., arg {axis,
// d}) the shards put together whole on device d; realize_multi runs them.
class Lowering {
 public:
  explicit Lowering(size_t n) : n_(n) {}
  void run(const UOps& roots) {
    UOps topo = UOp::sink(roots)->toposort();
    topo.pop_back();  // the sink
    for (auto& u : topo) lower(u);
  }
  bool plain(const UOpRef& u) const { return !m_.count(u); }
  // u on each device as lowered: split as it is, or whole
  Split get(const UOpRef& u) { return whole_or_split(u); }

 private:
  size_t n_;
  UOpMap<Split> m_, whole_;
  std::unordered_set<const UOp*> on_one_device_;  // plain nodes over a plain device's buffer

  Split whole(const UOpRef& u) {
    auto it = m_.find(u);
    if (it == m_.end()) {
      TG_CHECK(!on_one_device_.count(u.get()), TG_ERROR_DEVICE, "a tensor on one device meets a tensor sharded over several (shard it, or use to())");
      return Split{UOps(n_, u), -1};
    }
    if (it->second.axis < 0) return it->second;
    if (auto w = whole_.find(u); w != whole_.end()) return w->second;
    Split out;
    for (size_t d = 0; d < n_; d++)
      out.per.push_back(UOp::make(Ops::MSTACK, u->dtype, it->second.per, std::vector<int64_t>{it->second.axis, int64_t(d)}));
    return whole_[u] = out;
  }
  // u split along axis into these sizes, as an op with a shard of that split needs it
  Split as(const UOpRef& u, int64_t axis, const std::vector<int64_t>& sizes) {
    if (axis < 0) return whole(u);
    if (auto it = m_.find(u); it != m_.end() && it->second.axis == axis && it->second.sizes() == sizes) return it->second;
    Split w = whole(u), out{{}, axis};
    for (size_t d = 0, at = 0; d < n_; d++) out.per.push_back(cut(w.per[d], axis, int64_t(at), int64_t(at) + sizes[d])), at += size_t(sizes[d]);
    return out;
  }
  Split each(const UOpRef& u, const std::vector<Split>& srcs, int64_t axis, const std::function<Arg(size_t d)>& arg = nullptr) {
    Split out{{}, axis};
    for (size_t d = 0; d < n_; d++) {
      UOps src;
      for (auto& s : srcs) src.push_back(s.per[d]);
      out.per.push_back(UOp::make(u->op, u->dtype, std::move(src), arg ? arg(d) : u->arg, u->tag));
    }
    return out;
  }

  void lower(const UOpRef& u) {
    if (u->op == Ops::MULTI) {
      TG_CHECK(u->src.size() == n_, TG_ERROR_DEVICE, strformat("a tensor sharded over %zu devices meets one over %zu", u->src.size(), n_));
      for (auto& s : u->src) TG_CHECK(plain(s), TG_ERROR_INTERNAL, "multi: a shard is itself sharded");
      m_[u] = Split{u->src, u->arg_ints().at(0)};
      return;
    }
    bool any = false;
    for (auto& s : u->src) any |= !plain(s);
    if (!any) {
      bool one = u->op == Ops::BUFFER;
      for (auto& s : u->src) one |= on_one_device_.count(s.get()) > 0;
      if (one) on_one_device_.insert(u.get());
      return;
    }
    if (assign_arg(u.get())) {
      Split t = whole_or_split(u->src[0]);
      Split v = as(u->src[1], t.axis, t.sizes()), out{{}, t.axis};
      const AssignArg* a = assign_arg(u.get());
      for (size_t d = 0; d < n_; d++) out.per.push_back(UOp::make(Ops::ASSIGN, u->dtype, {t.per[d], v.per[d], a->part(d)}));
      m_[u] = out;
      return;
    }
    if (GroupOp::alu(u->op) || u->op == Ops::CAST || u->op == Ops::BITCAST || u->op == Ops::CONTIGUOUS || u->op == Ops::DETACH ||
        u->op == Ops::CONTIGUOUS_BACKWARD) {
      // the first split source decides; whole copies are cut to its bounds, a source split otherwise is gathered and cut
      int64_t axis = -1;
      std::vector<int64_t> sizes;
      for (auto& s : u->src)
        if (auto it = m_.find(s); it != m_.end() && it->second.axis >= 0) {
          axis = it->second.axis, sizes = it->second.sizes();
          break;
        }
      std::vector<Split> srcs;
      for (auto& s : u->src)
        srcs.push_back(plain(s) && s->shape().size() != u->shape().size() ? Split{UOps(n_, s), -1} : as(s, axis, sizes));
      m_[u] = each(u, srcs, axis);
      return;
    }
    if (u->op == Ops::CUSTOM_BACKWARD) {  // autograd's marker: the value is its first source
      m_[u] = whole_or_split(u->src[0]);
      return;
    }
    if (u->op == Ops::REDUCE_AXIS) {
      Split s = whole_or_split(u->src[0]);
      Split r = each(u, {s}, s.axis);
      auto& arg = u->arg_ints();
      if (s.axis >= 0 && std::find(arg.begin() + 1, arg.end(), s.axis) != arg.end()) {
        UOps parts = r.per;
        for (size_t d = 0; d < n_; d++) r.per[d] = UOp::make(Ops::ALLREDUCE, u->dtype, parts, std::vector<int64_t>{arg[0], int64_t(d)});
        r.axis = -1;
      }
      m_[u] = r;
      return;
    }
    if (GroupOp::movement(u->op) && u->src.size() == 1) {
      Split s = whole_or_split(u->src[0]);
      if (s.axis < 0) {
        m_[u] = each(u, {s}, -1);
        return;
      }
      size_t a = size_t(s.axis);
      auto sizes = s.sizes();
      const Shape& in = u->src[0]->shape();
      auto& arg = u->arg_ints();
      switch (u->op) {
        case Ops::PERMUTE: {
          int64_t na = std::find(arg.begin(), arg.end(), s.axis) - arg.begin();
          m_[u] = each(u, {s}, na);
          return;
        }
        case Ops::RESHAPE:
          if (auto k = reshape_axis(in, u->shape(), a, sizes)) {
            int64_t inner = prod(Shape(in.begin() + int64_t(a) + 1, in.end())), ninner = prod(Shape(arg.begin() + *k + 1, arg.end()));
            m_[u] = each(u, {s}, *k, [&](size_t d) {
              std::vector<int64_t> sh = arg;
              sh[size_t(*k)] = sizes[d] * inner / ninner;
              return Arg(sh);
            });
            return;
          }
          break;
        case Ops::SHRINK:
        case Ops::PAD: {
          // along the split axis too, each shard keeps its own part: a shrink cuts each to the range (some shards may
          // end up empty), a pad goes to the first and the last shard; the result stays split, nothing is copied
          std::vector<int64_t> starts{0};
          for (auto z : sizes) starts.push_back(starts.back() + z);
          Split out{{}, s.axis};
          for (size_t d = 0; d < n_; d++) {
            std::vector<int64_t> x = arg;
            if (u->op == Ops::SHRINK) {
              int64_t lo = std::clamp(arg[2 * a], starts[d], starts[d + 1]), hi = std::clamp(arg[2 * a + 1], lo, starts[d + 1]);
              x[2 * a] = lo - starts[d], x[2 * a + 1] = hi - starts[d];
            } else {
              x[2 * a] = d == 0 ? arg[2 * a] : 0, x[2 * a + 1] = d + 1 == n_ ? arg[2 * a + 1] : 0;
            }
            // a shard this view leaves as it is keeps its node (the scheduler takes no all-zero pad)
            const Shape& sh = s.per[d]->shape();
            bool same = true;
            for (size_t i = 0; i < sh.size(); i++)
              same &= x[2 * i] == 0 && x[2 * i + 1] == (u->op == Ops::PAD ? 0 : sh[i]);
            out.per.push_back(same ? s.per[d] : UOp::make(u->op, u->dtype, {s.per[d]}, x, u->tag));
          }
          m_[u] = out;
          return;
        }
        case Ops::EXPAND:
        case Ops::FLIP: {
          if (u->op == Ops::EXPAND ? arg[a] != in[a] : arg[a] != 0) break;
          m_[u] = each(u, {s}, s.axis, [&](size_t d) {
            std::vector<int64_t> x = arg;
            if (u->op == Ops::EXPAND) x[a] = sizes[d];
            return Arg(x);
          });
          return;
        }
        default: break;
      }
      // the view moves elements between shards: it applies to the whole tensor, on every device
      m_[u] = each(u, {whole(u->src[0])}, -1);
      return;
    }
    // anything else runs on the whole of its sources, on every device
    std::vector<Split> srcs;
    for (auto& s : u->src) srcs.push_back(whole(s));
    m_[u] = each(u, srcs, -1);
  }
  Split whole_or_split(const UOpRef& u) {
    auto it = m_.find(u);
    return it == m_.end() ? whole(u) : it->second;
  }
  // The dim of `to` a reshape from `from` keeps split (each shard a whole block of it), or nullopt.
  static std::optional<int64_t> reshape_axis(const Shape& from, const Shape& to, size_t axis, const std::vector<int64_t>& sizes) {
    int64_t before = prod(Shape(from.begin(), from.begin() + int64_t(axis))), inner = prod(Shape(from.begin() + int64_t(axis) + 1, from.end()));
    if (before == 0 || inner == 0) return std::nullopt;
    int64_t p = 1;
    for (size_t k = 0; k < to.size(); p *= to[k], k++) {
      if (p != before || (to[k] == 1 && from[axis] != 1)) continue;
      int64_t ninner = prod(Shape(to.begin() + int64_t(k) + 1, to.end()));
      if (ninner == 0 || to[k] * ninner != from[axis] * inner) continue;
      if (std::all_of(sizes.begin(), sizes.end(), [&](int64_t s) { return s * inner % ninner == 0; })) return int64_t(k);
    }
    return std::nullopt;
  }
};

// shards (realized, shards[i] on devs[i]) of one tensor split along axis, copied into one whole buffer on `dev`: the
// axis is moved first, so that each shard is one run of it
Tensor gather_on(const std::vector<Tensor>& shards, int64_t axis, const std::string& dev) {
  const Tensor& f = shards[0];
  Shape whole = f.shape();
  whole[size_t(axis)] = 0;
  for (auto& s : shards) whole[size_t(axis)] += s.shape()[size_t(axis)];
  std::vector<int64_t> order{axis}, inv(whole.size());
  for (int64_t i = 0; i < int64_t(whole.size()); i++)
    if (i != axis) order.push_back(i);
  Shape moved;
  for (size_t i = 0; i < order.size(); i++) moved.push_back(whole[size_t(order[i])]), inv[size_t(order[i])] = int64_t(i);
  auto dst = std::make_shared<Buffer>(dev, f.dtype(), prod(whole));
  size_t item = size_t(f.dtype().itemsize()), at = 0;
  for (auto& s : shards) {
    if (s.numel() == 0) continue;
    auto b = s.permute(order).contiguous_buffer("gather");
    copy_step(dst, b, at, 0, b->nbytes());
    at += size_t(s.numel()) * item;
  }
  return Tensor::on_buffer(dst, moved).permute(inv);
}

UOps parts_of(const Tensor& t) {
  const UOp* u = t.uop().get();
  TG_CHECK(u->op == Ops::MULTI, TG_ERROR_INTERNAL, "multi: a realized multi tensor is not MULTI");
  return u->src;
}

}  // namespace

Tensor multi_tensor(UOps parts, int64_t axis, const std::string& dev) {
  DType dt = parts.at(0)->dtype;
  return Tensor(UOp::make(Ops::MULTI, dt, std::move(parts), std::vector<int64_t>{axis}), dev);
}

void realize_multi(const std::vector<Tensor*>& ts) {
  if (ts.empty()) return;
  std::vector<std::string> devs = split_devices(ts[0]->device());
  size_t n = devs.size();
  Lowering low(n);
  UOps roots;
  for (auto* t : ts) {
    TG_CHECK(t->device() == ts[0]->device(), TG_ERROR_INTERNAL, "realize_multi: tensors on different device tuples");
    roots.push_back(t->uop());
  }
  low.run(roots);
  std::vector<Split> outs;
  UOps all;
  for (auto& r : roots) {
    outs.push_back(low.get(r));
    all.insert(all.end(), outs.back().per.begin(), outs.back().per.end());
  }
  // the collectives in graph order: each reads its parts realized on their devices and leaves a buffer on each device
  UOpMap<UOpRef> done;
  auto now = [&](const UOpRef& u) { return done.empty() ? u : u->substitute(done); };
  UOps topo = UOp::sink(all)->toposort();
  // a part's computed nodes that something outside the part reads too are realized with it, once (a batch norm's input:
  // its mean and variance are collectives, the normalization reads it again)
  std::unordered_map<const UOp*, std::vector<const UOp*>> users;
  std::unordered_set<const UOp*> on_device;  // over some device's buffer (a graph of constants is on every device)
  for (auto& u : topo) {
    bool b = u->op == Ops::BUFFER;
    for (auto& s : u->src) users[s.get()].push_back(u.get()), b |= on_device.count(s.get()) > 0;
    if (b) on_device.insert(u.get());
  }
  auto computed = [](const UOp* v) { return GroupOp::alu(v->op) || v->op == Ops::REDUCE_AXIS || v->op == Ops::CONTIGUOUS || v->op == Ops::CAST; };
  for (auto& u : topo) {
    if ((u->op != Ops::ALLREDUCE && u->op != Ops::MSTACK) || done.count(u)) continue;
    std::vector<Tensor> parts;
    for (size_t d = 0; d < n; d++) {
      const UOpRef& part = u->src[d];
      UOps below = part->toposort(), roots{now(part)}, shared;
      std::unordered_set<const UOp*> in(below.size());
      for (auto& v : below) in.insert(v.get());
      for (auto& v : below)
        if (v != part && !done.count(v) && on_device.count(v.get()) && computed(v.get()) &&
            std::any_of(users[v.get()].begin(), users[v.get()].end(), [&](const UOp* p) { return !in.count(p); }))
          shared.push_back(v), roots.push_back(now(v));
      UOps r = realize_uops(roots, devs[d]);
      done[part] = r[0];  // other users of the part read the same buffer
      for (size_t k = 0; k < shared.size(); k++) done[shared[k]] = r[k + 1];
      parts.push_back(Tensor(r[0], devs[d]));
    }
    auto& a = u->arg_ints();
    std::vector<Tensor> res;
    if (u->op == Ops::ALLREDUCE) res = allreduce_devices(parts, reduce_op_of(Ops(a[0])));
    else
      for (size_t d = 0; d < n; d++) res.push_back(gather_on(parts, a[0], devs[d]));
    for (size_t d = 0; d < n; d++) done[UOp::make(u->op, u->dtype, u->src, std::vector<int64_t>{a[0], int64_t(d)})] = res[d].uop();
  }
  std::vector<UOps> per(ts.size());
  for (size_t d = 0; d < n; d++) {
    UOps rs;
    for (auto& o : outs) rs.push_back(now(o.per[d]));
    UOps got = realize_uops(rs, devs[d]);
    for (size_t i = 0; i < ts.size(); i++) per[i].push_back(got[i]);
  }
  for (size_t i = 0; i < ts.size(); i++) ts[i]->became(multi_tensor(std::move(per[i]), outs[i].axis, ts[i]->device()).uop());
}

namespace {
// t realized (a handle on the same tensor, so t is too), its parts
UOps realized_parts(const Tensor& t) {
  Tensor c = t;
  realize_multi({&c});
  return parts_of(c);
}
}  // namespace

namespace {
// t's graph lowered: its axis and per-device parts (unrealized)
Split lowered(const Tensor& t) {
  Lowering low(split_devices(t.device()).size());
  low.run({t.uop()});
  return low.get(t.uop());
}
std::vector<std::pair<int64_t, int64_t>> bounds_of(const Split& s, const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t at = 0, whole = t.ndim() ? t.shape()[0] : 1;
  for (auto& u : s.per) {
    int64_t len = s.axis < 0 ? whole : u->shape()[size_t(s.axis)];
    out.push_back(s.axis < 0 ? std::make_pair(int64_t(0), len) : std::make_pair(at, at + len)), at += s.axis < 0 ? 0 : len;
  }
  return out;
}
// x (on one device) put on each of devs: cut to bounds[d] along axis, or whole (axis -1). The copies run now, as to()
// does; a part already on its device is realized in place of a copy, so no gradient flows into x from any part.
Tensor place(const Tensor& x, const std::vector<std::string>& devs, int64_t axis, const std::vector<std::pair<int64_t, int64_t>>& bounds,
             const std::string& dev) {
  UOps parts;
  for (size_t d = 0; d < devs.size(); d++) {
    Tensor p = axis < 0 ? x : Tensor(cut(x.uop(), axis, bounds[d].first, bounds[d].second), x.device());
    if (p.device() != devs[d]) p = p.to(devs[d]);
    else (p = p.contiguous()).realize();
    parts.push_back(p.uop());
  }
  return multi_tensor(std::move(parts), axis, dev);
}
}  // namespace

Tensor shard(const Tensor& x0, const std::vector<std::string>& devs_in, std::optional<int64_t> axis) {
  std::string dev = join_devices(devs_in, "shard");
  std::vector<std::string> devs = split_devices(dev);
  if (devs.size() == 1) return x0.to(devs[0]);  // one device: a plain tensor there
  Tensor x = is_multi_device(x0.device()) ? multi_gather(x0, devs[0]) : x0;
  TG_CHECK(x.uop()->sym().empty(), TG_ERROR_UNSUPPORTED, "shard: a tensor with Variable dims; bind it first");
  int64_t n = int64_t(devs.size()), a = -1;
  if (axis) {
    TG_CHECK(x.ndim() > 0, TG_ERROR_SHAPE, "shard: a 0-d tensor has no axis to split (axis None copies it whole)");
    TG_CHECK(*axis >= -x.ndim() && *axis < x.ndim(), TG_ERROR_SHAPE,
             strformat("shard: axis %lld is out of range for shape %s", (long long)*axis, shape_str(x.shape()).c_str()));
    a = *axis < 0 ? *axis + x.ndim() : *axis;
  }
  std::vector<std::pair<int64_t, int64_t>> bounds;
  int64_t size = a < 0 ? 0 : x.shape()[size_t(a)], step = (size + n - 1) / n;
  for (int64_t d = 0; d < n; d++) bounds.push_back({std::min(size, d * step), std::min(size, (d + 1) * step)});
  return place(x, devs, a, bounds, dev);
}

int64_t multi_axis(const Tensor& t) { return is_multi_device(t.device()) ? lowered(t).axis : -1; }
std::vector<std::pair<int64_t, int64_t>> multi_bounds(const Tensor& t) {
  TG_CHECK(is_multi_device(t.device()), TG_ERROR_INVALID_ARGUMENT, "multi_bounds: the tensor is on one device (" + t.device() + ")");
  return bounds_of(lowered(t), t);
}

Tensor shard_like(const Tensor& x, const Tensor& like) {
  TG_CHECK(is_multi_device(like.device()), TG_ERROR_INVALID_ARGUMENT, "shard_like: `like` is on one device (" + like.device() + ")");
  TG_CHECK(x.shape() == like.shape(), TG_ERROR_SHAPE, "shard_like: shapes " + shape_str(x.shape()) + " and " + shape_str(like.shape()) + " differ");
  std::vector<std::string> devs = split_devices(like.device());
  Split s = lowered(like);
  Tensor w = is_multi_device(x.device()) ? multi_gather(x, devs[0]) : x;
  return place(w, devs, s.axis, bounds_of(s, like), like.device());  // like's bounds, even or not
}

Tensor empty_like_sharding(const Tensor& like, DType dtype) {
  if (!is_multi_device(like.device())) return Tensor::empty(like.shape(), dtype, like.device());
  std::vector<std::string> devs = split_devices(like.device());
  Split s = lowered(like);
  UOps parts;
  for (size_t d = 0; d < devs.size(); d++) {
    Shape sh = like.shape();
    if (s.axis >= 0) sh[size_t(s.axis)] = s.per[d]->shape()[size_t(s.axis)];
    parts.push_back(Tensor::empty(sh, dtype, devs[d]).uop());
  }
  return multi_tensor(std::move(parts), s.axis, like.device());
}

Tensor multi_shard(const Tensor& t, size_t i) {
  std::vector<std::string> devs = split_devices(t.device());
  TG_CHECK(i < devs.size(), TG_ERROR_INVALID_ARGUMENT, strformat("multi_shard: shard %zu of a tensor on %zu devices", i, devs.size()));
  if (devs.size() == 1) return t;
  return Tensor(realized_parts(t)[i], devs[i]);
}

Tensor multi_gather(const Tensor& t, const std::string& dev_in) {
  std::string dev = canonical_device(dev_in.c_str());
  get_device(dev);
  std::vector<std::string> devs = split_devices(t.device());
  UOps parts = realized_parts(t);
  int64_t axis = multi_axis(t);
  if (axis < 0) {  // whole on each: the copy already there, or the first
    auto at = std::find(devs.begin(), devs.end(), dev);
    return Tensor(parts[at == devs.end() ? 0 : size_t(at - devs.begin())], at == devs.end() ? devs[0] : dev).to(dev);
  }
  std::vector<Tensor> shards;
  for (size_t d = 0; d < devs.size(); d++) shards.push_back(Tensor(parts[d], devs[d]));
  return gather_on(shards, axis, dev);
}

}  // namespace tg
