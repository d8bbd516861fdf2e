/* An outside C program built against an installed libtinygrad: checks the version and runs a symbolic expression. */
#include <stdio.h>
#include <string.h>

#include <tinygrad.h>

static int failures = 0;
#define CHECK(cond, ...)                            \
  do {                                              \
    if (!(cond)) {                                  \
      fprintf(stderr, "consumer: " __VA_ARGS__);    \
      fprintf(stderr, " (%s)\n", tg_last_error_message()); \
      failures++;                                   \
    }                                               \
  } while (0)

int main(void) {
  tg_expr *x, *y, *four, *zero, *x4, *sum, *quot, *simple, *bad;
  const char* names[2] = {"x", "y"};
  int64_t values[2] = {7, 3}, v = -1, lo = -1, hi = -1;
  char buf[64];

  printf("tinygrad %s\n", tg_version());
  CHECK(tg_version_number() == TG_VERSION_NUMBER, "tg_version_number() %d != TG_VERSION_NUMBER %d", tg_version_number(), TG_VERSION_NUMBER);
  CHECK(strcmp(tg_version(), TG_VERSION_STRING) == 0, "tg_version() '%s' != TG_VERSION_STRING '%s'", tg_version(), TG_VERSION_STRING);

  /* (x*4 + y) / 4 with y in [0, 3] simplifies to x */
  x = tg_expr_variable("x", 0, 100);
  y = tg_expr_variable("y", 0, 3);
  four = tg_expr_const(4);
  x4 = tg_expr_binary(TG_MUL, x, four);
  sum = tg_expr_binary(TG_ADD, x4, y);
  quot = tg_expr_binary(TG_IDIV, sum, four);
  simple = tg_expr_simplify(quot);
  CHECK(simple != NULL, "tg_expr_simplify returned NULL");
  CHECK(tg_expr_render(simple, buf, sizeof buf) >= 0 && strcmp(buf, "x") == 0, "(x*4+y)/4 simplified to '%s', expected 'x'", buf);
  CHECK(tg_expr_eval(quot, names, values, 2, &v) == TG_OK && v == 7, "eval (7*4+3)/4 gave %lld, expected 7", (long long)v);
  CHECK(tg_expr_bounds(simple, &lo, &hi) == TG_OK && lo == 0 && hi == 100, "bounds [%lld, %lld], expected [0, 100]", (long long)lo, (long long)hi);
  printf("(x*4+y)/4 -> %s\n", buf);

  /* errors are values: division by constant zero is refused, not a crash */
  zero = tg_expr_const(0);
  bad = tg_expr_binary(TG_IDIV, x, zero);
  CHECK(bad == NULL && tg_last_error() == TG_ERROR_INVALID_ARGUMENT, "x/0 was not refused with TG_ERROR_INVALID_ARGUMENT");

  tg_expr_release(x), tg_expr_release(y), tg_expr_release(four), tg_expr_release(zero), tg_expr_release(x4);
  tg_expr_release(sum), tg_expr_release(quot), tg_expr_release(simple), tg_expr_release(bad);
  if (failures) fprintf(stderr, "consumer: %d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
