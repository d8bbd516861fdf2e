// DEV=CUDA: the pieces a test or a benchmark reaches without a GPU.
#pragma once
#include <string>

#include "renderer/renderer.h"

namespace tg {
// CUDA C -> PTX (arch "compute_XY") or a cubin (arch "sm_XY") with NVRTC, dlopen'ed; TG_ERROR_DEVICE without NVRTC,
// TG_ERROR_COMPILE with the compiler's log when the source doesn't compile. Works on machines without a GPU.
std::string nvrtc_compile(const std::string& name, const std::string& src, const std::string& arch);
// what NVRTC says it is ("12.8"), or "" without it
std::string nvrtc_version();
// the target of an NVIDIA GPU of compute capability major.minor, as the device would describe itself
Target cuda_target(const std::string& device, int major, int minor);
}  // namespace tg
