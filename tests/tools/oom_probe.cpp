// The allocation-failure sweep (issue 26): this program interposes malloc and its relatives, so it can make the Nth
// allocation of a training step fail (once, or every one from the Nth on, which is what a `ulimit -v` looks like), and
// checks that the library always answers TG_OK or TG_ERROR_OUT_OF_MEMORY, that nothing leaked (handles, buffers, device
// bytes, UOp nodes) and that the next, normal step gives the numbers of a run that never failed.
// Kernels are compiled inside the swept region: each trial's batch size is new, so every kernel is compiled again.
//   tg_oom_probe sweep <device> <trials> [cold_every] [seed] [only]   the sweep (both modes; `only`: just that trial);
//                                                             prints a summary, exits 0 when it held
//   tg_oom_probe rlimit <device> <runs>           steps in child processes under smaller and smaller RLIMIT_AS
//   tg_oom_probe count <device>                   the allocations of one cold step
#include <errno.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <tinygrad.h>

#include "runtime/device.h"
#include "uop/uop.h"

// ---- the interposed allocators (operator new goes through malloc) ----
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}
static std::atomic<bool> armed{false};
static std::atomic<bool> sticky{false};  // fail every allocation from the Nth on, not only the Nth
static std::atomic<int64_t> seen{0}, fail_at{-1}, failed{0};
static bool fail_now() {
  if (!armed.load(std::memory_order_relaxed)) return false;
  int64_t n = seen.fetch_add(1, std::memory_order_relaxed) + 1, at = fail_at.load(std::memory_order_relaxed);
  if (at > 0 && (n == at || (sticky.load(std::memory_order_relaxed) && n > at))) {
    failed.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}
extern "C" {
void* malloc(size_t n) {
  if (fail_now()) return errno = ENOMEM, nullptr;
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  if (fail_now()) return errno = ENOMEM, nullptr;
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  if (n && fail_now()) return errno = ENOMEM, nullptr;
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  if (fail_now()) return errno = ENOMEM, nullptr;
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void** out, size_t a, size_t n) {
  void* p = memalign(a, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(size_t n) { return memalign(size_t(sysconf(_SC_PAGESIZE)), n); }
}

static void arm(int64_t at, bool all_after) { seen = 0, failed = 0, fail_at = at, sticky = all_after, armed = true; }
static void disarm() { armed = false; }

// ---- one training step of a small MLP, through the C API only ----
enum { IN = 8, HID = 16, OUT = 4, MAXB = 4096 };
struct Result {
  tg_status status = TG_OK;
  std::string message;
  float loss = 0;
  double params = 0;  // the sum of every parameter after the step
};
static float xs[MAXB * IN];
static int32_t ys[MAXB];

// Everything made is released before returning, also when a call fails (while still armed: a `ulimit -v` program
// releases while memory is short). Allocates nothing itself between arm and disarm.
static tg_status step(const char* dev, int64_t batch, float* loss_out, double* param_sum, int64_t fail = -1, bool all_after = false) {
  for (int64_t i = 0; i < batch; i++) {
    for (int j = 0; j < IN; j++) xs[i * IN + j] = float(double((7 * i + 3 * j) % 11 - 5) / 5.0);
    ys[i] = int32_t((7 * i % 11) % 4);
  }
  tg_tensor* t[64] = {};
  tg_module* m[4] = {};
  tg_optimizer* opt = nullptr;
  int nt = 0;
  tg_status st = TG_OK;
  float params[OUT * HID + HID * IN + HID + OUT];
  tg_manual_seed(1337);
  if (fail >= 0) arm(fail, all_after);
#define TRY(x)                         \
  if (!(x)) {                          \
    st = tg_last_error();              \
    if (st == TG_OK) st = TG_ERROR_INTERNAL; \
    goto done;                         \
  }
  {
    int64_t xshape[2] = {batch, IN}, yshape[1] = {batch};
    tg_tensor *x, *y, *out, *loss, *upd[16], *all[17], *ps[4];
    TRY((x = t[nt++] = tg_tensor_from_data(xs, sizeof(float) * size_t(batch * IN), TG_FLOAT32, xshape, 2, dev)));
    TRY((y = t[nt++] = tg_tensor_from_data(ys, sizeof(int32_t) * size_t(batch), TG_INT32, yshape, 1, dev)));
    TRY((m[0] = tg_nn_linear(IN, HID, 1, dev)));
    TRY((m[1] = tg_nn_function("relu")));
    TRY((m[2] = tg_nn_linear(HID, OUT, 1, dev)));
    TRY((m[3] = tg_nn_sequential(m, 3)));
    TRY(tg_module_parameter_count(m[3]) == 4);
    TRY(tg_module_parameters(m[3], ps, 4) == TG_OK);
    for (auto* p : ps) t[nt++] = p;
    tg_optimizer_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    TRY(tg_optimizer_options_default(TG_OPTIM_SGD, &o) == TG_OK);
    o.lr = 0.1, o.momentum = 0.9;
    TRY((opt = tg_optim_sgd(ps, 4, &o)));
    TRY(tg_optimizer_zero_grad(opt) == TG_OK);
    TRY((out = t[nt++] = tg_module_call(m[3], x)));
    TRY((loss = t[nt++] = tg_tensor_sparse_categorical_crossentropy(out, y, -1, 0.0, 1)));
    TRY(tg_tensor_backward(loss) == TG_OK);
    int64_t n = tg_optimizer_schedule_step(opt, upd, 16);
    TRY(n >= 0);
    for (int64_t i = 0; i < n; i++) t[nt++] = upd[i];
    all[0] = loss;
    for (int64_t i = 0; i < n; i++) all[i + 1] = upd[i];
    TRY(tg_tensor_realize_many(all, size_t(n) + 1) == TG_OK);
    TRY(tg_tensor_to_data(loss, loss_out, sizeof(float)) == TG_OK);
    size_t at = 0;
    for (auto* p : ps) {
      size_t bytes = size_t(tg_tensor_numel(p)) * sizeof(float);
      TRY(tg_tensor_to_data(p, params + at, bytes) == TG_OK);
      at += bytes / sizeof(float);
    }
    *param_sum = 0;
    for (size_t i = 0; i < at; i++) *param_sum += double(params[i]) * double(i % 7 + 1);
  }
done:
#undef TRY
  tg_optimizer_release(opt);
  for (auto* x : m) tg_module_release(x);
  for (int i = 0; i < nt; i++) tg_tensor_release(t[i]);
  disarm();
  return st;
}

// ---- what must come back to where it was ----
struct Live {
  int64_t handles, buffers, uops;
  size_t bytes;
  bool operator==(const Live&) const = default;
};
static Live live(const char* dev) {
  return {tg_live_handles(), tg::Buffer::live_count(), int64_t(tg::UOp::live_count()), tg::get_device(dev).allocator().live_bytes()};
}
static std::string str(const Live& l) {
  char b[160];
  snprintf(b, sizeof b, "handles %lld buffers %lld device bytes %zu uops %lld", (long long)l.handles, (long long)l.buffers, l.bytes, (long long)l.uops);
  return b;
}

static const int64_t kRefBatch = 24, kWarmBatch = 25;  // the normal step's batch, and warm trials': no cold trial uses them

// One allocation count per kind of trial: cold (a new batch size: every kernel compiled) and warm (kernels compiled
// before: scheduling, lowering, running). Every `cold_every`-th trial is cold.
static int sweep(const char* dev, int trials, int cold_every, uint64_t seed, int only) {
  float ref_loss, loss, l;
  double ref_params, params, p;
  if (step(dev, kRefBatch, &ref_loss, &ref_params) != TG_OK) return fprintf(stderr, "the reference step failed: %s\n", tg_last_error_message()), 1;
  if (step(dev, MAXB - 1, &l, &p, 0) != TG_OK) return fprintf(stderr, "the counting step failed: %s\n", tg_last_error_message()), 1;
  int64_t cold = seen.load();
  step(dev, kWarmBatch, &l, &p), step(dev, kRefBatch, &loss, &params);
  if (step(dev, kWarmBatch, &l, &p, 0) != TG_OK) return fprintf(stderr, "the counting step failed: %s\n", tg_last_error_message()), 1;
  int64_t warm = seen.load();
  step(dev, kRefBatch, &loss, &params);  // leaves the caches as every check below will find them
  Live base = live(dev);
  int ok = 0, oom = 0, bad = 0, ncold = 0;
  int64_t batch = kWarmBatch + 1;
  for (int i = 0; i < trials; i++) {
    bool all_after = i % 2 == 1, is_cold = i % cold_every == 0;
    ncold += is_cold;
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    int64_t total = is_cold ? cold : warm, n = 1 + int64_t((double(i) + double(seed >> 11) / double(1ull << 53)) * double(total) / trials);
    int64_t bs = is_cold ? batch++ : kWarmBatch;  // a trial run alone (`only`) keeps the batch size it has in the sweep
    if (only >= 0 && i != only) continue;
    tg_status s = step(dev, bs, &l, &p, n, all_after);
    std::string msg = s == TG_OK ? "" : tg_last_error_message();
    char what[96];
    snprintf(what, sizeof what, "trial %d (%s, allocation %lld fails%s)", i, is_cold ? "cold" : "warm", (long long)n, all_after ? " and all after" : "");
    s == TG_OK ? ok++ : s == TG_ERROR_OUT_OF_MEMORY ? oom++ : 0;
    if (s != TG_OK && s != TG_ERROR_OUT_OF_MEMORY) bad++, fprintf(stderr, "%s: %s: %s\n", what, tg_status_name(s), msg.c_str());
    tg_status again = step(dev, kRefBatch, &loss, &params);
    Live now = live(dev);
    if (again != TG_OK || loss != ref_loss || params != ref_params)
      bad++, fprintf(stderr, "%s: the next step gives %s loss %.9g params %.9g, a never-failed run %.9g %.9g\n", what, tg_status_name(again), double(loss),
                     params, double(ref_loss), ref_params);
    if (!(now == base)) {
      bad++, fprintf(stderr, "%s: leaked: %s, before %s\n", what, str(now).c_str(), str(base).c_str());
      base = now;  // report each leak once
    }
  }
  printf("oom sweep %s: %d trials (%d cold over %lld allocations, %d warm over %lld): %d TG_OK, %d TG_ERROR_OUT_OF_MEMORY, %d failures\n", dev, trials,
         ncold, (long long)cold, trials - ncold, (long long)warm, ok, oom, bad);
  return bad ? 1 : 0;
}

static long vm_size_kb() {
  FILE* f = fopen("/proc/self/status", "r");
  long kb = 0;
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7)) kb = atol(line + 7);
  if (f) fclose(f);
  return kb;
}

// A child under RLIMIT_AS = its size now + `extra_kb`: 0 for TG_OK, 3 for TG_ERROR_OUT_OF_MEMORY, 1 for anything else.
static int rlimit_child(const char* dev, long extra_kb, int64_t batch) {
  rlimit r;
  r.rlim_cur = r.rlim_max = rlim_t(vm_size_kb() + extra_kb) * 1024;
  setrlimit(RLIMIT_AS, &r);
  float l;
  double p;
  tg_status s = step(dev, batch, &l, &p);
  if (s == TG_OK) return 0;
  if (s == TG_ERROR_OUT_OF_MEMORY) return 3;
  fprintf(stderr, "rlimit +%ld KB: %s: %s\n", extra_kb, tg_status_name(s), tg_last_error_message());
  return 1;
}
static int rlimit_runs(const char* self, const char* dev, int runs) {
  int ok = 0, oom = 0, bad = 0;
  for (int i = 0; i < runs; i++) {
    long kb = 256 + long(i) * (12288 - 256) / std::max(runs - 1, 1);  // a step of a cold process needs about 8 MB more
    pid_t pid = fork();
    if (pid == 0) {
      std::string m = std::to_string(kb), b = std::to_string(kRefBatch + i);
      execl("/proc/self/exe", self, "rlimit-child", dev, m.c_str(), b.c_str(), (char*)nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ok++;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) oom++;
    else {
      bad++;
      if (WIFSIGNALED(status)) fprintf(stderr, "rlimit +%ld KB: killed by signal %d\n", kb, WTERMSIG(status));
      else fprintf(stderr, "rlimit +%ld KB: exit status %d\n", kb, WEXITSTATUS(status));
    }
  }
  printf("rlimit %s: %d runs: %d TG_OK, %d TG_ERROR_OUT_OF_MEMORY, %d failures\n", dev, runs, ok, oom, bad);
  return bad ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc < 3) return fprintf(stderr, "usage: %s sweep|rlimit|count <device> [n] [seed]\n", argv[0]), 2;
  // a cold disk cache of our own, one worker (a deterministic allocation order), program and schedule caches of one
  // entry (what a trial compiled does not stay behind in them: the UOp count comes back)
  char dir[] = "/tmp/tg_oom_probe-XXXXXX";
  if (!mkdtemp(dir)) return perror("mkdtemp"), 2;
  setenv("XDG_CACHE_HOME", dir, 1), setenv("NUM_CPU_THREADS", "1", 1), setenv("TG_PROGRAM_CACHE", "1", 1), setenv("TG_SCHEDULE_CACHE", "1", 1);
  std::string mode = argv[1];
  const char* dev = argv[2];
  int rc = 2;
  if (tg_set_option("TRAINING", "1") != TG_OK) return 2;
  if (mode == "sweep") rc = sweep(dev, argc > 3 ? atoi(argv[3]) : 100, argc > 4 ? std::max(atoi(argv[4]), 1) : 1, argc > 5 ? strtoull(argv[5], nullptr, 10) : 26,
                                 argc > 6 ? atoi(argv[6]) : -1);
  else if (mode == "rlimit") rc = rlimit_runs(argv[0], dev, argc > 3 ? atoi(argv[3]) : 12);
  else if (mode == "rlimit-child" && argc > 4) rc = rlimit_child(dev, atol(argv[3]), atoll(argv[4]));
  else if (mode == "count") {
    float l;
    double p;
    tg_manual_seed(1337);
    rc = step(dev, 123, &l, &p, 0) == TG_OK ? 0 : 1;
    printf("%lld allocations\n", (long long)seen.load());
  }
  std::string rm = std::string("rm -rf ") + dir;
  (void)!system(rm.c_str());
  return rc;
}
