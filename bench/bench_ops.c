/* bench_ops: end-to-end timings through the C API next to references measured in the same run.
 *   elementwise 16M : ((x+1)*2-1)/2 on 16M floats  vs a plain C loop doing the same work (bandwidth loop)
 *   sum 16M         : full sum of 16M floats        vs a plain C summation loop (bandwidth loop)
 *   matmul 1024     : 1024x1024x1024 float32       vs OpenBLAS cblas_sgemm
 * Each figure is the median of several runs after warm-up. Rows are printed and written as JSON to argv[1]. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tinygrad.h>

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

typedef struct {
  const char *name, *unit, *reference;
  double value, reference_value;
} row;
static row rows[8];
static int nrows = 0;

#define RUNS 7
typedef double (*timed_fn)(void* ctx);
static double time_median(timed_fn f, void* ctx, int warmup) {
  double t[RUNS];
  for (int i = 0; i < warmup; i++) f(ctx);
  for (int i = 0; i < RUNS; i++) t[i] = f(ctx);
  return median(t, RUNS);
}

/* realize `t` (built since t0), release it, and return the seconds since t0 */
static double realize_timed(double t0, tg_tensor* t) {
  CHECK(t && tg_tensor_realize(t) == TG_OK);
  double dt = now() - t0;
  tg_tensor_release(t);
  return dt;
}

/* ---- elementwise ---- */
typedef struct { tg_tensor* x; float *in, *out; size_t n; } ew_ctx;
static double ew_tg(void* p) {
  ew_ctx* c = p;
  double t0 = now();
  tg_tensor *a = tg_tensor_add_scalar(c->x, 1), *b = tg_tensor_mul_scalar(a, 2), *d = tg_tensor_sub_scalar(b, 1);
  double t = realize_timed(t0, tg_tensor_div_scalar(d, 2));
  tg_tensor_release(a), tg_tensor_release(b), tg_tensor_release(d);
  return t;
}
static double ew_ref(void* p) {
  ew_ctx* c = p;
  double t0 = now();
  for (size_t i = 0; i < c->n; i++) c->out[i] = ((c->in[i] + 1.0f) * 2.0f - 1.0f) / 2.0f;
  return now() - t0;
}
/* ---- sum ---- */
static volatile float sink;
static double sum_tg(void* p) {
  ew_ctx* c = p;
  double t0 = now();
  return realize_timed(t0, tg_tensor_sum(c->x, NULL, 0, 0));
}
static double sum_ref(void* p) {
  ew_ctx* c = p;
  double t0 = now();
  float acc[16] = {0};
  for (size_t i = 0; i + 16 <= c->n; i += 16)
    for (int j = 0; j < 16; j++) acc[j] += c->in[i + (size_t)j];
  float s = 0;
  for (int j = 0; j < 16; j++) s += acc[j];
  sink = s;
  return now() - t0;
}
/* ---- matmul ---- */
typedef struct { tg_tensor *a, *b; float *ha, *hb, *hc; int n; } mm_ctx;
static double mm_tg(void* p) {
  mm_ctx* c = p;
  double t0 = now();
  return realize_timed(t0, tg_tensor_matmul(c->a, c->b));
}
static double mm_ref(void* p) {
  mm_ctx* c = p;
  double t0 = now();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->n, c->n, c->n, 1.0f, c->ha, c->n, c->hb, c->n, 0.0f, c->hc, c->n);
  return now() - t0;
}

static void add_row(const char* name, const char* unit, double v, const char* ref, double rv) {
  rows[nrows++] = (row){name, unit, ref, v, rv};
  printf("%-16s %10.2f %-7s | %-16s %10.2f %-7s | ratio %.3f\n", name, v, unit, ref, rv, unit, v / rv);
}

int main(int argc, char** argv) {
  const size_t N = 16u << 20;
  float* in = malloc(N * sizeof(float));
  float* out = malloc(N * sizeof(float));
  for (size_t i = 0; i < N; i++) in[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
  int64_t shape[1] = {(int64_t)N};
  ew_ctx ec = {tg_tensor_from_data(in, N * sizeof(float), TG_FLOAT32, shape, 1, NULL), in, out, N};
  CHECK(ec.x);
  printf("%-16s %10s %-7s | %-16s %10s %-7s | %s\n", "benchmark", "libtinygrad", "", "reference", "", "", "ratio (higher is better for libtinygrad)");
  /* bandwidth: bytes read + written per second */
  double gb = 2.0 * (double)N * sizeof(float) * 1e-9;
  add_row("elementwise 16M", "GB/s", gb / time_median(ew_tg, &ec, 2), "bandwidth loop", gb / time_median(ew_ref, &ec, 2));
  gb = (double)N * sizeof(float) * 1e-9;
  add_row("sum 16M", "GB/s", gb / time_median(sum_tg, &ec, 2), "bandwidth loop", gb / time_median(sum_ref, &ec, 2));

  int n = 1024;
  size_t nn = (size_t)n * (size_t)n;
  mm_ctx mc = {NULL, NULL, malloc(nn * sizeof(float)), malloc(nn * sizeof(float)), malloc(nn * sizeof(float)), n};
  for (size_t i = 0; i < nn; i++) mc.ha[i] = (float)(i % 7) * 0.1f, mc.hb[i] = (float)(i % 5) * 0.1f;
  int64_t ms[2] = {n, n};
  mc.a = tg_tensor_from_data(mc.ha, nn * sizeof(float), TG_FLOAT32, ms, 2, NULL);
  mc.b = tg_tensor_from_data(mc.hb, nn * sizeof(float), TG_FLOAT32, ms, 2, NULL);
  CHECK(mc.a && mc.b);
  double flop = 2.0 * n * n * (double)n * 1e-9;
  add_row("matmul 1024", "GFLOP/s", flop / time_median(mm_tg, &mc, 1), "OpenBLAS", flop / time_median(mm_ref, &mc, 1));

  if (argc > 1) {
    FILE* f = fopen(argv[1], "w");
    CHECK(f);
    fprintf(f, "[\n");
    for (int i = 0; i < nrows; i++)
      fprintf(f, "  {\"name\": \"%s\", \"value\": %.4f, \"unit\": \"%s\", \"reference\": \"%s\", \"reference_value\": %.4f, \"ratio\": %.4f}%s\n", rows[i].name,
              rows[i].value, rows[i].unit, rows[i].reference, rows[i].reference_value, rows[i].value / rows[i].reference_value, i + 1 < nrows ? "," : "");
    fprintf(f, "]\n");
    fclose(f);
    printf("wrote %s\n", argv[1]);
  }
  tg_tensor_release(ec.x), tg_tensor_release(mc.a), tg_tensor_release(mc.b);
  free(in), free(out), free(mc.ha), free(mc.hb), free(mc.hc);
  return 0;
}
