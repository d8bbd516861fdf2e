/* bench_ops: end-to-end float32 timings through the C API next to references measured in the same run.
 *   elementwise 16M : ((x+1)*2-1)/2 on 16M floats    vs a plain C loop doing the same work (bandwidth loop, ref_loops.c)
 *   sum 16M         : full sum of 16M floats          vs a plain C summation loop (bandwidth loop, ref_sum.c)
 *   matmul 1024/2048: C = A@B, N x N x N              vs OpenBLAS cblas_sgemm: the Debian default core type and SkylakeX (on CPUs with AVX-512)
 *   conv2d          : (32,64,56,56) * (64,64,3,3), pad 1 vs PyTorch CPU F.conv2d (bench/conv2d_torch.py)
 *   compile time    : first realize of a new small kernel minus a warm realize of the same graph (disk cache off)
 *   tiny realize    : tg_tensor_realize of x+1 on 16 floats with every cache warm (no reference)
 *   tiny jit replay : one tg_jit_call of a captured x+1 on 16 floats, output released (no reference)
 *   jit step mlp    : a replayed training step, 784-128-10 MLP, batch 64, Adam-like updates (bench/jit_step.c)
 *   tiny realize viz on, jit step mlp viz on: the two rows above while VIZ records, against them with it off
 *                     vs the same step in PyTorch (bench/mlp_torch.py)
 * Every reference runs with the thread count libtinygrad uses: $NUM_CPU_THREADS, else the cores this process may run
 * on (sched_getaffinity). OpenBLAS reads OPENBLAS_CORETYPE/OPENBLAS_NUM_THREADS when it loads, so each OpenBLAS core
 * type is measured in a child process (this binary re-executed as `bench_ops --blas-only N RUNS`) with its own
 * environment; PyTorch runs as a python subprocess. Each figure is the median of several runs after warm-up. Rows are
 * printed and written as JSON to argv[1]. ratio: ours/reference for throughputs, reference/ours for times (higher is
 * better for libtinygrad either way); 0 where there is no reference.
 *
 * Environment: TG_BENCH_PYTHON (default /usr/bin/python3), TG_BENCH_DIR (where conv2d_torch.py is; default the
 * compile-time TG_BENCH_DIR, else "bench"), TG_BENCH_QUICK=1 (skip matmul 2048 and conv2d, for quick checks). */
#define _GNU_SOURCE
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <tinygrad.h>
#include <unistd.h>

#include "../examples/c/fashion_mnist_model.h"
#include "jit_step.h"
#include "ref_loops.h"

#ifndef TG_BENCH_DIR
#define TG_BENCH_DIR "bench"
#endif

extern char** environ;

/* The reference loops live in ref_loops.c / ref_sum.c, built with their own flags (see CMakeLists.txt). */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static int cmp(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return (x > y) - (x < y); }
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
#define CHECK(x)                                                        \
  do {                                                                  \
    if (!(x)) {                                                         \
      fprintf(stderr, "%s failed: %s\n", #x, tg_last_error_message()); \
      exit(1);                                                          \
    }                                                                   \
  } while (0)
#define DIE(...)                  \
  do {                            \
    fprintf(stderr, "bench_ops: "); \
    fprintf(stderr, __VA_ARGS__); \
    fprintf(stderr, "\n");        \
    exit(1);                      \
  } while (0)

/* ---- rows ---- */
typedef struct {
  const char *name, *unit, *reference;
  double value, reference_value, ratio;
} row;
static row rows[64];
static int nrows = 0;

/* higher_better: the unit is a throughput (ratio ours/ref) rather than a time (ratio ref/ours). rv <= 0: no reference. */
static void add_row(const char* name, const char* unit, double v, const char* ref, double rv, int higher_better) {
  double ratio = rv > 0 && v > 0 ? (higher_better ? v / rv : rv / v) : 0.0;
  rows[nrows++] = (row){name, unit, ref, v, rv, ratio};
  printf("%-16s %10.2f %-7s | %-18s %10.2f %-7s | ratio %.3f\n", name, v, unit, ref, rv, rv > 0 ? unit : "", ratio);
  fflush(stdout);
}

/* ---- timing ---- */
/* Lets the threads of the last measured code go idle: libtinygrad's pool workers and OpenMP's threads spin (or yield)
 * for a while after a launch before they sleep, and on a 2-core machine such a spinner takes a core from whatever is
 * measured next. So libtinygrad and its reference are never timed alternately, and each block of runs starts here. */
static void settle(void) {
  struct timespec ts = {0, 100 * 1000 * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

typedef double (*timed_fn)(void* ctx);
/* `warmup` untimed calls, then up to max_runs timed ones; stops early (after at least min_runs) once `budget_s` seconds
 * of timed calls have passed. Returns the median seconds of one call. */
static double time_median(timed_fn f, void* ctx, int warmup, int min_runs, int max_runs, double budget_s) {
  double t[256], start;
  if (max_runs > 256) max_runs = 256;
  settle();
  for (int i = 0; i < warmup; i++) f(ctx);
  int n = 0;
  start = now();
  while (n < max_runs && (n < min_runs || now() - start < budget_s)) t[n++] = f(ctx);
  return median(t, n);
}

/* f alternately with BEAM=0 (the heuristics' kernels) and BEAM=2, call by call, so that both see the same machine
 * state (a fresh machine drifts by 15% over a bench run): medians of each into *heur and *beam (seconds). The warm-up
 * pair compiles both programs (and searches the BEAM one, unless an earlier call did). */
static void time_heur_beam(timed_fn f, void* ctx, int min_runs, int max_runs, double budget_s, double* heur, double* beam) {
  double th[128], tb[128], start;
  if (max_runs > 128) max_runs = 128;
  settle();
  CHECK(tg_set_option("BEAM", "0") == TG_OK);
  f(ctx);
  CHECK(tg_set_option("BEAM", "2") == TG_OK);
  f(ctx);
  int n = 0;
  start = now();
  while (n < max_runs && (n < min_runs || now() - start < budget_s)) {
    CHECK(tg_set_option("BEAM", "0") == TG_OK);
    th[n] = f(ctx);
    CHECK(tg_set_option("BEAM", "2") == TG_OK);
    tb[n++] = f(ctx);
  }
  *heur = median(th, n), *beam = median(tb, n);
}

static uint64_t counter(int compiles) {
  tg_counters c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  CHECK(tg_counters_get(&c) == TG_OK);
  return compiles ? c.compile_count : c.kernel_count;
}

/* realize `t` (built since t0), release it, and return the seconds since t0 */
static double realize_timed(double t0, tg_tensor* t) {
  CHECK(t && tg_tensor_realize(t) == TG_OK);
  double dt = now() - t0;
  tg_tensor_release(t);
  return dt;
}

/* the number of threads libtinygrad runs kernels on, and so the references too */
static int bench_threads(void) {
  const char* e = getenv("NUM_CPU_THREADS");
  if (e && atoi(e) > 0) return atoi(e);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* ---- subprocesses ---- */
/* Runs argv[0] (a path) with the environment of this process minus the variables named in `unset` plus the NAME=value
 * strings in `set` (both NULL-terminated). Returns its stdout (malloc'd), or NULL if it could not run or exited with a
 * non-zero status. */
static char* run_capture(char* const argv[], const char* const* unset, const char* const* set) {
  size_t ne = 0, ns = 0;
  while (environ[ne]) ne++;
  while (set && set[ns]) ns++;
  char** env = malloc((ne + ns + 1) * sizeof *env);
  size_t k = 0;
  for (size_t i = 0; i < ne; i++) {
    int drop = 0;
    for (const char* const* u = unset; u && *u && !drop; u++) {
      size_t l = strlen(*u);
      drop = strncmp(environ[i], *u, l) == 0 && environ[i][l] == '=';
    }
    if (!drop) env[k++] = environ[i];
  }
  for (size_t i = 0; i < ns; i++) env[k++] = (char*)set[i];
  env[k] = NULL;

  int fds[2];
  if (pipe(fds) != 0) DIE("pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  pid_t pid;
  fflush(stdout);
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    fprintf(stderr, "bench_ops: can't run %s: %s\n", argv[0], strerror(rc));
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char* out = malloc(cap);
  for (;;) {
    if (len + 1 >= cap) out = realloc(out, cap *= 2);
    ssize_t r = read(fds[0], out + len, cap - len - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
  }
  out[len] = 0;
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "bench_ops: %s exited with status %d\n", argv[0], WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    free(out);
    return NULL;
  }
  return out;
}
/* the number on the last non-empty line of `s`, or -1 */
static double last_number(const char* s) {
  if (!s) return -1;
  const char* end = s + strlen(s);
  while (end > s && (end[-1] == '\n' || end[-1] == ' ')) end--;
  const char* p = end;
  while (p > s && p[-1] != '\n') p--;
  char* e;
  double v = strtod(p, &e);
  return e == p ? -1 : v;
}

/* ---- child mode: `bench_ops --blas-only N RUNS` prints "corename" and then the median seconds of one sgemm ---- */
static int blas_only(int n, int runs) {
  size_t nn = (size_t)n * (size_t)n;
  float *a = malloc(nn * sizeof(float)), *b = malloc(nn * sizeof(float)), *c = malloc(nn * sizeof(float));
  for (size_t i = 0; i < nn; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
  double t[64];
  if (runs > 64) runs = 64;
  for (int i = -2; i < runs; i++) { /* two warm-up calls: thread start-up, page faults */
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    if (i >= 0) t[i] = now() - t0;
  }
  printf("%s %d\n%.9f\n", openblas_get_corename(), openblas_get_num_threads(), median(t, runs));
  free(a), free(b), free(c);
  return 0;
}

/* GFLOP/s of sgemm N in a child with the given core type (NULL: OpenBLAS's own choice) */
static double blas_ref(int n, int runs, int threads, const char* coretype) {
  char nbuf[32], rbuf[32], tbuf[64], cbuf[128];
  snprintf(nbuf, sizeof nbuf, "%d", n), snprintf(rbuf, sizeof rbuf, "%d", runs);
  snprintf(tbuf, sizeof tbuf, "OPENBLAS_NUM_THREADS=%d", threads);
  snprintf(cbuf, sizeof cbuf, "OPENBLAS_CORETYPE=%s", coretype ? coretype : "");
  char* argv[] = {"/proc/self/exe", "--blas-only", nbuf, rbuf, NULL};
  const char* unset[] = {"OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OPENBLAS_VERBOSE", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", NULL};
  const char* set[] = {tbuf, coretype ? cbuf : NULL, NULL};
  char* out = run_capture(argv, unset, set);
  double s = last_number(out);
  if (out) {
    char core[64] = "?";
    int th = 0;
    sscanf(out, "%63s %d", core, &th);
    fprintf(stderr, "  (OpenBLAS %s: core %s, %d threads)\n", coretype ? coretype : "default", core, th);
  }
  free(out);
  if (s <= 0) fprintf(stderr, "bench_ops: WARNING: OpenBLAS reference (%s) failed; its ratio is 0\n", coretype ? coretype : "default");
  return s > 0 ? 2.0 * n * n * (double)n * 1e-9 / s : 0.0;
}

/* ---- elementwise / sum ---- */
typedef struct { tg_tensor* x; float *in, *out; size_t n; int threads; } ew_ctx;
static double ew_tg(void* p) {
  ew_ctx* c = p;
  double t0 = now();
  tg_tensor *a = tg_tensor_add_scalar(c->x, 1), *b = tg_tensor_mul_scalar(a, 2), *d = tg_tensor_sub_scalar(b, 1);
  CHECK(a && b && d);
  double t = realize_timed(t0, tg_tensor_div_scalar(d, 2));
  tg_tensor_release(a), tg_tensor_release(b), tg_tensor_release(d);
  return t;
}
static double ew_ref(void* p) {
  ew_ctx* c = p;
  double t0 = now();
  bench_ref_elementwise(c->in, c->out, c->n, c->threads);
  return now() - t0;
}
static volatile float sink;
static double sum_tg(void* p) {
  ew_ctx* c = p;
  double t0 = now();
  return realize_timed(t0, tg_tensor_sum(c->x, NULL, 0, 0));
}
static double sum_ref(void* p) {
  ew_ctx* c = p;
  double t0 = now();
  sink = bench_ref_sum(c->in, c->n, c->threads);
  return now() - t0;
}

/* ---- matmul ---- */
typedef struct { tg_tensor *a, *b; } mm_ctx;
static double mm_tg(void* p) {
  mm_ctx* c = p;
  double t0 = now();
  return realize_timed(t0, tg_tensor_matmul(c->a, c->b));
}
/* our GFLOP/s for an n^3 matmul (its first call, compile and any BEAM search included, in *first_s). With heur, BEAM=2's
 * kernel and the heuristics' are timed alternately (time_heur_beam): the heuristics' GFLOP/s go to *heur. */
static double matmul_ours(int n, int min_runs, int max_runs, double budget_s, double* first_s, double* heur) {
  size_t nn = (size_t)n * (size_t)n;
  float *ha = malloc(nn * sizeof(float)), *hb = malloc(nn * sizeof(float));
  for (size_t i = 0; i < nn; i++) ha[i] = (float)(i % 7) * 0.1f, hb[i] = (float)(i % 5) * 0.1f;
  int64_t ms[2] = {n, n};
  mm_ctx mc = {tg_tensor_from_data(ha, nn * sizeof(float), TG_FLOAT32, ms, 2, NULL), tg_tensor_from_data(hb, nn * sizeof(float), TG_FLOAT32, ms, 2, NULL)};
  CHECK(mc.a && mc.b);
  CHECK(tg_tensor_realize(mc.a) == TG_OK && tg_tensor_realize(mc.b) == TG_OK);
  /* check one result element against a float64 dot product, so a wrong kernel can't post a good time */
  double t0 = now();
  tg_tensor* c = tg_tensor_matmul(mc.a, mc.b);
  CHECK(c);
  float* hc = malloc(nn * sizeof(float));
  CHECK(tg_tensor_to_data(c, hc, nn * sizeof(float)) == TG_OK);
  double first = now() - t0;
  tg_tensor_release(c);
  size_t r = (size_t)n / 3, col = (size_t)n / 2 + 1;
  double want = 0;
  for (size_t k = 0; k < (size_t)n; k++) want += (double)ha[r * (size_t)n + k] * (double)hb[k * (size_t)n + col];
  if (fabs(hc[r * (size_t)n + col] - want) > 1e-3 * fabs(want) + 1e-3) DIE("matmul %d: C[%zu,%zu] = %g, want %g", n, r, col, hc[r * (size_t)n + col], want);
  free(hc);

  double flop = 2.0 * n * n * (double)n * 1e-9;
  /* the check above was the warm-up; when that one call took longer than the whole budget, it is the only sample (its
   * kernel compile and copy-out are well under 1% of it then), so that a slow kernel can't stretch the run */
  double ours;
  if (heur) {
    double th, tb;
    time_heur_beam(mm_tg, &mc, min_runs, max_runs, budget_s, &th, &tb);
    ours = flop / tb, *heur = flop / th;
  } else if (budget_s > 0 && min_runs <= 1 && first > budget_s) {
    ours = flop / first;
    fprintf(stderr, "  (matmul %d: one call took %.1f s, so that warm-up call is the only sample)\n", n, first);
  } else {
    ours = flop / time_median(mm_tg, &mc, 0, min_runs, max_runs, budget_s);
  }
  tg_tensor_release(mc.a), tg_tensor_release(mc.b);
  free(ha), free(hb);
  if (first_s) *first_s = first;
  return ours;
}
/* the reference the BEAM rows compare with: OpenBLAS's AVX-512 kernels where the CPU has them, else its own choice */
static const char* blas_best = "OpenBLAS SkylakeX";
static double bench_matmul(int n, int min_runs, int max_runs, double budget_s, int threads) {  /* returns blas_best's figure */
  double ours = matmul_ours(n, min_runs, max_runs, budget_s, NULL, NULL);
  int blas_runs = n >= 2048 ? 5 : 9;
  int skx = __builtin_cpu_supports("avx512f");
  double ref_def = blas_ref(n, blas_runs, threads, NULL), ref_skx = skx ? blas_ref(n, blas_runs, threads, "SkylakeX") : 0;
  const char* name = n == 1024 ? "matmul 1024" : n == 2048 ? "matmul 2048" : "matmul";
  add_row(name, "GFLOP/s", ours, "OpenBLAS", ref_def, 1);
  if (!skx) return blas_best = "OpenBLAS", ref_def;
  add_row(name, "GFLOP/s", ours, "OpenBLAS SkylakeX", ref_skx, 1);
  return ref_skx;
}

/* ---- conv2d ---- */
typedef struct { tg_tensor *x, *w; } conv_ctx;
static double conv_tg(void* p) {
  conv_ctx* c = p;
  double t0 = now();
  return realize_timed(t0, tg_tensor_conv2d(c->x, c->w, NULL, 1, 1, 1, 1, 1, 1, 1));
}
static double conv2d_ours(double* heur) {  /* ms per call; with heur, as matmul_ours (BEAM=2's, and the heuristics' in *heur) */
  int64_t xs[4] = {32, 64, 56, 56}, ws[4] = {64, 64, 3, 3};
  conv_ctx cc = {tg_tensor_randn(xs, 4, TG_FLOAT32, NULL), tg_tensor_randn(ws, 4, TG_FLOAT32, NULL)};
  CHECK(cc.x && cc.w);
  CHECK(tg_tensor_realize(cc.x) == TG_OK && tg_tensor_realize(cc.w) == TG_OK);
  /* warm-up: one call, checked at a border element (n 1, out channel 5, row 0, column 17) against a float64 sum */
  size_t xn = 32 * 64 * 56 * 56, wn = 64 * 64 * 9;
  float *hx = malloc(xn * sizeof(float)), *hw = malloc(wn * sizeof(float)), *hy = malloc(xn * sizeof(float));
  tg_tensor* y = tg_tensor_conv2d(cc.x, cc.w, NULL, 1, 1, 1, 1, 1, 1, 1);
  CHECK(y && tg_tensor_to_data(y, hy, xn * sizeof(float)) == TG_OK);
  CHECK(tg_tensor_to_data(cc.x, hx, xn * sizeof(float)) == TG_OK && tg_tensor_to_data(cc.w, hw, wn * sizeof(float)) == TG_OK);
  tg_tensor_release(y);
  double want = 0;
  for (int ci = 0; ci < 64; ci++)
    for (int ky = 0; ky < 3; ky++)
      for (int kx = 0; kx < 3; kx++) {
        int iy = 0 + ky - 1, ix = 17 + kx - 1;
        if (iy >= 0 && iy < 56 && ix >= 0 && ix < 56) want += (double)hx[((1 * 64 + ci) * 56 + iy) * 56 + ix] * hw[((5 * 64 + ci) * 3 + ky) * 3 + kx];
      }
  float got = hy[((1 * 64 + 5) * 56 + 0) * 56 + 17];
  if (fabs(got - want) > 1e-3 * fabs(want) + 1e-3) DIE("conv2d: y[1,5,0,17] = %g, want %g", got, want);
  free(hx), free(hw), free(hy);
  double ours, th;
  if (heur) time_heur_beam(conv_tg, &cc, 3, 9, 20.0, &th, &ours), ours *= 1e3, *heur = 1e3 * th;
  else ours = 1e3 * time_median(conv_tg, &cc, 0, 3, 9, 20.0);
  tg_tensor_release(cc.x), tg_tensor_release(cc.w);
  return ours;
}
/* The gradients of the same conv for an incoming gradient g (32, 64, 56, 56): d w (which = 1) or d x (which = 0), each
 * realized alone. The graph is rebuilt per call, as a training step does (the schedule comes from the cache). */
typedef struct { tg_tensor *x, *w, *g; int which; } convb_ctx;
static double convb_tg(void* p) {
  convb_ctx* c = p;
  double t0 = now();
  tg_tensor *y = tg_tensor_conv2d(c->x, c->w, NULL, 1, 1, 1, 1, 1, 1, 1), *yg = y ? tg_tensor_mul(y, c->g) : NULL;
  tg_tensor *loss = yg ? tg_tensor_sum(yg, NULL, 0, 0) : NULL, *grad = NULL, *wrt = c->which ? c->w : c->x;
  CHECK(loss && tg_tensor_gradient(loss, &wrt, 1, &grad) == TG_OK);
  tg_tensor_release(y), tg_tensor_release(yg), tg_tensor_release(loss);
  return realize_timed(t0, grad);
}
static double conv2d_backward_ours(int which) { /* ms per call; checked at one element against a float64 sum */
  int64_t xs[4] = {32, 64, 56, 56}, ws[4] = {64, 64, 3, 3};
  convb_ctx c = {tg_tensor_randn(xs, 4, TG_FLOAT32, NULL), tg_tensor_randn(ws, 4, TG_FLOAT32, NULL), tg_tensor_randn(xs, 4, TG_FLOAT32, NULL), which};
  CHECK(c.x && c.w && c.g && tg_tensor_realize(c.x) == TG_OK && tg_tensor_realize(c.w) == TG_OK && tg_tensor_realize(c.g) == TG_OK);
  size_t xn = 32 * 64 * 56 * 56, wn = 64 * 64 * 9;
  float *hx = malloc(xn * sizeof(float)), *hw = malloc(wn * sizeof(float)), *hg = malloc(xn * sizeof(float)), *hd = malloc(xn * sizeof(float));
  CHECK(hx && hw && hg && hd);
  tg_tensor *y = tg_tensor_conv2d(c.x, c.w, NULL, 1, 1, 1, 1, 1, 1, 1), *yg = y ? tg_tensor_mul(y, c.g) : NULL;
  tg_tensor *loss = yg ? tg_tensor_sum(yg, NULL, 0, 0) : NULL, *grad = NULL, *wrt = which ? c.w : c.x;
  CHECK(loss && tg_tensor_gradient(loss, &wrt, 1, &grad) == TG_OK);
  CHECK(tg_tensor_to_data(grad, hd, (which ? wn : xn) * sizeof(float)) == TG_OK);
  CHECK(tg_tensor_to_data(c.x, hx, xn * sizeof(float)) == TG_OK && tg_tensor_to_data(c.w, hw, wn * sizeof(float)) == TG_OK &&
        tg_tensor_to_data(c.g, hg, xn * sizeof(float)) == TG_OK);
  tg_tensor_release(y), tg_tensor_release(yg), tg_tensor_release(loss), tg_tensor_release(grad);
  double want = 0, got;
  if (which) { /* d w[5, 7, 0, 2] = sum over n, oy, ox of x[n, 7, oy - 1, ox + 1] g[n, 5, oy, ox] */
    for (int n = 0; n < 32; n++)
      for (int oy = 1; oy < 56; oy++)
        for (int ox = 0; ox < 55; ox++) want += (double)hx[((n * 64 + 7) * 56 + oy - 1) * 56 + ox + 1] * hg[((n * 64 + 5) * 56 + oy) * 56 + ox];
    got = hd[((5 * 64 + 7) * 3 + 0) * 3 + 2];
  } else { /* d x[1, 5, 0, 17] = sum over co, ky, kx of w[co, 5, ky, kx] g[1, co, 0 - ky + 1, 17 - kx + 1] */
    for (int co = 0; co < 64; co++)
      for (int ky = 0; ky < 3; ky++)
        for (int kx = 0; kx < 3; kx++) {
          int oy = 0 - ky + 1, ox = 17 - kx + 1;
          if (oy >= 0 && oy < 56 && ox >= 0 && ox < 56) want += (double)hw[((co * 64 + 5) * 3 + ky) * 3 + kx] * hg[((1 * 64 + co) * 56 + oy) * 56 + ox];
        }
    got = hd[((1 * 64 + 5) * 56 + 0) * 56 + 17];
  }
  if (fabs(got - want) > 1e-3 * fabs(want) + 1e-2) DIE("conv2d backward %s: got %g, want %g", which ? "weight" : "input", got, want);
  free(hx), free(hw), free(hg), free(hd);
  double ours = 1e3 * time_median(convb_tg, &c, 0, 3, 9, 20.0);
  tg_tensor_release(c.x), tg_tensor_release(c.w), tg_tensor_release(c.g);
  return ours;
}
/* A PyTorch reference: `name`.py in the bench directory run as `python name.py THREADS arg1 [arg2]` with OMP_NUM_THREADS
 * set to match; its last number on stdout, or 0 (with a warning: the row's ratio is then 0) if it failed. */
static double torch_reference(const char* name, int threads, const char* arg1, const char* arg2) {
  const char* py = getenv("TG_BENCH_PYTHON");
  const char* dir = getenv("TG_BENCH_DIR");
  char script[4096], tbuf[32], obuf[64];
  snprintf(script, sizeof script, "%s/%s.py", dir && *dir ? dir : TG_BENCH_DIR, name);
  snprintf(tbuf, sizeof tbuf, "%d", threads);
  snprintf(obuf, sizeof obuf, "OMP_NUM_THREADS=%d", threads);
  char* argv[] = {(char*)(py && *py ? py : "/usr/bin/python3"), script, tbuf, (char*)arg1, (char*)arg2, NULL};
  const char* unset[] = {"OMP_NUM_THREADS", "MKL_NUM_THREADS", NULL};
  const char* set[] = {obuf, NULL};
  char* out = run_capture(argv, unset, set);
  double ref = last_number(out);
  free(out);
  if (ref <= 0) fprintf(stderr, "bench_ops: WARNING: PyTorch reference (%s %s) failed; its ratio is 0\n", argv[0], script), ref = 0;
  return ref;
}
static double bench_conv2d(int threads) {  /* returns PyTorch's ms */
  double ours = conv2d_ours(NULL);
  double ref = torch_reference("conv2d_torch", threads, "9", "2");
  add_row("conv2d", "ms", ours, "PyTorch", ref, 0);
  settle();
  add_row("conv2d backward weight", "ms", conv2d_backward_ours(1), "PyTorch", torch_reference("conv2d_torch", threads, "9", "weight"), 0);
  settle();
  add_row("conv2d backward input", "ms", conv2d_backward_ours(0), "PyTorch", torch_reference("conv2d_torch", threads, "9", "input"), 0);
  return ref;
}

/* ---- the CNN's layers in training, at the shapes of the train cnn model at batch 512 ---- */
/* max-pool 2x2 of x (512, 32, 20, 20) and its gradient for an incoming g (512, 32, 10, 10): forward and backward, as
 * autograd runs them; BatchNorm2d(32) in training on the same x: the batch statistics, the running ones assigned, and
 * the gradients of x, weight and bias. Each call rebuilds the graph (the schedule comes from the cache). */
typedef struct { tg_tensor *x, *g; tg_module* bn; } layer_ctx;
static double pool_back_tg(void* p) {
  layer_ctx* c = p;
  double t0 = now();
  tg_tensor *y = tg_tensor_max_pool2d(c->x, 2, 2, 2, 2, 1, 1, 0, 0), *yg = y ? tg_tensor_mul(y, c->g) : NULL;
  tg_tensor *loss = yg ? tg_tensor_sum(yg, NULL, 0, 0) : NULL, *grad = NULL;
  CHECK(loss && tg_tensor_gradient(loss, &c->x, 1, &grad) == TG_OK);
  tg_tensor_release(y), tg_tensor_release(yg), tg_tensor_release(loss);
  return realize_timed(t0, grad);
}
static double bn_step_tg(void* p) {
  layer_ctx* c = p;
  double t0 = now();
  tg_tensor *w = tg_module_get(c->bn, "weight"), *b = tg_module_get(c->bn, "bias"), *rm = tg_module_get(c->bn, "running_mean"),
            *rv = tg_module_get(c->bn, "running_var");
  tg_tensor *y = tg_module_call(c->bn, c->x), *yg = y ? tg_tensor_mul(y, c->g) : NULL, *loss = yg ? tg_tensor_sum(yg, NULL, 0, 0) : NULL;
  tg_tensor *wrt[3] = {c->x, w, b}, *all[5] = {NULL, NULL, NULL, rm, rv};
  CHECK(w && b && rm && rv && loss && tg_tensor_gradient(loss, wrt, 3, all) == TG_OK);
  CHECK(tg_tensor_realize_many(all, 5) == TG_OK);
  double dt = now() - t0;
  for (int i = 0; i < 5; i++) tg_tensor_release(all[i]);
  tg_tensor_release(w), tg_tensor_release(b), tg_tensor_release(y), tg_tensor_release(yg), tg_tensor_release(loss);
  return dt;
}
static void bench_layers(int threads) {
  int64_t xs[4] = {512, 32, 20, 20}, ps[4] = {512, 32, 10, 10};
  size_t xn = 512 * 32 * 400, pn = xn / 4;
  layer_ctx c = {tg_tensor_randn(xs, 4, TG_FLOAT32, NULL), tg_tensor_randn(ps, 4, TG_FLOAT32, NULL), tg_nn_batchnorm(32, 1e-5, 0.1, 1, 1, NULL)};
  CHECK(c.x && c.g && c.bn && tg_tensor_realize(c.x) == TG_OK && tg_tensor_realize(c.g) == TG_OK);
  float *hx = malloc(xn * sizeof(float)), *hg = malloc(xn * sizeof(float)), *hd = malloc(xn * sizeof(float));
  CHECK(hx && hg && hd && tg_tensor_to_data(c.x, hx, xn * sizeof(float)) == TG_OK && tg_tensor_to_data(c.g, hg, pn * sizeof(float)) == TG_OK);
  /* the pool's gradient, every element: g at each window's max (randn: no ties), 0 elsewhere */
  tg_tensor *y = tg_tensor_max_pool2d(c.x, 2, 2, 2, 2, 1, 1, 0, 0), *yg = y ? tg_tensor_mul(y, c.g) : NULL, *loss = yg ? tg_tensor_sum(yg, NULL, 0, 0) : NULL;
  tg_tensor* grad = NULL;
  CHECK(loss && tg_tensor_gradient(loss, &c.x, 1, &grad) == TG_OK && tg_tensor_to_data(grad, hd, xn * sizeof(float)) == TG_OK);
  tg_tensor_release(y), tg_tensor_release(yg), tg_tensor_release(loss), tg_tensor_release(grad);
  for (size_t nc = 0; nc < 512 * 32; nc++)
    for (int oy = 0; oy < 10; oy++)
      for (int ox = 0; ox < 10; ox++) {
        size_t at[4], best = 0;
        for (int k = 0; k < 4; k++) {
          at[k] = (nc * 20 + 2 * oy + k / 2) * 20 + 2 * ox + k % 2;
          if (hx[at[k]] > hx[at[best]]) best = (size_t)k;
        }
        for (int k = 0; k < 4; k++)
          if (hd[at[k]] != ((size_t)k == best ? hg[(nc * 10 + oy) * 10 + ox] : 0.0f))
            DIE("maxpool2d backward: d x[%zu] = %g, want %g", at[k], hd[at[k]], (size_t)k == best ? hg[(nc * 10 + oy) * 10 + ox] : 0.0f);
      }
  add_row("maxpool2d backward", "ms", 1e3 * time_median(pool_back_tg, &c, 2, 5, 15, 10.0), "PyTorch", torch_reference("layers_torch", threads, "9", "maxpool"), 0);
  tg_tensor_release(c.g);
  c.g = tg_tensor_randn(xs, 4, TG_FLOAT32, NULL);
  CHECK(c.g && tg_tensor_realize(c.g) == TG_OK && tg_tensor_to_data(c.g, hg, xn * sizeof(float)) == TG_OK);
  CHECK(tg_set_option("TRAINING", "1") == TG_OK);
  /* BatchNorm's bias and weight gradients of channel 3 against float64 sums: d b = sum g, d w = sum g * (x - mean) / std */
  tg_tensor *bw = tg_module_get(c.bn, "weight"), *bb = tg_module_get(c.bn, "bias");
  tg_tensor *by = bw && bb ? tg_module_call(c.bn, c.x) : NULL, *byg = by ? tg_tensor_mul(by, c.g) : NULL, *bl = byg ? tg_tensor_sum(byg, NULL, 0, 0) : NULL;
  tg_tensor *bwrt[2] = {bw, bb}, *bgr[2] = {NULL, NULL};
  CHECK(bl && tg_tensor_gradient(bl, bwrt, 2, bgr) == TG_OK);
  float gw[32], gb[32];
  CHECK(tg_tensor_to_data(bgr[0], gw, sizeof gw) == TG_OK && tg_tensor_to_data(bgr[1], gb, sizeof gb) == TG_OK);
  double mean = 0, var = 0, dw = 0, db = 0;
  for (int n = 0; n < 512; n++)
    for (int i = 0; i < 400; i++) mean += hx[(n * 32 + 3) * 400 + i];
  mean /= 512 * 400;
  for (int n = 0; n < 512; n++)
    for (int i = 0; i < 400; i++) var += (hx[(n * 32 + 3) * 400 + i] - mean) * (hx[(n * 32 + 3) * 400 + i] - mean);
  var /= 512 * 400;
  for (int n = 0; n < 512; n++)
    for (int i = 0; i < 400; i++) {
      size_t k = (size_t)(n * 32 + 3) * 400 + (size_t)i;
      db += hg[k], dw += hg[k] * (hx[k] - mean) / sqrt(var + 1e-5);
    }
  if (fabs(gb[3] - db) > 1e-3 * fabs(db) + 0.5 || fabs(gw[3] - dw) > 1e-3 * fabs(dw) + 0.5)
    DIE("batchnorm2d train step: d bias[3] = %g (want %g), d weight[3] = %g (want %g)", gb[3], db, gw[3], dw);
  tg_tensor_release(bw), tg_tensor_release(bb), tg_tensor_release(by), tg_tensor_release(byg), tg_tensor_release(bl);
  tg_tensor_release(bgr[0]), tg_tensor_release(bgr[1]);
  add_row("batchnorm2d train step", "ms", 1e3 * time_median(bn_step_tg, &c, 2, 5, 15, 10.0), "PyTorch", torch_reference("layers_torch", threads, "9", "batchnorm"), 0);
  CHECK(tg_set_option("TRAINING", "0") == TG_OK);
  free(hx), free(hg), free(hd);
  tg_tensor_release(c.x), tg_tensor_release(c.g), tg_module_release(c.bn);
}

/* ---- the JIT: a replayed training step against the same step in PyTorch ---- */
static double bench_jit_mlp(int threads) {
  double first = 0, last = 0;
  double ours = jit_step_mlp_us(300, &first, &last);
  if (!(last < first)) DIE("jit step mlp: the loss went from %g to %g: the replayed step does not train", first, last);
  settle();
  add_row("jit step mlp", "us", ours, "PyTorch", torch_reference("mlp_torch", threads, "300", NULL), 0);
  return ours;
}

static double bench_tiny(int runs);

/* ---- VIZ: the same two rows recording (tg_viz_enable), against the rows just measured with it off ---- */
static void bench_viz(double tiny_off, double mlp_off) {
  CHECK(tg_viz_enable(1) == TG_OK);
  double tiny_on = bench_tiny(2000), first = 0, last = 0, mlp_on = jit_step_mlp_us(300, &first, &last);
  CHECK(tg_viz_enable(0) == TG_OK);
  char buf[64];  /* the index's length, before the records are cleared */
  if (tg_viz_json("/api/index", buf, sizeof buf) < 100) DIE("viz: nothing was recorded");
  CHECK(tg_viz_clear() == TG_OK);
  add_row("tiny realize viz on", "us", tiny_on, "VIZ=0", tiny_off, 0);
  add_row("jit step mlp viz on", "us", mlp_on, "VIZ=0", mlp_off, 0);
}

/* ---- training: examples/c/train_fashion_mnist against the same training in PyTorch, steps per second ---- */
/* the path of `name`, a program built beside bench_ops (the examples), into exe[4096] */
static void sibling_exe(char* exe, const char* name) {
  ssize_t n = readlink("/proc/self/exe", exe, 4096 - 64);
  if (n <= 0) DIE("readlink /proc/self/exe: %s", strerror(errno));
  exe[n] = 0;
  strcpy(strrchr(exe, '/') + 1, name);
}
/* ours on `threads` threads: steps per second of examples/c/train_fashion_mnist, its accuracy line printed */
static double train_fashion_ours(int threads, int steps) {
  char exe[4096], sbuf[32], tbuf[48];
  sibling_exe(exe, "example_train_fashion_mnist");
  snprintf(sbuf, sizeof sbuf, "%d", steps);
  snprintf(tbuf, sizeof tbuf, "NUM_CPU_THREADS=%d", threads);
  char out_path[] = "/tmp/tg_bench_fashion_XXXXXX";
  int fd = mkstemp(out_path);
  if (fd < 0) DIE("mkstemp: %s", strerror(errno));
  close(fd);
  char* argv[] = {exe, sbuf, "", out_path, NULL};
  const char* unset[] = {"NUM_CPU_THREADS", NULL};
  const char* set[] = {tbuf, NULL};
  char* out = run_capture(argv, unset, set);
  unlink(out_path);
  /* "trained N steps of batch B in T s (S steps/s)" */
  const char* line = out ? strstr(out, "trained ") : NULL;
  const char* paren = line ? strchr(line, '(') : NULL;
  double ours = paren ? strtod(paren + 1, NULL) : 0;
  if (!(ours > 0)) DIE("train fashion-mnist: %s did not report its steps/s:\n%s", exe, out ? out : "");
  const char* acc = strstr(out, "test accuracy:");
  printf("  train fashion-mnist: %d steps on %d thread%s, ours %.1f steps/s, %s", steps, threads, threads > 1 ? "s" : "", ours,
         acc ? acc : "(no accuracy)\n");
  free(out);
  return ours;
}
/* The MLP's training, both sides on 1 thread and on the run's count: `train fashion-mnist` is ours on the run's threads
 * against PyTorch at its faster count (PyTorch's per-step overhead grows with threads on this small model, so its best
 * is often 1), `train fashion-mnist 1t` each side on one thread */
static void bench_train_fashion(int threads, int steps) {
  char sbuf[32], hbuf[32];
  snprintf(sbuf, sizeof sbuf, "%d", steps);
  snprintf(hbuf, sizeof hbuf, "%d", FASHION_HIDDEN); /* the same model */
  double ours = train_fashion_ours(threads, steps), ours1 = threads > 1 ? train_fashion_ours(1, steps) : ours;
  settle();
  double t1 = torch_reference("train_fashion_torch", 1, sbuf, hbuf);
  double tn = threads > 1 ? torch_reference("train_fashion_torch", threads, sbuf, hbuf) : t1;
  printf("  train fashion-mnist: PyTorch %.1f steps/s on 1 thread, %.1f on %d\n", t1, tn, threads);
  static char ref[32];
  int best = tn > t1 ? threads : 1;
  snprintf(ref, sizeof ref, "PyTorch %d thread%s", best, best > 1 ? "s" : "");
  add_row("train fashion-mnist", "steps/s", ours, ref, tn > t1 ? tn : t1, 1);
  add_row("train fashion-mnist 1t", "steps/s", ours1, "PyTorch 1 thread", t1, 1);
}

/* ---- training a convnet: examples/c/train_cnn (beautiful_mnist's model, batch 512) against PyTorch at its faster
 * thread count (1 or that of the run), replayed steps per second ---- */
static void bench_train_cnn(int threads, int steps) {
  char exe[4096], sbuf[32];
  sibling_exe(exe, "example_train_cnn");
  snprintf(sbuf, sizeof sbuf, "%d", steps);
  char* argv[] = {exe, sbuf, NULL};
  char* out = run_capture(argv, NULL, NULL);
  /* "trained N steps of batch B in T s (S steps/s, R after the capture)" */
  const char* line = out ? strstr(out, "trained ") : NULL;
  const char* after = line ? strstr(line, ", ") : NULL;
  double ours = after ? strtod(after + 2, NULL) : 0;
  if (!(ours > 0)) DIE("train cnn fashion-mnist: %s did not report its steps/s:\n%s", exe, out ? out : "");
  const char* acc = strstr(out, "test accuracy:");
  printf("  train cnn fashion-mnist: %d steps, ours %s", steps, acc ? acc : "(no accuracy)\n");
  free(out);
  double best = 0;
  int best_threads = 1;
  int counts[2] = {1, threads};
  for (int i = 0; i < (threads > 1 ? 2 : 1); i++) {
    int t = counts[i];
    settle();
    double r = torch_reference("train_cnn_torch", t, sbuf, NULL);
    printf("  train cnn fashion-mnist: PyTorch on %d thread%s: %.3f steps/s\n", t, t > 1 ? "s" : "", r);
    if (r > best) best = r, best_threads = t;
  }
  static char ref[32];
  snprintf(ref, sizeof ref, "PyTorch %d thread%s", best_threads, best_threads > 1 ? "s" : "");
  add_row("train cnn fashion-mnist", "steps/s", ours, ref, best, 1);
}

/* ---- the model's eval over the 10,000 test images (examples/c/train_cnn with 0 steps): seconds, the median of 3 after a
 * warm-up, against PyTorch's forward at its faster thread count; and the planner's peak memory for it against 2 GB ---- */
static void bench_eval_cnn(int threads) {
  char exe[4096];
  sibling_exe(exe, "example_train_cnn");
  char* argv[] = {exe, "0", NULL};
  settle();
  char* out = run_capture(argv, NULL, NULL);
  const char* line = out ? strstr(out, "eval: ") : NULL;
  const char* in = line ? strstr(line, " in ") : NULL;
  const char* pk = line ? strstr(line, "peak memory ") : NULL;
  double secs = in ? strtod(in + 4, NULL) : 0, peak = pk ? strtod(pk + 12, NULL) : 0;
  if (!(secs > 0) || !(peak > 0)) DIE("eval cnn 10000: %s did not report its time and peak memory:\n%s", exe, out ? out : "");
  free(out);
  double best = 0;
  int best_threads = 1, counts[2] = {1, threads};
  for (int i = 0; i < (threads > 1 ? 2 : 1); i++) {
    settle();
    double r = torch_reference("eval_cnn_torch", counts[i], "3", NULL);
    printf("  eval cnn 10000: PyTorch on %d thread%s: %.3f s\n", counts[i], counts[i] > 1 ? "s" : "", r);
    if (r > 0 && (best == 0 || r < best)) best = r, best_threads = counts[i];
  }
  static char ref[32];
  snprintf(ref, sizeof ref, "PyTorch %d thread%s", best_threads, best_threads > 1 ? "s" : "");
  add_row("eval cnn 10000", "s", secs, ref, best, 0);
  add_row("eval cnn 10000 peak memory", "MB", peak, "limit 2 GB", 2048.0, 0);
}

/* ---- the exported classifier: examples/c/export_fashion_mnist writes the Fashion-MNIST MLP as C (tg_jit_export) and
 * times the library's replay of the same batch-1 JIT; examples/c/fashion_exported.c, built from the export alone with
 * clang -O2 -march=native, times itself on the 10,000 test images. Microseconds per image, medians of 5 passes. Two
 * pairs: the export without threads against the library on one thread (THREADS=0), and the export with threads=N (a
 * pthread pool in the generated code) against the library on all N of the run's cores ---- */
static double us_per_image(const char* out, const char* after) {
  const char* l = out ? strstr(out, after) : NULL;
  const char* u = l ? strstr(l, " us per image") : NULL;
  if (!u) return 0;
  while (u > l && (u[-1] == '.' || (u[-1] >= '0' && u[-1] <= '9'))) u--;
  return strtod(u, NULL);
}
/* exports with `threads` into a new directory, builds the program, returns its us per image and the library's */
static double exported_us(int threads, int lib_threads, double* lib) {
  char exe[4096], dir[] = "/tmp/tg_bench_export_XXXXXX", cmd[16384], nthreads[16];
  if (!mkdtemp(dir)) DIE("mkdtemp: %s", strerror(errno));
  sibling_exe(exe, "example_export_fashion_mnist");
  snprintf(nthreads, sizeof nthreads, "%d", threads);
  char* argv[] = {exe, "-", dir, "", "", nthreads, NULL};
  const char* one[] = {"THREADS=0", NULL};
  settle();
  char* out = run_capture(argv, NULL, lib_threads > 1 ? NULL : one);
  *lib = us_per_image(out, "library");
  if (!(*lib > 0)) DIE("exported mlp: %s did not report its time per image:\n%s", exe, out ? out : "");
  const char* bdir = getenv("TG_BENCH_DIR") ? getenv("TG_BENCH_DIR") : TG_BENCH_DIR;
  const char* cc = access("/usr/bin/clang", X_OK) == 0 ? "/usr/bin/clang" : "cc";
  snprintf(cmd, sizeof cmd, "%s -O2 -std=c99 -march=native %s -I%s %s/../examples/c/fashion_exported.c %s/fashion.c %s/fashion_weights.c -lm -o %s/prog",
           cc, threads > 1 ? "-pthread" : "", dir, bdir, dir, dir, dir);
  if (system(cmd) != 0) DIE("exported mlp: building the exported program failed: %s", cmd);
  char prog[4096];
  snprintf(prog, sizeof prog, "%s/prog", dir);
  char* pargv[] = {prog, dir, NULL};
  settle();
  char* pout = run_capture(pargv, NULL, NULL);
  double ours = us_per_image(pout, "exported program");
  if (!(ours > 0)) DIE("exported mlp: the exported program did not report its time:\n%s", pout ? pout : "");
  printf("  exported mlp, threads=%d: built with %s; %.2f us per image, the library on %d thread%s %.2f; %s", threads, cc, ours, lib_threads,
         lib_threads > 1 ? "s" : "", *lib, strstr(pout, "exported test accuracy") ? strstr(pout, "exported test accuracy") : "\n");
  free(out), free(pout);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "bench_ops: could not remove %s\n", dir);
  return ours;
}
static void bench_exported_mlp(int threads) {
  double lib1, ours1 = exported_us(0, 1, &lib1);
  add_row("exported mlp", "us", ours1, "tg_jit replay 1 thread", lib1, 0);
  if (threads > 1) {
    double libn, oursn = exported_us(threads, threads, &libn);
    static char refn[64];
    snprintf(refn, sizeof refn, "tg_jit replay %d threads (export threads=%d)", threads, threads);
    add_row("exported mlp", "us", oursn, refn, libn, 0);
  }
}

/* ---- compile time: the first realize of a new kernel minus a warm realize of the same graph ---- */
static tg_tensor* small_kernel(tg_tensor* x, int i) { /* x*(1+i/16) + i: a new constant per i */
  tg_tensor* m = tg_tensor_mul_scalar(x, 1.0 + i / 16.0);
  CHECK(m);
  tg_tensor* y = tg_tensor_add_scalar(m, (double)i);
  CHECK(y);
  tg_tensor_release(m);
  return y;
}
static double bench_compile(int nkernels) {
  double dt[64];
  if (nkernels > 64) nkernels = 64;
  for (int i = 0; i < nkernels; i++) {
    int64_t shape[1] = {1000 + 8 * i}; /* a new shape per i too */
    tg_tensor* x = tg_tensor_full(shape, 1, 0.5, TG_FLOAT32, NULL);
    CHECK(x && tg_tensor_realize(x) == TG_OK);
    uint64_t c0 = counter(1);
    double t0 = now();
    double cold = realize_timed(t0, small_kernel(x, i));
    uint64_t compiled = counter(1) - c0;
    if (compiled != 1) DIE("compile time: kernel %d compiled %llu programs, want 1 (is the disk cache off?)", i, (unsigned long long)compiled);
    double warm[5];
    for (int j = 0; j < 5; j++) {
      t0 = now();
      warm[j] = realize_timed(t0, small_kernel(x, i));
    }
    if (counter(1) != c0 + 1) DIE("compile time: the warm realizes of kernel %d compiled again", i);
    dt[i] = cold - median(warm, 5);
    tg_tensor_release(x);
  }
  return 1e3 * median(dt, nkernels);
}

/* ---- tiny realize: tg_tensor_realize of x+1 on 16 floats, every cache warm ---- */
static double bench_tiny(int runs) {
  int64_t shape[1] = {16};
  tg_tensor* x = tg_tensor_full(shape, 1, 1.0, TG_FLOAT32, NULL);
  CHECK(x && tg_tensor_realize(x) == TG_OK);
  static double t[5000];
  if (runs > 5000) runs = 5000;
  uint64_t k0 = 0;
  for (int i = -200; i < runs; i++) {
    if (i == 0) k0 = counter(0);
    tg_tensor* y = tg_tensor_add_scalar(x, 1.0);
    CHECK(y);
    double t0 = now();
    CHECK(tg_tensor_realize(y) == TG_OK);
    double d = now() - t0;
    tg_tensor_release(y);
    if (i >= 0) t[i] = d;
  }
  if (counter(0) - k0 < (uint64_t)runs) DIE("tiny realize: %llu kernels ran in %d realizes", (unsigned long long)(counter(0) - k0), runs);
  float check[16];
  tg_tensor* y = tg_tensor_add_scalar(x, 1.0);
  CHECK(y && tg_tensor_to_data(y, check, sizeof check) == TG_OK);
  if (check[0] != 2.0f || check[15] != 2.0f) DIE("tiny realize: x+1 gave %g", check[0]);
  tg_tensor_release(y), tg_tensor_release(x);
  return 1e6 * median(t, runs);
}

static void bench_beam(ew_ctx* ec, double gb, int quick, double skx1, double skx2, double torch_ms, double sum_ref_v);

/* the 16M-float input of the elementwise and sum rows, realized; ew_free releases it */
static ew_ctx ew_make(int threads) {
  const size_t N = 16u << 20;
  float *in = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
  CHECK(in && out);
  for (size_t i = 0; i < N; i++) in[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
  int64_t shape[1] = {(int64_t)N};
  ew_ctx ec = {tg_tensor_from_data(in, N * sizeof(float), TG_FLOAT32, shape, 1, NULL), in, out, N, threads};
  CHECK(ec.x && tg_tensor_realize(ec.x) == TG_OK);
  return ec;
}
static void ew_free(ew_ctx* ec) { tg_tensor_release(ec->x), free(ec->in), free(ec->out); }

/* every row but the BLAS child's */
static void bench_all(int threads, int quick) {
  ew_ctx ec = ew_make(threads);
  const size_t N = ec.n;
  /* bandwidth: bytes read + written per second */
  double gb = 2.0 * (double)N * sizeof(float) * 1e-9;
  double ours = gb / time_median(ew_tg, &ec, 2, 9, 9, 0);
  add_row("elementwise 16M", "GB/s", ours, "bandwidth loop", gb / time_median(ew_ref, &ec, 2, 9, 9, 0), 1);
  gb = (double)N * sizeof(float) * 1e-9;
  double sum_ours = gb / time_median(sum_tg, &ec, 2, 9, 9, 0), sum_ref_v = gb / time_median(sum_ref, &ec, 2, 9, 9, 0);
  add_row("sum 16M", "GB/s", sum_ours, "bandwidth loop", sum_ref_v, 1);

  /* matmul 1024: up to 7 runs, at least 3, no more once 10 s of timed runs have passed; matmul 2048: up to 5 runs, at
   * least 1, no more once 30 s have passed; if the warm-up call alone took over 30 s it is the one sample (the naive
   * kernel takes one to two minutes a call) */
  double skx1 = bench_matmul(1024, 3, 7, 10.0, threads), skx2 = 0, torch_ms = 0;
  if (!quick) skx2 = bench_matmul(2048, 1, 5, 30.0, threads), torch_ms = bench_conv2d(threads);
  add_row("compile time", "ms", bench_compile(9), "target", 15.0, 0);
  double tiny = bench_tiny(2000);
  add_row("tiny realize", "us", tiny, "", 0, 0);
  add_row("tiny jit replay", "us", tiny_jit_replay_us(200), "", 0, 0);
  bench_viz(tiny, bench_jit_mlp(threads));
  bench_train_fashion(threads, quick ? 500 : 6000);
  if (!quick) bench_train_cnn(threads, 20), bench_eval_cnn(threads), bench_layers(threads);
  bench_exported_mlp(threads);

  bench_beam(&ec, gb, quick, skx1, skx2, torch_ms, sum_ref_v);
  ew_free(&ec);
}

/* BEAM=2, set through the C API: each kernel searched afresh (CACHELEVEL=0 keeps the BEAM cache off too); the first
 * matmul 1024 call holds its search. Each is compared with the same reference as its plain row, and with the
 * heuristics' kernel timed in the same runs, call by call alternately (time_heur_beam): BEAM must not lose to it. */
static void bench_beam(ew_ctx* ec, double gb, int quick, double skx1, double skx2, double torch_ms, double sum_ref_v) {
  CHECK(tg_set_option("BEAM", "2") == TG_OK);
  double search_s = 0, h1 = 0, b1 = matmul_ours(1024, 3, 7, 10.0, &search_s, &h1);
  add_row("beam2 matmul 1024", "GFLOP/s", b1, blas_best, skx1, 1);
  add_row("beam2 matmul 1024", "GFLOP/s", b1, "heuristics", h1, 1);
  add_row("beam2 search time matmul 1024", "s", search_s, "", 0, 0);
  if (!quick) {
    double h2 = 0, b2 = matmul_ours(2048, 1, 5, 30.0, NULL, &h2);
    add_row("beam2 matmul 2048", "GFLOP/s", b2, blas_best, skx2, 1);
    add_row("beam2 matmul 2048", "GFLOP/s", b2, "heuristics", h2, 1);
    double hc = 0, bc = conv2d_ours(&hc);
    add_row("beam2 conv2d", "ms", bc, "PyTorch", torch_ms, 0);
    add_row("beam2 conv2d", "ms", bc, "heuristics", hc, 0);
  }
  double ths, tbs;
  time_heur_beam(sum_tg, ec, 9, 9, 0, &ths, &tbs);
  add_row("beam2 sum 16M", "GB/s", gb / tbs, "bandwidth loop", sum_ref_v, 1);
  add_row("beam2 sum 16M", "GB/s", gb / tbs, "heuristics", gb / ths, 1);
  CHECK(tg_set_option("BEAM", "0") == TG_OK);
}

/* TG_BENCH_ONLY="viz": tiny realize and jit step mlp with VIZ off and on, each measured 3 times alternately */
static void bench_viz_alone(int threads) {
  (void)threads;
  double t_off[3], t_on[3], m_off[3], m_on[3], first = 0, last = 0;
  for (int i = 0; i < 3; i++) {
    t_off[i] = bench_tiny(2000), m_off[i] = jit_step_mlp_us(300, &first, &last);
    CHECK(tg_viz_enable(1) == TG_OK);
    t_on[i] = bench_tiny(2000), m_on[i] = jit_step_mlp_us(300, &first, &last);
    CHECK(tg_viz_enable(0) == TG_OK && tg_viz_clear() == TG_OK);
  }
  add_row("tiny realize", "us", median(t_off, 3), "", 0, 0);
  add_row("tiny realize viz on", "us", median(t_on, 3), "VIZ=0", median(t_off, 3), 0);
  add_row("jit step mlp viz on", "us", median(m_on, 3), "VIZ=0", median(m_off, 3), 0);
}

/* TG_BENCH_ONLY="beam": the BEAM rows alone, with their references measured here */
static void bench_beam_alone(int threads, int quick) {
  ew_ctx ec = ew_make(threads);
  double gb = (double)ec.n * sizeof(float) * 1e-9, sum_ref_v = gb / time_median(sum_ref, &ec, 2, 9, 9, 0);
  int skx = __builtin_cpu_supports("avx512f");
  if (!skx) blas_best = "OpenBLAS";
  double skx1 = blas_ref(1024, 9, threads, skx ? "SkylakeX" : NULL), skx2 = quick ? 0 : blas_ref(2048, 5, threads, skx ? "SkylakeX" : NULL);
  double torch_ms = quick ? 0 : torch_reference("conv2d_torch", threads, "9", "2");
  bench_beam(&ec, gb, quick, skx1, skx2, torch_ms, sum_ref_v);
  ew_free(&ec);
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "--blas-only") == 0) return blas_only(atoi(argv[2]), argc >= 4 ? atoi(argv[3]) : 7);
  /* the compile-time row must compile: no kernel disk cache in this process (read at the first compile) */
  setenv("CACHELEVEL", "0", 1);
  int threads = bench_threads();
  int quick = getenv("TG_BENCH_QUICK") && atoi(getenv("TG_BENCH_QUICK")) > 0;
  printf("bench_ops: float32, %d threads for libtinygrad and every reference\n", threads);
  printf("%-16s %10s %-7s | %-18s %10s %-7s | %s\n", "benchmark", "libtinygrad", "", "reference", "", "", "ratio (higher is better for libtinygrad)");
  /* TG_BENCH_ONLY="exported mlp", "cnn layers", "beam", "conv", "viz" or "train": those rows alone (they need none of the others' set-up) */
  const char* only = getenv("TG_BENCH_ONLY");
  if (only && *only) {
    if (strcmp(only, "exported mlp") == 0) bench_exported_mlp(threads);
    else if (strcmp(only, "cnn layers") == 0) bench_eval_cnn(threads), bench_layers(threads);
    else if (strcmp(only, "beam") == 0) bench_beam_alone(threads, quick);
    else if (strcmp(only, "conv") == 0) bench_conv2d(threads);
    else if (strcmp(only, "viz") == 0) bench_viz_alone(threads);
    else if (strcmp(only, "train") == 0) bench_train_fashion(threads, quick ? 500 : 6000), bench_train_cnn(threads, 20);
    else DIE("TG_BENCH_ONLY: '%s' is not a group that runs alone (\"exported mlp\", \"cnn layers\", \"beam\", \"conv\", \"viz\", \"train\")", only);
  } else {
    bench_all(threads, quick);
  }

  if (argc > 1) {
    FILE* f = fopen(argv[1], "w");
    CHECK(f);
    fprintf(f, "[\n");
    for (int i = 0; i < nrows; i++)
      fprintf(f, "  {\"name\": \"%s\", \"value\": %.4f, \"unit\": \"%s\", \"reference\": \"%s\", \"reference_value\": %.4f, \"ratio\": %.4f}%s\n", rows[i].name,
              rows[i].value, rows[i].unit, rows[i].reference, rows[i].reference_value, rows[i].ratio, i + 1 < nrows ? "," : "");
    fprintf(f, "]\n");
    fclose(f);
    printf("wrote %s\n", argv[1]);
  }
  return 0;
}
