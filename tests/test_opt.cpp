// Opt actions on real kernel ASTs: each optimized kernel computes what the unoptimized one does on random inputs, illegal
// actions are refused with a message saying why, GPU-only actions transform the AST for a target with local memory,
// and Opt lists round-trip through text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "codegen/codegen.h"
#include "codegen/opt/postrange.h"
#include "kernel_case.h"
#include "renderer/cstyle.h"
#include "runtime/cuda.h"

namespace {

using tg::Opt;
using tg::OptOps;
using tg::Tensor;
using tg::test::Case;
using tg::test::randt;

// d/dw (which 1) or d/dx (which 0) of sum(conv2d(x, w) * g), w (8, 4, 3, 3), no padding
Tensor conv_grad(int which, tg::Shape xs) {
  Tensor x = randt(xs, 20), w = randt({8, 4, 3, 3}, 21);
  Tensor y = x.conv2d(w, std::nullopt, 1, {1, 1}, {1, 1}, {0, 0});
  return y.mul(randt(y.shape(), 22)).sum().gradient({which ? w : x})[0];
}

struct Kernel {
  const char* name;
  std::function<Tensor()> build;
};
const std::vector<Kernel>& kernels() {
  static const std::vector<Kernel> ks = {
      {"elementwise", [] { return randt({32, 48}, 1).add(randt({32, 48}, 2)).mul(randt({32, 48}, 3)); }},
      {"sum axis 0", [] { return randt({16, 12, 20}, 4).sum({0}); }},
      {"sum axis 1", [] { return randt({16, 12, 20}, 5).sum({1}); }},
      {"sum axis 2", [] { return randt({16, 12, 20}, 6).sum({2}); }},
      {"max axis 2", [] { return randt({16, 12, 20}, 7).max({2}); }},
      {"matmul", [] { return randt({32, 24}, 8).matmul(randt({24, 64}, 9)); }},
      {"conv2d", [] { return randt({2, 4, 10, 10}, 10).conv2d(randt({8, 4, 3, 3}, 11), std::nullopt, 1, {1, 1}, {1, 1}, {1, 1}); }},
      // a 12-wide image: 16 lanes don't divide its rows, they divide its 144 pixels (the heuristics merge rows and columns)
      {"conv2d 12x12", [] { return randt({2, 4, 12, 12}, 13).conv2d(randt({16, 4, 3, 3}, 14), std::nullopt, 1, {1, 1}, {1, 1}, {1, 1}); }},
      {"softmax", [] { return randt({8, 32}, 12).softmax(1); }},
      // a conv's own backward: the weight gradient (a reduce along the images' rows for every input) and the input's (a
      // transposed conv over the padded gradient), with a short row (6) that one vector covers
      {"conv2d weight grad", [] { return conv_grad(1, {2, 4, 8, 8}); }},
      {"conv2d input grad", [] { return conv_grad(0, {2, 4, 8, 8}); }},
      {"conv2d weight grad 12x12", [] { return conv_grad(1, {2, 4, 12, 12}); }},
      // a 10-wide input gradient (one 16-lane vector, padded) and a 20-wide image (two 16-lane vectors, padded to 32)
      {"conv2d input grad 10x10", [] { return conv_grad(0, {2, 4, 10, 10}); }},
      {"conv2d 20 wide", [] { return randt({2, 8, 22, 22}, 15).conv2d(randt({8, 8, 3, 3}, 16), std::nullopt, 1, {1, 1}, {1, 1}, {0, 0}); }},
      {"transpose", [] { return randt({48, 64}, 17).transpose().add(randt({64, 48}, 18)); }},
  };
  return ks;
}

// opt lists tried on every kernel; the ones a kernel can't take are refused (and counted)
const std::vector<std::vector<Opt>>& opt_lists() {
  static const std::vector<std::vector<Opt>> l = {
      {{OptOps::UPCAST, 0, 4}},
      {{OptOps::UPCAST, 1, 4}},
      {{OptOps::UPCAST, 0, 0}},
      {{OptOps::UNROLL, 0, 4}},
      {{OptOps::UNROLL, 0, 0}},
      {{OptOps::THREAD, 0, 2}},
      {{OptOps::UPCAST, 1, 16}, {OptOps::UPCAST, 0, 4}},
      {{OptOps::UPCAST, 0, 4}, {OptOps::UNROLL, 0, 4}, {OptOps::THREAD, 0, 2}},
      {{OptOps::UNROLL, 0, 4}, {OptOps::UNROLL, 0, 2}},
      {{OptOps::PADTO, 0, 32}},
      {{OptOps::PADTO, 1, 32}},
      {{OptOps::PADTO, 2, 32}, {OptOps::UPCAST, 0, 2}},
      {{OptOps::SWAP, 0, 1}},
      {{OptOps::NOLOCALS}, {OptOps::UPCAST, 0, 2}},
      {{OptOps::UPCAST, 0, 3}, {OptOps::UPCAST, 1, 2}, {OptOps::UNROLL, 0, 3}},
      {{OptOps::MERGE, 0, 0}},
      {{OptOps::MERGE, 0, 0}, {OptOps::UPCAST, 0, 4}},
      // a convolution's image rows and columns as one axis of vectors, its input channels innermost of the reduction
      {{OptOps::MERGE, 2, 0}, {OptOps::UPCAST, 2, 4}, {OptOps::SWAP, 3, 5}, {OptOps::UPCAST, 1, 2}, {OptOps::THREAD, 0, 2}},
      {{OptOps::MERGE, 2, 0}, {OptOps::UPCAST, 2, 16}, {OptOps::SWAP, 3, 4}, {OptOps::UNROLL, 2, 3}},
      // packed panels: matmul's B under a register tile (the heuristics' shape), B packed before the splits (its panel
      // then has unrolled lanes), A packed with the rows outside, and a convolution's gated image window
      {{OptOps::UPCAST, 1, 16}, {OptOps::UPCAST, 0, 4}, {OptOps::SWAP, 0, 1}, {OptOps::PACK, 1, 0}, {OptOps::THREAD, 0, 2}},
      {{OptOps::SWAP, 0, 1}, {OptOps::PACK, 1, 0}, {OptOps::UPCAST, 0, 4}, {OptOps::UNROLL, 0, 4}},
      {{OptOps::UPCAST, 0, 4}, {OptOps::PACK, 0, 0}, {OptOps::UPCAST, 1, 16}},
      {{OptOps::MERGE, 2, 0}, {OptOps::UPCAST, 2, 4}, {OptOps::SWAP, 1, 2}, {OptOps::PACK, 0, 0}, {OptOps::SWAP, 3, 5}, {OptOps::THREAD, 0, 2}},
      {{OptOps::UPCAST, 1, 4}, {OptOps::SWAP, 0, 1}, {OptOps::PACK, 0, 0}, {OptOps::PACK, 1, 0}},
  };
  return l;
}

TEST(Opt, OptimizedKernelsMatchUnoptimized) {
  int applied = 0, refused = 0;
  for (auto& k : kernels()) {
    Case c(k.build());
    std::vector<float> base = c.run({});
    for (auto& opts : opt_lists()) {
      SCOPED_TRACE(std::string(k.name) + " " + tg::opts_str(opts));
      std::vector<float> got;
      try {
        got = c.run(opts);
      } catch (const tg::OptError& e) {
        refused++;
        EXPECT_NE(std::string(e.what()).find("opt: "), std::string::npos);
        continue;
      }
      applied++;
      ASSERT_EQ(got.size(), base.size());
      int bad = 0;
      for (size_t i = 0; i < got.size(); i++)  // float32: sums reassociate, so a few ulps of the sum's magnitude
        if (!(std::fabs(got[i] - base[i]) <= 1e-5f + 1e-5f * std::fabs(base[i])) && bad++ < 3)
          ADD_FAILURE() << "[" << i << "] got " << got[i] << " want " << base[i];
    }
  }
  std::printf("[ OPT      ] %d opt lists applied and checked, %d refused\n", applied, refused);
  EXPECT_GT(applied, 60);
}

// the heuristics' choice too, for every kernel
TEST(Opt, HeuristicKernelsMatchUnoptimized) {
  for (auto& k : kernels()) {
    SCOPED_TRACE(k.name);
    Case c(k.build());
    std::vector<float> base = c.run({});
    tg::Scheduler s = tg::optimize(c.last(), tg::get_device("CPU").renderer(), nullptr);
    std::vector<float> got = c.run(s.applied_opts);
    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], base[i], 1e-5 + 1e-5 * std::fabs(base[i])) << i << " " << tg::opts_str(s.applied_opts);
  }
}

// A convolution over images whose width the vector lanes don't divide: the heuristics merge each image's rows and
// columns into one axis of full-width vectors, and run the input channels innermost, inside the taps the padding's
// gates depend on (so the gates are computed once per tap, not once per multiply-add)
TEST(Opt, HeuristicsVectorizeAConvolutionAcrossImageRows) {
  Case c(randt({2, 4, 12, 12}, 13).conv2d(randt({16, 4, 3, 3}, 14), std::nullopt, 1, {1, 1}, {1, 1}, {1, 1}));
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  if (cpu.target().vector_bytes < 64) GTEST_SKIP() << "the host's vectors are narrower than 16 floats";
  tg::Scheduler s = tg::optimize(c.last(), cpu, nullptr);
  std::string opts = tg::opts_str(s.applied_opts);
  EXPECT_EQ(s.applied_opts.at(0), (Opt{OptOps::MERGE, 2, 0})) << opts;
  EXPECT_EQ(s.applied_opts.at(1), (Opt{OptOps::UPCAST, 2, 16})) << opts;
  // the reduction's loops in order: the taps (3, 3) outside the input channels (4)
  std::vector<int64_t> red;
  auto fs = s.full_shape();
  for (int ax : s.axes_of({tg::AxisType::REDUCE})) red.push_back(fs[size_t(ax)]);
  EXPECT_EQ(red, (std::vector<int64_t>{3, 3, 4})) << opts;
}

// Rows shorter than, or not a multiple of, the vector width are padded (gated lanes) to full vectors: a 6-wide row of a
// weight gradient's reduce to 8 lanes (6-lane groups straddled the registers: 7x slower), a 10-wide input gradient to
// one 16-lane vector (it had no vector axis: 38x slower), a 20-wide image to two where the reduce has 64 or more
// multiply-adds per output (three 8-lane ones: 1.3x slower)
TEST(Opt, HeuristicsPadShortRowsToFullVectors) {
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  if (cpu.target().vector_bytes < 64) GTEST_SKIP() << "the host's vectors are narrower than 16 floats";
  auto has = [](const std::vector<Opt>& opts, OptOps op, int64_t arg) {
    return std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == op && o.arg == arg; });
  };
  struct Want {
    const char* name;
    Tensor t;
    OptOps vec;
    int64_t lanes;
  };
  Want cases[] = {{"weight grad, 6-wide rows", conv_grad(1, {2, 4, 8, 8}), OptOps::UNROLL, 8},
                  {"input grad, 10-wide rows", conv_grad(0, {2, 4, 10, 10}), OptOps::UPCAST, 16},
                  {"conv, 20-wide rows",
                   randt({2, 8, 22, 22}, 15).conv2d(randt({8, 8, 3, 3}, 16), std::nullopt, 1, {1, 1}, {1, 1}, {0, 0}), OptOps::UPCAST, 16}};
  for (auto& w : cases) {
    Case c(w.t);
    tg::Scheduler s = tg::optimize(c.last(), cpu, nullptr);
    std::string opts = tg::opts_str(s.applied_opts);
    EXPECT_TRUE(has(s.applied_opts, OptOps::PADTO, w.lanes)) << w.name << ": " << opts;
    EXPECT_TRUE(has(s.applied_opts, w.vec, w.lanes)) << w.name << ": " << opts;
    std::vector<float> base = c.run({}), got = c.run(s.applied_opts);
    for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], base[i], 1e-5 + 1e-5 * std::fabs(base[i])) << w.name << " [" << i << "] " << opts;
  }
}

// A matmul's B is packed: the heuristics' tile reads B's panel from one contiguous scratch block per column block, and
// the packed kernel computes exactly what the unpacked one does (same sums in the same order)
TEST(Opt, HeuristicsPackAMatmulsPanel) {
  Case c(randt({64, 96}, 21).matmul(randt({96, 128}, 22)));
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  tg::Scheduler s = tg::optimize(c.last(), cpu, nullptr);
  std::vector<Opt> packed = s.applied_opts, plain;
  auto it = std::find(packed.begin(), packed.end(), Opt{OptOps::PACK, 1, 0});
  ASSERT_NE(it, packed.end()) << tg::opts_str(packed);
  for (auto& o : packed)
    if (o.op != OptOps::PACK) plain.push_back(o);
  auto prog = tg::get_program(c.last(), "k", cpu, &packed);
  // K x (2 vectors) floats on the stack: 96 x 32 with AVX-512's 16-float vectors
  int64_t lanes = std::min<int64_t>(16, cpu.target().vector_bytes / 4);
  EXPECT_NE(prog.src.find("alloca float, i64 " + std::to_string(96 * 2 * lanes)), std::string::npos) << prog.src;
  EXPECT_EQ(c.run(packed), c.run(plain));
}

// x @ W.T (a Linear layer's weight, stored out x in): W's rows run along the reduce, a long stride along the output's
// contiguous axis. The tile vectorizes that axis anyway and packs W's panel through gathers; the values match the
// kernel without actions (and a plain row-sum, whose input has no other output axis to be shared along, keeps its
// dot-product form: nothing packed)
TEST(Opt, HeuristicsPackATransposedWeight) {
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  Case c(randt({64, 96}, 26).matmul(randt({128, 96}, 27).transpose()));
  tg::Scheduler s = tg::optimize(c.last(), cpu, nullptr);
  bool pack = false;
  for (auto& o : s.applied_opts) pack |= o.op == OptOps::PACK;
  EXPECT_TRUE(pack) << tg::opts_str(s.applied_opts);
  int64_t lanes = std::min<int64_t>(16, cpu.target().vector_bytes / 4);
  EXPECT_NE(std::find(s.applied_opts.begin(), s.applied_opts.end(), Opt{OptOps::UPCAST, 1, lanes}), s.applied_opts.end())
      << "no vectors along the output's columns: " << tg::opts_str(s.applied_opts);
  EXPECT_EQ(c.run(s.applied_opts), c.run({}));
  Case rows(randt({128, 96}, 28).sum({1}));
  tg::Scheduler r = tg::optimize(rows.last(), cpu, nullptr);
  for (auto& o : r.applied_opts) EXPECT_NE(o.op, OptOps::PACK) << tg::opts_str(r.applied_opts);
  auto got = rows.run(r.applied_opts), want = rows.run({});  // summed in another order: within float32 rounding
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::abs(want[i]))) << i;
}

// A reshape of a reshape indexes memory as one reshape: a (rows, blocks, 36) view of a buffer, flattened, cut to each
// block's first 32 and seen as (rows, blocks, 32) (the LLM's Q4_K codes are laid out so) reads memory linearly. Mapped
// one reshape at a time the index kept a division and a remainder by 36 per load, which nothing simplified away
TEST(Opt, ReshapesOfReshapesIndexLinearly) {
  const int64_t rows = 16, nb = 4, n = rows * nb * 36;
  Tensor base = tg::Tensor::arange(0, double(n), 1, tg::dtypes::float32, "CPU").contiguous().realize().reshape({rows, nb, 36});
  Case c(base.reshape({n}).shrink({{0, rows * nb * 32}}).reshape({rows, nb, 32}).add(base.scalar_like(1)).contiguous());
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  auto prog = tg::get_program(c.last(), "k", cpu, nullptr);
  EXPECT_EQ(prog.src.find("sdiv"), std::string::npos) << prog.src;
  EXPECT_EQ(prog.src.find("srem"), std::string::npos) << prog.src;
  std::vector<float> got = c.run({});
  ASSERT_EQ(got.size(), size_t(rows * nb * 32));
  for (size_t i = 0; i < got.size(); i++) ASSERT_EQ(got[i], float(i + 1)) << "element " << i;
}

std::string refusal(const tg::UOpRef& ast, const tg::Renderer& ren, const std::vector<Opt>& opts) {
  tg::Scheduler s(ast, ren);
  try {
    for (auto& o : opts) s.apply_opt(o);
  } catch (const tg::OptError& e) {
    return e.what();
  } catch (const tg::Error& e) {
    return e.what();
  }
  return "";
}

// A transposed copy tiles both axes, the output's contiguous one and the input's: vector loads along the input's rows
// and vector stores along the output's, the lanes exchanged in registers, not an element loaded and stored at a time
TEST(Opt, HeuristicsTileATranspose) {
  Case c(randt({64, 96}, 23).transpose().contiguous());
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  tg::Scheduler s = tg::optimize(c.last(), cpu, nullptr);
  int64_t lanes = std::min<int64_t>(16, cpu.target().vector_bytes / 4);
  std::vector<Opt> upcasts;
  for (auto& o : s.applied_opts)
    if (o.op == OptOps::UPCAST) upcasts.push_back(o);
  ASSERT_EQ(upcasts.size(), 2u) << tg::opts_str(s.applied_opts);
  auto prog = tg::get_program(c.last(), "k", cpu, nullptr);
  std::string vec = "<" + std::to_string(lanes) + " x float>";
  EXPECT_NE(prog.src.find("load " + vec), std::string::npos) << prog.src;
  EXPECT_NE(prog.src.find("store " + vec), std::string::npos) << prog.src;
  EXPECT_EQ(c.run(s.applied_opts), c.run({}));
}

// A conv weight's 9 taps moved outermost (Winograd's weight transform reads it so): the taps, shorter than a vector,
// upcast whole against 16 output columns, so the copy is vectors (it was scalar)
TEST(Opt, HeuristicsTileATransposeOfShortRuns) {
  Case c(randt({32, 16, 3, 3}, 35).permute({2, 3, 0, 1}).reshape({9, 512}).contiguous());
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  if (cpu.target().vector_bytes < 64) GTEST_SKIP() << "the host's vectors are narrower than 16 floats";
  tg::Scheduler s = tg::optimize(c.last(), cpu, nullptr);
  std::vector<int64_t> ups;
  for (auto& o : s.applied_opts)
    if (o.op == OptOps::UPCAST) ups.push_back(o.arg);
  EXPECT_EQ(ups, (std::vector<int64_t>{16, 9})) << tg::opts_str(s.applied_opts);
  EXPECT_EQ(c.run(s.applied_opts), c.run({}));
}

// An elementwise kernel over images no vector width divides: a residual add of two (64, 14, 14) images merged whole
// into full vectors; a per-channel bias add (its load not linear across channels) merged over the image only, 4 lanes
// (both had no vector axis: scalar loops)
TEST(Opt, HeuristicsMergeShortImagesIntoVectors) {
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  if (cpu.target().vector_bytes < 64) GTEST_SKIP() << "the host's vectors are narrower than 16 floats";
  Case add(randt({64, 14, 14}, 31).add(randt({64, 14, 14}, 32)));
  tg::Scheduler s = tg::optimize(add.last(), cpu, nullptr);
  EXPECT_NE(std::find(s.applied_opts.begin(), s.applied_opts.end(), Opt{OptOps::UPCAST, 0, 16}), s.applied_opts.end())
      << tg::opts_str(s.applied_opts);
  EXPECT_EQ(s.full_shape().size(), 2u) << tg::opts_str(s.applied_opts);
  EXPECT_EQ(add.run(s.applied_opts), add.run({}));
  Case bias(randt({64, 14, 14}, 33).add(randt({64, 1, 1}, 34)));
  tg::Scheduler b = tg::optimize(bias.last(), cpu, nullptr);
  EXPECT_NE(std::find(b.applied_opts.begin(), b.applied_opts.end(), Opt{OptOps::UPCAST, 1, 4}), b.applied_opts.end())
      << tg::opts_str(b.applied_opts);
  EXPECT_EQ(bias.run(b.applied_opts), bias.run({}));
}

// Q4_0's decode product four blocks a step (nn/llm.cpp): x's int8 values times a block's nibbles, summed in int32 over
// 4 bytes and the block's two nibble halves, then scaled per block. The heuristics unroll the 4 bytes, the halves, the
// 4 groups of bytes and the 4 blocks: a step is four 16-byte runs 18 bytes apart, and 16 float lanes
TEST(Opt, HeuristicsUnrollANibblePairWithItsRun) {
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  if (cpu.target().vector_bytes < 64) GTEST_SKIP() << "the host's vectors are narrower than 16 floats";
  int64_t rows = 256, steps = 8;  // 147 KB of blocks: streamed, read row by row
  std::mt19937 g(7);
  std::vector<uint8_t> raw(size_t(rows * steps * 4 * 18));
  std::vector<int8_t> xv(size_t(steps * 2 * 4 * 16));
  for (auto& b : raw) b = uint8_t(g());
  for (auto& v : xv) v = int8_t(g());
  Tensor w = Tensor::from_data(raw.data(), raw.size(), tg::dtypes::uint8, {rows, steps * 4, 18}, "CPU");
  Tensor bytes = w.shrink({{0, rows}, {0, steps * 4}, {2, 18}}).reshape({rows, steps, 4, 4, 1, 4});
  Tensor hi = Tensor::arange(0, 2, 1, tg::dtypes::int32, "CPU").reshape({1, 1, 1, 1, 2, 1}).eq(Tensor::full({1}, 1, tg::dtypes::int32, "CPU"));
  Tensor codes = hi.where(bytes.rshift(4), bytes.bitwise_and(bytes.scalar_like(15))).cast(tg::dtypes::int32);
  // x stored (steps, half, block, group, byte), seen as (steps, block, group, half, byte)
  Tensor x = Tensor::from_data(xv.data(), xv.size(), tg::dtypes::int8, {1, steps, 2, 4, 4, 4}, "CPU").permute({0, 1, 3, 4, 2, 5});
  Case c(codes.mul(x.cast(tg::dtypes::int32)).sum({-1, -2}).cast(tg::dtypes::float32).mul(randt({rows, steps, 4, 1}, 40)).sum({-1, -2, -3}));
  tg::Scheduler s = tg::optimize(c.last(), cpu, nullptr);
  std::vector<int64_t> unrolls;
  for (auto& o : s.applied_opts)
    if (o.op == OptOps::UNROLL) unrolls.push_back(o.arg);
  EXPECT_EQ(unrolls, (std::vector<int64_t>{4, 2, 4, 4})) << tg::opts_str(s.applied_opts);
  std::vector<float> base = c.run({}), got = c.run(s.applied_opts);
  // float sums of 32 terms of up to 32 * 15 * 128 each, reassociated: a few ulps of that (a wrong lane is off by thousands)
  for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], base[i], 1e-6 * double(steps * 4 * 32 * 15 * 128)) << i;
}

// A matmul whose rows 8 doesn't divide (36, 12, 18): the register tile takes 4 or 2 of them, never 6 or 3, whose
// 192- or 96-lane vectors LLVM assembled lane by lane through the stack (17 GFLOP/s against 290 with 4 rows)
TEST(Opt, HeuristicsRowTilesArePowersOfTwo) {
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  for (int64_t rows : {36, 12, 18, 6}) {
    Case c(randt({rows, 36}, 24).matmul(randt({36, 256}, 25)));
    tg::Scheduler s = tg::optimize(c.last(), cpu, nullptr);
    bool row_tile = false;
    for (auto& o : s.applied_opts)
      if (o.op == OptOps::UPCAST && o.axis == 0) {
        row_tile = true;
        EXPECT_TRUE(o.arg == 2 || o.arg == 4 || o.arg == 8) << rows << " rows: " << tg::opts_str(s.applied_opts);
      }
    EXPECT_TRUE(row_tile) << rows << " rows: " << tg::opts_str(s.applied_opts);
    EXPECT_EQ(c.run(s.applied_opts), c.run({}));
  }
}

TEST(Opt, IllegalActionsAreRefusedWithAReason) {
  Case mm(randt({32, 24}, 1).matmul(randt({24, 64}, 2)));  // axes: g0=32, g1=64, R0=24
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  struct Bad {
    std::vector<Opt> opts;
    const char* why;
  };
  const std::vector<Bad> bad = {
      {{{OptOps::UPCAST, 2, 4}}, "upcast is for GLOBAL/LOCAL"},
      {{{OptOps::UPCAST, 1, 32}}, "don't upcast more than 16"},
      {{{OptOps::UNROLL, 0, 64}}, "don't unroll more than 32"},
      {{{OptOps::UPCAST, 0, 5}}, "5 can't divide 32"},
      {{{OptOps::UPCAST, 7, 2}}, "invalid axis 7"},
      {{{OptOps::UNROLL, 1, 2}}, "invalid axis 1"},
      {{{OptOps::THREAD, 0, 2}, {OptOps::THREAD, 1, 2}}, "already threaded"},
      {{{OptOps::THREAD, 2, 2}}, "thread is for globals"},
      {{{OptOps::THREAD, 0, 1024}}, "too many threads"},
      {{{OptOps::LOCAL, 0, 4}}, "needs local memory"},
      {{{OptOps::GROUP, 0, 4}}, "needs local memory"},
      {{{OptOps::GROUPTOP, 0, 4}}, "needs local memory"},
      {{{OptOps::TC, 0, 0, {-1, 0, 1}}}, "has no tensor cores"},
      {{{OptOps::SWAP, 0, 2}}, "swap only for two globals or two reduces"},
      {{{OptOps::PADTO, 0, 256}}, "more than quadruple"},
      {{{OptOps::MERGE, 1, 0}}, "merge only for two globals"},
      {{{OptOps::MERGE, 2, 0}}, "merge needs an axis after axis 2"},
      {{{OptOps::UPCAST, 0, -3}}, "must be positive"},
      {{{OptOps::PACK, 2, 0}}, "invalid input 2 for PACK (2 loaded)"},
      {{{OptOps::PACK, 0, 4}}, "a CPU packs the whole panel"},  // steps are a GPU's
      {{{OptOps::PACK, 1, 0}}, "a packed copy would not be reused"},  // B's columns are the innermost output loop
      {{{OptOps::SWAP, 0, 1}, {OptOps::PACK, 1, 0}, {OptOps::PACK, 1, 0}}, "input 1 is already packed"},
  };
  for (auto& b : bad) {
    std::string why = refusal(mm.last(), cpu, b.opts);
    EXPECT_NE(why.find(b.why), std::string::npos) << tg::opts_str(b.opts) << ": got '" << why << "'";
  }
  // panels go on the stack: 12288 x 16 doubles of B is 1.5 MB, over the 1 MB limit for all of a kernel's packs together
  // (a longer reduce would be split in two kernels)
  Case deep(randt({4, 12288}, 3).cast(tg::dtypes::float64).contiguous().matmul(randt({12288, 32}, 4).cast(tg::dtypes::float64).contiguous()));
  std::string why = refusal(deep.last(), cpu, {{OptOps::UPCAST, 1, 16}, {OptOps::SWAP, 0, 1}, {OptOps::PACK, 1, 0}});
  EXPECT_NE(why.find("panels of 1572864 bytes exceed the 1048576"), std::string::npos) << why;
}

// a target with local memory (a GPU's facts): the GPU actions rewrite the AST's ranges, though no CPU can run them
class LocalTarget : public tg::Renderer {
 public:
  LocalTarget() {
    t_.device = "TESTGPU", t_.has_local = t_.has_shared = true, t_.shared_max = 49152, t_.local_max = {1024, 1024, 64};
    t_.global_max = {1 << 30, 65535, 65535};
  }
  const tg::Target& target() const override { return t_; }
  std::vector<tg::TensorCore>& tensor_cores() { return t_.tensor_cores; }
  std::string render(const tg::LinearProgram&) const override { return ""; }
  bool holds_vector(tg::Ops, tg::DType) const override { return true; }

 private:
  tg::Target t_;
};

TEST(Opt, GpuActionsRewriteTheAst) {
  Case mm(randt({32, 24}, 1).matmul(randt({24, 64}, 2)));
  LocalTarget gpu;
  tg::Scheduler s(mm.last(), gpu);
  auto elems = [](const tg::Scheduler& k) {
    int64_t n = 1;
    for (auto d : k.full_shape()) n *= d;
    return n;
  };
  int64_t before = elems(s);
  s.apply_opt({OptOps::LOCAL, 1, 16});
  s.apply_opt({OptOps::GROUPTOP, 0, 8});
  s.apply_opt({OptOps::UPCAST, 0, 4});
  auto types = s.axis_types();
  EXPECT_EQ(std::count(types.begin(), types.end(), tg::AxisType::LOCAL), 1);
  EXPECT_EQ(std::count(types.begin(), types.end(), tg::AxisType::GROUP_REDUCE), 1);
  EXPECT_EQ(std::count(types.begin(), types.end(), tg::AxisType::UPCAST), 1);
  EXPECT_EQ(elems(s), before) << "splitting axes keeps the iteration space";
  EXPECT_EQ(s.full_shape(), (std::vector<int64_t>{8, 4, 16, 8, 4, 3})) << tg::opts_str(s.applied_opts);
  EXPECT_NE(refusal(s.ast, gpu, {{OptOps::NOLOCALS}}).find("no locals can't have locals"), std::string::npos);
  EXPECT_NE(refusal(s.ast, gpu, {{OptOps::GROUP, 0, 1 << 20}}).find("exceeds maximum shared memory"), std::string::npos);
  // PACK on a GPU stages in local memory: refused where no work-item or lane would read a staged element twice and where
  // its steps don't divide the reduce
  EXPECT_NE(refusal(mm.last(), gpu, {{OptOps::PACK, 0, 0}}).find("staging it would not be reused"), std::string::npos);
  EXPECT_NE(refusal(mm.last(), gpu, {{OptOps::LOCAL, 1, 16}, {OptOps::PACK, 0, 5}}).find("steps don't divide"), std::string::npos);
  EXPECT_EQ(refusal(mm.last(), gpu, {{OptOps::LOCAL, 1, 16}, {OptOps::UPCAST, 0, 4}, {OptOps::PACK, 0, 4}, {OptOps::PACK, 1, 4}}), "")
      << "both inputs, 4 steps a stage";
  EXPECT_NE(refusal(mm.last(), gpu, {{OptOps::LOCAL, 1, 16}, {OptOps::PACK, 1, 4}}).find("input 1 is read by one work-item"), std::string::npos);
  tg::Scheduler s2(mm.last(), gpu);
  s2.apply_opt({OptOps::NOLOCALS});
  EXPECT_NE(refusal(s2.ast, gpu, {{OptOps::NOLOCALS}, {OptOps::LOCAL, 0, 4}}).find("can't use locals"), std::string::npos);
}

// TC on a target with CUDA's tensor cores: the kernel's N, M and K lose a tensor core's worth of pieces (a warp of 32
// lanes, 2 x 2 elements per lane, K's 16 as four pieces of 2) and the sum becomes WMMA
TEST(Opt, TensorCoreActionShapesTheKernel) {
  auto half = [](tg::Shape s, uint64_t seed) { return randt(std::move(s), seed).cast(tg::dtypes::float16); };
  Case mm(half({32, 64}, 1).matmul(half({64, 16}, 2)));
  LocalTarget gpu;
  gpu.tensor_cores() = tg::cuda_tensor_cores(8, 0, false);
  tg::Scheduler s(mm.last(), gpu);
  s.apply_opt({OptOps::TC, 0, 0, {-1, 0, 1}});
  auto count = [&](tg::AxisType t) {
    auto types = s.axis_types();
    return std::count(types.begin(), types.end(), t);
  };
  EXPECT_EQ(count(tg::AxisType::WARP), 1);
  EXPECT_EQ(count(tg::AxisType::UPCAST), 2);
  // K's pieces that the swizzle turns into lane bits are read through the warp: one stays an unrolled element piece
  EXPECT_EQ(count(tg::AxisType::UNROLL), 1);
  EXPECT_EQ(count(tg::AxisType::LOCAL), 0) << "the lane pieces are bits of the warp";
  ASSERT_EQ(s.tc_axes.size(), 3u);
  EXPECT_EQ(s.tc_axes[0]->src[0]->vmax(), 16 / 8);  // N
  EXPECT_EQ(s.tc_axes[1]->src[0]->vmax(), 32 / 16);  // M
  EXPECT_EQ(s.tc_axes[2]->src[0]->vmax(), 64 / 16);  // K
  auto topo = s.ast->toposort();
  EXPECT_EQ(std::count_if(topo.begin(), topo.end(), [](auto& u) { return u->op == tg::Ops::WMMA; }), 1);
  // use_tensor_cores=2: the shape alone, the sum stays a sum
  tg::Scheduler shaped(mm.last(), gpu);
  shaped.apply_opt({OptOps::TC, 0, 0, {-1, 0, 2}});
  topo = shaped.ast->toposort();
  EXPECT_EQ(std::count_if(topo.begin(), topo.end(), [](auto& u) { return u->op == tg::Ops::WMMA; }), 0);
  EXPECT_EQ(shaped.full_shape(), (std::vector<int64_t>{2, 2, 32, 2, 2, 4, 2, 2, 2, 2})) << "K's four pieces of 2 unrolled";

  Case f32(randt({32, 64}, 1).matmul(randt({64, 16}, 2)));
  Case odd(half({20, 64}, 1).matmul(half({64, 16}, 2)));
  Case sum(half({32, 64}, 1).sum({1}));
  Case mx(half({32, 64}, 1).max({1}));
  const tg::Opt tc{OptOps::TC, 0, 0, {-1, 0, 1}};
  const std::vector<std::tuple<const Case*, std::vector<Opt>, const char*>> bad = {
      {&mm, {{OptOps::UPCAST, 0, 2}, tc}, "tensor core opts must be first"},
      {&mm, {{OptOps::TC, 1, 0, {-1, 0, 1}}}, "no tensor core of TESTGPU takes this kernel"},  // one axis choice only
      {&mm, {{OptOps::TC, 0, 0, {5, 0, 1}}}, "valid tc_select"},  // five tensor cores without tf32
      {&mm, {{OptOps::TC, 0, 0, {-1, 3, 1}}}, "valid tc_opt"},
      {&mm, {{OptOps::TC, 0, 0, {-1, 0, 0}}}, "use_tensor_cores value is not valid"},
      {&f32, {tc}, "no tensor core of TESTGPU takes this kernel (dtypes float32 x float32 -> float32"},
      {&odd, {tc}, "no tensor core of TESTGPU takes this kernel"},  // M=20 needs padding: TC_OPT 2
      {&sum, {tc}, "tensor cores need a sum of products"},
      {&mx, {tc}, "tensor cores need a sum"},
  };
  for (auto& [c, opts, why] : bad) {
    std::string got = refusal(c->last(), gpu, opts);
    EXPECT_NE(got.find(why), std::string::npos) << tg::opts_str(opts) << ": got '" << got << "'";
  }
  EXPECT_EQ(refusal(odd.last(), gpu, {{OptOps::TC, 0, 0, {-1, 2, 1}}}), "") << "TC_OPT 2 pads M to 32";
}

// Every stage's graph is well-formed under SPEC=1, vector lanes (the expander's UNROLLs) and tensor cores included
TEST(Opt, LoweredKernelsPassTheSpec) {
  Case mm(randt({64, 48}, 1).matmul(randt({48, 32}, 2)));
  Case hmm(randt({64, 48}, 1).cast(tg::dtypes::float16).matmul(randt({48, 32}, 2).cast(tg::dtypes::float16)));
  tg::Context ctx({{"SPEC", 1}});
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  EXPECT_NO_THROW(tg::get_program(mm.last(), "k", cpu, nullptr));
  std::vector<Opt> unrolled{{OptOps::UPCAST, 0, 4}, {OptOps::UNROLL, 0, 8}, {OptOps::UPCAST, 1, 16}};
  EXPECT_NO_THROW(tg::get_program(mm.last(), "k", cpu, &unrolled));
  tg::CStyleRenderer cuda(tg::cuda_target("CUDA", 8, 0), tg::Dialect::CUDA);
  auto p = tg::get_program(hmm.last(), "k", cuda, nullptr);
  ASSERT_FALSE(p.opts.empty());
  EXPECT_EQ(p.opts[0].op, OptOps::TC);
}

TEST(Opt, ListsRoundTripThroughText) {
  std::vector<Opt> opts = {{OptOps::UPCAST, 0, 4}, {OptOps::UNROLL, 1, 0}, {OptOps::NOLOCALS}, {OptOps::TC, 0, 0, {-1, 2, 1}},
                           {OptOps::SWAP, 0, 2},   {OptOps::PADTO, 1, 32}, {OptOps::THREAD, 0, 16}, {OptOps::GROUPTOP, 0, 16},
                           {OptOps::MERGE, 1, 0},  {OptOps::PACK, 1, 0}};
  std::string s = tg::opts_str(opts);
  EXPECT_EQ(tg::parse_opts(s), opts) << s;
  EXPECT_EQ(opts[0].str(), "Opt(op=OptOps.UPCAST, axis=0, arg=4)");
  EXPECT_EQ(tg::parse_opts("[]").size(), 0u);
  EXPECT_EQ(tg::parse_opts(" [ Opt(op=OptOps.LOCAL,axis=1,arg=8) ] ")[0], (Opt{OptOps::LOCAL, 1, 8}));
  for (const char* bad : {"", "[", "[Opt(op=OptOps.FOO, axis=0, arg=1)]", "[Opt(op=OptOps.UPCAST, axis=x, arg=1)]",
                          "[Opt(op=OptOps.UPCAST, axis=0, arg=99999999999999999999)]", "[] trailing"}) {
    try {
      tg::parse_opts(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const tg::Error& e) {
      EXPECT_EQ(e.code, TG_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("parse_opts"), std::string::npos);
    }
  }
}

// The same Opt list gives the same program: a kernel plus its opts is a reproducible description.
TEST(Opt, OptsReproduceTheProgram) {
  Case mm(randt({32, 24}, 1).matmul(randt({24, 64}, 2)));
  std::vector<Opt> opts = {{OptOps::UPCAST, 1, 16}, {OptOps::UPCAST, 0, 4}, {OptOps::THREAD, 0, 2}};
  const tg::Renderer& cpu = tg::get_device("CPU").renderer();
  auto a = tg::get_program(mm.last(), "k", cpu, &opts), b = tg::get_program(mm.last(), "k", cpu, &opts);
  EXPECT_EQ(a.src, b.src);
  EXPECT_EQ(a.opts, opts);
  EXPECT_EQ(a.threads, 2);
  auto parsed = tg::parse_opts(tg::opts_str(opts));
  EXPECT_EQ(tg::get_program(mm.last(), "k", cpu, &parsed).src, a.src);
}

}  // namespace
