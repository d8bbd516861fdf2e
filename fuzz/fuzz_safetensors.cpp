// libFuzzer target: the safetensors reader on arbitrary bytes. Any input must load or fail with a tg::Error; a crash,
// a sanitizer report, a hang or an allocation past the input's size is a bug.
#include "nn/state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tg::nn::Loaded l = tg::nn::safe_load(tg::nn::Bytes{data, size, "fuzz.safetensors"}, "CPU");
  } catch (const tg::Error&) {
  }
  return 0;
}
