// nn.state: safetensors load/save and GGUF load. Files come from the internet: every reader checks each length against
// the bytes left before it allocates or reads, and any malformed input is a tg::Error (TG_ERROR_IO naming the file and
// the problem), never a crash.
#pragma once
#include <cstdint>
#include <string>
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

// A read-only view of a file's bytes with the name errors use; `keep` (a mapped file) keeps them alive for tensors that
// use them in place.
struct Bytes {
  const uint8_t* p;
  size_t n;
  std::string name;
  std::shared_ptr<const void> keep = nullptr;
};

// safetensors: on a device whose kernels address host memory (the CPU), a tensor aligned to its dtype's size uses the
// file's mapping in place (copy-on-write pages: an assign into it never reaches the file); elsewhere one copy from the
// mapping into the tensor's device buffer (see docs/state.md)
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
struct GGUFFile {
  Metadata kv;
  std::vector<GGUFTensorInfo> tensors;
  uint64_t data_start;  // file offset of the data section (aligned to general.alignment)
};
GGUFFile gguf_parse(const Bytes& b);  // the header, every tensor checked to lie inside the file
Tensor gguf_tensor(const Bytes& b, const GGUFFile& f, const GGUFTensorInfo& ti, const std::string& device);
Loaded gguf_load(const std::string& path, const std::string& device);
Loaded gguf_load(const Bytes& b, const std::string& device);

// safetensors or GGUF by the file's magic
Loaded load(const std::string& path, const std::string& device);

// JSON text of a string (quoted, escaped); TG_ERROR_INVALID_ARGUMENT naming `what` unless `s` is UTF-8
std::string json_quote(const std::string& s, const char* what);
bool valid_utf8(const uint8_t* p, size_t n);

}  // namespace tg::nn
