// DEV=CL: OpenCL through the ICD loader (libOpenCL.so.1), dlopen'ed on first use so the library loads without it.
// Kernels are OpenCL C from the C-style renderer, built per device; the driver's binaries are what the kernel caches hold.
// Building needs Khronos' header (Debian's opencl-headers); without it the library is built with no CL device.
#if __has_include(<CL/cl.h>)
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#define TG_HAVE_CL_HEADERS 1
#endif

#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "helpers.h"
#include "renderer/cstyle.h"
#include "runtime/device.h"
#include "runtime/diskcache.h"
#include "runtime/dynlib.h"

namespace tg {

#ifndef TG_HAVE_CL_HEADERS
int cl_device_count() { return 0; }
Device* open_cl_device(int) {
  fail(TG_ERROR_DEVICE, "device CL is not available: this library was built without OpenCL's headers (install opencl-headers and rebuild)");
}
#else
namespace {
#define TG_CL_FUNCS(X)                                                                                                                       \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext) X(clCreateCommandQueue) X(clCreateBuffer) \
  X(clCreateSubBuffer) X(clReleaseMemObject) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer) X(clEnqueueCopyBuffer)                         \
  X(clCreateProgramWithSource) X(clCreateProgramWithBinary) X(clBuildProgram) X(clGetProgramBuildInfo) X(clGetProgramInfo)                  \
  X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg) X(clEnqueueNDRangeKernel) X(clFinish) X(clWaitForEvents)      \
  X(clGetEventProfilingInfo) X(clReleaseEvent)

struct CL {
#define X(f) decltype(&::f) f = nullptr;
  TG_CL_FUNCS(X)
#undef X
  std::string error;  // why the loader or a function is missing
};

const CL& cl() {
  static const CL* api = [] {
    auto* a = new CL();
    void* h = dl_open_first({"libOpenCL.so.1", "libOpenCL.so"});
    if (!h) {
      a->error = "no OpenCL ICD loader (libOpenCL.so.1): install ocl-icd-libopencl1 and a driver (pocl-opencl-icd for the CPU)";
      return a;
    }
#define X(f)                                                                                  \
  a->f = reinterpret_cast<decltype(&::f)>(::dlsym(h, #f));                                     \
  if (!a->f && a->error.empty()) a->error = "the OpenCL loader has no " #f;
    TG_CL_FUNCS(X)
#undef X
    return a;
  }();
  return *api;
}

const char* cl_error_name(cl_int e) {
  switch (e) {
#define E(x) \
  case x: return #x;
    E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE) E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES)
    E(CL_OUT_OF_HOST_MEMORY) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE)
    E(CL_INVALID_CONTEXT) E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE)
    E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE)
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver installed)";
#undef E
    default: return "an OpenCL error";
  }
}
void check(cl_int e, tg_status code, const std::string& what) {
  if (e != CL_SUCCESS) fail(code, strformat("OpenCL: %s failed: %s (%d)", what.c_str(), cl_error_name(e), int(e)));
}

// every device of every platform, in platform order: CL:n is the n-th
const std::vector<cl_device_id>& cl_devices() {
  static const std::vector<cl_device_id>* devs = [] {
    auto* v = new std::vector<cl_device_id>();
    const CL& a = cl();
    if (!a.error.empty()) return v;
    cl_uint np = 0;
    if (a.clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return v;
    std::vector<cl_platform_id> ps(np);
    a.clGetPlatformIDs(np, ps.data(), nullptr);
    for (auto p : ps) {
      cl_uint nd = 0;
      if (a.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
      std::vector<cl_device_id> ds(nd);
      a.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr);
      v->insert(v->end(), ds.begin(), ds.end());
    }
    return v;
  }();
  return *devs;
}

std::string info_str(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  cl().clGetDeviceInfo(d, what, 0, nullptr, &n);
  std::string s(n, '\0');
  cl().clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}
template <class T>
T info(cl_device_id d, cl_device_info what) {
  T v{};
  cl().clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

class CLAllocator : public Allocator {
 public:
  CLAllocator(cl_context ctx, cl_command_queue q, size_t align) : ctx_(ctx), q_(q), align_(align) {}
  void copyin(void* dst, size_t offset, const void* src, size_t n) override {
    check(cl().clEnqueueWriteBuffer(q_, cl_mem(dst), CL_TRUE, offset, n, src, 0, nullptr, nullptr), TG_ERROR_RUNTIME, "copy to the device");
  }
  void copyout(void* dst, const void* src, size_t offset, size_t n) override {
    check(cl().clEnqueueReadBuffer(q_, cl_mem(const_cast<void*>(src)), CL_TRUE, offset, n, dst, 0, nullptr, nullptr), TG_ERROR_RUNTIME,
          "copy from the device");
  }
  bool copy(void* dst, const void* src, size_t n) override {
    check(cl().clEnqueueCopyBuffer(q_, cl_mem(const_cast<void*>(src)), cl_mem(dst), 0, 0, n, 0, nullptr, nullptr), TG_ERROR_RUNTIME,
          "copy on the device");
    return true;
  }
  void* view(void* base, size_t offset, size_t n) override {
    cl_buffer_region r{offset, n};
    cl_int e = CL_SUCCESS;
    cl_mem m = cl().clCreateSubBuffer(cl_mem(base), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &e);
    check(e, TG_ERROR_RUNTIME, strformat("a view of %zu bytes at %zu", n, offset));
    return m;
  }
  void release_view(void* p) override { cl().clReleaseMemObject(cl_mem(p)); }
  size_t view_alignment() const override { return align_; }

 protected:
  void* raw_alloc(size_t n) override {
    cl_int e = CL_SUCCESS;
    cl_mem m = cl().clCreateBuffer(ctx_, CL_MEM_READ_WRITE, n, nullptr, &e);
    return e == CL_SUCCESS ? m : nullptr;  // null: Allocator frees its cache, retries, then reports out of memory
  }
  void raw_free(void* p, size_t) override { cl().clReleaseMemObject(cl_mem(p)); }

 private:
  cl_context ctx_;
  cl_command_queue q_;
  size_t align_;
};

class CLProgram : public Program {
 public:
  CLProgram(cl_program p, cl_kernel k, cl_command_queue q) : prog_(p), kernel_(k), q_(q) {}
  ~CLProgram() override { cl().clReleaseKernel(kernel_), cl().clReleaseProgram(prog_); }
  void launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& d) const override { enqueue(bufs, vars, nvars, d, nullptr); }
  double timed_launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& d) const override {
    cl_event ev = nullptr;
    enqueue(bufs, vars, nvars, d, &ev);
    check(cl().clWaitForEvents(1, &ev), TG_ERROR_RUNTIME, "kernel " + name);
    cl_ulong t0 = 0, t1 = 0;
    cl().clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, nullptr);
    cl().clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, nullptr);
    cl().clReleaseEvent(ev);
    return double(t1 - t0) * 1e-9;
  }

 private:
  void enqueue(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& d, cl_event* ev) const {
    const CL& a = cl();
    std::lock_guard<std::mutex> lk(mu_);  // arguments live in the kernel object until the enqueue
    // the kernel's parameters: its buffers, then its variables
    cl_uint i = 0;
    for (; i < d.nbufs; i++) check(a.clSetKernelArg(kernel_, i, sizeof(cl_mem), &bufs[i]), TG_ERROR_RUNTIME, "argument of kernel " + name);
    for (size_t v = 0; v < nvars; v++, i++) {
      cl_long x = vars[v];
      check(a.clSetKernelArg(kernel_, i, sizeof x, &x), TG_ERROR_RUNTIME, "variable of kernel " + name);
    }
    size_t global[3], local[3];
    for (int k = 0; k < 3; k++) global[k] = size_t(d.global[size_t(k)] * d.local[size_t(k)]), local[k] = size_t(d.local[size_t(k)]);
    check(a.clEnqueueNDRangeKernel(q_, kernel_, 3, nullptr, global, local, 0, nullptr, ev), TG_ERROR_RUNTIME, "launch of kernel " + name);
  }
  cl_program prog_;
  cl_kernel kernel_;
  cl_command_queue q_;
  mutable std::mutex mu_;
};

// PoCL before 6.0 deletes a file of its kernel cache before writing it again (PoCL issue #1480). A program built while
// another process builds the same one can then serialize an empty entry, and loading that binary aborts inside PoCL.
// The header is read as PoCL 3-5 write it (format versions 9-12): a damaged binary is built again, never cached or loaded.
bool pocl_binary_damaged(const std::string& b) {
  if (b.size() < 8 || std::memcmp(b.data(), "poclbin", 8) != 0) return false;  // another driver's format
  size_t at = 8;
  auto read = [&](size_t n, uint64_t& v) {  // little-endian fields, as PoCL stores them
    if (n > b.size() - at) return false;
    v = 0;
    for (size_t i = 0; i < n; i++) v |= uint64_t(uint8_t(b[at + i])) << (8 * i);
    at += n;
    return true;
  };
  uint64_t device = 0, version = 0, kernels = 0, flags = 0, roots = 0, len = 0;
  if (!read(8, device) || !read(4, version) || !read(4, kernels) || !read(8, flags) || !read(4, roots)) return true;
  if (version < 9 || version > 12) return false;  // a layout not known here: PoCL checks it
  if (41 > b.size() - at) return true;             // the program's build hash: SHA-1 in hex and a NUL
  at += 41;
  if ((flags & 2) && !read(8, len)) return true;  // the size of program-scope variables (format 10 on)
  for (uint64_t i = 0; i < roots; i++) {
    if (!read(8, len) || len == 0 || len > b.size() - at) return true;
    at += size_t(len);
  }
  return false;
}

// OpenCL C -> the driver's binary for the device -> a program and its kernel
class CLCompiler : public Compiler {
 public:
  CLCompiler(cl_context ctx, cl_device_id dev, cl_command_queue q, const std::string& ident)
      : Compiler("opencl " + ident), ctx_(ctx), dev_(dev), q_(q), pocl_(ident.find("PoCL") != std::string::npos) {}

 protected:
  std::string build(const std::string& name, const std::string& src) override {
    std::optional<UserLock> lk;
    if (pocl_) lk.emplace("pocl");
    for (int attempt = 0;; attempt++) {  // a damaged PoCL binary is a race with another process: built again once it settles
      std::string bin = build_once(name, src);
      if (!pocl_binary_damaged(bin)) return bin;
      TG_CHECK(attempt < 8, TG_ERROR_COMPILE, "building kernel " + name + ": the OpenCL driver (PoCL) keeps returning a damaged binary");
      std::this_thread::sleep_for(std::chrono::milliseconds(5 << std::min(attempt, 5)));
    }
  }
  std::shared_ptr<Program> load(const std::string& name, const std::string& bin) override {
    TG_CHECK(!pocl_binary_damaged(bin), TG_ERROR_COMPILE, "loading kernel " + name + ": a damaged PoCL binary");
    std::optional<UserLock> lk;
    if (pocl_) lk.emplace("pocl");  // the program is unpacked into PoCL's cache, rewriting what other processes may be reading
    const CL& a = cl();
    const unsigned char* b = reinterpret_cast<const unsigned char*>(bin.data());
    size_t n = bin.size();
    cl_int st = CL_SUCCESS, e = CL_SUCCESS;
    cl_program p = a.clCreateProgramWithBinary(ctx_, 1, &dev_, &n, &b, &st, &e);
    if (e == CL_SUCCESS) e = st != CL_SUCCESS ? st : a.clBuildProgram(p, 1, &dev_, "", nullptr, nullptr);
    cl_kernel k = e == CL_SUCCESS ? a.clCreateKernel(p, name.c_str(), &e) : nullptr;
    if (e != CL_SUCCESS && p) a.clReleaseProgram(p);
    check(e, TG_ERROR_COMPILE, "loading kernel " + name);
    return std::make_shared<CLProgram>(p, k, q_);
  }

 private:
  std::string build_once(const std::string& name, const std::string& src) {
    const CL& a = cl();
    const char* s = src.c_str();
    size_t n = src.size();
    cl_int e = CL_SUCCESS;
    cl_program p = a.clCreateProgramWithSource(ctx_, 1, &s, &n, &e);
    check(e, TG_ERROR_COMPILE, "creating program " + name);
    if (a.clBuildProgram(p, 1, &dev_, "-cl-std=CL1.2", nullptr, nullptr) != CL_SUCCESS) {
      size_t ln = 0;
      a.clGetProgramBuildInfo(p, dev_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &ln);
      std::string log(ln, '\0');
      a.clGetProgramBuildInfo(p, dev_, CL_PROGRAM_BUILD_LOG, ln, log.data(), nullptr);
      a.clReleaseProgram(p);
      compile_failed(name, "OpenCL", log, src);
    }
    e = a.clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, nullptr);
    std::string bin(e == CL_SUCCESS ? n : 0, '\0');
    unsigned char* b = reinterpret_cast<unsigned char*>(bin.data());
    if (e == CL_SUCCESS) e = a.clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof b, &b, nullptr);
    a.clReleaseProgram(p);
    check(e, TG_ERROR_COMPILE, "reading the binary of " + name);
    return bin;
  }
  cl_context ctx_;
  cl_device_id dev_;
  cl_command_queue q_;
  bool pocl_;  // its kernel cache is shared by this user's processes, unlocked: builds and loads hold UserLock("pocl")
};

class CLDevice : public Device {
 public:
  CLDevice(std::string name, cl_device_id dev) : Device(std::move(name)), dev_(dev) {
    const CL& a = cl();
    cl_int e = CL_SUCCESS;
    ctx_ = a.clCreateContext(nullptr, 1, &dev_, nullptr, nullptr, &e);
    check(e, TG_ERROR_DEVICE, "creating a context on " + this->name());
    q_ = a.clCreateCommandQueue(ctx_, dev_, CL_QUEUE_PROFILING_ENABLE, &e);
    check(e, TG_ERROR_DEVICE, "creating a queue on " + this->name());
    desc_ = info_str(dev_, CL_DEVICE_NAME);
    Target t;
    t.device = this->name();
    t.has_local = true;
    auto items = std::array<size_t, 3>{};
    a.clGetDeviceInfo(dev_, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items.data(), nullptr);
    for (int k = 0; k < 3; k++) t.local_max[size_t(k)] = int64_t(items[size_t(k)]);
    t.local_threads_max = int64_t(info<size_t>(dev_, CL_DEVICE_MAX_WORK_GROUP_SIZE));
    t.global_max = {int64_t(1) << 31, int64_t(1) << 31, int64_t(1) << 31};  // work-groups per dimension: size_t work-items
    t.shared_max = int64_t(info<cl_ulong>(dev_, CL_DEVICE_LOCAL_MEM_SIZE));
    t.warp_size = info<cl_device_type>(dev_, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU ? 32 : 1;
    if (getenv_str("EMULATE", "") == "CUDA" && t.local_threads_max >= 32) t.tensor_cores = cuda_tensor_cores(8, 0, getenv_int("ALLOW_TF32", 0) != 0);
    ren_ = std::make_unique<CStyleRenderer>(t, Dialect::OpenCL);
    size_t align = std::max<size_t>(64, info<cl_uint>(dev_, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
    alloc_ = std::make_unique<CLAllocator>(ctx_, q_, align);
    comp_ = std::make_unique<CLCompiler>(ctx_, dev_, q_, desc_ + " " + info_str(dev_, CL_DRIVER_VERSION) + " " + info_str(dev_, CL_DEVICE_VERSION));
  }
  Allocator& allocator() override { return *alloc_; }
  Compiler& compiler() override { return *comp_; }
  const Renderer& renderer() override { return *ren_; }
  void synchronize() override { check(cl().clFinish(q_), TG_ERROR_RUNTIME, "waiting for " + name()); }
  std::string description() const override { return desc_; }

 private:
  cl_device_id dev_;
  cl_context ctx_ = nullptr;
  cl_command_queue q_ = nullptr;
  std::string desc_;
  std::unique_ptr<Renderer> ren_;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<Compiler> comp_;
};
}  // namespace

int cl_device_count() { return int(cl_devices().size()); }

Device* open_cl_device(int n) {
  const CL& a = cl();
  TG_CHECK(a.error.empty(), TG_ERROR_DEVICE, "device CL is not available: " + a.error);
  auto& devs = cl_devices();
  TG_CHECK(!devs.empty(), TG_ERROR_DEVICE, "device CL is not available: the OpenCL loader found no device (install a driver: pocl-opencl-icd for the CPU)");
  TG_CHECK(n >= 0 && size_t(n) < devs.size(), TG_ERROR_DEVICE, strformat("device CL:%d doesn't exist: OpenCL has %zu device%s", n, devs.size(), devs.size() == 1 ? "" : "s"));
  return new CLDevice(n ? strformat("CL:%d", n) : "CL", devs[size_t(n)]);
}

#endif  // TG_HAVE_CL_HEADERS

}  // namespace tg
