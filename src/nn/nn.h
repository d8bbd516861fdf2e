// tinygrad's nn: modules holding named tensors, state dicts, and the training switch.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace tg::nn {

// Named tensors in order, as tinygrad's get_state_dict returns them ("layers.0.weight", ...). The tensors are shared:
// assigning into one assigns into the module's.
using StateDict = std::vector<std::pair<std::string, Tensor>>;

// tinygrad's Tensor.training (the TRAINING option): BatchNorm's batch statistics and running updates, dropout, and
// optimizer steps happen only in training.
bool training();

class Module {
 public:
  virtual ~Module() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  // every named tensor under `prefix` (parameters and buffers), in tinygrad's order
  virtual void state(const std::string& prefix, StateDict& out) const;
  // the tensors an optimizer updates (buffers such as running statistics are left out)
  virtual void parameters(std::vector<Tensor>& out) const;
  virtual std::string kind() const = 0;  // "Linear", "Conv2d", ... (for messages)
  // Puts `t` in the named tensor's place (a state dict key: "weight", "0.bias"); later calls and state walks use it, as
  // a tinygrad module uses whatever its attribute holds. nullopt removes an optional tensor (bias: the call then runs
  // without it). The shape must stay the module's and the dtype float (int for an int buffer): tinygrad's forward
  // passes would fail later on anything else, here the swap itself is refused. A counter (num_batches_tracked) takes any
  // one-element tensor, () or (1,), int or float, as tinygrad's `bn.num_batches_tracked = Tensor.ones(1)`. `what`
  // prefixes messages.
  virtual void set(const std::string& name, const std::optional<Tensor>& t, const char* what);
  // A module's numeric attributes (tinygrad's eps, momentum, track_running_stats, num_groups), read and changed by
  // name; the next call uses the new value. Unknown names are TG_ERROR_INVALID_ARGUMENT listing the known ones.
  virtual void set_option(const std::string& name, double v, const char* what);
  virtual double option(const std::string& name, const char* what) const;

 protected:
  struct Slot {
    std::string name;
    Tensor* t;    // null entries (bias=False) are skipped
    bool param;   // false: a buffer (running statistics)
    std::optional<Tensor>* opt = nullptr;  // the member holding an optional tensor (set can remove or add it)
    Shape shape = {};                      // the shape a tensor put here must have (empty: the current tensor's)
    bool counter = false;                  // a one-element count (num_batches_tracked)
  };
  struct Option {
    const char* name;
    double value;
  };
  virtual std::vector<Option> options() const { return {}; }
  virtual void apply_option(const std::string& name, double v);  // called with a name options() lists
  virtual std::vector<Slot> slots() { return {}; }
  std::vector<Slot> slots_const() const { return const_cast<Module*>(this)->slots(); }
};
using ModuleRef = std::shared_ptr<Module>;

StateDict get_state_dict(const Module& m);
std::vector<Tensor> get_parameters(const Module& m);
// Assigns every entry into the module's tensor of that name (realized together). strict: missing and unexpected names
// are errors; a shape mismatch is always one. The message names every offending entry.
void load_state_dict(Module& m, const StateDict& sd, bool strict = true);

}  // namespace tg::nn
