// tinygrad's nn.optim: SGD, LARS, Muon (one LARS rule) and Adam, AdamW, LAMB (one LAMB rule), with tinygrad's defaults.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace tg::nn {

// tinygrad's Optimizer. Every piece of state (lr, momentum buffers, m, v, the bias-correction products) is a realized
// buffer, so a step assigns into it in place and a TinyJit replays the step.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  void zero_grad();  // every param's grad = None
  void step();       // realizes schedule_step()
  // The lazy in-place assigns of one step into every param and piece of state; returns the tensors to realize (with the
  // loss, for one schedule: tinygrad's Tensor.realize(loss, *opt.schedule_step())). TRAINING must be on, and every param
  // must have a grad: both are checked before anything is assigned.
  std::vector<Tensor> schedule_step();
  size_t schedule_size() const { return state_.size() + params_.size(); }  // how many tensors schedule_step returns
  const std::vector<Tensor>& params() const { return params_; }
  Tensor& lr() { return lr_; }  // shape (1,) float32: assigning into it changes the lr of later steps, under a JIT too
  void set_lr(double lr);       // assigned and realized
  // tinygrad's state attributes by name, as its optimizers name them: "b" (SGD/LARS/Muon momentum; empty without
  // momentum), "m", "v" (one per param), "b1_t", "b2_t" (Adam/AdamW/LAMB). The tensors are the state itself.
  virtual std::vector<std::pair<const char*, std::vector<Tensor>>> named_state() const = 0;

 protected:
  Optimizer(std::vector<Tensor> params, double lr, const char* name);
  Tensor new_state(const Shape& shape, double value, const Tensor* like = nullptr) const;  // float32, filled by realize_state; split as `like`
  void realize_state();                                       // realizes state_
  // the params' new values from their grads, with every state update assigned; state_ lists that state
  virtual std::vector<Tensor> next(const std::vector<Tensor>& grads) = 0;
  const char* name_;  // the class the caller asked for ("SGD", "Adam", ...), for messages
  std::vector<Tensor> params_, state_;
  Tensor lr_;
};

// tinygrad's LARS arguments, defaults as tinygrad's LARS; sgd_config and muon_config give those of SGD and Muon.
struct LARSConfig {
  const char* name = "LARS";
  double lr = 0.001, momentum = 0.9, weight_decay = 1e-4;
  int64_t ns_steps = 0;
  std::vector<double> ns_coefficients;  // empty: no Newton-Schulz orthogonalization
  bool nesterov = false, classic = true, pre_wd = true;
  double tcoef = 0.001;
};
LARSConfig sgd_config(double lr = 0.001, double momentum = 0.0, double weight_decay = 0.0, bool nesterov = false, bool classic = false);
LARSConfig muon_config(double lr = 0.001, double momentum = 0.95, double weight_decay = 0.1, int64_t ns_steps = 5,
                       std::vector<double> ns_coefficients = {3.4445, -4.775, 2.0315}, bool nesterov = true);

// LARS: SGD with a layer-wise trust ratio (tcoef 0: plain SGD), optional Newton-Schulz orthogonalization of the update
// (Muon), weight decay before momentum (pre_wd) or decoupled after it.
std::unique_ptr<Optimizer> lars(std::vector<Tensor> params, const LARSConfig& c = {});

// tinygrad's LAMB arguments, defaults as tinygrad's LAMB; adam_config and adamw_config give those of Adam and AdamW.
struct LAMBConfig {
  const char* name = "LAMB";
  double lr = 0.001, b1 = 0.9, b2 = 0.999, eps = 1e-6, weight_decay = 0.0;
  bool adam = false;  // true: no trust ratio (Adam, AdamW)
};
LAMBConfig adam_config(double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8);
LAMBConfig adamw_config(double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8, double weight_decay = 0.01);

// LAMB: Adam with a layer-wise trust ratio (adam: without it, as Adam and AdamW step)
std::unique_ptr<Optimizer> lamb(std::vector<Tensor> params, const LAMBConfig& c = {});

// The most Newton-Schulz steps an optimizer takes. tinygrad's Muon always takes 5 (and converges in about that many);
// each step adds three matmul kernels to every optimizer step, so a bound far past any use keeps a typo (500) from
// building a schedule of thousands of kernels.
inline constexpr int64_t kMaxNsSteps = 100;
// tinygrad's Tensor.newton_schulz: the odd polynomial sum(p[i] * (G G^T)^i G) iterated `steps` times on G = x / |x|
Tensor newton_schulz(const Tensor& x, int64_t steps, const std::vector<double>& params, double eps = 1e-7);

}  // namespace tg::nn
