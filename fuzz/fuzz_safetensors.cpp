// libFuzzer target: the safetensors reader on arbitrary bytes, from memory and from a file. Any input must load or
// fail with a tg::Error, the same way both times; a crash, a sanitizer report, a hang or an allocation past the input's
// size is a bug.
#include <cstdlib>

#include "fuzz_file.h"
#include "nn/state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int mem = 0, file = 0;
  try {
    tg::nn::Loaded l = tg::nn::safe_load(tg::nn::Bytes{data, size, "fuzz.safetensors"}, "CPU");
  } catch (const tg::Error& e) {
    mem = e.code;
  }
  try {
    tg::nn::Loaded l = tg::nn::safe_load(tg::nn::open_file(fuzz_file(data, size), "fuzz"), "CPU");
  } catch (const tg::Error& e) {
    file = e.code;
  }
  if (mem != file) std::abort();  // the two paths disagree
  return 0;
}
