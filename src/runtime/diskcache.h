// The caches under <user cache dir>/tinygrad ($XDG_CACHE_HOME, else $HOME/.cache, else the passwd home's): compiled
// kernels and rendered programs, one file each in kernels/ (Compiler::compile, every device's one path), and BEAM's
// choices in SQLite. All are off with CACHELEVEL=0. Code is only loaded from a directory this user owns and nobody else
// can write; a cache that can't be used is reported once on stderr and the process goes on without it.
#pragma once
#include <mutex>
#include <optional>
#include <string>

namespace tg {

// The BEAM cache: table beam_search_v2 in $CACHEDB, default <user cache dir>/tinygrad/cache.db. `what` is the search's
// identity as text (AST, device, target, width), stored as a 128-bit hash; get finds nothing under IGNORE_BEAM_CACHE=1.
std::optional<std::string> beam_cache_get(const std::string& what);
void beam_cache_put(const std::string& what, const std::string& opts);

// Rendered programs (codegen's records: a source and its launch facts) by the text that decides them (the optimized
// AST, the device's compiler and target), in kernels/ beside the compiled bytes and under the same cap. Only the library
// build that wrote a record reads it (its GNU build ID is part of the key; without one there is no such cache).
// get: "" when there is none. Off with CACHELEVEL=0.
std::string program_cache_get(const std::string& what);
void program_cache_put(const std::string& what, const std::string& record);

// Held while a driver works on files it shares between this user's processes without locking them itself (PoCL's kernel
// cache): a mutex for this process's threads and an flock on <user cache dir>/tinygrad/locks/<name>. Only the mutex
// when that directory can't be used. A process that dies holding it lets go (flock).
class UserLock {
 public:
  explicit UserLock(const std::string& name);
  ~UserLock();
  UserLock(const UserLock&) = delete;
  UserLock& operator=(const UserLock&) = delete;

 private:
  std::unique_lock<std::mutex> lk_;
  int fd_;
};

}  // namespace tg
