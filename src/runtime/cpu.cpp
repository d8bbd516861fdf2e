// The CPU devices: aligned host memory shared by both; DEV=CPU (the default) renders LLVM IR and compiles it in process
// with the LLVM JIT, DEV=CPU:CLANG renders C, compiles it with the system C compiler and loads it with dlopen.
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "helpers.h"
#include "runtime/device.h"
#include "runtime/threadpool.h"
#include "renderer/cstyle.h"
#ifndef TG_NO_LLVM
#include "renderer/llvmir.h"
#include "runtime/llvm.h"
#endif

extern char** environ;

namespace tg {

// A memcpy of megabytes split over the CPU worker threads: one thread copies well short of the memory's bandwidth.
static void parallel_memcpy(void* dst, const void* src, size_t n) {
  int64_t threads = std::min<int64_t>(num_cpu_threads(), int64_t(n >> 20));
  if (threads <= 1) return (void)std::memcpy(dst, src, n);
  struct Job {
    char* d;
    const char* s;
    size_t n, per;
  } job{static_cast<char*>(dst), static_cast<const char*>(src), n, (n / size_t(threads) + 63) / 64 * 64};
  void* bufs[1] = {&job};
  int64_t vars[1] = {0};
  launch([](void** b, const int64_t* v) {
    auto& j = *static_cast<Job*>(b[0]);
    size_t at = j.per * size_t(v[0]);
    if (at < j.n) std::memcpy(j.d + at, j.s + at, std::min(j.per, j.n - at));
  }, bufs, vars, 1, threads, 0);
}

// From 2 MiB a block is mapped on its own and its whole 2 MiB pages are asked for as transparent huge pages: a kernel
// streaming a model's weights walks the page tables once per 2 MiB instead of once per 4 KiB (a read loop over 1 GiB
// on a KVM guest: 11 -> 14 GB/s on one core). The tail past the last whole huge page keeps small pages, so a block
// commits no more memory than it touches
constexpr size_t kHugePage = size_t(1) << 21;
static size_t page_round(size_t n) { return (n + 4095) / 4096 * 4096; }

class CPUAllocator : public Allocator {
  void* raw_alloc(size_t n) override {
    if (n < kHugePage) return std::aligned_alloc(64, (n + 63) / 64 * 64);
    size_t len = page_round(n), span = len + kHugePage - 4096;
    void* m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    uintptr_t at = reinterpret_cast<uintptr_t>(m), p = (at + kHugePage - 1) & ~(kHugePage - 1);
    if (p > at) ::munmap(m, p - at);
    if (p + len < at + span) ::munmap(reinterpret_cast<void*>(p + len), at + span - (p + len));
    ::madvise(reinterpret_cast<void*>(p), len / kHugePage * kHugePage, MADV_HUGEPAGE);  // advice: where THP is off, small pages
    return reinterpret_cast<void*>(p);
  }
  // from 1 MiB, one of 8 sizes per power of two: the cache hands back only a freed block of the same size, and two
  // realizes of nearly the same plan (a model's first layer and the next: 150 and 146 MB arenas for a 512-token
  // prompt) then share one block instead of each faulting in fresh pages (kernels 5x slower where they first touched
  // memory). The tail a request doesn't use is never touched, so it takes no memory
  size_t block_size(size_t n) const override {
    if (n < (size_t(1) << 20) || n > (size_t(1) << 56)) return n;
    int sh = 0;
    while ((size_t(16) << sh) < n) sh++;
    return (n + (size_t(1) << sh) - 1) >> sh << sh;
  }
  void raw_free(void* p, size_t n) override {
    if (n < kHugePage) return std::free(p);
    ::munmap(p, page_round(n));
  }
  void copyin(void* dst, size_t offset, const void* src, size_t n) override { parallel_memcpy(static_cast<char*>(dst) + offset, src, n); }
  void copyout(void* dst, const void* src, size_t offset, size_t n) override { parallel_memcpy(dst, static_cast<const char*>(src) + offset, n); }
};

static std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Runs argv[0] (found on PATH) with argv, no shell in between, and returns its exit status with stdout+stderr.
static int run_process(const std::vector<std::string>& args, std::string& output) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  TG_CHECK(::pipe2(fds, O_CLOEXEC) == 0, TG_ERROR_COMPILE, std::string("can't create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pid_t pid;
  int err = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    if (err == ENOMEM || err == EAGAIN) fail(TG_ERROR_OUT_OF_MEMORY, "can't start the C compiler '" + args[0] + "': " + std::strerror(err));
    fail(TG_ERROR_COMPILE, "can't run the C compiler '" + args[0] + "': " + std::strerror(err) + " (set TG_CC, or use another device)");
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    output.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// what a compiler, or the loader starting it or loading its output, says when memory ran out (clang under ulimit -v
// fails to map its own libraries; a compiler the kernel's OOM killer ended gets SIGKILL)
static bool says_out_of_memory(const std::string& log, int rc = 0) {
  if (rc == 128 + SIGKILL) return true;
  for (const char* m : {"failed to map segment", "out of memory", "Cannot allocate memory", "bad_alloc", "memory exhausted"})
    if (log.find(m) != std::string::npos) return true;
  return false;
}

// a private directory (0700, removed at exit) for the C compiler's files
static const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string t = getenv_str("TMPDIR", "/tmp");
    if (t.empty() || t[0] != '/') t = "/tmp";
    std::string tmpl = t + "/tinygrad-XXXXXX";
    if (!::mkdtemp(tmpl.data())) fail(TG_ERROR_IO, "can't create a private temporary directory under " + t + ": " + std::strerror(errno));
    static std::string keep = tmpl;
    std::atexit([] { ::rmdir(keep.c_str()); });
    return tmpl;
  }();
  return dir;
}
// a name there never used before: dlopen hands back the library it loaded under a name, even one since replaced
static std::string scratch_file() {
  static std::atomic<uint64_t> n{0};
  return scratch_dir() + strformat("/%llu.so", (unsigned long long)++n);
}

// $TG_CC $TG_CFLAGS: the C compiler's command line, which the shared objects depend on
static std::string cc_command() {
  std::string cc = getenv_str("TG_CC", "clang");
  return (split_words(cc).empty() ? "clang" : cc) + " " + getenv_str("TG_CFLAGS", "-O2 -march=native -fno-math-errno -ffp-contract=off -fwrapv");
}

// C source -> a shared object from the system compiler, loaded with dlopen.
class ClangCompiler : public Compiler {
 public:
  ClangCompiler() : Compiler(cc_command()), cmd_(split_words(ident_)) {}

 protected:
  std::string build(const std::string& name, const std::string& src) override {
    std::string so = scratch_file(), c = so + ".c";
    {
      std::ofstream f(c);
      f << src;
      TG_CHECK(f.good(), TG_ERROR_IO, "can't write kernel source " + c);
    }
    std::vector<std::string> args = cmd_;
    for (const char* a : {"-shared", "-fPIC", "-x", "c", c.c_str(), "-o", so.c_str(), "-lm"}) args.push_back(a);
    std::string out;
    int rc = run_process(args, out);
    std::ifstream in(so, std::ios::binary);
    std::string bin(std::istreambuf_iterator<char>(in), {});
    ::unlink(c.c_str()), ::unlink(so.c_str());
    if (rc != 0 && says_out_of_memory(out, rc)) fail(TG_ERROR_OUT_OF_MEMORY, "compiling kernel " + name + " with '" + cmd_[0] + "' ran out of memory:\n" + out);
    if (rc != 0) compile_failed(name, "'" + cmd_[0] + "'", out, src);
    return bin;
  }
  std::shared_ptr<Program> load(const std::string& name, const std::string& bin) override {
    std::string so = scratch_file();
    std::ofstream(so, std::ios::binary).write(bin.data(), std::streamsize(bin.size()));
    void* h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ::unlink(so.c_str());
    if (!h) {
      std::string why = dlerror();
      fail(says_out_of_memory(why) ? TG_ERROR_OUT_OF_MEMORY : TG_ERROR_COMPILE, "loading kernel " + name + " failed: " + why);
    }
    auto p = std::make_shared<CPUProgram>();
    p->handle = h, p->entry = reinterpret_cast<CPUProgram::Entry>(::dlsym(h, "tg_entry"));
    TG_CHECK(p->entry, TG_ERROR_COMPILE, "kernel " + name + " has no tg_entry");
    return p;
  }

 private:
  std::vector<std::string> cmd_;
};

class CPUDevice : public Device {
 public:
  CPUDevice(std::string name, std::unique_ptr<Renderer> ren, std::unique_ptr<Compiler> comp)
      : Device(std::move(name)), ren_(std::move(ren)), comp_(std::move(comp)) {
    // CPU and CPU:CLANG share one allocator (a buffer is the same memory to both); a virtual CPU:n has its own, as
    // another device would
    if (this->name().rfind("CPU:", 0) == 0 && this->name() != "CPU:CLANG") own_ = std::make_unique<CPUAllocator>();
  }
  Allocator& allocator() override {
    static CPUAllocator* a = new CPUAllocator();  // one host memory for both CPU devices
    return own_ ? *own_ : *a;
  }
  Compiler& compiler() override { return *comp_; }
  bool host_memory() const override { return true; }
  const Renderer& renderer() override { return *ren_; }
  std::string description() const override {
    std::string d = dynamic_cast<ClangCompiler*>(comp_.get()) ? "host CPU, C compiler " + getenv_str("TG_CC", "clang") : "host CPU, LLVM JIT";
    return own_ ? d + " (virtual device " + name() + ")" : d;
  }

 private:
  std::unique_ptr<CPUAllocator> own_;
  std::unique_ptr<Renderer> ren_;
  std::unique_ptr<Compiler> comp_;
};

Device* open_cpu_device(const std::string& name) {
  if (name != "CPU:CLANG") {  // CPU, and the virtual CPU:1, CPU:2, ... compile as CPU does
#ifdef TG_NO_LLVM
    return new CPUDevice(name, std::make_unique<CStyleRenderer>(cpu_target(name, num_cpu_threads())), std::make_unique<ClangCompiler>());
#else
    return new CPUDevice(name, std::make_unique<LLVMRenderer>(cpu_target(name, num_cpu_threads())), make_llvm_compiler());
#endif
  }
  return new CPUDevice("CPU:CLANG", std::make_unique<CStyleRenderer>(cpu_target("CPU:CLANG", num_cpu_threads())), std::make_unique<ClangCompiler>());
}

}  // namespace tg
