// DLPack's C ABI (dlpack.h, v0.8): the structs behind Python's "dltensor" capsules. Written from the spec rather than
// vendored, so the library needs no extra header; the layout is fixed by the spec (versions 0.5 to 0.8 agree on it).
#pragma once
#include <cstdint>

#define DLPACK_VERSION 80
#define DLPACK_ABI_VERSION 1

extern "C" {

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
} DLDeviceType;

typedef struct {
  // a DLDeviceType; held as the 32-bit int the C enum is, so a producer's value we don't know is data, not UB to load
  int32_t device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
} DLDataTypeCode;

typedef struct {
  uint8_t code;  // a DLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;  // with byte_offset, the first element
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL means row-major compact
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);  // may be NULL: nothing to free
} DLManagedTensor;

}  // extern "C"
