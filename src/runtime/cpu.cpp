// The CPU device: aligned host memory, kernels compiled by the system C compiler and loaded with dlopen.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "helpers.h"
#include "runtime/device.h"

namespace tg {

class CPUAllocator : public Allocator {
  void* raw_alloc(size_t n) override { return std::aligned_alloc(64, (n + 63) / 64 * 64); }
  void raw_free(void* p, size_t) override { std::free(p); }
};

static std::string cache_dir() {
  std::string base = getenv_str("XDG_CACHE_HOME");
  if (base.empty()) base = getenv_str("HOME", "/tmp") + "/.cache";
  return base + "/tinygrad/kernels";
}
static void mkdirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); i++)
    if (i == path.size() || path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0755);
}
static std::string hex128(const std::string& s) {
  return strformat("%016llx%016llx", (unsigned long long)fnv1a(s.data(), s.size()), (unsigned long long)fnv1a(s.data(), s.size(), 0x84222325cbf29ce4ull));
}

// Runs `cc` with flags on a source file, producing a shared object. Output is captured for error messages.
class ClangCompiler : public Compiler {
 public:
  ClangCompiler()
      : cc_(getenv_str("TG_CC", "clang")), flags_(getenv_str("TG_CFLAGS", "-O2 -march=native -fno-math-errno -ffp-contract=off")) {}

  std::shared_ptr<Program> compile(const std::string& name, const std::string& src) override {
    std::string key = hex128(cc_ + "\n" + flags_ + "\n" + src);
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (auto it = progs_.find(key); it != progs_.end()) return it->second;
    }
    bool disk = CACHELEVEL.get() > 0;
    std::string dir = disk ? cache_dir() : std::string("/tmp");
    std::string so = dir + "/" + (disk ? key : key + strformat(".%d.%zx", int(getpid()), std::hash<std::thread::id>()(std::this_thread::get_id()))) + ".so";
    if (!disk || ::access(so.c_str(), R_OK) != 0) build(dir, so, name, src);
    void* h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h && disk) {  // a truncated or stale cache file: rebuild once
      build(dir, so, name, src);
      h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (!disk) ::unlink(so.c_str());
    TG_CHECK(h, TG_ERROR_COMPILE, "loading kernel " + name + " failed: " + std::string(dlerror()));
    auto p = std::make_shared<Program>();
    p->name = name, p->handle = h;
    p->entry = reinterpret_cast<Program::Entry>(::dlsym(h, "tg_entry"));
    TG_CHECK(p->entry, TG_ERROR_COMPILE, "kernel " + name + " has no tg_entry");
    std::lock_guard<std::mutex> lk(mu_);
    return progs_.emplace(key, p).first->second;
  }

 private:
  void build(const std::string& dir, const std::string& so, const std::string& name, const std::string& src) {
    mkdirs(dir);
    // unique temp names; rename() makes the finished file appear atomically for other processes
    std::string tmp = so + strformat(".tmp.%d.%zx", int(getpid()), std::hash<std::thread::id>()(std::this_thread::get_id()));
    { std::ofstream(tmp + ".c") << src; }
    std::string cmd = cc_ + " " + flags_ + " -shared -fPIC -x c " + tmp + ".c -o " + tmp + " -lm 2>&1";
    std::string out;
    FILE* f = ::popen(cmd.c_str(), "r");
    TG_CHECK(f, TG_ERROR_COMPILE, "can't run the C compiler: " + cmd);
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
    int rc = ::pclose(f);
    ::unlink((tmp + ".c").c_str());
    if (rc != 0) {
      ::unlink(tmp.c_str());
      fail(TG_ERROR_COMPILE, "compiling kernel " + name + " with '" + cc_ + "' failed:\n" + out + "\n--- source ---\n" + src);
    }
    GlobalCounters::compile_count++;
    TG_CHECK(::rename(tmp.c_str(), so.c_str()) == 0, TG_ERROR_IO, "can't write kernel cache file " + so);
  }
  std::string cc_, flags_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Program>> progs_;
};

class CPUDevice : public Device {
 public:
  CPUDevice() : Device("CPU") {}
  Allocator& allocator() override { return alloc_; }
  Compiler& compiler() override { return comp_; }

 private:
  CPUAllocator alloc_;
  ClangCompiler comp_;
};

std::string canonical_device(const char* name) {
  std::string d = name && *name ? name : getenv_str("DEVICE", "CPU");
  for (auto& c : d) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (d.size() > 2 && d.compare(d.size() - 2, 2, ":0") == 0) d.resize(d.size() - 2);
  if (d == "CLANG") d = "CPU";
  return d;
}

Device& get_device(const std::string& name) {
  static CPUDevice* cpu = new CPUDevice();  // lives for the process: buffers may be freed during static destruction
  if (name == "CPU") return *cpu;
  if (name == "CUDA" || name == "CL" || name == "LLVM" || name == "GPU" || name == "NV" || name == "AMD" || name == "METAL")
    fail(TG_ERROR_DEVICE, "device '" + name + "' is not available in this build (available: CPU)");
  fail(TG_ERROR_DEVICE, "unknown device '" + name + "' (available: CPU)");
}

}  // namespace tg
