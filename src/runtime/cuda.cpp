// DEV=CUDA: NVIDIA GPUs through the driver API (libcuda.so.1) with NVRTC (libnvrtc.so) compiling the CUDA C the
// C-style renderer writes. Both are dlopen'ed on first use, never linked: the library loads and the CPU works on
// machines without them, and CUDA code compiles to PTX on machines with NVRTC and no GPU. The few driver types used
// are declared here, so building needs no CUDA toolkit.
#include "runtime/cuda.h"

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "helpers.h"
#include "renderer/cstyle.h"
#include "runtime/device.h"
#include "runtime/dynlib.h"

namespace tg {

namespace {
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
enum : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
using CUgraph = struct CUgraph_st*;
using CUgraphNode = struct CUgraphNode_st*;
using CUgraphExec = struct CUgraphExec_st*;
struct KernelNodeParams {  // CUDA_KERNEL_NODE_PARAMS_v2
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void** kernelParams;
  void** extra;
  void* kern;  // CUkernel: unused (func names the kernel)
  CUcontext ctx;
};

#define TG_CU_FUNCS(X)                                                                                                                    \
  X(cuInit, CUresult(unsigned)) X(cuDeviceGetCount, CUresult(int*)) X(cuDeviceGet, CUresult(CUdevice*, int))                  \
  X(cuDeviceGetName, CUresult(char*, int, CUdevice)) X(cuDeviceGetAttribute, CUresult(int*, int, CUdevice))                       \
  X(cuDevicePrimaryCtxRetain, CUresult(CUcontext*, CUdevice)) X(cuCtxSetCurrent, CUresult(CUcontext))                             \
  X(cuCtxSynchronize, CUresult()) X(cuMemAlloc_v2, CUresult(CUdeviceptr*, size_t)) X(cuMemFree_v2, CUresult(CUdeviceptr))    \
  X(cuMemcpyHtoD_v2, CUresult(CUdeviceptr, const void*, size_t)) X(cuMemcpyDtoH_v2, CUresult(void*, CUdeviceptr, size_t))         \
  X(cuMemcpyDtoD_v2, CUresult(CUdeviceptr, CUdeviceptr, size_t)) X(cuModuleLoadData, CUresult(CUmodule*, const void*))            \
  X(cuModuleGetFunction, CUresult(CUfunction*, CUmodule, const char*))                                                               \
  X(cuLaunchKernel, CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,      \
                                 void**))                                                                                                \
  X(cuEventCreate, CUresult(CUevent*, unsigned)) X(cuEventRecord, CUresult(CUevent, CUstream))                                    \
  X(cuEventSynchronize, CUresult(CUevent)) X(cuEventElapsedTime, CUresult(float*, CUevent, CUevent))                              \
  X(cuEventDestroy_v2, CUresult(CUevent)) X(cuGetErrorName, CUresult(CUresult, const char**))

// CUDA graphs (drivers of CUDA 12 and later): optional, jit replays launch one by one without them
#define TG_CU_GRAPH_FUNCS(X)                                                                                                              \
  X(cuGraphCreate, CUresult(CUgraph*, unsigned))                                                                                        \
  X(cuGraphAddKernelNode_v2, CUresult(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const KernelNodeParams*))                    \
  X(cuGraphInstantiateWithFlags, CUresult(CUgraphExec*, CUgraph, unsigned long long))                                                   \
  X(cuGraphExecKernelNodeSetParams_v2, CUresult(CUgraphExec, CUgraphNode, const KernelNodeParams*))                                    \
  X(cuGraphLaunch, CUresult(CUgraphExec, CUstream)) X(cuGraphExecDestroy, CUresult(CUgraphExec)) X(cuGraphDestroy, CUresult(CUgraph))

struct CU {
#define X(f, ...) std::add_pointer_t<__VA_ARGS__> f = nullptr;
  TG_CU_FUNCS(X)
  TG_CU_GRAPH_FUNCS(X)
#undef X
  std::string error;
  bool graphs = true;
};

const CU& cu() {
  static const CU* api = [] {
    auto* a = new CU();
    void* h = dl_open_first({"libcuda.so.1", "libcuda.so"});
    if (!h) {
      a->error = "no NVIDIA driver (libcuda.so.1)";
      return a;
    }
#define X(f, ...)                                                      \
  a->f = reinterpret_cast<std::add_pointer_t<__VA_ARGS__>>(::dlsym(h, #f)); \
  if (!a->f && a->error.empty()) a->error = "the NVIDIA driver has no " #f;
    TG_CU_FUNCS(X)
#undef X
#define X(f, ...)                                                           \
  a->f = reinterpret_cast<std::add_pointer_t<__VA_ARGS__>>(::dlsym(h, #f)); \
  a->graphs &= a->f != nullptr;
    TG_CU_GRAPH_FUNCS(X)
#undef X
    if (a->error.empty() && a->cuInit(0) != 0) a->error = "the NVIDIA driver failed to initialize (cuInit)";
    return a;
  }();
  return *api;
}

void check(CUresult r, tg_status code, const std::string& what) {
  if (r == 0) return;
  const char* nm = "an unknown error";
  if (cu().cuGetErrorName) cu().cuGetErrorName(r, &nm);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) code = TG_ERROR_OUT_OF_MEMORY;
  fail(code, strformat("CUDA: %s failed: %s (%d)", what.c_str(), nm, r));
}

using nvrtcResult = int;
using nvrtcProgram = struct nvrtc_prog*;
struct NVRTC {
  nvrtcResult (*nvrtcVersion)(int*, int*) = nullptr;
  const char* (*nvrtcGetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*) = nullptr;
  std::string error;
};

const NVRTC& nvrtc() {
  static const NVRTC* api = [] {
    auto* a = new NVRTC();
    std::string cuda = getenv_str("CUDA_PATH", "/usr/local/cuda");
    void* h = dl_open_first({"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", cuda + "/lib64/libnvrtc.so", cuda + "/lib/libnvrtc.so"});
    if (!h) {
      a->error = "no NVRTC (libnvrtc.so, from the CUDA toolkit; set CUDA_PATH to its directory)";
      return a;
    }
#define X(f)                                                        \
  a->f = reinterpret_cast<decltype(a->f)>(::dlsym(h, #f));          \
  if (!a->f && a->error.empty()) a->error = "NVRTC has no " #f;
    X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram) X(nvrtcGetPTXSize) X(nvrtcGetPTX)
    X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)
#undef X
    return a;
  }();
  return *api;
}
}  // namespace

std::string nvrtc_version() {
  const NVRTC& n = nvrtc();
  int major = 0, minor = 0;
  if (!n.error.empty() || n.nvrtcVersion(&major, &minor) != 0) return "";
  return strformat("%d.%d", major, minor);
}

std::string nvrtc_compile(const std::string& name, const std::string& src, const std::string& arch) {
  const NVRTC& n = nvrtc();
  TG_CHECK(n.error.empty(), TG_ERROR_DEVICE, "device CUDA can't compile: " + n.error);
  nvrtcProgram p = nullptr;
  auto nv = [&](nvrtcResult r, const char* what) {
    if (r != 0) fail(TG_ERROR_COMPILE, strformat("NVRTC: %s of kernel %s failed: %s", what, name.c_str(), n.nvrtcGetErrorString(r)));
  };
  nv(n.nvrtcCreateProgram(&p, src.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr), "creating the program");
  std::string opt = "--gpu-architecture=" + arch;
  const char* opts[] = {opt.c_str(), "--std=c++17", "-default-device"};
  nvrtcResult r = n.nvrtcCompileProgram(p, 3, opts);
  if (r != 0) {
    size_t ln = 0;
    n.nvrtcGetProgramLogSize(p, &ln);
    std::string log(ln, '\0');
    n.nvrtcGetProgramLog(p, log.data());
    n.nvrtcDestroyProgram(&p);
    compile_failed(name, "NVRTC for " + arch, log, src);
  }
  bool ptx = arch.rfind("compute_", 0) == 0;
  size_t sz = 0;
  std::string out;
  if (ptx) nv(n.nvrtcGetPTXSize(p, &sz), "PTX size"), out.resize(sz), nv(n.nvrtcGetPTX(p, out.data()), "PTX");
  else nv(n.nvrtcGetCUBINSize(p, &sz), "cubin size"), out.resize(sz), nv(n.nvrtcGetCUBIN(p, out.data()), "cubin");
  n.nvrtcDestroyProgram(&p);
  return out;
}

Target cuda_target(const std::string& device, int major, int minor) {
  Target t;
  t.device = device;
  t.has_local = true;
  t.global_max = {2147483647, 65535, 65535};
  t.local_max = {1024, 1024, 64};
  t.local_threads_max = 1024;
  t.shared_max = 48 << 10;
  t.warp_size = 32;
  t.tensor_cores = cuda_tensor_cores(major, minor, getenv_int("ALLOW_TF32", 0) != 0);
  return t;
}

namespace {
class CUDAContext {
 public:
  explicit CUDAContext(CUcontext c) : ctx_(c) {}
  // before every driver call, not once per thread: another library in the process (PyTorch, a user's CUDA code) may
  // have made its own context current on this thread since, and the driver's call is a thread-local store
  void use() const { check(cu().cuCtxSetCurrent(ctx_), TG_ERROR_DEVICE, "making the context current"); }

 private:
  CUcontext ctx_;
};

class CUDAAllocator : public Allocator {
 public:
  explicit CUDAAllocator(const CUDAContext& c) : ctx_(c) {}
  void copyin(void* dst, size_t offset, const void* src, size_t n) override {
    ctx_.use();
    check(cu().cuMemcpyHtoD_v2(CUdeviceptr(dst) + offset, src, n), TG_ERROR_RUNTIME, "copy to the device");
  }
  void copyout(void* dst, const void* src, size_t offset, size_t n) override {
    ctx_.use();
    check(cu().cuMemcpyDtoH_v2(dst, CUdeviceptr(src) + offset, n), TG_ERROR_RUNTIME, "copy from the device");
  }
  bool copy(void* dst, const void* src, size_t n) override {
    ctx_.use();
    check(cu().cuMemcpyDtoD_v2(CUdeviceptr(dst), CUdeviceptr(src), n), TG_ERROR_RUNTIME, "copy on the device");
    return true;
  }
  size_t view_alignment() const override { return 256; }
  // GPU memory is large and cuMemAlloc/cuMemFree synchronize: keep up to 4 GiB of freed buffers unless told otherwise
  size_t cache_limit() const override {
    static const size_t limit = size_t(getenv_int("TG_ALLOC_CACHE_MB", 4096)) << 20;
    return limit;
  }

 protected:
  void* raw_alloc(size_t n) override {
    ctx_.use();
    CUdeviceptr p = 0;
    return cu().cuMemAlloc_v2(&p, n) == 0 ? reinterpret_cast<void*>(p) : nullptr;
  }
  void raw_free(void* p, size_t) override {
    ctx_.use();
    cu().cuMemFree_v2(CUdeviceptr(p));
  }

 private:
  const CUDAContext& ctx_;
};

class CUDAProgram : public Program {
 public:
  CUDAProgram(const CUDAContext& c, CUmodule m, CUfunction f) : ctx_(c), mod_(m), fn_(f) {}
  CUfunction function() const { return fn_; }
  void launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& d) const override {
    ctx_.use();
    // the kernel's parameters: its buffers (device pointers), then its variables; bufs[i] already holds the pointer
    void* small[32];
    std::vector<void*> big;
    size_t nb = d.nbufs;
    void** args = nb + nvars <= 32 ? small : (big.resize(nb + nvars), big.data());
    for (size_t i = 0; i < nb; i++) args[i] = &bufs[i];
    for (size_t i = 0; i < nvars; i++) args[nb + i] = const_cast<int64_t*>(&vars[i]);
    check(cu().cuLaunchKernel(fn_, unsigned(d.global[0]), unsigned(d.global[1]), unsigned(d.global[2]), unsigned(d.local[0]), unsigned(d.local[1]),
                              unsigned(d.local[2]), 0, nullptr, args, nullptr),
          TG_ERROR_RUNTIME, "launch of kernel " + name);
  }
  double timed_launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& d) const override {
    ctx_.use();
    CUevent a = nullptr, b = nullptr;
    check(cu().cuEventCreate(&a, 0), TG_ERROR_RUNTIME, "an event"), check(cu().cuEventCreate(&b, 0), TG_ERROR_RUNTIME, "an event");
    cu().cuEventRecord(a, nullptr);
    launch(bufs, vars, nvars, d);
    cu().cuEventRecord(b, nullptr);
    CUresult r = cu().cuEventSynchronize(b);
    float ms = 0;
    cu().cuEventElapsedTime(&ms, a, b);
    cu().cuEventDestroy_v2(a), cu().cuEventDestroy_v2(b);
    check(r, TG_ERROR_RUNTIME, "kernel " + name);
    return double(ms) * 1e-3;
  }

 private:
  const CUDAContext& ctx_;
  CUmodule mod_;
  CUfunction fn_;
};

class CUDACompiler : public Compiler {
 public:
  CUDACompiler(const CUDAContext& c, const std::string& arch) : Compiler("nvrtc " + nvrtc_version() + " " + arch), ctx_(c), arch_(arch) {}

 protected:
  std::string build(const std::string& name, const std::string& src) override { return nvrtc_compile(name, src, arch_); }
  std::shared_ptr<Program> load(const std::string& name, const std::string& bin) override {
    ctx_.use();
    CUmodule m = nullptr;
    CUfunction f = nullptr;
    check(cu().cuModuleLoadData(&m, bin.data()), TG_ERROR_COMPILE, "loading kernel " + name);
    check(cu().cuModuleGetFunction(&f, m, name.c_str()), TG_ERROR_COMPILE, "finding kernel " + name);
    return std::make_shared<CUDAProgram>(ctx_, m, f);
  }

 private:
  const CUDAContext& ctx_;
  std::string arch_;
};

// A jit's launches as one CUDA graph: a chain of kernel nodes, each updated in place when its arguments change.
class CUDAGraph : public LaunchGraph {
 public:
  CUDAGraph(const CUDAContext& c, const std::vector<GraphLaunch>& ls) : ctx_(c) {
    const CU& a = cu();
    ctx_.use();
    check(a.cuGraphCreate(&graph_, 0), TG_ERROR_RUNTIME, "creating a CUDA graph");
    CUgraphNode prev = nullptr;
    for (auto& l : ls) {
      Node n;
      n.fn = static_cast<const CUDAProgram*>(l.prog)->function();
      set(n, l);
      KernelNodeParams p = params(n);
      check(a.cuGraphAddKernelNode_v2(&n.node, graph_, prev ? &prev : nullptr, prev ? 1 : 0, &p), TG_ERROR_RUNTIME, "adding kernel " + l.prog->name + " to a graph");
      prev = n.node;
      nodes_.push_back(std::move(n));
    }
    check(a.cuGraphInstantiateWithFlags(&exec_, graph_, 0), TG_ERROR_RUNTIME, "instantiating a CUDA graph");
  }
  ~CUDAGraph() override {
    if (exec_) cu().cuGraphExecDestroy(exec_);
    if (graph_) cu().cuGraphDestroy(graph_);
  }
  void replay(const std::vector<GraphLaunch>& ls) override {
    const CU& a = cu();
    ctx_.use();
    for (size_t i = 0; i < ls.size(); i++) {
      Node& n = nodes_[i];
      if (same(n, ls[i])) continue;
      set(n, ls[i]);
      KernelNodeParams p = params(n);
      check(a.cuGraphExecKernelNodeSetParams_v2(exec_, n.node, &p), TG_ERROR_RUNTIME, "updating kernel " + ls[i].prog->name + " in a graph");
    }
    check(a.cuGraphLaunch(exec_, nullptr), TG_ERROR_RUNTIME, "launching a CUDA graph");
  }

 private:
  struct Node {
    CUfunction fn = nullptr;
    CUgraphNode node = nullptr;
    std::vector<void*> bufs;
    std::vector<int64_t> vars;
    std::vector<void*> args;  // pointers to bufs' and vars' entries, as cuLaunchKernel takes them
    LaunchDims dims;
  };
  static bool same(const Node& n, const GraphLaunch& l) {
    return std::equal(n.bufs.begin(), n.bufs.end(), l.bufs, l.bufs + l.dims.nbufs) && n.bufs.size() == l.dims.nbufs && n.vars.size() == l.nvars &&
           std::equal(n.vars.begin(), n.vars.end(), l.vars) && n.dims.global == l.dims.global && n.dims.local == l.dims.local;
  }
  static void set(Node& n, const GraphLaunch& l) {
    n.bufs.assign(l.bufs, l.bufs + l.dims.nbufs), n.vars.assign(l.vars, l.vars + l.nvars), n.dims = l.dims;
    n.args.clear();
    for (auto& b : n.bufs) n.args.push_back(&b);
    for (auto& v : n.vars) n.args.push_back(&v);
  }
  static KernelNodeParams params(Node& n) {
    auto u = [](int64_t x) { return unsigned(x); };
    return {n.fn, u(n.dims.global[0]), u(n.dims.global[1]), u(n.dims.global[2]), u(n.dims.local[0]), u(n.dims.local[1]), u(n.dims.local[2]), 0,
            n.args.data(), nullptr, nullptr, nullptr};
  }
  const CUDAContext& ctx_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<Node> nodes_;
};

class CUDADevice : public Device {
 public:
  CUDADevice(std::string name, int ordinal) : Device(std::move(name)) {
    const CU& a = cu();
    check(a.cuDeviceGet(&dev_, ordinal), TG_ERROR_DEVICE, "opening " + this->name());
    CUcontext c = nullptr;
    check(a.cuDevicePrimaryCtxRetain(&c, dev_), TG_ERROR_DEVICE, "creating a context on " + this->name());
    ctx_ = std::make_unique<CUDAContext>(c);
    char nm[256] = {};
    a.cuDeviceGetName(nm, sizeof nm - 1, dev_);
    auto attr = [&](int what) {
      int v = 0;
      a.cuDeviceGetAttribute(&v, what, dev_);
      return v;
    };
    int major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    desc_ = strformat("%s (sm_%d%d)", nm, major, minor);
    Target t = cuda_target(this->name(), major, minor);
    t.global_max = {attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y), attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
    t.local_max = {attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y), attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
    t.local_threads_max = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    t.shared_max = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    t.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    ren_ = std::make_unique<CStyleRenderer>(t, Dialect::CUDA);
    alloc_ = std::make_unique<CUDAAllocator>(*ctx_);
    comp_ = std::make_unique<CUDACompiler>(*ctx_, strformat("sm_%d%d", major, minor));
  }
  Allocator& allocator() override { return *alloc_; }
  Compiler& compiler() override { return *comp_; }
  const Renderer& renderer() override { return *ren_; }
  void synchronize() override {
    ctx_->use();
    check(cu().cuCtxSynchronize(), TG_ERROR_RUNTIME, "waiting for " + name());
  }
  std::string description() const override { return desc_; }
  std::unique_ptr<LaunchGraph> make_graph(const std::vector<GraphLaunch>& ls) override {
    return cu().graphs ? std::make_unique<CUDAGraph>(*ctx_, ls) : nullptr;
  }

 private:
  CUdevice dev_ = 0;
  std::unique_ptr<CUDAContext> ctx_;
  std::string desc_;
  std::unique_ptr<Renderer> ren_;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<Compiler> comp_;
};
}  // namespace

int cuda_device_count() {
  const CU& a = cu();
  int n = 0;
  if (!a.error.empty() || a.cuDeviceGetCount(&n) != 0) return 0;
  return n;
}

Device* open_cuda_device(int n) {
  const CU& a = cu();
  TG_CHECK(a.error.empty(), TG_ERROR_DEVICE, "device CUDA is not available: " + a.error);
  int count = cuda_device_count();
  TG_CHECK(count > 0, TG_ERROR_DEVICE, "device CUDA is not available: the NVIDIA driver found no GPU");
  TG_CHECK(n < count, TG_ERROR_DEVICE, strformat("device CUDA:%d doesn't exist: the driver has %d GPU%s", n, count, count == 1 ? "" : "s"));
  return new CUDADevice(n ? strformat("CUDA:%d", n) : "CUDA", n);
}

}  // namespace tg
