/* The JIT rows of bench_ops. The step is what a C training loop runs: forward, cross-entropy, backward, and for every
 * parameter m = b1*m + (1-b1)*g, v = b2*v + (1-b2)*g^2, w -= lr * m / (sqrt(v) + eps), all lazy, captured once and
 * replayed. bench/mlp_torch.py times the same step in PyTorch (torch.optim.Adam without bias correction). */
#include "jit_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinygrad.h"

#define NEED(x)                                                                               \
  do {                                                                                        \
    if (!(x)) {                                                                               \
      fprintf(stderr, "bench_ops: %s:%d: %s failed: %s\n", __FILE__, __LINE__, #x, tg_last_error_message()); \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int cmp_d(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}
static double median_of(double* t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* ---- the MLP step ---- */
enum { IN = 784, HID = 128, OUT = 10, BS = 64, NP = 4 };
typedef struct {
  tg_tensor *p[NP], *m[NP], *v[NP];
} mlp;
/* t = t op-free rebinding: release the old reference, keep the new one */
static tg_tensor* keep(tg_tensor** slot, tg_tensor* t) {
  NEED(t);
  tg_tensor_release(*slot);
  return *slot = t;
}
static tg_status step(void* u, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  (void)n_in;
  mlp* m = u;
  tg_tensor *h = NULL, *t = NULL, *loss = NULL;
  for (int i = 0; i < NP; i++) tg_tensor_set_grad(m->p[i], NULL);
  keep(&h, tg_tensor_matmul(in[0], m->p[0]));
  keep(&h, tg_tensor_add(h, m->p[1]));
  keep(&h, tg_tensor_relu(h));
  keep(&t, tg_tensor_matmul(h, m->p[2]));
  keep(&t, tg_tensor_add(t, m->p[3]));
  keep(&loss, tg_tensor_sparse_categorical_crossentropy(t, in[1], -1, 0, 1));
  NEED(tg_tensor_backward(loss) == TG_OK);
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (int i = 0; i < NP; i++) {
    tg_tensor *g = tg_tensor_grad(m->p[i]), *a = NULL, *b = NULL;
    NEED(g);
    keep(&a, tg_tensor_mul_scalar(m->m[i], b1)), keep(&b, tg_tensor_mul_scalar(g, 1 - b1)), keep(&a, tg_tensor_add(a, b));
    NEED(tg_tensor_assign(m->m[i], a) == TG_OK);
    keep(&a, tg_tensor_mul_scalar(m->v[i], b2)), keep(&b, tg_tensor_square(g)), keep(&b, tg_tensor_mul_scalar(b, 1 - b2)), keep(&a, tg_tensor_add(a, b));
    NEED(tg_tensor_assign(m->v[i], a) == TG_OK);
    keep(&a, tg_tensor_sqrt(m->v[i])), keep(&a, tg_tensor_add_scalar(a, eps)), keep(&a, tg_tensor_div(m->m[i], a)), keep(&a, tg_tensor_mul_scalar(a, lr));
    keep(&a, tg_tensor_sub(m->p[i], a));
    NEED(tg_tensor_assign(m->p[i], a) == TG_OK);
    tg_tensor_release(a), tg_tensor_release(b), tg_tensor_release(g);
  }
  tg_tensor_release(h), tg_tensor_release(t);
  if (n_out) out[0] = loss;
  else tg_tensor_release(loss);
  return TG_OK;
}

static float lcg(unsigned* s) { return (float)((*s = *s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f; }

double jit_step_mlp_us(int steps, double* first_loss, double* last_loss) {
  static const int64_t shapes[NP][2] = {{IN, HID}, {HID, 1}, {HID, OUT}, {OUT, 1}};
  static const size_t ndims[NP] = {2, 1, 2, 1};
  mlp m;
  unsigned seed = 1;
  for (int i = 0; i < NP; i++) {
    size_t n = (size_t)(shapes[i][0] * (ndims[i] == 2 ? shapes[i][1] : 1));
    float* w = malloc(n * sizeof(float));
    for (size_t k = 0; k < n; k++) w[k] = lcg(&seed) * (i % 2 ? 0.1f : 0.1f);
    NEED(m.p[i] = tg_tensor_from_data(w, n * sizeof(float), TG_FLOAT32, shapes[i], ndims[i], NULL));
    NEED(m.m[i] = tg_tensor_zeros(shapes[i], ndims[i], TG_FLOAT32, NULL));
    NEED(m.v[i] = tg_tensor_zeros(shapes[i], ndims[i], TG_FLOAT32, NULL));
    NEED(tg_tensor_set_requires_grad(m.p[i], 1) == TG_OK);
    NEED(tg_tensor_realize(m.m[i]) == TG_OK && tg_tensor_realize(m.v[i]) == TG_OK);
    free(w);
  }
  /* four batches of a learnable problem: the label is the argmax of the first 10 features */
  enum { NB = 4 };
  tg_tensor *xs[NB], *ys[NB];
  float* x = malloc(sizeof(float) * BS * IN);
  int32_t y[BS];
  for (int b = 0; b < NB; b++) {
    for (int r = 0; r < BS; r++) {
      int best = 0;
      for (int c = 0; c < IN; c++) {
        x[r * IN + c] = lcg(&seed);
        if (c < OUT && x[r * IN + c] > x[r * IN + best]) best = c;
      }
      y[r] = best;
    }
    int64_t xsh[2] = {BS, IN}, ysh[1] = {BS};
    NEED(xs[b] = tg_tensor_from_data(x, sizeof(float) * BS * IN, TG_FLOAT32, xsh, 2, NULL));
    NEED(ys[b] = tg_tensor_from_data(y, sizeof y, TG_INT32, ysh, 1, NULL));
  }
  free(x);
  tg_jit* jit = tg_jit_create(step, &m);
  NEED(jit);
  double* t = malloc(sizeof(double) * (size_t)steps);
  for (int i = -3; i < steps; i++) {
    tg_tensor* in[2] = {xs[(i + 3) % NB], ys[(i + 3) % NB]};
    tg_tensor* loss = NULL;
    double t0 = now_s();
    NEED(tg_jit_call(jit, in, 2, &loss, 1) == TG_OK);
    if (i >= 0) t[i] = now_s() - t0;
    if (i == -3 || i == steps - 1) {
      float l;
      NEED(tg_tensor_to_data(loss, &l, sizeof l) == TG_OK);
      *(i == -3 ? first_loss : last_loss) = l;
    }
    tg_tensor_release(loss);
  }
  NEED(tg_jit_call_count(jit) == steps + 3);
  tg_jit_release(jit);
  for (int i = 0; i < NP; i++) tg_tensor_release(m.p[i]), tg_tensor_release(m.m[i]), tg_tensor_release(m.v[i]);
  for (int b = 0; b < NB; b++) tg_tensor_release(xs[b]), tg_tensor_release(ys[b]);
  double med = median_of(t, steps);
  free(t);
  return 1e6 * med;
}

/* ---- tiny replay ---- */
static tg_status plus_one(void* u, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  (void)u, (void)n_in;
  if (n_out && !(out[0] = tg_tensor_add_scalar(in[0], 1.0))) return tg_last_error();
  return TG_OK;
}
double tiny_jit_replay_us(int runs) {
  int64_t shape[1] = {16};
  tg_tensor* x = tg_tensor_full(shape, 1, 1.0, TG_FLOAT32, NULL);
  NEED(x && tg_tensor_realize(x) == TG_OK);
  tg_jit* jit = tg_jit_create(plus_one, NULL);
  NEED(jit);
  double* t = malloc(sizeof(double) * (size_t)runs);
  /* timed in blocks of 100 calls: one call is about as long as a clock read */
  for (int i = -20; i < runs; i++) {
    double t0 = now_s();
    for (int k = 0; k < 100; k++) {
      tg_tensor* y = NULL;
      NEED(tg_jit_call(jit, &x, 1, &y, 1) == TG_OK);
      tg_tensor_release(y);
    }
    if (i >= 0) t[i] = (now_s() - t0) / 100;
  }
  float check[16];
  tg_tensor* y = NULL;
  NEED(tg_jit_call(jit, &x, 1, &y, 1) == TG_OK && tg_tensor_to_data(y, check, sizeof check) == TG_OK);
  if (check[0] != 2.0f || check[15] != 2.0f) fprintf(stderr, "bench_ops: tiny jit replay: x+1 gave %g\n", check[0]), exit(1);
  tg_tensor_release(y), tg_tensor_release(x);
  tg_jit_release(jit);
  double med = median_of(t, runs);
  free(t);
  return 1e6 * med;
}
