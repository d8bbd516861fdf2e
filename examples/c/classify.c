/* classify: load the weights train_fashion_mnist saved into the same model and classify images with them.
 *
 * usage: classify [-w weights.safetensors] [-n N] [-d data dir] [image.pgm ...]
 *   With image files (binary PGM, 28x28, 8-bit: what `convert x.png -resize 28x28! -colorspace gray x.pgm` writes),
 *   prints each file's class. Without, classifies the first N (default 10) Fashion-MNIST test images and prints each
 *   prediction beside its label. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tinygrad.h>

#include "fashion_mnist_model.h"

#define TRY(x)                                                                                              \
  do {                                                                                                      \
    if (!(x)) {                                                                                             \
      fprintf(stderr, "%s failed: %s (%s)\n", #x, tg_last_error_message(), tg_status_name(tg_last_error())); \
      exit(1);                                                                                              \
    }                                                                                                       \
  } while (0)

/* a binary PGM of 28x28 8-bit pixels into px; 0 on success */
static int read_pgm(const char* path, unsigned char px[784]) {
  FILE* f = fopen(path, "rb");
  if (!f) return fprintf(stderr, "classify: cannot open %s\n", path), 1;
  int w = 0, h = 0, maxval = 0;
  int ok = fscanf(f, "P5 %d %d %d", &w, &h, &maxval) == 3 && fgetc(f) != EOF && w == 28 && h == 28 && maxval == 255 &&
           fread(px, 1, 784, f) == 784;
  fclose(f);
  if (!ok) fprintf(stderr, "classify: %s is not a binary 28x28 PGM with maxval 255\n", path);
  return !ok;
}

int main(int argc, char** argv) {
  const char *weights = "fashion_mnist.safetensors", *dir = NULL;
  int n = 10, first_file = argc;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-w") && i + 1 < argc) weights = argv[++i];
    else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-d") && i + 1 < argc) dir = argv[++i];
    else {
      first_file = i;
      break;
    }
  }
  tg_module* model = fashion_model();
  TRY(model);
  tg_state* st = tg_state_load(weights, NULL);
  TRY(st);
  TRY(tg_module_load_state(model, st, 1) == TG_OK); /* strict: every name and shape must match */
  tg_state_release(st);

  tg_tensor *images = NULL, *labels = NULL;
  int count = argc - first_file;
  if (count > 0) { /* image files */
    unsigned char* px = malloc((size_t)count * 784);
    for (int i = 0; i < count; i++)
      if (read_pgm(argv[first_file + i], px + (size_t)i * 784)) return 1;
    int64_t shape[4] = {count, 1, 28, 28};
    TRY(images = tg_tensor_from_data(px, (size_t)count * 784, TG_UINT8, shape, 4, NULL));
    free(px);
  } else { /* the first n test images */
    tg_tensor *xtr, *ytr, *xte, *yte;
    TRY(tg_dataset_mnist(dir, NULL, &xtr, &ytr, &xte, &yte) == TG_OK);
    if (n < 1 || n > tg_tensor_numel(yte)) n = (int)tg_tensor_numel(yte);
    tg_index first = {.kind = TG_INDEX_SLICE, .stop = n, .has_stop = 1};
    TRY(images = tg_tensor_getitem(xte, &first, 1));
    TRY(labels = tg_tensor_getitem(yte, &first, 1));
    tg_tensor_release(xtr), tg_tensor_release(ytr), tg_tensor_release(xte), tg_tensor_release(yte);
    count = n;
  }
  tg_tensor* x = fashion_images(images);
  tg_tensor* pred = x ? fashion_predict(model, x) : NULL;
  TRY(pred);
  int* p = malloc(sizeof(int) * (size_t)count);
  unsigned char* y = malloc((size_t)count);
  TRY(tg_tensor_to_data(pred, p, sizeof(int) * (size_t)count) == TG_OK);
  if (labels) TRY(tg_tensor_to_data(labels, y, (size_t)count) == TG_OK);
  int right = 0;
  for (int i = 0; i < count; i++) {
    if (labels) {
      right += p[i] == y[i];
      printf("test image %4d: %-11s (label %-11s)%s\n", i, fashion_classes[p[i]], fashion_classes[y[i]], p[i] == y[i] ? "" : "  x");
    } else printf("%s: %s\n", argv[first_file + i], fashion_classes[p[i]]);
  }
  if (labels) printf("%d of %d right\n", right, count);
  free(p), free(y);
  tg_tensor_release(pred), tg_tensor_release(x), tg_tensor_release(images), tg_tensor_release(labels);
  tg_module_release(model);
  return 0;
}
