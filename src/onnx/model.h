// An ONNX model loaded for running: its graph checked against the operators we lower, its constants (initializers and
// tensor attributes, in every subgraph) turned into tensors on the device, and a run that lowers each node to Tensor
// ops, captured by a TinyJit so a repeated run replays the kernels.
#pragma once
#include "onnx/onnx.h"

namespace tg {
class TinyJit;
}

namespace tg::onnx {

struct Options {
  std::string device;                                  // canonical device name
  std::vector<std::pair<std::string, int64_t>> dims;  // symbolic dims fixed at load ("batch" = 1)
  bool jit = true;                                     // capture and replay repeated runs
};

class Model {
 public:
  // The file at `path` (external data read relative to its directory), or bytes in memory (`base_dir` for external
  // data; empty refuses it). `name` names the model in errors.
  static std::shared_ptr<Model> load_file(const std::string& path, const Options& o);
  static std::shared_ptr<Model> load_bytes(const uint8_t* data, size_t len, const std::string& name, const std::string& base_dir, const Options& o);
  ~Model();

  const ModelProto& proto() const { return m_; }
  const std::vector<ValueInfo>& inputs() const { return inputs_; }  // the graph's inputs that no initializer fills
  const std::vector<ValueInfo>& outputs() const { return m_.graph.outputs; }
  int64_t opset() const { return opset_; }  // of ai.onnx
  tg::Tensor constant(const TensorProto& t) const;  // an initializer's or a tensor attribute's tensor

  // One value per input, in inputs()' order; one per output back. Inputs are checked against the declared types and
  // shapes (a symbolic dim must take one size throughout a call). Not thread-safe on one model.
  std::vector<Value> run(const std::vector<Value>& in);
  std::vector<Value> run_graph(const Graph& g, const std::unordered_map<std::string, Value>& outer, const std::vector<Value>& in);

 private:
  Model() = default;
  void prepare(const std::string& base_dir);
  // the graph on `in`; under a JIT's function, jit_inputs are its inputs (host reads of their data are noted)
  std::vector<Value> run_eager(const std::vector<Value>& in, const std::vector<tg::Tensor>* jit_inputs);
  ModelProto m_;
  Options opt_;
  std::string name_;
  std::vector<ValueInfo> inputs_;
  int64_t opset_ = 0;
  std::unordered_map<const TensorProto*, tg::Tensor> consts_;
  // one captured JIT per set of input shapes and dtypes; none once a run read input data on the host (a data-dependent
  // shape: NonZero, a Loop's trip count), which a replay would keep as captured
  std::map<std::string, std::unique_ptr<tg::TinyJit>> jits_;  // by "(2,3)float32;..."
  bool data_dependent_ = false;
};

// A SequenceProto / OptionalProto / TensorProto file (the conformance suite's test data) read as a Value
Value parse_value_file(const uint8_t* data, size_t len, const std::string& what, ValueInfo::Kind kind, const std::string& device);

}  // namespace tg::onnx
