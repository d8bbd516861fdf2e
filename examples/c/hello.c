/* hello: the library version and a symbolic expression simplified through the C API. */
#include <stdio.h>
#include <tinygrad.h>

int main(void) {
  printf("libtinygrad %s (header %s)\n", tg_version(), TG_VERSION_STRING);
  /* (x*4 + y) // 4 with x in [0,15], y in [0,3] simplifies to x */
  tg_expr* x = tg_expr_variable("x", 0, 15);
  tg_expr* y = tg_expr_variable("y", 0, 3);
  tg_expr* four = tg_expr_const(4);
  tg_expr* x4 = tg_expr_binary(TG_MUL, x, four);
  tg_expr* sum = tg_expr_binary(TG_ADD, x4, y);
  tg_expr* e = tg_expr_binary(TG_IDIV, sum, four);
  tg_expr* s = tg_expr_simplify(e);
  if (!s) {
    fprintf(stderr, "error: %s\n", tg_last_error_message());
    return 1;
  }
  char before[256], after[256];
  tg_expr_render(e, before, sizeof before);
  tg_expr_render(s, after, sizeof after);
  printf("%s  ->  %s\n", before, after);
  tg_expr* exprs[] = {x, y, four, x4, sum, e, s};
  for (size_t i = 0; i < sizeof exprs / sizeof *exprs; i++) tg_expr_release(exprs[i]);
  return 0;
}
