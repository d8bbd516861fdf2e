// Systematic fuzzing of the C API. The call table is generated at build time from include/tinygrad.h by
// scripts/gen_capi_calls.py: every TG_API function gets a thunk that builds each argument by its C type and name from
// the FuzzCtx below, calls the function and hands the result to the checker for its return type. A function added to
// the header is fuzzed without touching this file; a parameter type with no generator stops the build.
//
// Arguments: integers {0, 1, -1, 2, INT64_MIN, INT64_MAX, +-2^k, +-(2^k +- 1) for k in 7,8,15,16,31,32,62,63, small},
// doubles {0, -0, +-1, NaN, +-inf, +-1e308, 1e-308, 5e-324, +-2^63, 2^64, small}, sizes {0, 1, 2, small, SIZE_MAX,
// SIZE_MAX/2+1 (= 2^63), 2^62, 2^32}, dtypes {-1, 0..12, 13, 1000, INT_MIN, INT_MAX}, strings {NULL, "", "CPU",
// "cpu:0", "NOPE", 10000 chars, ...}, handles from a pool of live tensors (every dtype; 0-d, size-0 and small N-d
// shapes; leaves and results of earlier calls) plus NULL, released handles and garbage non-NULL pointers (a correct
// library checks handles against its live set and never dereferences them), arrays as long as their counts (half the
// time shaped to pass validation: real permutations, in-range bounds, reshapes that keep numel), or a count too large
// for any array to exist with a NULL or short pointer (the library must refuse from the count alone). JITs and plans
// come from small pools the same way (live, NULL, released, garbage); a JIT's function is one of a few real callbacks
// below or NULL, its userdata an object that outlives it, NULL or garbage; a JIT that ran before mostly gets inputs of
// the shapes and dtypes it ran with and the output count it was captured with, so captures and replays happen; a
// tg_kernel_info is struct_size bytes (the full struct, 0, small, cut mid-field, larger, SIZE_MAX); a DLManagedTensor is
// NULL or one the fuzzer built over memory it owns (random dtype codes, lanes, devices, ndim, shapes, strides of any sign,
// misaligned byte offsets; NULL shape or data now and then), with a deleter that counts.
//
// Checks per call: the process survives (a fatal signal or a sanitizer report prints the call first); the error state
// is cleared before each call, then a returned pointer is non-NULL with no error set, or NULL with tg_last_error() !=
// TG_OK and a non-empty message; a returned status equals tg_last_error(); an int64 result is >= 0, or -1 with the
// error set; no call leaves TG_ERROR_INTERNAL; every returned tensor has ndim/shape/numel/dtype/device readable and
// consistent, bytes that fit in int64, and where the header pins it down the shape (and dtype) its arguments give:
// elementwise, broadcasting, comparisons (bool), cast, movement, reductions, matmul, creation. Results with numel <=
// 4096 join the pool (so realizing them stays cheap); the pool is reset to fresh leaves every 1000 calls, so graphs stay
// small. JITs: the function runs once at a warm-up or capture (with the call's counts and the JIT's userdata) and never
// at a replay; the call count moves by one on success only; every output is written on success; add_one's float32
// output is its input + 1 (at replays too). Plans: each kernel's info (name, source, buffer sizes, time) reads back,
// memory peak <= total, a plan runs once and a JIT's plan never, tg_plan_kernel fills exactly min(struct_size, sizeof)
// bytes. DLPack: a DLManagedTensor given to the library has its deleter run at most once, never on a failed call (the
// fuzzer frees it then), and by the end, once every tensor is released; an exported one describes host memory of the
// tensor's shape, which is read through, and is freed by calling its deleter. Every handle the fuzzer gets is released
// (leak-free under `make asan`).
//
// Budget: TG_FUZZ_CALLS calls (default 100000), of which one in 700 goes to a realizing function (realize,
// realize_many, to_data, jit_call, plan_create, plan_run: each may compile kernels, 50-250 ms apiece on a cold cache),
// the rest to everything else; the JIT and plan outcomes are counted in the summary. TG_FUZZ_SEED (default below)
// picks the sequence; the seed and the call count are printed. A failure prints the call number, the function and its
// arguments, and the environment that replays it (a seed replays the same calls; only a released handle whose address
// malloc has since reused is passed as NULL instead). TG_FUZZ_TRACE=1 logs every call and its outcome.
// `make fuzz` runs 2M calls.
#include <functional>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tinygrad.h"
#include "api/dlpack.h"
#include "onnx_writer.h"

extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

constexpr uint64_t kDefaultSeed = 0x7467667a7a01ull;
constexpr uint64_t kDefaultCalls = 100000;
constexpr uint64_t kRealizeEvery = 700;   // one call in this many goes to a realizing function
constexpr uint64_t kResetEvery = 1000;    // fresh leaves this often
constexpr int64_t kPoolMaxNumel = 4096;   // results larger than this are released at once
constexpr size_t kPoolMax = 48, kExprPoolMax = 32, kUopPoolMax = 16, kJitPoolMax = 6, kPlanPoolMax = 8, kDeadMax = 64;
constexpr int64_t I64MIN = std::numeric_limits<int64_t>::min(), I64MAX = std::numeric_limits<int64_t>::max();

// ---- the current call's arguments, as recorded while they are built ---------------------------------------------------
struct Arg {
  std::string name, text;
  std::string rendered;       // expression handles: the full tg_expr_render text
  enum Kind { Int, Real, Size, Handle, Str, Array, Other } kind = Other;
  int64_t i = 0;              // Int (and dtype/binop/status): the value
  double d = 0;               // Real
  size_t n = 0;               // Size / Array count
  std::vector<int64_t> ints;  // Array: the contents (when readable); Handle: the tensor's shape
  const void* p = nullptr;    // Handle / Array / Str pointer
  enum HandleState { Null, Live, Released, Garbage } state = Null;
  int64_t ndim = -1, numel = -1;  // tensor handles
  int dtype = -1;
};
struct Call {
  const char* fn = "";
  std::vector<Arg> args;
  const Arg* arg(std::string_view name) const {
    for (auto& a : args)
      if (a.name == name) return &a;
    return nullptr;
  }
  // the rank of a tensor argument: -2 when the argument is absent or not a live tensor
  int64_t tensor_ndim(std::string_view name) const {
    const Arg* a = arg(name);
    return a && a->kind == Arg::Handle && a->state == Arg::Live ? a->ndim : -2;
  }
};

// ---- what the header says a successful call returns ------------------------------------------------------------------
// an int128 result as int64; INT64_MIN (never a valid dim) where it doesn't fit, so a comparison with it fails
int64_t clamp64(__int128 v) { return v > I64MAX || v < I64MIN ? I64MIN : int64_t(v); }
// The shape (and dtype, or -1) a successful call must give where the header pins it down: elementwise ops keep the
// shape, binary ops broadcast, comparisons give bool, movement ops and reductions follow their arguments, creation
// follows its shape. False where the header leaves it open (matmul, arange) or an input isn't a live tensor. Safe on
// any arguments (it is asked before the call): where they can't be valid, the shape is just wrong.
bool predict(const Call& call, std::vector<int64_t>& out, int& dtype) {
  std::string_view fn = call.fn;
  if (fn.rfind("tg_tensor_", 0) != 0) return false;
  fn.remove_prefix(10);
  auto live = [&](const char* n) -> const Arg* {
    const Arg* a = call.arg(n);
    return a && a->kind == Arg::Handle && a->state == Arg::Live && a->ndim >= 0 ? a : nullptr;
  };
  auto is = [&](std::initializer_list<const char*> names) {
    for (auto n : names)
      if (fn == n) return true;
    return false;
  };
  auto ints = [&](const char* n) { return call.arg(n) ? call.arg(n)->ints : std::vector<int64_t>{}; };
  auto broadcast = [](std::vector<int64_t> a, const std::vector<int64_t>& b) {
    if (a.size() < b.size()) a.insert(a.begin(), b.size() - a.size(), 1);
    for (size_t i = 0; i < b.size(); i++) {
      int64_t& x = a[a.size() - b.size() + i];
      x = x == 1 ? b[i] : x;
    }
    return a;
  };
  dtype = -1;
  if (is({"neg", "exp", "exp2", "log", "log2", "sqrt", "reciprocal", "sin", "cos", "abs", "relu", "sigmoid", "tanh", "contiguous",
          "softmax", "log_softmax", "flip", "retain", "cast"})) {
    const Arg* t = live("t");
    if (!t) return false;
    out = t->ints;
    if (fn == "retain") dtype = t->dtype;
    if (fn == "cast") dtype = int(call.arg("dtype")->i);
    return true;
  }
  if (is({"add_scalar", "sub_scalar", "mul_scalar", "div_scalar", "pow_scalar"})) {
    const Arg* a = live("a");
    return a ? (out = a->ints, true) : false;
  }
  if (is({"add", "sub", "mul", "div", "idiv", "maximum", "minimum", "pow", "lt", "le", "gt", "ge", "eq", "ne"})) {
    const Arg *a = live("a"), *b = live("b");
    if (!a || !b) return false;
    out = broadcast(a->ints, b->ints);
    if (is({"lt", "le", "gt", "ge", "eq", "ne"})) dtype = TG_BOOL;
    return true;
  }
  if (fn == "matmul") {  // numpy: a 1-D a is (1, k) and b (k, 1) with that dim dropped after; batch dims broadcast
    const Arg *a = live("a"), *b = live("b");
    if (!a || !b || a->ints.empty() || b->ints.empty()) return false;
    std::vector<int64_t> x = a->ints, y = b->ints;
    if (x.size() == 1) x.insert(x.begin(), 1);
    if (y.size() == 1) y.push_back(1);
    out = broadcast(std::vector<int64_t>(x.begin(), x.end() - 2), std::vector<int64_t>(y.begin(), y.end() - 2));
    if (a->ints.size() > 1) out.push_back(x[x.size() - 2]);
    if (b->ints.size() > 1) out.push_back(y.back());
    return true;
  }
  if (fn == "where") {
    const Arg *c = live("cond"), *x = live("x"), *y = live("y");
    return c && x && y ? (out = broadcast(broadcast(c->ints, x->ints), y->ints), true) : false;
  }
  if (is({"from_data", "empty", "zeros", "ones", "full"})) return out = ints("shape"), true;
  if (fn == "eye") return out = {call.arg("n")->i, call.arg("n")->i}, true;
  const Arg* t = live("t");
  if (!t) return false;
  const std::vector<int64_t>& s = t->ints;
  int64_t nd = int64_t(s.size());
  // an axis as an index; a library that accepted an axis out of range gets a shape that can't match (not a crash here)
  bool bad_axis = false;
  auto axis = [&](int64_t a) {
    a = a < 0 ? a + nd : a;
    return a >= 0 && a < nd ? a : (bad_axis = true, int64_t(0));
  };
  if (fn == "reshape") {
    out = ints("shape");
    __int128 known = 1;
    int64_t infer = -1;
    for (size_t i = 0; i < out.size(); i++) {
      if (out[i] == -1) infer = int64_t(i);
      else known = std::clamp<__int128>(known * out[i], -((__int128)1 << 63), (__int128)1 << 63);  // no overflow in here either
    }
    if (infer >= 0) {
      if (known <= 0) return false;
      out[size_t(infer)] = int64_t(t->numel / known);
    }
    return true;
  }
  if (fn == "permute") {
    for (auto o : ints("order")) {
      int64_t a = axis(o);
      out.push_back(bad_axis ? I64MIN : s[size_t(a)]);
    }
    if (bad_axis) out = {I64MIN};
    return true;
  }
  if (fn == "expand") {
    out = ints("shape");
    for (size_t i = 0; i < out.size(); i++)
      if (out[i] == -1) out[i] = i + s.size() >= out.size() ? s[i + s.size() - out.size()] : 1;
    return true;
  }
  if (fn == "pad" || fn == "shrink") {
    std::vector<int64_t> p = ints(fn == "pad" ? "pads" : "bounds");
    out = s;
    for (size_t i = 0; i < out.size() && 2 * i + 1 < p.size(); i++)
      out[i] = clamp64(fn == "pad" ? (__int128)s[i] + p[2 * i] + p[2 * i + 1] : (__int128)p[2 * i + 1] - p[2 * i]);
    return true;
  }
  if (fn == "transpose") {
    out = s;
    if (nd) std::swap(out[size_t(axis(call.arg("dim0")->i))], out[size_t(axis(call.arg("dim1")->i))]);
    if (bad_axis) out = {I64MIN};
    return true;
  }
  if (is({"sum", "prod", "max", "min", "mean"})) {
    if (nd == 0) return true;  // a 0-d tensor reduces to itself (axis 0 / -1 allowed)
    std::vector<int64_t> axes = ints("axes");
    std::vector<bool> red(s.size(), axes.empty());
    for (auto a : axes) red[size_t(axis(a))] = true;
    bool keep = call.arg("keepdim")->i != 0;
    for (size_t i = 0; i < s.size(); i++)
      if (!red[i]) out.push_back(s[i]);
      else if (keep) out.push_back(1);
    if (bad_axis) out = {I64MIN};
    return true;
  }
  return false;
}

// the header's shape rule: a shape's nonzero dims multiply to a count that fits int64, even when another dim is 0
bool oversized_shape(const std::vector<int64_t>& s) {
  __int128 p = 1;
  for (auto d : s)
    if ((p *= std::max<int64_t>(d, 1)) > I64MAX) return true;
  return false;
}

// ---- fatal signals and sanitizer reports name the call that caused them ----------------------------------------------
char g_current_call[8192];
volatile sig_atomic_t g_in_call = 0;
const int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_old_actions[sizeof kFatalSignals / sizeof *kFatalSignals];
stack_t g_old_altstack;
std::vector<char> g_altstack(1 << 16);

void print_current_call() {
  if (!g_in_call) return;
  const char head[] = "\n[ FUZZ     ] died in ";
  ssize_t w = write(2, head, sizeof head - 1);
  w = write(2, g_current_call, strnlen(g_current_call, sizeof g_current_call));
  w = write(2, "\n", 1);
  (void)w;
}
void on_fatal_signal(int sig) {
  print_current_call();
  g_in_call = 0;
  for (size_t i = 0; i < std::size(kFatalSignals); i++)  // the previous handlers (default or a sanitizer's) take it from here:
    if (kFatalSignals[i] == sig) sigaction(sig, &g_old_actions[i], nullptr);  // a fault re-executes, abort() re-raises
}
// A sanitizer report names the call too. GCC links ASan and UBSan as separate runtimes, each with its own death
// callback, so every loaded sanitizer runtime gets it.
void set_sanitizer_death_callbacks(void (*cb)(void)) {
  if (&__sanitizer_set_death_callback) __sanitizer_set_death_callback(cb);
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (!info->dlpi_name || !std::strstr(info->dlpi_name, "san")) return 0;
        if (void* h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD)) {
          if (auto set = reinterpret_cast<void (*)(void (*)(void))>(dlsym(h, "__sanitizer_set_death_callback"))) set(reinterpret_cast<void (*)(void)>(data));
          dlclose(h);
        }
        return 0;
      },
      reinterpret_cast<void*>(cb));
}
struct CrashReporter {
  CrashReporter() {
    stack_t ss{};
    ss.ss_sp = g_altstack.data(), ss.ss_size = g_altstack.size();
    sigaltstack(&ss, &g_old_altstack);
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kFatalSignals); i++) sigaction(kFatalSignals[i], &sa, &g_old_actions[i]);
    set_sanitizer_death_callbacks(print_current_call);
  }
  ~CrashReporter() {
    for (size_t i = 0; i < std::size(kFatalSignals); i++) sigaction(kFatalSignals[i], &g_old_actions[i], nullptr);
    set_sanitizer_death_callbacks(nullptr);
    sigaltstack(&g_old_altstack, nullptr);
  }
};

// ---- the fuzz context -------------------------------------------------------------------------------------------------
template <class P>
struct Arr {
  P p;
  size_t n;
};
struct Named {  // names with their tensors (tg_onnx_run_named)
  const char* const* p0;
  tg_tensor* const* p1;
  size_t n;
};
struct Bind {
  const char* const* p0;
  const int64_t* p1;
  size_t n;
};

std::vector<int64_t> boundary_ints() {
  std::vector<int64_t> v{0, 1, -1, 2, -2, I64MIN, I64MAX, I64MIN + 1, I64MAX - 1};
  for (int k : {7, 8, 15, 16, 31, 32, 62, 63})
    for (int64_t d : {-1, 0, 1}) {
      uint64_t x = (uint64_t(1) << k) + uint64_t(d);  // 2^63 +- 1 wraps, as a C caller's would
      v.push_back(int64_t(x)), v.push_back(int64_t(0 - x));
    }
  return v;
}
std::string fmt_double(double x) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", x);
  return b;
}
std::string fmt_ptr(const void* p) {
  char b[24];
  std::snprintf(b, sizeof b, "%p", p);
  return b;
}
std::string fmt_ints(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}
std::string status_str(tg_status s) { return std::string(tg_status_name(s)) + "(" + std::to_string(int(s)) + ")"; }

// ---- the functions a tg_jit captures ------------------------------------------------------------------------------------
// Real callbacks that keep tg_jit_fn's contract (n_outputs new references and TG_OK, or an error status and no
// references). The library validates every handle before it calls one, so they never see garbage; they check anyway.
// What they saw goes into g_cb for the checks after tg_jit_call (a replay must not call them; a warm-up or capture
// calls them once, with the call's counts and the JIT's userdata). userdata is compared, never read: the fuzzer passes
// garbage too.
struct CallbackLog {
  int calls = 0;
  size_t n_inputs = 0, n_outputs = 0;
  void* userdata = nullptr;
  bool dead_input = false;  // an input the library passed was not a live handle
};
CallbackLog g_cb;
uint64_t g_cb_total = 0;  // invocations ever (alternates cb_fail's two ways to fail)
int g_userdata;           // what a careful caller passes: an object that outlives every JIT

bool cb_enter(void* u, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  g_cb.calls++, g_cb_total++;
  g_cb.userdata = u, g_cb.n_inputs = n_in, g_cb.n_outputs = n_out;
  if (n_in > 4096 || n_out > 4096 || (!in && n_in) || (!out && n_out)) return false;
  for (size_t i = 0; i < n_in; i++)
    if (tg_tensor_ndim(in[i]) < 0) g_cb.dead_input = true;
  return !g_cb.dead_input;
}
// the status of the library call that just failed (its message is set), or `dflt` if none is
tg_status cb_error(tg_status dflt) {
  tg_status e = tg_last_error();
  return e != TG_OK ? e : dflt;
}
// inputs[0] + 1, as its one output
tg_status cb_add_one(void* u, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  if (!cb_enter(u, in, n_in, out, n_out) || n_in < 1 || n_out != 1) return TG_ERROR_INVALID_ARGUMENT;  // no message: the library names it
  tg_tensor* y = tg_tensor_add_scalar(in[0], 1.0);
  if (!y) return cb_error(TG_ERROR_INVALID_ARGUMENT);
  out[0] = y;
  return TG_OK;
}
// fails after some work: half the time with the message of a failed library call, half the time with none
tg_status cb_fail(void* u, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  if (cb_enter(u, in, n_in, out, n_out) && n_in >= 1) tg_tensor_release(tg_tensor_mul_scalar(in[0], 2.0));
  if (g_cb_total % 2) {
    tg_tensor* bad = tg_tensor_add_scalar(nullptr, 0.0);  // NULL, with the library's message
    return bad ? (tg_tensor_release(bad), TG_ERROR_INTERNAL) : cb_error(TG_ERROR_INVALID_ARGUMENT);
  }
  return g_cb_total % 4 ? TG_ERROR_SHAPE : TG_ERROR_UNSUPPORTED;
}
// up to two results, inputs[0] * 2 and the sum of the last input (constants without inputs): it writes as many as it
// is asked for, so fewer than it can compute when n_outputs < 2, and refuses more than two
tg_status cb_pair(void* u, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  if (!cb_enter(u, in, n_in, out, n_out) || n_out > 2) return TG_ERROR_INVALID_ARGUMENT;
  tg_tensor* r[2] = {nullptr, nullptr};
  const int64_t shape[1] = {3};
  for (size_t i = 0; i < n_out; i++) {
    r[i] = !n_in ? tg_tensor_full(shape, 1, 2.5 + double(i), TG_FLOAT32, nullptr) : i == 0 ? tg_tensor_mul_scalar(in[0], 2.0) : tg_tensor_sum(in[n_in - 1], nullptr, 0, 0);
    if (!r[i]) {
      tg_status e = cb_error(TG_ERROR_INVALID_ARGUMENT);
      tg_tensor_release(r[0]);
      return e;
    }
  }
  for (size_t i = 0; i < n_out; i++) out[i] = r[i];
  return TG_OK;
}
// no outputs: inputs[0] += 1 in place (tg_tensor_assign), which the JIT captures and replays although it isn't returned
tg_status cb_assign(void* u, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  if (!cb_enter(u, in, n_in, out, n_out) || n_out != 0) return TG_ERROR_INVALID_ARGUMENT;
  if (n_in == 0) return TG_OK;
  tg_tensor* v = tg_tensor_add_scalar(in[0], 1.0);
  if (!v) return cb_error(TG_ERROR_INVALID_ARGUMENT);
  tg_status s = tg_tensor_assign(in[0], v);
  tg_tensor_release(v);
  return s;
}
// its inputs as they are: outputs[i] is inputs[i % n_inputs] itself (a new reference) or flattened (a view of its buffer)
tg_status cb_views(void* u, tg_tensor* const* in, size_t n_in, tg_tensor** out, size_t n_out) {
  if (!cb_enter(u, in, n_in, out, n_out) || (n_out && !n_in)) return TG_ERROR_INVALID_ARGUMENT;
  std::vector<tg_tensor*> r;
  for (size_t i = 0; i < n_out; i++) {
    tg_tensor* x = in[i % n_in];
    const int64_t flat[1] = {tg_tensor_numel(x)};
    tg_tensor* y = i % 2 ? tg_tensor_reshape(x, flat, 1) : tg_tensor_retain(x);
    if (!y) {
      tg_status e = cb_error(TG_ERROR_INVALID_ARGUMENT);
      for (auto* t : r) tg_tensor_release(t);
      return e;
    }
    r.push_back(y);
  }
  std::copy(r.begin(), r.end(), out);
  return TG_OK;
}
// each with the n_outputs it accepts (the fuzzer asks for these more often than chance would)
struct JitFn {
  const char* name;
  tg_jit_fn fn;
  size_t min_out, max_out;
};
const JitFn kJitFns[] = {{"add_one", cb_add_one, 1, 1}, {"fail", cb_fail, 0, 3}, {"pair", cb_pair, 0, 2}, {"assign", cb_assign, 0, 0}, {"views", cb_views, 0, 4}};
constexpr size_t kNumJitFns = std::size(kJitFns);

// ---- DLManagedTensors the fuzzer hands to tg_tensor_from_dlpack ------------------------------------------------------
// Each owns the memory it describes; its deleter frees it and checks it was live (a second call would find it gone).
struct FuzzDL {
  DLManagedTensor m{};
  std::vector<uint8_t> bytes;
  std::vector<int64_t> dims;  // shape, then strides
};
std::vector<FuzzDL*> g_dl_live;  // built and not yet deleted
uint64_t g_dl_bad_deletes = 0, g_dl_deleted = 0;
bool dl_forget(FuzzDL* d) {
  auto it = std::find(g_dl_live.begin(), g_dl_live.end(), d);
  if (it == g_dl_live.end()) return false;
  g_dl_live.erase(it);
  delete d;
  return true;
}
void dl_deleter(DLManagedTensor* m) {
  if (dl_forget(static_cast<FuzzDL*>(m->manager_ctx))) g_dl_deleted++;
  else g_dl_bad_deletes++;
}

struct FuzzCtx;
struct FuzzFn {
  const char* name;
  bool realizing;  // compiles and runs kernels: a small share of the calls
  void (*call)(FuzzCtx&);
};

struct FuzzCtx {
  std::mt19937_64 rng;
  uint64_t seed, call_no = 0;
  bool trace = std::getenv("TG_FUZZ_TRACE") != nullptr;  // every call (before it runs) and its outcome on stderr
  Call call;
  std::vector<tg_tensor*> pool;  // owned references (a handle may appear more than once: retain)
  std::vector<tg_expr*> exprs;   // owned references
  // handles we released for good, in rings of fixed size: which one a call draws never depends on addresses, so a seed
  // replays the same sequence even where malloc hands a released address to a new handle (that slot then draws NULL)
  std::vector<tg_tensor*> dead = std::vector<tg_tensor*>(kDeadMax, nullptr);
  std::vector<tg_expr*> dead_exprs = std::vector<tg_expr*>(kDeadMax, nullptr);
  size_t dead_next = 0, dead_exprs_next = 0;
  std::vector<tg_tensor*> recent = std::vector<tg_tensor*>(8, nullptr);  // the latest pooled results
  size_t recent_next = 0;
  bool realizing = false;  // the current call realizes: it draws the latest results more often (graphs, not leaves)
  tg_tensor* handed_over = nullptr;  // an owned handle given to a *_release call
  FuzzDL* handed_dl = nullptr;       // given to tg_tensor_from_dlpack: the library's on success, ours again on failure
  uint64_t dl_imported = 0, dl_exported = 0;
  static constexpr size_t kOutSlots = 1024;
  tg_tensor** out_slots = nullptr;
  tg_expr** out_expr_slots = nullptr;
  tg_expr* handed_over_expr = nullptr;
  // graph nodes (tg_uop), owned, with their dead ring, hand-over and out slots as expressions
  std::vector<tg_uop*> uops;
  std::vector<tg_uop*> dead_uops = std::vector<tg_uop*>(kDeadMax, nullptr);
  size_t dead_uops_next = 0;
  tg_uop** out_uop_slots = nullptr;
  tg_uop* handed_over_uop = nullptr;
  // JITs and plans, owned, with the same dead rings and hand-over for their *_release as tensors and expressions
  std::vector<tg_jit*> jits;
  std::vector<tg_plan*> plans;
  std::vector<tg_jit*> dead_jits = std::vector<tg_jit*>(kDeadMax, nullptr);
  std::vector<tg_plan*> dead_plans = std::vector<tg_plan*>(kDeadMax, nullptr);
  size_t dead_jits_next = 0, dead_plans_next = 0;
  tg_jit* handed_over_jit = nullptr;
  tg_plan* handed_over_plan = nullptr;
  // states (tg_state_*), owned, like plans; their files live in a directory of their own, removed at the end
  std::string state_dir;
  // a pool of owned handles of one kind: lent to calls, handed over to *_release, remembered when dead
  template <class H>
  struct HandlePool {
    void (*release)(H*);
    const char* kind;
    std::vector<H*> live, dead = std::vector<H*>(kDeadMax, nullptr);
    size_t dead_next = 0;
    H* handed_over = nullptr;
    void remember_dead(H* h) { dead[dead_next++ % kDeadMax] = h; }
    void settle() {  // after a call: a handed-over handle the call didn't give back is dead
      if (handed_over && !std::count(live.begin(), live.end(), handed_over)) remember_dead(handed_over);
      handed_over = nullptr;
    }
    void clear() {
      for (auto* h : live) release(h), remember_dead(h);
      live.clear();
    }
  };
  HandlePool<tg_module> modules{tg_module_release, "module"};
  HandlePool<tg_state> states{tg_state_release, "state"};
  HandlePool<tg_optimizer> optimizers{tg_optimizer_release, "optimizer"};
  HandlePool<tg_onnx_model> onnx_models{tg_onnx_model_release, "onnx_model"};
  HandlePool<tg_llm> llms{tg_llm_release, "llm"};
  HandlePool<tg_comm> comms{tg_comm_release, "comm"};
  // per pooled JIT: its function (index into kJitFns, -1 unknown), its userdata, and the inputs (shape, dtype) and output
  // count of its latest successful warm-up or capture, so a later call can ask for a replay that passes validation
  struct JitInfo {
    int fn = -1;
    const void* userdata = nullptr;
    bool called = false;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<int> dtypes;
    size_t n_outputs = 0;
  };
  std::unordered_map<const void*, JitInfo> jit_info;  // looked up, never iterated: draws don't depend on addresses
  struct PlanInfo {
    bool from_jit = false, ran = false;
  };
  std::unordered_map<const void*, PlanInfo> plan_info;
  std::deque<std::vector<uint8_t>> keep;  // argument buffers, alive for one call
  std::deque<std::string> strs;
  std::vector<uint8_t> junk = std::vector<uint8_t>(1024);  // readable memory that is not a handle
  const std::vector<int64_t> bints = boundary_ints();
  uint64_t nfailures = 0, errors = 0, pooled = 0, released_results = 0, predicted = 0;
  uint64_t jit_ok[3] = {0, 0, 0}, jit_values_checked = 0, plans_ran = 0, kernel_infos = 0;  // successful warm-ups, captures, replays
  // add_one's float32 input as it was before the call: the call may overwrite it (an input that is an earlier output of
  // the same JIT shares its buffer with the output)
  std::vector<float> add_one_input;
  uint64_t add_one_input_call = UINT64_MAX;
  uint64_t as_before_call = UINT64_MAX;  // the call whose JIT inputs have the shapes and dtypes the JIT ran with

  explicit FuzzCtx(uint64_t s) : rng(s), seed(s) {
    for (auto& b : junk) b = uint8_t(rng());
  }
  ~FuzzCtx() {
    clear_pools();
    if (!state_dir.empty()) std::filesystem::remove_all(state_dir);
  }

  uint64_t r(uint64_t n) { return n ? rng() % n : 0; }
  int64_t ri(int64_t lo, int64_t hi) {  // any range, INT64_MIN..INT64_MAX included
    uint64_t span = uint64_t(hi) - uint64_t(lo) + 1;
    return int64_t(uint64_t(lo) + (span ? r(span) : rng()));
  }
  bool pct(int p) { return r(100) < uint64_t(p); }
  template <class T>
  T pick(std::initializer_list<T> v) { return v.begin()[r(v.size())]; }
  template <class T>
  T pick(const std::vector<T>& v) { return v[r(v.size())]; }

  Arg& rec(const char* name, Arg::Kind k, std::string text) {
    call.args.push_back(Arg{});
    Arg& a = call.args.back();
    a.name = name, a.kind = k, a.text = std::move(text);
    return a;
  }
  template <class T>
  T* buffer(size_t count) {  // zero-size requests still get a distinct non-NULL pointer
    keep.emplace_back(std::max<size_t>(count * sizeof(T), 1) + sizeof(T));
    auto& b = keep.back();
    for (auto& x : b) x = uint8_t(rng());
    return reinterpret_cast<T*>(b.data());
  }
  void* garbage() {
    switch (r(6)) {
      case 0: return reinterpret_cast<void*>(uintptr_t(1));
      case 1: return reinterpret_cast<void*>(uintptr_t(0xdeadbeef));
      case 2: return reinterpret_cast<void*>(uintptr_t(0xffff800000000000ull));  // non-canonical
      case 3: return junk.data() + 8 * r(junk.size() / 8);
      case 4:
        if (!pool.empty()) return reinterpret_cast<char*>(pick(pool)) + 1;  // inside a live handle, misaligned
        [[fallthrough]];
      default: return reinterpret_cast<void*>(uintptr_t(0x1000) + 16 * r(4096));
    }
  }

  // ---- scalars ----
  int64_t i64(const char* name) {
    std::string_view n = name;
    bool axis = n == "axis" || n.rfind("dim", 0) == 0;
    int64_t v = axis && pct(60) ? ri(-4, 4) : pct(70) ? pick(bints) : ri(-8, 8);
    rec(name, Arg::Int, std::to_string(v)).i = v;
    return v;
  }
  uint64_t u64(const char* name) {
    uint64_t v = pct(50) ? uint64_t(pick(bints)) : rng();
    rec(name, Arg::Int, std::to_string(v)).i = int64_t(v);
    return v;
  }
  int int32(const char* name) {
    int v = pct(70) ? pick({0, 1, -1, 2, INT_MIN, INT_MAX, 255, 65536}) : int(ri(-8, 8));
    rec(name, Arg::Int, std::to_string(v)).i = v;
    return v;
  }
  double f64(const char* name) {
    static const std::vector<double> b{0.0, -0.0, 1.0, -1.0, NAN, -NAN, INFINITY, -INFINITY, 1e308, -1e308, 1e-308, 5e-324,
                                       9223372036854775808.0, -9223372036854775808.0, 18446744073709551616.0, 0.5, -2.5,
                                       65504.0, 65536.0, 2147483648.0, 4294967296.0, 1e-8, 3.0, 4096.0};
    double v = pct(65) ? pick(b) : double(ri(-128, 128)) / 8;
    rec(name, Arg::Real, fmt_double(v)).d = v;
    return v;
  }
  size_t size(const char* name) {
    size_t v = pct(60) ? pick<size_t>({0, 1, 2, SIZE_MAX, SIZE_MAX / 2 + 1, size_t(1) << 62, size_t(1) << 32}) : size_t(r(9));
    const Arg* p = call.arg("plan");  // a kernel index: within the plan drawn for the call half the time
    if (p && p->state == Arg::Live && p->n && !std::strcmp(name, "i") && pct(50)) v = size_t(r(p->n));
    rec(name, Arg::Size, std::to_string(v)).n = v;
    return v;
  }
  tg_dtype dtype(const char* name) {
    int v = pct(80) ? int(r(13)) : pick({-1, 13, 1000, INT_MIN, INT_MAX});
    const char* nm = tg_dtype_name(tg_dtype(v));
    rec(name, Arg::Int, nm ? nm : "dtype " + std::to_string(v)).i = v;
    return tg_dtype(v);
  }
  tg_binop binop(const char* name) {
    int v = pct(85) ? int(r(8)) : pick({-1, 8, 1000, INT_MIN, INT_MAX});
    rec(name, Arg::Int, "binop " + std::to_string(v)).i = v;
    return tg_binop(v);
  }
  tg_status status(const char* name) {
    int v = pct(80) ? int(r(12)) : pick({-1, 12, 1000, INT_MIN, INT_MAX});
    rec(name, Arg::Int, "status " + std::to_string(v)).i = v;
    return tg_status(v);
  }
  const char* str(const char* name) {
    std::string_view n = name;
    if (pct(8)) return rec(name, Arg::Str, "NULL"), nullptr;
    std::string s;
    if (n == "name" && pct(60)) s = pick<const char*>({"x", "y", "z", "i", "gidx0"});
    else if (n == "path" || n == "dir") {  // files only inside a directory of our own (tg_state_save, tg_viz_dump write them)
      if (state_dir.empty()) {
        char tmpl[] = "/tmp/tg_fuzz_state_XXXXXX";
        state_dir = mkdtemp(tmpl) ? tmpl : "/nonexistent-tg-fuzz";
      }
      s = state_dir + pick<const char*>({"/a.safetensors", "/a.safetensors", "/b.gguf", "/missing/c.safetensors", "", "/"});
    }
    else s = pick<std::string>({"", "CPU", "cpu:0", "NOPE", std::string(10000, 'D'), "cpu", "CPU:0", "CPU:1", "CUDA", "x", "CPU,CPU:1", "CPU,CPU"});
    strs.push_back(std::move(s));
    const std::string& k = strs.back();
    rec(name, Arg::Str, k.size() > 20 ? "\"" + k.substr(0, 8) + "...\" (" + std::to_string(k.size()) + " chars)" : "\"" + k + "\"").p = k.c_str();
    return k.c_str();
  }

  // ---- handles ----
  void record_tensor(Arg& a, tg_tensor* t) {
    a.p = t;
    a.ndim = tg_tensor_ndim(t), a.numel = tg_tensor_numel(t);
    tg_dtype d = TG_DTYPE_INVALID;
    tg_tensor_dtype(t, &d);
    a.dtype = int(d);
    if (a.ndim >= 0) {
      a.ints.resize(size_t(a.ndim));
      tg_tensor_shape(t, a.ints.data(), a.ints.size());
    }
    const char* dn = tg_dtype_name(d);
    std::string sh = "(";
    for (size_t i = 0; i < a.ints.size(); i++) sh += (i ? "," : "") + std::to_string(a.ints[i]);
    a.text = "tensor " + fmt_ptr(t) + " " + sh + (a.ints.size() == 1 ? ",)" : ")") + " " + (dn ? dn : "?");
  }
  tg_tensor* tensor(const char* name) {
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (k < 5 || pool.empty()) return nullptr;
    if (k < 10) return a.state = Arg::Garbage, a.p = garbage(), a.text = "garbage " + fmt_ptr(a.p), (tg_tensor*)a.p;
    if (k < 15) {
      tg_tensor* t = pick(dead);
      if (!t || std::count(pool.begin(), pool.end(), t)) return nullptr;  // empty slot, or the address is live again
      return a.state = Arg::Released, a.p = t, a.text = "released " + fmt_ptr(t), t;
    }
    tg_tensor* t = pick(pool);
    if (realizing && pct(60)) {  // a recent result if it is still pooled
      tg_tensor* c = pick(recent);
      if (c) t = c;  // entries leave `recent` when they leave the pool
    }
    a.state = Arg::Live;
    record_tensor(a, t);
    return t;
  }
  tg_tensor* owned_tensor(const char* name) {  // the callee takes our reference (tg_tensor_release)
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (k < 8 || pool.empty()) return nullptr;
    if (k < 16) return a.state = Arg::Garbage, a.p = garbage(), a.text = "garbage " + fmt_ptr(a.p), (tg_tensor*)a.p;
    if (k < 30) {  // never one whose address is live again: that would release a reference the pool holds
      tg_tensor* t = pick(dead);
      if (!t || std::count(pool.begin(), pool.end(), t)) return nullptr;
      return a.state = Arg::Released, a.p = t, a.text = "released " + fmt_ptr(t), t;
    }
    size_t i = r(pool.size());
    tg_tensor* t = pool[i];
    record_tensor(a, t);
    a.state = Arg::Live, a.text = "owned " + a.text;
    pool.erase(pool.begin() + long(i));
    handed_over = t;
    return t;
  }
  tg_expr* expr(const char* name) {
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (k < 5 || exprs.empty()) return nullptr;
    if (k < 10) return a.state = Arg::Garbage, a.p = garbage(), a.text = "garbage " + fmt_ptr(a.p), (tg_expr*)a.p;
    if (k < 15) {
      tg_expr* e = pick(dead_exprs);
      if (!e || std::count(exprs.begin(), exprs.end(), e)) return nullptr;
      return a.state = Arg::Released, a.p = e, a.text = "released expr " + fmt_ptr(e), e;
    }
    tg_expr* e = pick(exprs);
    a.state = Arg::Live, a.p = e, a.rendered = render_all(e);
    a.text = "expr " + fmt_ptr(e) + " " + (a.rendered.size() > 120 ? a.rendered.substr(0, 120) + "..." : a.rendered);
    return e;
  }
  // how an owned handle argument is drawn when it isn't a live one: NULL, a garbage pointer or a released handle (false:
  // draw a live one)
  template <class H>
  bool owned_not_live(Arg& a, uint64_t k, const std::vector<H*>& pool, const std::vector<H*>& dead, const char* kind, H*& out) {
    out = nullptr;
    if (k < 8 || pool.empty()) return true;
    if (k < 16) return a.state = Arg::Garbage, a.p = garbage(), a.text = "garbage " + fmt_ptr(a.p), out = (H*)a.p, true;
    if (k < 30) {
      H* h = pick(dead);
      if (h && !std::count(pool.begin(), pool.end(), h))
        a.state = Arg::Released, a.p = h, a.text = std::string("released ") + kind + " " + fmt_ptr(h), out = h;
      return true;
    }
    return false;
  }
  tg_expr* owned_expr(const char* name) {
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (tg_expr* e; owned_not_live(a, k, exprs, dead_exprs, "expr", e)) return e;
    size_t i = r(exprs.size());
    tg_expr* e = exprs[i];
    a.state = Arg::Live, a.p = e, a.text = "owned expr " + fmt_ptr(e);
    exprs.erase(exprs.begin() + long(i));
    handed_over_expr = e;
    return e;
  }
  tg_uop* uop(const char* name) {
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (k < 5 || uops.empty()) return nullptr;
    if (k < 10) return a.state = Arg::Garbage, a.p = garbage(), a.text = "garbage " + fmt_ptr(a.p), (tg_uop*)a.p;
    if (k < 15) {
      tg_uop* u = pick(dead_uops);
      if (!u || std::count(uops.begin(), uops.end(), u)) return nullptr;
      return a.state = Arg::Released, a.p = u, a.text = "released uop " + fmt_ptr(u), u;
    }
    tg_uop* u = pick(uops);
    const char* op = tg_uop_op(u);
    a.state = Arg::Live, a.p = u, a.text = "uop " + fmt_ptr(u) + " " + (op ? op : "?");
    return u;
  }
  tg_uop* owned_uop(const char* name) {
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (tg_uop* u; owned_not_live(a, k, uops, dead_uops, "uop", u)) return u;
    size_t i = r(uops.size());
    tg_uop* u = uops[i];
    a.state = Arg::Live, a.p = u, a.text = "owned uop " + fmt_ptr(u);
    uops.erase(uops.begin() + long(i));
    handed_over_uop = u;
    return u;
  }
  tg_jit_fn jit_fn(const char* name) {
    size_t k = size_t(r(kNumJitFns + 1));  // NULL as often as each function
    Arg& a = rec(name, Arg::Int, k < kNumJitFns ? std::string("fn ") + kJitFns[k].name : std::string("NULL"));
    a.i = k < kNumJitFns ? int64_t(k) : -1;
    return k < kNumJitFns ? kJitFns[k].fn : nullptr;
  }
  // a callback's userdata: an object that outlives every JIT, NULL, or garbage (the callbacks never read it)
  void* userdata(const char* name) {
    uint64_t k = r(100);
    void* p = k < 70 ? static_cast<void*>(&g_userdata) : k < 85 ? nullptr : garbage();
    rec(name, Arg::Other, p == &g_userdata ? "&userdata" : p ? "garbage " + fmt_ptr(p) : "NULL").p = p;
    return p;
  }
  std::string describe_jit(const tg_jit* j, int64_t calls) {
    auto it = jit_info.find(j);
    int fn = it == jit_info.end() ? -1 : it->second.fn;
    return "jit " + fmt_ptr(j) + " (fn " + (fn >= 0 ? kJitFns[fn].name : "?") + ", " + std::to_string(calls) + " calls)";
  }
  // a pooled JIT's index; prefer > 0: 80% one that ran before (if any), < 0: 80% one that never ran (if any), 0: any
  size_t pick_jit(int prefer) {
    size_t i = r(jits.size());
    std::vector<size_t> some;
    for (size_t k = 0; k < jits.size(); k++)
      if (jit_info[jits[k]].called == (prefer > 0)) some.push_back(k);
    return prefer && !some.empty() && pct(80) ? pick(some) : i;
  }
  tg_jit* jit(const char* name) {  // a.i: its call count before the call
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (k < 5 || jits.empty()) return nullptr;
    if (k < 10) return a.state = Arg::Garbage, a.p = garbage(), a.text = "garbage " + fmt_ptr(a.p), (tg_jit*)a.p;
    if (k < 15) {
      tg_jit* j = pick(dead_jits);
      if (!j || std::count(jits.begin(), jits.end(), j)) return nullptr;
      return a.state = Arg::Released, a.p = j, a.text = "released jit " + fmt_ptr(j), j;
    }
    // tg_jit_call comes seldom (it realizes): it mostly gets a JIT that ran before, to capture or replay, and a reset
    // mostly one that never ran, so that progress is kept
    tg_jit* j = jits[pick_jit(!std::strcmp(call.fn, "tg_jit_call") ? 1 : !std::strcmp(call.fn, "tg_jit_reset") ? -1 : 0)];
    a.state = Arg::Live, a.p = j, a.i = tg_jit_call_count(j), a.text = describe_jit(j, a.i);
    return j;
  }
  tg_jit* owned_jit(const char* name) {
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (tg_jit* j; owned_not_live(a, k, jits, dead_jits, "jit", j)) return j;
    size_t i = pick_jit(-1);  // mostly one that never ran: those that did are few and worth keeping
    tg_jit* j = jits[i];
    a.state = Arg::Live, a.p = j, a.i = tg_jit_call_count(j), a.text = "owned " + describe_jit(j, a.i);
    jits.erase(jits.begin() + long(i));
    handed_over_jit = j;
    return j;
  }
  std::string describe_plan(const tg_plan* p, size_t kernels) {
    auto it = plan_info.find(p);
    bool jit = it != plan_info.end() && it->second.from_jit, ran = it != plan_info.end() && it->second.ran;
    return std::string(jit ? "jit " : "") + "plan " + fmt_ptr(p) + " (" + std::to_string(kernels) + " kernels" + (ran ? ", ran" : "") + ")";
  }
  tg_plan* plan(const char* name) {  // a.n: its kernel count
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (k < 5 || plans.empty()) return nullptr;
    if (k < 10) return a.state = Arg::Garbage, a.p = garbage(), a.text = "garbage " + fmt_ptr(a.p), (tg_plan*)a.p;
    if (k < 15) {
      tg_plan* p = pick(dead_plans);
      if (!p || std::count(plans.begin(), plans.end(), p)) return nullptr;
      return a.state = Arg::Released, a.p = p, a.text = "released plan " + fmt_ptr(p), p;
    }
    tg_plan* p = pick(plans);
    a.state = Arg::Live, a.p = p, a.n = tg_plan_kernel_count(p), a.text = describe_plan(p, a.n);
    return p;
  }
  tg_plan* owned_plan(const char* name) {
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (tg_plan* p; owned_not_live(a, k, plans, dead_plans, "plan", p)) return p;
    size_t i = r(plans.size());
    tg_plan* p = plans[i];
    a.state = Arg::Live, a.p = p, a.n = tg_plan_kernel_count(p), a.text = "owned " + describe_plan(p, a.n);
    plans.erase(plans.begin() + long(i));
    handed_over_plan = p;
    return p;
  }
  template <class H>
  H* lend(HandlePool<H>& p, const char* name, const std::function<std::string(H*)>& describe) {
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (k < 5 || p.live.empty()) return nullptr;
    if (k < 10) return a.state = Arg::Garbage, a.p = garbage(), a.text = "garbage " + fmt_ptr(a.p), (H*)a.p;
    if (k < 15) {
      H* h = pick(p.dead);
      if (!h || std::count(p.live.begin(), p.live.end(), h)) return nullptr;
      return a.state = Arg::Released, a.p = h, a.text = std::string("released ") + p.kind + " " + fmt_ptr(h), h;
    }
    H* h = pick(p.live);
    a.state = Arg::Live, a.p = h, a.text = describe(h);
    return h;
  }
  template <class H>
  H* hand_over(HandlePool<H>& p, const char* name) {
    uint64_t k = r(100);
    Arg& a = rec(name, Arg::Handle, "NULL");
    if (H* h; owned_not_live(a, k, p.live, p.dead, p.kind, h)) return h;
    size_t i = r(p.live.size());
    H* h = p.live[i];
    a.state = Arg::Live, a.p = h, a.text = std::string("owned ") + p.kind + " " + fmt_ptr(h);
    p.live.erase(p.live.begin() + long(i));
    return p.handed_over = h;
  }
  template <class H>
  void pool_handle(HandlePool<H>& p, H* h) {
    if (p.live.size() >= kPlanPoolMax) {
      size_t i = r(p.live.size());
      std::swap(p.live[i], h);
      p.release(h), p.remember_dead(h);
    } else p.live.push_back(h);
  }
  tg_module* module(const char* name) {
    return lend<tg_module>(modules, name, [](tg_module* m) {
      const char* k = tg_module_kind(m);
      return "module " + fmt_ptr(m) + " " + (k ? k : "?");
    });
  }
  tg_module* owned_module(const char* name) { return hand_over(modules, name); }
  // ONNX models: the pool is seeded with a small one (y = x + x2, x and x2 of shape (batch, 3)) so runs get this far
  tg_onnx_model* onnx_model(const char* name) {
    if (onnx_models.live.empty() && pct(50)) {
      using namespace onnx_writer;
      Msg m = model(graph({node("Add", {"x", "x2"}, {"y"})}, {}, {value_info("x", 1, {-1, 3}), value_info("x2", 1, {-1, 3})},
                          {value_info("y", 1, {-1, 3})}));
      if (tg_onnx_model* h = tg_onnx_load_buffer(m.data(), m.size(), nullptr)) onnx_models.live.push_back(h);
      else fail(std::string("the seed ONNX model does not load: ") + tg_last_error_message());
      tg_clear_error();
    }
    return lend<tg_onnx_model>(onnx_models, name, [](tg_onnx_model* m) { return "onnx_model " + fmt_ptr(m); });
  }
  tg_onnx_model* owned_onnx_model(const char* name) { return hand_over(onnx_models, name); }
  // An options struct (its first field struct_size) as a caller of any version might pass it: the full size mostly,
  // else too small, larger than we know (the tail zero) or absurd; the bytes live in `keep` as long as the call needs them.
  template <class S>
  const S* sized(const char* name, S d, const char* what) {
    constexpr size_t full = sizeof(S);
    d.struct_size = pick<size_t>({full, full, full, 0, 8, 16, full + 16, SIZE_MAX});
    keep.emplace_back(std::max<size_t>(sizeof(size_t), d.struct_size == SIZE_MAX ? full + 64 : d.struct_size));
    std::memcpy(keep.back().data(), &d, std::min(keep.back().size(), full));
    rec(name, Arg::Other, std::string(what) + "{struct_size=" + std::to_string(d.struct_size) + "}");
    return reinterpret_cast<const S*>(keep.back().data());
  }
  const tg_onnx_options* onnx_options(const char* name) {
    if (pct(20)) return rec(name, Arg::Other, "NULL"), nullptr;
    const char* dims = pick<const char*>({nullptr, nullptr, "batch=1", "batch=2,seq=3", "batch", "=1", "batch=-1", "batch=99999999999999999999", ""});
    const char* dev = pick<const char*>({nullptr, nullptr, "CPU", "NOPE", ""});
    const char* base = pick<const char*>({nullptr, nullptr, "/tmp", "/nonexistent", ""});
    return sized(name, tg_onnx_options{sizeof(tg_onnx_options), dev, dims, base}, "onnx_options");
  }
  // no model file is at hand in the fuzzer: loads fail (the pool holds what a test gave it), handles are NULL or dead
  tg_llm* llm(const char* name) {
    return lend<tg_llm>(llms, name, [](tg_llm* m) { return "llm " + fmt_ptr(m); });
  }
  tg_llm* owned_llm(const char* name) { return hand_over(llms, name); }
  // MPI is kept away from the fuzzer (TG_MPI_LIB names no library, see the test): tg_comm_world fails cleanly, and
  // every other tg_comm_* call sees NULL or dead handles. The communicator's real paths run under mpirun
  // (tests/python/test_mpi.py).
  tg_comm* comm(const char* name) {
    return lend<tg_comm>(comms, name, [](tg_comm* c) { return "comm " + fmt_ptr(c); });
  }
  tg_comm* owned_comm(const char* name) { return hand_over(comms, name); }
  void ret_comm(tg_comm* c) {
    if (!c) return expect_error("returned NULL");
    expect_no_error("returned a comm");
    if (tg_comm_size(c) < 1) fail("a returned comm has no ranks");
    pool_handle(comms, c);
  }
  tg_reduce reduce_op(const char* name) {
    int v = pct(85) ? int(r(5)) : pick({-1, 5, 1000, INT_MIN, INT_MAX});
    rec(name, Arg::Int, "reduce " + std::to_string(v)).i = v;
    return tg_reduce(v);
  }
  const tg_llm_options* llm_options(const char* name) {
    if (pct(20)) return rec(name, Arg::Other, "NULL"), nullptr;
    const char* dev = pick<const char*>({nullptr, nullptr, "CPU", "NOPE", ""});
    int64_t ctx = pick<int64_t>({0, 0, 16, -1, INT64_MAX, int64_t(1) << 30});
    return sized(name, tg_llm_options{sizeof(tg_llm_options), dev, ctx}, "llm_options");
  }
  tg_llm_sampling* llm_sampling_out(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    keep.emplace_back(sizeof(tg_llm_sampling) + 16);
    auto* p = reinterpret_cast<tg_llm_sampling*>(keep.back().data());
    p->struct_size = pick<size_t>({sizeof(tg_llm_sampling), sizeof(tg_llm_sampling), 0, 8});
    rec(name, Arg::Other, "&llm_sampling{struct_size=" + std::to_string(p->struct_size) + "}");
    return p;
  }
  const tg_llm_sampling* llm_sampling(const char* name) {
    if (pct(20)) return rec(name, Arg::Other, "NULL"), nullptr;
    tg_llm_sampling d{sizeof(tg_llm_sampling), pick<double>({0.8, 0, -1, 1e30, std::nan("")}), pick<int64_t>({40, 0, -1, INT64_MAX}),
                      pick<double>({0.95, 1, 0, std::nan("")}), pick<double>({1, 1.1, 0, -1}), pick<int64_t>({64, 0, -5}), u64("seed")};
    return sized(name, d, "llm_sampling");
  }
  // generation's callback: never called here (no model loads in the fuzzer), so any pointer but NULL would do
  static int llm_stop(void*, int64_t, const char*) { return 1; }
  tg_llm_token_fn llm_token_fn(const char* name) {
    bool null = pct(50);
    rec(name, Arg::Other, null ? "NULL" : "llm_stop");
    return null ? nullptr : &llm_stop;
  }
  void ret_llm(tg_llm* m) {
    if (!m) return expect_error("returned NULL");
    expect_no_error("returned an llm");
    if (tg_llm_vocab_size(m) < 1) fail("a returned llm has no vocabulary");
    pool_handle(llms, m);
  }
  void ret_onnx_model(tg_onnx_model* m) {
    if (!m) return expect_error("returned NULL");
    expect_no_error("returned an onnx model");
    if (tg_onnx_input_count(m) < 0 || tg_onnx_output_count(m) < 0) fail("a returned onnx model has no input/output count");
    pool_handle(onnx_models, m);
  }
  Arr<tg_module* const*> module_array(const char* name, const char* count_name) {
    size_t n = count_for(4);
    if (n > 100) {  // only NULL: an array of live handles gives the library no way to see where it ends
      rec(name, Arg::Array, "NULL");
      rec(count_name, Arg::Size, std::to_string(n)).n = n;
      return {nullptr, n};
    }
    size_t at = call.args.size();
    tg_module** p = buffer<tg_module*>(n);
    std::string text = "{";
    for (size_t i = 0; i < n; i++) {
      p[i] = module("layers[i]");
      text += (i ? ", " : "") + call.args.back().text;
      call.args.pop_back();
    }
    rec(name, Arg::Array, n == 0 && pct(40) ? (p = nullptr, "NULL") : text + "}");
    (void)at;
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {p, n};
  }
  // sizes of a module: mostly small, sometimes ones refused at once
  // tg_viz_serve's port: a free one (0), or one refused at once; never a fixed port another process may hold
  int port(const char* name) {
    int v = pick({0, 0, -1, 65536, INT_MIN, INT_MAX});
    rec(name, Arg::Int, std::to_string(v)).i = v;
    return v;
  }
  // tg_viz_json's route: the server's routes, good and bad
  const char* route(const char* name) {
    if (pct(8)) return rec(name, Arg::Str, "NULL"), nullptr;
    strs.push_back(pick<std::string>({"/api/index", "/api/timeline", "/api/kernel/0", "/api/kernel/3", "/api/realize/1", "/api/kernel/-1",
                                      "/api/kernel/99999999999", "/api/../index.html", "/", "", "/api/", std::string(5000, '/')}));
    const std::string& k = strs.back();
    rec(name, Arg::Str, "\"" + k.substr(0, 24) + "\"").p = k.c_str();
    return k.c_str();
  }
  int64_t module_size(const char* name) {
    int64_t v = pct(97) ? ri(-2, 24) : pick<int64_t>({0, -1, I64MIN, I64MAX, int64_t(1) << 62});
    rec(name, Arg::Int, std::to_string(v)).i = v;
    return v;
  }
  void ret_module(tg_module* m) {
    if (!m) return expect_error("returned NULL");
    expect_no_error("returned a module");
    if (!tg_module_kind(m)) fail("a returned module has no kind");
    pool_handle(modules, m);
  }
  tg_state* state(const char* name) {
    return lend<tg_state>(states, name, [](tg_state* s) { return "state " + fmt_ptr(s) + " (" + std::to_string(tg_state_count(s)) + " entries)"; });
  }
  tg_state* owned_state(const char* name) { return hand_over(states, name); }
  static std::string render_all(const tg_expr* e) {
    int64_t n = tg_expr_render(e, nullptr, 0);
    if (n < 0 || n > (1 << 20)) return "?";
    std::string b(size_t(n) + 1, '\0');
    tg_expr_render(e, b.data(), b.size());
    b.resize(size_t(n));
    return b;
  }
  static std::string render(const tg_expr* e) {
    char b[64];
    int64_t n = tg_expr_render(e, b, sizeof b);
    return n < 0 ? "?" : n >= int64_t(sizeof b) ? std::string(b) + "..." : std::string(b);
  }

  // ---- single out/in pointers ----
  int64_t* out_i64(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    int64_t* p = buffer<int64_t>(1);
    rec(name, Arg::Other, "&int64").p = p;
    return p;
  }
  int* out_int(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    return rec(name, Arg::Other, "&int"), buffer<int>(1);
  }
  double* out_f64(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    return rec(name, Arg::Other, "&double"), buffer<double>(1);
  }
  const int64_t* in_i64(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    int64_t* p = buffer<int64_t>(1);
    *p = pick(bints);
    return rec(name, Arg::Other, "&" + std::to_string(*p)), p;
  }
  tg_dtype* out_dtype(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    return rec(name, Arg::Other, "&dtype"), buffer<tg_dtype>(1);
  }
  tg_optimizer_kind optim_kind(const char* name) {
    int64_t k = pct(85) ? ri(0, 5) : pick<int64_t>({-1, 6, 1000, INT32_MIN, INT32_MAX});
    rec(name, Arg::Int, std::to_string(k)).i = k;
    return tg_optimizer_kind(k);
  }
  // a caller's options of struct_size bytes (an older or newer struct, or an unset size): a kind's defaults, sometimes
  // with one field set to a value out of range or one the kind does not take
  tg_optimizer_options* optim_options_out(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    constexpr size_t full = sizeof(tg_optimizer_options);
    tg_optimizer_options d{};
    d.struct_size = full;
    tg_optimizer_options_default(tg_optimizer_kind(r(6)), &d);
    if (pct(30)) {
      double v = pick<double>({-1, 0, 0.5, 1e30, std::nan(""), -0.0});
      switch (r(8)) {
        case 0: d.lr = v; break;
        case 1: d.momentum = v; break;
        case 2: d.weight_decay = v; break;
        case 3: d.tcoef = v; break;
        case 4: d.b1 = v; break;
        case 5: d.ns_steps = ri(-3, 3); break;
        case 6: d.n_ns_coefficients = size_t(ri(0, 12)); break;
        default: d.nesterov = int(ri(-1, 2));
      }
    }
    // the caller's struct is struct_size bytes (older, newer, unset); ASan catches an access past it
    d.struct_size = pick<size_t>({full, full, full, 0, 8, 16, 24, full - 8, full + 16, SIZE_MAX});
    keep.emplace_back(std::max<size_t>(sizeof(size_t), d.struct_size == SIZE_MAX ? full + 64 : d.struct_size));
    std::memcpy(keep.back().data(), &d, std::min(keep.back().size(), full));
    rec(name, Arg::Other, "optimizer_options{struct_size=" + std::to_string(d.struct_size) + "}");
    return reinterpret_cast<tg_optimizer_options*>(keep.back().data());
  }
  const tg_optimizer_options* optim_options(const char* name) { return optim_options_out(name); }
  // export options of struct_size bytes: the files go only to a directory of our own (or one that isn't there), under
  // a name that is or isn't a C identifier, for a known target or not
  const tg_export_options* export_options(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    if (state_dir.empty()) {
      char tmpl[] = "/tmp/tg_fuzz_state_XXXXXX";
      state_dir = mkdtemp(tmpl) ? tmpl : "/nonexistent-tg-fuzz";
    }
    strs.push_back(pick<std::string>({state_dir, state_dir, state_dir + "/missing", ""}));
    const char* dir = pct(5) ? nullptr : strs.back().c_str();
    strs.push_back(pick<std::string>({"model", "m1", "1bad", "a-b", "", std::string(100, 'n')}));
    const char* nm = pct(5) ? nullptr : strs.back().c_str();
    const char* target = pick<const char*>({nullptr, "generic", "native", "x86-64-v4", "aarch64", "armv7", "riscv", ""});
    return sized(name, tg_export_options{sizeof(tg_export_options), dir, nm, target}, "export_options");
  }
  tg_optimizer* optimizer(const char* name) {
    return lend<tg_optimizer>(optimizers, name, [](tg_optimizer* o) { return "optimizer " + fmt_ptr(o); });
  }
  tg_optimizer* owned_optimizer(const char* name) { return hand_over(optimizers, name); }
  tg_counters* counters(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    // the caller's struct is struct_size bytes (an older or newer tg_counters); ASan catches a write past it
    size_t ss = pick<size_t>({sizeof(tg_counters), sizeof(tg_counters), 0, 8, 16, 24, 40, sizeof(tg_counters) + 16, SIZE_MAX});
    size_t bytes = std::max<size_t>(sizeof(size_t), ss == SIZE_MAX ? sizeof(tg_counters) + 64 : ss);
    keep.emplace_back(bytes);
    auto* c = reinterpret_cast<tg_counters*>(keep.back().data());
    std::memcpy(c, &ss, sizeof ss);
    rec(name, Arg::Other, "counters{struct_size=" + std::to_string(ss) + "}");
    return c;
  }
  tg_kernel_info* kernel_info(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), nullptr;
    // the caller's struct is struct_size bytes (an older or newer tg_kernel_info, or one cut mid-field); ASan catches a
    // write past it; the rest of it is random bytes, as a caller's uninitialized struct would be
    constexpr size_t full = sizeof(tg_kernel_info);
    size_t ss = pick<size_t>({full, full, full, 0, 1, 8, 15, 16, 24, 36, 40, full - 8, full + 16, SIZE_MAX});
    size_t bytes = std::max<size_t>(sizeof(size_t), ss == SIZE_MAX ? full + 64 : ss);
    keep.emplace_back(bytes);
    for (auto& b : keep.back()) b = uint8_t(rng());
    auto* k = reinterpret_cast<tg_kernel_info*>(keep.back().data());
    std::memcpy(k, &ss, sizeof ss);
    Arg& a = rec(name, Arg::Other, "kernel_info{struct_size=" + std::to_string(ss) + "}");
    a.p = k, a.n = ss;
    return k;
  }
  const void* in_ptr(const char* name) {
    if (pct(20)) return rec(name, Arg::Other, "NULL"), nullptr;
    return rec(name, Arg::Other, "buffer[256]"), buffer<uint8_t>(256);
  }
  void* out_ptr(const char* name) {
    if (pct(20)) return rec(name, Arg::Other, "NULL"), nullptr;
    return rec(name, Arg::Other, "buffer[256]"), buffer<uint8_t>(256);
  }
  // A DLManagedTensor over memory it owns, as a producer would hand it over; what it describes is really there, except
  // where the description is invalid in a way the library must refuse before reading (device, dtype, lanes, ndim,
  // negative or overflowing dims, NULL shape or data). Up to 8 bytes an element, strides in [-3, 3], a byte offset.
  DLManagedTensor* dlpack(const char* name) {
    Arg& a = rec(name, Arg::Other, "NULL");
    if (pct(8)) return nullptr;
    static const DLDataType valid[] = {{kDLBool, 8, 1},  {kDLInt, 8, 1},   {kDLUInt, 8, 1},   {kDLInt, 16, 1},    {kDLUInt, 16, 1},
                                       {kDLInt, 32, 1},  {kDLUInt, 32, 1}, {kDLInt, 64, 1},   {kDLUInt, 64, 1},   {kDLFloat, 16, 1},
                                       {kDLBfloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1}};
    static const DLDataType invalid[] = {{kDLComplex, 64, 1}, {kDLFloat, 32, 4}, {kDLFloat, 32, 0}, {kDLOpaqueHandle, 64, 1}, {kDLFloat, 8, 1},
                                         {kDLInt, 7, 1},      {kDLBool, 1, 1},   {kDLBfloat, 32, 1}, {99, 32, 1}};
    DLDataType t = pct(85) ? valid[r(std::size(valid))] : invalid[r(std::size(invalid))];
    int dev = pct(90) ? int(kDLCPU) : pick({int(kDLCUDA), int(kDLCUDAHost), int(kDLOpenCL), 0, -1, 999});
    int32_t nd = pct(95) ? int32_t(r(4)) : pick<int32_t>({-1, 65, INT32_MIN});
    auto* d = new FuzzDL;
    g_dl_live.push_back(d);
    size_t n = size_t(std::clamp<int32_t>(nd, 0, 4));
    d->dims.assign(2 * n + 1, 0);
    int64_t *shape = d->dims.data(), *strides = shape + n, neg = 0, pos = 0;
    for (size_t i = 0; i < n; i++) shape[i] = int64_t(r(5));
    if (n && pct(3)) shape[r(n)] = pick<int64_t>({-1, I64MIN});
    else if (n >= 2 && pct(3)) shape[0] = I64MAX / 2, shape[1] = 4;  // more elements than int64 holds
    int sk = int(r(10));  // 0-2: NULL strides, 3-5: compact, else random
    for (int64_t i = int64_t(n) - 1, acc = 1; i >= 0; i--) {
      strides[i] = sk < 6 ? acc : ri(-3, 3);
      if (__builtin_mul_overflow(acc, std::max<int64_t>(shape[i], 1), &acc)) acc = 1;  // an overflowing shape is refused anyway
      int64_t ext = std::clamp<int64_t>(shape[i], 1, 4) - 1;  // an invalid dim is refused before any read
      (strides[i] < 0 ? neg : pos) += (strides[i] < 0 ? -strides[i] : strides[i]) * ext;
    }
    d->bytes.resize(size_t(neg + pos + 2) * 8);
    for (auto& b : d->bytes) b = uint8_t(rng());
    uint64_t off = pct(80) ? 0 : r(8);
    bool null_data = pct(3), null_shape = n && pct(3);
    d->m.dl_tensor = DLTensor{null_data ? nullptr : d->bytes.data() + neg * 8, DLDevice{int32_t(dev), 0}, nd, t, null_shape ? nullptr : shape,
                              sk < 3 ? nullptr : strides, off};
    d->m.manager_ctx = d, d->m.deleter = dl_deleter;
    std::vector<int64_t> sv(shape, shape + n), tv(strides, strides + n);
    a.text = describe_dl(dev, t, nd, null_shape ? "NULL" : fmt_ints(sv), sk < 3 ? "NULL" : fmt_ints(tv), off, null_data);
    handed_dl = d;
    return &d->m;
  }
  static std::string describe_dl(int dev, DLDataType t, int32_t nd, const std::string& shape, const std::string& strides, uint64_t off, bool null_data) {
    return "dlpack{device_type=" + std::to_string(dev) + ", dtype=" + std::to_string(t.code) + "/" + std::to_string(t.bits) + "x" + std::to_string(t.lanes) +
           ", ndim=" + std::to_string(nd) + ", shape=" + shape + ", strides=" + strides + ", byte_offset=" + std::to_string(off) + (null_data ? ", data=NULL" : "") + "}";
  }

  // tensors the call writes as new references (std_mean's pair, gradient's results): zeroed slots, more than any
  // count the fuzzer gives with a live array, checked and pooled after the call
  tg_tensor** out_tensors(const char* name) {
    if (pct(10)) return rec(name, Arg::Other, "NULL"), out_slots = nullptr;
    out_slots = buffer<tg_tensor*>(kOutSlots);
    std::fill(out_slots, out_slots + kOutSlots, nullptr);
    return rec(name, Arg::Other, "tg_tensor*[" + std::to_string(kOutSlots) + "]"), out_slots;
  }

  // out slots with their capacity (chunk): usually within the slots, sometimes a huge capacity with NULL
  Arr<tg_tensor**> out_tensor_array(const char* name, const char* count_name) {
    size_t n = pct(90) ? size_t(r(8)) : pick<size_t>({SIZE_MAX, size_t(1) << 40});
    if (const JitInfo* ji = jit_target(); ji && ji->fn >= 0 && pct(70)) {  // the count it ran with (with inputs as it ran), or one its function accepts
      const JitFn& fn = kJitFns[ji->fn];
      n = ji->called && pct(as_before_call == call_no ? 90 : 30) ? ji->n_outputs : size_t(ri(int64_t(fn.min_out), int64_t(fn.max_out)));
    }
    tg_tensor** p = n <= 8 ? out_tensors(name) : (rec(name, Arg::Other, "NULL"), nullptr);
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {p, n};
  }

  // expressions the call writes as new references (tg_tensor_shape_vars): zeroed slots with a count, sometimes too few
  Arr<tg_expr**> out_expr_array(const char* name, const char* count_name) {
    size_t n = pct(90) ? size_t(r(9)) : pick<size_t>({SIZE_MAX, size_t(1) << 40});
    tg_expr** p = nullptr;
    if (n <= 8 && !pct(10)) {
      out_expr_slots = p = buffer<tg_expr*>(kOutSlots);
      std::fill(p, p + kOutSlots, nullptr);
      rec(name, Arg::Other, "tg_expr*[" + std::to_string(kOutSlots) + "]");
    } else {
      rec(name, Arg::Other, "NULL");
    }
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {p, n};
  }

  // nodes the call writes as new references (tg_uop_srcs, tg_uop_toposort, tg_tensor_schedule): zeroed slots, a capacity
  Arr<tg_uop**> out_uop_array(const char* name, const char* count_name) {
    size_t n = pct(90) ? size_t(r(9)) : pick<size_t>({SIZE_MAX, size_t(1) << 40});
    tg_uop** p = nullptr;
    if (n <= 8 && !pct(10)) {
      out_uop_slots = p = buffer<tg_uop*>(kOutSlots);
      std::fill(p, p + kOutSlots, nullptr);
      rec(name, Arg::Other, "tg_uop*[" + std::to_string(kOutSlots) + "]");
    } else {
      rec(name, Arg::Other, "NULL");
    }
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {p, n};
  }

  // ---- arrays with their counts ----
  // a count no array of `elem` bytes can have (so the library must refuse it without reading)
  static bool impossible(size_t n, size_t elem) { return n > (size_t(1) << 48) / elem; }
  size_t count_for(int small_max) {
    uint64_t k = r(100);
    if (k < 80) return size_t(r(uint64_t(small_max) + 1));
    if (k < 88) return pick<size_t>({63, 64, 65, 100, 1000});
    return pick<size_t>({SIZE_MAX, SIZE_MAX / 2 + 1, size_t(1) << 62, (size_t(1) << 61) + 1, size_t(1) << 32});
  }
  const Arg* first_live_tensor() const {
    for (auto& a : call.args)
      if (a.kind == Arg::Handle && a.state == Arg::Live && a.ndim >= 0) return &a;
    return nullptr;
  }
  // a random shape with exactly `numel` elements (numel 0 gets a 0 dim; -1 once in a while for reshape)
  std::vector<int64_t> shape_with(int64_t numel, bool allow_infer) {
    std::vector<int64_t> s;
    if (numel == 0) {
      for (int64_t i = 0, n = ri(1, 3); i < n; i++) s.push_back(ri(0, 3));
      s[size_t(r(s.size()))] = 0;
      return s;
    }
    int64_t left = numel;
    for (int64_t d = 2; d <= left && s.size() < 5;) {
      if (left % d == 0 && pct(70)) s.push_back(d), left /= d;
      else d++;
    }
    if (left > 1) s.push_back(left);
    std::shuffle(s.begin(), s.end(), rng);
    for (int i = 0, n = int(r(3)); i < n && s.size() < 6; i++) s.insert(s.begin() + long(r(s.size() + 1)), 1);
    if (allow_infer && !s.empty() && pct(25)) s[size_t(r(s.size()))] = -1;
    return s;
  }
  // arrays shaped to get past validation for the tensor already drawn for this call
  bool plausible(std::string_view what, size_t per, std::vector<int64_t>& out) {
    std::string_view fn = call.fn;
    const Arg* t = first_live_tensor();
    if (what == "shape" && !t) {  // creation: from_data's numel follows nbytes and dtype
      const Arg *nb = call.arg("nbytes"), *dt = call.arg("dtype");
      size_t isz = dt ? tg_dtype_size(tg_dtype(dt->i)) : 0;
      if (nb && isz && nb->n % isz == 0 && nb->n / isz <= 4096) return out = shape_with(int64_t(nb->n / isz), false), true;
      for (int64_t i = 0, n = ri(0, 4); i < n; i++) out.push_back(ri(0, 5));
      return true;
    }
    if (!t) return false;
    const std::vector<int64_t>& s = t->ints;
    int64_t nd = int64_t(s.size());
    if (what == "axes") {
      for (int64_t a = 0; a < nd; a++)
        if (pct(50)) out.push_back(pct(50) ? a : a - nd);
      if (nd == 0 && pct(50)) out.push_back(pick<int64_t>({0, -1}));
      std::shuffle(out.begin(), out.end(), rng);
    } else if (what == "order") {
      out.resize(size_t(nd));
      std::iota(out.begin(), out.end(), 0);
      std::shuffle(out.begin(), out.end(), rng);
    } else if (per == 2 && what == "pads") {
      for (int64_t a = 0; a < nd; a++) out.push_back(ri(0, 2)), out.push_back(ri(0, 2));
    } else if (per == 2) {  // bounds
      for (int64_t a = 0; a < nd; a++) {
        int64_t b = ri(0, s[size_t(a)]), e = ri(b, s[size_t(a)]);
        out.push_back(b), out.push_back(e);
      }
    } else if (what == "shape" && fn.find("expand") != std::string_view::npos) {
      out = s;
      for (auto& x : out) {
        if (x == 1 && pct(60)) x = ri(1, 3);
        else if (pct(20)) x = -1;
      }
      for (int i = 0, n = int(r(3)); i < n; i++) out.insert(out.begin(), ri(1, 3));
    } else if (what == "shape") {
      out = shape_with(t->numel, true);
    } else {
      return false;
    }
    return true;
  }
  Arr<const int64_t*> i64_array(const char* name, const char* count_name, size_t per) {
    std::vector<int64_t> v;
    size_t n;
    bool made = pct(50) && plausible(name, per, v);
    if (made) {
      if (pct(5) && !v.empty()) v[size_t(r(v.size()))] = pick(bints);  // one bad entry
      n = v.size() / per;
    } else {
      n = count_for(per == 2 ? 4 : 5);
      if (!impossible(n, 8 * per) && n <= 1000)
        for (size_t i = 0; i < n * per; i++) v.push_back(pct(75) ? ri(-2, 5) : pick(bints));
    }
    rec(name, Arg::Array, "");
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    const int64_t* p = nullptr;
    if (impossible(n, 8 * per)) {  // NULL or a short array: the count alone must be refused
      if (pct(50)) {
        int64_t* q = buffer<int64_t>(4 * per);
        for (size_t i = 0; i < 4 * per; i++) q[i] = 1;
        p = q;
      }
      call.args[call.args.size() - 2].text = p ? "short{1,1,1,1...}" : "NULL";
    } else if (n * per > v.size() || (pct(4) && n > 0)) {  // NULL with a nonzero count
      call.args[call.args.size() - 2].text = "NULL";
    } else {
      int64_t* q = buffer<int64_t>(v.size());
      std::copy(v.begin(), v.end(), q);
      p = q;
      if (n == 0 && pct(30)) p = nullptr;
      Arg& aa = call.args[call.args.size() - 2];
      aa.ints = v, aa.text = p ? fmt_ints(v) : "NULL";
    }
    call.args[call.args.size() - 2].p = p;
    return {p, n};
  }
  Arr<int64_t*> out_i64_array(const char* name, const char* count_name) {
    const Arg* t = first_live_tensor();
    size_t n = t && pct(50) ? size_t(t->ndim) + size_t(r(2)) : count_for(8);
    int64_t* p = nullptr;
    if (n <= 1000) p = pct(8) ? nullptr : buffer<int64_t>(n);
    else if (impossible(n, 8) && pct(50)) p = buffer<int64_t>(64);  // writes stop at ndim (<= 64 for any shape)
    rec(name, Arg::Array, p ? "int64[" + std::to_string(std::min<size_t>(n, 64)) + "]" : "NULL").p = p;
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {p, n};
  }
  Arr<const void*> in_bytes(const char* name, const char* count_name) {
    size_t n = pct(85) ? pick<size_t>({0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256})
                       : pick<size_t>({SIZE_MAX, SIZE_MAX / 2 + 1, size_t(1) << 62, size_t(1) << 40, 4097, 65536});
    const void* p = nullptr;
    if (n <= 65536) {
      if (!pct(5)) p = buffer<uint8_t>(n);
    } else if (n > size_t(I64MAX) && pct(50)) {
      p = buffer<uint8_t>(64);  // short, with more bytes than any valid shape has: refused before anything is read
    }
    rec(name, Arg::Array, p ? "bytes[" + std::to_string(std::min<size_t>(n, 65536)) + "]" : "NULL").p = p;
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {p, n};
  }
  Arr<void*> out_bytes(const char* name, const char* count_name) {
    const Arg* t = first_live_tensor();
    size_t exact = t && t->numel >= 0 ? size_t(t->numel) * tg_dtype_size(tg_dtype(t->dtype)) : 0;
    size_t n = t && pct(70) ? exact
                            : pick<size_t>({0, 1, 2, 4, 8, 64, 4096, exact + 1, exact ? exact - 1 : 3, SIZE_MAX, SIZE_MAX / 2 + 1, size_t(1) << 62});
    void* p = nullptr;
    if (n <= (size_t(1) << 20)) {
      if (!pct(5)) p = buffer<uint8_t>(n);
    } else if (pct(50)) p = buffer<uint8_t>(64);  // short: nbytes never matches a pooled tensor, so nothing is written
    rec(name, Arg::Array, p ? "out[" + std::to_string(std::min<size_t>(n, size_t(1) << 20)) + "]" : "NULL").p = p;
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {p, n};
  }
  Arr<char*> out_chars(const char* name, const char* count_name) {
    size_t n = pct(85) ? pick<size_t>({0, 1, 2, 3, 5, 8, 16, 64, 4096}) : pick<size_t>({SIZE_MAX, SIZE_MAX / 2 + 1});
    char* p = n <= 4096 && !pct(5) ? buffer<char>(n) : nullptr;  // a huge size only with NULL: the rendering may be long
    rec(name, Arg::Array, p ? "char[" + std::to_string(n) + "]" : "NULL").p = p;
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {p, n};
  }
  // tg_jit_call's JIT, when it is live and pooled
  const JitInfo* jit_target() const {
    if (std::strcmp(call.fn, "tg_jit_call")) return nullptr;
    const Arg* j = call.arg("jit");
    if (!j || j->state != Arg::Live) return nullptr;
    auto it = jit_info.find(j->p);
    return it == jit_info.end() ? nullptr : &it->second;
  }
  static bool has_shape(tg_tensor* t, const std::vector<int64_t>& shape, int dtype) {
    tg_dtype d = TG_DTYPE_INVALID;
    std::vector<int64_t> s(shape.size());
    return tg_tensor_ndim(t) == int64_t(shape.size()) && tg_tensor_shape(t, s.data(), s.size()) == TG_OK && s == shape &&
           tg_tensor_dtype(t, &d) == TG_OK && int(d) == dtype;
  }
  // a pooled tensor of this shape and dtype, or a new lazy constant one (pooled while there is room)
  tg_tensor* tensor_like(const std::vector<int64_t>& shape, int dtype) {
    std::vector<tg_tensor*> same;
    for (auto* t : pool)
      if (has_shape(t, shape, dtype)) same.push_back(t);
    if (!same.empty() && pct(80)) return pick(same);
    tg_tensor* t = pool.size() < kPoolMax + 16 ? tg_tensor_full(shape.data(), shape.size(), double(ri(-3, 3)), tg_dtype(dtype), nullptr) : nullptr;
    if (!t) return same.empty() ? nullptr : pick(same);
    pool.push_back(t);
    return t;
  }
  Arr<tg_tensor* const*> tensor_array(const char* name, const char* count_name) {
    // for a JIT that ran before, mostly inputs of the shapes and dtypes it ran with: a capture or a replay
    const JitInfo* ji = jit_target();
    bool as_before = ji && ji->called && pct(60);
    if (as_before) as_before_call = call_no;
    size_t n = as_before ? ji->shapes.size() : count_for(4);
    if (n > 100) {  // only NULL: an array of live handles gives the library no way to see where it ends
      rec(name, Arg::Array, "NULL");
      rec(count_name, Arg::Size, std::to_string(n)).n = n;
      return {nullptr, n};
    }
    size_t at = call.args.size();
    rec(name, Arg::Array, "");
    tg_tensor** p = buffer<tg_tensor*>(n);
    std::string text = "{";
    for (size_t i = 0; i < n; i++) {
      if (as_before) {
        Arg a;
        if ((p[i] = tensor_like(ji->shapes[i], ji->dtypes[i]))) record_tensor(a, p[i]);
        text += (i ? ", " : "") + (p[i] ? a.text : "NULL");
        continue;
      }
      p[i] = tensor("ts[i]");
      text += (i ? ", " : "") + call.args.back().text;
      call.args.pop_back();
    }
    if (pct(4) && n > 0) p = nullptr, text = "NULL";
    else if (n == 0 && pct(40)) p = nullptr, text = "NULL";
    else text += "}";
    call.args[at].text = text, call.args[at].p = p;
    if (ji && ji->fn == 0 && p && n) snapshot_add_one_input(p[0]);
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {p, n};
  }
  // index entries of every kind, with boundary starts/stops/steps and live, released or NULL tensors
  Arr<const tg_index*> index_array(const char* name, const char* count_name) {
    size_t n = pct(90) ? size_t(r(5)) : pick<size_t>({65, 1000, SIZE_MAX, size_t(1) << 62});
    if (n > 64) {
      rec(name, Arg::Array, "NULL");
      rec(count_name, Arg::Size, std::to_string(n)).n = n;
      return {nullptr, n};
    }
    tg_index* p = buffer<tg_index>(n);
    std::string text = "{";
    for (size_t i = 0; i < n; i++) {
      tg_index& e = p[i];
      e.kind = pct(3) ? tg_index_kind(pick<int>({-1, 5, 1000})) : tg_index_kind(r(5));
      auto v = [&] { return pct(70) ? ri(-5, 5) : pick(bints); };
      e.start = v(), e.stop = v(), e.step = pct(60) ? ri(-3, 3) : v();
      e.has_start = int(r(2)), e.has_stop = int(r(2)), e.has_step = int(r(2));
      e.tensor = e.kind == TG_INDEX_TENSOR ? tensor("idx.tensor") : nullptr;
      if (e.kind == TG_INDEX_TENSOR) call.args.pop_back();
      text += std::string(i ? "," : "") + "{" + std::to_string(int(e.kind)) + "," + std::to_string(e.start) + "," + std::to_string(e.stop) + "," +
              std::to_string(e.step) + "}";
    }
    bool null = n && pct(4);
    rec(name, Arg::Array, null ? "NULL" : text + "}");
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {null ? nullptr : p, n};
  }
  struct Arr2 {
    const int64_t* p0;
    const int64_t* p1;
    size_t n;
  };
  // two int64 arrays sharing one count (roll's shifts and dims): the second as long as the first, or NULL
  Arr2 i64_arrays2(const char* name0, const char* name1, const char* count_name) {
    Arr<const int64_t*> a = i64_array(name0, count_name, 1);
    const int64_t* q = nullptr;
    std::string text = "NULL";
    if (a.p && a.n <= 1000 && !pct(5)) {
      int64_t* b = buffer<int64_t>(a.n);
      std::vector<int64_t> v;
      for (size_t i = 0; i < a.n; i++) v.push_back(b[i] = pct(75) ? ri(-4, 4) : pick(bints));
      q = b, text = fmt_ints(v);
    }
    rec(name1, Arg::Array, text).p = q;
    return {a.p, q, a.n};
  }
  Bind bindings(const char* names_name, const char* values_name, const char* count_name) {
    size_t n = pct(90) ? size_t(r(4)) : pick<size_t>({SIZE_MAX, SIZE_MAX / 2 + 1});
    if (n > 100) {
      rec(names_name, Arg::Array, "NULL"), rec(values_name, Arg::Array, "NULL");
      rec(count_name, Arg::Size, std::to_string(n)).n = n;
      return {nullptr, nullptr, n};
    }
    const char** names = buffer<const char*>(n);
    int64_t* values = buffer<int64_t>(n);
    std::string nt = "{", vt = "{";
    for (size_t i = 0; i < n; i++) {
      names[i] = pick<const char*>({"x", "y", "z", "x", "y", "", nullptr});
      values[i] = pct(70) ? ri(-10, 10) : pick(bints);
      nt += (i ? "," : "") + (names[i] ? "\"" + std::string(names[i]) + "\"" : std::string("NULL"));
      vt += (i ? "," : "") + std::to_string(values[i]);
    }
    bool nn = n && pct(5), nv = n && pct(5);
    rec(names_name, Arg::Array, nn ? "NULL" : nt + "}");
    rec(values_name, Arg::Array, nv ? "NULL" : vt + "}");
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {nn ? nullptr : names, nv ? nullptr : values, n};
  }

  // device names (tg_tensor_shard): a few, valid, repeated or bad, or a count that is too large
  Arr<const char* const*> device_names(const char* names_name, const char* count_name) {
    size_t n = pct(90) ? size_t(r(5)) : pick<size_t>({SIZE_MAX, 5000});
    if (n > 100) return rec(names_name, Arg::Array, "NULL"), rec(count_name, Arg::Size, std::to_string(n)).n = n, Arr<const char* const*>{nullptr, n};
    const char** names = buffer<const char*>(n);
    std::string nt = "{";
    for (size_t i = 0; i < n; i++) {
      names[i] = pick<const char*>({"CPU", "CPU:1", "CPU:2", "cpu:3", "CPU:1", "NOPE", "CPU,CPU:1", "", nullptr});
      nt += (i ? "," : "") + (names[i] ? "\"" + std::string(names[i]) + "\"" : std::string("NULL"));
    }
    bool nn = n && pct(5);
    rec(names_name, Arg::Array, nn ? "NULL" : nt + "}");
    rec(count_name, Arg::Size, std::to_string(n)).n = n;
    return {nn ? nullptr : names, n};
  }

  Named named_tensors(const char* names_name, const char* inputs_name, const char* count_name) {
    auto [ts, n] = tensor_array(inputs_name, count_name);
    if (n > 100) return rec(names_name, Arg::Array, "NULL"), Named{nullptr, ts, n};
    const char** names = buffer<const char*>(n);
    std::string nt = "{";
    for (size_t i = 0; i < n; i++) {
      names[i] = pick<const char*>({"x", "x2", "x", "x2", "y", "", nullptr});
      nt += (i ? "," : "") + (names[i] ? "\"" + std::string(names[i]) + "\"" : std::string("NULL"));
    }
    bool nn = n && pct(5);
    rec(names_name, Arg::Array, nn ? "NULL" : nt + "}");
    return {nn ? nullptr : names, ts, n};
  }

  // ---- the call ----
  std::string describe() const {
    std::string s = std::string(call.fn) + "(";
    for (size_t i = 0; i < call.args.size(); i++) s += (i ? ", " : "") + call.args[i].name + "=" + call.args[i].text;
    return s + ")";
  }
  std::string replay() const {
    return "call #" + std::to_string(call_no) + " (replay: TG_FUZZ_SEED=" + std::to_string(seed) + " TG_FUZZ_CALLS=" + std::to_string(call_no + 1) +
           " build/tg_tests --gtest_filter='FuzzCApi.*')";
  }
  void begin_call() {
    std::string d = replay() + ": " + describe();
    std::snprintf(g_current_call, sizeof g_current_call, "%s", d.c_str());
    if (trace) std::fprintf(stderr, "%s\n", d.c_str());
    tg_clear_error();
    g_cb = {};
    g_in_call = 1;
  }
  void end_call() {
    g_in_call = 0;
    tg_status e = tg_last_error();
    if (trace) std::fprintf(stderr, "  -> %s %s\n", tg_status_name(e), tg_last_error_message());
    if (e < TG_OK || e > TG_ERROR_INTERNAL) fail("tg_last_error() is " + std::to_string(int(e)) + ", not a tg_status the header defines");
    else if (e != TG_OK && !*tg_last_error_message()) fail("error " + status_str(e) + " with an empty message");
    if (e == TG_ERROR_INTERNAL) fail(std::string("an internal error (a library bug by the header's definition): ") + tg_last_error_message());
    if (e != TG_OK) errors++;
    if (out_slots) {
      tg_tensor** outs = out_slots;
      out_slots = nullptr;
      for (size_t i = 0; i < kOutSlots; i++)
        if (outs[i]) {
          if (e != TG_OK) fail("wrote a tensor to out[" + std::to_string(i) + "] and failed");
          ret_tensor(outs[i]);
        }
    }
    if (out_expr_slots) {
      tg_expr** outs = out_expr_slots;
      out_expr_slots = nullptr;
      for (size_t i = 0; i < kOutSlots; i++)
        if (outs[i]) {
          if (e != TG_OK) fail("wrote an expression to out[" + std::to_string(i) + "] and failed");
          ret_expr(outs[i]);
          tg_clear_error();
        }
    }
    if (out_uop_slots) {
      tg_uop** outs = out_uop_slots;
      out_uop_slots = nullptr;
      for (size_t i = 0; i < kOutSlots; i++)
        if (outs[i]) {
          if (e != TG_OK) fail("wrote a node to out[" + std::to_string(i) + "] and failed");
          ret_uop(outs[i]);
          tg_clear_error();
        }
    }
    if (handed_dl) {  // a failed import leaves the DLManagedTensor to us, untouched
      if (e != TG_OK && !dl_forget(handed_dl)) fail("the DLPack deleter ran although the call failed");
      else if (e == TG_OK) dl_imported++;
      handed_dl = nullptr;
    }
    if (g_dl_bad_deletes) fail("a DLPack deleter ran twice"), g_dl_bad_deletes = 0;
    if (handed_over && !std::count(pool.begin(), pool.end(), handed_over)) remember_dead(handed_over);
    if (handed_over_expr && !std::count(exprs.begin(), exprs.end(), handed_over_expr)) remember_dead(handed_over_expr);
    if (handed_over_uop && !std::count(uops.begin(), uops.end(), handed_over_uop)) remember_dead(handed_over_uop);
    if (handed_over_jit && !std::count(jits.begin(), jits.end(), handed_over_jit)) remember_dead(handed_over_jit);
    if (handed_over_plan && !std::count(plans.begin(), plans.end(), handed_over_plan)) remember_dead(handed_over_plan);
    states.settle();
    onnx_models.settle();
    llms.settle();
    comms.settle();
    modules.settle();
    optimizers.settle();
    handed_over = nullptr, handed_over_expr = nullptr, handed_over_jit = nullptr, handed_over_plan = nullptr, handed_over_uop = nullptr;
  }
  void fail(const std::string& what) {
    if (nfailures++ < 30)
      ADD_FAILURE() << replay() << "\n  " << describe() << "\n  " << what << "\n  [last error " << status_str(tg_last_error()) << ": "
                    << std::string(tg_last_error_message()).substr(0, 300) << "]";
  }
  void expect_error(const char* what) {
    tg_status e = tg_last_error();
    if (e == TG_OK) fail(std::string(what) + " but tg_last_error() is TG_OK");
    else if (!*tg_last_error_message()) fail(std::string(what) + " with an empty tg_last_error_message()");
  }
  void expect_no_error(const char* what) {
    if (tg_last_error() != TG_OK) fail(std::string(what) + " and an error set at once");
  }

  // ---- result checks ----
  void ret_tensor(tg_tensor* t) {
    if (!t) return expect_error("returned NULL");
    expect_no_error("returned a tensor");
    int64_t nd = tg_tensor_ndim(t);
    std::vector<int64_t> s;
    if (nd < 0 || nd > 4096) fail("the returned tensor has ndim " + std::to_string(nd)), nd = -1;
    else if (s.resize(size_t(nd)), tg_tensor_shape(t, s.data(), s.size()) != TG_OK) fail("tg_tensor_shape fails on the returned tensor"), nd = -1;
    if (nd >= 0 && oversized_shape(s)) fail("the returned tensor's nonzero dims multiply past int64: shape " + fmt_ints(s)), nd = -1;
    int64_t numel = tg_tensor_numel(t);
    tg_dtype d = TG_DTYPE_INVALID;
    if (nd >= 0) {
      unsigned __int128 p = 1;
      bool neg = false;
      for (auto x : s) {
        neg |= x < 0;
        p *= (unsigned __int128)(x < 0 ? 0 : x);
        if (p > (unsigned __int128)I64MAX) p = (unsigned __int128)I64MAX + 1;
      }
      if (neg) fail("the returned tensor has a negative dim: shape " + fmt_ints(s));
      else if (numel < 0 || (unsigned __int128)numel != p) fail("numel " + std::to_string(numel) + " disagrees with shape " + fmt_ints(s));
    }
    if (tg_tensor_dtype(t, &d) != TG_OK || !tg_dtype_name(d)) fail("the returned tensor has no valid dtype (" + std::to_string(int(d)) + ")");
    else if (numel > 0 && double(numel) * double(tg_dtype_size(d)) > 9.3e18) fail("numel * itemsize overflows int64: shape " + fmt_ints(s));
    std::vector<int64_t> want;
    int want_dtype = -1;
    if (nd >= 0 && predict(call, want, want_dtype)) {
      predicted++;
      if (want != s) fail("shape " + fmt_ints(s) + ", but the arguments give " + fmt_ints(want));
      if (want_dtype >= 0 && int(d) != want_dtype) fail("dtype " + std::to_string(int(d)) + ", but the header gives " + std::to_string(want_dtype));
    }
    const char* dev = tg_tensor_device(t);
    if (!dev || !*dev) fail("the returned tensor has no device");
    if (tg_last_error() != TG_OK) fail("querying the returned tensor set an error");
    if (numel >= 0 && numel <= kPoolMaxNumel) {
      pooled++;
      recent[recent_next++ % recent.size()] = t;
      if (pool.size() >= kPoolMax) {  // replace a random entry
        size_t i = r(pool.size());
        tg_tensor* old = pool[i];
        pool[i] = t;
        tg_tensor_release(old);
        if (!std::count(pool.begin(), pool.end(), old)) remember_dead(old);
      } else pool.push_back(t);
    } else {
      released_results++;
      tg_tensor_release(t);
      if (!std::count(pool.begin(), pool.end(), t)) remember_dead(t);
    }
  }
  void ret_expr(tg_expr* e) {
    if (!e) return expect_error("returned NULL");
    expect_no_error("returned an expression");
    int64_t lo = 0, hi = 0;
    if (tg_expr_bounds(e, &lo, &hi) != TG_OK) fail("tg_expr_bounds fails on the returned expression");
    else if (lo > hi) fail("the returned expression has bounds [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    if (exprs.size() >= kExprPoolMax) {
      size_t i = r(exprs.size());
      tg_expr* old = exprs[i];
      exprs[i] = e;
      tg_expr_release(old);
      if (!std::count(exprs.begin(), exprs.end(), old)) remember_dead(old);
    } else exprs.push_back(e);
  }
  // a node: it names its op, prints (or is refused as too deep) and sorts with itself last
  void ret_uop(tg_uop* u) {
    if (!u) return expect_error("returned NULL");
    expect_no_error("returned a node");
    if (!tg_uop_op(u)) fail("tg_uop_op fails on the returned node");
    if (tg_uop_id(u) == 0) fail("tg_uop_id is 0 for the returned node");
    if (tg_uop_print(u, nullptr, 0) < 0 && tg_last_error() != TG_ERROR_UNSUPPORTED) fail("tg_uop_print fails on the returned node");
    tg_clear_error();
    if (uops.size() >= kUopPoolMax) {
      size_t i = r(uops.size());
      tg_uop* old = uops[i];
      uops[i] = u;
      tg_uop_release(old);
      if (!std::count(uops.begin(), uops.end(), old)) remember_dead(old);
    } else uops.push_back(u);
  }
  void ret_u64(uint64_t v) {  // tg_uop_id: 0 exactly when the handle is not live
    const Arg* u = call.arg("u");
    bool live = u && u->state == Arg::Live;
    if (live && v == 0) fail("returned 0 for a live node");
    if (!live && v != 0) fail("returned " + std::to_string(v) + " for a handle that is not live");
    if (v) expect_no_error("returned an id");
    else expect_error("returned 0");
  }
  void ret_status(tg_status s) {
    tg_status e = tg_last_error();
    if (s == TG_OK) expect_no_error("returned TG_OK");
    else {
      if (s != e) fail("returned " + status_str(s) + " but tg_last_error() is " + status_str(e));
      if (s < TG_OK || s > TG_ERROR_INTERNAL) fail("returned " + std::to_string(int(s)) + ", not a tg_status the header defines");
      expect_error("returned an error status");
    }
    check_jit_plan(s);
  }
  // header: tg_dtype_name returns NULL for a value that is not a tg_dtype; that is its answer, not an error
  void ret_cstr(const char* s) {
    bool null_is_an_answer = !std::strcmp(call.fn, "tg_dtype_name");
    if (!s && !null_is_an_answer) return expect_error("returned NULL");
    if (s) {
      if (strnlen(s, 1 << 20) == (1 << 20)) fail("returned a string longer than 1 MiB (unterminated?)");
      if (std::strcmp(call.fn, "tg_last_error_message")) expect_no_error("returned a string");
    }
  }
  void ret_i64(int64_t v) {  // the header's int64 results (ndim, numel, render length) are >= 0, or -1 on error
    if (v >= 0) return expect_no_error(("returned " + std::to_string(v)).c_str());
    if (v != -1) fail("returned " + std::to_string(v) + " (negative results are -1 on error)");
    expect_error("returned -1");
  }
  void ret_int(int) {}
  void ret_size(size_t v) {  // header: tg_plan_kernel_count is 0 for a bad handle
    const Arg* p = call.arg("plan");
    if (!std::strcmp(call.fn, "tg_plan_kernel_count") && p && p->state != Arg::Live && v != 0) fail("returned " + std::to_string(v) + " for a handle that is not live");
  }
  static const char* state_name(Arg::HandleState s) {
    return s == Arg::Null ? "NULL" : s == Arg::Released ? "released" : s == Arg::Garbage ? "garbage" : "live";
  }
  void ret_jit(tg_jit* j) {
    const Arg* fn = call.arg("fn");
    if (!j) {
      if (fn && fn->i >= 0) fail("returned NULL for a non-NULL fn (the header: NULL if fn is NULL)");
      return expect_error("returned NULL");
    }
    expect_no_error("returned a jit");
    if (fn && fn->i < 0) fail("returned a jit for a NULL fn");
    if (int64_t n = tg_jit_call_count(j); n != 0) fail("a new jit has call count " + std::to_string(n));
    JitInfo info;
    info.fn = fn ? int(fn->i) : -1;
    if (const Arg* u = call.arg("userdata")) info.userdata = u->p;
    pool_jit(j, std::move(info));
  }
  void pool_jit(tg_jit* j, JitInfo info) {
    if (jits.size() >= kJitPoolMax) {  // replaces one that never ran where there is one (those that did are rarer)
      std::vector<size_t> fresh;
      for (size_t k = 0; k < jits.size(); k++)
        if (!jit_info[jits[k]].called) fresh.push_back(k);
      size_t i = fresh.empty() ? r(jits.size()) : pick(fresh);
      tg_jit* old = jits[i];
      jits[i] = j;
      tg_jit_release(old);
      remember_dead(old);
    } else jits.push_back(j);
    jit_info[j] = std::move(info);
  }
  void ret_plan(tg_plan* p) {
    const Arg* j = !std::strcmp(call.fn, "tg_jit_plan") ? call.arg("jit") : nullptr;
    if (p && j && j->state == Arg::Live && j->i < 2) fail("returned a plan for a jit that has not captured (" + std::to_string(j->i) + " calls)");
    if (!p) return expect_error("returned NULL");
    expect_no_error("returned a plan");
    check_plan(p, false);
    pool_plan(p, PlanInfo{j != nullptr, false});
  }
  void ret_optimizer(tg_optimizer* o) {
    if (!o) return expect_error("returned NULL");
    expect_no_error("returned an optimizer");
    if (tg_optimizer_params(o, nullptr, 0) < 1) fail("a returned optimizer has no params");
    pool_handle(optimizers, o);
  }
  void ret_state(tg_state* s) {
    if (!s) return expect_error("returned NULL");
    expect_no_error("returned a state");
    int64_t n = tg_state_count(s);
    for (int64_t i = 0; i < n; i++)
      if (!tg_state_name(s, size_t(i))) fail("a returned state has no name for entry " + std::to_string(i));
    pool_handle(states, s);
  }
  // an export: host memory of the tensor's shape, row-major, read through here; then freed by its deleter
  void ret_dlpack(DLManagedTensor* m) {
    if (!m) return expect_error("returned NULL");
    expect_no_error("returned a DLManagedTensor");
    dl_exported++;
    const DLTensor& d = m->dl_tensor;
    if (d.device.device_type != kDLCPU) fail("exported a tensor on DLPack device type " + std::to_string(int(d.device.device_type)));
    if (d.dtype.lanes != 1 || d.dtype.bits % 8 || !d.dtype.bits) fail("exported dtype lanes " + std::to_string(d.dtype.lanes) + ", bits " + std::to_string(d.dtype.bits));
    if (d.ndim < 0 || (d.ndim && (!d.shape || !d.strides))) fail("exported ndim " + std::to_string(d.ndim) + " without shape or strides");
    else {
      std::vector<int64_t> s(d.shape, d.shape + d.ndim);
      const Arg* t = call.arg("t");
      if (t && t->kind == Arg::Handle && t->state == Arg::Live && t->ints != s) fail("exported shape " + fmt_ints(s) + " of a tensor of shape " + fmt_ints(t->ints));
      int64_t n = 1, st = 1;  // a 0 dim counts as 1 in the strides, as numpy's do
      for (int64_t i = d.ndim - 1; i >= 0; i--) {
        if (s[size_t(i)] > 1 && d.strides[i] != st) fail("exported strides are not row-major");
        st *= std::max<int64_t>(s[size_t(i)], 1), n *= s[size_t(i)];
      }
      if (n > 0 && n <= kPoolMaxNumel) {
        std::vector<uint8_t> bytes(size_t(n) * d.dtype.bits / 8);
        std::memcpy(bytes.data(), static_cast<const char*>(d.data) + d.byte_offset, bytes.size());
      }
    }
    if (!m->deleter) return fail("the export has no deleter (it would leak)");
    m->deleter(m);
  }
  void pool_plan(tg_plan* p, PlanInfo info) {
    if (plans.size() >= kPlanPoolMax) {
      size_t i = r(plans.size());
      tg_plan* old = plans[i];
      plans[i] = p;
      tg_plan_release(old);
      remember_dead(old);
    } else plans.push_back(p);
    plan_info[p] = info;
  }
  // the fields of a tg_kernel_info that lie inside its first `size` bytes
  void check_kernel_info(const tg_kernel_info& k, size_t size, const std::string& which) {
    auto has = [&](size_t off, size_t sz) { return off + sz <= size; };
    auto bad = [&](const std::string& what) { fail(which + ": " + what); };
    if (has(offsetof(tg_kernel_info, name), sizeof k.name) && (!k.name || !*k.name || strnlen(k.name, 1 << 16) == (1 << 16))) bad("no name");
    if (has(offsetof(tg_kernel_info, source), sizeof k.source) && (!k.source || !*k.source)) bad("no source");
    if (has(offsetof(tg_kernel_info, buffer_nbytes), sizeof k.buffer_nbytes)) {
      if (k.n_buffers > 4096) bad("n_buffers " + std::to_string(k.n_buffers));
      else if (k.n_buffers && !k.buffer_nbytes) bad("buffer_nbytes is NULL with n_buffers " + std::to_string(k.n_buffers));
      else
        for (size_t i = 0; i < k.n_buffers; i++)  // ASan checks that the array is as long as n_buffers says
          if (k.buffer_nbytes[i] < 0) bad("buffer " + std::to_string(i) + " has " + std::to_string(k.buffer_nbytes[i]) + " bytes");
    }
    if (has(offsetof(tg_kernel_info, time_s), sizeof k.time_s) && !(k.time_s == -1 || (k.time_s >= 0 && k.time_s < 1e6))) bad("time_s " + fmt_double(k.time_s));
    if (has(offsetof(tg_kernel_info, threads), sizeof k.threads) && k.threads < 1) bad("threads " + std::to_string(k.threads));
  }
  // a live plan's kernels and memory as the header describes them; `ran`: every kernel has its time
  void check_plan(const tg_plan* p, bool ran) {
    size_t n = tg_plan_kernel_count(p);
    if (n > 100000) fail("the plan has " + std::to_string(n) + " kernels"), n = 0;
    for (size_t i = 0; i < n; i++) {
      tg_kernel_info k;
      std::memset(&k, 0xa5, sizeof k);
      k.struct_size = sizeof k;
      std::string which = "kernel " + std::to_string(i) + " of " + std::to_string(n);
      if (tg_plan_kernel(p, i, &k) != TG_OK) {
        fail("tg_plan_kernel fails for " + which + ": " + tg_last_error_message());
        break;
      }
      if (k.struct_size != sizeof k) fail(which + ": struct_size " + std::to_string(k.struct_size));
      check_kernel_info(k, sizeof k, which);
      if (ran && !(k.time_s >= 0)) fail(which + " has no time after tg_plan_run");
    }
    int64_t total = -1, peak = -1;
    if (tg_plan_memory(p, &total, &peak) != TG_OK) fail(std::string("tg_plan_memory fails on a live plan: ") + tg_last_error_message());
    else if (total < 0 || peak < 0 || peak > total) fail("plan memory: intermediates " + std::to_string(total) + " bytes, peak " + std::to_string(peak));
    if (tg_last_error() != TG_OK) fail("querying the plan set an error");
  }
  // what the header says about the JIT and plan functions beyond their status
  void check_jit_plan(tg_status s) {
    std::string_view fn = call.fn;
    bool is_jit = fn.rfind("tg_jit_", 0) == 0;
    if (!is_jit && fn.rfind("tg_plan_", 0) != 0) return;
    const Arg* h = call.arg(is_jit ? "jit" : "plan");
    if (!h || h->kind != Arg::Handle) return;
    if (h->state != Arg::Live) {
      if (s == TG_OK) fail(std::string("returned TG_OK for a ") + state_name(h->state) + " handle");
      if (g_cb.calls) fail(std::string("ran the jit's function for a ") + state_name(h->state) + " handle");
      return;
    }
    if (fn == "tg_jit_call") return check_jit_call(s, *h);
    if (s != TG_OK) return;
    if (fn == "tg_jit_reset" && tg_jit_call_count(static_cast<const tg_jit*>(h->p)) != 0) fail("the call count is not 0 after a reset");
    if (fn == "tg_plan_run") {  // header: a plan runs once; a jit's plan never (the jit runs its kernels)
      PlanInfo& pi = plan_info[h->p];
      if (pi.from_jit) fail("ran a jit's plan");
      if (pi.ran) fail("ran a plan a second time");
      pi.ran = true, plans_ran++;
      check_plan(static_cast<const tg_plan*>(h->p), true);
    }
    if (fn == "tg_plan_kernel") {
      const Arg *i = call.arg("i"), *out = call.arg("out");
      if (i->n >= h->n) fail("returned TG_OK for kernel " + std::to_string(i->n) + " of " + std::to_string(h->n));
      if (!out->p) return fail("returned TG_OK with out NULL");
      if (out->n < offsetof(tg_kernel_info, name) + sizeof(const char*)) fail("accepted struct_size " + std::to_string(out->n));
      auto* k = static_cast<const tg_kernel_info*>(out->p);
      size_t want = std::min(out->n, sizeof(tg_kernel_info));
      if (k->struct_size != want) fail("struct_size " + std::to_string(k->struct_size) + " after the call; the header gives " + std::to_string(want));
      else check_kernel_info(*k, want, "kernel " + std::to_string(i->n)), kernel_infos++;
    }
    if (fn == "tg_plan_memory") {
      auto *tp = static_cast<const int64_t*>(call.arg("intermediate_bytes")->p), *pp = static_cast<const int64_t*>(call.arg("peak_bytes")->p);
      if ((tp && *tp < 0) || (pp && *pp < 0) || (tp && pp && *pp > *tp))
        fail("intermediates " + (tp ? std::to_string(*tp) : "-") + " bytes, peak " + (pp ? std::to_string(*pp) : "-"));
    }
  }
  // a float32 input's values, read through a copy (so a lazy input stays lazy for the call)
  void snapshot_add_one_input(tg_tensor* x) {
    tg_dtype d = TG_DTYPE_INVALID;
    int64_t n = tg_tensor_numel(x);
    if (tg_tensor_dtype(x, &d) != TG_OK || d != TG_FLOAT32 || n < 0 || n > kPoolMaxNumel) return;
    tg_tensor* c = tg_tensor_contiguous(x);
    add_one_input.assign(size_t(n) + 1, 0.0f);
    if (c && tg_tensor_to_data(c, add_one_input.data(), size_t(n) * 4) == TG_OK) add_one_input_call = call_no;
    tg_tensor_release(c);
  }
  // add_one's output is its input + 1, at a replay too (the replay reads the new input's buffer); float32 only
  void check_add_one(tg_tensor* x, tg_tensor* y) {
    tg_dtype dy = TG_DTYPE_INVALID;
    int64_t n = tg_tensor_numel(x);
    if (add_one_input_call != call_no || n < 0 || add_one_input.size() != size_t(n) + 1) return;
    if (tg_tensor_dtype(y, &dy) != TG_OK || dy != TG_FLOAT32 || tg_tensor_numel(y) != n) return fail("add_one's output is not a float32 tensor of the input's size");
    const std::vector<float>& a = add_one_input;
    std::vector<float> b(size_t(n) + 1);
    if (tg_tensor_to_data(y, b.data(), size_t(n) * 4) != TG_OK) return fail(std::string("reading add_one's output: ") + tg_last_error_message());
    jit_values_checked++;
    for (int64_t i = 0; i < n; i++)
      if (!(b[size_t(i)] == a[size_t(i)] + 1.0f || (std::isnan(a[size_t(i)]) && std::isnan(b[size_t(i)]))))
        return fail("add_one's output[" + std::to_string(i) + "] is " + fmt_double(b[size_t(i)]) + " for input " + fmt_double(a[size_t(i)]));
  }
  // tg_jit_call: the function runs at a warm-up and a capture (once, with the call's counts and the JIT's userdata),
  // never at a replay; the call count moves by one on success only; every output slot is written on success
  void check_jit_call(tg_status s, const Arg& h) {
    const tg_jit* j = static_cast<const tg_jit*>(h.p);
    JitInfo& info = jit_info[j];
    double opt = 1;
    bool capturing = tg_get_option("JIT", &opt) != TG_OK || opt != 0;
    int64_t before = h.i, after = tg_jit_call_count(j);
    size_t n_in = call.arg("n_inputs")->n, n_out = call.arg("n_outputs")->n;
    if (g_cb.calls > 1) fail("the function ran " + std::to_string(g_cb.calls) + " times in one call");
    if (g_cb.calls && capturing && before >= 2) fail("a replay (the jit had " + std::to_string(before) + " calls) ran the function");
    if (g_cb.calls) {
      if (g_cb.n_inputs != n_in || g_cb.n_outputs != n_out)
        fail("the function got " + std::to_string(g_cb.n_inputs) + " inputs and " + std::to_string(g_cb.n_outputs) + " outputs");
      if (g_cb.userdata != info.userdata) fail("the function got userdata " + fmt_ptr(g_cb.userdata) + ", the jit was made with " + fmt_ptr(info.userdata));
      if (g_cb.dead_input) fail("the function got an input that is not a live handle");
    }
    if (s != TG_OK) {
      if (capturing && after != before) fail("a failed call moved the call count from " + std::to_string(before) + " to " + std::to_string(after));
      return;
    }
    if (capturing && after != before + 1) fail("the call count went from " + std::to_string(before) + " to " + std::to_string(after));
    if (!g_cb.calls && (before < 2 || !capturing)) fail("returned TG_OK without running the function (call " + std::to_string(before) + ")");
    for (size_t i = 0; i < n_out; i++)
      if (!out_slots || !out_slots[i]) return fail("returned TG_OK and left outputs[" + std::to_string(i) + "] NULL");
    jit_ok[std::min<int64_t>(before, 2)]++;
    auto* ins = static_cast<tg_tensor* const*>(call.arg("inputs")->p);
    if (info.fn == 0 && n_in >= 1 && n_out == 1) check_add_one(ins[0], out_slots[0]);
    if (capturing && before >= 2) return;
    // the inputs of a warm-up or capture, for replays
    info.called = true, info.n_outputs = n_out, info.shapes.clear(), info.dtypes.clear();
    for (size_t i = 0; i < n_in; i++) {
      std::vector<int64_t> shape(size_t(std::max<int64_t>(tg_tensor_ndim(ins[i]), 0)));
      tg_dtype d = TG_DTYPE_INVALID;
      tg_tensor_shape(ins[i], shape.data(), shape.size());
      tg_tensor_dtype(ins[i], &d);
      info.shapes.push_back(std::move(shape)), info.dtypes.push_back(int(d));
    }
  }

  // ---- pools ----
  void remember_dead(tg_tensor* t) {
    dead[dead_next++ % kDeadMax] = t;
    std::replace(recent.begin(), recent.end(), t, static_cast<tg_tensor*>(nullptr));
  }
  void remember_dead(tg_expr* e) { dead_exprs[dead_exprs_next++ % kDeadMax] = e; }
  void remember_dead(tg_uop* u) { dead_uops[dead_uops_next++ % kDeadMax] = u; }
  void remember_dead(tg_jit* j) { dead_jits[dead_jits_next++ % kDeadMax] = j, jit_info.erase(j); }
  void remember_dead(tg_plan* p) { dead_plans[dead_plans_next++ % kDeadMax] = p, plan_info.erase(p); }
  // JITs hold no pooled tensor and outlive a reset (keep_jits), so one warmed up in one stretch of calls is captured or
  // replayed in a later one: tg_jit_call realizes, so it comes about once in 5000 calls
  void clear_pools(bool keep_jits = false) {
    for (auto* t : pool) tg_tensor_release(t), remember_dead(t);
    for (auto* e : exprs) tg_expr_release(e), remember_dead(e);
    for (auto* u : uops) tg_uop_release(u), remember_dead(u);
    uops.clear();
    for (auto* p : plans) tg_plan_release(p), remember_dead(p);
    optimizers.clear();
    modules.clear();
    states.clear();
    onnx_models.clear();
    llms.clear();
    comms.clear();
    pool.clear(), exprs.clear(), plans.clear();
    if (keep_jits) return;
    for (auto* j : jits) tg_jit_release(j), remember_dead(j);
    jits.clear();
  }
  // fresh leaves: every dtype, 0-d, size-0 and small N-d shapes, values that are mostly small with some special ones
  void reset_pools() {
    clear_pools(true);
    static const std::vector<std::vector<int64_t>> shapes{{}, {}, {0}, {1}, {3}, {5}, {2, 3}, {3, 2}, {2, 1, 4}, {4, 4},
                                                          {1, 0, 2}, {3, 1}, {1, 3}, {2, 2, 2, 2}, {1, 1}, {16, 16}};
    for (int i = 0; i < 20; i++) {
      const auto& s = pick(shapes);
      tg_dtype d = tg_dtype(r(13));
      int64_t n = 1;
      for (auto x : s) n *= x;
      size_t isz = tg_dtype_size(d);
      std::vector<uint8_t> data(size_t(n) * isz + 1);
      for (int64_t k = 0; k < n; k++) {
        uint8_t* p = data.data() + size_t(k) * isz;
        if (d == TG_BOOL) *p = uint8_t(r(2));
        else if (pct(85)) {  // a small value of the dtype
          double v = double(ri(-4, 6));
          if (d == TG_FLOAT32) { float f = float(v) / 2; std::memcpy(p, &f, 4); }
          else if (d == TG_FLOAT64) { double f = v / 2; std::memcpy(p, &f, 8); }
          else if (d == TG_FLOAT16) { _Float16 f = _Float16(v / 2); std::memcpy(p, &f, 2); }
          else if (d == TG_BFLOAT16) { float f = float(v) / 2; uint32_t b; std::memcpy(&b, &f, 4); uint16_t h = uint16_t(b >> 16); std::memcpy(p, &h, 2); }
          else { int64_t iv = int64_t(v); std::memcpy(p, &iv, isz); }
        } else for (size_t b = 0; b < isz; b++) p[b] = uint8_t(rng());  // any bit pattern: NaNs, infinities, extremes
      }
      tg_tensor* t = tg_tensor_from_data(data.data(), size_t(n) * isz, d, s.data(), s.size(), pct(50) ? nullptr : "CPU");
      EXPECT_NE(t, nullptr) << "fresh leaf: " << tg_last_error_message();
      if (t) pool.push_back(t);
    }
    int64_t shape[2] = {2, 3};  // lazy constants too
    for (tg_tensor* t : {tg_tensor_full(shape, 2, 1.5, TG_FLOAT32, nullptr), tg_tensor_arange(0, 6, 1, TG_INT32, nullptr),
                         tg_tensor_eye(3, TG_FLOAT64, nullptr), tg_tensor_zeros(shape, 0, TG_INT8, nullptr)})
      if (t) pool.push_back(t);
    for (tg_expr* e : {tg_expr_variable("x", 0, 10), tg_expr_variable("y", -5, 5), tg_expr_variable("z", I64MIN, I64MAX),
                       tg_expr_const(0), tg_expr_const(1), tg_expr_const(3), tg_expr_const(-7), tg_expr_const(I64MIN), tg_expr_const(I64MAX)})
      if (e) exprs.push_back(e);
    // with no JITs left, one per function, the first (add_one) warmed up and captured so replays come early; the plan
    // of a captured JIT; a plan of a kernel
    const int64_t shape23[2] = {2, 3};
    tg_tensor* x = tg_tensor_full(shape23, 2, 1.5, TG_FLOAT32, nullptr);
    if (jits.empty()) {
      for (size_t k = 0; k < kNumJitFns; k++) {
        tg_jit* j = tg_jit_create(kJitFns[k].fn, &g_userdata);
        EXPECT_NE(j, nullptr) << "tg_jit_create: " << tg_last_error_message();
        if (j) pool_jit(j, JitInfo{int(k), &g_userdata});
      }
      tg_jit* j = jits.empty() ? nullptr : jits[0];
      for (int c = 0; c < 2 && x && j; c++) {
        tg_tensor* y = nullptr;
        EXPECT_EQ(tg_jit_call(j, &x, 1, &y, 1), TG_OK) << "warming up a jit: " << tg_last_error_message();
        if (y) pool.push_back(y);
      }
      double opt = 1;
      if (j && tg_jit_call_count(j) == 2) {
        JitInfo& info = jit_info[j];
        info.called = true, info.shapes = {{2, 3}}, info.dtypes = {TG_FLOAT32}, info.n_outputs = 1;
        if (tg_get_option("JIT", &opt) == TG_OK && opt != 0) {
          tg_plan* p = tg_jit_plan(j);
          EXPECT_NE(p, nullptr) << "tg_jit_plan after a capture: " << tg_last_error_message();
          if (p) pool_plan(p, PlanInfo{true, false});
        }
      }
    }
    for (auto* j : jits)
      if (tg_jit_call_count(j) >= 2 && plans.empty())
        if (tg_plan* p = tg_jit_plan(j)) pool_plan(p, PlanInfo{true, false});  // NULL for a capture with no kernels
    tg_tensor* y = x ? tg_tensor_mul_scalar(x, 3.0) : nullptr;
    tg_plan* p = y ? tg_plan_create(&y, 1) : nullptr;
    EXPECT_NE(p, nullptr) << "tg_plan_create: " << tg_last_error_message();
    if (p) pool_plan(p, PlanInfo{false, false});
    for (tg_tensor* t : {x, y})
      if (t) pool.push_back(t);
    tg_clear_error();
  }
};

#include "capi_calls.inc"

uint64_t env_u64(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  uint64_t x = std::strtoull(v, &end, 0);
  return end && *end == 0 ? x : dflt;
}

TEST(FuzzCApi, EveryFunctionWithRandomAndBoundaryArguments) {
  const uint64_t seed = env_u64("TG_FUZZ_SEED", kDefaultSeed), total = env_u64("TG_FUZZ_CALLS", kDefaultCalls);
  const size_t nfns = std::size(kCApiCalls);
  std::printf("[ FUZZ     ] seed %llu, %llu calls over %zu functions (TG_FUZZ_SEED / TG_FUZZ_CALLS override)\n", (unsigned long long)seed,
              (unsigned long long)total, nfns);
  std::fflush(stdout);
  std::vector<const FuzzFn*> cheap, realizing;
  for (auto& fn : kCApiCalls) (fn.realizing ? realizing : cheap).push_back(&fn);
  ASSERT_FALSE(cheap.empty());

  CrashReporter crash_reporter;
  ::setenv("TG_MPI_LIB", "/nonexistent/libmpi-for-the-fuzzer.so", 1);  // no MPI in this process (FuzzCtx::comm)
  FuzzCtx f(seed);
  std::vector<uint64_t> per_fn(nfns, 0);
  uint64_t realize_calls = 0;
  double realize_secs = 0;
  uint64_t kernels_compiled = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < total && f.nfailures < 200; i++) {
    if (i % kResetEvery == 0) f.reset_pools();
    // every function once in table order first, then cheap ones at random with realizing ones one call in kRealizeEvery
    const FuzzFn* fn = i < nfns ? &kCApiCalls[i] : i % kRealizeEvery == kRealizeEvery - 1 && !realizing.empty() ? f.pick(realizing) : f.pick(cheap);
    f.call_no = i, f.call.fn = fn->name, f.realizing = fn->realizing, f.call.args.clear(), f.keep.clear(), f.strs.clear();
    auto c0 = std::chrono::steady_clock::now();
    tg_counters k0{sizeof(tg_counters)}, k1{sizeof(tg_counters)};
    if (fn->realizing) tg_counters_get(&k0);
    fn->call(f);
    if (fn->realizing && tg_counters_get(&k1) == TG_OK) kernels_compiled += k1.compile_count - k0.compile_count;
    per_fn[size_t(fn - kCApiCalls)]++;
    if (fn->realizing) realize_calls++, realize_secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  }
  f.clear_pools();
  tg_clear_error();
  // every imported DLManagedTensor is let go once no tensor uses its memory
  EXPECT_EQ(g_dl_live.size(), 0u) << "DLPack deleters not called by the end: the library keeps imported memory alive";
  std::printf("[ FUZZ     ] dlpack: %llu imports (%llu deleters ran), %llu exports\n", (unsigned long long)f.dl_imported, (unsigned long long)g_dl_deleted,
              (unsigned long long)f.dl_exported);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t ran = std::accumulate(per_fn.begin(), per_fn.end(), uint64_t(0));
  std::printf("[ FUZZ     ] %llu calls (%llu realizing: %llu kernels compiled in %.1f s) in %.1f s: %llu returned errors, %llu tensors "
              "pooled, %llu large results released, %llu result shapes checked against their arguments\n",
              (unsigned long long)ran, (unsigned long long)realize_calls, (unsigned long long)kernels_compiled, realize_secs, secs,
              (unsigned long long)f.errors, (unsigned long long)f.pooled, (unsigned long long)f.released_results, (unsigned long long)f.predicted);
  std::printf("[ FUZZ     ] jits: %llu warm-ups, %llu captures, %llu replays succeeded (%llu add_one results checked); plans: %llu ran, "
              "%llu kernel infos read\n",
              (unsigned long long)f.jit_ok[0], (unsigned long long)f.jit_ok[1], (unsigned long long)f.jit_ok[2], (unsigned long long)f.jit_values_checked,
              (unsigned long long)f.plans_ran, (unsigned long long)f.kernel_infos);
  if (f.nfailures > 30) ADD_FAILURE() << f.nfailures << " failures in all (the first 30 are shown)";
  if (total >= nfns) {
    for (size_t i = 0; i < nfns; i++) EXPECT_GT(per_fn[i], 0u) << kCApiCalls[i].name << " was never called";
  }
}

}  // namespace
