/* fashion_exported: the exported Fashion-MNIST classifier as a standalone program (docs/export.md). It links only the
 * files tg_jit_export wrote (fashion.c, fashion_weights.c) and libm: no libtinygrad.
 *
 * Classifies the 10,000 test images export_fashion_mnist wrote to DIR, one per call of fashion_run, prints the test
 * accuracy and the time per image, and checks every prediction against the library's (DIR/library_predictions.i32):
 * exit status 1 if any differs.
 *
 * build: cc -O2 -std=c99 -march=native -IDIR fashion_exported.c DIR/fashion.c DIR/fashion_weights.c -lm
 * usage: fashion_exported DIR */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fashion.h"

/* all the memory a run needs, reserved statically: the program never allocates for the model */
static unsigned char arena[fashion_ARENA_BYTES + 1] __attribute__((aligned(fashion_ARENA_ALIGN)));

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void* read_file(const char* dir, const char* name, size_t bytes) {
  char path[4096];
  void* p = malloc(bytes ? bytes : 1);
  FILE* f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "rb");
  if (!p || !f || fread(p, 1, bytes, f) != bytes) {
    fprintf(stderr, "can't read %zu bytes from %s (run export_fashion_mnist first)\n", bytes, path);
    exit(2);
  }
  fclose(f);
  return p;
}

int main(int argc, char** argv) {
  enum { N = 10000, PIXELS = fashion_IN0_ELEMENTS };
  float* images;
  unsigned char* labels;
  int32_t* lib;
  int32_t pred;
  long correct = 0, lib_correct = 0, differ = 0, i;
  double t0, per_image, runs[5];
  int r, k;
  fashion_inputs in;
  fashion_outputs out;
  if (argc != 2) {
    fprintf(stderr, "usage: fashion_exported DIR\n");
    return 2;
  }
  images = read_file(argv[1], "test_images.f32", (size_t)N * PIXELS * sizeof(float));
  labels = read_file(argv[1], "test_labels.u8", N);
  lib = read_file(argv[1], "library_predictions.i32", (size_t)N * sizeof(int32_t));
  out.out0 = &pred;
  for (i = 0; i < N; i++) {
    in.in0 = images + i * PIXELS;
    if (fashion_run(&in, &out, arena) != 0) return 3;
    correct += pred == labels[i];
    lib_correct += lib[i] == labels[i];
    differ += pred != lib[i];
  }
  /* the time per image: every test image once, the median of 5 passes */
  for (r = 0; r < 5; r++) {
    t0 = now_s();
    for (i = 0; i < N; i++) {
      in.in0 = images + i * PIXELS;
      fashion_run(&in, &out, arena);
    }
    runs[r] = (now_s() - t0) / N;
    for (k = r; k > 0 && runs[k] < runs[k - 1]; k--) {
      double t = runs[k];
      runs[k] = runs[k - 1], runs[k - 1] = t;
    }
  }
  per_image = runs[2];
  printf("exported program: arena %d bytes, weights %d bytes, %.1f us per image\n", (int)fashion_ARENA_BYTES, (int)fashion_WEIGHT_BYTES,
         per_image * 1e6);
  printf("library test accuracy:  %.4f\n", (double)lib_correct / N);
  printf("exported test accuracy: %.4f (%ld of %d predictions differ from the library's)\n", (double)correct / N, differ, N);
  free(images), free(labels), free(lib);
  return differ ? 1 : 0;
}
