// A protobuf writer for the ONNX messages tests build by hand (hostile files, the C API fuzzer's model): each function
// returns the encoded bytes of one field or message.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace onnx_writer {

using Msg = std::string;
inline Msg varint(uint64_t v) {
  Msg s;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    s.push_back(char(b | (v ? 0x80 : 0)));
  } while (v);
  return s;
}
inline Msg tag(int field, int wire) { return varint(uint64_t(field) << 3 | uint64_t(wire)); }
inline Msg num(int field, int64_t v) { return tag(field, 0) + varint(uint64_t(v)); }
inline Msg len(int field, const Msg& body) { return tag(field, 2) + varint(body.size()) + body; }
inline Msg f32(int field, float v) {
  Msg s = tag(field, 5);
  s.append(reinterpret_cast<const char*>(&v), 4);
  return s;
}

// onnx.proto's messages
inline Msg dims_of(const std::vector<int64_t>& d) {
  Msg s;
  for (auto v : d) s += num(1, v);
  return s;
}
inline Msg tensor(const std::string& name, int dtype, const std::vector<int64_t>& dims, const Msg& extra) { return dims_of(dims) + num(2, dtype) + len(8, name) + extra; }
inline Msg raw(const std::string& bytes) { return len(9, bytes); }
inline Msg floats(size_t n) {
  Msg s;
  for (size_t i = 0; i < n; i++) s += f32(4, 1.0f);
  return s;
}
inline Msg shape(const std::vector<int64_t>& d) {
  Msg s;
  for (auto v : d) s += len(1, v >= 0 ? num(1, v) : len(2, "batch"));
  return s;
}
inline Msg value_info(const std::string& name, int dtype, const std::vector<int64_t>& d) { return len(1, name) + len(2, len(1, num(1, dtype) + len(2, shape(d)))); }
// a sequence of tensors of `dtype`
inline Msg seq_info(const std::string& name, int dtype) { return len(1, name) + len(2, len(4, len(1, len(1, num(1, dtype))))); }
inline Msg node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out, const Msg& extra = "",
         const std::string& domain = "") {
  Msg s;
  for (auto& i : in) s += len(1, i);
  for (auto& o : out) s += len(2, o);
  s += len(3, op + "_node") + len(4, op);
  if (!domain.empty()) s += len(7, domain);
  return s + extra;
}
// a graph: nodes, initializers, inputs, outputs (already encoded)
inline Msg graph(const std::vector<Msg>& nodes, const std::vector<Msg>& inits, const std::vector<Msg>& ins, const std::vector<Msg>& outs) {
  Msg s = len(2, "g");
  for (auto& n : nodes) s += len(1, n);
  for (auto& t : inits) s += len(5, t);
  for (auto& i : ins) s += len(11, i);
  for (auto& o : outs) s += len(12, o);
  return s;
}
inline Msg model(const Msg& g, int64_t opset = 13) { return num(1, 8) + len(2, "hand") + len(7, g) + len(8, num(2, opset)); }
// y = Relu(x) for x (2,3) float, with `inits` as initializers
inline Msg relu_model(const std::vector<Msg>& inits = {}) {
  return model(graph({node("Relu", {"x"}, {"y"})}, inits, {value_info("x", 1, {2, 3})}, {value_info("y", 1, {2, 3})}));
}

}  // namespace onnx_writer
