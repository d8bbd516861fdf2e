// Allocation failure (issue 26): a failed allocation anywhere in a training step, in LLVM or in our destructors, is
// TG_ERROR_OUT_OF_MEMORY and leaves the library usable and nothing leaked. The sweeps run in tg_oom_probe
// (tests/tools/oom_probe.cpp), which interposes malloc; ctest runs its full sweeps (oom_sweep_*, oom_rlimit_*), these
// are short ones.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>

#include "runtime/device.h"
#include "subprocess.h"
#include "uop/uop.h"

namespace {

struct Run {
  int status;
  std::string out;
};
Run probe(const std::string& args) {
  tg::test::TempDir tmp;
  std::string out = tmp.path + "/out";
  std::string cmd = tg::test::quote(tg::test::sibling_binary("tg_oom_probe")) + " " + args + " > " + tg::test::quote(out) + " 2>&1";
  int st = std::system(cmd.c_str());
  return {st, tg::test::slurp(out)};
}
void expect_held(const Run& r) {
  ASSERT_TRUE(WIFEXITED(r.status)) << "killed by signal " << WTERMSIG(r.status) << "\n" << r.out;
  EXPECT_EQ(WEXITSTATUS(r.status), 0) << r.out;
  EXPECT_NE(r.out.find(" 0 failures"), std::string::npos) << r.out;
}

// Before the fix, most of these trials ended in "LLVM ERROR: out of memory" (abort) or std::terminate from a UOp
// being freed (free_node allocated a vector inside ~UOpRef).
// (CPU:CLANG's cold steps run clang per kernel: its sweep is ctest's oom_sweep_CPU_CLANG only)
TEST(Oom, SweepCpuTrainingStep) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan has its own malloc: the probe's interposer would run before ASan is set up";
#endif
  expect_held(probe("sweep CPU 4 1 11"));
}
// a `ulimit -v` as the process's own limit: every allocation past it fails, the step still ends in a status
TEST(Oom, StepUnderAddressSpaceLimit) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "sanitizers reserve more address space than the limit this test sets";
#endif
  expect_held(probe("rlimit CPU 3"));
}

// A long chain of nodes is freed without recursion and without allocating (the free list runs through the nodes).
TEST(Oom, UOpChainFreedIteratively) {
  size_t before = tg::UOp::live_count();
  {
    tg::UOpRef x = tg::UOp::variable("oom_chain", 0, 10);
    for (int i = 0; i < 200000; i++) x = tg::UOp::make(tg::Ops::NEG, x->dtype, {x});
    EXPECT_GE(tg::UOp::live_count(), before + 200000);
  }
  EXPECT_EQ(tg::UOp::live_count(), before);
}

// The allocator counts what it hands out, cached or not, so the sweep can see device bytes leak.
TEST(Oom, AllocatorCountsLiveBytes) {
  auto& a = tg::get_device("CPU").allocator();
  size_t before = a.live_bytes();
  int64_t buffers = tg::Buffer::live_count();
  {
    tg::Buffer b("CPU", tg::dtypes::float32, 1000);
    b.ptr();
    EXPECT_EQ(a.live_bytes(), before + 4000);
    EXPECT_EQ(tg::Buffer::live_count(), buffers + 1);
  }
  EXPECT_EQ(a.live_bytes(), before);
  EXPECT_EQ(tg::Buffer::live_count(), buffers);
}

}  // namespace
