// libFuzzer target: the GGUF reader on arbitrary bytes, and the dequantization kernels of the small tensors it finds
// (realized and read back, so the generated kernels run on the fuzzed blocks). Any input must load or fail with a
// tg::Error.
#include <vector>

#include "nn/state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tg::nn::Bytes b{data, size, "fuzz.gguf"};
  try {
    tg::nn::GGUFFile f = tg::nn::gguf_parse(b);
    for (auto& ti : f.tensors) {
      if (ti.nbytes > 4096) continue;  // bounded work per input; the parser checked every tensor already
      tg::Tensor t = tg::nn::gguf_tensor(b, f, ti, "CPU");
      std::vector<uint8_t> out(size_t(t.numel()) * size_t(t.dtype().itemsize()));
      t.to_data(out.data(), out.size());
    }
  } catch (const tg::Error&) {
  }
  return 0;
}
