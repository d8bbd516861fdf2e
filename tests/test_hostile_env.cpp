// Issue 26, item 15: environment values were taken without the range tg_set_option enforces (BEAM=1e9 was a beam of a
// billion; TG_PROGRAM_CACHE=0 made the program cache drop the entry it had just stored and read an empty list;
// REDUCEOP_SPLIT_SIZE=99 shifted an int64 by 99). Now one check serves both: a bad environment value is reported once
// on stderr and ignored. The environment is read once per process, so those cases run in a child: this binary again,
// on HostileEnv.Child.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "helpers.h"
#include "subprocess.h"
#include "tinygrad.h"

namespace {

using tg::test::quote;
using tg::test::slurp;
using tg::test::TempDir;

TEST(HostileEnv, SetOptionTakesOnlyPlainDecimals) {
  for (const char* bad : {"0x7", "inf", "-inf", "nan", " 1", "1 ", "+", "-", ".", "1e", "e1", "1e999", "65", "1,5", "\t2"}) {
    EXPECT_EQ(tg_set_option("BEAM", bad), TG_ERROR_INVALID_ARGUMENT) << "'" << bad << "'";
    EXPECT_NE(std::string(tg_last_error_message()).find("set_option BEAM"), std::string::npos) << tg_last_error_message();
  }
  double v = -1;
  for (auto [text, want] : std::vector<std::pair<const char*, double>>{{"1e1", 10}, {"+3", 3}, {"2.0", 2}, {"-0", 0}, {".5e1", 5}}) {
    ASSERT_EQ(tg_set_option("BEAM", text), TG_OK) << text;
    ASSERT_EQ(tg_get_option("BEAM", &v), TG_OK);
    EXPECT_EQ(v, want) << text;
  }
  ASSERT_EQ(tg_set_option("BEAM", nullptr), TG_OK);
}

// Run by the test below in a child process with a hostile environment; skipped otherwise.
TEST(HostileEnv, Child) {
  if (!std::getenv("TG_HOSTILE_ENV_CHILD")) GTEST_SKIP() << "runs in the child of BadEnvironmentValuesAreReportedOnceAndIgnored";
  double beam = -1, debug = -1, timeout = -1;
  ASSERT_EQ(tg_get_option("BEAM", &beam), TG_OK);
  ASSERT_EQ(tg_get_option("DEBUG", &debug), TG_OK);
  ASSERT_EQ(tg_get_option("BEAM_TIMEOUT_SEC", &timeout), TG_OK);
  std::printf("options %g %g %g\n", beam, debug, timeout);
  std::printf("ints %lld %lld %lld %lld\n", (long long)tg::getenv_int("NUM_CPU_THREADS", -7), (long long)tg::getenv_int("TG_PROGRAM_CACHE", 4096),
              (long long)tg::getenv_int("REDUCEOP_SPLIT_SIZE", 22), (long long)tg::getenv_int("TG_ALLOC_CACHE_MB", 256));
  // a realize that stores programs and splits a big reduce: the cache and the shift take the defaults
  int64_t shape[] = {1 << 16};
  tg_tensor* t = tg_tensor_ones(shape, 1, TG_FLOAT32, nullptr);
  tg_tensor* s = tg_tensor_sum(t, nullptr, 0, 0);
  float out = 0;
  ASSERT_EQ(tg_tensor_to_data(s, &out, sizeof out), TG_OK) << tg_last_error_message();
  std::printf("sum %g\n", double(out));
  tg_tensor_release(s);
  tg_tensor_release(t);
}

TEST(HostileEnv, BadEnvironmentValuesAreReportedOnceAndIgnored) {
  TempDir dir;
  std::string out = dir.path + "/out", err = dir.path + "/err";
  // the child runs its one test whatever shard or output file the parent was given
  std::string cmd = "env -u DEBUG -u BEAM -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_STATUS_FILE -u GTEST_OUTPUT "
                    "TG_HOSTILE_ENV_CHILD=1 XDG_CACHE_HOME=" + quote(dir.path) +
                    " BEAM=1e9 DEBUG=0x3 BEAM_TIMEOUT_SEC=inf NUM_CPU_THREADS=-5 TG_PROGRAM_CACHE=0 REDUCEOP_SPLIT_SIZE=99 TG_ALLOC_CACHE_MB=12abc " +
                    quote(tg::test::sibling_binary("tg_tests")) + " --gtest_filter=HostileEnv.Child >" + quote(out) + " 2>" + quote(err);
  int rc = std::system(cmd.c_str());
  std::string o = slurp(out), e = slurp(err);
  ASSERT_EQ(rc, 0) << o << e;
  EXPECT_NE(o.find("options 0 0 10\n"), std::string::npos) << o;
  EXPECT_NE(o.find("ints -7 4096 22 256\n"), std::string::npos) << o;  // each caller's default
  EXPECT_NE(o.find("sum 65536\n"), std::string::npos) << o;
  for (const char* v : {"BEAM='1e9' is not a number in [0, 64]", "DEBUG='0x3' is not a number in [0, 7]", "BEAM_TIMEOUT_SEC='inf'",
                        "NUM_CPU_THREADS='-5' is not an integer in [0, 1024]", "TG_PROGRAM_CACHE='0' is not an integer in [1, ",
                        "REDUCEOP_SPLIT_SIZE='99' is not an integer in [0, 62]", "TG_ALLOC_CACHE_MB='12abc'"}) {
    std::string what = std::string("tinygrad: environment variable ") + v;
    size_t at = e.find(what);
    EXPECT_NE(at, std::string::npos) << what << "\n" << e;
    if (at != std::string::npos) {
      EXPECT_EQ(e.find(what, at + 1), std::string::npos) << "reported twice: " << what;
    }
  }
}

}  // namespace
