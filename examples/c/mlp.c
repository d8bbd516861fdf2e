/* mlp: a 2-layer MLP forward pass (784 -> 128 -> 10, ReLU, softmax) on a batch of 64 through the C API.
 * Weights are random (seeded); every op is lazy until tg_tensor_to_data, which fuses and runs the kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <tinygrad.h>

#define TRY(x)                                                                              \
  do {                                                                                      \
    if (!(x)) {                                                                             \
      fprintf(stderr, "%s failed: %s (%s)\n", #x, tg_last_error_message(), tg_status_name(tg_last_error())); \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) { /* xorshift64*, uniform in [-1, 1) */
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return (float)((rng * 2685821657736338717ull) >> 40) / (float)(1 << 23) - 1.0f;
}
static tg_tensor* random_tensor(int64_t rows, int64_t cols, float scale) {
  float* data = malloc(sizeof(float) * (size_t)(rows * cols));
  for (int64_t i = 0; i < rows * cols; i++) data[i] = uniform() * scale;
  int64_t shape[2] = {rows, cols};
  tg_tensor* t = tg_tensor_from_data(data, sizeof(float) * (size_t)(rows * cols), TG_FLOAT32, shape, 2, NULL);
  free(data);
  return t;
}

int main(void) {
  enum { B = 64, IN = 784, HID = 128, OUT = 10 };
  printf("libtinygrad %s\n", tg_version());
  tg_tensor *x, *w1, *b1, *w2, *b2, *h, *h1, *a, *logits, *l1, *probs;
  TRY(x = random_tensor(B, IN, 1.0f));
  TRY(w1 = random_tensor(IN, HID, 1.0f / sqrtf(IN)));
  TRY(b1 = random_tensor(1, HID, 0.1f));
  TRY(w2 = random_tensor(HID, OUT, 1.0f / sqrtf(HID)));
  TRY(b2 = random_tensor(1, OUT, 0.1f));

  tg_counters_reset();
  TRY(h = tg_tensor_matmul(x, w1)); /* lazy: nothing runs yet */
  TRY(h1 = tg_tensor_add(h, b1));
  TRY(a = tg_tensor_relu(h1));
  TRY(logits = tg_tensor_matmul(a, w2));
  TRY(l1 = tg_tensor_add(logits, b2));
  TRY(probs = tg_tensor_softmax(l1, -1));

  static float out[B * OUT];
  TRY(tg_tensor_to_data(probs, out, sizeof out) == TG_OK);
  tg_counters c = {.struct_size = sizeof c};
  TRY(tg_counters_get(&c) == TG_OK);

  double total = 0;
  for (int i = 0; i < B * OUT; i++) total += out[i];
  printf("probs[0] =");
  for (int j = 0; j < OUT; j++) printf(" %.4f", out[j]);
  int best = 0;
  for (int j = 1; j < OUT; j++)
    if (out[j] > out[best]) best = j;
  printf("\nargmax[0] = %d, mean row sum = %.6f\n", best, total / B);
  printf("kernels run: %llu, kernel time: %.3f ms\n", (unsigned long long)c.kernel_count, c.time_sum_s * 1e3);

  tg_tensor* all[] = {x, w1, b1, w2, b2, h, h1, a, logits, l1, probs};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) tg_tensor_release(all[i]);
  return fabs(total / B - 1.0) < 1e-4 ? 0 : 1;
}
