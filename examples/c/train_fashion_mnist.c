/* train_fashion_mnist: train a classifier on Fashion-MNIST from C, then evaluate and save it.
 *
 * The model is an MLP, 784 -> HIDDEN -> 10 with ReLU, trained with Adam on random minibatches (indices drawn by randint
 * inside the step, as tinygrad's beautiful_mnist) under a TinyJit: the second step is captured and every later one
 * replays its kernels. Then the 10,000 test images are classified, the accuracy printed as the last line, and the
 * weights saved as fashion_mnist.safetensors for examples/c/classify.c.
 *
 * With --ddp it trains data-parallel under mpirun (docs/distributed.md): every rank draws the same batch of 128 indices
 * and takes its share of it, the gradients are averaged over the ranks (tg_comm_average_gradients) before the Adam step
 * inside the captured step, and the printed loss is the whole batch's. Rank 0 prints, evaluates and saves.
 *   mpirun -np 2 train_fashion_mnist --ddp
 *
 * usage: train_fashion_mnist [--ddp] [--batch N] [--log-every N] [steps] [data dir] [output file]
 *   (defaults: 6000 steps, /usr/share/datasets/fashion-mnist (also when given as ""), fashion_mnist.safetensors; the loss
 *   printed every 100 steps, batch 128) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tinygrad.h>
#include <unistd.h>

#include "fashion_mnist_model.h"

static int64_t batch_size = 128; /* --batch: images per step, over all ranks */

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

typedef struct {
  tg_module* model;
  tg_optimizer* opt;
  tg_comm* comm; /* NULL: one process */
  tg_tensor* params[8];
  size_t np;
  int64_t rank, size;
} trainer;

/* One training step, captured by the JIT: inputs are the training images (N, 784) float and labels (N,); the output is
 * the loss. The optimizer's updates are assigns, which the JIT realizes with the loss and replays. */
static tg_status train_step(void* userdata, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  trainer* tr = userdata;
  int64_t bs = batch_size, n_train = tg_tensor_numel(in[1]);
  (void)n_in, (void)n_out;
  tg_tensor *all = NULL, *samples = NULL, *xb = NULL, *yb = NULL, *logits = NULL, *loss = NULL;
  tg_status st = TG_ERROR_INTERNAL;
  if (tg_optimizer_zero_grad(tr->opt) != TG_OK) return tg_last_error();
  /* every rank draws the same batch_size indices (the same seed) and trains on its share */
  if (!(all = tg_tensor_randint(&bs, 1, 0, n_train, TG_INT32, NULL))) goto done;
  int64_t share = batch_size / tr->size, bounds[2] = {tr->rank * share, (tr->rank + 1) * share};
  if (!(samples = tg_tensor_shrink(all, bounds, 1))) goto done;
  tg_index idx = {.kind = TG_INDEX_TENSOR, .tensor = samples};
  if (!(xb = tg_tensor_getitem(in[0], &idx, 1)) || !(yb = tg_tensor_getitem(in[1], &idx, 1))) goto done;
  if (!(logits = tg_module_call(tr->model, xb))) goto done;
  if (!(loss = tg_tensor_sparse_categorical_crossentropy(logits, yb, -1, 0.0, 1))) goto done;
  if (tg_tensor_backward(loss) != TG_OK) goto done;
  if (tr->comm) { /* data parallel: the gradients averaged over the ranks, the loss too (the whole batch's) */
    tg_tensor* avg = NULL; /* the loss in the same step: the forward pass they share runs once */
    if (tg_comm_average_gradients(tr->comm, tr->params, tr->np, &loss, 1, &avg) != TG_OK) goto done;
    tg_tensor_release(loss), loss = avg;
  }
  /* the updates, assigned in place lazily: the JIT realizes them with the loss, so the references can go */
  tg_tensor* upd[64];
  int64_t n_upd = tg_optimizer_schedule_step(tr->opt, upd, 64);
  if (n_upd < 0) goto done;
  for (int64_t i = 0; i < n_upd; i++) tg_tensor_release(upd[i]);
  out[0] = loss, loss = NULL;
  st = TG_OK;
done:
  if (st != TG_OK) st = tg_last_error();
  tg_tensor_release(all), tg_tensor_release(samples), tg_tensor_release(xb), tg_tensor_release(yb);
  tg_tensor_release(logits), tg_tensor_release(loss);
  return st;
}

int main(int argc, char** argv) {
  int ddp = 0, log_every = 100, npos = 0;
  const char* pos[3] = {NULL, NULL, NULL};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--ddp")) ddp = 1;
    else if (!strcmp(argv[i], "--log-every") && i + 1 < argc) log_every = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch_size = atoll(argv[++i]);
    else if (npos < 3) pos[npos++] = argv[i];
  }
  int steps = pos[0] && *pos[0] ? atoi(pos[0]) : 6000;
  const char* dir = pos[1] && *pos[1] ? pos[1] : NULL;
  const char* out_path = pos[2] ? pos[2] : "fashion_mnist.safetensors";
  if (log_every < 1) log_every = 1;
  if (batch_size < 1 || batch_size > 60000) {
    fprintf(stderr, "--batch %lld is not in [1, 60000]\n", (long long)batch_size);
    return 1;
  }
  double t0 = now_s();
  tg_manual_seed(42);
  trainer tr = {.rank = 0, .size = 1};
  if (ddp) {
    TRY(tr.comm = tg_comm_world());
    tr.rank = tg_comm_rank(tr.comm), tr.size = tg_comm_size(tr.comm);
    if (batch_size % tr.size) {
      fprintf(stderr, "--ddp: %lld ranks do not divide the batch of %lld\n", (long long)tr.size, (long long)batch_size);
      return 1;
    }
  }
  if (tr.rank != 0) freopen("/dev/null", "w", stdout); /* rank 0 reports */

  /* the data: images as float (N, 784) in [0, 1], realized once; labels as they come (uint8) */
  tg_tensor *xtr_u8, *ytr, *xte_u8, *yte;
  TRY(tg_dataset_mnist(dir, NULL, &xtr_u8, &ytr, &xte_u8, &yte) == TG_OK);
  tg_tensor* xtr = fashion_images(xtr_u8);
  tg_tensor* xte = fashion_images(xte_u8);
  TRY(xtr && xte && tg_tensor_realize(xtr) == TG_OK && tg_tensor_realize(xte) == TG_OK);
  int64_t n_train = tg_tensor_numel(ytr), n_test = tg_tensor_numel(yte);
  printf("Fashion-MNIST: %lld training and %lld test images (%.2f s to load)\n", (long long)n_train, (long long)n_test, now_s() - t0);

  TRY(tr.model = fashion_model());
  tr.np = tg_module_parameter_count(tr.model);
  TRY(tr.np <= 8 && tg_module_parameters(tr.model, tr.params, tr.np) == TG_OK);
  /* the same initial weights on every rank (the same seed gives them too; this makes it so whatever the seeds) */
  if (tr.comm) TRY(tg_comm_broadcast_tensors(tr.comm, tr.params, tr.np, 0) == TG_OK);
  tg_optimizer_options o = {.struct_size = sizeof o};
  TRY(tg_optimizer_options_default(TG_OPTIM_ADAM, &o) == TG_OK);
  TRY(tr.opt = tg_optim_adam(tr.params, tr.np, &o));
  if (tr.comm) printf("data parallel: %lld ranks, %lld images of each batch per rank\n", (long long)tr.size, (long long)(batch_size / tr.size));

  /* train: TRAINING=1 as tinygrad's Tensor.train() */
  TRY(tg_set_option("TRAINING", "1") == TG_OK);
  tg_jit* jit = tg_jit_create(train_step, &tr);
  TRY(jit);
  tg_tensor* inputs[2] = {xtr, ytr};
  int tty = isatty(fileno(stdout));
  double t_train = now_s(), loss_avg = 0;
  for (int i = 0; i < steps; i++) {
    tg_tensor* loss = NULL;
    TRY(tg_jit_call(jit, inputs, 2, &loss, 1) == TG_OK);
    if (i % log_every == log_every - 1 || i == steps - 1) { /* reading the loss waits for the step: only now and then */
      float l = 0;
      TRY(tg_tensor_to_data(loss, &l, sizeof l) == TG_OK);
      loss_avg = l;
      double dt = now_s() - t_train;
      printf("%sstep %5d/%d  loss %.7f  %.0f steps/s", tty ? "\r" : "", i + 1, steps, loss_avg, (i + 1) / dt);
      if (!tty || i == steps - 1) printf("\n");
      fflush(stdout);
    }
    tg_tensor_release(loss);
  }
  double train_s = now_s() - t_train;
  TRY(tg_set_option("TRAINING", "0") == TG_OK);
  printf("trained %d steps of batch %lld in %.2f s (%.0f steps/s)\n", steps, (long long)batch_size, train_s, steps / train_s);

  /* save, then evaluate on the test set: rank 0 */
  if (tr.rank != 0) steps = -1;
  if (steps < 0) goto release;
  tg_state* st = tg_module_state(tr.model);
  TRY(st && tg_state_save(st, out_path) == TG_OK);
  tg_state_release(st);
  printf("saved %s\n", out_path);
  double acc = fashion_accuracy(tr.model, xte, yte);
  TRY(acc >= 0);
  printf("wall time %.2f s\n", now_s() - t0);
  printf("test accuracy: %.4f\n", acc);

release:
  for (size_t i = 0; i < tr.np; i++) tg_tensor_release(tr.params[i]);
  tg_comm_release(tr.comm);
  tg_jit_release(jit), tg_optimizer_release(tr.opt), tg_module_release(tr.model);
  tg_tensor_release(xtr_u8), tg_tensor_release(xte_u8), tg_tensor_release(xtr), tg_tensor_release(xte);
  tg_tensor_release(ytr), tg_tensor_release(yte);
  return 0;
}
