/* mlp_sgd: the program every language binding repeats (bindings/<language>/examples, docs/bindings.md), so their
 * outputs can be compared line by line with this one.
 *  1. seed 1337; TRAINING=1; x (32, 8) float32 with x[i][j] = ((7i + 3j) mod 11 - 5) / 5 (computed in double, rounded to
 *     float), labels (32,) int32 with y[i] = (7i mod 11) mod 4;
 *  2. model Linear(8, 16) -> relu -> Linear(16, 4) (tg_nn_sequential), SGD with lr 0.1 over its parameters;
 *  3. 20 steps of: zero_grad, forward, sparse categorical cross-entropy (mean), backward, the step's assigns realized
 *     with the loss; each step prints "step N loss HHHHHHHH V" (the float32 loss's bits in hex, then its value);
 *  4. a matmul of (2, 3) by (4, 5), which fails: prints "error TG_ERROR_SHAPE: <the library's message>";
 *  5. after releasing everything: "live handles: N" (tg_live_handles; 0 when nothing leaked). */
#include <stdio.h>
#include <string.h>
#include <tinygrad.h>

#define TRY(x)                                                                                               \
  do {                                                                                                       \
    if (!(x)) {                                                                                              \
      fprintf(stderr, "%s failed: %s (%s)\n", #x, tg_last_error_message(), tg_status_name(tg_last_error())); \
      return 1;                                                                                              \
    }                                                                                                        \
  } while (0)

enum { N = 32, IN = 8, HID = 16, OUT = 4, STEPS = 20 };

static int train(void) {
  float xs[N * IN];
  int32_t ys[N];
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < IN; j++) xs[i * IN + j] = (float)((double)((7 * i + 3 * j) % 11 - 5) / 5.0);
    ys[i] = (7 * i % 11) % 4;
  }
  int64_t xshape[2] = {N, IN}, yshape[1] = {N};
  tg_tensor *x, *y;
  TRY(x = tg_tensor_from_data(xs, sizeof xs, TG_FLOAT32, xshape, 2, NULL));
  TRY(y = tg_tensor_from_data(ys, sizeof ys, TG_INT32, yshape, 1, NULL));

  tg_module* layers[3];
  TRY(layers[0] = tg_nn_linear(IN, HID, 1, NULL));
  TRY(layers[1] = tg_nn_function("relu"));
  TRY(layers[2] = tg_nn_linear(HID, OUT, 1, NULL));
  tg_module* model;
  TRY(model = tg_nn_sequential(layers, 3));
  for (int i = 0; i < 3; i++) tg_module_release(layers[i]);

  tg_tensor* params[4];
  size_t np = tg_module_parameter_count(model);
  TRY(np == 4 && tg_module_parameters(model, params, np) == TG_OK);
  tg_optimizer_options o = {.struct_size = sizeof o};
  TRY(tg_optimizer_options_default(TG_OPTIM_SGD, &o) == TG_OK);
  o.lr = 0.1;
  tg_optimizer* opt;
  TRY(opt = tg_optim_sgd(params, np, &o));
  for (size_t i = 0; i < np; i++) tg_tensor_release(params[i]);

  for (int step = 1; step <= STEPS; step++) {
    TRY(tg_optimizer_zero_grad(opt) == TG_OK);
    tg_tensor *out, *loss, *upd[16];
    TRY(out = tg_module_call(model, x));
    TRY(loss = tg_tensor_sparse_categorical_crossentropy(out, y, -1, 0.0, 1));
    TRY(tg_tensor_backward(loss) == TG_OK);
    int64_t n = tg_optimizer_schedule_step(opt, upd, 16);
    TRY(n >= 0);
    tg_tensor* all[17] = {loss};
    memcpy(all + 1, upd, sizeof(tg_tensor*) * (size_t)n);
    TRY(tg_tensor_realize_many(all, (size_t)n + 1) == TG_OK);
    float v;
    TRY(tg_tensor_to_data(loss, &v, sizeof v) == TG_OK);
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    printf("step %d loss %08x %.6f\n", step, bits, (double)v);
    for (int64_t i = 0; i < n; i++) tg_tensor_release(upd[i]);
    tg_tensor_release(loss), tg_tensor_release(out);
  }
  tg_optimizer_release(opt), tg_module_release(model), tg_tensor_release(x), tg_tensor_release(y);
  return 0;
}

static int bad_matmul(void) {
  int64_t sa[2] = {2, 3}, sb[2] = {4, 5};
  tg_tensor *a, *b, *c;
  TRY(a = tg_tensor_zeros(sa, 2, TG_FLOAT32, NULL));
  TRY(b = tg_tensor_zeros(sb, 2, TG_FLOAT32, NULL));
  c = tg_tensor_matmul(a, b);
  if (c) return fprintf(stderr, "the bad matmul succeeded\n"), 1;
  printf("error %s: %s\n", tg_status_name(tg_last_error()), tg_last_error_message());
  tg_tensor_release(a), tg_tensor_release(b);
  return 0;
}

int main(void) {
  tg_manual_seed(1337);
  TRY(tg_set_option("TRAINING", "1") == TG_OK);
  if (train() || bad_matmul()) return 1;
  printf("live handles: %lld\n", (long long)tg_live_handles());
  return 0;
}
