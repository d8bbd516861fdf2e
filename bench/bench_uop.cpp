// UOp core throughput: interning (hash-cons hits and misses), graph_rewrite with the symbolic table, toposort.
// Every figure is items/s: nodes created, nodes rewritten, nodes visited.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "uop/symbolic.h"
#include "uop/uop.h"

using namespace tg;

// values no node has held yet in this process, so every const made from them is an intern miss
static int64_t fresh_value() {
  static int64_t next = int64_t(1) << 40;
  return next++;
}

// ---- creation: hits (the node exists, make returns it) ----
static void BM_UOpCreateHit(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  UOpRef x = UOp::variable("x", 0, 1023);
  UOps consts, held;
  for (size_t i = 0; i < n; i++) consts.push_back(UOp::const_int(dtypes::index, int64_t(i))), held.push_back(x + consts.back());
  for (auto _ : state)
    for (size_t i = 0; i < n; i++) {
      UOpRef r = UOp::make(Ops::ADD, dtypes::index, {x, consts[i]});
      benchmark::DoNotOptimize(r.get());
    }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_UOpCreateHit)->Arg(1024);

// ---- creation: misses (a new node is allocated and interned; the batch is freed outside the timing) ----
static void BM_UOpCreateMissConst(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  UOps held;
  held.reserve(n);
  for (auto _ : state) {
    for (size_t i = 0; i < n; i++) held.push_back(UOp::const_int(dtypes::index, fresh_value()));
    state.PauseTiming();
    held.clear();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_UOpCreateMissConst)->Arg(4096);

static void BM_UOpCreateMissVariable(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  UOps held;
  held.reserve(n);
  std::vector<std::string> names(n);
  for (auto _ : state) {
    state.PauseTiming();
    held.clear();
    for (auto& s : names) s = "v" + std::to_string(fresh_value());
    state.ResumeTiming();
    for (size_t i = 0; i < n; i++) held.push_back(UOp::variable(names[i], 0, 1 << 20));
  }
  held.clear();  // after the loop: not timed
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_UOpCreateMissVariable)->Arg(4096);

// a miss whose node is dropped at once: allocate, intern, unintern, free (the life of a rewrite temporary)
static void BM_UOpCreateMissAndFree(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  for (auto _ : state)
    for (size_t i = 0; i < n; i++) {
      UOpRef r = UOp::const_int(dtypes::index, fresh_value());
      benchmark::DoNotOptimize(r.get());
    }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_UOpCreateMissAndFree)->Arg(4096);

// ---- a symbolic-heavy graph: n index expressions over bounded variables, each with foldable divmod/compare terms ----
// The variables' names carry `salt`, so graphs with different salts share no node.
static UOpRef index_graph(int64_t n, int64_t salt) {
  std::string s = std::to_string(salt);
  UOpRef x = UOp::variable("x" + s, 0, 255), y = UOp::variable("y" + s, 0, 3), z = UOp::variable("z" + s, 0, 15),
         w = UOp::variable("w" + s, 0, 7);
  UOps exprs;
  for (int64_t k = 0; k < n; k++) {
    UOpRef a = x * 4 + y;
    UOpRef t1 = ((a + 4 * k) / 4) % 8 + z * 16;         // (x+k)%8 + z*16
    UOpRef t2 = a % 4 + (a / 4) * 4 + k;                // x*4 + y + k
    UOpRef t3 = (z * 16 + w * 2 + 1 + 32 * k) / 2;      // z*8 + w + 16*k
    UOpRef t4 = (w + 8 * k) % 8;                        // w
    UOpRef t5 = ((x + k) < (x->const_like(double(k + 300))))->cast(dtypes::index);  // 1
    exprs.push_back(t1 + t2 * 3 + t3 + t4 * (k + 2) + t5 - (y * 2 + k) * 2);
  }
  return UOp::sink(std::move(exprs));
}

static void BM_GraphRewriteSymbolic(benchmark::State& state) {
  const int64_t n = state.range(0);
  static int64_t salt = 0;
  const PatternMatcher& pm = symbolic();
  UOpRef graph, out;
  int64_t nodes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    out = nullptr, graph = nullptr;  // free last iteration's graph before building a fresh one
    graph = index_graph(n, salt++);
    nodes += int64_t(graph->toposort().size());
    state.ResumeTiming();
    out = graph_rewrite(graph, pm);
    benchmark::DoNotOptimize(out.get());
  }
  out = nullptr, graph = nullptr;  // after the loop: not timed
  state.SetItemsProcessed(nodes);
}
BENCHMARK(BM_GraphRewriteSymbolic)->Arg(16)->Arg(256)->Unit(benchmark::kMicrosecond);

// ---- toposort: nodes visited and returned (with a reference each) per second ----
static void BM_Toposort(benchmark::State& state) {
  UOpRef graph = index_graph(state.range(0), -1);
  const int64_t nodes = int64_t(graph->toposort().size());
  for (auto _ : state) {
    UOps order = graph->toposort();
    benchmark::DoNotOptimize(order.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * nodes);
}
BENCHMARK(BM_Toposort)->Arg(16)->Arg(256)->Unit(benchmark::kMicrosecond);

// a deep chain (each node uses the previous one): the iterative walk with no sharing
static void BM_ToposortChain(benchmark::State& state) {
  UOpRef v = UOp::variable("chain", 0, 100);
  for (int64_t i = 0; i < state.range(0); i++) v = v * 3 + i;
  const int64_t nodes = int64_t(v->toposort().size());
  for (auto _ : state) {
    UOps order = v->toposort();
    benchmark::DoNotOptimize(order.data());
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * nodes);
}
BENCHMARK(BM_ToposortChain)->Arg(10000)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
