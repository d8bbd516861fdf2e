#include "helpers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace tg {

void fail(tg_status code, const std::string& msg) { throw Error(code, msg); }

const ContextVar DEBUG{"DEBUG", 0, 0, 7}, JIT{"JIT", 1, 0, 2}, SPEC{"SPEC", 0, 0, 2}, NOOPT{"NOOPT", 0, 0, 1}, BEAM{"BEAM", 0, 0, 64}, CACHELEVEL{"CACHELEVEL", 2, 0, 2},
    IGNORE_BEAM_CACHE{"IGNORE_BEAM_CACHE", 0, 0, 1}, JITBEAM{"JITBEAM", 0, 0, 64}, BEAM_DEBUG{"BEAM_DEBUG", 0, 0, 2},
    BEAM_UPCAST_MAX{"BEAM_UPCAST_MAX", 256, 1, 4096}, BEAM_LOCAL_MAX{"BEAM_LOCAL_MAX", 1024, 1, 4096}, BEAM_UOPS_MAX{"BEAM_UOPS_MAX", 3000, 0, 1e6},
    BEAM_MIN_PROGRESS{"BEAM_MIN_PROGRESS", 0.01, 0, 1e6}, BEAM_TIMEOUT_SEC{"BEAM_TIMEOUT_SEC", 10, 0, 3600}, TRAINING{"TRAINING", 0, 0, 1},
    RING{"RING", 1, 0, 2}, RING_ALLREDUCE_THRESHOLD{"RING_ALLREDUCE_THRESHOLD", 256000, 0, 4e18},
    WINO{"WINO", -1, -1, 1};
static const ContextVar* const kOptions[] = {&DEBUG, &JIT, &SPEC, &NOOPT, &BEAM, &CACHELEVEL, &IGNORE_BEAM_CACHE, &JITBEAM, &BEAM_DEBUG,
                                             &BEAM_UPCAST_MAX, &BEAM_LOCAL_MAX, &BEAM_UOPS_MAX, &BEAM_MIN_PROGRESS, &BEAM_TIMEOUT_SEC, &TRAINING,
                                             &RING, &RING_ALLREDUCE_THRESHOLD, &WINO};

// One check for a setting's text, from tg_set_option or the environment: a plain decimal number (no hex, inf, nan or
// surrounding spaces, which strtod would take) in [lo, hi]; `integer` also refuses a fraction or an exponent.
static bool parse_setting(const char* text, double lo, double hi, bool integer, double* out) {
  if (!text || !*text) return false;
  bool digit = false;
  for (const char* c = text; *c; c++) {
    digit |= *c >= '0' && *c <= '9';
    if (!std::strchr("0123456789+-", *c) && (integer || !std::strchr(".eE", *c))) return false;
  }
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(text, &end);
  if (!digit || !end || *end || errno == ERANGE || !(d >= lo && d <= hi)) return false;
  *out = d;
  return true;
}
// A bad environment value is reported once on stderr and ignored (the default applies), as an unusable cache is: the
// environment is read deep inside calls that have no status of their own to fail with.
static std::mutex env_mu;
static void report_bad_env(const char* name, const char* text, double lo, double hi, bool integer) {
  static std::unordered_set<std::string> reported;  // once per variable, by whichever check or read sees it first
  std::lock_guard<std::mutex> lk(env_mu);
  if (!reported.insert(name).second) return;
  std::fprintf(stderr, "tinygrad: environment variable %s='%.40s' is not %s in [%.17g, %.17g]; ignored, the default applies\n", name, text,
               integer ? "an integer" : "a number", lo, hi);
}

// The integer settings read from the environment only, with the values they accept: enough for any use, and none that
// would overflow a shift, empty a cache that must hold its entry, or start a thousand threads.
struct EnvRange {
  const char* name;
  double lo, hi;
};
static constexpr double kMiB = 1 << 20, kGiB = 1 << 30;
static constexpr EnvRange kEnvRanges[] = {
    {"NUM_CPU_THREADS", 0, 1024},      {"TG_ALLOC_CACHE_MB", 0, kGiB},  {"TG_DISK_CACHE_MB", 0, kGiB},   {"TG_PROGRAM_CACHE", 1, 16 * kMiB},
    {"TG_SCHEDULE_CACHE", 1, 16 * kMiB}, {"TG_MAX_FUSED_ALU", 1, kMiB}, {"TG_MAX_FUSED_MOVEMENT", 1, kMiB}, {"TG_MAX_FUSED_INPUTS", 1, kMiB},
    {"REDUCEOP_SPLIT_THRESHOLD", 1, 4e18}, {"REDUCEOP_SPLIT_SIZE", 0, 62}, {"SPLIT_REDUCEOP", 0, 1}, {"TC", 0, 2}, {"TC_OPT", 0, 2},
    {"TC_SELECT", -1, 255},            {"TG_GPU_TILE", 0, 64},          {"TG_GPU_UPCAST", 0, 64},        {"TG_TILE_ROWS", 0, 64},
    {"TG_TILE_VECS", 0, 64},           {"TG_TILE_SWAP", 0, 1},          {"TG_PACK", 0, 1},               {"JIT_GRAPH", 0, 1},
    {"TG_FMA", 0, 1},                 {"TG_COMM_TIMEOUT", 1, 86400},   {"TG_GPU_STAGE", 0, 1024},       {"TG_GPU_STAGE_TILE", 0, 16},
    {"TG_GPU_STAGE_LY", 1, 64},        {"TG_GPU_LOCAL_X", 1, 1024},     {"TG_TC_STAGE", 0, 1024},        {"TG_TC_UPCAST", 1, 5},
    {"TG_TC_WARPS", 1, 8},             {"ALLOW_TF32", 0, 1},
    {"THREADS", 0, 1},                 {"TRACK_MATCH_STATS", 0, 1},     {"VIZ", 0, 1},                   {"VIZ_PORT", 0, 65535},
    {"VIZ_CAPACITY", 1, kMiB},
};

static std::mutex env_cache_mu;
static const std::optional<int64_t>& env_int_locked(const char* name) {
  // the environment's value (none: unset or refused); function-local, as static initializers elsewhere read it
  static std::unordered_map<std::string, std::optional<int64_t>> env_cache;
  auto it = env_cache.find(name);
  if (it != env_cache.end()) return it->second;
  std::optional<int64_t> v;
  if (const char* e = std::getenv(name); e && *e) {
    double lo = -9.2e18, hi = 9.2e18;  // a name not in the table: any int64 (rounded in, so the conversion is defined)
    for (auto& r : kEnvRanges)
      if (std::strcmp(r.name, name) == 0) lo = r.lo, hi = r.hi;
    if (double d; parse_setting(e, lo, hi, true, &d)) v = std::strtoll(e, nullptr, 10);  // exact past 2^53
    else report_bad_env(name, e, lo, hi, true);
  }
  return env_cache.emplace(name, v).first->second;
}
// Every numeric setting is checked at the first read of any, so a bad value is reported at start, not when (if ever)
// the code that reads it runs. Only checked: each value is still taken at its own first read, so a program may set a
// variable (setenv) after the library read another one.
static void check_env_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    double d;
    for (auto& r : kEnvRanges)
      if (const char* e = std::getenv(r.name); e && *e && !parse_setting(e, r.lo, r.hi, true, &d)) report_bad_env(r.name, e, r.lo, r.hi, true);
    for (const ContextVar* v : kOptions)
      if (const char* e = std::getenv(v->name); e && *e && !parse_setting(e, v->lo, v->hi, false, &d)) report_bad_env(v->name, e, v->lo, v->hi, false);
  });
}
int64_t getenv_int(const char* name, int64_t dflt) {
  check_env_once();
  std::lock_guard<std::mutex> lk(env_cache_mu);
  return env_int_locked(name).value_or(dflt);  // each caller's own default (the CPU and CUDA allocators' differ)
}
std::string getenv_str(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::string(v) : dflt;
}

namespace {
struct Override {
  const char* name;
  double value;
  bool pushed;  // by tg_option_push (a user's), not a scoped tg::Context
};
// Allocated while non-empty, so the thread_local itself has no destructor (glibc aborts when it cannot allocate the
// registration of one; see api/core.cpp's last_msg).
thread_local std::vector<Override>* ctx_stack = nullptr;
void ctx_push(Override o) {
  auto* s = ctx_stack ? ctx_stack : new std::vector<Override>;
  try {
    s->push_back(o);
  } catch (...) {
    if (s != ctx_stack) delete s;
    throw;
  }
  ctx_stack = s;
}
void ctx_pop(size_t n) {
  ctx_stack->resize(ctx_stack->size() - n);
  if (ctx_stack->empty()) delete ctx_stack, ctx_stack = nullptr;
}
}  // namespace
double ContextVar::value() const {
  if (ctx_stack)
    for (auto it = ctx_stack->rbegin(); it != ctx_stack->rend(); ++it)
      if (std::strcmp(it->name, name) == 0) return it->value;
  if (double a = api_.load(std::memory_order_relaxed); a != kUnset) return a;
  if (double v = env_.load(std::memory_order_relaxed); v != kUnset) return v;
  check_env_once();
  return env();
}
double ContextVar::env() const {
  double v = env_.load(std::memory_order_relaxed);
  if (v != kUnset) return v;
  const char* e = std::getenv(name);
  double d = dflt;
  bool bad = e && *e && !parse_setting(e, lo, hi, false, &d);
  if (bad) d = dflt, report_bad_env(name, e, lo, hi, false);
  env_.compare_exchange_strong(v, d, std::memory_order_relaxed);  // the first reader's value stays
  return env_.load(std::memory_order_relaxed);
}

const ContextVar* find_option(std::string_view name) {
  for (const ContextVar* v : kOptions)
    if (name == v->name) return v;
  return nullptr;
}
void set_option(const ContextVar& v, const char* value) {
  if (!value) return v.api_.store(ContextVar::kUnset);
  double d = 0;
  TG_CHECK(parse_setting(value, v.lo, v.hi, false, &d), TG_ERROR_INVALID_ARGUMENT,
           strformat("set_option %s: '%.40s' is not a number in [%.17g, %.17g]", v.name, value, v.lo, v.hi));
  v.api_.store(d);
}

void push_option(const ContextVar& v, const char* value) {
  double d = 0;
  TG_CHECK(value && parse_setting(value, v.lo, v.hi, false, &d), TG_ERROR_INVALID_ARGUMENT,
           strformat("option_push %s: '%.40s' is not a number in [%.17g, %.17g]", v.name, value ? value : "(null)", v.lo, v.hi));
  ctx_push({v.name, d, true});
}
bool pop_option() {
  // a callback run inside a library call must not undo the library's own scoped overrides
  if (!ctx_stack || !ctx_stack->back().pushed) return false;
  ctx_pop(1);
  return true;
}

Context::Context(std::initializer_list<std::pair<const char*, int64_t>> vals) : n_(vals.size()) {
  for (auto& v : vals) ctx_push({v.first, double(v.second), false});
}
Context::~Context() {
  if (n_) ctx_pop(n_);
}

ContextCopy::ContextCopy() {
  if (ctx_stack)
    for (auto& o : *ctx_stack) vals_.emplace_back(o.name, o.value);
}
ContextCopy::Scope::Scope(const ContextCopy& c) : n_(0) {
  try {
    for (auto& [name, v] : c.vals_) ctx_push({name, v, false}), n_++;
  } catch (...) {
    if (n_) ctx_pop(n_);
    throw;
  }
}
ContextCopy::Scope::~Scope() {
  if (n_) ctx_pop(n_);
}

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

namespace tg {

int open_regular(const std::string& path, std::string& why) {
  // O_NONBLOCK: opening a FIFO without a writer would wait for one; the check below refuses it before any read
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return why = std::string("cannot open: ") + std::strerror(errno), -1;
  struct stat st;
  int rc = ::fstat(fd, &st), err = errno;
  if (rc != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    why = rc                                          ? std::strerror(err)
          : S_ISFIFO(st.st_mode)                      ? "not a regular file (a named pipe)"
          : S_ISDIR(st.st_mode)                       ? "not a regular file (a directory)"
          : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "not a regular file (a device)"
          : S_ISSOCK(st.st_mode)                      ? "not a regular file (a socket)"
                                                      : "not a regular file";
    return -1;
  }
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
    why = std::string("fcntl: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

uint16_t f32_to_f16_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  uint32_t s = (b >> 16) & 0x8000, a = b & 0x7fffffffu;
  if (a > 0x7f800000u) {  // NaN: quiet, with the payload's top bits
    uint32_t m = (a >> 13) & 0x3ff;
    return uint16_t(s | 0x7c00 | (m ? m : 0x200));
  }
  if (a >= 0x477ff000u) return uint16_t(s | 0x7c00);  // rounds past 65504: inf
  if (a < 0x38800000u) {                              // a half subnormal: in units of 2^-24, to nearest even
    float v;
    std::memcpy(&v, &a, 4);
    float q = v * 16777216.0f;  // exact: a power of two
    uint32_t r = uint32_t(q);
    float fr = q - float(r);
    if (fr > 0.5f || (fr == 0.5f && (r & 1))) r++;
    return uint16_t(s | r);
  }
  uint32_t r = a + 0xc8000fffu + ((a >> 13) & 1);  // rebias the exponent (-112) and round the 13 dropped bits to even
  return uint16_t(s | (r >> 13));
}
float f16_bits_to_f32(uint16_t h) {
  uint32_t s = uint32_t(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, b;
  if (e == 0) {
    if (m == 0) b = s;
    else {  // subnormal: normalize
      e = 113;
      while (!(m & 0x400)) m <<= 1, e--;
      b = s | (e << 23) | ((m & 0x3ff) << 13);
    }
  } else if (e == 31) b = s | 0x7f800000u | (m << 13);
  else b = s | ((e + 112) << 23) | (m << 13);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace tg
