/* A separate process for the disk-cache tests: realizes ((x + k) * 2).sum() for k from argv[1] and prints what it saw
 * ("compiles=N result=R"), so a test can run it under a chosen environment (cache dir, HOME) and read the outcome. */
#include <stdio.h>
#include <stdlib.h>

#include <tinygrad.h>

int main(int argc, char** argv) {
  double k = argc > 1 ? atof(argv[1]) : 1.0;
  float data[16], out = 0;
  for (int i = 0; i < 16; i++) data[i] = (float)i;
  int64_t shape[1] = {16};
  tg_tensor* x = tg_tensor_from_data(data, sizeof data, TG_FLOAT32, shape, 1, NULL);
  tg_tensor* a = tg_tensor_add_scalar(x, k);
  tg_tensor* b = tg_tensor_mul_scalar(a, 2.0);
  tg_tensor* s = tg_tensor_sum(b, NULL, 0, 0);
  if (!s || tg_tensor_to_data(s, &out, sizeof out) != TG_OK) {
    fprintf(stderr, "cache_probe: %s\n", tg_last_error_message());
    return 1;
  }
  tg_counters c = {sizeof c};
  tg_counters_get(&c);
  printf("compiles=%llu result=%g\n", (unsigned long long)c.compile_count, (double)out);
  tg_tensor_release(s), tg_tensor_release(b), tg_tensor_release(a), tg_tensor_release(x);
  return 0;
}
