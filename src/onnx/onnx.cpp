// The ONNX model: loading (constants to tensors, every node checked against the operators we lower), running a graph
// node by node into one lazy Tensor graph, the context operators get, and the control-flow operators.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_set>

#include "onnx/model.h"
#include "tensor/jit.h"

namespace tg::onnx {
namespace fs = std::filesystem;

std::string dtype_name(int32_t t) {
  static const char* names[] = {"undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool", "float16",
                                "double", "uint32", "uint64", "complex64", "complex128", "bfloat16"};
  return t >= 0 && t <= BFLOAT16 ? names[t] : strformat("type %d", t);
}
DType to_dtype(int32_t t, const std::string& what) {
  switch (t) {
    case FLOAT: return dtypes::float32;
    case UINT8: return dtypes::uint8;
    case INT8: return dtypes::int8;
    case UINT16: return dtypes::uint16;
    case INT16: return dtypes::int16;
    case INT32: return dtypes::int32;
    case INT64: return dtypes::int64;
    case BOOL: return dtypes::bool_;
    case FLOAT16: return dtypes::float16;
    case DOUBLE: return dtypes::float64;
    case UINT32: return dtypes::uint32;
    case UINT64: return dtypes::uint64;
    case BFLOAT16: return dtypes::bfloat16;
    default: fail(TG_ERROR_UNSUPPORTED, strformat("%s: ONNX element type %s is not supported", what.c_str(), dtype_name(t).c_str()));
  }
}
int32_t from_dtype(DType dt) {
  switch (dt.scalar) {
    case Scalar::Float32: return FLOAT;
    case Scalar::UInt8: return UINT8;
    case Scalar::Int8: return INT8;
    case Scalar::UInt16: return UINT16;
    case Scalar::Int16: return INT16;
    case Scalar::Int32: return INT32;
    case Scalar::Int64: return INT64;
    case Scalar::Bool: return BOOL;
    case Scalar::Float16: return FLOAT16;
    case Scalar::Float64: return DOUBLE;
    case Scalar::UInt32: return UINT32;
    case Scalar::UInt64: return UINT64;
    case Scalar::BFloat16: return BFLOAT16;
    default: return UNDEFINED;
  }
}

const Attr* Node::attr(const std::string& n) const {
  for (auto& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

namespace {

// external data's file: a relative path that stays inside the model's directory, symlinks resolved
fs::path external_path(const std::string& loc, const std::string& base_dir, const std::string& what) {
  TG_CHECK(!base_dir.empty(), TG_ERROR_IO, strformat("%s: external data '%s' needs the model's directory (load the model from a file)", what.c_str(), loc.c_str()));
  fs::path p(loc);
  TG_CHECK(!loc.empty() && p.is_relative(), TG_ERROR_IO, strformat("%s: external data location '%s' is not a relative path", what.c_str(), loc.c_str()));
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(base_dir), ec);
  fs::path full = fs::weakly_canonical(base / p, ec);
  TG_CHECK(!ec, TG_ERROR_IO, strformat("%s: external data location '%s': %s", what.c_str(), loc.c_str(), ec.message().c_str()));
  auto rel = full.lexically_relative(base);
  TG_CHECK(!rel.empty() && *rel.begin() != "..", TG_ERROR_IO,
           strformat("%s: external data location '%s' leaves the model's directory", what.c_str(), loc.c_str()));
  return full;
}

uint64_t parse_u64(const std::string& s, const std::string& what) {
  TG_CHECK(!s.empty() && s.size() <= 19 && std::all_of(s.begin(), s.end(), ::isdigit), TG_ERROR_IO,
           strformat("%s: external data offset/length '%s' is not a number", what.c_str(), s.c_str()));
  return std::stoull(s);
}

// The bytes of a tensor stored outside the model
std::vector<uint8_t> read_external(const TensorProto& t, const std::string& base_dir, size_t need) {
  std::string what = "tensor '" + t.name + "'", loc;
  uint64_t off = 0, len = need;
  bool has_len = false;
  for (auto& [k, v] : t.external_data) {
    if (k == "location") loc = v;
    else if (k == "offset") off = parse_u64(v, what);
    else if (k == "length") len = parse_u64(v, what), has_len = true;
  }
  TG_CHECK(!has_len || len == need, TG_ERROR_IO, strformat("%s: external data length %llu, its shape needs %zu bytes", what.c_str(), (unsigned long long)len, need));
  fs::path p = external_path(loc, base_dir, what);
  std::ifstream f(p, std::ios::binary);
  TG_CHECK(f.good(), TG_ERROR_IO, strformat("%s: cannot open external data '%s'", what.c_str(), loc.c_str()));
  std::error_code ec;
  uint64_t size = fs::file_size(p, ec);
  TG_CHECK(!ec && off <= size && need <= size - off, TG_ERROR_IO,
           strformat("%s: external data '%s' has %llu bytes, the tensor needs %zu at offset %llu", what.c_str(), loc.c_str(), (unsigned long long)size, need,
                     (unsigned long long)off));
  std::vector<uint8_t> out(need);
  f.seekg(std::streamoff(off));
  f.read(reinterpret_cast<char*>(out.data()), std::streamsize(need));
  TG_CHECK(size_t(f.gcount()) == need, TG_ERROR_IO, strformat("%s: short read from external data '%s'", what.c_str(), loc.c_str()));
  return out;
}

// the typed field's values narrowed to the element type's bytes
template <class Dst, class Src>
void narrow(const std::vector<Src>& src, std::vector<uint8_t>& out) {
  out.resize(src.size() * sizeof(Dst));
  for (size_t i = 0; i < src.size(); i++) {
    Dst d = Dst(src[i]);
    std::memcpy(out.data() + i * sizeof(Dst), &d, sizeof d);
  }
}

// The run lowering nodes on this thread: its model, and (under a JIT) the input tensors' nodes, to notice a host read
// of data that depends on them
struct RunState {
  Model* model;
  std::unordered_set<const UOp*> inputs;
  bool read_input = false;
};
thread_local RunState* running = nullptr;
bool reads_inputs(const Tensor& t) {
  if (!running || running->inputs.empty()) return false;
  for (auto& u : t.uop()->toposort())
    if (running->inputs.count(u.get())) return true;
  return false;
}
// notes a host read of `t` that depends on the inputs' data
void note_host_read(const Tensor& t) {
  if (running && !running->read_input && reads_inputs(t)) running->read_input = true;
}
}  // namespace

Tensor tensor_from_proto(const TensorProto& t, const std::string& device, const std::string& base_dir) {
  std::string what = "tensor '" + t.name + "'";
  DType dt = to_dtype(t.data_type, what);
  Shape shape(t.dims.begin(), t.dims.end());
  for (int64_t d : shape) TG_CHECK(d >= 0, TG_ERROR_IO, strformat("%s: negative dim %lld", what.c_str(), (long long)d));
  check_shape(shape, dt, what.c_str());
  size_t n = size_t(prod(shape)), need = n * size_t(dt.itemsize());
  std::vector<uint8_t> buf;
  const uint8_t* data = nullptr;
  if (t.external) {
    buf = read_external(t, base_dir, need);
    data = buf.data();
  } else if (t.has_raw) {
    TG_CHECK(t.raw_len == need, TG_ERROR_IO, strformat("%s: raw_data has %zu bytes, shape %s of %s needs %zu", what.c_str(), t.raw_len,
                                                       shape_str(shape).c_str(), dt.name().c_str(), need));
    data = t.raw;
  } else {
    size_t have = 0;
    switch (t.data_type) {
      case FLOAT: have = t.floats.size(), narrow<float>(t.floats, buf); break;
      case DOUBLE: have = t.doubles.size(), narrow<double>(t.doubles, buf); break;
      case INT64: have = t.int64s.size(), narrow<int64_t>(t.int64s, buf); break;
      case UINT64: have = t.uint64s.size(), narrow<uint64_t>(t.uint64s, buf); break;
      case UINT32: have = t.uint64s.size(), narrow<uint32_t>(t.uint64s, buf); break;
      case INT32: have = t.int32s.size(), narrow<int32_t>(t.int32s, buf); break;
      case INT16: have = t.int32s.size(), narrow<int16_t>(t.int32s, buf); break;
      case UINT16: case FLOAT16: case BFLOAT16: have = t.int32s.size(), narrow<uint16_t>(t.int32s, buf); break;
      case INT8: have = t.int32s.size(), narrow<int8_t>(t.int32s, buf); break;
      case UINT8: have = t.int32s.size(), narrow<uint8_t>(t.int32s, buf); break;
      case BOOL: {
        have = t.int32s.size();
        buf.resize(have);
        for (size_t i = 0; i < have; i++) buf[i] = t.int32s[i] != 0;
        break;
      }
    }
    TG_CHECK(have == n, TG_ERROR_IO, strformat("%s: %zu values, shape %s needs %zu", what.c_str(), have, shape_str(shape).c_str(), n));
    data = buf.data();
  }
  return Tensor::from_data(data, need, dt, shape, device);
}

// ---- the context an operator gets

std::string OpCtx::where() const { return strformat("node '%s' (%s)", node.name.c_str(), node.op_type.c_str()); }
void OpCtx::unsupported(const std::string& what) const { fail(TG_ERROR_UNSUPPORTED, "onnx: " + where() + ": " + what); }
void OpCtx::invalid(const std::string& what) const { fail(TG_ERROR_INVALID_ARGUMENT, "onnx: " + where() + ": " + what); }

const Tensor& OpCtx::x(size_t k) const {
  if (!has(k)) invalid(strformat("input %zu is missing", k));
  if (in[k].kind != Value::Kind::Tensor) invalid(strformat("input %zu is a sequence, a tensor is expected", k));
  return *in[k].t;
}
std::optional<Tensor> OpCtx::opt(size_t k) const {
  if (!has(k)) return std::nullopt;
  return x(k);
}
const std::vector<Tensor>& OpCtx::seq(size_t k) const {
  if (!has(k) || in[k].kind != Value::Kind::Sequence) invalid(strformat("input %zu is not a sequence", k));
  return in[k].seq;
}
void OpCtx::note_read(const Tensor& t) const { note_host_read(t); }
bool OpCtx::from_inputs(const Tensor& t) const { return reads_inputs(t); }
namespace {
// t's values on the host as T (int64 or double)
template <class T>
std::vector<T> read_as(const Tensor& t) {
  note_host_read(t);
  Tensor c = t.cast(std::is_same_v<T, double> ? dtypes::float64 : dtypes::int64).contiguous();
  std::vector<T> v(size_t(c.numel()));
  c.to_data(v.data(), v.size() * sizeof(T));
  return v;
}
}  // namespace
std::vector<int64_t> OpCtx::read_ints(const Tensor& t) const { return read_as<int64_t>(t); }
std::vector<double> OpCtx::read_floats(const Tensor& t) const { return read_as<double>(t); }
std::vector<int64_t> OpCtx::host_ints(size_t k) const {
  const Tensor& t = x(k);
  if (t.numel() > (1 << 20)) invalid(strformat("input %zu: %lld values where a short list (a shape, axes) is expected", k, (long long)t.numel()));
  if (!dtypes::is_int(t.dtype()) && !dtypes::is_bool(t.dtype())) invalid(strformat("input %zu is %s, an integer tensor is expected", k, t.dtype().name().c_str()));
  return read_ints(t);
}
std::vector<double> OpCtx::host_floats(size_t k) const {
  const Tensor& t = x(k);
  if (t.numel() > (1 << 20)) invalid(strformat("input %zu: %lld values where a short list is expected", k, (long long)t.numel()));
  return read_floats(t);
}

namespace {
const Attr* typed(const OpCtx& c, const char* n, AttrType want) {
  const Attr* a = c.node.attr(n);
  if (a && a->type != want) c.invalid(strformat("attribute '%s' has type %d, expected %d", n, int(a->type), int(want)));
  return a;
}
}  // namespace
int64_t OpCtx::i(const char* n, int64_t d) const {
  auto* a = typed(*this, n, AttrType::Int);
  return a ? a->i : d;
}
double OpCtx::f(const char* n, double d) const {
  const Attr* a = node.attr(n);
  if (a && a->type == AttrType::Int) return double(a->i);  // some exporters write an integral float as an int
  a = typed(*this, n, AttrType::Float);
  return a ? a->f : d;
}
std::string OpCtx::s(const char* n, const std::string& d) const {
  auto* a = typed(*this, n, AttrType::String);
  return a ? a->s : d;
}
std::vector<int64_t> OpCtx::ints(const char* n, std::vector<int64_t> d) const {
  auto* a = typed(*this, n, AttrType::Ints);
  return a ? a->ints : d;
}
std::vector<float> OpCtx::floats(const char* n, std::vector<float> d) const {
  auto* a = typed(*this, n, AttrType::Floats);
  return a ? a->floats : d;
}
std::vector<std::string> OpCtx::strings(const char* n, std::vector<std::string> d) const {
  auto* a = typed(*this, n, AttrType::Strings);
  return a ? a->strings : d;
}
const TensorProto* OpCtx::tensor_attr(const char* n) const {
  auto* a = typed(*this, n, AttrType::Tensor);
  return a ? a->t.get() : nullptr;
}
const Graph* OpCtx::graph_attr(const char* n) const {
  auto* a = typed(*this, n, AttrType::Graph);
  return a ? a->g.get() : nullptr;
}
Tensor OpCtx::constant(const TensorProto& t) const { return running ? running->model->constant(t) : tensor_from_proto(t, device, ""); }

int64_t norm_axis(int64_t axis, int64_t ndim, const OpCtx& c) {
  if (axis < -ndim || axis >= std::max<int64_t>(ndim, 1)) c.invalid(strformat("axis %lld is out of range for rank %lld", (long long)axis, (long long)ndim));
  return axis < 0 ? axis + ndim : axis;
}
std::vector<int64_t> norm_axes(const std::vector<int64_t>& axes, int64_t ndim, const OpCtx& c) {
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(norm_axis(a, ndim, c));
  return out;
}
Tensor broadcast_to(const Tensor& t, const Shape& s) {
  Shape ts = t.shape();
  TG_CHECK(ts.size() <= s.size(), TG_ERROR_SHAPE, strformat("cannot broadcast %s to %s", shape_str(ts).c_str(), shape_str(s).c_str()));
  Shape padded(s.size() - ts.size(), 1);
  padded.insert(padded.end(), ts.begin(), ts.end());
  for (size_t i = 0; i < s.size(); i++)
    TG_CHECK(padded[i] == s[i] || padded[i] == 1, TG_ERROR_SHAPE, strformat("cannot broadcast %s to %s", shape_str(ts).c_str(), shape_str(s).c_str()));
  Tensor r = padded == ts ? t : t.reshape(padded);
  return padded == s ? r : r.expand(s);
}

// ---- control flow: the body runs on the host once per branch taken or iteration, each a lazy graph

namespace {
bool host_cond(OpCtx& c, size_t k) {
  auto v = c.host_ints(k);
  if (v.size() != 1) c.invalid("the condition must hold one element");
  return v[0] != 0;
}
std::vector<Value> op_if(OpCtx& c) {
  const Graph* g = c.graph_attr(host_cond(c, 0) ? "then_branch" : "else_branch");
  if (!g) c.invalid("a branch is missing");
  return c.run_graph(*g, {});
}
// stacks per-iteration tensors along a new axis (a scan output)
Tensor stack_outputs(const OpCtx& c, std::vector<Tensor>& ts, int64_t axis, bool reverse) {
  if (reverse) std::reverse(ts.begin(), ts.end());
  if (ts.empty()) c.unsupported("a scan output of zero iterations (its shape is unknown)");
  return Tensor::stack(ts, norm_axis(axis, ts[0].ndim() + 1, c));
}
std::vector<Value> op_loop(OpCtx& c) {
  const Graph* body = c.graph_attr("body");
  if (!body) c.invalid("attribute 'body' is missing");
  int64_t max_trip = c.has(0) ? c.host_ints(0).at(0) : INT64_MAX;
  bool cond = c.has(1) ? host_cond(c, 1) : true;
  std::vector<Value> carried(c.in.begin() + std::min<size_t>(2, c.in.size()), c.in.end());
  size_t n_carried = carried.size();
  if (body->outputs.size() < 1 + n_carried) c.invalid("the body has fewer outputs than the loop carries");
  size_t n_scan = body->outputs.size() - 1 - n_carried;
  std::vector<std::vector<Tensor>> scans(n_scan);
  int64_t it = 0;
  constexpr int64_t kMaxIters = 1 << 20;
  for (; it < max_trip && cond; it++) {
    if (it >= kMaxIters) c.unsupported("a loop of more than 2^20 iterations");
    std::vector<Value> args{Tensor::full({}, double(it), dtypes::int64, c.device), Tensor::full({}, cond, dtypes::bool_, c.device)};
    args.insert(args.end(), carried.begin(), carried.end());
    auto out = c.run_graph(*body, args);
    if (out[0].kind != Value::Kind::Tensor) c.invalid("the body's condition output is not a tensor");
    std::vector<Value> cv{out[0]};
    OpCtx cc{c.node, c.opset, c.device, cv, c.run_graph};
    cond = host_cond(cc, 0);
    for (size_t i = 0; i < n_carried; i++) carried[i] = out[1 + i];
    for (size_t i = 0; i < n_scan; i++) {
      auto& v = out[1 + n_carried + i];
      if (v.kind != Value::Kind::Tensor) c.invalid("a scan output is not a tensor");
      scans[i].push_back(*v.t);
    }
  }
  std::vector<Value> res(carried);
  for (auto& s : scans) res.push_back(stack_outputs(c, s, 0, false));
  return res;
}
// The scan proper: `xs` with their scanned axis first, run through the body step by step
std::vector<Value> scan_steps(OpCtx& c, const Graph& body, std::vector<Value> state, const std::vector<Tensor>& xs, const std::vector<int64_t>& in_dirs,
                              const std::vector<int64_t>& out_axes, const std::vector<int64_t>& out_dirs) {
  int64_t len = xs.empty() ? 0 : xs[0].shape()[0];
  size_t n_state = state.size(), n_scan_out = out_axes.size();
  std::vector<std::vector<Tensor>> outs(n_scan_out);
  for (int64_t s = 0; s < len; s++) {
    std::vector<Value> args(state);
    for (size_t i = 0; i < xs.size(); i++) {
      int64_t at = in_dirs[i] ? len - 1 - s : s;
      std::vector<std::pair<int64_t, int64_t>> b{{at, at + 1}};
      for (int64_t d = 1; d < xs[i].ndim(); d++) b.push_back({0, xs[i].shape()[d]});
      args.push_back(xs[i].shrink(b).squeeze(0));
    }
    auto out = c.run_graph(body, args);
    for (size_t i = 0; i < n_state; i++) state[i] = out[i];
    for (size_t i = 0; i < n_scan_out; i++) {
      if (out[n_state + i].kind != Value::Kind::Tensor) c.invalid("a scan output is not a tensor");
      outs[i].push_back(*out[n_state + i].t);
    }
  }
  std::vector<Value> res(state);
  for (size_t i = 0; i < n_scan_out; i++) res.push_back(stack_outputs(c, outs[i], out_axes[i], out_dirs[i] != 0));
  return res;
}
// t without its dim 0, at index i
Tensor index0(const Tensor& t, int64_t i) {
  std::vector<std::pair<int64_t, int64_t>> b{{i, i + 1}};
  for (int64_t d = 1; d < t.ndim(); d++) b.push_back({0, t.shape()[d]});
  return t.shrink(b).squeeze(0);
}
// t with dim `ax` moved first
Tensor axis_first(const Tensor& t, int64_t ax) {
  std::vector<int64_t> order{ax};
  for (int64_t d = 0; d < t.ndim(); d++)
    if (d != ax) order.push_back(d);
  return t.permute(order);
}
std::vector<Value> op_scan(OpCtx& c) {
  const Graph* body = c.graph_attr("body");
  if (!body) c.invalid("attribute 'body' is missing");
  bool v8 = c.opset < 9;  // opset 8: a leading sequence_lens input and a batch dim on every input and output
  int64_t n_scan_in = c.i("num_scan_inputs", 0), first = v8 ? 1 : 0;
  int64_t n_state = int64_t(c.n_in()) - first - n_scan_in;
  if (n_scan_in < 1 || n_state < 0 || body->outputs.size() < size_t(n_state)) c.invalid("num_scan_inputs does not fit the inputs");
  size_t n_scan_out = body->outputs.size() - size_t(n_state);
  auto in_axes = c.ints("scan_input_axes", std::vector<int64_t>(size_t(n_scan_in), 0));
  auto in_dirs = c.ints(v8 ? "directions" : "scan_input_directions", std::vector<int64_t>(size_t(n_scan_in), 0));
  auto out_axes = c.ints("scan_output_axes", std::vector<int64_t>(n_scan_out, 0));
  auto out_dirs = c.ints("scan_output_directions", std::vector<int64_t>(n_scan_out, 0));
  if (in_axes.size() != size_t(n_scan_in) || in_dirs.size() != size_t(n_scan_in) || out_axes.size() != n_scan_out || out_dirs.size() != n_scan_out)
    c.invalid("scan axes/directions do not match the scan inputs/outputs");
  std::vector<Value> state(c.in.begin() + first, c.in.begin() + first + n_state);
  std::vector<Tensor> xs;
  for (int64_t i = 0; i < n_scan_in; i++) {
    const Tensor& t = c.x(size_t(first + n_state + i));
    xs.push_back(v8 ? t : axis_first(t, norm_axis(in_axes[size_t(i)], t.ndim(), c)));
    if (xs.back().ndim() < (v8 ? 2 : 1) || xs.back().shape()[v8 ? 1 : 0] != xs[0].shape()[v8 ? 1 : 0]) c.invalid("scan inputs differ in length");
  }
  if (!v8) return scan_steps(c, *body, state, xs, in_dirs, out_axes, out_dirs);
  // opset 8: each batch element scanned on its own, the results stacked
  int64_t batch = xs[0].shape()[0], len = xs[0].shape()[1];
  if (c.has(0))
    for (int64_t l : c.host_ints(0))
      if (l != len) c.unsupported("sequence_lens shorter than the scanned dim");
  std::vector<std::vector<Tensor>> per(size_t(n_state) + n_scan_out);
  for (int64_t b = 0; b < batch; b++) {
    std::vector<Value> st;
    for (auto& v : state) st.push_back(index0(*v.t, b));
    std::vector<Tensor> xb;
    for (auto& x : xs) xb.push_back(index0(x, b));
    auto r = scan_steps(c, *body, st, xb, in_dirs, std::vector<int64_t>(n_scan_out, 0), std::vector<int64_t>(n_scan_out, 0));
    for (size_t i = 0; i < r.size(); i++) per[i].push_back(*r[i].t);
  }
  std::vector<Value> res;
  for (auto& ts : per) res.push_back(Tensor::stack(ts, 0));
  return res;
}
// SequenceMap: the body on each element of the input sequence (and the same element of the other sequence inputs;
// tensor inputs as they are), each output a sequence of the body's results
std::vector<Value> op_sequence_map(OpCtx& c) {
  const Graph* body = c.graph_attr("body");
  if (!body) c.invalid("attribute 'body' is missing");
  size_t n = c.seq(0).size();
  for (size_t k = 1; k < c.n_in(); k++)
    if (c.in[k].kind == Value::Kind::Sequence && c.in[k].seq.size() != n) c.invalid("the sequence inputs differ in length");
  std::vector<std::vector<Tensor>> outs(body->outputs.size());
  for (size_t i = 0; i < n; i++) {
    std::vector<Value> args;
    for (size_t k = 0; k < c.n_in(); k++) args.push_back(c.in[k].kind == Value::Kind::Sequence ? Value(c.in[k].seq[i]) : c.in[k]);
    auto out = c.run_graph(*body, args);
    for (size_t j = 0; j < out.size(); j++) {
      if (out[j].kind != Value::Kind::Tensor) c.invalid("the body's output is not a tensor");
      outs[j].push_back(*out[j].t);
    }
  }
  std::vector<Value> res;
  for (size_t j = 0; j < outs.size(); j++) res.push_back(Value::sequence(outs[j], body->outputs[j].elem_type));
  return res;
}
}  // namespace

void add_control_ops(OpTable& t) {
  t["If"] = op_if;
  t["Loop"] = op_loop;
  t["Scan"] = op_scan;
  t["SequenceMap"] = op_sequence_map;
}

const OpTable& op_table() {
  static const OpTable t = [] {
    OpTable t;
    add_math_ops(t);
    add_shape_ops(t);
    add_nn_ops(t);
    add_signal_ops(t);
    add_control_ops(t);
    return t;
  }();
  return t;
}

// ---- the model

Model::~Model() = default;

FileBytes::FileBytes(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO fails the check below, never blocks
  TG_CHECK(fd >= 0, TG_ERROR_IO, strformat("onnx: cannot open '%s': %s", path.c_str(), std::strerror(errno)));
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0;
  if (!ok || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(TG_ERROR_IO, strformat("onnx: '%s' is not a regular file", path.c_str()));
  }
  if (uint64_t(st.st_size) > (uint64_t(1) << 31)) {
    ::close(fd);
    fail(TG_ERROR_IO, strformat("onnx: '%s' is larger than protobuf's 2 GiB (store big weights as external data)", path.c_str()));
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (map_ == MAP_FAILED) map_ = nullptr;
  }
  ::close(fd);
  TG_CHECK(map_ || size_ == 0, TG_ERROR_IO, strformat("onnx: cannot map '%s': %s", path.c_str(), std::strerror(errno)));
  static const uint8_t empty = 0;
  data_ = map_ ? static_cast<const uint8_t*>(map_) : &empty;
}
FileBytes::~FileBytes() {
  if (map_) ::munmap(map_, size_);
}

std::shared_ptr<Model> Model::load_file(const std::string& path, const Options& o) {
  auto bytes = read_file(path);
  fs::path dir = fs::path(path).parent_path();
  return load_bytes(bytes.data(), bytes.size(), path, dir.empty() ? "." : dir.string(), o);
}

std::shared_ptr<Model> Model::load_bytes(const uint8_t* data, size_t len, const std::string& name, const std::string& base_dir, const Options& o) {
  TG_CHECK(data || len == 0, TG_ERROR_INVALID_ARGUMENT, "onnx: data is NULL");
  std::shared_ptr<Model> m(new Model());
  m->opt_ = o;
  m->name_ = name;
  m->m_ = parse_model(data, len, name);
  m->prepare(base_dir);  // every raw_data view into `data` becomes a tensor here
  return m;
}

void Model::prepare(const std::string& base_dir) {
  opset_ = 0;
  for (auto& [dom, v] : m_.opsets) {
    if (dom.empty() || dom == "ai.onnx") opset_ = v;
  }
  // a model of training-domain nodes alone may import no ai.onnx opset: its nodes read the newest
  if (!opset_) opset_ = m_.opsets.empty() ? 1 : 17;
  // every graph (subgraphs too), walked with a stack: nodes checked, constants made
  std::vector<const Graph*> todo{&m_.graph};
  auto& table = op_table();
  while (!todo.empty()) {
    const Graph* g = todo.back();
    todo.pop_back();
    for (auto& t : g->initializers) consts_.emplace(&t, tensor_from_proto(t, opt_.device, base_dir));
    for (auto& n : g->nodes) {
      std::string node = strformat("node '%s' (%s)", n.name.c_str(), n.op_type.c_str());
      TG_CHECK(n.domain.empty() || n.domain == "ai.onnx" || n.domain == "ai.onnx.preview.training", TG_ERROR_UNSUPPORTED,
               strformat("onnx: %s: %s: operators of domain '%s' are not supported", name_.c_str(), node.c_str(), n.domain.c_str()));
      TG_CHECK(table.count(n.op_type), TG_ERROR_UNSUPPORTED, strformat("onnx: %s: %s: operator %s is not supported", name_.c_str(), node.c_str(), n.op_type.c_str()));
      for (auto& a : n.attrs) {
        if (a.t) consts_.emplace(a.t.get(), tensor_from_proto(*a.t, opt_.device, base_dir));
        if (a.g) todo.push_back(a.g.get());
        for (auto& sg : a.graphs) todo.push_back(sg.get());
      }
    }
  }
  // the raw_data views pointed into the loaded bytes, which are gone now
  todo = {&m_.graph};
  while (!todo.empty()) {
    Graph* g = const_cast<Graph*>(todo.back());
    todo.pop_back();
    for (auto& t : g->initializers) t.raw = nullptr;
    for (auto& n : g->nodes)
      for (auto& a : n.attrs) {
        if (a.t) a.t->raw = nullptr;
        if (a.g) todo.push_back(a.g.get());
        for (auto& sg : a.graphs) todo.push_back(sg.get());
      }
  }
  std::unordered_set<std::string> init;
  for (auto& t : m_.graph.initializers) init.insert(t.name);
  for (auto& v : m_.graph.inputs) {
    if (init.count(v.name)) continue;
    ValueInfo vi = v;
    for (auto& d : vi.shape)
      for (auto& [k, val] : opt_.dims)
        if (d.param == k) d.value = val;
    inputs_.push_back(std::move(vi));
  }
}

Tensor Model::constant(const TensorProto& t) const {
  auto it = consts_.find(&t);
  TG_CHECK(it != consts_.end(), TG_ERROR_INVALID_ARGUMENT, strformat("onnx: tensor '%s' is not one of the model's", t.name.c_str()));
  return it->second;
}

std::vector<Value> Model::run_graph(const Graph& g, const std::unordered_map<std::string, Value>& outer, const std::vector<Value>& in) {
  std::unordered_map<std::string, Value> env(outer);
  for (auto& t : g.initializers) env[t.name] = constant(t);
  TG_CHECK(in.size() <= g.inputs.size(), TG_ERROR_INVALID_ARGUMENT, strformat("onnx: graph '%s' takes %zu inputs, %zu given", g.name.c_str(), g.inputs.size(), in.size()));
  for (size_t i = 0; i < in.size(); i++) env[g.inputs[i].name] = in[i];
  auto& table = op_table();
  for (auto& n : g.nodes) {
    std::vector<Value> args;
    for (auto& name : n.inputs) {
      if (name.empty()) {
        args.emplace_back();
        continue;
      }
      auto it = env.find(name);
      TG_CHECK(it != env.end(), TG_ERROR_INVALID_ARGUMENT,
               strformat("onnx: node '%s' (%s): input '%s' is produced by no earlier node", n.name.c_str(), n.op_type.c_str(), name.c_str()));
      args.push_back(it->second);
    }
    auto run_sub = [this, &env](const Graph& sg, const std::vector<Value>& a) { return run_graph(sg, env, a); };
    OpCtx c{n, opset_, opt_.device, args, run_sub};
    std::vector<Value> out = table.at(n.op_type)(c);
    for (size_t i = 0; i < n.outputs.size(); i++) {
      if (n.outputs[i].empty()) continue;
      if (i >= out.size()) c.unsupported(strformat("output %zu ('%s') is not produced", i, n.outputs[i].c_str()));
      env[n.outputs[i]] = std::move(out[i]);
    }
  }
  std::vector<Value> res;
  for (auto& o : g.outputs) {
    auto it = env.find(o.name);
    TG_CHECK(it != env.end(), TG_ERROR_INVALID_ARGUMENT, strformat("onnx: graph output '%s' is produced by no node", o.name.c_str()));
    res.push_back(it->second);
  }
  return res;
}

namespace {
void check_input(const ValueInfo& vi, const Value& v, std::unordered_map<std::string, int64_t>& params, const std::string& model) {
  const char* name = vi.name.c_str();
  if (vi.kind == ValueInfo::Kind::Optional && v.kind == Value::Kind::None) return;
  if (vi.kind == ValueInfo::Kind::Sequence || (vi.kind == ValueInfo::Kind::Optional && vi.elem_sequence)) {
    TG_CHECK(v.kind == Value::Kind::Sequence, TG_ERROR_INVALID_ARGUMENT, strformat("onnx: %s: input '%s' takes a sequence", model.c_str(), name));
    return;
  }
  TG_CHECK(v.kind == Value::Kind::Tensor, TG_ERROR_INVALID_ARGUMENT, strformat("onnx: %s: input '%s' takes a tensor", model.c_str(), name));
  const Tensor& t = *v.t;
  if (vi.elem_type != UNDEFINED) {
    TG_CHECK(from_dtype(t.dtype()) == vi.elem_type, TG_ERROR_DTYPE,
             strformat("onnx: %s: input '%s' is %s, the model declares %s", model.c_str(), name, t.dtype().name().c_str(), dtype_name(vi.elem_type).c_str()));
  }
  if (!vi.has_shape) return;
  TG_CHECK(t.ndim() == int64_t(vi.shape.size()), TG_ERROR_SHAPE,
           strformat("onnx: %s: input '%s' has shape %s, the model declares rank %zu", model.c_str(), name, shape_str(t.shape()).c_str(), vi.shape.size()));
  for (size_t d = 0; d < vi.shape.size(); d++) {
    int64_t got = t.shape()[d];
    auto& dim = vi.shape[d];
    if (dim.value >= 0) {
      TG_CHECK(got == dim.value, TG_ERROR_SHAPE, strformat("onnx: %s: input '%s' has shape %s, dim %zu must be %lld", model.c_str(), name,
                                                           shape_str(t.shape()).c_str(), d, (long long)dim.value));
    } else if (!dim.param.empty()) {
      auto [it, fresh] = params.emplace(dim.param, got);
      TG_CHECK(fresh || it->second == got, TG_ERROR_SHAPE, strformat("onnx: %s: input '%s' dim %zu ('%s') is %lld, another input has '%s' = %lld", model.c_str(),
                                                                      name, d, dim.param.c_str(), (long long)got, dim.param.c_str(), (long long)it->second));
    }
  }
}
}  // namespace

std::vector<Value> Model::run(const std::vector<Value>& in) {
  TG_CHECK(in.size() == inputs_.size(), TG_ERROR_INVALID_ARGUMENT, strformat("onnx: %s takes %zu inputs, %zu given", name_.c_str(), inputs_.size(), in.size()));
  std::unordered_map<std::string, int64_t> params;
  for (size_t i = 0; i < in.size(); i++) check_input(inputs_[i], in[i], params, name_);
  for (auto& v : in)
    if (v.kind == Value::Kind::Tensor)
      TG_CHECK(v.t->device() == opt_.device, TG_ERROR_DEVICE, strformat("onnx: %s runs on %s, an input is on %s", name_.c_str(), opt_.device.c_str(), v.t->device().c_str()));
  bool tensors_only = std::all_of(in.begin(), in.end(), [](auto& v) { return v.kind == Value::Kind::Tensor; }) &&
                      std::all_of(outputs().begin(), outputs().end(), [](auto& v) { return v.kind == ValueInfo::Kind::Tensor; });
  if (!opt_.jit || data_dependent_ || !tensors_only) return run_eager(in, nullptr);
  std::string key;
  std::vector<Tensor> ts;
  for (auto& v : in) key += shape_str(v.t->shape()) + v.t->dtype().name() + ";", ts.push_back(*v.t);
  if (!jits_.count(key) && jits_.size() >= 16) jits_.clear();  // a model run at many shapes keeps the latest captures only
  auto& jit = jits_[key];
  if (!jit) {
    jit = std::make_unique<TinyJit>([this](const std::vector<Tensor>& xs) {
      std::vector<Value> vs(xs.begin(), xs.end());
      std::vector<Tensor> outs;
      for (auto& v : run_eager(vs, &xs)) {
        TG_CHECK(v.kind == Value::Kind::Tensor, TG_ERROR_INVALID_ARGUMENT, strformat("onnx: %s: an output is not a tensor", name_.c_str()));
        outs.push_back(*v.t);
      }
      return outs;
    });
    // the initializers never change: kernels of them alone (a Winograd conv's weight transform) run at the capture only
    std::vector<Tensor> weights;
    for (auto& [p, t] : consts_) weights.push_back(t);
    jit->set_constants(weights);
  }
  std::vector<Tensor> outs = (*jit)(ts);
  if (data_dependent_) jits_.clear();  // this call's outputs are right (the function ran); later calls run eagerly
  return std::vector<Value>(outs.begin(), outs.end());
}

std::vector<Value> Model::run_eager(const std::vector<Value>& in, const std::vector<Tensor>* jit_inputs) {
  RunState st{this, {}};
  if (jit_inputs)
    for (auto& t : *jit_inputs) st.inputs.insert(t.uop().get());
  RunState* prev = running;
  running = &st;
  struct Restore {
    RunState* p;
    ~Restore() { running = p; }
  } restore{prev};
  auto out = run_graph(m_.graph, {}, in);
  if (st.read_input) data_dependent_ = true;
  std::vector<Tensor*> ts;
  for (auto& v : out) {
    if (v.kind == Value::Kind::Tensor) ts.push_back(&*v.t);
    for (auto& t : v.seq) ts.push_back(&t);
  }
  Tensor::realize_all(ts);
  return out;
}

}  // namespace tg::onnx
