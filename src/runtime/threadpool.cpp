#include "runtime/threadpool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "helpers.h"

namespace tg {

int cpu_cores() {
  static const int n = [] {
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : int(std::thread::hardware_concurrency());
    // ranks of an MPI job on one machine (mpirun sets the count) share its cores rather than each taking all
    int64_t local = std::clamp<int64_t>(std::atoll(getenv_str("OMPI_COMM_WORLD_LOCAL_SIZE", "1").c_str()), 1, 1024);
    return int(std::clamp<int64_t>(cores / local, 1, 1024));
  }();
  return n;
}
int num_cpu_threads() {
  static const int n = [] {
    int64_t env = getenv_int("NUM_CPU_THREADS", 0);
    return int(std::clamp<int64_t>(env > 0 ? env : cpu_cores(), 1, 1024));
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
  std::atomic<int64_t> takers{0};
  int64_t max_takers = INT64_MAX;  // a CpuThreadCap's: threads past it leave every core id to the others
  // allocates nothing on the workers (under an address-space limit a worker's first malloc may fail, and it can't
  // throw): a worker that can't get a buffer for the vars leaves its share to the others and the caller
  void take() noexcept {
    if (takers.fetch_add(1) >= max_takers) return;
    int64_t small[32];
    std::unique_ptr<int64_t[]> big;
    int64_t* v = small;
    if (vars.size() > 32 && !(v = (big = std::unique_ptr<int64_t[]>(new (std::nothrow) int64_t[vars.size()])).get())) return;
    std::copy(vars.begin(), vars.end(), v);
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      v[size_t(core_var)] = i;
      entry(bufs, v);
      left.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
};

// Kernels may keep up to kPackMaxBytes (a PACK's panels) and their registers' spills on the stack. The workers get
// 8 MB stacks; a caller whose own stack is small (a musl thread's 128 KB, some runtimes' fibers) leaves the whole launch
// to them rather than risk overflowing it.
constexpr size_t kWorkerStack = size_t(8) << 20, kCallerStackMin = size_t(4) << 20;
bool small_stack() {
  thread_local const bool small = [] {
    pthread_attr_t a;
    size_t sz = 0;
    void* base = nullptr;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return false;
    int ok = pthread_attr_getstack(&a, &base, &sz);
    pthread_attr_destroy(&a);
    return ok == 0 && sz < kCallerStackMin;
  }();
  return small;
}

// Runs with the workers that start: a thread limit (RLIMIT_NPROC, a container's pids.max) or an address-space limit
// may stop pthread_create part way. Throwing then would free the pool under the workers already started (they wait on
// its mutex and condition variable); a launch is correct with any number of workers, since the caller takes core ids
// too, so fewer workers only means less parallelism. The pool is never freed (detached workers use it to the end).
class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; i++) {
      pthread_attr_t a;
      pthread_t t;
      if (pthread_attr_init(&a) != 0) break;
      pthread_attr_setstacksize(&a, kWorkerStack);
      pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
      int err = pthread_create(&t, &a, [](void* self) -> void* {
        static_cast<Pool*>(self)->work();
        return nullptr;
      }, this);
      pthread_attr_destroy(&a);
      if (err != 0) {
        debug_log(1, "tinygrad: %d of %d CPU worker threads started (%s); kernels run on those\n", i, workers, std::strerror(err));
        break;
      }
      started_++;
    }
  }
  int workers() const { return started_; }

  // `caller_takes`: the calling thread runs core ids too (else it only waits: its stack is too small for kernels)
  void run(CPUProgram::Entry entry, void** bufs, const int64_t* vars, size_t nvars, int64_t n, int core_var, bool caller_takes = true,
           int64_t max_takers = INT64_MAX) {
    std::lock_guard<std::mutex> one(launch_mu_);
    auto job = std::make_shared<Job>();
    job->entry = entry, job->bufs = bufs, job->vars.assign(vars, vars + nvars), job->n = n, job->core_var = core_var;
    job->max_takers = max_takers;
    job->left.store(n);
    {
      std::lock_guard<std::mutex> lk(mu_);
      job_ = job;
      gen_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    if (caller_takes) job->take();
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
  int started_ = 0;
  std::mutex launch_mu_, mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> gen_{0};
  std::shared_ptr<Job> job_;
};
}  // namespace

namespace {
thread_local int64_t t_thread_cap = 0;
}
CpuThreadCap::CpuThreadCap(int64_t n) : prev_(t_thread_cap) { t_thread_cap = n; }
CpuThreadCap::~CpuThreadCap() { t_thread_cap = prev_; }

void launch(CPUProgram::Entry entry, void** bufs, const int64_t* vars, size_t nvars, int64_t threads, int core_var) {
  auto pool = [] {  // made on first need: a process that never threads starts no workers
    static Pool* p = new Pool(std::max(1, num_cpu_threads() - 1));
    return p;
  };
  int64_t takers = t_thread_cap > 0 ? t_thread_cap : INT64_MAX;
  // every core id on the workers (a kernel without THREAD is core id 0 of 1), if any started
  if (small_stack()) {
    TG_CHECK(pool()->workers() > 0, TG_ERROR_RUNTIME,
             "no CPU worker thread could start, and this thread's stack is too small to run kernels on (give it 4 MB or more)");
    std::vector<int64_t> v(vars, vars + nvars);
    if (core_var < 0) v.push_back(0), core_var = int(nvars);
    return pool()->run(entry, bufs, v.data(), v.size(), std::max<int64_t>(threads, 1), core_var, false, takers);
  }
  if (threads <= 1 || core_var < 0 || takers == 1) {  // on this thread alone: every core id in turn
    if (core_var < 0) return entry(bufs, vars);
    int64_t small[16];  // a replayed kernel should not allocate
    std::vector<int64_t> big(nvars > 16 ? nvars : 0);
    int64_t* v = nvars > 16 ? big.data() : small;
    std::copy(vars, vars + nvars, v);
    for (int64_t i = 0; i < std::max<int64_t>(threads, 1); i++) v[size_t(core_var)] = i, entry(bufs, v);
    return;
  }
  pool()->run(entry, bufs, vars, nvars, threads, core_var, true, takers);
}

void CPUProgram::launch(void** bufs, const int64_t* vars, size_t nvars, const LaunchDims& d) const {
  tg::launch(entry, bufs, vars, nvars, d.global[0], d.core_var);
}

}  // namespace tg
