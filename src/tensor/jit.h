// TinyJit: the first call runs the function, the second captures the ExecItems of every realize it makes (and of every
// in-place assign it left pending), later calls replay those items with the new inputs' buffers without running the
// function. JIT=0 turns capture off: every call runs the function.
#pragma once
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "engine/realize.h"
#include "tensor/tensor.h"

namespace tg {

class TinyJit {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  explicit TinyJit(Fn fn) : fn_(std::move(fn)) {}
  // inputs are realized (contiguous) first; a replay checks each against the captured shape, dtype and device
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  int calls() const { return cnt_; }
  bool captured() const { return cnt_ >= 2; }
  const std::vector<ExecItem>& items() const { return items_; }
  const MemoryPlan& memory() const { return mem_; }
  void reset();  // forget the capture: the next call is a warm-up again

 private:
  struct InputSpec {
    Shape shape;
    DType dtype;
    std::string device;
    std::vector<const UOp*> sym;  // dims bound to Variables (any binding replays)
    int64_t buffer_size;          // of the buffer the input is (a view of)
  };
  struct InputUse {
    size_t item, buf, input;
  };
  std::vector<Tensor> run_and_realize(const std::vector<Tensor>& inputs);
  void finish_capture(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outs, CaptureScope& cap);
  std::vector<Tensor> replay(const std::vector<Tensor>& inputs);
  // a replay's outputs: the captured ones, with views of inputs moved to this call's inputs and Variables rebound
  std::vector<Tensor> outputs_of(const std::vector<Tensor>& inputs, const UOps& in_bufs, const std::unordered_map<std::string, int64_t>& vals);

  Fn fn_;
  std::mutex mu_;
  int cnt_ = 0;
  std::vector<InputSpec> in_specs_;
  std::vector<ExecItem> items_;
  std::vector<InputUse> input_uses_;
  std::vector<UOpRef> outputs_, input_bufs_;  // outputs_ may view input_bufs_ (the captured inputs' BUFFER nodes)
  std::vector<bool> output_views_input_;
  std::vector<std::string> out_devices_;
  std::vector<Device*> item_dev_;
  std::unique_ptr<LaunchGraph> graph_;  // the items as one device graph (CUDA), made at the first replay
  bool graph_tried_ = false;
  MemoryPlan mem_;
  bool has_vars_ = false;                     // some input has dims bound to Variables: each replay passes the kernels their values
  std::unordered_set<const void*> written_;  // the buffers the captured kernels write
};

}  // namespace tg
