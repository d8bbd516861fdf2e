// The thread contract of include/tinygrad.h, as ThreadSanitizer checks it (make tsan runs this file under
// -fsanitize=thread): distinct tensors built and realized on many threads and devices while options change, models
// trained side by side, one JIT called from many threads and released while calls run, the BEAM cache shared by
// threads and by processes. Small on purpose: under TSan everything runs 5-15x slower.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "capi_handles.h"
#include "runtime/threadpool.h"
#include "subprocess.h"
#include "tinygrad.h"

namespace {
T from(const std::vector<float>& v, std::vector<int64_t> shape, const char* dev = nullptr) {
  return tg_tensor_from_data(v.data(), v.size() * sizeof(float), TG_FLOAT32, shape.data(), shape.size(), dev);
}
// a @ b (m x k, k x n) on the host
std::vector<float> matmul(const std::vector<float>& a, const std::vector<float>& b, int m, int k, int n) {
  std::vector<float> c(size_t(m * n));
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double s = 0;
      for (int l = 0; l < k; l++) s += double(a[size_t(i * k + l)]) * b[size_t(l * n + j)];
      c[size_t(i * n + j)] = float(s);
    }
  return c;
}
void run_threads(int n, const std::function<void(int)>& f) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; i++) ts.emplace_back(f, i);
  for (auto& t : ts) t.join();
}
}  // namespace

// 8 threads, each its own graph (a matmul, an elementwise chain and a reduce, shapes by thread) on CPU and CPU:CLANG,
// while another thread sets options that change how kernels are made but not what they compute
TEST(Threads, GraphsOnTwoDevicesWhileOptionsChange) {
  std::atomic<bool> done{false};
  std::thread setter([&] {
    const char* vals[] = {"0", "1"};
    for (int i = 0; !done.load(); i++) {
      tg_set_option("NOOPT", vals[i % 2]);
      tg_set_option("CACHELEVEL", i % 3 ? "2" : "0");
      tg_set_option("BEAM_UPCAST_MAX", i % 2 ? "64" : "256");
      double v;
      tg_get_option("NOOPT", &v);
      std::this_thread::yield();
    }
    for (const char* o : {"NOOPT", "CACHELEVEL", "BEAM_UPCAST_MAX"}) tg_set_option(o, nullptr);
  });
  std::atomic<int> bad{0};
  run_threads(8, [&](int id) {
    const char* dev = id % 2 ? "CPU:CLANG" : "CPU";
    int m = 3 + id, k = 5 + id % 3, n = 4 + id % 5;
    for (int it = 0; it < 2; it++) {
      std::vector<float> av = randv(size_t(m * k), uint32_t(id * 10 + it)), bv = randv(size_t(k * n), uint32_t(id * 10 + it + 100));
      T a = from(av, {m, k}, dev), b = from(bv, {k, n}, dev);
      T c = tg_tensor_matmul(a, b);
      T c2 = tg_tensor_add_scalar(c, 0.5 * id);
      T r = tg_tensor_relu(c2);
      int64_t ax = 1;
      T s = tg_tensor_sum(r, &ax, 1, 0);
      if (!s.p) {
        bad++;
        continue;
      }
      std::vector<float> want = matmul(av, bv, m, k, n), got = data(s);
      for (int i = 0; i < m; i++) {
        double w = 0;
        for (int j = 0; j < n; j++) w += std::max(0.0, double(want[size_t(i * n + j)]) + 0.5 * id);
        if (std::fabs(got[size_t(i)] - w) > 1e-3 * (1 + std::fabs(w))) bad++;
      }
    }
  });
  done = true;
  setter.join();
  EXPECT_EQ(bad.load(), 0) << tg_last_error_message();
}

namespace {
// an MLP (4 -> 8 -> 1) trained by Adam on a fixed regression problem for `steps` steps; the losses
std::vector<float> train(int seed, int steps) {
  const int64_t B = 8, IN = 4, HID = 8;
  T w1 = from(randv(IN * HID, uint32_t(seed), 0.5f), {IN, HID}), w2 = from(randv(HID, uint32_t(seed + 1), 0.5f), {HID, 1});
  T x = from(randv(B * IN, uint32_t(seed + 2)), {B, IN}), y = from(randv(B, uint32_t(seed + 3)), {B, 1});
  tg_tensor* params[2] = {w1, w2};
  tg_optimizer_options o{};
  o.struct_size = sizeof o;
  tg_optimizer_options_default(TG_OPTIM_ADAM, &o);
  o.lr = 0.05;
  Opt opt = tg_optim_adam(params, 2, &o);
  std::vector<float> losses;
  if (!opt.p) return losses;
  for (int s = 0; s < steps; s++) {
    tg_optimizer_zero_grad(opt);
    T z = tg_tensor_matmul(x, w1);
    T h = tg_tensor_relu(z);
    T p = tg_tensor_matmul(h, w2);
    T d = tg_tensor_sub(p, y);
    T sq = tg_tensor_square(d);
    T loss = tg_tensor_mean(sq, nullptr, 0, 0);
    if (!loss.p || tg_tensor_backward(loss) != TG_OK || tg_optimizer_step(opt) != TG_OK) return losses;
    losses.push_back(data(loss)[0]);
  }
  return losses;
}
}  // namespace

// 4 threads, each an allreduce over its own 3 virtual CPU devices (ring and naive, copies of more than 1 MB split over
// the worker threads): each thread gets its own sums on each of its devices
TEST(Threads, AllreducesBetweenDevicesOnManyThreads) {
  const int64_t n = 300000;
  run_threads(4, [&](int id) {
    std::vector<std::string> devs;
    for (int k = 0; k < 3; k++) devs.push_back("CPU:" + std::to_string(1 + 3 * id + k));
    for (int ring = 0; ring < 2; ring++) {
      ASSERT_EQ(tg_option_push("RING", ring ? "2" : "0"), TG_OK);
      std::vector<T> in;
      for (int k = 0; k < 3; k++) in.push_back(from(std::vector<float>(size_t(n), float(id * 10 + k)), {n}, devs[size_t(k)].c_str()));
      tg_tensor* raw[3] = {in[0].p, in[1].p, in[2].p};
      tg_tensor* out[3] = {};
      ASSERT_EQ(tg_tensor_allreduce(raw, 3, TG_REDUCE_SUM, out), TG_OK) << tg_last_error_message();
      for (int k = 0; k < 3; k++) {
        T o(out[k]);
        EXPECT_STREQ(tg_tensor_device(o), devs[size_t(k)].c_str());
        std::vector<float> got(static_cast<size_t>(n));
        ASSERT_EQ(tg_tensor_to_data(o, got.data(), got.size() * sizeof(float)), TG_OK);
        EXPECT_EQ(got.front(), float(30 * id + 3));
        EXPECT_EQ(got.back(), float(30 * id + 3));
      }
      ASSERT_EQ(tg_option_pop(), TG_OK);
    }
  });
}

// 8 threads each train their own model; each gets the losses a single-threaded run with its seed gets, bit for bit
TEST(Threads, EightModelsTrainSideBySide) {
  Training training;
  const int steps = 4;
  std::vector<std::vector<float>> alone(8), together(8);
  for (int i = 0; i < 8; i++) alone[size_t(i)] = train(100 * i, steps);
  run_threads(8, [&](int i) { together[size_t(i)] = train(100 * i, steps); });
  for (int i = 0; i < 8; i++) {
    ASSERT_EQ(alone[size_t(i)].size(), size_t(steps)) << tg_last_error_message();
    EXPECT_EQ(together[size_t(i)], alone[size_t(i)]) << "model " << i;
    for (float l : alone[size_t(i)]) EXPECT_TRUE(std::isfinite(l));
    EXPECT_LT(alone[size_t(i)].back(), alone[size_t(i)].front()) << "model " << i << " did not learn";
  }
}

namespace {
tg_status times_three(void*, tg_tensor* const* in, size_t, tg_tensor** out, size_t n_out) {
  if (n_out) out[0] = tg_tensor_mul_scalar(in[0], 3);
  return n_out && !out[0] ? tg_last_error() : TG_OK;
}
}  // namespace

// a JIT made on this thread, called from 4 others, its only reference released by a fifth while calls run: each call
// succeeds with the right values or finds the handle gone (TG_ERROR_INVALID_ARGUMENT), and the JIT is freed once
TEST(Threads, JitCalledFromManyAndReleasedFromAnother) {
  int64_t live = tg_live_handles();
  tg_jit* jit = tg_jit_create(times_three, nullptr);
  ASSERT_NE(jit, nullptr);
  std::atomic<int> started{0}, finished{0}, ok{0}, gone{0}, bad{0};
  std::thread releaser([&] {
    while ((started.load() < 4 || ok.load() < 12) && finished.load() < 4) std::this_thread::yield();
    tg_jit_release(jit);
  });
  run_threads(4, [&](int id) {
    started++;
    for (int i = 0; i < 40; i++) {
      std::vector<float> v = randv(8, uint32_t(id * 1000 + i));
      T x = from(v, {8});
      tg_tensor* in[1] = {x};
      tg_tensor* o = nullptr;
      tg_status st = tg_jit_call(jit, in, 1, &o, 1);
      if (st == TG_ERROR_INVALID_ARGUMENT && !o) {
        gone++;
        break;
      }
      if (st != TG_OK) {
        bad++;
        break;
      }
      T out(o);
      std::vector<float> got = data(out);  // (a replay on another thread may overwrite the captured output after the call)
      (void)got;
      ok++;
    }
    finished++;
  });
  releaser.join();
  EXPECT_EQ(bad.load(), 0) << tg_last_error_message();
  EXPECT_GE(ok.load(), 12);
  EXPECT_EQ(tg_live_handles(), live) << "the JIT and every tensor are freed";
}

// the values of calls from several threads, each checked while no other call runs on that JIT (calls take turns)
TEST(Threads, JitCallsFromManyThreadsGiveTheirOwnValues) {
  tg_jit* jit = tg_jit_create(times_three, nullptr);
  std::mutex turn;  // a replay's output is the capture's buffer: read it before the next call
  std::atomic<int> bad{0};
  run_threads(4, [&](int id) {
    for (int i = 0; i < 10; i++) {
      std::vector<float> v = randv(8, uint32_t(id * 1000 + i));
      T x = from(v, {8});
      tg_tensor* in[1] = {x};
      tg_tensor* o = nullptr;
      std::lock_guard<std::mutex> lk(turn);
      if (tg_jit_call(jit, in, 1, &o, 1) != TG_OK) {
        bad++;
        continue;
      }
      T out(o);
      std::vector<float> got = data(out);
      for (size_t k = 0; k < v.size(); k++) bad += got[k] != v[k] * 3;
    }
  });
  EXPECT_EQ(bad.load(), 0) << tg_last_error_message();
  EXPECT_EQ(tg_jit_call_count(jit), 40);
  tg_jit_release(jit);
}

// BEAM=1 on 4 threads (different small matmuls, then the same ones again: the second round reads the cache the first
// wrote), while two other processes search into one cold database of their own
TEST(Threads, BeamCacheSharedByThreadsAndProcesses) {
  using tg::test::quote;
  tg::test::TempDir t;
  std::string db = t.path + "/beam.db", probe = quote(tg::test::sibling_binary("tg_beam_probe"));
  std::string cmd;
  for (const char* sz : {"12", "20"})
    cmd += "(env -u CACHELEVEL -u IGNORE_BEAM_CACHE -u DEBUG BEAM=1 CACHEDB=" + quote(db) + " " + probe + " " + sz + " >" + quote(t.path + "/" + sz + ".out") +
           " 2>&1) & ";
  std::thread procs([&] { EXPECT_EQ(std::system((cmd + "wait").c_str()), 0); });
  std::atomic<int> bad{0};
  {
    OptionScope beam("BEAM", "1");
    for (int round = 0; round < 2; round++)
      run_threads(4, [&](int id) {
        int m = 4 + id, k = 8, n = 6 + id;
        std::vector<float> av = randv(size_t(m * k), uint32_t(id)), bv = randv(size_t(k * n), uint32_t(id + 50));
        T a = from(av, {m, k}), b = from(bv, {k, n});
        T c = tg_tensor_matmul(a, b);
        if (!c.p) return (void)bad++;
        std::vector<float> want = matmul(av, bv, m, k, n), got = data(c);
        for (size_t i = 0; i < want.size(); i++) bad += std::fabs(got[i] - want[i]) > 1e-4 * (1 + std::fabs(want[i]));
      });
  }
  procs.join();
  EXPECT_EQ(bad.load(), 0) << tg_last_error_message();
  for (const char* sz : {"12", "20"}) {
    std::string out = tg::test::slurp(t.path + "/" + sz + ".out");
    EXPECT_NE(out.find("result="), std::string::npos) << out;
    EXPECT_EQ(out.find("not usable"), std::string::npos) << out;
  }
}

// CpuThreadCap: a launch split into 8 core ids runs them all, on this thread alone under a cap of 1, and on at most
// 2 threads under a cap of 2; the cap ends with its scope and nests
namespace {
std::mutex g_seen_mu;
std::vector<std::thread::id> g_seen;
void record_thread(void**, const int64_t* vars) {
  std::lock_guard<std::mutex> lk(g_seen_mu);
  g_seen.push_back(std::this_thread::get_id());
  (void)vars;
}
size_t distinct_threads(int64_t cap) {
  g_seen.clear();
  int64_t vars[1] = {0};
  {
    tg::CpuThreadCap c(cap);
    for (int i = 0; i < 50; i++) tg::launch(record_thread, nullptr, vars, 1, 8, 0);
  }
  EXPECT_EQ(g_seen.size(), 50u * 8u);
  std::vector<std::thread::id> ids = g_seen;
  std::sort(ids.begin(), ids.end());
  return size_t(std::unique(ids.begin(), ids.end()) - ids.begin());
}
}  // namespace
TEST(Threads, CpuThreadCapLimitsALaunch) {
  EXPECT_EQ(distinct_threads(1), 1u);
  EXPECT_EQ(g_seen[0], std::this_thread::get_id());
  EXPECT_LE(distinct_threads(2), 2u);
  {
    tg::CpuThreadCap outer(2);
    EXPECT_EQ(distinct_threads(1), 1u);  // the inner cap wins
  }
}

// A realize's new kernels compile on several threads at once (engine/realize.cpp, compile_ahead); each thread takes
// the caller's options: under NOOPT=1 (a thread-local push) no kernel gets vectors, without it the elementwise one
// does, and the values are right either way
TEST(Threads, KernelsCompiledTogetherKeepTheCallersOptions) {
  auto xv = randv(64 * 64, 71, 1.0f);
  for (int noopt : {1, 0}) {
    SCOPED_TRACE(noopt ? "NOOPT=1" : "default");
    if (noopt) {
      ASSERT_EQ(tg_option_push("NOOPT", "1"), TG_OK);
    }
    double c = 1.25 + 0.5 * noopt;  // new constants: kernels no earlier realize compiled
    T x = from(xv, {64, 64});
    int64_t ax1 = 1, ax0 = 0;
    T outs[3] = {T(tg_tensor_sum(T(tg_tensor_add_scalar(x, c)), &ax1, 1, 0)), T(tg_tensor_max(T(tg_tensor_mul_scalar(x, c)), &ax0, 1, 0)),
                 T(tg_tensor_exp(T(tg_tensor_sub_scalar(x, c))))};
    tg_tensor* ts[3] = {outs[0].p, outs[1].p, outs[2].p};
    tg_plan* plan = tg_plan_create(ts, 3);
    ASSERT_NE(plan, nullptr) << tg_last_error_message();
    bool vectors = false;
    for (size_t i = 0; i < tg_plan_kernel_count(plan); i++) {
      tg_kernel_info k{};
      k.struct_size = sizeof k;
      ASSERT_EQ(tg_plan_kernel(plan, i, &k), TG_OK);
      vectors |= std::string(k.source).find(" x float>") != std::string::npos;
    }
    EXPECT_EQ(vectors, !noopt);
    ASSERT_EQ(tg_plan_run(plan), TG_OK) << tg_last_error_message();
    tg_plan_release(plan);
    std::vector<float> s(64), m(64), e(64 * 64);
    ASSERT_EQ(tg_tensor_to_data(outs[0], s.data(), s.size() * 4), TG_OK);
    ASSERT_EQ(tg_tensor_to_data(outs[1], m.data(), m.size() * 4), TG_OK);
    ASSERT_EQ(tg_tensor_to_data(outs[2], e.data(), e.size() * 4), TG_OK);
    for (int i = 0; i < 64; i++) {
      double rs = 0, rm = -1e30;
      for (int j = 0; j < 64; j++) rs += xv[size_t(i * 64 + j)] + c, rm = std::max(rm, double(xv[size_t(j * 64 + i)]) * c);
      EXPECT_NEAR(s[size_t(i)], rs, 1e-3 * (1 + std::fabs(rs)));
      EXPECT_FLOAT_EQ(m[size_t(i)], float(rm));
    }
    for (size_t i = 0; i < e.size(); i++) EXPECT_NEAR(e[i], std::exp(double(xv[i]) - c), 1e-5 * std::exp(double(xv[i]) - c));
    if (noopt) {
      ASSERT_EQ(tg_option_pop(), TG_OK);
    }
  }
}
