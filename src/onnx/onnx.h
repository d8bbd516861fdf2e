// ONNX models: the protobuf messages as plain structs (proto.cpp reads them), the values a graph passes between nodes,
// and the context an operator's lowering gets (ops_*.cpp). Every operator lowers to Tensor ops, so a model's graph
// fuses, compiles and autotunes like any other.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace tg::onnx {

// onnx.proto's TensorProto.DataType
enum DataType : int32_t {
  UNDEFINED = 0, FLOAT = 1, UINT8 = 2, INT8 = 3, UINT16 = 4, INT16 = 5, INT32 = 6, INT64 = 7, STRING = 8, BOOL = 9, FLOAT16 = 10,
  DOUBLE = 11, UINT32 = 12, UINT64 = 13, COMPLEX64 = 14, COMPLEX128 = 15, BFLOAT16 = 16,
};
std::string dtype_name(int32_t t);               // "float", "int64", ... ("type 14" for what has no name)
DType to_dtype(int32_t t, const std::string& what);  // TG_ERROR_UNSUPPORTED naming `what` for strings, complex, float8
int32_t from_dtype(DType dt);

// A TensorProto. Data stays a view into the model's bytes (raw_data) where the file has it, so the bytes must outlive
// the struct; the typed repeated fields are copied out.
struct TensorProto {
  std::string name;
  int32_t data_type = UNDEFINED;
  std::vector<int64_t> dims;
  const uint8_t* raw = nullptr;
  size_t raw_len = 0;
  bool has_raw = false;
  std::vector<float> floats;     // float_data
  std::vector<int32_t> int32s;   // int32_data (also int8/16, uint8/16, bool, float16 bits)
  std::vector<int64_t> int64s;   // int64_data
  std::vector<double> doubles;   // double_data
  std::vector<uint64_t> uint64s; // uint64_data (also uint32)
  std::vector<std::string> strings;
  bool external = false;  // data_location EXTERNAL
  std::vector<std::pair<std::string, std::string>> external_data;  // location, offset, length, checksum
};

struct Graph;
enum class AttrType : int32_t { Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Graph = 5, Floats = 6, Ints = 7, Strings = 8,
                                Tensors = 9, Graphs = 10, SparseTensor = 11, SparseTensors = 12, TypeProto = 13, TypeProtos = 14 };
struct Attr {
  std::string name;
  AttrType type = AttrType::Undefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<TensorProto> t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorProto> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
};

// A dim of a ValueInfo's shape: a number, a name (a symbolic dim: "batch"), or neither (unknown)
struct Dim {
  int64_t value = -1;
  std::string param;
};
struct ValueInfo {
  std::string name;
  enum class Kind { Tensor, Sequence, Optional, Other } kind = Kind::Tensor;
  int32_t elem_type = UNDEFINED;  // of the tensor, or of the tensors in a sequence / optional
  bool elem_sequence = false;     // an optional whose value is a sequence
  bool has_shape = false;
  std::vector<Dim> shape;
};

struct Node {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;  // "" for an absent optional input or output
  std::vector<Attr> attrs;
  const Attr* attr(const std::string& n) const;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<TensorProto> initializers;
  std::vector<ValueInfo> inputs, outputs, value_info;
};

struct ModelProto {
  int64_t ir_version = 0, model_version = 0;
  std::string producer_name, producer_version, domain, doc;
  std::vector<std::pair<std::string, int64_t>> opsets;  // domain ("" = ai.onnx), version
  std::vector<std::pair<std::string, std::string>> metadata;
  Graph graph;
};

// A whole file's bytes, mapped read-only (TG_ERROR_IO naming it; at most protobuf's 2 GiB): the parse and the copies into
// tensors read the page cache, with no buffer of the file's size filled first
class FileBytes {
 public:
  explicit FileBytes(const std::string& path);
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
};
inline FileBytes read_file(const std::string& path) { return FileBytes(path); }

// Parsers of the wire format (proto.cpp). `what` names the bytes in errors (the file). Malformed input is a tg::Error
// (TG_ERROR_IO) naming the message and field; nothing reads outside [data, data + len); nesting past 64 graphs deep is
// refused. The results view `data` (raw_data), which must outlive them.
ModelProto parse_model(const uint8_t* data, size_t len, const std::string& what);
TensorProto parse_tensor(const uint8_t* data, size_t len, const std::string& what);

// A value flowing between nodes: a tensor, a sequence of tensors, or nothing (an absent optional).
struct Value {
  enum class Kind { None, Tensor, Sequence } kind = Kind::None;
  std::optional<tg::Tensor> t;
  std::vector<tg::Tensor> seq;
  int32_t seq_elem = FLOAT;  // a sequence's element type, for an empty one
  Value() = default;
  Value(tg::Tensor x) : kind(Kind::Tensor), t(std::move(x)) {}
  static Value sequence(std::vector<tg::Tensor> s, int32_t elem = FLOAT) {
    Value v;
    v.kind = Kind::Sequence, v.seq = std::move(s), v.seq_elem = elem;
    return v;
  }
};

// What an operator's lowering sees: its node, the model's opset for the node's domain, its input values, and a way
// to run a subgraph (If, Loop, Scan) with the enclosing scope's values visible.
struct OpCtx {
  const Node& node;
  int64_t opset;
  const std::string& device;
  const std::vector<Value>& in;
  std::function<std::vector<Value>(const Graph&, const std::vector<Value>&)> run_graph;

  size_t n_in() const { return in.size(); }
  bool has(size_t k) const { return k < in.size() && in[k].kind != Value::Kind::None; }
  const tg::Tensor& x(size_t k) const;                 // input k, a tensor; a missing one is an error naming the node
  std::optional<tg::Tensor> opt(size_t k) const;       // input k if present
  const std::vector<tg::Tensor>& seq(size_t k) const;  // input k, a sequence
  // input k's values on the host (it must be small: shapes, axes, pads, scalars); realizes it
  std::vector<int64_t> host_ints(size_t k) const;
  std::vector<double> host_floats(size_t k) const;
  // any tensor's values on the host (a data-dependent size: NonZero's count, NMS's selection). Every host read goes
  // through these, so a model whose graph depends on its inputs' data is never replayed from a JIT capture
  std::vector<int64_t> read_ints(const tg::Tensor& t) const;
  std::vector<double> read_floats(const tg::Tensor& t) const;
  void note_read(const tg::Tensor& t) const;  // t's data is read on the host by a Tensor method (nonzero's count)
  // whether t's values come from the inputs' data, so a host read of them would be one (false for an initializer)
  bool from_inputs(const tg::Tensor& t) const;

  bool has_attr(const char* n) const { return node.attr(n) != nullptr; }
  int64_t i(const char* n, int64_t dflt) const;
  double f(const char* n, double dflt) const;
  std::string s(const char* n, const std::string& dflt) const;
  std::vector<int64_t> ints(const char* n, std::vector<int64_t> dflt = {}) const;
  std::vector<float> floats(const char* n, std::vector<float> dflt = {}) const;
  std::vector<std::string> strings(const char* n, std::vector<std::string> dflt = {}) const;
  const TensorProto* tensor_attr(const char* n) const;
  const Graph* graph_attr(const char* n) const;
  tg::Tensor constant(const TensorProto& t) const;  // a TensorProto (an attribute's) as a tensor on the device

  // TG_ERROR_UNSUPPORTED / TG_ERROR_INVALID_ARGUMENT: "node 'name' (OpType): what"
  [[noreturn]] void unsupported(const std::string& what) const;
  [[noreturn]] void invalid(const std::string& what) const;
  std::string where() const;  // "node 'name' (OpType)"
};

using OpFn = std::vector<Value> (*)(OpCtx&);
using OpTable = std::unordered_map<std::string, OpFn>;
// Each family adds its operators (ai.onnx domain, by op_type) to the table
void add_math_ops(OpTable& t);      // ops_math.cpp: elementwise, activations, logic, casts, reductions, matmul
void add_shape_ops(OpTable& t);     // ops_shape.cpp: movement, indexing, scatter/gather, constants, sequences
void add_nn_ops(OpTable& t);        // ops_nn.cpp: conv, pooling, normalization, resize, recurrent, quantization
void add_signal_ops(OpTable& t);    // ops_signal.cpp: windows, DFT, STFT, mel weights; the training-domain optimizers
void add_control_ops(OpTable& t);   // onnx.cpp: If, Loop, Scan
const OpTable& op_table();

// A TensorProto as a tensor on `device`: raw_data or the typed fields; external data read from `base_dir` (the model's
// directory), refused where `location` leaves it
tg::Tensor tensor_from_proto(const TensorProto& t, const std::string& device, const std::string& base_dir);

// Numpy-style helpers the lowerings share
int64_t norm_axis(int64_t axis, int64_t ndim, const OpCtx& c);  // negative axes from the end; out of range is an error
std::vector<int64_t> norm_axes(const std::vector<int64_t>& axes, int64_t ndim, const OpCtx& c);
tg::Tensor broadcast_to(const tg::Tensor& t, const Shape& s);  // numpy broadcasting of t to s

}  // namespace tg::onnx
