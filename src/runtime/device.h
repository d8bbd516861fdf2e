// Runtime: devices, buffers with an LRU free-list allocator, compilers with an on-disk cache, loaded programs.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "uop/dtype.h"

namespace tg {

// Caches freed allocations by size so a training loop reuses memory instead of going back to the OS.
// Allocations are opaque handles (a host pointer, a CUdeviceptr, a cl_mem): only the allocator moves bytes in and out.
class Allocator {
 public:
  virtual ~Allocator() = default;
  void* alloc(size_t nbytes);
  void free(void* p, size_t nbytes);
  void clear_cache();
  size_t cached_bytes();  // freed memory held for reuse, at most cache_limit()
  size_t live_bytes() const { return live_.load(std::memory_order_relaxed); }  // handed out by alloc, not yet freed (leak tests)
  // TG_ALLOC_CACHE_MB, else the device's default (256 MiB on the host)
  virtual size_t cache_limit() const;
  // host <-> device bytes; `offset` is into the allocation. The defaults are for host memory.
  virtual void copyin(void* dst, size_t offset, const void* src, size_t n);
  virtual void copyout(void* dst, const void* src, size_t offset, size_t n);
  // a handle for bytes [offset, offset + n) of `base` (the memory planner's views), released with release_view
  virtual void* view(void* base, size_t offset, size_t n) { return static_cast<char*>(base) + offset; }
  virtual void release_view(void*) {}
  virtual size_t view_alignment() const { return 64; }  // a view's offset is a multiple of this
  // the size a request of n bytes takes from the system, and the size its freed block is cached under (default: n)
  virtual size_t block_size(size_t n) const { return n; }
  // a device-to-device copy inside this allocator's device; false: not supported, go through the host
  virtual bool copy(void* /*dst*/, const void* /*src*/, size_t /*n*/) { return false; }

 protected:
  virtual void* raw_alloc(size_t nbytes) = 0;
  virtual void raw_free(void* p, size_t nbytes) = 0;

 private:
  // freed memory, oldest first; over the limit the oldest goes back to the system, so the sizes in use now stay cached
  struct Cached {
    size_t n;
    void* p;
  };
  std::mutex mu_;
  std::list<Cached> lru_;
  std::unordered_map<size_t, std::vector<std::list<Cached>::iterator>> cache_;  // by size, oldest first
  size_t cached_ = 0;
  std::atomic<size_t> live_{0};
};

// Where a launch runs: `global` work-groups of `local` work-items on a GPU. On a CPU, global[0] is the number of THREAD
// calls, each reading its core id from vars[core_var].
struct LaunchDims {
  std::array<int64_t, 3> global{1, 1, 1}, local{1, 1, 1};
  int core_var = -1;
  size_t nbufs = 0;  // entries of `bufs` (the kernel's buffer parameters)
};

// A compiled kernel, loaded on its device. `bufs` are the buffers' handles (Buffer::ptr()), `vars` the values of the
// kernel's variables in order. A launch may be asynchronous: Device::synchronize waits for it.
struct Program {
  std::string name;
  virtual ~Program() = default;
  virtual void launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& dims) const = 0;
  // one launch and its duration in seconds, waited for (device events where the device has them)
  virtual double timed_launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& dims) const;
};
// The CPU devices' program: entry(bufs, vars) calls the generated function with typed pointers.
struct CPUProgram : Program {
  using Entry = void (*)(void** bufs, const int64_t* vars);
  Entry entry = nullptr;
  void* handle = nullptr;  // dlopen handle, kept for the process lifetime (programs are cached)
  void launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& dims) const override;
};

// A device's compiler is two steps, build (source -> bytes: an object file, a shared library, a cubin, a driver's binary)
// and load (bytes -> a program on the device), and compile() is the one path every device takes between them
// (runtime/diskcache.cpp): the program from memory, else the bytes from the disk cache (CACHELEVEL>0), else built and stored.
// Both caches are keyed by the source and `ident`: what else the bytes depend on (compiler and version, flags, target).
class Compiler {
 public:
  explicit Compiler(std::string ident) : ident_(std::move(ident)) {}
  virtual ~Compiler() = default;
  std::shared_ptr<Program> compile(const std::string& name, const std::string& src);
  // what besides the source decides the bytes (compiler version, target, flags): part of every cache key
  const std::string& ident() const { return ident_; }

 protected:
  // throws TG_ERROR_COMPILE (compile_failed) when the source doesn't compile
  virtual std::string build(const std::string& name, const std::string& src) = 0;
  // throws when the bytes don't load; bytes from the disk cache that don't (truncated, another driver's) are built again
  virtual std::shared_ptr<Program> load(const std::string& name, const std::string& bin) = 0;
  const std::string ident_;

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Program>> progs_;
};
// TG_ERROR_COMPILE for a kernel that doesn't compile, with the compiler's log and the source
[[noreturn]] void compile_failed(const std::string& name, const std::string& compiler, const std::string& log, const std::string& src);

// One launch of a graph: its program and what it is launched with.
struct GraphLaunch {
  const Program* prog;
  void* const* bufs;
  const int64_t* vars;
  size_t nvars;
  LaunchDims dims;
};
// A fixed sequence of launches the device runs as one (CUDA graphs): built once, replayed with new buffers and
// variable values (a launch whose arguments changed is updated in place).
struct LaunchGraph {
  virtual ~LaunchGraph() = default;
  virtual void replay(const std::vector<GraphLaunch>& launches) = 0;
};

class Renderer;
class Device {
 public:
  explicit Device(std::string name) : name_(std::move(name)) {}
  virtual ~Device() = default;
  const std::string& name() const { return name_; }
  virtual Allocator& allocator() = 0;
  virtual Compiler& compiler() = 0;
  virtual const Renderer& renderer() = 0;
  virtual void synchronize() {}
  // kernels address host memory directly (the CPU devices): a Buffer may then adopt memory it did not allocate
  virtual bool host_memory() const { return false; }
  // a graph of these launches where the device has them (null: launch them one by one)
  virtual std::unique_ptr<LaunchGraph> make_graph(const std::vector<GraphLaunch>&) { return nullptr; }
  // a description for listings: the driver's device name ("NVIDIA H100 80GB HBM3", "pthread-skylake-avx512-...")
  virtual std::string description() const { return name_; }

 private:
  std::string name_;
};

// The registry: "CPU" (the LLVM JIT), "CPU:1".."CPU:1023" (virtual CPU devices: CPU's compiler and cores, each its own
// allocator), "CPU:CLANG" (the system C compiler), "CUDA[:n]" (driver API + NVRTC), "CL[:n]"
// (an OpenCL ICD). GPU drivers are dlopen'ed on first use. Throws TG_ERROR_DEVICE for unknown or unavailable devices,
// saying why (no driver, no such device number).
Device& get_device(const std::string& name);
// NULL -> $DEV, else $DEVICE, else "CPU"; upper-cases, strips ":0"; "LLVM"/"CPU:LLVM" -> "CPU", "CLANG" -> "CPU:CLANG",
// "GPU"/"OPENCL" -> "CL", "NV" -> "CUDA"
std::string canonical_device(const char* name);
// every device that opens on this machine, CPUs first, with its description
std::vector<std::pair<std::string, std::string>> list_devices();
// the GPU back ends, each in its own file; `n` is the device number. They throw TG_ERROR_DEVICE when absent.
Device* open_cuda_device(int n);
Device* open_cl_device(int n);
int cuda_device_count();  // 0 without a driver
int cl_device_count();

// Device memory for one tensor buffer. Allocated lazily; the host reaches it only through copyin/copyout. A view
// (the memory planner's) lives at a byte offset inside a base buffer and keeps the base alive.
class Buffer {
 public:
  Buffer(std::string device, DType dtype, int64_t size);
  Buffer(std::shared_ptr<Buffer> base, size_t offset, DType dtype, int64_t size);
  // host memory the buffer uses in place (a mapped file) and keeps alive with `keep`, on a device with host_memory();
  // `data` aligned to the dtype's size, writable (kernels may assign into it)
  Buffer(std::string device, DType dtype, int64_t size, void* data, std::shared_ptr<const void> keep);
  ~Buffer();
  static int64_t live_count();  // Buffer objects alive in the process (leak tests)
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  const std::string& device() const { return device_; }
  DType dtype() const { return dtype_; }
  int64_t size() const { return size_; }
  size_t nbytes() const { return size_t(size_) * size_t(dtype_.itemsize()); }
  void* ptr();  // allocates on first use
  bool allocated() const { return ptr_ != nullptr || (base_ && base_->allocated()); }
  const std::shared_ptr<Buffer>& base() const { return base_; }  // null unless a view
  size_t offset() const { return offset_; }                       // a view's, in bytes into its base
  void copyin(const void* src, size_t nbytes);
  void copyout(void* dst, size_t nbytes);
  void copyout(void* dst, size_t nbytes, size_t offset);  // a part: bytes [offset, offset + nbytes)
  // this buffer's bytes <- src's (same size in bytes, any devices): on the device where it can, else through the host
  void copy_from(Buffer& src);
  Device& dev() const { return *dev_; }

 private:
  std::string device_;
  DType dtype_;
  int64_t size_;
  void* ptr_ = nullptr;
  Device* dev_;
  std::shared_ptr<Buffer> base_;
  size_t offset_ = 0;
  std::shared_ptr<const void> keep_;  // what owns adopted memory
};

// n bytes from byte soff of handle `src` (device sd) to byte doff of handle `dst` (device dd), both devices synchronized
// first: inside one allocator's memory where it can copy, else through the host (staged when neither is host memory)
void copy_between(Device& dd, void* dst, size_t doff, Device& sd, void* src, size_t soff, size_t n);

// counters (tinygrad's GlobalCounters)
struct GlobalCounters {
  static std::atomic<uint64_t> kernel_count, global_ops, global_mem, compile_count;
  static std::atomic<uint64_t> copy_count, copy_bytes;  // copies between devices run as items (Tensor::to, allreduce)
  static std::atomic<uint64_t> schedule_count, lower_count;  // schedules made (cache misses); realizes lowered to ExecItems
  static std::atomic<double> time_sum_s;
  static void reset();
};

}  // namespace tg
