/* Classify an image with an ONNX model: onnx_classify model.onnx image.ppm [labels.txt]
 * The image is a binary PPM (P6, color) or PGM (P5, gray, repeated to 3 channels), 8 bits per sample. It is scaled to
 * [0, 1], resized (bilinear) to the model's input (N=1, C, H, W; 224x224 where the model leaves H and W symbolic),
 * normalized with ImageNet's mean and std, as torchvision's classifiers expect, and run; the top 5 classes are printed
 * with their softmax probabilities, named from labels.txt (one label per line) when given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinygrad.h"

static int fail(const char* what) {
  fprintf(stderr, "onnx_classify: %s: %s\n", what, tg_last_error_message());
  return 1;
}

/* the next header number of a PNM file, skipping whitespace and # comments; -1 on a malformed header */
static long pnm_number(FILE* f) {
  int c = fgetc(f);
  while (c == '#' || c == ' ' || c == '\t' || c == '\r' || c == '\n') {
    if (c == '#')
      while (c != '\n' && c != EOF) c = fgetc(f);
    c = fgetc(f);
  }
  long v = 0;
  int digits = 0;
  for (; c >= '0' && c <= '9' && v < 100000; c = fgetc(f), digits++) v = v * 10 + (c - '0');
  return digits ? v : -1;
}

/* a PPM/PGM image as a float32 tensor (1, 3, H, W) in [0, 1] */
static tg_tensor* load_pnm(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return fprintf(stderr, "onnx_classify: cannot open %s\n", path), (tg_tensor*)NULL;
  char magic[2] = {0};
  tg_tensor *t = NULL, *hwc = NULL;
  unsigned char* px = NULL;
  float* v = NULL;
  long w = -1, h = -1, maxv = -1;
  if (fread(magic, 1, 2, f) != 2 || magic[0] != 'P' || (magic[1] != '5' && magic[1] != '6')) goto bad;
  w = pnm_number(f), h = pnm_number(f), maxv = pnm_number(f);
  if (w < 1 || h < 1 || w > 16384 || h > 16384 || maxv < 1 || maxv > 255) goto bad;
  size_t ch = magic[1] == '6' ? 3 : 1, n = (size_t)w * (size_t)h * ch;
  if (!(px = malloc(n)) || !(v = malloc(n * sizeof(float))) || fread(px, 1, n, f) != n) goto bad;
  for (size_t i = 0; i < n; i++) v[i] = (float)px[i] / (float)maxv;
  int64_t shape[3] = {h, w, (int64_t)ch}, order[3] = {2, 0, 1}, full[4] = {1, 3, h, w};
  hwc = tg_tensor_from_data(v, n * sizeof(float), TG_FLOAT32, shape, 3, NULL);
  tg_tensor* chw = hwc ? tg_tensor_permute(hwc, order, 3) : NULL;
  if (chw && ch == 1) {  /* gray: the one channel three times */
    tg_tensor* e = tg_tensor_expand(chw, (int64_t[]){3, h, w}, 3);
    tg_tensor_release(chw);
    chw = e;
  }
  t = chw ? tg_tensor_reshape(chw, full, 4) : NULL;
  tg_tensor_release(chw);
  if (!t) fail(path);
  goto done;
bad:
  fprintf(stderr, "onnx_classify: %s is not a binary 8-bit PPM (P6) or PGM (P5) image\n", path);
done:
  tg_tensor_release(hwc);
  free(px), free(v), fclose(f);
  return t;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: onnx_classify model.onnx image.ppm [labels.txt]\n");
    return 2;
  }
  tg_onnx_model* m = tg_onnx_load(argv[1], NULL);
  if (!m) return fail("load");
  int64_t dims[4], nd = 0;
  if (tg_onnx_input_count(m) != 1 || tg_onnx_output_count(m) < 1 || tg_onnx_input_info(m, 0, NULL, dims, 4, &nd) != TG_OK || nd != 4) {
    fprintf(stderr, "onnx_classify: expected a model with one (N, C, H, W) image input\n");
    tg_onnx_model_release(m);
    return 1;
  }
  int64_t size[2] = {dims[2] > 0 ? dims[2] : 224, dims[3] > 0 ? dims[3] : 224};
  tg_tensor *img = load_pnm(argv[2]), *x = NULL, *out = NULL, *prob = NULL, *top[2] = {NULL, NULL};
  int rc = 1;
  if (!img) goto end;
  tg_tensor* resized = tg_tensor_interpolate(img, size, 2, "linear", 0);
  float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
  int64_t c3[4] = {1, 3, 1, 1};
  tg_tensor* mt = tg_tensor_from_data(mean, sizeof mean, TG_FLOAT32, c3, 4, NULL);
  tg_tensor* st = tg_tensor_from_data(std, sizeof std, TG_FLOAT32, c3, 4, NULL);
  tg_tensor* centered = resized && mt ? tg_tensor_sub(resized, mt) : NULL;
  x = centered && st ? tg_tensor_div(centered, st) : NULL;
  tg_tensor_release(resized), tg_tensor_release(mt), tg_tensor_release(st), tg_tensor_release(centered);
  if (!x) {
    rc = fail("preprocess");
    goto end;
  }
  tg_tensor* outs[8] = {NULL};
  size_t n_out = (size_t)tg_onnx_output_count(m);
  if (n_out > 8 || tg_onnx_run(m, &x, 1, outs, n_out) != TG_OK) {
    rc = fail("run");
    goto end;
  }
  out = outs[0];
  for (size_t i = 1; i < n_out; i++) tg_tensor_release(outs[i]);
  int64_t classes = tg_tensor_numel(out), flat[1] = {classes};
  tg_tensor* logits = tg_tensor_reshape(out, flat, 1);
  prob = logits ? tg_tensor_softmax(logits, 0) : NULL;
  tg_tensor_release(logits);
  if (!prob || tg_tensor_topk(prob, classes < 5 ? classes : 5, 0, 1, top) != TG_OK) {
    rc = fail("top-5");
    goto end;
  }
  float p[5];
  int32_t idx[5];
  int64_t k = tg_tensor_numel(top[0]);
  if (tg_tensor_to_data(top[0], p, (size_t)k * sizeof(float)) != TG_OK || tg_tensor_to_data(top[1], idx, (size_t)k * sizeof(int32_t)) != TG_OK) {
    rc = fail("read");
    goto end;
  }
  char labels[5][128] = {{0}};
  if (argc > 3) {  /* the label on line idx[j] of the file */
    FILE* lf = fopen(argv[3], "r");
    char line[128];
    for (int64_t row = 0; lf && fgets(line, sizeof line, lf); row++)
      for (int64_t j = 0; j < k; j++)
        if (row == idx[j]) line[strcspn(line, "\r\n")] = 0, strcpy(labels[j], line);
    if (lf) fclose(lf);
  }
  printf("%s: top %lld of %lld classes\n", argv[2], (long long)k, (long long)classes);
  for (int64_t j = 0; j < k; j++) printf("  %5d  %6.2f%%  %s\n", idx[j], 100.0 * p[j], labels[j]);
  rc = 0;
end:
  tg_tensor_release(img), tg_tensor_release(x), tg_tensor_release(out), tg_tensor_release(prob);
  tg_tensor_release(top[0]), tg_tensor_release(top[1]);
  tg_onnx_model_release(m);
  return rc;
}
