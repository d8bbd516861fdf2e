// Reverse-mode autograd over the tensor-level UOp graph, as tinygrad's gradient.py: one table maps an op and the
// gradient flowing into it to the gradients of its sources; compute_gradient walks the graph once, in reverse
// topological order, and sums what reaches each node. Nothing is evaluated: the result is more lazy graph, which the
// scheduler fuses like any forward op.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>
#include <unordered_set>

#include "tensor/tensor.h"
#include "uop/pattern.h"

namespace tg {

namespace {

struct GradCtx {
  UOpRef grad;  // d root / d this node
  std::string device;
  Tensor t(const UOpRef& u) const { return Tensor(u, device); }
  Tensor g() const { return t(grad); }
};
// A rule's answer: NOOP(grad of src 0, grad of src 1, ...), with a bare NOOP for "no gradient to this source".
UOpRef none() { return UOp::make(Ops::NOOP); }
UOpRef grads(std::initializer_list<UOpRef> gs) { return UOp::make(Ops::NOOP, dtypes::void_, UOps(gs)); }
UOpRef grads_of(std::initializer_list<Tensor> ts) {
  UOps v;
  for (auto& t : ts) v.push_back(t.uop());
  return UOp::make(Ops::NOOP, dtypes::void_, std::move(v));
}

// a view's gradient: g for its source, none for its extra sources (the BIND or CONST sizes of symbolic dims)
UOpRef grad_of_view(const Tensor& g, const UOp* view) {
  UOps gs{g.uop()};
  gs.resize(view->src.size(), none());
  return UOp::make(Ops::NOOP, dtypes::void_, std::move(gs));
}

// the sum of g over the axes `to` has size 1 and g does not (EXPAND's gradient, and the un-broadcast of a reduce)
Tensor sum_to(const Tensor& g, const UOp* x) {
  const Shape& to = x->shape();
  std::vector<int64_t> axes;
  auto var = [](const UOp* u, size_t i) { return !u->sym().empty() && u->sym()[i]; };
  // a dim expanded to a Variable's size is summed whatever the binding (bound to 1 too), one of x's own never
  for (size_t i = 0; i < to.size(); i++)
    if (to[i] == 1 && !var(x, i) && (g.shape()[i] != 1 || var(g.uop().get(), i))) axes.push_back(int64_t(i));
  return axes.empty() ? g : g.sum(axes, true).cast(g.dtype());
}

const PatternMatcher& pm_gradient() {
  static const PatternMatcher pm(
      {
          {UPat(Ops::CAST, {UPat::var("x")}), [](const Match& m) { auto& c = m.ctx<GradCtx>(); return grads_of({c.g().cast(m["x"]->dtype)}); }},
          {UPat(Ops::NEG), [](const Match& m) { return grads_of({m.ctx<GradCtx>().g().neg()}); }},
          {UPat(Ops::RECIPROCAL), [](const Match& m) {  // d(1/x) = -1/x^2 = -ret^2
             auto& c = m.ctx<GradCtx>();
             Tensor r = c.t(m.root->ref());
             return grads_of({c.g().neg().mul(r).mul(r)});
           }},
          {UPat(Ops::SIN, {UPat::var("x")}), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             Tensor x = c.t(m["x"]);
             return grads_of({x.scalar_like(M_PI / 2).sub(x).sin().mul(c.g())});
           }},
          {UPat(Ops::LOG2, {UPat::var("x")}), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             Tensor x = c.t(m["x"]);
             return grads_of({c.g().div(x.mul(x.scalar_like(M_LN2)))});
           }},
          {UPat(Ops::EXP2), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             Tensor r = c.t(m.root->ref());
             return grads_of({r.mul(c.g()).mul(r.scalar_like(M_LN2))});
           }},
          {UPat(Ops::SQRT), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             Tensor r = c.t(m.root->ref());
             return grads_of({c.g().div(r.mul(r.scalar_like(2)))});
           }},
          // comparisons, bit ops, integer division and rounding carry no gradient
          {UPat({Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND, Ops::OR, Ops::XOR, Ops::SHL, Ops::SHR, Ops::IDIV, Ops::MOD}),
           [](const Match&) { return grads({none(), none()}); }},
          {UPat(Ops::TRUNC), [](const Match&) { return grads({none()}); }},
          {UPat(Ops::ADD), [](const Match& m) { auto& c = m.ctx<GradCtx>(); return grads({c.grad, c.grad}); }},
          {UPat(Ops::SUB), [](const Match& m) { auto& c = m.ctx<GradCtx>(); return grads_of({c.g(), c.g().neg()}); }},
          {UPat(Ops::MUL, {UPat::var("x"), UPat::var("y")}).ordered(), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             return grads_of({c.t(m["y"]).mul(c.g()), c.t(m["x"]).mul(c.g())});
           }},
          // d(x/y) = dx/y - (x/y) dy/y: the quotient, not x/y^2, so a large y (exp(x)/(1+exp(x)) at x = 80) does not
          // overflow y*y to inf and leave dx/y uncancelled
          {UPat(Ops::FDIV, {UPat::var("x"), UPat::var("y")}).ordered(), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             Tensor y = c.t(m["y"]), gy = c.g().div(y);
             return grads_of({gy, gy.neg().mul(c.t(m.root->ref()))});
           }},
          // ties share the gradient equally, as tinygrad
          {UPat(Ops::MAX, {UPat::var("x"), UPat::var("y")}).ordered(), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             Tensor x = c.t(m["x"]), y = c.t(m["y"]), g = c.g(), half = g.mul(g.scalar_like(0.5)), zero = g.full_like(0);
             return grads_of({x.gt(y).where(g, x.eq(y).where(half, zero)), x.lt(y).where(g, x.eq(y).where(half, zero))});
           }},
          // d(b^e)/db = e*b^(e-1), d(b^e)/de = b^e*ln(b); at b == 0 the limits tinygrad takes
          {UPat(Ops::POW, {UPat::var("b"), UPat::var("e")}).ordered(), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             Tensor b = c.t(m["b"]), e = c.t(m["e"]), r = c.t(m.root->ref()), g = c.g();
             Tensor b0 = b.eq(b.full_like(0)), e0 = e.eq(e.full_like(0));
             Tensor db = b0.bitwise_and(e0).where(e, e.mul(b.pow(e.sub(e.full_like(1)))));
             Tensor de = b0.where(e.lt(e.full_like(0)).where(r.full_like(-INFINITY), r.full_like(0)), r.mul(b.log()));
             return grads_of({g.mul(db), g.mul(de)});
           }},
          {UPat(Ops::WHERE, {UPat::var("c"), UPat::var("x"), UPat::var("y")}).ordered(), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             Tensor cond = c.t(m["c"]), g = c.g(), zero = g.full_like(0);
             return grads({none(), cond.where(g, zero).uop(), cond.where(zero, g).uop()});
           }},
          {UPat(Ops::REDUCE_AXIS, {UPat::var("x")}), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             Tensor x = c.t(m["x"]), g = c.g(), r = c.t(m.root->ref());
             std::vector<int64_t> axes(m.root->arg_ints().begin() + 1, m.root->arg_ints().end());
             switch (Ops(m.root->arg_ints()[0])) {
               case Ops::ADD: return grads_of({g.expand(x.shape(), x.uop()->sym())});
               case Ops::MUL: {  // d/dx_j = prod of the others: r/x_j where x_j != 0, else the others' product if x_j is the only zero
                 auto xs = [&](const Tensor& t) { return t.expand(x.shape(), x.uop()->sym()); };
                 Tensor zero = x.eq(x.full_like(0)), safe = zero.where(x.full_like(1), x);
                 Tensor nzero = xs(zero.sum(axes, true)), others = xs(safe.prod(axes, true).cast(x.dtype()));
                 Tensor d = zero.where(nzero.eq(nzero.full_like(1)).where(others, x.full_like(0)), xs(r).div(safe));
                 return grads_of({xs(g).mul(d)});
               }
               case Ops::MAX: {  // split among the maxima
                 Tensor mask = x.eq(r.expand(x.shape(), x.uop()->sym())).cast(g.dtype());
                 Tensor count = mask.sum(axes, true).cast(g.dtype());
                 return grads_of({mask.mul(g.div(count).expand(x.shape(), x.uop()->sym()))});
               }
               default: return UOpRef();
             }
           }},
          {UPat({Ops::CONTIGUOUS, Ops::COPY}), [](const Match& m) { return grads({m.ctx<GradCtx>().grad}); }},
          // an assign's value is what it holds: the target's old contents take no gradient (z[:2] += x differentiates)
          {UPat(Ops::ASSIGN).any_len(), [](const Match& m) {
             UOps g(m.root->src.size(), none());
             g[1] = m.ctx<GradCtx>().grad;
             return UOp::make(Ops::NOOP, dtypes::void_, std::move(g));
           }},
          // put (SCATTER): the target t is each element's first value, the values v are combined into it in turn.
          // replace: t's overwritten elements get nothing, each value the gradient at its position. sum: both get it all.
          // amax/amin: split evenly among the elements equal to the result (torch's rule). prod: the product of the
          // others, without dividing by a zero (a zero's share is the others' product if it is the only zero). The
          // positions get none.
          {UPat(Ops::SCATTER, {UPat::var("t"), UPat::var("p"), UPat::var("v")}).ordered(), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             const std::string& r = m.root->argv<std::string>();
             Tensor g = c.g(), p = c.t(m["p"]).cast(dtypes::int64), t = c.t(m["t"]), v = c.t(m["v"]), res = c.t(m.root->ref());
             std::string dev = g.device();
             auto i64 = [&](int64_t x) { return Tensor(UOp::const_int(dtypes::int64, x), dev); };
             Tensor valid = p.ge(i64(0)).bitwise_and(p.lt(i64(g.numel()))), zero = g.full_like(0);
             Index at{Index::TensorIdx};
             at.tensor = std::make_shared<Tensor>(valid.where(p, i64(0)));
             auto gather = [&](const Tensor& x) {  // x's element at each value's position (0 outside)
               return valid.where(x.flatten().getitem({at}), Tensor(UOp::const_(x.dtype(), 0), dev));
             };
             if (r == "replace") return grads({g.put(p, Tensor(UOp::const_(g.dtype(), 0), dev)).uop(), none(), gather(g).uop()});
             if (r == "sum") return grads({g.uop(), none(), gather(g).uop()});
             if (r == "amax" || r == "amin") {
               Tensor te = t.eq(res), ve = v.eq(gather(res));
               Tensor n = te.cast(g.dtype()).put(p, ve.cast(g.dtype()), "sum"), share = g.div(n);
               return grads({te.where(share, zero).uop(), none(), ve.where(gather(share), v.full_like(0)).uop()});
             }
             if (r == "prod") {
               Tensor tz = t.eq(t.full_like(0)), vz = v.eq(v.full_like(0));
               Tensor zeros = tz.cast(dtypes::int32).put(p, vz.cast(dtypes::int32), "sum");
               Tensor nonzero = tz.where(t.full_like(1), t).put(p, vz.where(v.full_like(1), v), "prod");
               Tensor lone = zeros.eq(zeros.full_like(1)).where(nonzero, nonzero.full_like(0));
               Tensor dt = tz.where(lone, res.div(tz.where(t.full_like(1), t)));
               Tensor dv = vz.where(gather(lone), gather(res).div(vz.where(v.full_like(1), v)));
               return grads({g.mul(dt).uop(), none(), gather(g).mul(dv).uop()});
             }
             return UOpRef();
           }},
          {UPat(Ops::CONTIGUOUS_BACKWARD), [](const Match& m) { return grads_of({m.ctx<GradCtx>().g().contiguous()}); }},
          {UPat(Ops::DETACH), [](const Match&) { return grads({none()}); }},
          // the rule named by the arg replaces the gradient of the value's own graph (src 0), which gets none
          {UPat(Ops::CUSTOM_BACKWARD).any_len(), [](const Match& m) {
             auto& c = m.ctx<GradCtx>();
             auto [dx, dw] = Tensor::conv_backward(c.g(), c.t(m.root->src[1]), c.t(m.root->src[2]), m.root->arg_ints());
             return grads({none(), dx.uop(), dw.uop()});
           }},
          {UPat(Ops::RESHAPE, {UPat::var("x")}), [](const Match& m) { return grads_of({m.ctx<GradCtx>().g().reshape(m["x"]->shape())}); }},
          // an EXPAND to a Variable's size has its BINDs as more sources: they get no gradient
          {UPat(Ops::EXPAND, {UPat::var("x")}).any_len(), [](const Match& m) {
             return grad_of_view(sum_to(m.ctx<GradCtx>().g(), m["x"].get()), m.root);
           }},
          {UPat(Ops::PERMUTE), [](const Match& m) {
             auto& order = m.root->arg_ints();
             std::vector<int64_t> inv(order.size());
             for (size_t i = 0; i < order.size(); i++) inv[size_t(order[i])] = int64_t(i);
             return grads_of({m.ctx<GradCtx>().g().permute(inv)});
           }},
          {UPat(Ops::PAD, {UPat::var("x")}), [](const Match& m) {
             auto& a = m.root->arg_ints();
             std::vector<std::pair<int64_t, int64_t>> b;
             for (size_t i = 0; i < m["x"]->shape().size(); i++) b.emplace_back(a[2 * i], a[2 * i] + m["x"]->shape()[i]);
             return grads_of({m.ctx<GradCtx>().g().shrink(b)});
           }},
          // padded by symbolic amounts: the source's part of the gradient, from a constant start (pad_to, a pad of a
          // symbolic dim by plain amounts, a cat's first piece); a symbolic start (a cat's later pieces) has no rule yet
          {UPat(Ops::PAD, {UPat::var("x")}).any_len(), [](const Match& m) {
             const UOp* x = m["x"].get();
             auto& a = m.root->arg_ints();
             auto& dims = std::get<std::vector<int64_t>>(m.root->tag);
             Tensor g = m.ctx<GradCtx>().g();
             std::vector<std::pair<int64_t, int64_t>> b;
             for (size_t i = 0; i < x->shape().size(); i++) {
               bool tagged = std::find(dims.begin(), dims.end(), int64_t(i)) != dims.end();
               b.emplace_back(tagged ? 0 : a[2 * i], tagged ? g.shape()[i] : a[2 * i] + x->shape()[i]);
             }
             g = g.shrink(b);
             for (size_t k = 0; k < dims.size(); k++) {
               TG_CHECK(m.root->src[1 + 2 * k]->op == Ops::CONST, TG_ERROR_UNSUPPORTED,
                        "gradient: a cat along symbolic dim " + std::to_string(dims[k]) + " has no gradient for its pieces after the first");
               size_t d = size_t(dims[k]);
               const UOp* xs = x->sym().empty() ? nullptr : x->sym()[d];
               g = g.shrink_sym(int64_t(d), a[2 * d], SymInt{x->shape()[d], xs ? xs->ref() : UOpRef()});
             }
             return grad_of_view(g, m.root);
           }},
          {UPat(Ops::SHRINK, {UPat::var("x")}), [](const Match& m) {
             auto& a = m.root->arg_ints();
             std::vector<std::pair<int64_t, int64_t>> p;
             for (size_t i = 0; i < m["x"]->shape().size(); i++) p.emplace_back(a[2 * i], m["x"]->shape()[i] - a[2 * i + 1]);
             return grads_of({m.ctx<GradCtx>().g().pad(p)});
           }},
          // a shrink to a symbolic size (shrink_var, shrink_sym): the gradient padded back, from the Variable's size to the
          // source's (plain, or symbolic itself); its carriers get none
          {UPat(Ops::SHRINK, {UPat::var("x")}).any_len(), [](const Match& m) {
             const UOp* x = m["x"].get();
             auto& a = m.root->arg_ints();
             auto& dims = std::get<std::vector<int64_t>>(m.root->tag);
             Tensor g = m.ctx<GradCtx>().g();
             std::vector<std::pair<int64_t, int64_t>> p;
             for (size_t i = 0; i < x->shape().size(); i++) {
               bool tagged = std::find(dims.begin(), dims.end(), int64_t(i)) != dims.end();
               p.emplace_back(tagged ? 0 : a[2 * i], tagged ? 0 : x->shape()[i] - a[2 * i + 1]);
             }
             g = g.pad(p);
             for (auto d : dims) {
               const UOp* xs = x->sym().empty() ? nullptr : x->sym()[size_t(d)];
               g = g.pad_sym(d, {a[2 * size_t(d)]}, SymInt{x->shape()[size_t(d)], xs ? xs->ref() : UOpRef()});
             }
             return grad_of_view(g, m.root);
           }},
          {UPat(Ops::FLIP), [](const Match& m) {
             std::vector<int64_t> axes;
             for (size_t i = 0; i < m.root->arg_ints().size(); i++)
               if (m.root->arg_ints()[i]) axes.push_back(int64_t(i));
             return grads_of({m.ctx<GradCtx>().g().flip(axes)});
           }},
      },
      "gradient");
  return pm;
}

// d root / d each node on a path from root to a target, seeded with root_grad. Iterative: graphs may be very deep.
UOpMap<UOpRef> compute_gradient(const UOpRef& root, const UOpRef& root_grad, const std::unordered_set<const UOp*>& targets, const std::string& device) {
  UOps order = root->toposort();
  // a node is on a path when it is a target or one of its sources is; DETACH cuts every path through it
  std::unordered_set<const UOp*> on_path;
  for (auto& u : order) {
    if (targets.count(u.get())) on_path.insert(u.get());
    else if (u->op != Ops::DETACH && std::any_of(u->src.begin(), u->src.end(), [&](const UOpRef& s) { return on_path.count(s.get()); }))
      on_path.insert(u.get());
  }
  UOpMap<UOpRef> g;
  g[root] = root_grad;
  for (size_t i = order.size(); i-- > 0;) {
    const UOpRef& u = order[i];
    auto it = g.find(u);
    if (it == g.end() || std::none_of(u->src.begin(), u->src.end(), [&](const UOpRef& s) { return on_path.count(s.get()); })) continue;
    GradCtx ctx{it->second, device};
    UOpRef r = pm_gradient().rewrite(u.get(), &ctx);
    TG_CHECK(r && r->op == Ops::NOOP && r->src.size() == u->src.size(), TG_ERROR_UNSUPPORTED,
             "gradient: no derivative for " + std::string(op_name(u->op)) + " of " + u->dtype.name());
    for (size_t k = 0; k < u->src.size(); k++) {
      const UOpRef& s = u->src[k];
      if (r->src[k]->op == Ops::NOOP || !on_path.count(s.get())) continue;
      UOpRef gk = r->src[k];
      auto [slot, fresh] = g.try_emplace(s, gk);
      if (!fresh) slot->second = Tensor(slot->second, device).add(Tensor(gk, device)).uop();
    }
  }
  return g;
}

// tensors with requires_grad set, found again by backward (tinygrad walks all live tensors the same way)
std::vector<std::weak_ptr<TensorState>> g_grad_tensors;  // under tensor_state_mu(), as g_origins

// realized tensors whose graphs reach a tensor that requires grad, with the graph kept (TensorState::origin), so that
// realizing an output before backward() doesn't cut the gradient's path
std::vector<std::weak_ptr<TensorState>> g_origins;

// uops a gradient may have to reach: those of the live tensors that require grad, and of realized ones with an origin
std::unordered_set<const UOp*> grad_sources() {
  std::unordered_set<const UOp*> out;
  std::lock_guard<std::mutex> lk(tensor_state_mu());
  for (auto& w : g_grad_tensors)
    if (auto s = w.lock(); s && s->requires_grad) out.insert(s->uop.get());
  for (auto& w : g_origins)
    if (auto s = w.lock(); s && s->origin) out.insert(s->uop.get());
  return out;
}
// root with every realized buffer that has an origin replaced by that origin (not the targets themselves)
UOpRef with_origins(UOpRef root, const std::unordered_set<const UOp*>& targets) {
  UOpMap<UOpRef> m;
  {
    std::lock_guard<std::mutex> lk(tensor_state_mu());
    std::erase_if(g_origins, [](auto& w) { return w.expired(); });
    for (auto& w : g_origins)
      if (auto s = w.lock(); s && s->origin && !targets.count(s->uop.get())) m[s->uop] = s->origin;
  }
  for (int round = 0; round < 64 && !m.empty(); round++) {  // origins may contain realized buffers of their own
    UOpRef r = root->substitute(m);
    if (r == root) break;
    root = r;
  }
  return root;
}

Tensor one_like_loss(const Tensor& t, const char* what) {
  TG_CHECK(t.numel() == 1, TG_ERROR_SHAPE, std::string(what) + ": needs a 0-d or one-element tensor, got shape " + shape_str(t.shape()));
  TG_CHECK(dtypes::is_float(t.dtype()), TG_ERROR_DTYPE, std::string(what) + ": needs a float tensor, got " + t.dtype().name());
  return t.full_like(1);
}

}  // namespace

std::mutex& tensor_state_mu() {
  static auto* mu = new std::mutex();  // never destroyed: tensors may die during static destruction
  return *mu;
}

Tensor& Tensor::requires_grad_(bool on) {
  if (on && !s_->requires_grad)
    TG_CHECK(dtypes::is_float(dtype()), TG_ERROR_DTYPE, "requires_grad: only float tensors can require gradients, not " + dtype().name());
  UOpRef dropped;  // freed after the lock
  std::lock_guard<std::mutex> lk(tensor_state_mu());
  if (on && !s_->requires_grad) {
    std::erase_if(g_grad_tensors, [](auto& w) { return w.expired(); });
    g_grad_tensors.push_back(s_);
  }
  s_->requires_grad = on;
  if (on) std::swap(dropped, s_->origin);  // a leaf now: gradients stop here
  return *this;
}
std::optional<Tensor> Tensor::grad() const {
  if (!s_->grad) return std::nullopt;
  return Tensor(s_->grad);
}
void Tensor::set_grad(const std::optional<Tensor>& g) {
  if (g) TG_CHECK(g->shape() == shape(), TG_ERROR_SHAPE, "set_grad: gradient of shape " + shape_str(g->shape()) + " for a tensor of shape " + shape_str(shape()));
  s_->grad = g ? std::make_shared<TensorState>(TensorState{g->uop(), g->device()}) : nullptr;
}

std::vector<Tensor> Tensor::gradient(const std::vector<Tensor>& wrt) const {
  Tensor seed = one_like_loss(*this, "gradient");
  std::unordered_set<const UOp*> targets;
  for (auto& w : wrt) {
    TG_CHECK(w.device() == device(), TG_ERROR_DEVICE, "gradient: a tensor is on " + w.device() + ", the target on " + device());
    targets.insert(w.uop().get());
  }
  auto g = compute_gradient(with_origins(uop(), targets), seed.uop(), targets, device());
  std::vector<Tensor> out;
  for (auto& w : wrt) {
    auto it = g.find(w.uop());
    out.push_back(it == g.end() ? w.full_like(0) : Tensor(it->second, device()).cast(w.dtype()).reshape(w.shape()));
  }
  return out;
}

Tensor& Tensor::backward(const std::vector<Tensor>& also) {
  one_like_loss(*this, "backward");
  std::unordered_set<const UOp*> in_graph;
  for (auto& u : with_origins(uop(), {})->toposort()) in_graph.insert(u.get());
  std::vector<Tensor> need;
  std::unordered_set<const TensorState*> taken;
  {
    std::lock_guard<std::mutex> lk(tensor_state_mu());
    std::erase_if(g_grad_tensors, [](auto& w) { return w.expired(); });
    for (auto& w : g_grad_tensors)
      if (auto s = w.lock(); s && s->requires_grad && in_graph.count(s->uop.get())) need.push_back(Tensor(s)), taken.insert(s.get());
  }
  for (auto& t : also)
    if (dtypes::is_float(t.dtype()) && t.device() == device() && in_graph.count(t.uop().get()) && taken.insert(t.s_.get()).second) need.push_back(t);
  std::vector<Tensor> gs = gradient(need);
  for (size_t i = 0; i < need.size(); i++) {
    std::optional<Tensor> old = need[i].grad();
    need[i].set_grad(old ? old->add(gs[i]) : gs[i]);
  }
  return *this;
}

void Tensor::became(UOpRef realized) {
  UOpRef old;
  {
    std::lock_guard<std::mutex> lk(tensor_state_mu());
    old = std::exchange(s_->uop, std::move(realized));
  }
  if (old == s_->uop || s_->requires_grad) return;  // a tensor that requires grad is itself where gradients stop
  std::unordered_set<const UOp*> src = grad_sources();
  if (src.empty()) return;  // no training going on: keep nothing alive
  // search old's graph for a source, not below DETACH (no gradient flows there)
  std::vector<const UOp*> stack{old.get()};
  std::unordered_set<const UOp*> seen{old.get()};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (src.count(u)) {
      std::lock_guard<std::mutex> lk(tensor_state_mu());
      s_->origin = old;
      if (g_origins.size() % 1024 == 1023) std::erase_if(g_origins, [](auto& w) { return w.expired(); });
      g_origins.push_back(s_);
      return;
    }
    if (u->op != Ops::DETACH)
      for (auto& x : u->src)
        if (seen.insert(x.get()).second) stack.push_back(x.get());
  }
}

Tensor Tensor::contiguous_backward() const { return Tensor(UOp::make(Ops::CONTIGUOUS_BACKWARD, dtype(), {uop()}), device()); }

}  // namespace tg
