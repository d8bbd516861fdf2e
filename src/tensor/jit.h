// TinyJit: the first call runs the function, the second captures the ExecItems of every realize it makes (and of every
// in-place assign it left pending), later calls replay those items with the new inputs' buffers without running the
// function. JIT=0 turns capture off: every call runs the function.
//
// Nesting and locking. A JIT called while some JIT's function runs on the same thread (a nested call) runs its own
// function at once, as under JIT=0, and touches none of its state: no count, no capture, no lock. An enclosing capture
// records the kernels it realizes, so the outer JIT replays them; the inner JIT captures only from its own outermost
// calls. (tinygrad refuses a capture inside a capture; this gives the same kernels as running the functions unjitted,
// and a nested call can never replay a capture made for other buffers.) A JIT called from inside its own function is
// an error (unbounded recursion).
// The lock rule, which makes JIT calls deadlock-free: a JIT's lock is taken only by an outermost call, by a thread
// that holds no JIT lock. So a thread holds at most one JIT lock, and a thread holding one never waits for another:
// the wait-for graph among JIT locks has no edges out of a holder, hence no cycle. (Two JITs whose functions call
// each other from two threads each run the other's function unlocked.) What a JIT's function waits on inside the
// library (caches, the device registry) are leaf locks, never held while user code runs.
#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "engine/realize.h"
#include "tensor/tensor.h"

namespace tg {

// The BUFFER node a tensor's graph is the whole of (a reshape of it, or, with dims bound to Variables, its bound part of
// a buffer laid out for the Variables' largest values, which every kernel indexes the same way whatever the binding);
// null for any other view or graph. A JIT's inputs and an export's outputs are such buffers.
const UOp* whole_buffer(const UOp* u);

class TinyJit {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  explicit TinyJit(Fn fn) : fn_(std::move(fn)) {}
  // inputs are realized (contiguous) first; a replay checks each against the captured shape, dtype and device
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  // with Variables the function uses besides its inputs' dims (a bound Variable passed as an argument): a replay gives
  // the kernels these values; a capture refuses kernels that take a Variable neither these nor an input dim bind
  using Vars = std::unordered_map<std::string, int64_t>;
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const Vars& vars);
  int calls() const { return cnt_.load(); }
  bool captured() const { return cnt_.load() >= 2; }
  // some JIT's function runs on this thread (a call now would be nested); this JIT's own function does
  static bool in_function();
  bool in_own_function() const;
  const std::vector<ExecItem>& items() const { return items_; }
  const MemoryPlan& memory() const { return mem_; }
  void reset();  // forget the capture: the next call is a warm-up again
  // Buffers the owner promises never to change between calls (a loaded model's weights). A captured kernel that reads
  // only these, buffers no code outside the capture can reach and no kernel writes, and earlier such kernels' results
  // computes the same values at every call: it runs at the capture and the replays skip it (a Winograd conv's
  // transformed weights, 0.9 ms of ResNet-18's 23). Its result must be a buffer only the capture holds. Set before the
  // capture; a tensor that isn't a realized buffer adds nothing.
  void set_constants(const std::vector<Tensor>& constants);
  size_t hoisted() const { return hoisted_; }  // kernels the capture ran once instead of at every replay
  // The capture as one dependency-free C file (tensor/export.cpp, docs/export.md): `dir`/NAME.c, NAME.h, NAME_weights.c
  struct ExportOptions {
    std::string dir, name, target = "native";  // target: generic, native, x86-64-v3, x86-64-v4, aarch64, armv7
    int threads = 0;  // >1: kernels split as THREAD does for that many cores, run on a pthread pool in the generated code
  };
  struct ExportInfo {
    size_t arena_bytes = 0, weight_bytes = 0, kernels = 0;
  };
  ExportInfo export_c(const ExportOptions& opts);

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
  // A sharded input is passed as its shards, each an input of its own (a buffer on one device); the function gets it whole
  struct Piece {
    std::string device;  // empty: a plain input
    int64_t axis = -1;
    size_t n = 1;  // shards
    bool operator==(const Piece&) const = default;
  };
  using Layout = std::vector<Piece>;
  std::vector<Tensor> call_flat(const std::vector<Tensor>& inputs, const Vars& vars, const Layout& layout);
  std::vector<Tensor> run_and_realize(const std::vector<Tensor>& inputs, bool capturing, const Layout& layout);
  void finish_capture(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outs, CaptureScope& cap, const Vars& vars);
  // only_items: whether no one but the captured items holds a buffer (and it is neither an input nor behind an output)
  void hoist_constants(const std::function<bool(const Buffer*)>& only_items, const std::unordered_set<const Buffer*>& output_bufs);
  std::vector<Tensor> replay(const std::vector<Tensor>& inputs, const Vars& vars);
  // a replay's outputs: the captured ones, with views of inputs moved to this call's inputs and Variables rebound
  std::vector<Tensor> outputs_of(const std::vector<Tensor>& inputs, const UOps& in_bufs, const std::unordered_map<std::string, int64_t>& vals);

  Fn fn_;
  std::mutex mu_;
  std::atomic<int> cnt_{0};  // read without the lock (calls(), captured())
  Layout layout_;            // of the captured call
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
  std::vector<std::string> call_vars_;        // Variables the kernels take from the call (tg_jit_call_vars), not from an input
  std::unordered_set<const void*> written_;  // the buffers the captured kernels write
  std::vector<std::shared_ptr<Buffer>> constants_;
  size_t hoisted_ = 0;
};

}  // namespace tg
