#include "helpers.h"

#include <algorithm>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace tg {

void fail(tg_status code, const std::string& msg) { throw Error(code, msg); }

static std::mutex env_mu;
int64_t getenv_int(const char* name, int64_t dflt) {
  static std::unordered_map<std::string, int64_t> cache;
  std::lock_guard<std::mutex> lk(env_mu);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  const char* v = std::getenv(name);
  int64_t r = (v && *v) ? std::strtoll(v, nullptr, 10) : dflt;
  cache.emplace(name, r);
  return r;
}
std::string getenv_str(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : dflt;
}

static thread_local std::vector<std::pair<const char*, int64_t>> ctx_stack;
double ContextVar::value() const {
  for (auto it = ctx_stack.rbegin(); it != ctx_stack.rend(); ++it)
    if (std::strcmp(it->first, name) == 0) return double(it->second);
  if (double a = api_.load(std::memory_order_relaxed); a != kUnset) return a;
  double v = env_.load(std::memory_order_relaxed);
  if (v == kUnset) {
    const char* e = std::getenv(name);
    env_.store(v = (e && *e) ? std::strtod(e, nullptr) : dflt, std::memory_order_relaxed);
  }
  return v;
}
const ContextVar DEBUG{"DEBUG", 0, 0, 7}, JIT{"JIT", 1, 0, 2}, SPEC{"SPEC", 0, 0, 2}, NOOPT{"NOOPT", 0, 0, 1}, BEAM{"BEAM", 0, 0, 64}, CACHELEVEL{"CACHELEVEL", 2, 0, 2},
    IGNORE_BEAM_CACHE{"IGNORE_BEAM_CACHE", 0, 0, 1}, JITBEAM{"JITBEAM", 0, 0, 64}, BEAM_DEBUG{"BEAM_DEBUG", 0, 0, 2},
    BEAM_UPCAST_MAX{"BEAM_UPCAST_MAX", 256, 1, 4096}, BEAM_LOCAL_MAX{"BEAM_LOCAL_MAX", 1024, 1, 4096}, BEAM_UOPS_MAX{"BEAM_UOPS_MAX", 3000, 0, 1e6},
    BEAM_MIN_PROGRESS{"BEAM_MIN_PROGRESS", 0.01, 0, 1e6}, BEAM_TIMEOUT_SEC{"BEAM_TIMEOUT_SEC", 10, 0, 3600}, TRAINING{"TRAINING", 0, 0, 1};

const ContextVar* find_option(std::string_view name) {
  for (const ContextVar* v : {&DEBUG, &JIT, &SPEC, &NOOPT, &BEAM, &CACHELEVEL, &IGNORE_BEAM_CACHE, &JITBEAM, &BEAM_DEBUG, &BEAM_UPCAST_MAX, &BEAM_LOCAL_MAX,
                              &BEAM_UOPS_MAX, &BEAM_MIN_PROGRESS, &BEAM_TIMEOUT_SEC, &TRAINING})
    if (name == v->name) return v;
  return nullptr;
}
void set_option(const ContextVar& v, const char* value) {
  if (!value) return v.api_.store(ContextVar::kUnset);
  char* end = nullptr;
  double d = std::strtod(value, &end);
  TG_CHECK(*value && end && *end == 0 && d >= v.lo && d <= v.hi, TG_ERROR_INVALID_ARGUMENT,
           strformat("set_option %s: '%.40s' is not a number in [%g, %g]", v.name, value, v.lo, v.hi));
  v.api_.store(d);
}

Context::Context(std::initializer_list<std::pair<const char*, int64_t>> vals) : n_(vals.size()) {
  for (auto& v : vals) ctx_stack.push_back(v);
}
Context::~Context() { ctx_stack.resize(ctx_stack.size() - n_); }

void debug_log(int level, const char* fmt, ...) {
  if (DEBUG.get() < level) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
}
std::string strformat(const char* fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(size_t(n), '\0');
  std::vsnprintf(s.data(), size_t(n) + 1, fmt, ap2);
  va_end(ap2);
  return s;
}
std::string join_ints(const std::vector<int64_t>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); i++) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}
std::string shape_str(const std::vector<int64_t>& v) { return "(" + join_ints(v) + (v.size() == 1 ? ",)" : ")"); }
int64_t prod(const std::vector<int64_t>& v) {
  if (std::find(v.begin(), v.end(), 0) != v.end()) return 0;  // an empty shape's other dims may multiply past int64
  int64_t p = 1;
  for (auto x : v) p *= x;
  return p;
}
uint64_t fnv1a(const void* data, size_t n, uint64_t h) {
  auto p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace tg
