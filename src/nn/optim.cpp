// tinygrad's nn.optim, rule for rule: SGD and Muon are LARS settings, Adam and AdamW are LAMB settings.
#include "nn/optim.h"

#include "tensor/multi.h"


namespace tg::nn {

namespace {
Tensor k(const Tensor& like, double v) { return like.scalar_like(v); }  // a Python float in a tinygrad expression

// tinygrad's lr is a tensor, at least float32, so it can change under a JIT
Tensor lr_tensor(double lr, const std::string& device, const char* name) {
  TG_CHECK(lr >= 0, TG_ERROR_INVALID_ARGUMENT, strformat("%s: lr %g is not a learning rate (it must be >= 0)", name, lr));
  float lr32 = float(lr);
  return Tensor::from_data(&lr32, sizeof lr32, dtypes::float32, {1}, device);
}
std::vector<Tensor> checked_params(const std::vector<Tensor>& params, const char* name) {
  TG_CHECK(!params.empty(), TG_ERROR_INVALID_ARGUMENT, std::string(name) + ": no params (an optimizer must have at least one)");
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); i++) {
    const Tensor& p = params[i];
    TG_CHECK(dtypes::is_float(p.dtype()), TG_ERROR_DTYPE,
             strformat("%s: params[%zu] is %s; an optimizer updates float tensors", name, i, p.dtype().name().c_str()));
    TG_CHECK(p.device() == params[0].device(), TG_ERROR_DEVICE,
             strformat("%s: params[%zu] is on %s, params[0] on %s", name, i, p.device().c_str(), params[0].device().c_str()));
    bool dup = false;  // tinygrad dedups: a param given twice is updated once
    for (auto& q : out) dup |= q.same(p);
    if (!dup) out.push_back(p);
  }
  for (auto& p : out) p.requires_grad_();
  return out;
}
}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr, const char* name)
    : name_(name), params_(checked_params(params, name)), lr_(lr_tensor(lr, params_[0].device(), name)) {}

// its own buffer (the zeros of m and v are one graph, so contiguous() could give them one), filled by the state's realize
Tensor Optimizer::new_state(const Shape& shape, double value, const Tensor* like) const {
  // a parameter's state is split over devices as the parameter is, so the update runs on each shard
  Tensor t = like ? empty_like_sharding(*like, dtypes::float32) : Tensor::empty(shape, dtypes::float32, params_[0].device());
  return t.assign(Tensor::full(shape, value, dtypes::float32, t.device()));
}

void Optimizer::realize_state() {
  std::vector<Tensor*> ptrs;
  for (auto& t : state_) ptrs.push_back(&t);
  if (!ptrs.empty()) Tensor::realize_all(ptrs);  // one schedule for all of it
}

void Optimizer::zero_grad() {
  for (auto& p : params_) p.set_grad(std::nullopt);
}

void Optimizer::set_lr(double lr) {
  lr_.assign(lr_tensor(lr, lr_.device(), name_)).realize();
}

std::vector<Tensor> Optimizer::schedule_step() {
  // tinygrad reads the TRAINING option itself
  TG_CHECK(TRAINING.get() != 0, TG_ERROR_INVALID_ARGUMENT,
           std::string(name_) + ": TRAINING=0; an optimizer steps only in training (set the option TRAINING=1)");
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params_.size(); i++) {
    auto g = params_[i].grad();
    TG_CHECK(g.has_value(), TG_ERROR_INVALID_ARGUMENT,
             strformat("%s: params[%zu] %s has no grad (no backward reached it since zero_grad)", name_, i, shape_str(params_[i].shape()).c_str()));
    grads.push_back(*g);
  }
  std::vector<Tensor> next_values = next(grads), out = state_;
  // a 0-d param's update has lr's shape (1,)
  for (size_t i = 0; i < params_.size(); i++) out.push_back(params_[i].assign(next_values[i].reshape(params_[i].shape())));
  return out;
}

void Optimizer::step() {
  std::vector<Tensor> ts = schedule_step();
  std::vector<Tensor*> ptrs;
  for (auto& t : ts) ptrs.push_back(&t);
  Tensor::realize_all(ptrs);
}

LARSConfig sgd_config(double lr, double momentum, double weight_decay, bool nesterov, bool classic) {
  return {"SGD", lr, momentum, weight_decay, 0, {}, nesterov, classic, true, 0.0};
}
LARSConfig muon_config(double lr, double momentum, double weight_decay, int64_t ns_steps, std::vector<double> ns_coefficients, bool nesterov) {
  return {"Muon", lr, momentum, weight_decay, ns_steps, std::move(ns_coefficients), nesterov, false, false, 0.0};
}
LAMBConfig adam_config(double lr, double b1, double b2, double eps) { return {"Adam", lr, b1, b2, eps, 0.0, true}; }
LAMBConfig adamw_config(double lr, double b1, double b2, double eps, double weight_decay) { return {"AdamW", lr, b1, b2, eps, weight_decay, true}; }

namespace {
class LARS final : public Optimizer {
 public:
  LARS(std::vector<Tensor> params, const LARSConfig& c) : Optimizer(std::move(params), c.lr, c.name), c_(c) {
    TG_CHECK(c.momentum >= 0, TG_ERROR_INVALID_ARGUMENT, strformat("%s: momentum %g must be >= 0", c.name, c.momentum));
    TG_CHECK(c.weight_decay >= 0, TG_ERROR_INVALID_ARGUMENT, strformat("%s: weight_decay %g must be >= 0", c.name, c.weight_decay));
    TG_CHECK(c.ns_steps >= 0, TG_ERROR_INVALID_ARGUMENT, strformat("%s: ns_steps %lld must be >= 0", c.name, (long long)c.ns_steps));
    TG_CHECK(c.ns_steps <= kMaxNsSteps, TG_ERROR_INVALID_ARGUMENT,
             strformat("%s: ns_steps %lld is more than %lld (tinygrad's Muon takes 5)", c.name, (long long)c.ns_steps, (long long)kMaxNsSteps));
    if (!c.ns_coefficients.empty())
      for (size_t i = 0; i < params_.size(); i++)
        TG_CHECK(params_[i].ndim() >= 1, TG_ERROR_SHAPE, strformat("%s: params[%zu] is 0-d; Newton-Schulz needs a first dim", c.name, i));
    if (c.momentum != 0)
      for (auto& p : params_) b_.push_back(new_state(p.shape(), 0, &p));
    state_ = b_;
    realize_state();
  }

 private:
  LARSConfig c_;
  std::vector<Tensor> b_;  // momentum buffers (none without momentum)

 public:
  std::vector<std::pair<const char*, std::vector<Tensor>>> named_state() const override { return {{"b", b_}}; }

 private:

  std::vector<Tensor> next(const std::vector<Tensor>& grads) override {
    std::vector<Tensor> out;
    for (size_t i = 0; i < params_.size(); i++) {
      Tensor t = params_[i].detach(), g = grads[i];
      std::optional<Tensor> r;  // the trust ratio; none is tinygrad's 1.0, and x * 1.0 is x exactly
      if (c_.tcoef != 0) {
        Tensor r1 = t.square().sum().sqrt(), r2 = g.square().sum().sqrt();
        Tensor ratio = k(r1, c_.tcoef).mul(r1).div(r2.add(k(r1, c_.weight_decay).mul(r1)));
        r = r1.gt(k(r1, 0)).where(r2.gt(k(r2, 0)).where(ratio, k(ratio, 1.0)), k(ratio, 1.0));
      }
      auto scaled = [&](const Tensor& x) { return (r ? x.mul(*r) : x).mul(lr_); };
      if (c_.pre_wd && c_.weight_decay > 0) g = g.add(k(t, c_.weight_decay).mul(t));
      if (c_.classic) g = scaled(g);  // classic momentum applies the lr before it
      if (c_.momentum != 0) {
        b_[i].assign(k(b_[i], c_.momentum).mul(b_[i]).add(g));  // b is zero at the first step: no special case
        g = c_.nesterov ? g.add(k(b_[i], c_.momentum).mul(b_[i])) : b_[i];
      }
      if (!c_.ns_coefficients.empty()) g = newton_schulz(g.reshape({g.shape()[0], -1}), c_.ns_steps, c_.ns_coefficients).reshape(g.shape());
      // decoupled weight decay after momentum (Muon): t * (1 - wd * lr) - update (tinygrad computes t's decay, then drops it)
      if (!c_.pre_wd && c_.weight_decay > 0) t = t.mul(k(lr_, 1.0).sub(k(lr_, c_.weight_decay).mul(lr_)));
      if (!c_.classic) g = scaled(g);
      out.push_back(t.sub(g.cast(params_[i].dtype())));
    }
    return out;
  }
};

class LAMB final : public Optimizer {
 public:
  LAMB(std::vector<Tensor> params, const LAMBConfig& c)
      : Optimizer(std::move(params), c.lr, c.name), c_(c), b1_t_(new_state({1}, 1)), b2_t_(new_state({1}, 1)) {
    TG_CHECK(c.weight_decay >= 0, TG_ERROR_INVALID_ARGUMENT, strformat("%s: weight_decay %g must be >= 0", c.name, c.weight_decay));
    for (auto& p : params_) m_.push_back(new_state(p.shape(), 0, &p));
    for (auto& p : params_) v_.push_back(new_state(p.shape(), 0, &p));
    state_ = {b1_t_, b2_t_};
    state_.insert(state_.end(), m_.begin(), m_.end());
    state_.insert(state_.end(), v_.begin(), v_.end());
    realize_state();
  }

 private:
  LAMBConfig c_;
  Tensor b1_t_, b2_t_;  // b1^t, b2^t: the bias corrections' products, assigned each step
  std::vector<Tensor> m_, v_;

 public:
  std::vector<std::pair<const char*, std::vector<Tensor>>> named_state() const override {
    return {{"m", m_}, {"v", v_}, {"b1_t", {b1_t_}}, {"b2_t", {b2_t_}}};
  }

 private:

  std::vector<Tensor> next(const std::vector<Tensor>& grads) override {
    b1_t_.assign(b1_t_.mul(k(b1_t_, c_.b1)));
    b2_t_.assign(b2_t_.mul(k(b2_t_, c_.b2)));
    std::vector<Tensor> out;
    for (size_t i = 0; i < params_.size(); i++) {
      Tensor t = params_[i].detach(), g = grads[i], &m = m_[i], &v = v_[i];
      m.assign(k(m, c_.b1).mul(m).add(k(g, 1.0 - c_.b1).mul(g)).cast(m.dtype()));
      v.assign(k(v, c_.b2).mul(v).add(k(g, 1.0 - c_.b2).mul(g.mul(g))).cast(v.dtype()));
      Tensor m_hat = m.div(k(b1_t_, 1.0).sub(b1_t_)), v_hat = v.div(k(b2_t_, 1.0).sub(b2_t_));
      Tensor up = m_hat.div(v_hat.sqrt().add(k(v_hat, c_.eps))).add(k(t, c_.weight_decay).mul(t));
      Tensor step = lr_;
      if (!c_.adam) {  // LAMB's trust ratio |t| / |up|
        Tensor r1 = t.square().sum().sqrt(), r2 = up.square().sum().sqrt();
        step = step.mul(r1.gt(k(r1, 0)).where(r2.gt(k(r2, 0)).where(r1.div(r2), k(r1, 1.0)), k(r1, 1.0)));
      }
      out.push_back(t.sub(step.mul(up).cast(params_[i].dtype())));
    }
    return out;
  }
};
}  // namespace

std::unique_ptr<Optimizer> lars(std::vector<Tensor> params, const LARSConfig& c) { return std::make_unique<LARS>(std::move(params), c); }
std::unique_ptr<Optimizer> lamb(std::vector<Tensor> params, const LAMBConfig& c) { return std::make_unique<LAMB>(std::move(params), c); }

Tensor newton_schulz(const Tensor& x, int64_t steps, const std::vector<double>& params, double eps) {
  TG_CHECK(x.ndim() > 1, TG_ERROR_SHAPE, "newton_schulz: needs two or more dims, got " + shape_str(x.shape()));
  if (x.shape()[size_t(x.ndim() - 2)] > x.shape().back()) return newton_schulz(x.transpose(-2, -1), steps, params, eps).transpose(-2, -1);
  Tensor g = x.div(x.square().sum({-2, -1}, true).sqrt().add(k(x, eps)));
  for (int64_t s = 0; s < steps; s++) {
    Tensor gg = g.matmul(g.transpose(-2, -1)), power = g;  // power: (G G^T)^i G
    std::optional<Tensor> sum;
    for (size_t i = 0; i < params.size(); i++) {
      if (i > 0) power = gg.matmul(power);
      Tensor term = k(power, params[i]).mul(power);
      sum = sum ? sum->add(term) : term;
    }
    // realized each step: left lazy, every later step's kernels would recompute the whole chain of earlier steps
    // elementwise (kernels growing with the step count, scheduling and compiling growing with its 3rd-4th power)
    g = sum->contiguous();
  }
  return g;
}

}  // namespace tg::nn
