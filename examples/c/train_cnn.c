/* train_cnn: train tinygrad's beautiful_mnist convolutional net on Fashion-MNIST from C, then print test accuracy.
 *
 * The model: conv 5x5 32, ReLU, conv 5x5 32, ReLU, BatchNorm, max-pool 2x2, conv 3x3 64, ReLU, conv 3x3 64, ReLU,
 * BatchNorm, max-pool 2x2, flatten, Linear 576 -> 10. Adam on random batches of 512 (indices drawn by randint inside the
 * step), under a TinyJit: the second step is captured and every later one replays its kernels. The images go in as
 * they come (uint8, 0..255), as in tinygrad's example. The recipe adds three things to that example's (Adam at 1e-3,
 * about 0.90 here after 1000 steps, over-fitting by then): each image mirrored at random, label smoothing 0.1, and the
 * lr decayed from 2e-3 to 0 along a cosine. The last line is the test accuracy over the 10,000 test images.
 *
 * With 0 steps it only evaluates the untrained model, three times after a warm-up: the eval's seconds (the median) and
 * the peak memory the planner gives its kernels, all 10,000 images in one graph (tinygrad's get_test_acc).
 *
 * usage: train_cnn [steps] [data dir] [batch]   (defaults: 1500 steps, /usr/share/datasets/fashion-mnist, 512) */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <tinygrad.h>
#include <unistd.h>

#include "fashion_mnist_model.h" /* fashion_accuracy: argmax of the logits against the labels */

enum { NLAYERS = 14 };
static int64_t batch = 512;
static const double kLr = 2e-3, kSmoothing = 0.1; /* Adam's peak lr, decayed along a cosine to 0; label smoothing */

#define TRY(x)                                                                                              \
  do {                                                                                                      \
    if (!(x)) {                                                                                             \
      fprintf(stderr, "%s failed: %s (%s)\n", #x, tg_last_error_message(), tg_status_name(tg_last_error())); \
      exit(1);                                                                                              \
    }                                                                                                       \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the model, as a new reference (NULL with the error set) */
static tg_module* cnn_model(void) {
  tg_module* l[NLAYERS] = {
      tg_nn_conv2d(1, 32, 5, 5, 1, 0, 1, 1, 1, NULL),  tg_nn_function("relu"), tg_nn_conv2d(32, 32, 5, 5, 1, 0, 1, 1, 1, NULL),
      tg_nn_function("relu"),                          tg_nn_batchnorm(32, 1e-5, 0.1, 1, 1, NULL), tg_nn_function("max_pool2d"),
      tg_nn_conv2d(32, 64, 3, 3, 1, 0, 1, 1, 1, NULL), tg_nn_function("relu"), tg_nn_conv2d(64, 64, 3, 3, 1, 0, 1, 1, 1, NULL),
      tg_nn_function("relu"),                          tg_nn_batchnorm(64, 1e-5, 0.1, 1, 1, NULL), tg_nn_function("max_pool2d"),
      tg_nn_function("flatten"),                       tg_nn_linear(576, 10, 1, NULL)};
  int ok = 1;
  for (int i = 0; i < NLAYERS; i++) ok &= l[i] != NULL;
  tg_module* m = ok ? tg_nn_sequential(l, NLAYERS) : NULL;
  for (int i = 0; i < NLAYERS; i++) tg_module_release(l[i]);
  return m;
}

typedef struct {
  tg_module* model;
  tg_optimizer* opt;
} trainer;

/* x (n images) with each image mirrored left to right at random (p = 1/2), inside the step: garments are symmetric
 * enough that a mirrored one is another sample of its class. Takes x's reference: the result, or NULL with the error set. */
static tg_tensor* flip_half(tg_tensor* x, int64_t n) {
  int64_t sh[4] = {n, 1, 1, 1}, ax = 3;
  tg_tensor *u = tg_tensor_rand(sh, 4, TG_FLOAT32, NULL), *half = u ? tg_tensor_full_like(u, 0.5) : NULL;
  tg_tensor *c = half ? tg_tensor_lt(u, half) : NULL, *f = c ? tg_tensor_flip(x, &ax, 1) : NULL, *m = f ? tg_tensor_where(c, f, x) : NULL;
  /* realized: the first conv's kernels (forward and weight gradient) then read a plain buffer, not a gather through a
   * select of two windows (that conv's weight gradient took 8.7 ms a step instead of 2.3) */
  tg_tensor* out = m ? tg_tensor_contiguous(m) : NULL;
  tg_tensor_release(u), tg_tensor_release(half), tg_tensor_release(c), tg_tensor_release(f), tg_tensor_release(m), tg_tensor_release(x);
  return out;
}

/* One step, captured by the JIT: inputs are the training images (N, 1, 28, 28) and labels (N,); the output the loss.
 * The optimizer's updates (and BatchNorm's running statistics) are assigns the JIT realizes with the loss. */
static tg_status train_step(void* userdata, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  trainer* tr = userdata;
  int64_t bs = batch, n_train = tg_tensor_numel(in[1]);
  (void)n_in, (void)n_out;
  tg_tensor *samples = NULL, *xb = NULL, *yb = NULL, *logits = NULL, *loss = NULL;
  tg_status st = TG_ERROR_INTERNAL;
  if (tg_optimizer_zero_grad(tr->opt) != TG_OK) return tg_last_error();
  if (!(samples = tg_tensor_randint(&bs, 1, 0, n_train, TG_INT32, NULL))) goto done;
  tg_index idx = {.kind = TG_INDEX_TENSOR, .tensor = samples};
  if (!(xb = tg_tensor_getitem(in[0], &idx, 1)) || !(yb = tg_tensor_getitem(in[1], &idx, 1))) goto done;
  if (!(xb = flip_half(xb, bs))) goto done;
  if (!(logits = tg_module_call(tr->model, xb))) goto done;
  if (!(loss = tg_tensor_sparse_categorical_crossentropy(logits, yb, -1, kSmoothing, 1))) goto done;
  if (tg_tensor_backward(loss) != TG_OK) goto done;
  tg_tensor* upd[64];
  int64_t n_upd = tg_optimizer_schedule_step(tr->opt, upd, 64);
  if (n_upd < 0) goto done;
  for (int64_t i = 0; i < n_upd; i++) tg_tensor_release(upd[i]);
  out[0] = loss, loss = NULL;
  st = TG_OK;
done:
  if (st != TG_OK) st = tg_last_error();
  tg_tensor_release(samples), tg_tensor_release(xb), tg_tensor_release(yb), tg_tensor_release(logits), tg_tensor_release(loss);
  return st;
}

/* one eval of all the test images, planned before it runs: its seconds and the planner's peak bytes */
static double eval_planned(tg_module* model, tg_tensor* x, tg_tensor* labels, double* secs, int64_t* peak) {
  double t0 = now_s();
  tg_tensor* acc = fashion_accuracy_tensor(model, x, labels);
  TRY(acc);
  tg_plan* plan = tg_plan_create(&acc, 1);
  TRY(plan);
  TRY(tg_plan_memory(plan, NULL, peak) == TG_OK);
  TRY(tg_plan_run(plan) == TG_OK);
  float a = -1;
  TRY(tg_tensor_to_data(acc, &a, sizeof a) == TG_OK);
  *secs = now_s() - t0;
  tg_plan_release(plan), tg_tensor_release(acc);
  return a;
}
static int eval_only(tg_module* model, tg_tensor* x, tg_tensor* labels) {
  double s[4], acc = 0;
  int64_t peak = 0;
  for (int i = 0; i < 4; i++) acc = eval_planned(model, x, labels, &s[i], &peak);
  for (int i = 1; i < 4; i++) /* the median of the three after the warm-up */
    for (int j = i + 1; j < 4; j++)
      if (s[j] < s[i]) { double t = s[i]; s[i] = s[j], s[j] = t; }
  printf("eval: %lld test images in %.3f s (median of 3 after a warm-up of %.3f s), planned peak memory %.1f MB\n",
         (long long)tg_tensor_numel(labels), s[2], s[0], (double)peak / (1 << 20));
  printf("test accuracy: %.4f (untrained)\n", acc);
  return 0;
}

int main(int argc, char** argv) {
  int steps = argc > 1 && *argv[1] ? atoi(argv[1]) : 1500;
  const char* dir = argc > 2 && *argv[2] ? argv[2] : NULL;
  if (argc > 3) batch = atoll(argv[3]);
  if (steps < 0 || batch < 1) {
    fprintf(stderr, "usage: %s [steps >= 0] [data dir] [batch >= 1]\n", argv[0]);
    return 2;
  }
  double t0 = now_s();
  tg_manual_seed(42);

  tg_tensor *xtr, *ytr, *xte, *yte;
  TRY(tg_dataset_mnist(dir, NULL, &xtr, &ytr, &xte, &yte) == TG_OK);
  printf("Fashion-MNIST: %lld training and %lld test images\n", (long long)tg_tensor_numel(ytr), (long long)tg_tensor_numel(yte));

  trainer tr = {cnn_model(), NULL};
  TRY(tr.model);
  if (steps == 0) {
    int rc = eval_only(tr.model, xte, yte);
    tg_module_release(tr.model);
    tg_tensor_release(xtr), tg_tensor_release(ytr), tg_tensor_release(xte), tg_tensor_release(yte);
    return rc;
  }
  size_t np = tg_module_parameter_count(tr.model);
  tg_tensor* params[16];
  TRY(np <= 16 && tg_module_parameters(tr.model, params, np) == TG_OK);
  tg_optimizer_options o = {.struct_size = sizeof o};
  TRY(tg_optimizer_options_default(TG_OPTIM_ADAM, &o) == TG_OK);
  TRY(tr.opt = tg_optim_adam(params, np, &o));
  for (size_t i = 0; i < np; i++) tg_tensor_release(params[i]);

  TRY(tg_set_option("TRAINING", "1") == TG_OK);
  tg_jit* jit = tg_jit_create(train_step, &tr);
  TRY(jit);
  tg_tensor* inputs[2] = {xtr, ytr};
  int tty = isatty(fileno(stdout));
  double t_train = now_s(), t_replay = 0;
  for (int i = 0; i < steps; i++) {
    if (i == 2) t_replay = now_s(); /* steps 1 and 2 run and capture: the rest replay */
    TRY(tg_optimizer_set_lr(tr.opt, kLr * 0.5 * (1 + cos(3.141592653589793 * i / steps))) == TG_OK); /* cosine decay to 0 */
    tg_tensor* loss = NULL;
    TRY(tg_jit_call(jit, inputs, 2, &loss, 1) == TG_OK);
    if (i % 10 == 9 || i == steps - 1) { /* reading the loss waits for the step: only now and then */
      float l = 0;
      TRY(tg_tensor_to_data(loss, &l, sizeof l) == TG_OK);
      double dt = now_s() - t_train;
      printf("%sstep %5d/%d  loss %.4f  %.2f steps/s", tty ? "\r" : "", i + 1, steps, l, (i + 1) / dt);
      if (!tty || i == steps - 1) printf("\n");
      fflush(stdout);
    }
    tg_tensor_release(loss);
  }
  double t_end = now_s(), train_s = t_end - t_train;
  TRY(tg_set_option("TRAINING", "0") == TG_OK);
  printf("trained %d steps of batch %lld in %.1f s (%.3f steps/s", steps, (long long)batch, train_s, steps / train_s);
  if (steps > 2) printf(", %.3f after the capture", (steps - 2) / (t_end - t_replay));
  printf(")\n");

  double t_eval = now_s(), acc = fashion_accuracy(tr.model, xte, yte);
  TRY(acc >= 0);
  printf("evaluated %lld test images in %.1f s; wall time %.1f s\n", (long long)tg_tensor_numel(yte), now_s() - t_eval, now_s() - t0);
  printf("test accuracy: %.4f\n", acc);

  tg_jit_release(jit), tg_optimizer_release(tr.opt), tg_module_release(tr.model);
  tg_tensor_release(xtr), tg_tensor_release(ytr), tg_tensor_release(xte), tg_tensor_release(yte);
  return 0;
}
