#include "runtime/diskcache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <fcntl.h>
#include <sys/file.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "helpers.h"
#include "runtime/device.h"
#include "runtime/dynlib.h"

namespace tg {
namespace {

// SQLite, loaded on first use (runtime/dynlib.h): the calls and constants the BEAM cache needs, as sqlite3.h declares
// them (its C ABI is stable). Without libsqlite3.so.0 the BEAM cache is off and BEAM searches every time.
struct sqlite3;
struct sqlite3_stmt;
enum : int { SQLITE_OK = 0, SQLITE_BUSY = 5, SQLITE_LOCKED = 6, SQLITE_ROW = 100, SQLITE_DONE = 101 };
enum : int { SQLITE_OPEN_READWRITE = 0x2, SQLITE_OPEN_CREATE = 0x4, SQLITE_OPEN_FULLMUTEX = 0x10000 };
using sqlite3_destructor_type = void (*)(void*);
const sqlite3_destructor_type SQLITE_TRANSIENT = reinterpret_cast<sqlite3_destructor_type>(-1);
struct SQLite {
  int (*sqlite3_open_v2)(const char*, sqlite3**, int, const char*) = nullptr;
  int (*sqlite3_close_v2)(sqlite3*) = nullptr;
  int (*sqlite3_busy_handler)(sqlite3*, int (*)(void*, int), void*) = nullptr;
  int (*sqlite3_exec)(sqlite3*, const char*, int (*)(void*, int, char**, char**), void*, char**) = nullptr;
  int (*sqlite3_prepare_v2)(sqlite3*, const char*, int, sqlite3_stmt**, const char**) = nullptr;
  int (*sqlite3_bind_text)(sqlite3_stmt*, int, const char*, int, sqlite3_destructor_type) = nullptr;
  int (*sqlite3_step)(sqlite3_stmt*) = nullptr;
  int (*sqlite3_reset)(sqlite3_stmt*) = nullptr;
  int (*sqlite3_finalize)(sqlite3_stmt*) = nullptr;
  const unsigned char* (*sqlite3_column_text)(sqlite3_stmt*, int) = nullptr;
  const char* (*sqlite3_errmsg)(sqlite3*) = nullptr;
  void (*sqlite3_free)(void*) = nullptr;
  std::string error;  // why SQLite can't be used
};
const SQLite& sqlite() {
  static const SQLite* api = [] {
    auto* a = new SQLite();
    void* h = dl_open_first({"libsqlite3.so.0", "libsqlite3.so"});
    if (!h) return a->error = "no SQLite (libsqlite3.so.0): install libsqlite3-0", a;
    const char* lib = "libsqlite3.so.0";
    TG_DLSYM(a, h, sqlite3_open_v2, lib); TG_DLSYM(a, h, sqlite3_close_v2, lib); TG_DLSYM(a, h, sqlite3_busy_handler, lib);
    TG_DLSYM(a, h, sqlite3_exec, lib); TG_DLSYM(a, h, sqlite3_prepare_v2, lib); TG_DLSYM(a, h, sqlite3_bind_text, lib);
    TG_DLSYM(a, h, sqlite3_step, lib); TG_DLSYM(a, h, sqlite3_reset, lib); TG_DLSYM(a, h, sqlite3_finalize, lib);
    TG_DLSYM(a, h, sqlite3_column_text, lib); TG_DLSYM(a, h, sqlite3_errmsg, lib); TG_DLSYM(a, h, sqlite3_free, lib);
    return a;
  }();
  return *api;
}

// the user's cache base: $XDG_CACHE_HOME (absolute only, as the XDG spec says), else $HOME/.cache, else the passwd home
std::string cache_base() {
  std::string x = getenv_str("XDG_CACHE_HOME");
  if (!x.empty() && x[0] == '/') return x;
  std::string home = getenv_str("HOME");
  if (home.empty() || home[0] != '/') {
    struct passwd pw, *res = nullptr;
    char buf[4096];
    if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res && res->pw_dir && res->pw_dir[0] == '/') home = res->pw_dir;
  }
  return home.empty() ? "" : home + "/.cache";
}

// A directory we may load code from: a real directory owned by us (or root, for the base) that no one else can write to,
// unless it is sticky (others can't rename or remove our entries there).
std::string check_dir(const std::string& d, bool allow_root_sticky) {
  struct stat st;
  if (::lstat(d.c_str(), &st) != 0) return "can't stat " + d + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return d + " is not a directory";
  bool ours = st.st_uid == geteuid() || (allow_root_sticky && st.st_uid == 0);
  if (!ours) return d + " is owned by another user";
  bool shared = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (shared && !(allow_root_sticky && (st.st_mode & S_ISVTX))) return d + " is writable by other users";
  return "";
}
// mkdir -p, new directories private to this user
std::string make_dir(const std::string& d) {
  for (size_t i = 1; i <= d.size(); i++)
    if ((i == d.size() || d[i] == '/') && ::mkdir(d.substr(0, i).c_str(), 0700) != 0 && errno != EEXIST)
      return "can't create " + d.substr(0, i) + ": " + std::strerror(errno);
  return "";
}

// <user cache dir>/tinygrad[/sub], made if missing and checked (ours, not writable by others); "" with `err` saying why not
std::string cache_dir(const std::string& sub, std::string& err) {
  std::string base = cache_base();
  if (base.empty()) return err = "no home directory: set XDG_CACHE_HOME or HOME", "";
  err = make_dir(base);
  if (err.empty()) err = check_dir(base, true);
  std::string d = base + "/tinygrad";
  for (const std::string& p : {d, sub.empty() ? d : d + "/" + sub}) {
    if (err.empty()) err = make_dir(p);
    if (err.empty()) err = check_dir(p, false);
  }
  if (!sub.empty()) d += "/" + sub;
  if (err.empty() && ::access(d.c_str(), W_OK | X_OK) != 0) err = d + " is not writable";
  return err.empty() ? d : "";
}

// a cache that can't be used says why once and stays off for the process
void turn_off(bool& off, const std::string& what, const std::string& why) {
  if (!off) std::fprintf(stderr, "tinygrad: the %s is not usable (%s); going on without it\n", what.c_str(), why.c_str());
  off = true;
}

// 128 bits of hash in hex: a fixed-size key for texts that run to kilobytes (a source, an AST)
std::string hash_key(const std::string& s) {
  return strformat("%016llx%016llx", (unsigned long long)fnv1a(s.data(), s.size()), (unsigned long long)fnv1a(s.data(), s.size(), 0x84222325cbf29ce4ull));
}

// The kernel files: a key's bytes in <cache dir>/kernels/<key>, kept under TG_DISK_CACHE_MB (least recently used out first).
struct KernelFiles {
  std::mutex mu;
  std::string dir;
  bool checked = false, off = false;
  uint64_t stores = 0;
  int64_t written = 0;  // bytes stored since the last eviction pass

  // the directory, checked on first use; false under CACHELEVEL=0 or when it can't be used
  bool usable() {
    if (CACHELEVEL <= 0 || off) return false;
    if (!checked) {
      checked = true;
      std::string err;
      if ((dir = cache_dir("kernels", err)).empty()) turn_off(off, "kernel disk cache", err);
    }
    return !off;
  }
  // the bytes stored as `key`, "" when there are none
  std::string get(const std::string& key) {
    std::lock_guard<std::mutex> lk(mu);
    if (!usable()) return "";
    std::string p = dir + "/" + key, why, bin;
    int fd = open_regular(p, why);  // a FIFO or device put in the cache folder is a miss, not a wait
    if (fd < 0) return "";
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ::close(fd), "";
      bin.append(buf, size_t(n));
    }
    ::close(fd);
    ::utimensat(AT_FDCWD, p.c_str(), nullptr, 0);  // mtime is the age eviction goes by
    return bin;
  }
  void put(const std::string& key, const std::string& bin) {
    std::lock_guard<std::mutex> lk(mu);
    if (!usable()) return;
    // a temp name in the cache dir, then rename: other processes see the whole file or none (rename can't cross filesystems)
    std::string p = dir + "/" + key, tmp = p + strformat(".tmp.%d", int(getpid())), err;
    ::unlink(tmp.c_str());  // O_EXCL below: never open (and block on) a FIFO or follow a link someone left there
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    bool ok = fd >= 0;
    for (size_t at = 0; ok && at < bin.size();) {
      ssize_t n = ::write(fd, bin.data() + at, bin.size() - at);
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0, at += ok ? size_t(n) : 0;
    }
    int werr = errno;
    if (fd >= 0 && ::close(fd) != 0 && ok) ok = false, werr = errno;
    if (!ok) err = "can't write " + tmp + ": " + std::strerror(werr);
    else if (::rename(tmp.c_str(), p.c_str()) != 0) err = "can't rename into " + p + ": " + std::strerror(errno);
    if (!err.empty()) return (void)::unlink(tmp.c_str()), turn_off(off, "kernel disk cache", err);
    // every 64 stores, and whenever a tenth of the cap was written since the last look
    written += int64_t(bin.size());
    if (stores++ % 64 == 0 || written > cap() / 10) evict(), written = 0;
  }
  static int64_t cap() {
    static const int64_t c = getenv_int("TG_DISK_CACHE_MB", 512) << 20;
    return c;
  }
  // down to 90% of the cap when over it, oldest first
  void evict() {
    const int64_t cap = KernelFiles::cap();
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    struct Entry {
      std::string path;
      int64_t size;
      time_t mtime;
    };
    std::vector<Entry> files;
    int64_t total = 0;
    time_t now = std::time(nullptr);
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string p = dir + "/" + e->d_name;
      struct stat st;
      if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      bool temp = std::strstr(e->d_name, ".tmp.") != nullptr;
      if (temp && now - st.st_mtime < 3600) continue;  // another process may be writing it
      files.push_back({p, int64_t(st.st_size), temp ? 0 : st.st_mtime});
      total += int64_t(st.st_size);
    }
    ::closedir(d);
    if (total <= cap) return;
    std::sort(files.begin(), files.end(), [](const Entry& a, const Entry& b) { return a.mtime < b.mtime; });
    for (auto& f : files) {
      if (total <= cap / 10 * 9) break;
      if (::unlink(f.path.c_str()) == 0) total -= f.size;
    }
  }
};
KernelFiles& kernel_files() {
  static KernelFiles* k = new KernelFiles();  // lives for the process: compiles may run during static destruction
  return *k;
}

// The BEAM cache: one SQLite table, key -> opts_str. WAL and a busy handler let processes read while one writes and
// queue writers instead of failing; each write is one statement, so a crash mid-write leaves the old row or the new.
// A get or put waits for other processes' locks at most kBusyWait of wall time in all (SQLite's waits and our retries
// together, by the clock): a database held longer than that (a process inside a long transaction, a stuck lock) turns
// the cache off for this process, and BEAM goes on searching without it, rather than stall every kernel.
class BeamDB {
 public:
  static constexpr std::chrono::milliseconds kBusyWait{2000};
  std::optional<std::string> get(const std::string& key) {
    std::lock_guard<std::mutex> lk(mu_);
    deadline_ = Clock::now() + kBusyWait;
    sqlite3_stmt* st = prepare("SELECT opts FROM beam_search_v2 WHERE key = ?1", key);
    std::optional<std::string> r;
    if (!st) return r;
    int rc = step(st);
    if (rc == SQLITE_ROW) r = reinterpret_cast<const char*>(sqlite().sqlite3_column_text(st, 0));
    else if (rc != SQLITE_DONE) disable(why(rc));
    sqlite().sqlite3_finalize(st);
    return r;
  }
  void put(const std::string& key, const std::string& opts) {
    std::lock_guard<std::mutex> lk(mu_);
    deadline_ = Clock::now() + kBusyWait;
    sqlite3_stmt* st = prepare("INSERT OR REPLACE INTO beam_search_v2 (key, opts) VALUES (?1, ?2)", key);
    if (!st) return;
    sqlite().sqlite3_bind_text(st, 2, opts.c_str(), int(opts.size()), SQLITE_TRANSIENT);
    if (int rc = step(st); rc != SQLITE_DONE) disable(why(rc));
    sqlite().sqlite3_finalize(st);
  }

 private:
  using Clock = std::chrono::steady_clock;
  // SQLite answers BUSY without calling the busy handler where waiting could deadlock: a transaction that read first and
  // then writes (CREATE TABLE IF NOT EXISTS, an INSERT) while another process writes, or the switch to WAL while another
  // process creates the file. Those are retried here, until the same deadline, so writers queue.
  template <class F>
  int retry_busy(F&& f) {
    int rc = SQLITE_BUSY;
    for (int ms = 1;; ms = std::min(ms * 2, 50)) {
      rc = f();
      if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) return rc;
      if (Clock::now() >= deadline_) return rc;
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
  }
  // SQLite's own waits (a lock another connection holds): short sleeps until the deadline, then BUSY
  static int on_busy(void* self, int n) {
    if (Clock::now() >= static_cast<BeamDB*>(self)->deadline_) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1 << std::min(n, 6), 50)));
    return 1;
  }
  int step(sqlite3_stmt* st) {
    return retry_busy([&] {
      int rc = sqlite().sqlite3_step(st);
      if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) sqlite().sqlite3_reset(st);
      return rc;
    });
  }
  // a statement with ?1 bound to `key`, or null when the database is off or unusable
  sqlite3_stmt* prepare(const char* sql, const std::string& key) {
    if (CACHELEVEL <= 0 || !open()) return nullptr;
    sqlite3_stmt* st = nullptr;
    if (sqlite().sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK) return disable(sqlite().sqlite3_errmsg(db_)), nullptr;
    sqlite().sqlite3_bind_text(st, 1, key.c_str(), int(key.size()), SQLITE_TRANSIENT);
    return st;
  }
  bool open() {
    if (db_ || off_) return db_ != nullptr;
    if (!sqlite().error.empty()) return disable(sqlite().error), false;
    path_ = getenv_str("CACHEDB");
    if (path_.empty()) {
      std::string err, dir = cache_dir("", err);
      if (dir.empty()) return disable(err), false;
      path_ = dir + "/cache.db";
    }
    if (sqlite().sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK)
      return disable(db_ ? sqlite().sqlite3_errmsg(db_) : "can't open"), false;
    sqlite().sqlite3_busy_handler(db_, on_busy, this);
    // a file that isn't a database fails here, on its first read. v2: the actions gained PACK, so v1 choices (searched
    // without it) are left behind
    for (const char* sql : {"PRAGMA journal_mode=WAL", "CREATE TABLE IF NOT EXISTS beam_search_v2 (key TEXT PRIMARY KEY, opts TEXT NOT NULL)"}) {
      char* msg = nullptr;
      auto exec = [&] { return sqlite().sqlite3_free(msg), msg = nullptr, sqlite().sqlite3_exec(db_, sql, nullptr, nullptr, &msg); };
      if (retry_busy(exec) != SQLITE_OK) {
        std::string why = msg ? msg : sqlite().sqlite3_errmsg(db_);
        sqlite().sqlite3_free(msg);
        return disable(why), false;
      }
    }
    return true;
  }
  std::string why(int rc) {
    bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    if (busy) return strformat("locked by another connection for over %lld ms", (long long)kBusyWait.count());
    return sqlite().sqlite3_errmsg(db_);
  }
  void disable(const std::string& why) {
    turn_off(off_, "BEAM cache " + (path_.empty() ? "database" : path_), why);
    if (db_) sqlite().sqlite3_close_v2(db_), db_ = nullptr;
  }
  std::mutex mu_;
  Clock::time_point deadline_;  // of the get or put in progress
  sqlite3* db_ = nullptr;
  bool off_ = false;
  std::string path_;
};
BeamDB& beam_db() {
  static BeamDB* c = new BeamDB();  // lives for the process: kernels may compile during static destruction
  return *c;
}

// a lock's mutex and its file, opened on first use and kept open (-1: none)
struct NamedLock {
  std::mutex mu;
  int fd = -1;
};
NamedLock& named_lock(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<NamedLock>> locks;
  std::lock_guard<std::mutex> lk(mu);
  auto& l = locks[name];
  if (!l) {
    l = std::make_unique<NamedLock>();
    std::string err, d = cache_dir("locks", err);
    if (!d.empty()) l->fd = ::open((d + "/" + name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  }
  return *l;
}
// The GNU build ID of the module this code is linked into (libtinygrad.so, or a program built with the static library),
// in hex; "" when it has none. A rendered program is only reused by the build that rendered it.
const std::string& build_id() {
  static const std::string id = [] {
    struct Find {
      uintptr_t addr;
      std::string hex;
    } f{reinterpret_cast<uintptr_t>(&hash_key), ""};
    dl_iterate_phdr(
        [](struct dl_phdr_info* info, size_t, void* arg) {
          auto* f = static_cast<Find*>(arg);
          bool here = false;
          for (int i = 0; i < info->dlpi_phnum && !here; i++) {
            const auto& ph = info->dlpi_phdr[i];
            uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
            here = ph.p_type == PT_LOAD && f->addr >= lo && f->addr < lo + ph.p_memsz;
          }
          if (!here) return 0;
          for (int i = 0; i < info->dlpi_phnum; i++) {
            const auto& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_NOTE) continue;
            auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
            for (size_t at = 0; at + sizeof(ElfW(Nhdr)) <= ph.p_memsz;) {
              auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p + at);
              size_t name = (n->n_namesz + 3) & ~size_t(3), desc = (n->n_descsz + 3) & ~size_t(3);
              const unsigned char* d = p + at + sizeof(ElfW(Nhdr)) + name;
              if (at + sizeof(ElfW(Nhdr)) + name + desc > ph.p_memsz) break;
              if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(d - name, "GNU", 4) == 0)
                for (size_t k = 0; k < n->n_descsz; k++) f->hex += strformat("%02x", d[k]);
              at += sizeof(ElfW(Nhdr)) + name + desc;
            }
          }
          return 1;
        },
        &f);
    return f.hex;
  }();
  return id;
}
// a program record's file name: the build and the record's identity, hashed
std::string program_key(const std::string& what) { return "p" + hash_key("program v1\n" + build_id() + "\n" + what); }
}  // namespace

std::string program_cache_get(const std::string& what) { return build_id().empty() ? "" : kernel_files().get(program_key(what)); }
void program_cache_put(const std::string& what, const std::string& record) {
  if (!build_id().empty()) kernel_files().put(program_key(what), record);
}

std::optional<std::string> beam_cache_get(const std::string& what) {
  return IGNORE_BEAM_CACHE ? std::nullopt : beam_db().get(hash_key(what));
}
void beam_cache_put(const std::string& what, const std::string& opts) { beam_db().put(hash_key(what), opts); }

// the mutex first: flock is per open file, so this process's threads would all pass it together
UserLock::UserLock(const std::string& name) {
  NamedLock& l = named_lock(name);
  lk_ = std::unique_lock<std::mutex>(l.mu);
  fd_ = l.fd;
  while (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
}
UserLock::~UserLock() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

[[noreturn]] void compile_failed(const std::string& name, const std::string& compiler, const std::string& log, const std::string& src) {
  fail(TG_ERROR_COMPILE, "compiling kernel " + name + " with " + compiler + " failed:\n" + log + "\n--- source ---\n" + src);
}

std::shared_ptr<Program> Compiler::compile(const std::string& name, const std::string& src) {
  std::string key = hash_key(ident_ + "\n" + src);
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (auto it = progs_.find(key); it != progs_.end()) return it->second;
  }
  std::shared_ptr<Program> p;
  std::string bin = kernel_files().get(key);
  try {
    if (!bin.empty()) p = load(name, bin);
  } catch (const Error&) {  // a file cut short, or a binary the driver no longer takes: built again below
  }
  if (!p) {
    bin = build(name, src);
    GlobalCounters::compile_count++;
    kernel_files().put(key, bin);
    p = load(name, bin);
  }
  p->name = name;
  std::lock_guard<std::mutex> lk(mu_);
  return progs_.emplace(key, p).first->second;
}

}  // namespace tg
