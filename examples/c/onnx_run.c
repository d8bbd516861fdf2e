/* Run an ONNX model from C: onnx_run model.onnx [input.npy ...]
 * Prints the model's inputs and outputs, runs it on the given .npy files (numpy's format: little-endian, C order) or on
 * random inputs (symbolic dims taken as 1), prints each output's shape and first values, then times repeated runs
 * (the second run captures the kernels, later runs replay them). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinygrad.h"

#define MAX_IO 64

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static int fail(const char* what) {
  fprintf(stderr, "onnx_run: %s: %s\n", what, tg_last_error_message());
  return 1;
}
static void print_value_info(tg_onnx_model* m, size_t i, int output) {
  int64_t dims[16], nd = 0;
  tg_dtype dt = TG_FLOAT32;
  const char* name = output ? tg_onnx_output_name(m, i) : tg_onnx_input_name(m, i);
  tg_status st = output ? tg_onnx_output_info(m, i, &dt, dims, 16, &nd) : tg_onnx_input_info(m, i, &dt, dims, 16, &nd);
  printf("  %s %-20s ", output ? "out" : "in ", name);
  if (st != TG_OK) {
    printf("(%s)\n", tg_last_error_message());
    return;
  }
  printf("%s (", tg_dtype_name(dt));
  for (int64_t d = 0; d < nd; d++) {
    const char* sym = output ? tg_onnx_output_dim_name(m, i, (size_t)d) : tg_onnx_input_dim_name(m, i, (size_t)d);
    if (dims[d] >= 0) printf("%s%lld", d ? ", " : "", (long long)dims[d]);
    else printf("%s%s", d ? ", " : "", sym && *sym ? sym : "?");
  }
  printf(")\n");
}

/* A .npy file as a tensor: version 1-3 headers, dtypes <f4 <f8 <i8 <i4 <i2 |i1 |u1 |b1, C order only. */
static tg_tensor* load_npy(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return fprintf(stderr, "onnx_run: cannot open %s\n", path), (tg_tensor*)NULL;
  unsigned char pre[12];
  tg_tensor* t = NULL;
  char* header = NULL;
  void* data = NULL;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) goto bad;
  size_t hlen = pre[8] | (size_t)pre[9] << 8;
  if (pre[6] >= 2) {
    if (fread(pre + 10, 1, 2, f) != 2) goto bad;
    hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
  }
  if (hlen > (1 << 20) || !(header = calloc(hlen + 1, 1)) || fread(header, 1, hlen, f) != hlen) goto bad;
  static const struct { const char* descr; tg_dtype dt; } types[] = {{"<f4", TG_FLOAT32}, {"<f8", TG_FLOAT64}, {"<i8", TG_INT64}, {"<i4", TG_INT32},
                                                                     {"<i2", TG_INT16}, {"|i1", TG_INT8}, {"|u1", TG_UINT8}, {"|b1", TG_BOOL}};
  const char* descr = strstr(header, "'descr': '");
  const char* shape = strstr(header, "'shape': (");
  if (!descr || !shape || strstr(header, "'fortran_order': True")) goto bad;
  tg_dtype dt = TG_FLOAT32;
  size_t item = 0;
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
    if (!strncmp(descr + 10, types[k].descr, 3)) dt = types[k].dt, item = strchr("fi", types[k].descr[1]) ? (size_t)(types[k].descr[2] - '0') : 1;
  if (!item) goto bad;
  int64_t dims[16];
  size_t nd = 0, n = 1;
  for (const char* p = shape + 10; *p && *p != ')' && nd < 16;) {
    char* end;
    long long v = strtoll(p, &end, 10);
    if (end == p) break;
    dims[nd++] = v, n *= (size_t)v, p = end;
    while (*p == ',' || *p == ' ') p++;
  }
  if (!(data = malloc(n * item + 1)) || fread(data, 1, n * item, f) != n * item) goto bad;
  t = tg_tensor_from_data(data, n * item, dt, dims, nd, NULL);
  if (!t) fail(path);
  goto done;
bad:
  fprintf(stderr, "onnx_run: %s is not a .npy file this example reads (C order, little-endian numbers)\n", path);
done:
  free(header), free(data), fclose(f);
  return t;
}

/* A random input for input i: floats N(0, 1), ints in [0, 10), symbolic dims 1 */
static tg_tensor* random_input(tg_onnx_model* m, size_t i) {
  int64_t dims[16], nd = 0;
  tg_dtype dt = TG_FLOAT32;
  if (tg_onnx_input_info(m, i, &dt, dims, 16, &nd) != TG_OK) return NULL;
  for (int64_t d = 0; d < nd; d++)
    if (dims[d] < 0) dims[d] = 1;
  if (dt == TG_FLOAT32 || dt == TG_FLOAT64 || dt == TG_FLOAT16) return tg_tensor_randn(dims, (size_t)(nd < 0 ? 0 : nd), dt, NULL);
  return tg_tensor_randint(dims, (size_t)(nd < 0 ? 0 : nd), 0, dt == TG_BOOL ? 2 : 10, dt, NULL);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: onnx_run model.onnx [input.npy ...]\n");
    return 2;
  }
  double t0 = now();
  tg_onnx_model* m = tg_onnx_load(argv[1], NULL);
  if (!m) return fail("load");
  size_t n_in = (size_t)tg_onnx_input_count(m), n_out = (size_t)tg_onnx_output_count(m);
  printf("%s: %s, opset %lld, loaded in %.1f ms\n", argv[1], *tg_onnx_producer(m) ? tg_onnx_producer(m) : "unknown producer",
         (long long)tg_onnx_opset(m), (now() - t0) * 1e3);
  for (size_t i = 0; i < n_in; i++) print_value_info(m, i, 0);
  for (size_t i = 0; i < n_out; i++) print_value_info(m, i, 1);
  if (n_in > MAX_IO || n_out > MAX_IO || (argc > 2 && (size_t)(argc - 2) != n_in)) {
    fprintf(stderr, "onnx_run: the model takes %zu inputs, %d given\n", n_in, argc - 2);
    return 2;
  }
  tg_tensor* in[MAX_IO] = {0};
  tg_tensor* out[MAX_IO] = {0};
  int rc = 0;
  for (size_t i = 0; i < n_in; i++)
    if (!(in[i] = argc > 2 ? load_npy(argv[2 + i]) : random_input(m, i))) {
      rc = fail("input");
      goto end;
    }
  t0 = now();
  if (tg_onnx_run(m, in, n_in, out, n_out) != TG_OK) {
    rc = fail("run");
    goto end;
  }
  printf("first run %.1f ms (kernels compiled or read from the cache)\n", (now() - t0) * 1e3);
  for (size_t i = 0; i < n_out; i++) {
    int64_t dims[16];
    int64_t nd = tg_tensor_ndim(out[i]);
    tg_tensor_shape(out[i], dims, 16);
    printf("  %s: (", tg_onnx_output_name(m, i));
    for (int64_t d = 0; d < nd; d++) printf("%s%lld", d ? ", " : "", (long long)dims[d]);
    tg_tensor* f = tg_tensor_cast(out[i], TG_FLOAT32);
    int64_t n = tg_tensor_numel(f), k = n < 5 ? n : 5;
    float* v = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    printf(")");
    if (v && f && tg_tensor_to_data(f, v, (size_t)n * sizeof(float)) == TG_OK)
      for (int64_t j = 0; j < k; j++) printf("%s%g", j ? " " : " = ", v[j]);
    printf("%s\n", n > k ? " ..." : "");
    free(v);
    tg_tensor_release(f);
  }
  int runs = 10;
  for (int r = 0; r < 2 + runs; r++) {  /* two to capture, then timed replays */
    if (r == 2) t0 = now();
    for (size_t i = 0; i < n_out; i++) tg_tensor_release(out[i]), out[i] = NULL;
    if (tg_onnx_run(m, in, n_in, out, n_out) != TG_OK) {
      rc = fail("run");
      goto end;
    }
  }
  printf("%.3f ms per run (mean of %d replays)\n", (now() - t0) * 1e3 / runs, runs);
end:
  for (size_t i = 0; i < n_in; i++) tg_tensor_release(in[i]);
  for (size_t i = 0; i < n_out; i++) tg_tensor_release(out[i]);
  tg_onnx_model_release(m);
  return rc;
}
