// nn.state: safetensors load/save and GGUF load. Files come from the internet: every reader checks each length against
// the bytes left before it allocates or reads, and any malformed input is a tg::Error (TG_ERROR_IO naming the file and
// the problem), never a crash.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "nn/nn.h"

namespace tg::nn {

// A metadata entry: safetensors' __metadata__ or a GGUF key/value. `value` is the text (a string as is, anything else
// as JSON); `json` is the value as JSON text (strings quoted, NaN/Infinity as Python's json writes them).
struct MetaEntry {
  std::string key, value, json;
};
using Metadata = std::vector<MetaEntry>;

struct Loaded {
  StateDict tensors;
  Metadata metadata;
};

// A regular file opened for reading (pread), with the prefix a header parser has read so far.
struct FileReader;

// The bytes a reader parses, with the name errors use: in memory at `p`, or (p NULL) the file `file`, read by copies
// into the reader's own buffers. A user's file is never mapped: a mapping's pages change or vanish (SIGBUS) when another
// process rewrites or truncates the file, and neither a SIGBUS handler (process-global state a library must not own)
// nor a file lock (advisory) would make that safe (see docs/state.md).
struct Bytes {
  const uint8_t* p;
  size_t n;
  std::string name;
  std::shared_ptr<FileReader> file = nullptr;
  // bytes [off, off + len), which the caller checked lie inside the n bytes: a pointer valid until the next at()
  const uint8_t* at(uint64_t off, uint64_t len) const;
  // bytes [off, off + len) copied to dst (a file that shrank since it was opened is TG_ERROR_IO)
  void read(uint64_t off, void* dst, size_t len) const;
};

// tg::open_regular (helpers.h) for a user's path: TG_ERROR_IO "<what>: '<path>': <why>" when it refuses.
int open_regular(const std::string& path, const char* what);
// The file at `path` as Bytes read from it (open_regular's checks)
Bytes open_file(const std::string& path, const char* what);

// A tensor of `dtype` and `shape` holding a copy of bytes [off, off + nbytes) of `b`: read straight into the tensor's
// buffer on a host-memory device, else through one host copy. BOOL bytes other than 0 are stored as 1.
Tensor tensor_from_bytes(const Bytes& b, uint64_t off, size_t nbytes, DType dtype, const Shape& shape, const std::string& device);

// The byte size of tensor `tensor` of a file's `dims` (each read as uint64) of `itemsize`-byte elements, every reader's
// shape check: each dim below 2^63 and the product of the nonzero dims times itemsize within int64 (a 0 dim doesn't
// excuse huge others: check_shape's rule for every tensor); TG_ERROR_IO "<file>: <format>: tensor '<tensor>': ..."
// otherwise. 0 when a dim is 0.
uint64_t checked_nbytes(const std::vector<uint64_t>& dims, uint64_t itemsize, const std::string& file, const char* format, const std::string& tensor);
// A tensor name read from a file, held to tg_state_set's rules (non-empty; no NUL, which a C string can't hold):
// TG_ERROR_IO naming the file otherwise
void check_tensor_name(const std::string& name, const std::string& file, const char* format);

// safetensors: every tensor is read from the file into its own buffer (see docs/state.md)
Loaded safe_load(const std::string& path, const std::string& device);
Loaded safe_load(const Bytes& b, const std::string& device);
// Writes `sd` (realized and copied out one tensor at a time) with `metadata` as __metadata__ (values as strings),
// atomically: a temporary file in the same directory renamed over `path`.
void safe_save(const StateDict& sd, const std::string& path, const Metadata& metadata = {});

// GGUF versions 2 and 3. Native types load as their dtype (F16 stays float16, as tinygrad's); quantized blocks are
// dequantized to float32 by Tensor ops over the raw uint8 blocks (lazy: kernels run when the tensors are realized).
struct GGUFTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // ggml order (innermost first); the tensor's shape is reversed
  uint32_t type;
  uint64_t offset;   // from the data section's start
  uint64_t nbytes;
};
// A key/value's value with its GGUF type, for readers that need more than `kv`'s text (a tokenizer's vocab, scores and
// merges): a scalar is one element, an array of strings or numbers its elements (an array of arrays has none). Numbers
// are doubles, exact for every GGUF number type but 64-bit integers beyond 2^53.
struct GGUFValue {
  uint32_t type;       // GGUF's type number: 0-7 and 10-12 numbers and bool, 8 string, 9 array
  uint32_t elem_type;  // an array's element type; `type` for a scalar
  std::vector<std::string> strs;
  std::vector<double> nums;
};
struct GGUFFile {
  Metadata kv;
  std::unordered_map<std::string, GGUFValue> values;  // by key, the values of `kv` typed
  std::vector<GGUFTensorInfo> tensors;
  uint64_t data_start;  // file offset of the data section (aligned to general.alignment)
  const GGUFValue* value(const std::string& key) const {
    auto it = values.find(key);
    return it == values.end() ? nullptr : &it->second;
  }
};
GGUFFile gguf_parse(const Bytes& b);  // the header, every tensor checked to lie inside the file
Tensor gguf_tensor(const Bytes& b, const GGUFFile& f, const GGUFTensorInfo& ti, const std::string& device);
Loaded gguf_load(const std::string& path, const std::string& device);
Loaded gguf_load(const Bytes& b, const std::string& device);

// A GGUF tensor as the file holds it, for kernels that read quantized blocks: a quantized type as uint8 blocks
// (blocks, bytes per block), a native one as its dtype in the tensor's shape; copied into `device` memory.
Tensor gguf_raw(const Bytes& b, const GGUFFile& f, const GGUFTensorInfo& ti, const std::string& device);
// (blocks, elements per block) float32 from (blocks, bytes per block) uint8 blocks of ggml type `type`: a lazy
// expression, so a matmul over it reads the blocks and dequantizes in its kernel
Tensor gguf_dequantize(const Tensor& blocks, uint32_t type);
// the same, each block in its own structure (blocks, ...): flattened, the elements in order (gguf.cpp names the axes)
Tensor gguf_dequantize_blocked(const Tensor& blocks, uint32_t type);
// The integer form of the types whose values are, over sub-blocks of 32 (or 16), scale * code - min with uint8 codes
// (Q4_0, Q8_0, Q6_K, the offset folded into min; Q4_K): codes (blocks, subs, 32) in element order, scale and min
// (blocks, subs * groups) float32, lazy expressions of the blocks. A dot product with int8 activations sums code * x in int32 (a byte dot
// product) and takes min * sum(x) once per sub-block. Null for the other types.
struct GGUFIntForm {
  Tensor codes, scale, min;
  int64_t offset = 0;  // Q4_0's 8, Q8_0's 128, Q6_K's 32: min is offset * scale, so a sum takes (dot - offset * sum(x)) * scale
  int64_t groups = 1;  // scales per sub-block of 32 (Q6_K's are per 16: 2), so scale and min are (blocks, subs * groups)
};
// `halves`, if given: the same blocks as uint16 (blocks, bytes / 2), a view of their memory, from which the float16
// scales are read as 16-bit loads (else each is two byte loads put together)
std::optional<GGUFIntForm> gguf_int8_form(const Tensor& blocks, uint32_t type, const Tensor* halves = nullptr);
bool gguf_has_int8_form(uint32_t type);  // whether gguf_int8_form gives one, without building it
// each byte's 8 / bits fields of `bits` bits, (..., n) -> (..., 8 / bits, n), the lowest field first (ggml's order for
// nibbles: a run's low nibbles, then its high ones); gguf.cpp says how they are made cheaply
Tensor gguf_fields(const Tensor& t, int bits);
// Q4_0, Q8_0 and Q4_K blocks rearranged for the CPU's decode GEMV (gguf.cpp has the layouts): types of our own,
// kGGMLDecode | the file's type, never read from a file, that gguf_int8_form, gguf_dequantize and
// gguf_dequantize_blocked take as they take the file's. All of a tensor's codes come before all its scales, so its
// (blocks, bytes) tensor is read whole: a slice of its rows is not a set of blocks
constexpr uint32_t kGGMLDecode = 0x10000;
constexpr uint32_t kGGMLQ4_0Decode = kGGMLDecode | 2, kGGMLQ8_0Decode = kGGMLDecode | 8, kGGMLQ4KDecode = kGGMLDecode | 12;
bool gguf_has_decode_order(uint32_t type);  // whether a file's type has one (Q4_0, Q8_0, Q4_K)
// (blocks, bytes) uint8 blocks of `type` -> the same values as blocks of type | kGGMLDecode, realized in a buffer of their own
Tensor gguf_repack_decode(const Tensor& blocks, uint32_t type);
// the codes of (blocks, bytes) decode-order blocks of `type` (either name), (blocks, code bytes) uint8, a view
Tensor gguf_decode_code_bytes(const Tensor& blocks, uint32_t type);
// elements and bytes per block of a ggml type (1 and the itemsize for a native type); false for a type we don't read
bool gguf_block(uint32_t type, int64_t* elems, int64_t* bytes, const char** name);

// safetensors or GGUF by the file's magic
Loaded load(const std::string& path, const std::string& device);

// JSON text of a string (quoted, escaped); TG_ERROR_INVALID_ARGUMENT naming `what` unless `s` is UTF-8
std::string json_quote(const std::string& s, const char* what);
bool valid_utf8(const uint8_t* p, size_t n);

}  // namespace tg::nn
