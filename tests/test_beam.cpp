// BEAM search: the kernel it chooses computes what the unoptimized one does; its choice is cached in SQLite so a second
// process times nothing; two processes writing at once leave a readable database; a garbage database is reported once
// and the search runs without it. The other processes are tg_beam_probe (tests/tools/beam_probe.cpp), each with its own empty cache.
#include <gtest/gtest.h>
#include <limits.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "codegen/opt/beam.h"
#include "kernel_case.h"
#include "subprocess.h"

namespace {

using tg::Tensor;
using tg::test::Case;
using tg::test::quote;
using tg::test::randt;
using tg::test::slurp;
using tg::test::TempDir;

TEST(Beam, ChosenKernelsMatchUnoptimized) {
  tg::Context small({{"BEAM_DEBUG", 0}});
  const std::vector<std::pair<const char*, std::function<Tensor()>>> ks = {
      {"elementwise", [] { return randt({64, 48}, 1).add(randt({64, 48}, 2)).mul(randt({64, 48}, 3)); }},
      {"sum", [] { return randt({32, 256}, 4).sum({1}); }},
      {"matmul", [] { return randt({64, 32}, 5).matmul(randt({32, 64}, 6)); }},
      {"conv2d", [] { return randt({2, 4, 10, 10}, 7).conv2d(randt({8, 4, 3, 3}, 8), std::nullopt, 1, {1, 1}, {1, 1}, {1, 1}); }},
  };
  for (auto& [name, build] : ks) {
    SCOPED_TRACE(name);
    Case c(build());
    std::vector<float> base = c.run({});
    uint64_t runs = tg::beam_timing_runs;
    std::vector<tg::Opt> opts = tg::beam_opts(c.last(), name, tg::get_device("CPU"), 2, false);
    EXPECT_GT(tg::beam_timing_runs, runs) << "the search timed nothing";
    std::vector<float> got = c.run(opts);
    ASSERT_EQ(got.size(), base.size());
    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], base[i], 1e-5 + 1e-5 * std::fabs(base[i])) << i << " " << tg::opts_str(opts);
  }
}

// the second process: tests/tools/beam_probe.cpp
std::string probe_path() { return tg::test::sibling_binary("tg_beam_probe"); }
struct Child {
  int rc;
  std::string out, err;
  long runs() const {
    auto p = out.find("timing_runs=");
    return p == std::string::npos ? -1 : std::atol(out.c_str() + p + 12);
  }
  double result() const {
    auto p = out.find("result=");
    return p == std::string::npos ? NAN : std::atof(out.c_str() + p + 7);
  }
};
// the shell command for one child: `env` (VAR=value words, quoted), matmul size `sz`, output to <dir>/<tag>.out/.err
std::string child_cmd(const TempDir& t, const std::string& env, int sz, const std::string& tag) {
  return "env -u CACHEDB -u CACHELEVEL -u IGNORE_BEAM_CACHE -u BEAM_DEBUG -u DEBUG BEAM=1 " + env + " " + quote(probe_path()) + " " + std::to_string(sz) +
         " >" + quote(t.path + "/" + tag + ".out") + " 2>" + quote(t.path + "/" + tag + ".err");
}
Child read_child(const TempDir& t, const std::string& tag, int rc) {
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(t.path + "/" + tag + ".out"), slurp(t.path + "/" + tag + ".err")};
}
Child child(const TempDir& t, const std::string& env, int sz, const std::string& tag) {
  return read_child(t, tag, std::system(child_cmd(t, env, sz, tag).c_str()));
}

TEST(Beam, SecondProcessTimesNothing) {
  TempDir t;
  std::string env = "XDG_CACHE_HOME=" + quote(t.path + "/cache");
  Child a = child(t, env, 48, "a"), b = child(t, env, 48, "b");
  ASSERT_EQ(a.rc, 0) << a.out << a.err;
  ASSERT_EQ(b.rc, 0) << b.out << b.err;
  EXPECT_GT(a.runs(), 0) << "an empty cache searches: " << a.out;
  EXPECT_EQ(b.runs(), 0) << "the second process searched again: " << b.out;
  EXPECT_EQ(a.result(), b.result()) << "the same opts give the same bits";
  EXPECT_EQ(::access((t.path + "/cache/tinygrad/cache.db").c_str(), R_OK), 0) << "the default path is <user cache dir>/tinygrad/cache.db";
  Child c = child(t, env + " IGNORE_BEAM_CACHE=1", 48, "c");
  EXPECT_GT(c.runs(), 0) << "IGNORE_BEAM_CACHE=1 searches again";
}

TEST(Beam, TwoWritersAtOnceLeaveAReadableCache) {
  TempDir t;
  std::string db = t.path + "/beam.db", env = "CACHEDB=" + quote(db);
  // two processes search different kernels and write at the same moment
  std::string both = "(" + child_cmd(t, env, 40, "a") + ") & (" + child_cmd(t, env, 56, "b") + ") & wait";
  ASSERT_EQ(std::system(both.c_str()), 0);
  for (const char* tag : {"a", "b"}) {
    Child c = read_child(t, tag, 0);
    EXPECT_GT(c.runs(), 0) << c.out << c.err;
    EXPECT_EQ(c.err.find("not usable"), std::string::npos) << c.err;
  }
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::string check;
  sqlite3_exec(h, "PRAGMA integrity_check", [](void* p, int, char** v, char**) { return *static_cast<std::string*>(p) = v[0] ? v[0] : "", 0; }, &check, nullptr);
  EXPECT_EQ(check, "ok");
  sqlite3_close(h);
  // and both choices are there: a third process times neither kernel
  for (int sz : {40, 56}) {
    Child c = child(t, env, sz, "c");
    EXPECT_EQ(c.runs(), 0) << sz << " rc " << c.rc << "\n" << c.out << c.err;
  }
}

TEST(Beam, GarbageCacheIsReportedOnceAndSkipped) {
  TempDir t;
  std::string db = t.path + "/garbage.db";
  std::ofstream(db) << std::string(8192, 'x');
  Child a = child(t, "CACHEDB=" + quote(db), 32, "a");
  ASSERT_EQ(a.rc, 0) << "BEAM must work without its cache: " << a.err;
  EXPECT_GT(a.runs(), 0);
  size_t first = a.err.find("BEAM cache");
  EXPECT_NE(first, std::string::npos) << a.err;
  EXPECT_EQ(a.err.find("BEAM cache", first + 1), std::string::npos) << "reported more than once:\n" << a.err;
  Child b = child(t, "CACHEDB=" + quote(db), 32, "b");
  EXPECT_GT(b.runs(), 0) << "nothing is read from a garbage file";
  EXPECT_NEAR(a.result(), b.result(), 1e-4 * std::fabs(a.result()) + 1e-3) << "sums may reassociate under other opts";
}

TEST(Beam, CacheLevelZeroWritesNoDatabase) {
  TempDir t;
  Child a = child(t, "CACHELEVEL=0 XDG_CACHE_HOME=" + quote(t.path + "/c"), 32, "a");
  EXPECT_EQ(a.rc, 0) << a.err;
  EXPECT_GT(a.runs(), 0);
  EXPECT_NE(::access((t.path + "/c/tinygrad/cache.db").c_str(), F_OK), 0);
}

TEST(Options, SetThroughTheApiWinsAndIsChecked) {
  double v = -1;
  ASSERT_EQ(tg_set_option("BEAM_UPCAST_MAX", "64"), TG_OK);
  ASSERT_EQ(tg_get_option("BEAM_UPCAST_MAX", &v), TG_OK);
  EXPECT_EQ(v, 64);
  EXPECT_EQ(tg::BEAM_UPCAST_MAX.get(), 64);
  ASSERT_EQ(tg_set_option("BEAM_MIN_PROGRESS", "0.5"), TG_OK);
  EXPECT_EQ(tg::BEAM_MIN_PROGRESS.value(), 0.5);
  for (auto [name, value] : std::vector<std::pair<const char*, const char*>>{{"BEAM", "100"}, {"DEBUG", "8"}, {"BEAM", "x"}, {"BEAM", ""}, {"BEAM", "1x"},
                                                                             {"BEAM", "nan"}, {"NOSUCH", "1"}, {nullptr, "1"}}) {
    EXPECT_EQ(tg_set_option(name, value), TG_ERROR_INVALID_ARGUMENT) << (name ? name : "NULL") << "=" << value;
    EXPECT_NE(std::string(tg_last_error_message()).find(name ? name : "NULL"), std::string::npos) << tg_last_error_message();
  }
  EXPECT_EQ(tg_get_option("NOSUCH", &v), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_get_option("BEAM", nullptr), TG_ERROR_INVALID_ARGUMENT);
  // NULL forgets the API's value: the environment (here: none) and the default apply again
  ASSERT_EQ(tg_set_option("BEAM_UPCAST_MAX", nullptr), TG_OK);
  ASSERT_EQ(tg_set_option("BEAM_MIN_PROGRESS", nullptr), TG_OK);
  if (!std::getenv("BEAM_UPCAST_MAX")) EXPECT_EQ(tg::BEAM_UPCAST_MAX.get(), 256);
  {
    tg::Context c({{"BEAM_UPCAST_MAX", 8}});  // a scoped override still wins over both
    ASSERT_EQ(tg_set_option("BEAM_UPCAST_MAX", "16"), TG_OK);
    EXPECT_EQ(tg::BEAM_UPCAST_MAX.get(), 8);
  }
  EXPECT_EQ(tg::BEAM_UPCAST_MAX.get(), 16);
  ASSERT_EQ(tg_set_option("BEAM_UPCAST_MAX", nullptr), TG_OK);
}

}  // namespace
