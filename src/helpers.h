// Helpers: errors, env/config variables with scoped overrides (tinygrad's getenv/Context), DEBUG logging.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tinygrad.h"

namespace tg {

// Every failure inside the library is a tg::Error carrying the C API status it maps to.
struct Error : std::runtime_error {
  tg_status code;
  Error(tg_status c, const std::string& msg) : std::runtime_error(msg), code(c) {}
};
[[noreturn]] void fail(tg_status code, const std::string& msg);
#define TG_CHECK(cond, code, msg) \
  do {                            \
    if (!(cond)) ::tg::fail(code, msg); \
  } while (0)

// getenv with an int default; values are read once and cached, Context overrides win.
int64_t getenv_int(const char* name, int64_t dflt = 0);
std::string getenv_str(const char* name, const std::string& dflt = "");

// A config variable (DEBUG, SPEC, NOOPT, BEAM, ...): a scoped Context override wins, then a value set through
// tg_set_option, then the environment (read once, on first use), then the default. Every read goes through get(), so a
// value set through the API takes effect at the next read, whatever a caller cached before.
struct ContextVar {
  const char* name;
  double dflt, lo, hi;  // tg_set_option accepts [lo, hi]: enough for any use, too little to flood a log or run for hours
  mutable std::atomic<double> env_{kUnset}, api_{kUnset};
  static constexpr double kUnset = -1e300;
  double value() const;  // the fractional ones (BEAM_MIN_PROGRESS) read this
  double env() const;    // the environment's value (read once; a bad one is reported and the default used)
  int64_t get() const { return int64_t(value()); }
  operator int64_t() const { return get(); }
};
extern const ContextVar DEBUG, SPEC, NOOPT, BEAM, JIT, CACHELEVEL, IGNORE_BEAM_CACHE, JITBEAM, BEAM_DEBUG, BEAM_UPCAST_MAX, BEAM_LOCAL_MAX, BEAM_UOPS_MAX,
    BEAM_MIN_PROGRESS, BEAM_TIMEOUT_SEC, TRAINING, RING, RING_ALLREDUCE_THRESHOLD, WINO;
// The options tg_set_option/tg_get_option know (the ContextVars above); nullptr for any other name.
const ContextVar* find_option(std::string_view name);
// tg_set_option: `value` is a number in the option's range (TG_ERROR_INVALID_ARGUMENT naming the option otherwise);
// nullptr forgets the API's value, so the environment applies again.
void set_option(const ContextVar& v, const char* value);
// tg_option_push / tg_option_pop: a thread-local override of `v` that nests and wins over set_option (the value is
// parsed and range-checked as set_option's); pop undoes only the calling thread's last push, false when it has none.
void push_option(const ContextVar& v, const char* value);
bool pop_option();
// Scoped overrides, like tinygrad's `with Context(DEBUG=2):`. Thread-local; nests.
class Context {
 public:
  Context(std::initializer_list<std::pair<const char*, int64_t>> vals);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  size_t n_;
};

// The calling thread's overrides (Context and tg_option_push), to be applied on another thread for work done on this
// one's behalf (kernels compiled in parallel): a ContextCopy::Scope there makes them that thread's, until it ends.
class ContextCopy {
 public:
  ContextCopy();
  class Scope {
   public:
    explicit Scope(const ContextCopy& c);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    size_t n_;
  };

 private:
  std::vector<std::pair<const char*, double>> vals_;
};

// printf-style logging to stderr when DEBUG >= level
void debug_log(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
std::string strformat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// IEEE half <-> float in software (round to nearest even, NaN payloads kept): C++'s _Float16 is not on every target
// GCC builds for (aarch64's g++ 12 lacks it)
uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
// Opens `path` for reading without blocking on it, refusing anything but a regular file (a FIFO, a device such as
// /dev/zero, a directory) before a read could block or run forever. The fd is O_CLOEXEC and blocking; -1 with `why`
// set ("cannot open: ...", "not a regular file (a named pipe)") otherwise. Every open of a path we read goes through here.
int open_regular(const std::string& path, std::string& why);
std::string join_ints(const std::vector<int64_t>& v, const char* sep = ",");
std::string shape_str(const std::vector<int64_t>& v);  // "(3,4)"
int64_t prod(const std::vector<int64_t>& v);
uint64_t fnv1a(const void* data, size_t n, uint64_t seed = 1469598103934665603ull);
// boost's combine followed by a multiply-xorshift round, so chains of similar nodes (x+1, (x+1)+1, ...) spread over
// every bit instead of cycling in the low bits hash tables index by
inline size_t hash_combine(size_t h, size_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

// A thread-safe map that keeps its `limit` most recently used entries (the schedule and program caches).
template <class K, class V, class H = std::hash<K>>
class LruCache {
 public:
  explicit LruCache(size_t limit) : limit_(std::max<size_t>(limit, 1)) {}
  std::optional<V> get(const K& k) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = map_.find(k);
    if (it == map_.end()) return std::nullopt;
    list_.splice(list_.begin(), list_, it->second);
    return it->second->second;
  }
  // stores v unless another thread stored k first; returns what is cached
  V put(const K& k, V v) {
    std::lock_guard<std::mutex> lk(mu_);
    if (auto it = map_.find(k); it != map_.end()) return it->second->second;
    list_.emplace_front(k, std::move(v));
    try {
      map_.emplace(k, list_.begin());
    } catch (...) {  // out of memory: leave no list entry without its map entry
      list_.pop_front();
      throw;
    }
    for (; list_.size() > limit_; list_.pop_back()) map_.erase(list_.back().first);
    return list_.front().second;
  }
  size_t size() {
    std::lock_guard<std::mutex> lk(mu_);
    return list_.size();
  }

 private:
  std::mutex mu_;
  size_t limit_;
  std::list<std::pair<K, V>> list_;
  std::unordered_map<K, typename std::list<std::pair<K, V>>::iterator, H> map_;
};

}  // namespace tg
