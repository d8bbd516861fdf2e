// GGUF (llama.cpp's model files): the header parsed with every length checked against the bytes left, and ggml's
// quantized blocks dequantized by Tensor ops over the raw bytes (tinygrad's ggml_data_to_tensor), so they run as
// generated kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "nn/state.h"
#include "runtime/device.h"
#include "schedule/graph.h"

namespace tg::nn {
namespace {

// ggml tensor types: elements per block, bytes per block; native types are blocks of one element of `native`
struct GGMLType {
  uint32_t id;
  const char* name;
  int64_t blk, bytes;
  DType native;  // void for quantized types
};
const GGMLType kTypes[] = {
    {0, "F32", 1, 4, dtypes::float32},    {1, "F16", 1, 2, dtypes::float16},    {2, "Q4_0", 32, 18, dtypes::void_},
    {3, "Q4_1", 32, 20, dtypes::void_},   {6, "Q5_0", 32, 22, dtypes::void_},   {7, "Q5_1", 32, 24, dtypes::void_},
    {8, "Q8_0", 32, 34, dtypes::void_},   {12, "Q4_K", 256, 144, dtypes::void_}, {13, "Q5_K", 256, 176, dtypes::void_},
    {14, "Q6_K", 256, 210, dtypes::void_}, {24, "I8", 1, 1, dtypes::int8},      {25, "I16", 1, 2, dtypes::int16},
    {26, "I32", 1, 4, dtypes::int32},     {27, "I64", 1, 8, dtypes::int64},     {28, "F64", 1, 8, dtypes::float64},
    {30, "BF16", 1, 2, dtypes::bfloat16},
};
const GGMLType* ggml_type(uint32_t id) {
  for (auto& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

constexpr int kMaxDims = 4;       // GGML_MAX_DIMS
constexpr int kMaxNesting = 8;    // arrays of arrays of ...
enum : uint32_t { U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64, NTYPES };
constexpr size_t kMinSize[NTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8};  // the fewest bytes a value of each type takes

std::string render_float(double v, int digits) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  std::string s = strformat("%.*g", digits, v);
  return s.find_first_of(".eEn") == std::string::npos ? s + ".0" : s;
}

struct Reader {
  const Bytes& b;
  size_t pos = 0;
  [[noreturn]] void bad(const std::string& what) const { fail(TG_ERROR_IO, strformat("%s: GGUF: %s (at byte %zu)", b.name.c_str(), what.c_str(), pos)); }
  size_t left() const { return b.n - pos; }
  const uint8_t* take(uint64_t n, const char* what) {
    if (n > left()) bad(strformat("%s of %llu bytes runs past the end of the file (%zu bytes left)", what, (unsigned long long)n, left()));
    const uint8_t* q = b.at(pos, n);
    pos += size_t(n);
    return q;
  }
  template <class T>
  T get(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  // a UTF-8 string; `name`: a key or tensor name, which may not hold NUL (C callers see names as C strings)
  std::string str(const char* what, bool name = false) {
    uint64_t n = get<uint64_t>(what);
    const uint8_t* q = take(n, what);
    if (!valid_utf8(q, size_t(n))) bad(strformat("%s%s is not UTF-8", what, key.empty() ? "" : (" of key '" + key + "'").c_str()));
    std::string s(reinterpret_cast<const char*>(q), size_t(n));
    if (name && s.find('\0') != std::string::npos) bad(strformat("%s '%s' holds a NUL byte", what, s.c_str()));
    return s;
  }
  std::string key;  // the key whose value is being read, for errors
  GGUFValue* typed = nullptr;  // where a top-level value's elements go
  // one metadata value of `type` as JSON; `text` gets strings unquoted
  void value(uint32_t type, int depth, std::string& json, std::string* text) {
    auto num = [&](std::string s, double v) {
      json += s;
      if (typed && depth <= 1) typed->nums.push_back(v);
    };
    auto get_num = [&]<class T>(T v) { return num(std::to_string(v), double(v)); };
    switch (type) {
      case U8: return get_num(get<uint8_t>("a uint8"));
      case I8: return get_num(get<int8_t>("an int8"));
      case U16: return get_num(get<uint16_t>("a uint16"));
      case I16: return get_num(get<int16_t>("an int16"));
      case U32: return get_num(get<uint32_t>("a uint32"));
      case I32: return get_num(get<int32_t>("an int32"));
      case U64: return get_num(get<uint64_t>("a uint64"));
      case I64: return get_num(get<int64_t>("an int64"));
      case F32: {
        float v = get<float>("a float32");
        return num(render_float(v, 9), v);
      }
      case F64: {
        double v = get<double>("a float64");
        return num(render_float(v, 17), v);
      }
      case BOOL: {
        bool v = get<uint8_t>("a bool");
        return num(v ? "true" : "false", v);
      }
      case STR: {
        std::string s = str("a string value");
        json += json_quote(s, "a string value");  // JSON escapes a NUL: an array's strings come back whole as JSON
        // a string value is also handed out as a C string with no length (tg_state_metadata_value): a NUL would cut it
        // short without a word, so it is refused
        if (text && s.find('\0') != std::string::npos)
          bad(strformat("the string value of key '%s' holds a NUL byte at %zu (metadata values are C strings)", key.c_str(), s.find('\0')));
        if (typed && depth <= 1) typed->strs.push_back(s);
        if (text) *text = std::move(s);
        return;
      }
      case ARR: {
        if (depth >= kMaxNesting) bad(strformat("arrays nested deeper than %d", kMaxNesting));
        uint32_t et = get<uint32_t>("an array's type");
        if (et >= NTYPES) bad(strformat("unknown array element type %u", et));
        uint64_t n = get<uint64_t>("an array's length");
        // every element takes at least kMinSize bytes: a count the file can't hold fails before any work
        if (n > left() / kMinSize[et]) bad(strformat("an array of %llu elements needs more than the %zu bytes left", (unsigned long long)n, left()));
        if (typed && depth == 0) typed->elem_type = et;
        json += '[';
        for (uint64_t i = 0; i < n; i++) {
          if (i) json += ',';
          value(et, depth + 1, json, nullptr);
        }
        json += ']';
        return;
      }
      default: bad(strformat("unknown metadata value type %u", type));
    }
  }
};

uint64_t checked_mul(uint64_t a, uint64_t b, const Reader& r, const std::string& what) {
  uint64_t out;
  if (__builtin_mul_overflow(a, b, &out) || out > uint64_t(INT64_MAX)) r.bad(what + " overflows int64");
  return out;
}

// ---- dequantization: Tensor ops over (blocks, bytes per block) uint8 ----
Tensor cols(const Tensor& t, int64_t a, int64_t b) { return t.shrink({{0, t.shape()[0]}, {a, b}}); }
Tensor k(const Tensor& t, double v) { return t.scalar_like(v); }
// the little-endian float16 at byte `a` of every block, as float32 (blocks, 1)
Tensor f16_at(const Tensor& blocks, int64_t a) {
  Tensor lo = cols(blocks, a, a + 1).cast(dtypes::uint16), hi = cols(blocks, a + 1, a + 2).cast(dtypes::uint16);
  return lo.bitwise_or(hi.lshift(8)).bitcast(dtypes::float16).cast(dtypes::float32);
}
// a bool tensor of `shape` (one axis of 2, the others 1) true at index 1 of that axis: an index-valued condition that
// picks between two values computed from the same loads
Tensor second_of_two(const Shape& shape, const std::string& device) {
  return Tensor::arange(0, 2, 1, dtypes::int32, device).reshape(shape).eq(Tensor::full(shape, 1, dtypes::int32, device));
}
// tinygrad's q_to_uint8, fields kept apart: each byte's 8/b fields of b bits, (..., n) -> (..., 8/b, n); flattened,
// field i of every byte comes before field i+1 (ggml's order: low nibbles of a run of bytes, then their high nibbles).
// The bytes are expanded over the field axis and shifted by b * field, an index-valued count: each field loads its
// bytes as one contiguous run, where a stack of shifted copies would select between two masked loads per element.
// Nibbles pick, by an index-valued condition, between the byte shifted by 4 and the byte masked: one load again, and
// two uniform shifts, where a vector of bytes shifted lane by lane has no x86 instruction (LLVM widens to 16 bits and
// packs back: a Q4_0 decode kernel ran 1.35x slower)
Tensor fields(const Tensor& t, int b) {
  int64_t n = 8 / b;
  std::vector<int64_t> shape = t.shape(), ones(t.ndim() + 1, 1);
  shape.insert(shape.end() - 1, n);
  ones[t.ndim() - 1] = n;
  if (b == 4) {
    Tensor hi = second_of_two(ones, t.device());
    return hi.where(t.rshift(k(t, 4)).unsqueeze(-2), t.bitwise_and(k(t, 15)).unsqueeze(-2));
  }
  Tensor shift = Tensor::arange(0, 8, b, t.dtype(), t.device()).reshape(ones);
  return t.unsqueeze(-2).expand(shape).rshift(shift).bitwise_and(k(t, (1 << b) - 1));
}
Tensor unpack(const Tensor& t, int b) { return fields(t, b).flatten(t.ndim() - 1); }
// Q4_K's and Q5_K's 8 6-bit scales and mins packed in bytes 4-16 of each block, (blocks, 8) uint8 each
std::pair<Tensor, Tensor> k_scales_mins(const Tensor& bl) {
  int64_t nb = bl.shape()[0];
  Tensor s = cols(bl, 4, 16), s03 = cols(s, 0, 4), s47 = cols(s, 4, 8), s8b = cols(s, 8, 12);
  // sub-blocks 0-3 and 4-7 as two rows of one (blocks, 2, 4) tensor, the row picked by an index-valued condition:
  // every byte is loaded unconditionally (a cat would gate each half's loads by its padding)
  Tensor upper = second_of_two({1, 2, 1}, bl.device()).expand({nb, 2, 4});
  auto halves = [&](const Tensor& lo, const Tensor& hi) { return upper.where(hi.unsqueeze(1).expand({nb, 2, 4}), lo.unsqueeze(1).expand({nb, 2, 4})).reshape({nb, 8}); };
  return {halves(s03.bitwise_and(k(s, 63)), s8b.bitwise_and(k(s, 15)).bitwise_or(s03.rshift(6).lshift(4))),
          halves(s47.bitwise_and(k(s, 63)), s8b.rshift(4).bitwise_or(s47.rshift(6).lshift(4)))};
}
// Weights in the decode GEMV's order (kGGMLDecode | the file's type): the same values and bytes, a tensor's codes first
// and then the rest of its blocks, so a run of codes is whole aligned cache lines (in the file's blocks of 18, 34 or 144
// bytes most 64-byte loads of codes straddle two lines: the GEMVs ran 1.5-1.9x slower). Q4_0's and Q8_0's codes keep
// the file's order within a block, their float16 d follows. Q4_K's 128 bytes of codes: byte 64h + 32r + 4j + y holds
// codes e and e + 4 of sub-block j, e = 16r + 8h + y: a 64-byte run is 16 lanes of 4 bytes, lane 8r + j, both of whose
// nibbles belong to sub-block j (one int32 sum for both before the scale; the file splits each byte between two
// sub-blocks). Its other 16 bytes: d and dmin, then a sub-block's 6-bit scale with its min's low 2 bits above it (bytes
// 4-12), then the mins' high 4 bits (sub-block i in byte 12 + i % 4, the high nibble for i >= 4): a mask, a shift and
// an or where the file's packing takes a dozen instructions to unpack.
int64_t decode_code_bytes(uint32_t type) {
  uint32_t file = type & ~kGGMLDecode;
  return file == 12 ? 128 : file == 2 ? 16 : 32;
}
// (blocks, bytes) decode-order blocks -> each block's codes (blocks, code bytes) or its other bytes, a view
Tensor kd_part(const Tensor& bl, uint32_t type, bool codes) {
  int64_t nb = bl.shape()[0], B = bl.shape()[1], c = decode_code_bytes(type), w = codes ? c : B - c, at = codes ? 0 : nb * c;
  return bl.reshape({nb * B}).shrink({{at, at + nb * w}}).reshape({nb, w});
}
Tensor kd_head(const Tensor& bl, uint32_t type) { return kd_part(bl, type, false); }
std::pair<Tensor, Tensor> kd_scales_mins(const Tensor& bl) {
  int64_t nb = bl.shape()[0];
  Tensor h = kd_head(bl, kGGMLQ4KDecode), s = cols(h, 4, 12), mh = fields(cols(h, 12, 16), 4).reshape({nb, 8});
  return {s.bitwise_and(k(s, 63)), s.rshift(6).bitwise_or(mh.lshift(2))};
}
// the codes of Q4_K decode-order blocks, (blocks, j, r, h, nibble, y): flattened, element 32j + 16r + 8h + 4 nibble + y
Tensor kd_codes(const Tensor& bl) {
  int64_t nb = bl.shape()[0];
  return fields(kd_part(bl, kGGMLQ4KDecode, true).reshape({nb, 2, 2, 8, 4}), 4).permute({0, 3, 2, 1, 4, 5});  // from (h, r, j, nibble, y)
}
// the code bytes and the float16 d of ggml's one-scale types (Q4_0, Q8_0: value = d * code), in the file's order or
// the decode order
Tensor one_scale_codes(const Tensor& bl, uint32_t type) { return type & kGGMLDecode ? kd_part(bl, type, true) : cols(bl, 2, bl.shape()[1]); }
Tensor one_scale_d(const Tensor& bl, uint32_t type) { return f16_at(type & kGGMLDecode ? kd_head(bl, type) : bl, 0); }
// (blocks, ...) float32 in the block's own structure (Q4_0: 2 nibble fields x 16 bytes; Q4_K: 4 runs x 2 nibble
// fields x 32 bytes; Q6_K: 2 halves x 4 runs x 2 scale groups x 16): flattened, the elements in order. A kernel that
// sums over these axes addresses bytes and scales without dividing an element index
Tensor dequantize(const Tensor& bl, uint32_t type) {
  int64_t nb = bl.shape()[0];
  Tensor d = f16_at(bl, 0);
  switch (type) {
    case 2:
    case kGGMLQ4_0Decode: {  // Q4_0
      Tensor q = fields(one_scale_codes(bl, type), 4).cast(dtypes::float32);
      return q.sub(k(q, 8)).mul(one_scale_d(bl, type).unsqueeze(-1));
    }
    case 3: return fields(cols(bl, 4, 20), 4).cast(dtypes::float32).mul(d.unsqueeze(-1)).add(f16_at(bl, 2).unsqueeze(-1));  // Q4_1
    case 6:
    case 7: {  // Q5_0, Q5_1: a fifth bit per element from the 32-bit qh, bit j for element j
      int64_t qh_off = type == 6 ? 2 : 4;
      Tensor qh = unpack(cols(bl, qh_off, qh_off + 4), 1).reshape({nb, 8, 4}).transpose(1, 2).flatten(1);
      Tensor q = unpack(cols(bl, qh_off + 4, qh_off + 20), 4).bitwise_or(qh.lshift(4)).cast(dtypes::float32);
      return type == 6 ? q.sub(k(q, 16)).mul(d) : q.mul(d).add(f16_at(bl, 2));
    }
    case 8:
    case kGGMLQ8_0Decode: return one_scale_codes(bl, type).bitcast(dtypes::int8).cast(dtypes::float32).mul(one_scale_d(bl, type));  // Q8_0
    case 12:
    case 13: {  // Q4_K, Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes; sub-block 2r+f is field f
      // of the r-th run of 32 bytes
      Tensor dd = d.reshape({nb, 1, 1, 1}), dmin = f16_at(bl, 2).reshape({nb, 1, 1, 1});
      auto [sc, mn] = k_scales_mins(bl);
      int64_t qs_off = type == 13 ? 48 : 16;
      Tensor q = fields(cols(bl, qs_off, qs_off + 128).reshape({nb, 4, 32}), 4);
      if (type == 13) q = q.bitwise_or(fields(cols(bl, 16, 48), 1).reshape({nb, 4, 2, 32}).lshift(4));
      auto sub = [&](const Tensor& t) { return t.reshape({nb, 4, 2, 1}).cast(dtypes::float32); };
      return dd.mul(sub(sc)).mul(q.cast(dtypes::float32)).sub(dmin.mul(sub(mn)));
    }
    case kGGMLQ4KDecode: {  // Q4_K in the decode order: the same values, (blocks, j, r, h, nibble, y)
      auto [sc, mn] = kd_scales_mins(bl);
      auto sub = [&](const Tensor& t) { return t.reshape({nb, 8, 1, 1, 1, 1}).cast(dtypes::float32); };
      Tensor h = kd_head(bl, type), dd = f16_at(h, 0).reshape({nb, 1, 1, 1, 1, 1}), dmin = f16_at(h, 2).reshape({nb, 1, 1, 1, 1, 1});
      return dd.mul(sub(sc)).mul(kd_codes(bl).cast(dtypes::float32)).sub(dmin.mul(sub(mn)));
    }
    case 14: {  // Q6_K: 4 low bits in ql, 2 high bits in qh, 16 int8 scales, d last. In each half of 128, element 32l+i
      // takes field l/2 of ql byte 32(l%2)+i, field l of qh byte i, and scale 8*half + 2l + i/16
      Tensor xl = fields(cols(bl, 0, 128).reshape({nb, 2, 64}), 4).reshape({nb, 2, 4, 32});
      Tensor xh = fields(cols(bl, 128, 192).reshape({nb, 2, 32}), 2).lshift(4);
      Tensor q = xl.bitwise_or(xh).bitcast(dtypes::int8).cast(dtypes::float32).reshape({nb, 2, 4, 2, 16});
      Tensor scales = cols(bl, 192, 208).bitcast(dtypes::int8).cast(dtypes::float32).reshape({nb, 2, 4, 2, 1});
      return f16_at(bl, 208).reshape({nb, 1, 1, 1, 1}).mul(scales).mul(q.sub(k(q, 32)));  // (d * scale) * q, in ggml's order
    }
  }
  fail(TG_ERROR_INTERNAL, strformat("dequantize: no rule for ggml type %u", type));
}

}  // namespace

GGUFFile gguf_parse(const Bytes& b) {
  Reader r{b};
  const uint8_t* magic = r.take(4, "the magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) r.bad("not a GGUF file (the magic is not \"GGUF\")");
  uint32_t version = r.get<uint32_t>("the version");
  if (version != 2 && version != 3) r.bad(strformat("version %u is not supported (2 and 3 are)", version));
  uint64_t n_tensors = r.get<uint64_t>("the tensor count"), n_kv = r.get<uint64_t>("the key/value count");
  // a key/value takes at least 13 bytes, a tensor info at least 24: counts the file can't hold fail here
  if (n_kv > r.left() / 13) r.bad(strformat("%llu key/values can't fit in the %zu bytes left", (unsigned long long)n_kv, r.left()));
  if (n_tensors > r.left() / 24) r.bad(strformat("%llu tensors can't fit in the %zu bytes left", (unsigned long long)n_tensors, r.left()));
  GGUFFile f;
  std::unordered_set<std::string> seen;
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < n_kv; i++) {
    MetaEntry e;
    r.key.clear();
    e.key = r.str("a key", true);
    if (!seen.insert(e.key).second) r.bad("duplicate key '" + e.key + "'");
    r.key = e.key;
    uint32_t type = r.get<uint32_t>("a value type");
    bool is_str = type == STR;
    GGUFValue& tv = f.values[e.key];
    tv.type = tv.elem_type = type;
    r.typed = &tv;
    r.value(type, 0, e.json, &e.value);
    if (!is_str) e.value = e.json;
    if (e.key == "general.alignment") {
      if (type != U32) r.bad("general.alignment is not a uint32");
      alignment = std::stoull(e.value);
      if (alignment == 0 || (alignment & (alignment - 1))) r.bad("general.alignment " + e.value + " is not a power of two");
    }
    f.kv.push_back(std::move(e));
  }
  r.key.clear();
  seen.clear();
  for (uint64_t i = 0; i < n_tensors; i++) {
    GGUFTensorInfo ti;
    ti.name = r.str("a tensor name", true);
    check_tensor_name(ti.name, b.name, "GGUF");
    if (!seen.insert(ti.name).second) r.bad("duplicate tensor '" + ti.name + "'");
    uint32_t nd = r.get<uint32_t>("a dim count");
    if (nd > kMaxDims) r.bad(strformat("tensor '%s' has %u dims (at most %d)", ti.name.c_str(), nd, kMaxDims));
    std::vector<uint64_t> dims;
    for (uint32_t j = 0; j < nd; j++) dims.push_back(r.get<uint64_t>("a dim"));
    ti.type = r.get<uint32_t>("a tensor type");
    const GGMLType* gt = ggml_type(ti.type);
    if (!gt) r.bad(strformat("tensor '%s' has an unknown or unsupported type %u", ti.name.c_str(), ti.type));
    // the shape as the tensor will have it: native types keep their dtype, quantized ones become float32
    uint64_t isz = uint64_t(gt->native != dtypes::void_ ? gt->native.itemsize() : 4);
    uint64_t numel = checked_nbytes(dims, isz, b.name, "GGUF", ti.name) / isz;
    ti.dims.assign(dims.begin(), dims.end());
    if (nd && ti.dims[0] % gt->blk) r.bad(strformat("tensor '%s': its first dim %lld is not a multiple of %s's block of %lld", ti.name.c_str(),
                                                   (long long)ti.dims[0], gt->name, (long long)gt->blk));
    if (!nd && gt->blk > 1) r.bad(strformat("tensor '%s': a scalar can't be %s", ti.name.c_str(), gt->name));
    ti.nbytes = checked_mul(numel / uint64_t(gt->blk), uint64_t(gt->bytes), r, "tensor '" + ti.name + "' byte size");
    ti.offset = r.get<uint64_t>("a tensor offset");
    if (ti.offset % alignment) r.bad(strformat("tensor '%s' offset %llu is not a multiple of the alignment %llu", ti.name.c_str(),
                                               (unsigned long long)ti.offset, (unsigned long long)alignment));
    f.tensors.push_back(std::move(ti));
  }
  f.data_start = (uint64_t(r.pos) + alignment - 1) / alignment * alignment;  // pos < 2^63 and alignment <= 2^31: no wrap
  uint64_t data_n = f.data_start <= b.n ? b.n - f.data_start : 0;
  std::vector<const GGUFTensorInfo*> by_offset;
  for (auto& ti : f.tensors) {
    if (ti.offset > data_n || ti.nbytes > data_n - ti.offset)
      r.bad(strformat("tensor '%s' data [%llu, %llu) lies past the end of the %llu bytes of data", ti.name.c_str(), (unsigned long long)ti.offset,
                      (unsigned long long)(ti.offset + ti.nbytes), (unsigned long long)data_n));
    by_offset.push_back(&ti);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* c) { return a->offset < c->offset; });
  for (size_t i = 1; i < by_offset.size(); i++)
    if (by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->nbytes)
      r.bad(strformat("tensors '%s' and '%s' overlap", by_offset[i - 1]->name.c_str(), by_offset[i]->name.c_str()));
  return f;
}

Tensor gguf_tensor(const Bytes& b, const GGUFFile& f, const GGUFTensorInfo& ti, const std::string& device) {
  const GGMLType* gt = ggml_type(ti.type);
  Shape shape(ti.dims.rbegin(), ti.dims.rend());
  uint64_t at = f.data_start + ti.offset;
  if (gt->blk == 1) return tensor_from_bytes(b, at, ti.nbytes, gt->native, shape, device);
  int64_t nb = int64_t(ti.nbytes) / gt->bytes;
  if (nb == 0) return Tensor::empty(shape, dtypes::float32, device);
  return dequantize(tensor_from_bytes(b, at, ti.nbytes, dtypes::uint8, {nb, gt->bytes}, device), ti.type).reshape(shape);
}

Tensor gguf_raw(const Bytes& b, const GGUFFile& f, const GGUFTensorInfo& ti, const std::string& device) {
  const GGMLType* gt = ggml_type(ti.type);
  uint64_t at = f.data_start + ti.offset;
  if (gt->blk == 1) return tensor_from_bytes(b, at, ti.nbytes, gt->native, Shape(ti.dims.rbegin(), ti.dims.rend()), device);
  return tensor_from_bytes(b, at, ti.nbytes, dtypes::uint8, {int64_t(ti.nbytes) / gt->bytes, gt->bytes}, device);
}
Tensor gguf_fields(const Tensor& t, int bits) { return fields(t, bits); }
Tensor gguf_decode_code_bytes(const Tensor& blocks, uint32_t type) { return kd_part(blocks, type, true); }
bool gguf_has_decode_order(uint32_t type) { return type == 2 || type == 8 || type == 12; }
bool gguf_has_int8_form(uint32_t type) { return type == 14 || gguf_has_decode_order(type & ~kGGMLDecode); }
namespace {
// The two parts of a decode order's blocks, (blocks, code bytes) and (blocks, other bytes), lazy expressions of the file's
std::pair<Tensor, Tensor> decode_parts(const Tensor& bl, uint32_t type) {
  int64_t nb = bl.shape()[0], B = bl.shape()[1];
  if (type != 12) return {cols(bl, 2, B), cols(bl, 0, 2)};  // Q4_0, Q8_0: the codes, then each block's d
  auto [sc, mn] = k_scales_mins(bl);
  Tensor s = sc.bitwise_or(mn.bitwise_and(k(mn, 3)).lshift(6)), mh = mn.rshift(2);
  Tensor m = cols(mh, 0, 4).bitwise_or(cols(mh, 4, 8).lshift(4));
  // sub-block j = 2c + f is nibble f of the file's run c of 32 bytes; its codes e and e + 4 (e = 16r + 8h + y) are
  // bytes a = 32c + e and b = a + 4 of the run: the new byte is a's nibble f below b's, built from the two bytes with
  // masks and shifts, the nibble picked by an index-valued condition (both ways cost a few byte operations; built from
  // the unpacked codes, gathered one at a time, the 37 MB classifier took 100 ms instead of 68)
  Tensor ab = cols(bl, 16, 144).reshape({nb, 4, 1, 2, 2, 2, 4});  // (c, f, r, h, a or b, y)
  auto half = [&](int64_t i) { return ab.shrink({{0, nb}, {0, 4}, {0, 1}, {0, 2}, {0, 2}, {i, i + 1}, {0, 4}}).reshape({nb, 4, 1, 2, 2, 4}); };
  Tensor a = half(0), b = half(1);
  Tensor lo = a.bitwise_and(k(a, 15)).bitwise_or(b.lshift(4)), hi = a.rshift(4).bitwise_or(b.bitwise_and(k(b, 0xF0)));
  // (c, f, r, h, y) -> (h, r, j = 2c + f, y)
  Tensor qs = second_of_two({1, 1, 2, 1, 1, 1}, bl.device()).where(hi, lo).permute({0, 4, 3, 1, 2, 5}).reshape({nb, 128});
  return {qs, Tensor::cat({cols(bl, 0, 4), s, m}, 1)};
}
}  // namespace

Tensor gguf_repack_decode(const Tensor& bl, uint32_t type) {
  TG_CHECK(gguf_has_decode_order(type), TG_ERROR_INTERNAL, strformat("gguf_repack_decode: ggml type %u has no decode order", type));
  int64_t nb = bl.shape()[0], B = bl.shape()[1], c = decode_code_bytes(type);
  if (nb == 0) return bl;
  auto [codes, rest] = decode_parts(bl, type);
  // each part written straight into its place in one buffer, a kernel each over the blocks' own shape: a cat of the
  // two was a gated copy of every byte (1.5 GB/s), and a part flattened first divided each index by the block's size
  auto base = std::make_shared<Buffer>(bl.device(), dtypes::uint8, nb * B);
  auto part = [&](int64_t at, int64_t w) {
    return Tensor(buffer_uop(std::make_shared<Buffer>(base, size_t(at), dtypes::uint8, nb * w)), bl.device()).reshape({nb, w});
  };
  Tensor dst_codes = part(0, c), dst_rest = part(nb * c, B - c);
  dst_codes.assign(codes);
  dst_rest.assign(rest);
  Tensor::realize_all({&dst_codes, &dst_rest});
  return Tensor(buffer_uop(base), bl.device()).reshape({nb, B});
}
std::optional<GGUFIntForm> gguf_int8_form(const Tensor& bl, uint32_t type, const Tensor* halves) {
  if (!gguf_has_int8_form(type)) return std::nullopt;
  int64_t nb = bl.shape()[0];
  // the float16 at byte a of a block (of the bytes after the codes, in a decode order), through the 16-bit view where
  // there is one (else each is two byte loads put together)
  auto scale_at = [&](int64_t a) {
    if (!halves) return f16_at(type & kGGMLDecode ? kd_head(bl, type) : bl, a);
    Tensor h16 = *halves;
    if (type & kGGMLDecode) {
      int64_t B2 = bl.shape()[1] / 2, c2 = decode_code_bytes(type) / 2;
      h16 = halves->reshape({nb * B2}).shrink({{nb * c2, nb * B2}}).reshape({nb, B2 - c2});
    }
    return cols(h16, a / 2, a / 2 + 1).bitcast(dtypes::float16).cast(dtypes::float32);
  };
  switch (type) {
    case 2:  // Q4_0: d * (q - 8), q the nibbles
    case kGGMLQ4_0Decode:
    case 8:  // Q8_0: d * q, q int8: as uint8 q + 128, offset 128
    case kGGMLQ8_0Decode: {
      bool q4 = (type & ~kGGMLDecode) == 2;
      Tensor bytes = one_scale_codes(bl, type);
      Tensor codes = (q4 ? fields(bytes, 4) : bytes.bitwise_xor(k(bytes, 128))).reshape({nb, 1, 32});
      Tensor d = scale_at(0);
      int64_t offset = q4 ? 8 : 128;
      return GGUFIntForm{codes, d, d.mul(k(d, double(offset))), offset};
    }
    case 12: {  // Q4_K: d * sc * q - dmin * mn per sub-block
      auto [sc, mn] = k_scales_mins(bl);
      Tensor codes = fields(cols(bl, 16, 144).reshape({nb, 4, 32}), 4).reshape({nb, 8, 32});
      return GGUFIntForm{codes, scale_at(0).mul(sc.cast(dtypes::float32)), scale_at(2).mul(mn.cast(dtypes::float32))};
    }
    case kGGMLQ4KDecode: {  // the same in the decode order: d and dmin from the 16 bytes after the codes
      auto [sc, mn] = kd_scales_mins(bl);
      return GGUFIntForm{kd_codes(bl).reshape({nb, 8, 32}), scale_at(0).mul(sc.cast(dtypes::float32)), scale_at(2).mul(mn.cast(dtypes::float32))};
    }
    case 14: {  // Q6_K: d * sc * (q - 32), q 6 bits (4 in ql, 2 in qh), an int8 scale per 16 elements
      Tensor xl = fields(cols(bl, 0, 128).reshape({nb, 2, 64}), 4).reshape({nb, 2, 4, 32});
      Tensor xh = fields(cols(bl, 128, 192).reshape({nb, 2, 32}), 2).lshift(k(bl, 4));
      Tensor scale = scale_at(208).mul(cols(bl, 192, 208).bitcast(dtypes::int8).cast(dtypes::float32));
      return GGUFIntForm{xl.bitwise_or(xh).reshape({nb, 8, 32}), scale, scale.mul(k(scale, 32)), 32, 2};
    }
  }
  return std::nullopt;
}
Tensor gguf_dequantize(const Tensor& blocks, uint32_t type) { return dequantize(blocks, type).flatten(1); }
Tensor gguf_dequantize_blocked(const Tensor& blocks, uint32_t type) { return dequantize(blocks, type); }
bool gguf_block(uint32_t type, int64_t* elems, int64_t* bytes, const char** name) {
  const GGMLType* gt = ggml_type(type);
  if (!gt) return false;
  *elems = gt->blk, *bytes = gt->bytes, *name = gt->name;
  return true;
}

Loaded gguf_load(const Bytes& b, const std::string& device) {
  GGUFFile f = gguf_parse(b);
  Loaded out{{}, std::move(f.kv)};
  for (auto& ti : f.tensors) out.tensors.emplace_back(ti.name, gguf_tensor(b, f, ti, device));
  return out;
}

}  // namespace tg::nn
