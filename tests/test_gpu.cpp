// The GPU back ends without a GPU: the CUDA C of a set of kernels (every dtype, 16-bit floats, transcendentals,
// reductions, work-groups) compiles to PTX with NVRTC from the toolkit, and the launch grid gpudims derives covers
// every output exactly once. OpenCL runs for real on PoCL in the Python suites (DEV=CL).
#include <gtest/gtest.h>

#include <regex>
#include <tuple>

#include "codegen/codegen.h"
#include "kernel_case.h"
#include "renderer/cstyle.h"
#include "runtime/cuda.h"

namespace tg {
namespace {

Tensor input(Shape s, DType dt, uint64_t seed) { return test::randt(std::move(s), seed).cast(dt); }

// the kernels of graphs that cover the renderer's rules
std::vector<std::pair<UOpRef, std::string>> kernels() {
  std::vector<Tensor> outs;
  for (DType dt : {dtypes::float32, dtypes::float16, dtypes::bfloat16, dtypes::float64, dtypes::int8, dtypes::uint8, dtypes::int32, dtypes::int64,
                   dtypes::uint64, dtypes::bool_}) {
    Tensor a = input({33, 17}, dt, 1), b = input({33, 17}, dt, 2);
    outs.push_back(a.add(b).mul(a).maximum(b));
    outs.push_back(a.cast(dtypes::float32).add(b.cast(dtypes::float32)).cast(dt));
    if (!dtypes::is_bool(dt)) outs.push_back(a.sum({1}));
    if (dtypes::is_int(dt) && !dtypes::is_bool(dt)) outs.push_back(a.idiv(b)), outs.push_back(a.mod(b)), outs.push_back(a.bitwise_xor(b));
  }
  Tensor f = input({64, 48}, dtypes::float32, 3), g = input({48, 40}, dtypes::float32, 4);
  outs.push_back(f.matmul(g));
  outs.push_back(f.exp().log().sin().sqrt());
  outs.push_back(f.softmax(1));
  outs.push_back(f.bitcast(dtypes::int32).add(Tensor::full({}, 1, dtypes::int32, "CPU")));
  outs.push_back(f.cast(dtypes::float16).matmul(g.cast(dtypes::float16)));
  outs.push_back(f.reshape({2, 4, 8, 48}).permute({3, 1, 0, 2}).contiguous());  // four output dims fold into three
  std::vector<std::pair<UOpRef, std::string>> out;
  for (auto& t : outs) {
    test::Case c(t);
    for (auto& k : c.sched->kernels) out.emplace_back(k->ast, k->name);
  }
  return out;
}

// the CL device's target with CUDA's tensor cores, tf32's too (what EMULATE=CUDA with ALLOW_TF32=1 gives it)
Target emulated_tc_target() {
  Target t = get_device("CL").renderer().target();
  t.tensor_cores = cuda_tensor_cores(8, 0, true);
  return t;
}

// `out`, one kernel on CL, compiled by `ren` with `opts` (null: the heuristics) and run: the program and the output's
// values as float32. What fails to compile or to run is thrown.
std::pair<std::shared_ptr<CompiledRunner>, std::vector<float>> run_on_cl(const Tensor& out, const Renderer& ren,
                                                                          const std::vector<Opt>* opts) {
  Normalized n = normalize({out.cast(dtypes::float32).uop()});
  auto sched = create_schedule(n.sink, n.specs);
  TG_CHECK(sched->kernels.size() == 1, TG_ERROR_INTERNAL, strformat("%zu kernels, not one", sched->kernels.size()));
  auto& k = *sched->kernels[0];
  auto prg = compile_spec(get_program(k.ast, k.name, ren, opts), get_device("CL"));
  std::vector<std::shared_ptr<Buffer>> bufs;
  for (size_t i = 0; i < sched->slots.size(); i++)
    bufs.push_back(i < n.inputs.size() ? buffer_of(n.inputs[i].get())
                                       : std::make_shared<Buffer>("CL", sched->slots[i].first, sched->slots[i].second));
  std::vector<void*> ptrs;
  for (int sl : k.slots) ptrs.push_back(bufs[size_t(sl)]->ptr());
  run_kernel(*prg, ptrs.data());
  std::vector<float> got(size_t(out.numel()));
  bufs[size_t(k.slots[0])]->copyout(got.data(), got.size() * sizeof(float));
  return {prg, got};
}

TEST(Gpu, CudaSourceCompilesToPtxWithNvrtc) {
  if (nvrtc_version().empty()) GTEST_SKIP() << "no NVRTC on this machine (the CUDA toolkit is not installed)";
  CStyleRenderer ren(cuda_target("CUDA", 8, 0), Dialect::CUDA);
  auto ks = kernels();
  ASSERT_GT(ks.size(), 40u);
  for (auto& [ast, name] : ks) {
    for (bool opt : {false, true}) {  // the heuristics (locals, upcasts) and none
      static const std::vector<Opt> none;
      ProgramSpec p = get_program(ast, name, ren, opt ? nullptr : &none);
      std::string ptx;
      ASSERT_NO_THROW(ptx = nvrtc_compile(p.name, p.src, "compute_80")) << p.src;
      EXPECT_NE(ptx.find(".visible .entry " + p.name + "("), std::string::npos) << ptx.substr(0, 400);
      // the registers are capped for the work-group it launches with (__launch_bounds__: PTX's .maxntid)
      int64_t items = 1;
      for (auto& d : p.local_size)
        if (d) items *= d->vmax();
      EXPECT_NE(ptx.find(strformat(".maxntid %lld, 1, 1", (long long)items)), std::string::npos) << p.src;
      UOps topo = ast->toposort();
      EXPECT_EQ(p.nbufs, size_t(std::count_if(topo.begin(), topo.end(), [](auto& u) { return u->op == Ops::DEFINE_GLOBAL; })));
    }
  }
}

TEST(Gpu, NvrtcReportsCompileErrorsWithTheLog) {
  if (nvrtc_version().empty()) GTEST_SKIP() << "no NVRTC on this machine (the CUDA toolkit is not installed)";
  try {
    nvrtc_compile("broken", "extern \"C\" __global__ void broken(float* x) { x[0] = undeclared; }", "compute_80");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code, TG_ERROR_COMPILE);
    EXPECT_NE(std::string(e.what()).find("undeclared"), std::string::npos) << e.what();
  }
}

// Every output element is written by exactly one (work-group, work-item), or by every work-item of a grouped reduce's
// work-group: the grid's product is the output's size (times the group) and the ids fold back into the original ranges.
TEST(Gpu, LaunchGridCoversTheOutput) {
  Target t = cuda_target("CUDA", 8, 0);
  t.global_max = {1 << 20, 3, 3};  // small limits force folding
  CStyleRenderer ren(t, Dialect::CUDA);
  for (auto& [ast, name] : kernels()) {
    ProgramSpec p = get_program(ast, name, ren);
    int64_t grid = 1, out = 1;
    for (auto& g : p.global_size)
      if (g) grid *= g->vmax();
    for (auto& l : p.local_size)
      if (l) grid *= l->vmax();
    for (auto& u : ast->toposort())
      if (u->op == Ops::STORE) out = u->src[0]->src[0]->dtype.size;  // the output buffer's elements
    int64_t upcast = 1, group = 1;  // a grouped reduce's work-group shares each output
    for (auto& o : p.opts) {
      if (o.op == OptOps::UPCAST) upcast *= o.arg;
      if (o.op == OptOps::TC) upcast *= t.tensor_cores[0].elements[2];  // each lane of a warp holds that many of D
      if (o.op == OptOps::GROUP || o.op == OptOps::GROUPTOP) group *= o.arg;
    }
    EXPECT_EQ(grid * upcast, out * group) << p.name << " " << opts_str(p.opts);
    for (size_t d = 0; d < 3; d++)
      if (p.global_size[d]) EXPECT_LE(p.global_size[d]->vmax(), t.global_max[d]) << p.name;
  }
}

TEST(Gpu, AbsentDevicesAreClearErrors) {
  for (const char* name : {"CUDA:9", "CL:9"}) {
    try {
      get_device(name);
      FAIL() << name << " opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.code, TG_ERROR_DEVICE);
      EXPECT_TRUE(std::regex_search(e.what(), std::regex("doesn't exist|is not available"))) << e.what();
    }
  }
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {
// GROUP/GROUPTOP on a GPU target: partial sums through local memory; the kernel's result equals the plain one. Runs on
// the first OpenCL device (PoCL's CPU device in CI).
TEST(Gpu, GroupedReducesMatchThePlainKernel) {
  try {
    get_device("CL");
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{{{64, 512}, 1}, {{512, 64}, 0}, {{3, 1024}, 1}, {{4096}, 0}}) {
    Tensor x = test::randt(shape, 11);
    Tensor want = x.sum({axis});
    std::vector<float> w(size_t(want.numel()));
    want.to_data(w.data(), w.size() * sizeof(float));
    std::vector<std::vector<Opt>> lists;
    for (OptOps op : {OptOps::GROUP, OptOps::GROUPTOP})
      for (int64_t sz : {int64_t(4), int64_t(16), int64_t(64)}) lists.push_back({Opt{op, 0, sz}});
    if (shape.size() == 2 && shape[0] % 4 == 0)  // with output lanes and an unrolled share
      lists.push_back({Opt{OptOps::GROUPTOP, 0, 16}, Opt{OptOps::UPCAST, 0, 4}, Opt{OptOps::UNROLL, 0, 4}}),
          lists.push_back({Opt{OptOps::LOCAL, 0, 4}, Opt{OptOps::GROUP, 0, 8}, Opt{OptOps::UPCAST, 0, 2}});
    for (auto& opts : lists) {
        std::shared_ptr<CompiledRunner> prg;
        std::vector<float> got;
        try {
          std::tie(prg, got) = run_on_cl(x.to("CL").sum({axis}), get_device("CL").renderer(), &opts);
        } catch (const Error& e) {
          ADD_FAILURE() << opts_str(opts) << ": " << e.what();
          continue;
        }
        EXPECT_NE(prg->src.find("barrier(CLK_LOCAL_MEM_FENCE)"), std::string::npos) << prg->src;
        for (size_t i = 0; i < w.size(); i++) EXPECT_NEAR(got[i], w[i], 1e-3f * (1 + std::fabs(w[i]))) << opts_str(opts) << " at " << i;
      }
  }
}
}  // namespace
}  // namespace tg

namespace tg {
namespace {
// Tensor cores without an NVIDIA GPU: the CL device with CUDA's tensor cores, whose WMMA the OpenCL renderer computes
// across each warp's work-items in mma.sync's fragment layout (EMULATE=CUDA). A wrong swizzle puts products in the
// wrong places, so every element of the result is checked against a float64 matmul of the same 16-bit inputs.
struct TcCase {
  Shape a, b;
  DType dt;
  bool half_acc = false;  // summed in float16 (the float16 -> float16 tensor core), 2-D only
  int64_t select = -1;    // the tensor core (cuda_tensor_cores' order; -1: the first that fits)
  int64_t k = 16;         // its K
};
std::vector<float> host_values(const Tensor& t) {
  Tensor f = t.cast(dtypes::float32).contiguous();
  std::vector<float> v(size_t(f.numel()));
  f.to_data(v.data(), v.size() * sizeof(float));
  return v;
}

TEST(Gpu, TensorCoresMatchAFloat64Matmul) {
  try {
    get_device("CL");
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  CStyleRenderer ren(emulated_tc_target(), Dialect::OpenCL);
  std::vector<TcCase> cases{{{32, 64}, {64, 16}, dtypes::float16},  {{48, 32}, {32, 24}, dtypes::bfloat16}, {{2, 16, 48}, {2, 48, 8}, dtypes::float16},
                            {{20, 40}, {40, 12}, dtypes::float16},  {{64, 128}, {128, 32}, dtypes::float16},
                            {{32, 64}, {64, 16}, dtypes::float16, true},
                            {{32, 64}, {64, 16}, dtypes::float16, false, 3, 8},  // m16n8k8 (sm_75's)
                            {{48, 40}, {40, 24}, dtypes::float16, true, 4, 8},
                            {{32, 64}, {64, 16}, dtypes::float32, false, -1, 8},  // tf32 (ALLOW_TF32)
                            {{2, 16, 24}, {2, 24, 8}, dtypes::float32, false, -1, 8}};
  using O = std::vector<Opt>;
  for (auto& c : cases) {
    auto tc = [&](int64_t level) { return Opt{OptOps::TC, 0, 0, {c.select, level, 1}}; };
    Tensor x = test::randt(c.a, 21).cast(c.dt), w = test::randt(c.b, 22).cast(c.dt);
    std::vector<float> xv = host_values(x), wv = host_values(w);
    int64_t K = c.a.back(), M = c.a[c.a.size() - 2], N = c.b.back(), B = c.a.size() == 3 ? c.a[0] : 1;
    std::vector<double> want(size_t(B * M * N));
    for (int64_t bi = 0; bi < B; bi++)
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
          double s = 0;
          for (int64_t k = 0; k < K; k++) s += double(xv[size_t((bi * M + i) * K + k)]) * double(wv[size_t((bi * K + k) * N + j)]);
          want[size_t((bi * M + i) * N + j)] = s;
        }
    bool padded = M % 16 || N % 8 || K % c.k;
    std::vector<std::pair<std::string, O>> lists{{"TC", O{tc(padded ? 2 : 0)}}, {"heuristics", O{}}};
    lists.push_back({"TC shape only", O{Opt{OptOps::TC, 0, 0, {c.select, padded ? 2 : 0, 2}}}});  // the warp and pieces, the sum kept
    if (M % 64 == 0 && N % 32 == 0)  // the two output axes are 0 and 1 (then the warp)
      lists.push_back({"TC+upcasts+local", O{tc(0), Opt{OptOps::UPCAST, 0, 2}, Opt{OptOps::UPCAST, 1, 2}, Opt{OptOps::LOCAL, 1, 2}}});
    for (auto& [what, opts] : lists) {
      // the heuristics don't pad for tensor cores (TC_OPT=0) and take the first that fits
      if ((padded || c.select >= 0) && what == "heuristics") continue;
      Tensor xc = x.to("CL"), wc = w.to("CL");
      Tensor prod = xc.matmul(wc);
      if (c.half_acc) {  // sum(-1) accumulates 16-bit floats in float32: this REDUCE_AXIS keeps float16
        Tensor p3 = xc.reshape({M, 1, K}).mul(wc.transpose(0, 1).reshape({1, N, K}));
        prod = Tensor(UOp::make(Ops::REDUCE_AXIS, p3.dtype(), {p3.uop()}, std::vector<int64_t>{int64_t(Ops::ADD), 2}), "CL").reshape({M, N});
      }
      std::shared_ptr<CompiledRunner> prg;
      std::vector<float> got;
      try {
        std::tie(prg, got) = run_on_cl(prod, ren, what == "heuristics" ? nullptr : &opts);
      } catch (const Error& e) {
        ADD_FAILURE() << shape_str(c.a) << " " << what << ": " << e.what();
        continue;
      }
      if (what != "TC shape only")
        EXPECT_NE(prg->src.find("tg_wmma_8_16_" + std::to_string(c.k) + "_" + std::string(c.dt.name()) + (c.half_acc ? "_float16(" : "_float32(")),
                  std::string::npos)
            << what << "\n"
            << prg->src;
      // Tensor cores multiply exactly and add in float32: the result is off by its final rounding to the 16-bit dtype.
      // A float16 sum is also rounded after each WMMA (K/16 roundings of partial sums no larger than the sum of
      // |products|). The plain sum ("TC shape only") rounds each product to the dtype, and with a float16 sum each add.
      double ulp = c.dt == dtypes::float16 ? 1.0 / 1024 : c.dt == dtypes::float32 ? 1.0 / 1e6 : 1.0 / 128;  // (the emulation doesn't round to tf32)
      bool plain = what == "TC shape only";
      for (size_t i = 0; i < want.size(); i++) {
        int64_t bi = int64_t(i) / (M * N), r = int64_t(i) / N % M, col = int64_t(i) % N;
        double sabs = 0;
        for (int64_t k = 0; k < K; k++) sabs += std::fabs(double(xv[size_t((bi * M + r) * K + k)]) * double(wv[size_t((bi * K + k) * N + col)]));
        double mag = std::fabs(want[i]) + (c.half_acc ? sabs * double(plain ? K + 1 : K / c.k + 1) : plain ? sabs : 0);
        ASSERT_NEAR(got[i], want[i], ulp * mag + 1e-4) << shape_str(c.a) << " " << what << " at " << i << "\n" << prg->src;
      }
    }
  }
}

// PACK on a GPU: the work-group stages each input's panel in local memory, all work-items copying, once per step of
// the reduce (split by PACK's arg), between barriers. Checked on PoCL against a float64 matmul for work-groups that
// divide the panels and ones that don't, one input staged or both, steps of 1, 4 and 16, and with tensor cores.
TEST(Gpu, StagedMatmulsMatchAFloat64Matmul) {
  try {
    get_device("CL");
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  CStyleRenderer ren(emulated_tc_target(), Dialect::OpenCL);
  using O = std::vector<Opt>;
  auto L = [](int64_t ax, int64_t n) { return Opt{OptOps::LOCAL, ax, n}; };
  auto U = [](int64_t ax, int64_t n) { return Opt{OptOps::UPCAST, ax, n}; };
  auto P = [](int64_t in, int64_t steps) { return Opt{OptOps::PACK, in, steps}; };
  struct Case {
    int64_t M, K, N;
    DType dt;
    O opts;
  };
  std::vector<Case> cases{
      {64, 96, 80, dtypes::float32, {L(1, 16), L(0, 8), U(1, 5), U(0, 4), P(0, 16), P(1, 16)}},  // panels of 8x4x16 and 16x16x5
      {64, 96, 80, dtypes::float32, {L(1, 16), L(0, 4), U(1, 5), U(0, 2), P(0, 4), P(1, 4)}},     // 64 work-items, panels of 32 and 320
      {64, 96, 80, dtypes::float32, {L(1, 8), U(0, 4), P(1, 0)}},                                 // one input, one k per stage
      {48, 40, 24, dtypes::float32, {L(0, 3), U(1, 4), P(0, 8), P(1, 8)}},                       // 3 work-items: rounds that don't divide
      {64, 128, 32, dtypes::float16, {Opt{OptOps::TC, 0, 0, {-1, 0, 1}}, U(0, 2), U(1, 2), L(1, 2), P(0, 2), P(1, 2)}},
      {64, 128, 32, dtypes::float16, {Opt{OptOps::TC, 0, 0, {-1, 0, 1}}, U(0, 2), U(1, 2), P(0, 0), P(1, 4)}},
  };
  for (auto& c : cases) {
    Tensor x = test::randt({c.M, c.K}, 31).cast(c.dt), w = test::randt({c.K, c.N}, 32).cast(c.dt);
    std::vector<float> xv = host_values(x), wv = host_values(w);
    std::shared_ptr<CompiledRunner> prg;
    std::vector<float> got;
    try {
      std::tie(prg, got) = run_on_cl(x.to("CL").matmul(w.to("CL")), ren, &c.opts);
    } catch (const Error& e) {
      ADD_FAILURE() << opts_str(c.opts) << ": " << e.what();
      continue;
    }
    EXPECT_NE(prg->src.find("__local "), std::string::npos) << prg->src;
    for (int64_t i = 0; i < c.M; i++)
      for (int64_t j = 0; j < c.N; j++) {
        double s = 0, sabs = 0;
        for (int64_t q = 0; q < c.K; q++) {
          double p = double(xv[size_t(i * c.K + q)]) * double(wv[size_t(q * c.N + j)]);
          s += p, sabs += std::fabs(p);
        }
        // float32 sums in another order; a float16 product is rounded to float16 at the end (half an ulp, 2^-11)
        double tol = 1e-5 * sabs + 1e-5 + (c.dt == dtypes::float16 ? std::fabs(s) / 2048 : 0);
        ASSERT_NEAR(got[size_t(i * c.N + j)], s, tol) << opts_str(c.opts) << " at " << i << "," << j << "\n" << prg->src;
      }
  }
}

// The CUDA source of tensor core kernels compiles to PTX with mma.sync (the GPU itself is tested where one is present).
TEST(Gpu, TensorCoreKernelsCompileToMmaSync) {
  if (nvrtc_version().empty()) GTEST_SKIP() << "no NVRTC on this machine (the CUDA toolkit is not installed)";
  struct C {
    DType dt;
    bool acc16;
    int sm;
    const char* mma;
  };
  for (auto c : {C{dtypes::float16, false, 80, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"},
                 C{dtypes::bfloat16, false, 80, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"},
                 C{dtypes::float16, true, 80, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"},  // summed in float16
                 C{dtypes::float16, false, 75, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"},
                 C{dtypes::float16, true, 75, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16"},
                 C{dtypes::float32, false, 80, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"}}) {  // ALLOW_TF32
    Target t = cuda_target("CUDA", c.sm / 10, c.sm % 10);
    t.tensor_cores = cuda_tensor_cores(c.sm / 10, c.sm % 10, true);
    CStyleRenderer ren(t, Dialect::CUDA);
    Tensor x = test::randt({64, 128}, 1).cast(c.dt), w = test::randt({128, 64}, 2).cast(c.dt), y = x.matmul(w);
    if (c.acc16) {  // summed in float16: the f16.f16.f16.f16 form
      Tensor p3 = x.reshape({64, 1, 128}).mul(w.transpose(0, 1).reshape({1, 64, 128}));
      y = Tensor(UOp::make(Ops::REDUCE_AXIS, p3.dtype(), {p3.uop()}, std::vector<int64_t>{int64_t(Ops::ADD), 2}), "CPU").reshape({64, 64});
    }
    test::Case k0(y);
    auto& k = *k0.sched->kernels.back();
    ProgramSpec p = get_program(k.ast, k.name, ren, nullptr);
    ASSERT_FALSE(p.opts.empty());
    EXPECT_EQ(p.opts[0].op, OptOps::TC) << opts_str(p.opts);
    std::string ptx = nvrtc_compile(p.name, p.src, strformat("compute_%d", c.sm));
    EXPECT_NE(ptx.find(c.mma), std::string::npos) << p.src;
    if (c.dt == dtypes::float32) {
      EXPECT_NE(ptx.find("cvt.rna.tf32.f32"), std::string::npos) << p.src;
    }
  }
}
}  // namespace
}  // namespace tg
