// ONNX's backend node tests (Debian's libonnx-testdata: a model.onnx and input/output .pb files per test) run through
// the C API and compared with the expected outputs: shapes and dtypes exact, ints and bools exact, floats within
// |got - want| <= atol + rtol * |want| (float32/float64: rtol 1e-3, atol 1e-5; float16/bfloat16: rtol 1e-2, atol 1e-3),
// NaN where NaN is expected. The test fails when fewer pass than kFloor; TG_ONNX_NODE_REPORT=path writes each test's
// result and reason (docs/onnx.md lists the failures), TG_ONNX_NODE_FILTER=substring runs only matching tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tinygrad.h"

namespace fs = std::filesystem;

namespace {

constexpr int kFloor = 898;  // node tests that must pass (docs/onnx.md lists the others); raise it as operators land

struct Owned {  // a tensor handle released at scope end
  tg_tensor* t = nullptr;
  Owned() = default;
  Owned(Owned&& o) noexcept : t(std::exchange(o.t, nullptr)) {}
  Owned(const Owned&) = delete;
  ~Owned() { tg_tensor_release(t); }
};

std::string last_error() { return tg_last_error_message(); }
tg_dtype dtype_of(tg_tensor* t) {
  tg_dtype d = TG_FLOAT32;
  tg_tensor_dtype(t, &d);
  return d;
}

std::vector<double> values(tg_tensor* t, std::string& why) {
  tg_tensor* c = tg_tensor_cast(t, TG_FLOAT64);
  std::vector<double> v(size_t(std::max<int64_t>(tg_tensor_numel(t), 0)));
  if (!c || tg_tensor_to_data(c, v.data(), v.size() * sizeof(double)) != TG_OK) why = "reading the output: " + last_error();
  tg_tensor_release(c);
  return v;
}
std::string shape_of(tg_tensor* t) {
  int64_t d[16];
  int64_t n = tg_tensor_ndim(t);
  if (n < 0 || n > 16) return "?";
  tg_tensor_shape(t, d, 16);
  std::string s = "(";
  for (int64_t i = 0; i < n; i++) s += (i ? "," : "") + std::to_string(d[i]);
  return s + ")";
}

// "" when got matches want, else why not
std::string compare(tg_tensor* got, tg_tensor* want) {
  if (dtype_of(got) != dtype_of(want)) return std::string("dtype ") + tg_dtype_name(dtype_of(got)) + ", expected " + tg_dtype_name(dtype_of(want));
  if (shape_of(got) != shape_of(want)) return "shape " + shape_of(got) + ", expected " + shape_of(want);
  std::string why;
  auto g = values(got, why), w = values(want, why);
  if (!why.empty()) return why;
  tg_dtype dt = dtype_of(want);
  bool is_float = dt == TG_FLOAT32 || dt == TG_FLOAT64 || dt == TG_FLOAT16 || dt == TG_BFLOAT16;
  double rtol = dt == TG_FLOAT16 || dt == TG_BFLOAT16 ? 1e-2 : 1e-3, atol = dt == TG_FLOAT16 || dt == TG_BFLOAT16 ? 1e-3 : 1e-5;
  for (size_t i = 0; i < w.size(); i++) {
    bool ok = is_float ? (std::isnan(w[i]) ? std::isnan(g[i]) : std::isinf(w[i]) ? g[i] == w[i] : std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]))
                       : g[i] == w[i];
    if (!ok) return "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
  }
  return "";
}

// a test data file's value (kind as tg_onnx_input_kind) as owned tensors; its count (-1: an empty optional) into *n
std::string load_value(const fs::path& p, int kind, std::vector<Owned>& out, int64_t* n) {
  tg_tensor* ts[64] = {};
  if (tg_onnx_load_value(p.c_str(), nullptr, kind, ts, 64, n) != TG_OK) return last_error();
  for (int64_t i = 0; i < *n; i++) out.emplace_back().t = ts[i];
  return "";
}
// the test data stores bfloat16 tensors as their uint16 bits
void as_bfloat16(Owned& t) {
  tg_tensor* b = tg_tensor_bitcast(t.t, TG_BFLOAT16);
  tg_tensor_release(t.t);
  t.t = b;
}

// "" when the test passes, else the reason
std::string run_node_test(const fs::path& dir) {
  tg_onnx_model* m = tg_onnx_load((dir / "model.onnx").c_str(), nullptr);
  if (!m) return "load: " + last_error();
  struct Release {
    tg_onnx_model* m;
    ~Release() { tg_onnx_model_release(m); }
  } release{m};
  size_t n_in = size_t(tg_onnx_input_count(m)), n_out = size_t(tg_onnx_output_count(m));
  std::vector<fs::path> sets;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test data sets";
  for (auto& set : sets) {
    std::vector<Owned> ins;
    std::vector<int64_t> in_lens(n_in), out_lens(n_out);
    for (size_t i = 0; i < n_in; i++) {
      int kind = tg_onnx_input_kind(m, i);
      if (kind < 0) return "input " + std::to_string(i) + ": " + last_error();
      std::string why = load_value(set / ("input_" + std::to_string(i) + ".pb"), kind, ins, &in_lens[i]);
      if (!why.empty()) return "input " + std::to_string(i) + ": " + why;
      tg_dtype declared;
      if (kind == 0 && tg_onnx_input_info(m, i, &declared, nullptr, 0, nullptr) == TG_OK && declared == TG_BFLOAT16 && dtype_of(ins.back().t) == TG_UINT16)
        as_bfloat16(ins.back());
    }
    std::vector<tg_tensor*> in_ptrs;
    for (auto& t : ins) in_ptrs.push_back(t.t);
    tg_tensor* outs_raw[256] = {};
    if (tg_onnx_run_values(m, in_ptrs.data(), in_ptrs.size(), in_lens.data(), n_in, outs_raw, 256, out_lens.data(), n_out) != TG_OK)
      return "run: " + last_error();
    std::vector<Owned> outs(256);
    for (size_t i = 0; i < 256; i++) outs[i].t = outs_raw[i];
    size_t at = 0;
    for (size_t i = 0; i < n_out; i++) {
      std::vector<Owned> want;
      int64_t nw = 0;
      std::string why = load_value(set / ("output_" + std::to_string(i) + ".pb"), tg_onnx_output_kind(m, i), want, &nw);
      if (!why.empty()) return "expected output " + std::to_string(i) + ": " + why;
      if (nw != out_lens[i]) return "output " + std::to_string(i) + ": " + std::to_string(out_lens[i]) + " tensors, expected " + std::to_string(nw);
      for (int64_t k = 0; k < nw; k++, at++) {
        if (dtype_of(want[size_t(k)].t) == TG_UINT16 && dtype_of(outs[at].t) == TG_BFLOAT16) as_bfloat16(want[size_t(k)]);
        why = compare(outs[at].t, want[size_t(k)].t);
        if (!why.empty()) return "output " + std::to_string(i) + (nw > 1 ? "[" + std::to_string(k) + "]" : "") + ": " + why;
      }
    }
  }
  return "";
}

TEST(OnnxNodeTests, ConformanceSuite) {
  const char* env = std::getenv("TG_ONNX_NODE_DIR");
  fs::path root = env ? env : "/usr/share/libonnx-testdata/data/node";
  ASSERT_TRUE(fs::is_directory(root)) << root << " is missing: `make deps` installs Debian's libonnx-testdata";
  const char* filter = std::getenv("TG_ONNX_NODE_FILTER");
  std::vector<fs::path> tests;
  for (auto& e : fs::directory_iterator(root))
    if (e.is_directory() && (!filter || e.path().filename().string().find(filter) != std::string::npos)) tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());
  int passed = 0;
  std::vector<std::pair<std::string, std::string>> results;
  for (auto& t : tests) {
    auto t0 = std::chrono::steady_clock::now();
    std::string why = run_node_test(t);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    passed += why.empty();
    results.emplace_back(t.filename().string(), why.empty() ? "" : why);
    if (std::getenv("TG_ONNX_NODE_VERBOSE")) fprintf(stderr, "%-60s %6.2fs %s\n", t.filename().c_str(), s, why.empty() ? "ok" : why.c_str());
  }
  if (const char* report = std::getenv("TG_ONNX_NODE_REPORT")) {
    std::ofstream f(report);
    for (auto& [name, why] : results) f << name << "\t" << (why.empty() ? "ok" : why) << "\n";
  }
  printf("onnx node tests: %d of %zu pass\n", passed, tests.size());
  if (!filter) {
    EXPECT_GE(passed, kFloor) << "fewer ONNX node tests pass than the recorded count";
  }
}

}  // namespace
