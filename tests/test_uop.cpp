// UOp: interning (identity = structure), reference counting and freeing, thread safety, builders, value ranges.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <thread>

#include "uop/uop.h"

using namespace tg;

namespace {
UOpRef noop(Arg arg, Arg tag = {}) { return UOp::make(Ops::NOOP, dtypes::void_, {}, std::move(arg), std::move(tag)); }
UOpRef cfloat(double v) { return UOp::const_(dtypes::float32, v); }
struct Box : ArgExt {  // an object arg compared by value
  int v;
  explicit Box(int v) : v(v) {}
  size_t hash() const override { return size_t(v); }
  bool eq(const ArgExt& o) const override { auto b = dynamic_cast<const Box*>(&o); return b && b->v == v; }
  std::string str() const override { return "Box(" + std::to_string(v) + ")"; }
};
Arg box(int v) { return std::shared_ptr<const ArgExt>(std::make_shared<Box>(v)); }
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;  // ASan keeps freed memory in quarantine, so the resident set grows by design
#else
constexpr bool kAsan = false;
#endif
size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t total = 0, resident = 0;
  f >> total >> resident;
  return resident * size_t(sysconf(_SC_PAGESIZE));
}
}  // namespace

TEST(UOp, InterningDistinguishesEveryField) {
  auto x = [] { return UOp::variable("x", 0, 10); };
  auto y = [] { return UOp::variable("y", 0, 10); };
  struct C {
    const char* what;
    std::function<UOpRef()> a, b;
    bool same;
  } cases[] = {
      {"same expression", [&] { return x() + 1; }, [&] { return x() + 1; }, true},
      {"op", [&] { return x() + y(); }, [&] { return x() * y(); }, false},
      {"src order", [&] { return x() + y(); }, [&] { return y() + x(); }, false},
      {"src value", [&] { return x() + 1; }, [&] { return x() + 2; }, false},
      {"dtype", [] { return UOp::const_int(dtypes::int32, 1); }, [] { return UOp::const_int(dtypes::int64, 1); }, false},
      {"var name", [&] { return x(); }, [&] { return UOp::variable("x2", 0, 10); }, false},
      {"var bounds", [&] { return x(); }, [] { return UOp::variable("x", 0, 11); }, false},
      {"int tuple arg", [] { return UOp::range(8, 0); }, [] { return UOp::range(8, 0); }, true},
      {"int tuple arg differs", [] { return UOp::range(8, 0); }, [] { return UOp::range(8, 1); }, false},
      {"arg kind int vs bool", [] { return noop(int64_t(1)); }, [] { return noop(true); }, false},
      {"arg kind int vs double", [] { return noop(int64_t(1)); }, [] { return noop(1.0); }, false},
      {"arg none vs 0", [] { return noop({}); }, [] { return noop(int64_t(0)); }, false},
      {"string arg", [] { return noop(std::string("a")); }, [] { return noop(std::string("a")); }, true},
      {"string arg differs", [] { return noop(std::string("a")); }, [] { return noop(std::string("b")); }, false},
      {"object arg by value", [] { return noop(box(3)); }, [] { return noop(box(3)); }, true},
      {"object arg differs", [] { return noop(box(3)); }, [] { return noop(box(4)); }, false},
      {"tag", [&] { return x()->with_tag(int64_t(1)); }, [&] { return x()->with_tag(int64_t(1)); }, true},
      {"tag vs none", [&] { return x()->with_tag(int64_t(1)); }, [&] { return x(); }, false},
      {"tag value", [&] { return x()->with_tag(int64_t(1)); }, [&] { return x()->with_tag(int64_t(2)); }, false},
      {"NaN interns as itself", [] { return cfloat(NAN); }, [] { return cfloat(NAN); }, true},
      {"-0.0 vs 0.0", [] { return cfloat(-0.0); }, [] { return cfloat(0.0); }, false},
      {"-0.0 twice", [] { return cfloat(-0.0); }, [] { return cfloat(-0.0); }, true},
      {"double arg 1.0 vs 1.0+ulp", [] { return noop(1.0); }, [] { return noop(std::nextafter(1.0, 2.0)); }, false},
  };
  for (auto& c : cases) {
    UOpRef a = c.a(), b = c.b();
    EXPECT_EQ(a == b, c.same) << c.what << "\n" << a->str() << b->str();
    if (c.same) {
      EXPECT_EQ(a->hash(), b->hash()) << c.what;
    }
  }
  // NaN constants compare unequal as values, yet a NaN pattern is one node
  UOpRef n = cfloat(NAN);
  EXPECT_TRUE(std::isnan(n->const_value()));
  EXPECT_TRUE(std::signbit(cfloat(-0.0)->const_value()));
}

TEST(UOp, LiveCountReturnsToBaseline) {
  size_t base = UOp::live_count();
  {
    auto x = UOp::variable("live_x", 0, 9);
    auto e = x + 987654321;
    EXPECT_EQ(UOp::live_count(), base + 3);  // DEFINE_VAR, CONST, ADD
    auto e2 = x + 987654321;                  // interned: no new node
    EXPECT_EQ(UOp::live_count(), base + 3);
    UOps graph;
    for (int i = 0; i < 1000; i++) graph.push_back((e * i + x) / (i + 1) % 7);
    EXPECT_GT(UOp::live_count(), base + 3000);
  }
  EXPECT_EQ(UOp::live_count(), base);
}

TEST(UOp, MemoryFlatOverManyBuildDropCycles) {
  auto cycle = [](int64_t i) {
    auto x = UOp::variable("mem_x", 0, 1000), y = UOp::variable("mem_y", -5, 5);
    auto e = (x * i + y) / 7 % (i % 13 + 1);  // fresh constants every cycle: table entries come and go
    return e->vmax();
  };
  int64_t sink = 0;
  for (int64_t i = 0; i < 20000; i++) sink += cycle(i);  // warm up the allocator and the table's buckets
  size_t base = UOp::live_count(), rss0 = rss_bytes();
  for (int64_t i = 0; i < 1000000; i++) sink += cycle(i);
  size_t rss1 = rss_bytes();
  EXPECT_EQ(UOp::live_count(), base);
  if (!kAsan) {
    EXPECT_LT(rss1, rss0 + (8u << 20)) << "resident set grew from " << rss0 << " to " << rss1 << " bytes";
  }
  EXPECT_NE(sink, 0);
}

TEST(UOp, DeepChainFreesWithoutRecursion) {
  size_t base = UOp::live_count();
  {
    UOpRef e = UOp::variable("deep", 0, 1), one = UOp::const_int(dtypes::index, 1);
    size_t start = UOp::live_count();
    for (int i = 0; i < 1000000; i++) e = e + one;
    EXPECT_EQ(UOp::live_count(), start + 1000000);
    EXPECT_EQ(e->vmax(), 1000001);
    EXPECT_EQ(e->toposort().size(), 1000002u);  // iterative walk, too
  }  // the last reference goes here: a recursive free would overflow the stack
  EXPECT_EQ(UOp::live_count(), base);
}

TEST(UOp, MultithreadedInterningGivesOneNode) {
  constexpr int kThreads = 4, kExprs = 3000, kChurn = 100;
  size_t base = UOp::live_count();
  auto build = [](int i) {
    auto x = UOp::variable("mt_x", 0, 100), y = UOp::variable("mt_y", -3, 3);
    return ((x * (i % 17) + y) / (i % 5 + 1) + i)->maximum(y * i) % (i % 11 + 2);
  };
  std::vector<UOps> out(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++)
    ts.emplace_back([&, t] {
      // churn: the same nodes are created and freed from every thread at once, so lookups race with frees
      for (int r = 0; r < kChurn; r++)
        for (int i = r * 7 % kExprs; i < kExprs; i += 97) build(i);
      for (int i = 0; i < kExprs; i++) out[size_t(t)].push_back(build(i));
      for (int i = 0; i < kExprs; i += 3) out[size_t(t)].push_back(build(i)->simplify());  // shared pattern tables, too
    });
  for (auto& t : ts) t.join();
  for (int t = 1; t < kThreads; t++)
    for (size_t i = 0; i < out[0].size(); i++) ASSERT_EQ(out[size_t(t)][i], out[0][i]) << "thread " << t << " expr " << i;
  EXPECT_EQ(out[0][5], build(5));
  out.clear();
  EXPECT_EQ(UOp::live_count(), base);
}

TEST(UOp, BuildersAndDtypes) {
  auto x = UOp::variable("x", 0, 15);
  auto f = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, VarArg{"i", 0, 3});
  EXPECT_EQ(x - 3, x + (UOp::const_int(dtypes::index, 3) * -1));  // int subtraction is a + b*-1
  EXPECT_EQ(-x, x * -1);
  EXPECT_EQ((x < 3)->dtype, dtypes::bool_);
  EXPECT_EQ(x->eq(x)->op, Ops::CMPEQ);
  EXPECT_EQ((x < 3)->where(x, x * 2)->dtype, dtypes::index);
  EXPECT_EQ(x->cast(dtypes::index), x);  // a cast to the same dtype is the node itself
  EXPECT_EQ(f->cast(dtypes::float32)->op, Ops::CAST);
  EXPECT_EQ((x / 2)->op, Ops::IDIV);
  EXPECT_EQ((cfloat(1) / cfloat(2))->op, Ops::FDIV);
  EXPECT_EQ((cfloat(1) - cfloat(2))->op, Ops::SUB);
  EXPECT_EQ(f + 1, f->alu(Ops::ADD, {UOp::const_int(dtypes::int32, 1)}));  // scalars take the UOp's dtype
  EXPECT_EQ((2.5 * cfloat(1))->src[0]->const_value(), 2.5);
  EXPECT_EQ(UOp::const_(dtypes::int8, 300)->const_value(), 44);  // C cast semantics
  EXPECT_EQ(UOp::const_(dtypes::bool_, 7)->arg, Arg(true));
  EXPECT_EQ(UOp::const_(dtypes::float32, 0.1)->const_value(), double(0.1f));
  EXPECT_THROW(UOp::variable("bad", 3, 2), Error);
}

TEST(UOp, AlgebraHelpers) {
  auto x = UOp::variable("x", 0, 15), y = UOp::variable("y", 0, 3);
  EXPECT_EQ((x * 6 + y * 4 + 8)->const_factor(), 2);
  EXPECT_EQ((x * 6 + y * 3 + 9)->const_factor(), 3);
  EXPECT_EQ((x * 6 + y + 8)->const_factor(), 1);
  EXPECT_EQ((x * 6)->const_factor(), 6);
  EXPECT_EQ((x * 6 + 9)->divides(3), x * 2 + 3);
  EXPECT_EQ((x * 6 + 9)->divides(2), nullptr);
  EXPECT_EQ(x->divides(1), x);
  int64_t c = 0;
  EXPECT_EQ((x + 5)->pop_const(&c), x);
  EXPECT_EQ(c, 5);
  EXPECT_EQ(x->pop_const(&c), x);
  EXPECT_EQ(c, 0);
  UOps terms;
  (x + y + x * 2)->split_uop(Ops::ADD, terms);
  EXPECT_EQ(terms, (UOps{x, y, x * 2}));
}

TEST(UOp, ToposortAndPrinting) {
  auto x = UOp::variable("x", 0, 15), s = x + 1;
  auto root = UOp::sink({s * 2, s * 3, s});
  UOps order = root->toposort();
  std::unordered_map<const UOp*, size_t> pos;
  for (size_t i = 0; i < order.size(); i++) EXPECT_TRUE(pos.emplace(order[i].get(), i).second) << "node listed twice";
  for (auto& n : order)
    for (auto& src : n->src) EXPECT_LT(pos.at(src.get()), pos.at(n.get()));
  EXPECT_EQ(order.back(), root);
  EXPECT_EQ(order.size(), 8u);  // x, 1, s, 2, s*2, 3, s*3, sink
  std::string str = root->str();
  EXPECT_NE(str.find("x0:UOp(Ops.ADD"), std::string::npos) << str;  // a shared node is named once, then referred to
  struct R {
    UOpRef e;
    const char* want;
  } renders[] = {{x * 4 + UOp::variable("y", 0, 3), "((x*4)+y)"}, {x - 3, "(x-3)"},  {-x, "(-x)"},
                 {x / 4 % 3, "((x//4)%3)"},                       {x->maximum(x * 2), "max(x, (x*2))"},
                 {(x < 3)->where(x, x + 1), "(x if (x<3) else (x+1))"}, {UOp::range(8, 2), "ridx2"}};
  for (auto& r : renders) EXPECT_EQ(r.e->render(), r.want);
}

TEST(UOp, ValueRanges) {
  auto x = UOp::variable("x", 0, 15), y = UOp::variable("y", 0, 3), n = UOp::variable("n", -8, 5);
  struct C {
    const char* what;
    UOpRef e;
    int64_t lo, hi;
  } cases[] = {
      {"x*4+y", x * 4 + y, 0, 63},          {"n*-3", n * -3, -15, 24},       {"x//4", x / 4, 0, 3},
      {"n//3", n / 3, -2, 1},                {"n//-3", n / -3, -1, 2},         {"x%4", x % 4, 0, 3},
      {"n%4", n % 4, -3, 3},                 {"(n-9)%4", (n - 9) % 4, -3, 0},  {"max(n,y)", n->maximum(y), 0, 5},
      {"x<16", (x < 16), 1, 1},              {"x<0", (x < 0), 0, 0},           {"x<8", (x < 8), 0, 1},
      {"where", (n < 0)->where(x, y - 9), -9, 15}, {"range", UOp::range(8, 0), 0, 7}, {"const", UOp::const_int(dtypes::index, -4), -4, -4},
  };
  for (auto& c : cases) {
    EXPECT_EQ(c.e->vmin(), c.lo) << c.what;
    EXPECT_EQ(c.e->vmax(), c.hi) << c.what;
  }
  // a range that can overflow the dtype makes no claim
  auto big = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, VarArg{"b", 0, 2000000000});
  EXPECT_EQ((big * 2)->vmax(), 2147483647);
  EXPECT_EQ((big * 2)->vmin(), -2147483648LL);
}

TEST(UOp, ExecAluCSemantics) {
  struct C {
    Ops op;
    DType dt;
    std::vector<double> in;
    double want;
  } cases[] = {
      {Ops::IDIV, dtypes::int32, {-7, 2}, -3},      {Ops::MOD, dtypes::int32, {-7, 2}, -1},     {Ops::MOD, dtypes::int32, {7, -2}, 1},
      {Ops::IDIV, dtypes::int32, {7, -2}, -3},      {Ops::ADD, dtypes::int8, {127, 1}, -128},  {Ops::ADD, dtypes::uint8, {0, -1}, 255},
      {Ops::MUL, dtypes::int16, {300, 300}, 24464}, {Ops::SHL, dtypes::int32, {1, 4}, 16},     {Ops::SHR, dtypes::int32, {-16, 2}, -4},
      {Ops::XOR, dtypes::int32, {6, 3}, 5},         {Ops::MAX, dtypes::int32, {-1, -5}, -1},   {Ops::CMPLT, dtypes::bool_, {1, 2}, 1},
      {Ops::CMPNE, dtypes::bool_, {2, 2}, 0},       {Ops::WHERE, dtypes::int32, {0, 1, 2}, 2}, {Ops::FDIV, dtypes::float32, {1, 3}, 1.0f / 3.0f},
      {Ops::ADD, dtypes::float16, {2048, 1}, 2048}, {Ops::SQRT, dtypes::float64, {2}, std::sqrt(2.0)},
  };
  for (auto& c : cases) EXPECT_EQ(exec_alu(c.op, c.dt, c.in), c.want) << op_name(c.op) << " " << c.dt.name();
  EXPECT_EQ(truncate_to(dtypes::int8, 300), 44);
  EXPECT_EQ(truncate_to(dtypes::uint8, -1), 255);
  EXPECT_EQ(truncate_to(dtypes::bool_, 2), 1);
  EXPECT_TRUE(std::isinf(truncate_to(dtypes::float16, 65520)));
  EXPECT_EQ(truncate_to(dtypes::bfloat16, 1.00390625), 1.0);  // ties to even
}

// Known bugs outside the files this suite's author owns (see the Foundation report); enable each once fixed.
TEST(UOp, MinimumIsOrderReversingForUnsignedAndInt64Min) {
  // minimum(a, b) is built as -max(-a, -b): negation doesn't reverse order for unsigned values or INT64_MIN
  struct C {
    DType dt;
    int64_t a, b;
  } cases[] = {{dtypes::uint32, 0, 5}, {dtypes::uint8, 0, 200}, {dtypes::int64, INT64_MIN, 5}};
  for (auto& c : cases) {
    UOpRef r = UOp::const_int(c.dt, c.a)->minimum(UOp::const_int(c.dt, c.b))->simplify();
    EXPECT_EQ(r, UOp::const_int(c.dt, std::min(c.a, c.b))) << c.dt.name() << ": " << r->render();
  }
}

TEST(UOp, IntegerScalarOperandsKeepInt64Precision) {
  // x + int64 goes through const_like(double): 2^53+1 becomes 2^53
  auto x = UOp::variable("x", 0, int64_t(1) << 60);
  int64_t big = (int64_t(1) << 53) + 1;
  EXPECT_EQ(x + big, x + UOp::const_int(dtypes::index, big));
  EXPECT_EQ(x * big, x * UOp::const_int(dtypes::index, big));
}
