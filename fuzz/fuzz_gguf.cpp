// libFuzzer target: the GGUF reader on arbitrary bytes, and the dequantization kernels of the small tensors it finds
// (realized and read back, so the generated kernels run on the fuzzed blocks); the header is parsed from a file too,
// which must agree with the parse from memory. Any input must load or fail with a tg::Error.
#include <cstdlib>
#include <vector>

#include "fuzz_file.h"
#include "nn/state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tg::nn::Bytes b{data, size, "fuzz.gguf"};
  size_t n_mem = size_t(-1), n_file = size_t(-1);
  try {
    tg::nn::GGUFFile f = tg::nn::gguf_parse(b);
    n_mem = f.tensors.size();
    for (auto& ti : f.tensors) {
      if (ti.nbytes > 4096) continue;  // bounded work per input; the parser checked every tensor already
      tg::Tensor t = tg::nn::gguf_tensor(b, f, ti, "CPU");
      std::vector<uint8_t> out(size_t(t.numel()) * size_t(t.dtype().itemsize()));
      t.to_data(out.data(), out.size());
    }
  } catch (const tg::Error&) {
  }
  try {
    tg::nn::Bytes fb = tg::nn::open_file(fuzz_file(data, size), "fuzz");
    tg::nn::GGUFFile f = tg::nn::gguf_parse(fb);
    n_file = f.tensors.size();
    for (auto& ti : f.tensors)
      if (ti.nbytes <= 4096) tg::nn::gguf_tensor(fb, f, ti, "CPU");  // read from the file; the kernels ran above
  } catch (const tg::Error&) {
  }
  if (n_mem != n_file) std::abort();  // the two paths disagree
  return 0;
}
