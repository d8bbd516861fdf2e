// libFuzzer target: the ONNX model loader on arbitrary bytes (the wire-format reader, then the model's checks and its
// constants made into tensors), and the TensorProto reader. Any input must load or fail with a tg::Error; a crash, a
// sanitizer report, a hang or an allocation far past the input's size is a bug.
#include "onnx/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto m = tg::onnx::Model::load_bytes(data, size, "fuzz.onnx", "", tg::onnx::Options{"CPU"});
  } catch (const tg::Error&) {
  }
  try {
    tg::onnx::parse_tensor(data, size, "fuzz.pb");
  } catch (const tg::Error&) {
  }
  return 0;
}
