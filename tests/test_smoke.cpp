#include <gtest/gtest.h>

#include "uop/symbolic.h"

using namespace tg;

TEST(Smoke, InternAndSimplify) {
  auto x = UOp::variable("x", 0, 15), y = UOp::variable("y", 0, 3);
  EXPECT_EQ(x + 1, x + 1);
  auto e = (x * 4 + y) / 4;
  EXPECT_EQ(e->simplify(), x);
  EXPECT_EQ(((x * 4 + y) % 4)->simplify(), y);
}
