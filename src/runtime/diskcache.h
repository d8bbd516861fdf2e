// The on-disk cache of compiled kernels, shared by every compiler that produces loadable files.
// Code is only ever loaded from a directory this user owns and nobody else can write; a cache that can't be used is
// reported once on stderr and the process goes on without it. Its size is capped (least recently used files go first).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace tg {

// <user cache dir>/tinygrad[/sub]: $XDG_CACHE_HOME, else $HOME/.cache, else the passwd home's; made if missing and
// checked as the kernel cache is (ours, not writable by others). "" with `err` saying why when it can't be used.
std::string tinygrad_cache_dir(const std::string& sub, std::string& err);

class DiskCache {
 public:
  static DiskCache& get();
  // the file that holds `key` (empty when the disk cache is off or unusable); refreshes its age when it exists
  std::string lookup(const std::string& key);
  // moves a finished file into the cache as `key` (atomic rename); returns its path, or "" if the cache can't take it
  std::string store(const std::string& file, const std::string& key);
  // a private directory (0700, removed at exit) for files that are built and loaded without the disk cache
  static const std::string& scratch_dir();
  // a file name for what `ident` (compiler, flags, source) builds: 128 bits of hash in hex
  static std::string key(const std::string& ident);
  // the bytes stored as `key`, else build()'s, stored as `key` (both only with CACHELEVEL>0): GPU binaries, which are
  // loaded from memory
  std::string bytes(const std::string& key, const std::function<std::string()>& build);

 private:
  DiskCache() = default;
  const std::string& dir();  // validated once; "" when unusable
  void evict();
  void disable(const std::string& why);
  std::string dir_;
  bool checked_ = false, disabled_ = false;
  uint64_t stores_ = 0;
};

}  // namespace tg
