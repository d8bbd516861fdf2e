#include "runtime/diskcache.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <vector>

#include "helpers.h"

namespace tg {

static std::mutex mu;

DiskCache& DiskCache::get() {
  static DiskCache* c = new DiskCache();  // lives for the process: compiles may run during static destruction
  return *c;
}

// the user's cache base: $XDG_CACHE_HOME (absolute only, as the XDG spec says), else $HOME/.cache, else the passwd home
static std::string cache_base() {
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
static std::string check_dir(const std::string& d, bool allow_root_sticky) {
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
static std::string make_dir(const std::string& d) {
  for (size_t i = 1; i <= d.size(); i++)
    if ((i == d.size() || d[i] == '/') && ::mkdir(d.substr(0, i).c_str(), 0700) != 0 && errno != EEXIST)
      return "can't create " + d.substr(0, i) + ": " + std::strerror(errno);
  return "";
}

void DiskCache::disable(const std::string& why) {
  if (!disabled_) std::fprintf(stderr, "tinygrad: the kernel disk cache is not usable (%s); continuing without it\n", why.c_str());
  disabled_ = true, dir_.clear();
}

std::string tinygrad_cache_dir(const std::string& sub, std::string& err) {
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

const std::string& DiskCache::dir() {
  if (checked_ || disabled_) return dir_;
  checked_ = true;
  std::string err;
  dir_ = tinygrad_cache_dir("kernels", err);
  if (!err.empty()) disable(err);
  return dir_;
}

std::string DiskCache::lookup(const std::string& key) {
  if (CACHELEVEL.get() <= 0) return "";
  std::lock_guard<std::mutex> lk(mu);
  if (dir().empty()) return "";
  std::string p = dir_ + "/" + key;
  if (::access(p.c_str(), R_OK) != 0) return "";
  ::utimensat(AT_FDCWD, p.c_str(), nullptr, 0);  // mtime is the age eviction goes by
  return p;
}

std::string DiskCache::store(const std::string& file, const std::string& key) {
  if (CACHELEVEL.get() <= 0) return "";
  std::lock_guard<std::mutex> lk(mu);
  if (dir().empty()) return "";
  std::string p = dir_ + "/" + key;
  // a temp name in the cache dir, then rename: other processes see the whole file or none (rename can't cross filesystems)
  std::string tmp = p + strformat(".tmp.%d", int(getpid()));
  std::string err;
  {
    FILE* in = std::fopen(file.c_str(), "rb");
    FILE* out = in ? std::fopen(tmp.c_str(), "wb") : nullptr;
    char buf[1 << 16];
    size_t n;
    bool ok = in && out;
    while (ok && (n = std::fread(buf, 1, sizeof buf, in)) > 0) ok = std::fwrite(buf, 1, n, out) == n;
    if (in) std::fclose(in);
    if (out && std::fclose(out) != 0) ok = false;
    if (!ok) err = "can't write " + tmp + ": " + std::strerror(errno);
  }
  if (err.empty() && ::rename(tmp.c_str(), p.c_str()) != 0) err = "can't rename into " + p + ": " + std::strerror(errno);
  if (!err.empty()) {
    ::unlink(tmp.c_str());
    disable(err);
    return "";
  }
  if (stores_++ % 64 == 0) evict();
  return p;
}

// keep the directory under TG_DISK_CACHE_MB: drop the least recently used kernels down to 90% of it
void DiskCache::evict() {
  static const int64_t cap = getenv_int("TG_DISK_CACHE_MB", 512) << 20;
  DIR* d = ::opendir(dir_.c_str());
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
    std::string p = dir_ + "/" + e->d_name;
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

std::string DiskCache::key(const std::string& s) {
  return strformat("%016llx%016llx", (unsigned long long)fnv1a(s.data(), s.size()), (unsigned long long)fnv1a(s.data(), s.size(), 0x84222325cbf29ce4ull));
}

const std::string& DiskCache::scratch_dir() {
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

std::string DiskCache::bytes(const std::string& key, const std::function<std::string()>& build) {
  if (std::string f = lookup(key); !f.empty()) {
    std::ifstream in(f, std::ios::binary);
    std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.good() || in.eof())
      if (!b.empty()) return b;
  }
  std::string b = build();
  if (CACHELEVEL.get() > 0) {
    static std::atomic<uint64_t> n{0};
    std::string tmp = scratch_dir() + "/" + key + strformat(".%llu", (unsigned long long)++n);
    if (std::ofstream(tmp, std::ios::binary).write(b.data(), std::streamsize(b.size())).good()) store(tmp, key);
    ::unlink(tmp.c_str());
  }
  return b;
}

}  // namespace tg
