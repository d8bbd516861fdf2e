// UPat matching, PatternMatcher rule order, graph_rewrite (fixed point, bottom-up vs top-down, memoization), substitute.
#include <gtest/gtest.h>

#include "uop/pattern.h"

using namespace tg;

namespace {
UOpRef var(const char* n) { return UOp::variable(n, 0, 10); }
UOpRef cidx(int64_t v) { return UOp::const_int(dtypes::index, v); }
// does p match u, and if so what did `name` bind to
const UOp* bound(const UPat& p, const UOpRef& u, const char* name) {
  Match m{u.get(), nullptr, {}};
  return upat_match(p, u.get(), m) ? m.get(name) : nullptr;
}
bool matches(const UPat& p, const UOpRef& u) {
  Match m{u.get(), nullptr, {}};
  return upat_match(p, u.get(), m);
}
UPat var_named(const char* n) { return UPat(Ops::DEFINE_VAR).with_arg(VarArg{n, 0, 10}); }
}  // namespace

TEST(UPat, MatchTable) {
  auto x = var("x"), y = var("y"), c3 = cidx(3);
  auto f = UOp::const_(dtypes::float32, 2.0), i32 = UOp::const_int(dtypes::int32, 2);
  auto swapped = UOp::make(Ops::ADD, dtypes::index, {c3, x});  // 3 + x, built without canonicalizing
  struct C {
    const char* what;
    UPat p;
    UOpRef u;
    bool want;
  } cases[] = {
      {"x+c on x+3", UPat::var("x") + UPat::cvar("c"), x + 3, true},
      {"x+c on 3+x (commutative)", UPat::var("x") + UPat::cvar("c"), swapped, true},
      {"ordered x+c on x+3", (UPat::var("x") + UPat::cvar("c")).ordered(), x + 3, true},
      {"ordered x+c on 3+x", (UPat::var("x") + UPat::cvar("c")).ordered(), swapped, false},
      {"IDIV is not commutative", UPat::var("x") / UPat::cvar("c"), UOp::make(Ops::IDIV, dtypes::index, {c3, x}), false},
      {"x+x on x+x", UPat::var("a") + UPat::var("a"), x + x, true},
      {"x+x on x+y", UPat::var("a") + UPat::var("a"), x + y, false},
      {"(x*c)+x on (x*3)+x", UPat::var("x") * UPat::cvar("c") + UPat::var("x"), x * 3 + x, true},
      {"(x*c)+x on x+(x*3)", UPat::var("x") * UPat::cvar("c") + UPat::var("x"), x + x * 3, true},
      {"(x*c)+x on (x*3)+y", UPat::var("x") * UPat::cvar("c") + UPat::var("x"), x * 3 + y, false},
      // the first way to match the inner MUL binds a=x, which the outer 'a' rejects: the matcher must try a=y too
      {"(a*b)+a on (x*y)+y", UPat::var("a") * UPat::var("b") + UPat::var("a"), x * y + y, true},
      {"(a*b)+a on y+(x*y)", UPat::var("a") * UPat::var("b") + UPat::var("a"), y + x * y, true},
      {"(a*b)+(a*c) on (x*y)+(z*y)", UPat::var("a") * UPat::var("b") + UPat::var("a") * UPat::var("c"), x * y + var("z") * y, true},
      {"(a*b)+(a*c) on (x*y)+(z*w)", UPat::var("a") * UPat::var("b") + UPat::var("a") * UPat::var("c"), x * y + var("z") * var("w"), false},
      {"later sibling re-binds a name", UPat(Ops::SINK, {UPat::var("a") + UPat::var("b"), UPat::var("a")}), UOp::sink({x + y, y}), true},
      {"ops set", UPat({Ops::ADD, Ops::MUL}, {UPat::var(), UPat::var()}), x * y, true},
      {"ops set miss", UPat({Ops::ADD, Ops::MUL}, {UPat::var(), UPat::var()}), x / y, false},
      {"wrong src count", UPat(Ops::ADD, {UPat::var()}), x + y, false},
      {"arg filter", UPat(Ops::RANGE).with_arg(std::vector<int64_t>{0, 0}), UOp::range(4, 0), true},
      {"arg filter miss", UPat(Ops::RANGE).with_arg(std::vector<int64_t>{0, 0}), UOp::range(4, 1), false},
      {"dtype filter", UPat::var("v", dtypes::int32), i32, true},
      {"dtype filter miss", UPat::var("v", dtypes::int32), c3, false},
      {"dtype any-of", UPat::var("v").dtype({dtypes::float32, dtypes::index}), c3, true},
      {"scalar kind", UPat::var("v").scalar_kind(dtypes::is_float), f, true},
      {"scalar kind miss", UPat::var("v").scalar_kind(dtypes::is_float), i32, false},
      {"value int", UPat::const_(2), i32, true},
      {"value float", UPat::const_(2), f, true},
      {"value miss", UPat::const_(2), c3, false},
      {"cvar on const", UPat::cvar("c"), c3, true},
      {"cvar on var", UPat::cvar("c"), x, false},
      {"cvar dtype", UPat::cvar("c", dtypes::float32), f, true},
      {"cvar dtype miss", UPat::cvar("c", dtypes::float32), i32, false},
      {"each", UPat(Ops::SINK).each(UPat::cvar()), UOp::sink({c3, f}), true},
      {"each miss", UPat(Ops::SINK).each(UPat::cvar()), UOp::sink({c3, x}), false},
      {"each empty", UPat(Ops::SINK).each(UPat::cvar()), UOp::sink({}), true},
      {"each same name", UPat(Ops::SINK).each(UPat::var("s")), UOp::sink({x, x}), true},
      {"each same name miss", UPat(Ops::SINK).each(UPat::var("s")), UOp::sink({x, y}), false},
      {"exact srcs", UPat(Ops::SINK, {UPat::cvar()}), UOp::sink({c3, x}), false},
      {"any_len prefix", UPat(Ops::SINK, {UPat::cvar()}).any_len(), UOp::sink({c3, x, y}), true},
      {"any_len exact", UPat(Ops::SINK, {UPat::cvar()}).any_len(), UOp::sink({c3}), true},
      {"any_len too short", UPat(Ops::SINK, {UPat::cvar(), UPat::var()}).any_len(), UOp::sink({c3}), false},
      {"any_len order", UPat(Ops::SINK, {UPat::cvar()}).any_len(), UOp::sink({x, c3}), false},
      {"nested", UPat(Ops::MOD, {UPat::var("x") / UPat::cvar("c"), UPat::cvar("c")}), x / 3 % 3, true},
      {"nested repeated const", UPat(Ops::MOD, {UPat::var("x") / UPat::cvar("c"), UPat::cvar("c")}), x / 3 % 4, false},
      {"operator const", UPat::var("x") * 2, UOp::make(Ops::MUL, dtypes::index, {cidx(2), x}), true},
  };
  for (auto& c : cases) EXPECT_EQ(matches(c.p, c.u), c.want) << c.what << "\n" << c.u->str();
}

TEST(UPat, Bindings) {
  auto x = var("x"), y = var("y"), swapped = UOp::make(Ops::ADD, dtypes::index, {cidx(3), x});
  UPat p = UPat::var("x") + UPat::cvar("c");
  EXPECT_EQ(bound(p, swapped, "x"), x.get());
  EXPECT_EQ(bound(p, swapped, "c"), cidx(3).get());
  EXPECT_EQ(bound(p.named("root"), swapped, "root"), swapped.get());
  // a failed first permutation leaves no stale bindings behind
  UPat q = UPat::var("x") * UPat::cvar("c") + UPat::var("x");
  EXPECT_EQ(bound(q, x + x * 5, "c"), cidx(5).get());
  UPat r = UPat::var("a") * UPat::var("b") + UPat::var("a");
  EXPECT_EQ(bound(r, x * y + y, "a"), y.get());
  EXPECT_EQ(bound(r, x * y + y, "b"), x.get());
  Match m{x.get(), nullptr, {}};
  ASSERT_TRUE(upat_match(UPat::var("x"), x.get(), m));
  EXPECT_EQ(m["x"], x);
  EXPECT_EQ(m.get("nope"), nullptr);
  try {
    m["nope"];
    ADD_FAILURE() << "unbound name did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code, TG_ERROR_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
}

TEST(PatternMatcher, RuleOrderAndFallThrough) {
  auto x = var("x");
  int calls = 0;
  PatternMatcher pm({
      {UPat::var("x") + 1, [&](const Match&) -> UOpRef { calls++; return nullptr; }},  // declines: try the next rule
      {UPat::var("x") + 1, [](const Match& m) { return m.root->ref(); }},             // same node: not a rewrite
      {UPat::var("x") + 1, [](const Match& m) { return m["x"] * 10; }},
      {UPat::var("x") + 1, [](const Match& m) { return m["x"] * 20; }},              // shadowed
  });
  EXPECT_EQ(pm.size(), 4u);
  EXPECT_EQ(pm.rewrite((x + 1).get()), x * 10);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(pm.rewrite((x + 2).get()), nullptr);
  EXPECT_EQ(pm.rewrite((x * 1).get()), nullptr);  // rules are indexed by op: the ADD rules never ran
  EXPECT_EQ(calls, 1);
  PatternMatcher a({{UPat::var("x") * 2, [](const Match& m) { return m["x"]; }}}, "a");
  PatternMatcher b({{UPat::var("x") * 2, [](const Match& m) { return m["x"] + 7; }}}, "b");
  EXPECT_EQ((a + b).rewrite((x * 2).get()), x);  // concatenation keeps order: the first table wins
  EXPECT_EQ((b + a).rewrite((x * 2).get()), x + 7);
  EXPECT_EQ((a + b).name(), "a+b");
  PatternMatcher any({{UPat(), [](const Match& m) -> UOpRef { return m.root->op == Ops::SINK ? nullptr : UOp::sink({m.root->ref()}); }}});
  EXPECT_EQ(any.rewrite(x.get()), UOp::sink({x}));  // an op-less pattern is tried on every op
}

TEST(GraphRewrite, FixedPoint) {
  // a const counts down to 0 one rewrite at a time: the driver must keep going until nothing matches
  PatternMatcher countdown({{UPat::cvar("c", dtypes::index), [](const Match& m) -> UOpRef {
                               int64_t v = std::get<int64_t>(m["c"]->arg);
                               return v > 0 ? cidx(v - 1) : nullptr;
                             }}});
  auto x = var("x");
  for (bool top_down : {false, true}) {
    EXPECT_EQ(graph_rewrite(UOp::sink({cidx(5), cidx(3), x + 9}), countdown, nullptr, top_down), UOp::sink({cidx(0), cidx(0), x + 0}));
  }
  // (x+0)+0 ... collapses through parents that only become matchable after their sources were rewritten
  PatternMatcher add0({{UPat::var("x") + 0, [](const Match& m) { return m["x"]; }}});
  UOpRef e = x;
  for (int i = 0; i < 50; i++) e = (e + 0) * 1;
  PatternMatcher mul1({{UPat::var("x") * 1, [](const Match& m) { return m["x"]; }}});
  EXPECT_EQ(graph_rewrite(e, add0 + mul1), x);
  EXPECT_EQ(graph_rewrite(e, add0 + mul1, nullptr, true), x);
  UOpRef untouched = x * 3 + 2;
  EXPECT_EQ(graph_rewrite(untouched, add0), untouched);  // nothing matches: the same node comes back
}

TEST(GraphRewrite, BottomUpVersusTopDown) {
  auto a = var("a"), b = var("b"), hit = var("hit");
  PatternMatcher pm({
      {var_named("a"), [&](const Match&) { return b; }},
      {UPat(Ops::ADD, {var_named("a"), UPat::const_(1)}), [&](const Match&) { return hit; }},
      {UPat::var("x") * 2, [](const Match& m) { return m["x"] + m["x"]; }},
  });
  // default: sources first, so a+1 has become b+1 before the ADD rule could see it
  EXPECT_EQ(graph_rewrite(a + 1, pm), b + 1);
  // top_down: the parent is rewritten first and sees the original a+1
  EXPECT_EQ(graph_rewrite(a + 1, pm, nullptr, true), hit);
  EXPECT_EQ(graph_rewrite(UOp::sink({a + 1, a}), pm, nullptr, true), UOp::sink({hit, b}));
  // top_down still visits the sources of a replacement: a*2 -> a+a -> b+b
  EXPECT_EQ(graph_rewrite(a * 2, pm, nullptr, true), b + b);
  EXPECT_EQ(graph_rewrite(a * 2, pm), b + b);
}

TEST(GraphRewrite, MemoizesSharedSubgraphs) {
  struct Ctx {
    int matched = 0, tried = 0;
  };
  auto x = var("x"), y = var("y");
  PatternMatcher pm({
      {UPat(), [](const Match& m) -> UOpRef { m.ctx<Ctx>().tried++; return nullptr; }},
      {UPat(Ops::ADD, {UPat(Ops::DEFINE_VAR), UPat::cvar()}), [&](const Match& m) { m.ctx<Ctx>().matched++; return y; }},
  });
  auto s = x + 1;
  auto root = UOp::sink({s * 2, s * 3, s + s, s * 2 + s});
  for (bool top_down : {false, true}) {
    Ctx ctx;
    EXPECT_EQ(graph_rewrite(root, pm, &ctx, top_down), UOp::sink({y * 2, y * 3, y + y, y * 2 + y}));
    EXPECT_EQ(ctx.matched, 1) << "top_down=" << top_down;
  }
  // a ladder with 2^60 paths: each distinct node may be tried a bounded number of times, never once per path
  UOpRef e = x + 1;
  for (int i = 0; i < 60; i++) e = e * e + i;
  size_t nodes = e->toposort().size();
  for (bool top_down : {false, true}) {
    Ctx ctx;
    UOpRef out = graph_rewrite(e, pm, &ctx, top_down);
    EXPECT_EQ(ctx.matched, 1);
    EXPECT_LE(size_t(ctx.tried), 3 * (nodes + out->toposort().size())) << "top_down=" << top_down;
    EXPECT_EQ(out->toposort().size(), nodes - 1);  // x+1 (and its const 1 use) became y
  }
}

TEST(GraphRewrite, LoopingRulesAreReported) {
  auto a = var("a"), b = var("b");
  PatternMatcher grow({{UPat(Ops::DEFINE_VAR), [](const Match& m) { return m.root->ref() + 1; }}});
  PatternMatcher ping({{var_named("a"), [&](const Match&) { return b; }}, {var_named("b"), [&](const Match&) { return a; }}});
  struct C {
    const PatternMatcher& pm;
    bool top_down;
  } cases[] = {{grow, false}, {grow, true}, {ping, false}, {ping, true}};
  for (auto& c : cases) {
    try {
      graph_rewrite(a * 3, c.pm, nullptr, c.top_down);
      ADD_FAILURE() << "no error, top_down=" << c.top_down;
    } catch (const Error& e) {
      EXPECT_EQ(e.code, TG_ERROR_INTERNAL);
      EXPECT_NE(std::string(e.what()).find("loop"), std::string::npos) << e.what();
    }
  }
}

TEST(GraphRewrite, Substitute) {
  auto x = var("x"), y = var("y"), z = var("z");
  auto e = (x + 1) * x + y;
  EXPECT_EQ(e->substitute({{x, y}}), (y + 1) * y + y);
  EXPECT_EQ(e->substitute({{x + 1, z}}), z * x + y);  // a whole subtree by identity
  EXPECT_EQ(e->substitute({{x, y}, {y, x}}), (y + 1) * y + x);  // simultaneous, not sequential
  EXPECT_EQ(e->substitute({{x, x + 1}}), ((x + 1) + 1) * (x + 1) + y);  // a replacement is not searched again
  EXPECT_EQ(e->substitute({{z, y}}), e);
  EXPECT_EQ(e->substitute({{e, z}}), z);
}
