// The kernel disk cache, seen from separate processes (tg_cache_probe, built next to this binary): on every device a second
// process finds the first one's kernels and compiles nothing, and reads its rendered programs back; a damaged file is
// built again; cache paths with shell characters are only paths; a cache that can't be used (not a directory, writable
// by others) is reported once and skipped, and nothing is loaded from it; the size cap evicts. Every test makes its own
// empty cache directory, so none depends on what an earlier run left on disk.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "subprocess.h"

namespace {

using tg::test::quote;
using tg::test::slurp;
using tg::test::TempDir;

std::string probe_path() { return tg::test::sibling_binary("tg_cache_probe"); }
struct ProbeRun {
  int rc;
  std::string out, err;
  long compiles() const {
    auto p = out.find("compiles=");
    return p == std::string::npos ? -1 : std::atol(out.c_str() + p + 9);
  }
};
// runs the probe with `env` (VAR=value words, already quoted) and argument k
ProbeRun probe(const TempDir& scratch, const std::string& env, double k = 1) {
  std::string o = scratch.path + "/probe.out", e = scratch.path + "/probe.err";
  std::string cmd = "env -u XDG_CACHE_HOME -u CACHELEVEL -u TG_DISK_CACHE_MB " + env + " " + quote(probe_path()) + " " + std::to_string(k) + " >" + quote(o) +
                    " 2>" + quote(e);
  int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(o), slurp(e)};
}
// the entries of `dir` (hidden ones aside) whose names start with `prefix`: "p" lists the rendered-program records
std::vector<std::string> names_in(const std::string& dir, const std::string& prefix = "") {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d))
      if (e->d_name[0] != '.' && std::string(e->d_name).starts_with(prefix)) names.push_back(e->d_name);
    ::closedir(d);
  }
  return names;
}
size_t files_in(const std::string& dir) { return names_in(dir).size(); }
const double kResult = 2 * (120 + 16 * 1);  // ((0..15) + 1) * 2, summed

TEST(DiskCache, SecondProcessFindsKernelsAndCompilesNothing) {
  TempDir t;
  std::string env = "XDG_CACHE_HOME=" + quote(t.path + "/cache");
  ProbeRun a = probe(t, env), b = probe(t, env);
  ASSERT_EQ(a.rc, 0) << a.err;
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_GE(a.compiles(), 1) << "a cold cache compiles: " << a.out;
  EXPECT_EQ(b.compiles(), 0) << "the second process compiled: " << b.out;
  for (auto* r : {&a, &b}) EXPECT_NE(r->out.find("result=" + std::to_string(int(kResult))), std::string::npos) << r->out;
  EXPECT_GE(files_in(t.path + "/cache/tinygrad/kernels"), 1u);
  EXPECT_EQ(a.err, "");
}

TEST(DiskCache, ShellCharactersInThePathAreJustAPath) {
  TempDir t;
  std::string marker = t.path + "/pwned";
  for (std::string dir : {t.path + "/a;touch " + marker + ";", t.path + "/with space", t.path + "/$(touch " + marker + ")", t.path + "/`id`'\"q"}) {
    ProbeRun r = probe(t, "XDG_CACHE_HOME=" + quote(dir));
    EXPECT_EQ(r.rc, 0) << dir << ": " << r.err;
    EXPECT_GE(r.compiles(), 1) << dir;
    EXPECT_GE(files_in(dir + "/tinygrad/kernels"), 1u) << "the cache should be used at " << dir;
    EXPECT_EQ(::access(marker.c_str(), F_OK), -1) << "a command in the cache path ran: " << dir;
    ProbeRun again = probe(t, "XDG_CACHE_HOME=" + quote(dir));
    EXPECT_EQ(again.compiles(), 0) << dir;
  }
}

TEST(DiskCache, UnusableDirIsReportedOnceAndSkipped) {
  TempDir t;
  std::string file = t.path + "/not-a-dir";
  std::ofstream(file) << "x";
  ProbeRun r = probe(t, "XDG_CACHE_HOME=" + quote(file));
  EXPECT_EQ(r.rc, 0) << "realize must work without a disk cache: " << r.err;
  EXPECT_NE(r.out.find("result="), std::string::npos);
  size_t first = r.err.find("kernel disk cache is not usable");
  EXPECT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("kernel disk cache is not usable", first + 1), std::string::npos) << "reported more than once:\n" << r.err;
}

// kernels are never loaded from a directory other users can write: a planted file there must not be used
TEST(DiskCache, DirWritableByOthersIsNotLoadedFrom) {
  TempDir t;
  std::string base = t.path + "/shared", k = base + "/tinygrad/kernels";
  ProbeRun warm = probe(t, "XDG_CACHE_HOME=" + quote(base));  // fills the cache...
  ASSERT_EQ(warm.rc, 0) << warm.err;
  ASSERT_GE(files_in(k), 1u);
  ASSERT_EQ(::chmod(k.c_str(), 0777), 0);  // ...which then becomes writable by everyone
  ProbeRun r = probe(t, "XDG_CACHE_HOME=" + quote(base));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_GE(r.compiles(), 1) << "kernels were loaded from a world-writable directory";
  EXPECT_NE(r.err.find("writable by other users"), std::string::npos) << r.err;
}

TEST(DiskCache, CacheLevelZeroWritesNothing) {
  TempDir t;
  ProbeRun r = probe(t, "CACHELEVEL=0 XDG_CACHE_HOME=" + quote(t.path + "/c"));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_GE(r.compiles(), 1);
  EXPECT_EQ(files_in(t.path + "/c/tinygrad/kernels"), 0u);
}

// every device takes the one cached path: a second process loads what the first built; CACHELEVEL=0 writes nothing
TEST(DiskCache, EveryDeviceReadsAndWritesItAlike) {
  for (const char* dev : {"CPU", "CPU:CLANG", "CL"}) {
    SCOPED_TRACE(dev);
    TempDir t;
    std::string env = std::string("DEV=") + dev + " XDG_CACHE_HOME=" + quote(t.path + "/c"), k = t.path + "/c/tinygrad/kernels";
    ProbeRun a = probe(t, env);
    if (a.rc != 0 && a.err.find("not available") != std::string::npos) continue;  // no OpenCL driver here
    ProbeRun b = probe(t, env);
    size_t kept = files_in(k);
    ProbeRun off = probe(t, "CACHELEVEL=0 " + env), off_new = probe(t, "CACHELEVEL=0 " + env, 2);
    ASSERT_EQ(a.rc, 0) << a.err;
    EXPECT_GE(a.compiles(), 1);
    EXPECT_EQ(b.compiles(), 0) << b.out << b.err;
    EXPECT_GE(off.compiles(), 1) << "CACHELEVEL=0 reads nothing";
    EXPECT_EQ(off_new.rc, 0) << off_new.err;
    EXPECT_EQ(files_in(k), kept) << "CACHELEVEL=0 writes nothing";
  }
}

// a file cut short (a full disk, a crash in another process) is not loaded: the kernel is built again and replaces it
TEST(DiskCache, DamagedFilesAreBuiltAgain) {
  for (const char* dev : {"CPU", "CPU:CLANG"}) {
    SCOPED_TRACE(dev);
    TempDir t;
    std::string env = std::string("DEV=") + dev + " XDG_CACHE_HOME=" + quote(t.path + "/c"), k = t.path + "/c/tinygrad/kernels";
    ASSERT_EQ(probe(t, env).rc, 0);
    auto names = names_in(k);
    ASSERT_FALSE(names.empty());
    for (auto& n : names) EXPECT_EQ(::truncate((k + "/" + n).c_str(), 100), 0) << n;
    ProbeRun r = probe(t, env), again = probe(t, env);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_GE(r.compiles(), 1);
    EXPECT_NE(r.out.find("result=" + std::to_string(int(kResult))), std::string::npos) << r.out;
    EXPECT_EQ(again.compiles(), 0) << "the rebuilt kernels replace the damaged files";
  }
}

TEST(DiskCache, SizeCapEvicts) {
  TempDir t;
  std::string env = "TG_DISK_CACHE_MB=0 XDG_CACHE_HOME=" + quote(t.path + "/c");
  ProbeRun a = probe(t, env), b = probe(t, env);
  EXPECT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(files_in(t.path + "/c/tinygrad/kernels"), 0u) << "a 0 MB cap keeps nothing";
  EXPECT_GE(b.compiles(), 1) << "nothing was kept, so the second process compiles again";
}

}  // namespace

// a FIFO where a cached kernel should be is a miss, not a wait for a writer that never comes (and a FIFO at a temp
// name is never opened for writing)
TEST(DiskCache, AFifoInTheCacheIsAMissNotAWait) {
  TempDir t;
  std::string env = "XDG_CACHE_HOME=" + quote(t.path + "/cache"), kdir = t.path + "/cache/tinygrad/kernels";
  ASSERT_EQ(probe(t, env).rc, 0);
  std::vector<std::string> names = names_in(kdir);
  ASSERT_FALSE(names.empty());
  for (auto& n : names) {
    std::string p = kdir + "/" + n;
    ASSERT_EQ(::unlink(p.c_str()), 0);
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << p;
  }
  ProbeRun r = probe(t, "timeout 60 env " + env);  // before: blocked in open() until the timeout killed it (rc 124)
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_GE(r.compiles(), 1) << r.out;
  EXPECT_NE(r.out.find("result=" + std::to_string(int(kResult))), std::string::npos) << r.out;
}

// A second process reads the first one's rendered programs (reading bumps a file's mtime, which eviction goes by) and
// adds none; damaged records (cut short, bytes of another kind, lengths past the end) are rendered again, the result
// is right, and the rewritten records are the originals again.
TEST(DiskCache, RenderedProgramsAreReadBackAndDamagedOnesRenderedAgain) {
  for (const char* dev : {"CPU", "CPU:CLANG"}) {
    SCOPED_TRACE(dev);
    TempDir t;
    std::string env = std::string("DEV=") + dev + " XDG_CACHE_HOME=" + quote(t.path + "/c"), k = t.path + "/c/tinygrad/kernels";
    ASSERT_EQ(probe(t, env).rc, 0);
    auto names = names_in(k, "p");
    ASSERT_GE(names.size(), 1u) << "the first process keeps its rendered programs";
    std::vector<std::string> orig;
    for (auto& n : names) {
      orig.push_back(slurp(k + "/" + n));
      struct timespec old[2] = {{946684800, 0}, {946684800, 0}};  // 2000-01-01
      ASSERT_EQ(::utimensat(AT_FDCWD, (k + "/" + n).c_str(), old, 0), 0);
    }
    ProbeRun b = probe(t, env);
    ASSERT_EQ(b.rc, 0) << b.err;
    EXPECT_NE(b.out.find("result=" + std::to_string(int(kResult))), std::string::npos) << b.out;
    EXPECT_EQ(names_in(k, "p").size(), names.size()) << "the second process rendered something new";
    for (auto& n : names) {
      struct stat st;
      ASSERT_EQ(::stat((k + "/" + n).c_str(), &st), 0);
      EXPECT_GT(st.st_mtime, 946684800 + 86400) << n << " was not read";
    }
    const char* damage[] = {"", " 1 2", " 99999999999999999999 x", " 1 0 0 0 0 999999:abc", "\xff\xfe garbage \n\n"};
    for (const char* bad : damage) {
      for (size_t i = 0; i < names.size(); i++) {
        std::ofstream f(k + "/" + names[i], std::ios::binary | std::ios::trunc);
        f << (*bad ? std::string(bad) : orig[i].substr(0, orig[i].size() / 2));
      }
      ProbeRun r = probe(t, env);
      ASSERT_EQ(r.rc, 0) << r.err;
      EXPECT_NE(r.out.find("result=" + std::to_string(int(kResult))), std::string::npos) << r.out;
      for (size_t i = 0; i < names.size(); i++)
        EXPECT_EQ(slurp(k + "/" + names[i]), orig[i]) << "record " << names[i] << " was not rewritten";
    }
  }
}
