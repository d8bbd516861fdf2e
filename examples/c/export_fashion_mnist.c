/* export_fashion_mnist: the Fashion-MNIST classifier as C that needs no library (tg_jit_export, docs/export.md).
 *
 * Loads the weights train_fashion_mnist saved into the same model ("-": the model's random initialisation, for timing),
 * captures classifying one image (1, 784) -> class (1,) int32 under a tg_jit, and exports the capture to OUT/fashion.h,
 * fashion.c and fashion_weights.c. Then it classifies the 10,000 test images one at a time with that JIT, as the
 * exported program will (examples/c/fashion_exported.c), and writes what the program needs to check itself: the images
 * (OUT/test_images.f32, float32 10000x784), the labels (test_labels.u8) and the library's predictions
 * (library_predictions.i32).
 *
 * usage: export_fashion_mnist [weights|-] [out dir] [data dir] [target] [threads]
 *   (defaults: fashion_mnist.safetensors, fashion_export, Debian's Fashion-MNIST, native, 0: the caller's thread only;
 *   n > 1 splits kernels for n cores on a pthread pool in the generated code: build it with -pthread) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <tinygrad.h>

#include "fashion_mnist_model.h"

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

/* the captured function: one image (1, 784) float in [0, 1] -> its class (1,) int32 */
static tg_status classify(void* model, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  if (n_in != 1 || n_out != 1) return TG_ERROR_INVALID_ARGUMENT;
  out[0] = fashion_predict((tg_module*)model, in[0]);
  return out[0] ? TG_OK : tg_last_error();
}

static void write_file(const char* dir, const char* name, const void* data, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {
    fprintf(stderr, "can't write %s\n", path);
    exit(1);
  }
}

int main(int argc, char** argv) {
  const char* weights = argc > 1 && *argv[1] ? argv[1] : "fashion_mnist.safetensors";
  const char* out = argc > 2 && *argv[2] ? argv[2] : "fashion_export";
  const char* data = argc > 3 && *argv[3] ? argv[3] : NULL;
  const char* target = argc > 4 && *argv[4] ? argv[4] : NULL;
  int threads = argc > 5 ? atoi(argv[5]) : 0;
  if (argc > 6) {
    fprintf(stderr, "usage: export_fashion_mnist [weights|-] [out dir] [data dir] [target] [threads]\n");
    return 2;
  }
  tg_manual_seed(42);
  tg_module* model = fashion_model();
  TRY(model);
  if (strcmp(weights, "-") != 0) {
    tg_state* st = tg_state_load(weights, NULL);
    TRY(st && tg_module_load_state(model, st, 1) == TG_OK);
    tg_state_release(st);
  }
  tg_tensor *xtr_u8, *ytr, *xte_u8, *yte;
  TRY(tg_dataset_mnist(data, NULL, &xtr_u8, &ytr, &xte_u8, &yte) == TG_OK);
  tg_tensor* xte = fashion_images(xte_u8);
  TRY(xte && tg_tensor_realize(xte) == TG_OK);
  int64_t n = tg_tensor_numel(yte);
  float* images = malloc((size_t)n * 784 * sizeof(float));
  unsigned char* labels = malloc((size_t)n);
  int32_t* preds = malloc((size_t)n * sizeof(int32_t));
  TRY(images && labels && preds);
  TRY(tg_tensor_to_data(xte, images, (size_t)n * 784 * sizeof(float)) == TG_OK);
  TRY(tg_tensor_to_data(yte, labels, (size_t)n) == TG_OK);

  /* capture (the second call), then export */
  tg_jit* jit = tg_jit_create(classify, model);
  TRY(jit);
  int64_t shape[2] = {1, 784};
  for (int i = 0; i < 2; i++) {
    tg_tensor* x = tg_tensor_from_data(images, 784 * sizeof(float), TG_FLOAT32, shape, 2, NULL);
    tg_tensor* p = NULL;
    TRY(x && tg_jit_call(jit, &x, 1, &p, 1) == TG_OK);
    tg_tensor_release(x), tg_tensor_release(p);
  }
  mkdir(out, 0777);
  tg_export_options o = {sizeof o, out, "fashion", target, threads};
  TRY(tg_jit_export(jit, &o) == TG_OK);
  printf("exported the classifier to %s/fashion.{c,h} and fashion_weights.c (target %s)\n", out, target ? target : "native");

  /* the library's predictions, one image per replay */
  int64_t correct = 0;
  for (int64_t i = 0; i < n; i++) {
    tg_tensor* x = tg_tensor_from_data(images + i * 784, 784 * sizeof(float), TG_FLOAT32, shape, 2, NULL);
    tg_tensor* p = NULL;
    TRY(x && tg_jit_call(jit, &x, 1, &p, 1) == TG_OK && tg_tensor_to_data(p, &preds[i], sizeof preds[i]) == TG_OK);
    correct += preds[i] == labels[i];
    tg_tensor_release(x), tg_tensor_release(p);
  }
  /* the replay's latency: the same image again and again, the prediction read back each time (median of 5 runs of 500) */
  double runs[5];
  tg_tensor* x = tg_tensor_from_data(images, 784 * sizeof(float), TG_FLOAT32, shape, 2, NULL);
  TRY(x);
  for (int r = 0; r < 5; r++) {
    double t0 = now_s();
    for (int i = 0; i < 500; i++) {
      tg_tensor* p = NULL;
      int32_t c;
      TRY(tg_jit_call(jit, &x, 1, &p, 1) == TG_OK && tg_tensor_to_data(p, &c, sizeof c) == TG_OK);
      tg_tensor_release(p);
    }
    runs[r] = (now_s() - t0) / 500;
    for (int k = r; k > 0 && runs[k] < runs[k - 1]; k--) {
      double t = runs[k];
      runs[k] = runs[k - 1], runs[k - 1] = t;
    }
  }
  tg_tensor_release(x);
  write_file(out, "test_images.f32", images, (size_t)n * 784 * sizeof(float));
  write_file(out, "test_labels.u8", labels, (size_t)n);
  write_file(out, "library_predictions.i32", preds, (size_t)n * sizeof(int32_t));
  printf("library (tg_jit replay, one image per call): test accuracy %.4f, %.1f us per image\n", (double)correct / (double)n,
         runs[2] * 1e6);

  free(images), free(labels), free(preds);
  tg_jit_release(jit), tg_module_release(model);
  tg_tensor_release(xtr_u8), tg_tensor_release(ytr), tg_tensor_release(xte_u8), tg_tensor_release(yte), tg_tensor_release(xte);
  return 0;
}
