// A reader of the protobuf wire format for onnx.proto's messages. Our own, as tinygrad's: the messages ONNX uses are a
// dozen, their fields a few each, and a library build then needs no protobuf library or generated code (see
// docs/onnx.md). Every length is checked against the bytes left before anything is read or allocated, so what a hostile
// file can make us allocate is bounded by its own size; nesting is bounded by a depth count.
#include <cstring>

#include "onnx/model.h"

namespace tg::onnx {
namespace {

constexpr int kMaxDepth = 64;  // graphs inside attributes, types inside types

enum Wire { VARINT = 0, I64 = 1, LEN = 2, SGROUP = 3, EGROUP = 4, I32 = 5 };

struct Reader {
  const uint8_t *p, *end;
  const std::string& what;  // the file, for errors
  const char* msg;          // the message being read
  int depth;

  [[noreturn]] void bad(const std::string& why) const { fail(TG_ERROR_IO, strformat("onnx: %s: %s: %s", what.c_str(), msg, why.c_str())); }
  bool more() const { return p < end; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) bad("truncated varint");
      uint8_t b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    bad("varint longer than 10 bytes");
  }
  template <class T>
  T fixed() {
    if (size_t(end - p) < sizeof(T)) bad("truncated fixed-width field");
    T v;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  // a length-delimited field's bytes
  Reader sub(const char* m) {
    uint64_t n = varint();
    if (n > uint64_t(end - p)) bad(strformat("a field of %llu bytes runs past the end (%zu left)", (unsigned long long)n, size_t(end - p)));
    Reader r{p, p + n, what, m, depth};
    p += n;
    return r;
  }
  std::string str() {
    Reader r = sub(msg);
    return std::string(reinterpret_cast<const char*>(r.p), r.end - r.p);
  }
  void skip(int wire) {
    switch (wire) {
      case VARINT: varint(); break;
      case I64: fixed<uint64_t>(); break;
      case I32: fixed<uint32_t>(); break;
      case LEN: sub(msg); break;
      default: bad(strformat("wire type %d is not supported (groups are not used by ONNX)", wire));
    }
  }
  // a repeated scalar field: packed (LEN) or one value
  template <class T, class F>
  void repeated(int wire, int scalar_wire, std::vector<T>& out, F one) {
    if (wire == LEN) {
      Reader r = sub(msg);
      while (r.more()) out.push_back(one(r));
    } else if (wire == scalar_wire) {
      out.push_back(one(*this));
    } else {
      bad(strformat("a repeated field has wire type %d", wire));
    }
  }
  void want(int wire, int expect, int field) const {
    if (wire != expect) bad(strformat("field %d has wire type %d, expected %d", field, wire, expect));
  }
  Reader nested(const char* m) {
    if (depth + 1 > kMaxDepth) bad(strformat("nested more than %d deep", kMaxDepth));
    Reader r = sub(m);
    r.depth = depth + 1;
    return r;
  }
};

// Calls f(field, wire) for each field of r, which reads the field's value from r or skips it
template <class F>
void fields(Reader& r, F f) {
  while (r.more()) {
    uint64_t tag = r.varint();
    int field = int(tag >> 3), wire = int(tag & 7);
    if (field == 0) r.bad("field number 0");
    f(field, wire);
  }
}

int64_t i64(Reader& r) { return int64_t(r.varint()); }
int32_t i32(Reader& r) { return int32_t(uint32_t(r.varint())); }  // negative int32s are sign-extended to 10 bytes
float f32(Reader& r) { return r.fixed<float>(); }
double f64(Reader& r) { return r.fixed<double>(); }
uint64_t u64(Reader& r) { return r.varint(); }

std::pair<std::string, std::string> read_entry(Reader r) {
  std::pair<std::string, std::string> e;
  fields(r, [&](int f, int w) {
    if (f == 1 && w == LEN) e.first = r.str();
    else if (f == 2 && w == LEN) e.second = r.str();
    else r.skip(w);
  });
  return e;
}

TensorProto read_tensor(Reader r) {
  TensorProto t;
  fields(r, [&](int f, int w) {
    switch (f) {
      case 1: r.repeated(w, VARINT, t.dims, i64); break;
      case 2: r.want(w, VARINT, f), t.data_type = i32(r); break;
      case 4: r.repeated(w, I32, t.floats, f32); break;
      case 5: r.repeated(w, VARINT, t.int32s, i32); break;
      case 6: r.want(w, LEN, f), t.strings.push_back(r.str()); break;
      case 7: r.repeated(w, VARINT, t.int64s, i64); break;
      case 8: r.want(w, LEN, f), t.name = r.str(); break;
      case 9: {
        r.want(w, LEN, f);
        Reader d = r.sub("TensorProto.raw_data");
        t.raw = d.p, t.raw_len = size_t(d.end - d.p), t.has_raw = true;
        break;
      }
      case 10: r.repeated(w, I64, t.doubles, f64); break;
      case 11: r.repeated(w, VARINT, t.uint64s, u64); break;
      case 13: r.want(w, LEN, f), t.external_data.push_back(read_entry(r.sub("StringStringEntryProto"))); break;
      case 14: r.want(w, VARINT, f), t.external = r.varint() == 1; break;
      case 3: r.bad("segmented tensors are not supported");
      default: r.skip(w);
    }
  });
  return t;
}

void read_type(Reader r, ValueInfo& v, bool outer);
// TypeProto.Tensor / SparseTensor: elem_type and shape
void read_tensor_type(Reader r, ValueInfo& v, bool outer) {
  fields(r, [&](int f, int w) {
    if (f == 1 && w == VARINT) {
      v.elem_type = i32(r);
    } else if (f == 2 && w == LEN && outer) {
      Reader s = r.sub("TensorShapeProto");
      v.has_shape = true;
      fields(s, [&](int f2, int w2) {
        if (f2 != 1 || w2 != LEN) return s.skip(w2);
        Reader d = s.sub("TensorShapeProto.Dimension");
        Dim dim;
        fields(d, [&](int f3, int w3) {
          if (f3 == 1 && w3 == VARINT) dim.value = i64(d);
          else if (f3 == 2 && w3 == LEN) dim.param = d.str();
          else d.skip(w3);
        });
        v.shape.push_back(std::move(dim));
      });
    } else {
      r.skip(w);
    }
  });
}
// a sequence's or optional's element type: only its tensor elem_type is kept
void read_elem(Reader r, ValueInfo& v) {
  fields(r, [&](int f, int w) {
    if (f == 1 && w == LEN) read_type(r.nested("TypeProto"), v, false);
    else r.skip(w);
  });
}
void read_type(Reader r, ValueInfo& v, bool outer) {
  fields(r, [&](int f, int w) {
    if (w != LEN) return r.skip(w);
    if (f == 1) {
      if (outer) v.kind = ValueInfo::Kind::Tensor;
      read_tensor_type(r.sub("TypeProto.Tensor"), v, outer);
    } else if (f == 4 || f == 9) {
      if (outer) v.kind = f == 4 ? ValueInfo::Kind::Sequence : ValueInfo::Kind::Optional;
      else if (f == 4 && v.kind == ValueInfo::Kind::Optional) v.elem_sequence = true;
      read_elem(r.nested(f == 4 ? "TypeProto.Sequence" : "TypeProto.Optional"), v);
    } else if (f == 5 || f == 8) {
      if (outer) v.kind = ValueInfo::Kind::Other;
      r.skip(w);
    } else {
      r.skip(w);
    }
  });
}
ValueInfo read_value_info(Reader r) {
  ValueInfo v;
  fields(r, [&](int f, int w) {
    if (f == 1 && w == LEN) v.name = r.str();
    else if (f == 2 && w == LEN) read_type(r.nested("TypeProto"), v, true);
    else r.skip(w);
  });
  return v;
}

std::shared_ptr<Graph> read_graph(Reader r);

Attr read_attr(Reader r) {
  Attr a;
  fields(r, [&](int f, int w) {
    switch (f) {
      case 1: r.want(w, LEN, f), a.name = r.str(); break;
      case 20: r.want(w, VARINT, f), a.type = AttrType(i32(r)); break;
      case 2: r.want(w, I32, f), a.f = f32(r); break;
      case 3: r.want(w, VARINT, f), a.i = i64(r); break;
      case 4: r.want(w, LEN, f), a.s = r.str(); break;
      case 5: r.want(w, LEN, f), a.t = std::make_shared<TensorProto>(read_tensor(r.sub("TensorProto"))); break;
      case 6: r.want(w, LEN, f), a.g = read_graph(r.nested("GraphProto")); break;
      case 7: r.repeated(w, I32, a.floats, f32); break;
      case 8: r.repeated(w, VARINT, a.ints, i64); break;
      case 9: r.want(w, LEN, f), a.strings.push_back(r.str()); break;
      case 10: r.want(w, LEN, f), a.tensors.push_back(read_tensor(r.sub("TensorProto"))); break;
      case 11: r.want(w, LEN, f), a.graphs.push_back(read_graph(r.nested("GraphProto"))); break;
      case 21: r.bad("attribute references (ref_attr_name) are only for functions, which are not supported");
      default: r.skip(w);
    }
  });
  if (a.type == AttrType::Undefined) {  // IR version < 3 leaves the type out: infer it from the field set
    a.type = a.g ? AttrType::Graph : a.t ? AttrType::Tensor : !a.ints.empty() ? AttrType::Ints : !a.floats.empty() ? AttrType::Floats
             : !a.strings.empty() ? AttrType::Strings : !a.s.empty() ? AttrType::String : AttrType::Undefined;
  }
  return a;
}

Node read_node(Reader r) {
  Node n;
  fields(r, [&](int f, int w) {
    switch (f) {
      case 1: r.want(w, LEN, f), n.inputs.push_back(r.str()); break;
      case 2: r.want(w, LEN, f), n.outputs.push_back(r.str()); break;
      case 3: r.want(w, LEN, f), n.name = r.str(); break;
      case 4: r.want(w, LEN, f), n.op_type = r.str(); break;
      case 7: r.want(w, LEN, f), n.domain = r.str(); break;
      case 5: r.want(w, LEN, f), n.attrs.push_back(read_attr(r.sub("AttributeProto"))); break;
      default: r.skip(w);
    }
  });
  return n;
}

std::shared_ptr<Graph> read_graph(Reader r) {
  auto g = std::make_shared<Graph>();
  fields(r, [&](int f, int w) {
    switch (f) {
      case 1: r.want(w, LEN, f), g->nodes.push_back(read_node(r.sub("NodeProto"))); break;
      case 2: r.want(w, LEN, f), g->name = r.str(); break;
      case 5: r.want(w, LEN, f), g->initializers.push_back(read_tensor(r.sub("TensorProto"))); break;
      case 11: r.want(w, LEN, f), g->inputs.push_back(read_value_info(r.sub("ValueInfoProto"))); break;
      case 12: r.want(w, LEN, f), g->outputs.push_back(read_value_info(r.sub("ValueInfoProto"))); break;
      case 13: r.want(w, LEN, f), g->value_info.push_back(read_value_info(r.sub("ValueInfoProto"))); break;
      case 15: r.bad("sparse initializers are not supported");
      default: r.skip(w);
    }
  });
  return g;
}

}  // namespace

// protobuf's limit: a message is at most 2 GiB (and `data + len` must not overflow)
static void check_len(size_t len, const std::string& what) {
  TG_CHECK(len <= (size_t(1) << 31), TG_ERROR_IO, strformat("onnx: %s: %zu bytes is more than protobuf's 2 GiB", what.c_str(), len));
}

ModelProto parse_model(const uint8_t* data, size_t len, const std::string& what) {
  check_len(len, what);
  Reader r{data, data + len, what, "ModelProto", 0};
  ModelProto m;
  bool graph = false;
  fields(r, [&](int f, int w) {
    switch (f) {
      case 1: r.want(w, VARINT, f), m.ir_version = i64(r); break;
      case 2: r.want(w, LEN, f), m.producer_name = r.str(); break;
      case 3: r.want(w, LEN, f), m.producer_version = r.str(); break;
      case 4: r.want(w, LEN, f), m.domain = r.str(); break;
      case 5: r.want(w, VARINT, f), m.model_version = i64(r); break;
      case 6: r.want(w, LEN, f), m.doc = r.str(); break;
      case 7: r.want(w, LEN, f), m.graph = *read_graph(r.nested("GraphProto")), graph = true; break;
      case 8: {
        r.want(w, LEN, f);
        Reader o = r.sub("OperatorSetIdProto");
        std::pair<std::string, int64_t> op{"", 0};
        fields(o, [&](int f2, int w2) {
          if (f2 == 1 && w2 == LEN) op.first = o.str();
          else if (f2 == 2 && w2 == VARINT) op.second = i64(o);
          else o.skip(w2);
        });
        m.opsets.push_back(op);
        break;
      }
      case 14: r.want(w, LEN, f), m.metadata.push_back(read_entry(r.sub("StringStringEntryProto"))); break;
      default: r.skip(w);
    }
  });
  if (!graph) r.bad("no graph (is this an ONNX model file?)");
  return m;
}

TensorProto parse_tensor(const uint8_t* data, size_t len, const std::string& what) {
  check_len(len, what);
  return read_tensor(Reader{data, data + len, what, "TensorProto", 0});
}

namespace {
// SequenceProto (tensor_values, field 3) and OptionalProto (tensor_value 3, sequence_value 5)
Value read_value(Reader r, ValueInfo::Kind kind, const std::string& device, int depth) {
  if (kind == ValueInfo::Kind::Tensor) return tensor_from_proto(read_tensor(r), device, "");
  std::vector<Tensor> ts;
  int32_t elem = UNDEFINED;
  Value opt;
  fields(r, [&](int f, int w) {
    if (f == 2 && w == VARINT) {
      elem = i32(r);
    } else if (f == 3 && w == LEN) {
      Tensor t = tensor_from_proto(read_tensor(r.sub("TensorProto")), device, "");
      if (kind == ValueInfo::Kind::Optional) opt = t;
      else ts.push_back(t);
    } else if (f == 5 && w == LEN && kind == ValueInfo::Kind::Optional && depth < 2) {
      opt = read_value(r.nested("SequenceProto"), ValueInfo::Kind::Sequence, device, depth + 1);
    } else if (f == 3 || f == 4 || f == 5 || f == 6 || f == 7) {
      r.bad("only tensors are supported as elements");
    } else {
      r.skip(w);
    }
  });
  if (kind == ValueInfo::Kind::Optional) return opt;
  return Value::sequence(std::move(ts));
}
}  // namespace

Value parse_value_file(const uint8_t* data, size_t len, const std::string& what, ValueInfo::Kind kind, const std::string& device) {
  check_len(len, what);
  const char* msg = kind == ValueInfo::Kind::Sequence ? "SequenceProto" : kind == ValueInfo::Kind::Optional ? "OptionalProto" : "TensorProto";
  return read_value(Reader{data, data + len, what, msg, 0}, kind, device, 0);
}

}  // namespace tg::onnx
