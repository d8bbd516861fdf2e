// The device registry: names -> devices, opened on first use and kept for the process (buffers may be freed during
// static destruction). GPU back ends load their drivers only when a GPU device is first asked for. Also what every
// Program shares: timing a launch on the host clock where a device has no events.
#include <cctype>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "helpers.h"
#include "runtime/device.h"

namespace tg {

Device* open_cpu_device(const std::string& name);  // cpu.cpp

// a device without events (the CPU) times a launch on the host's clock; launches there return when the kernel is done
double Program::timed_launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& d) const {
  auto t0 = std::chrono::steady_clock::now();
  launch(bufs, vars, nvars, d);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string canonical_device(const char* name) {
  std::string d = name && *name ? name : getenv_str("DEV", getenv_str("DEVICE", "CPU"));
  if (size_t c = d.find(','); c != std::string::npos)  // several devices (a sharded tensor's): each canonical
    return canonical_device(d.substr(0, c).c_str()) + "," + canonical_device(d.substr(c + 1).c_str());
  for (auto& c : d) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (d.size() > 2 && d.compare(d.size() - 2, 2, ":0") == 0) d.resize(d.size() - 2);
  if (d == "LLVM" || d == "CPU:LLVM") d = "CPU";
  if (d == "CLANG") d = "CPU:CLANG";
  for (const char* alias : {"GPU", "OPENCL"})
    if (d.rfind(alias, 0) == 0 && (d.size() == std::strlen(alias) || d[std::strlen(alias)] == ':')) d = "CL" + d.substr(std::strlen(alias));
  if (d == "NV" || d.rfind("NV:", 0) == 0) d = "CUDA" + d.substr(2);
  return d;
}

// "CUDA" -> 0, "CUDA:3" -> 3, anything else after the colon -> -1
static int device_number(const std::string& name, const std::string& kind) {
  if (name == kind) return 0;
  std::string n = name.substr(kind.size() + 1);
  if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(n);
}

Device& get_device(const std::string& name) {
  static std::mutex mu;
  static auto* devices = new std::map<std::string, Device*>();
  std::lock_guard<std::mutex> lk(mu);
  if (auto it = devices->find(name); it != devices->end()) return *it->second;
  Device* d = nullptr;
  if (name == "CPU" || name == "CPU:CLANG") d = open_cpu_device(name);
  // virtual CPU devices (tinygrad's CPU:1, CPU:2, ...): each its own allocator, the same cores and compiler as CPU
  if (name.rfind("CPU:", 0) == 0 && name != "CPU:CLANG") {
    int n = device_number(name, "CPU");
    TG_CHECK(n >= 1 && n <= 1023, TG_ERROR_DEVICE, "unknown device '" + name + "': CPU devices are CPU, CPU:1 ... CPU:1023 and CPU:CLANG");
    d = open_cpu_device(name);
  }
  for (const char* kind : {"CUDA", "CL"}) {
    std::string k = kind;
    if (name != k && name.rfind(k + ":", 0) != 0) continue;
    int n = device_number(name, k);
    TG_CHECK(n >= 0, TG_ERROR_DEVICE, "unknown device '" + name + "': a device number is " + k + ":0, " + k + ":1, ...");
    d = k == "CUDA" ? open_cuda_device(n) : open_cl_device(n);
  }
  if (!d && (name == "AMD" || name == "METAL" || name == "QCOM" || name == "WEBGPU"))
    fail(TG_ERROR_DEVICE, "device '" + name + "' is not available in this build (available: CPU, CPU:CLANG, CUDA, CL)");
  TG_CHECK(d, TG_ERROR_DEVICE, "unknown device '" + name + "' (devices: CPU, CPU:n, CPU:CLANG, CUDA[:n], CL[:n])");
  (*devices)[name] = d;
  return *d;
}

std::vector<std::pair<std::string, std::string>> list_devices() {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](const std::string& name) {
    try {
      out.emplace_back(name, get_device(name).description());
    } catch (const Error&) {  // listed by its driver, but it won't open: not available
    }
  };
  add("CPU"), add("CPU:CLANG");
  for (int i = 0, n = cuda_device_count(); i < n; i++) add(i ? strformat("CUDA:%d", i) : "CUDA");
  for (int i = 0, n = cl_device_count(); i < n; i++) add(i ? strformat("CL:%d", i) : "CL");
  return out;
}

}  // namespace tg
