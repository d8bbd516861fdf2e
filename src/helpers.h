// Helpers: errors, env/config variables with scoped overrides (tinygrad's getenv/Context), DEBUG logging.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
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

// A config variable (DEBUG, SPEC, NOOPT, BEAM, ...): reads the environment once, can be overridden in a scope.
struct ContextVar {
  const char* name;
  int64_t dflt;
  mutable std::atomic<int64_t> env_{INT64_MIN};  // the environment's value, read once
  int64_t get() const;
  operator int64_t() const { return get(); }
};
extern const ContextVar DEBUG, SPEC, NOOPT, BEAM, CACHELEVEL;
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

// printf-style logging to stderr when DEBUG >= level
void debug_log(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
std::string strformat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
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

}  // namespace tg
