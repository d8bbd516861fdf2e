#include "runtime/threadpool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "helpers.h"

namespace tg {

int num_cpu_threads() {
  static const int n = [] {
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : int(std::thread::hardware_concurrency());
    int64_t env = getenv_int("NUM_CPU_THREADS", 0);
    return int(std::clamp<int64_t>(env > 0 ? env : cores, 1, 1024));
  }();
  return n;
}

namespace {
// One launch is shared out at a time: the workers and the caller take core ids from the job until none is left. A job
// is its own object, so a worker that wakes late for a finished launch finds nothing left in it. Workers spin briefly
// for the next launch before they sleep, so back-to-back kernels do not pay a wake-up each.
struct Job {
  CPUProgram::Entry entry;
  void** bufs;
  std::vector<int64_t> vars;
  int64_t n;
  int core_var;
  std::atomic<int64_t> next{0}, left;
  void take() {
    std::vector<int64_t> v = vars;
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      v[size_t(core_var)] = i;
      entry(bufs, v.data());
      left.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
};

class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; i++) std::thread([this] { work(); }).detach();
  }

  void run(CPUProgram::Entry entry, void** bufs, const int64_t* vars, size_t nvars, int64_t n, int core_var) {
    std::lock_guard<std::mutex> one(launch_mu_);
    auto job = std::make_shared<Job>();
    job->entry = entry, job->bufs = bufs, job->vars.assign(vars, vars + nvars), job->n = n, job->core_var = core_var;
    job->left.store(n);
    {
      std::lock_guard<std::mutex> lk(mu_);
      job_ = job;
      gen_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    job->take();
    while (job->left.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  }

 private:
  void work() {
    uint64_t seen = 0;
    for (;;) {
      for (int spin = 0; gen_.load(std::memory_order_acquire) == seen && spin < 20000; spin++) std::this_thread::yield();
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return gen_.load() != seen; });
        seen = gen_.load(), job = job_;
      }
      job->take();
    }
  }
  std::mutex launch_mu_, mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> gen_{0};
  std::shared_ptr<Job> job_;
};
}  // namespace

void launch(CPUProgram::Entry entry, void** bufs, const int64_t* vars, size_t nvars, int64_t threads, int core_var) {
  if (threads <= 1 || core_var < 0) {
    if (core_var < 0) return entry(bufs, vars);
    int64_t small[16];  // a replayed kernel should not allocate
    std::vector<int64_t> big(nvars > 16 ? nvars : 0);
    int64_t* v = nvars > 16 ? big.data() : small;
    std::copy(vars, vars + nvars, v);
    v[size_t(core_var)] = 0;
    return entry(bufs, v);
  }
  static Pool* pool = new Pool(num_cpu_threads() - 1);
  pool->run(entry, bufs, vars, nvars, threads, core_var);
}

void CPUProgram::launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& d) const {
  tg::launch(entry, bufs, vars, nvars, d.global[0], d.core_var);
}
double Program::timed_launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& d) const {
  auto t0 = std::chrono::steady_clock::now();
  launch(bufs, vars, nvars, d);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tg
