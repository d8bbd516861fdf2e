#include "renderer/cstyle.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace tg {

// Per dialect: the headers, 32-bit float <-> bits, and how a helper function is declared.
static const char* kCHead = R"(#include <math.h>
#include <stdint.h>
#include <string.h>
#define TG_FN static inline
TG_FN uint32_t tg_f2u(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
TG_FN float tg_u2f(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
)";
static const char* kCudaHead = R"(typedef unsigned int uint32_t;
typedef unsigned short uint16_t;
#define TG_FN static __device__ __forceinline__
TG_FN uint32_t tg_f2u(float f) { return __float_as_uint(f); }
TG_FN float tg_u2f(uint32_t b) { return __uint_as_float(b); }
template <class T, class F> TG_FN T tg_bitcast(F f) { union { F f; T t; } u; u.f = f; return u.t; }
)";
static const char* kCLHead = R"(typedef uint uint32_t;
typedef ushort uint16_t;
#define TG_FN inline
TG_FN uint32_t tg_f2u(float f) { return as_uint(f); }
TG_FN float tg_u2f(uint32_t b) { return as_float(b); }
)";
// float16 and bfloat16 are stored as 16-bit patterns and computed in float, rounded after every op
static const char* kHalf = R"(TG_FN float tg_h2f_sw(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, b;
  if (e == 0) { if (m == 0) b = s; else { e = 113; while (!(m & 0x400)) { m <<= 1; e--; } b = s | (e << 23) | ((m & 0x3ff) << 13); } }
  else if (e == 31) b = s | 0x7f800000u | (m << 13);
  else b = s | ((e + 112) << 23) | (m << 13);
  return tg_u2f(b);
}
TG_FN uint16_t tg_f2h_sw(float f) {
  uint32_t b = tg_f2u(f);
  uint32_t s = (b >> 16) & 0x8000, a = b & 0x7fffffffu;
  if (a > 0x7f800000u) { uint32_t m = (a >> 13) & 0x3ff; return (uint16_t)(s | 0x7c00 | (m ? m : 0x200)); } /* NaN keeps its payload */
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00);
  if (a < 0x38800000u) { /* subnormal half: round to nearest even in units of 2^-24 */
    float q = tg_u2f(a) * 16777216.0f; uint32_t r = (uint32_t)q; float fr = q - (float)r;
    if (fr > 0.5f || (fr == 0.5f && (r & 1))) r++;
    return (uint16_t)(s | r);
  }
  uint32_t r = a + 0xc8000fffu + ((a >> 13) & 1); return (uint16_t)(s | (r >> 13));
}
)";
// the C and OpenCL conversions are the software ones
static const char* kSoftHalf = R"(#define tg_h2f tg_h2f_sw
#define tg_f2h tg_f2h_sw
)";
// CUDA converts with the hardware's cvt, except NaNs, whose payloads cvt doesn't keep (a bitcast must)
static const char* kCudaHalf = R"(TG_FN float tg_h2f(uint16_t h) {
  if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) return tg_h2f_sw(h);
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
TG_FN uint16_t tg_f2h(float f) {
  if (f != f) return tg_f2h_sw(f);
  uint16_t h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
)";
static const char* kBFloat = R"(TG_FN float tg_bf2f(uint16_t h) { return tg_u2f((uint32_t)h << 16); }
TG_FN uint16_t tg_f2bf(float f) {
  uint32_t b = tg_f2u(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x40);
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
}
TG_FN float tg_hround(float f) { return tg_h2f(tg_f2h(f)); }
TG_FN float tg_bfround(float f) { return tg_bf2f(tg_f2bf(f)); }
)";

static bool is16(DType d) { return d.scalar == Scalar::Float16 || d.scalar == Scalar::BFloat16; }

// What tells the C dialects apart, as data: a dialect is an entry of kDialects, in the order of enum Dialect.
struct Spelling {
  std::array<const char*, 9> ints;  // Bool, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64
  const char* bool_storage;         // OpenCL kernels can't take pointers to bool: bools are stored as uchar there
  const char* i64_suffix = "ll";
  const char *head, *half = kSoftHalf;  // the prelude, and how 16-bit floats convert (kHalf and kBFloat go between)
  const char* kernel;                   // the kernel function's declaration, up to its name
  const char *buffer = "", *restrict_kw = "restrict", *shared = "", *align = "";  // a buffer parameter's; a DEFINE_LOCAL's
  const char* barrier = nullptr;      // none: one thread runs the body, so program order is the order
  std::array<const char*, 2> ids{};  // the work-group and work-item id along dimension %c (a letter of `dims`)
  const char* dims = "";
  bool vectors = false;          // GCC vector extensions hold vectors (the CPU); GPUs hold none
  bool int_index = false;        // GPUs do 64-bit integer math in several instructions: index values whose range fits are int
  bool overloaded_math = false;  // exp2 of a float is exp2, not exp2f
  bool nonfinite_bits = false;   // inf and NaN from their bits: no math.h (NVRTC)
  // exp2/log2/sin in hardware (GPUs); on the CPU they are the LLVM renderer's polynomials, so both CPU paths give the same bits
  bool native_math = false;
  const char* dbl_cast = "";  // before NAN and INFINITY of a double (OpenCL's are float)
  std::string (*bitcast)(const std::string& to, const std::string& from, const std::string& a);
  enum class Wmma { None, MmaSync, Local } wmma = Wmma::None;  // tensor cores: mma.sync, or through local memory (EMULATE=CUDA)
  const char* fp64 = "";  // what enables doubles where a kernel uses them
  bool entry = false;     // a `tg_entry` trampoline (the CPU calls every kernel the same way)
};
static const Spelling kDialects[] = {
    {.ints = {"_Bool", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int", "long long", "unsigned long long"},
     .bool_storage = "_Bool", .head = kCHead, .kernel = "void ", .align = " __attribute__((aligned(64)))", .vectors = true,
     .bitcast = nullptr,  // a helper function per type pair (CRenderer::c_bitcast): ISO C has no statement expressions
     .entry = true},
    {.ints = {"bool", "signed char", "unsigned char", "short", "unsigned short", "int", "unsigned int", "long long", "unsigned long long"},
     .bool_storage = "bool", .head = kCudaHead, .half = kCudaHalf, .kernel = "extern \"C\" __global__ void ", .restrict_kw = "__restrict__",
     .shared = "__shared__ ", .barrier = "__syncthreads();", .ids = {"blockIdx.%c", "threadIdx.%c"}, .dims = "xyz", .int_index = true,
     .nonfinite_bits = true, .native_math = true,
     .bitcast = [](const std::string& to, const std::string&, const std::string& a) { return "tg_bitcast<" + to + ">(" + a + ")"; },
     .wmma = Spelling::Wmma::MmaSync},
    {.ints = {"bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong"}, .bool_storage = "uchar", .i64_suffix = "l",
     .head = kCLHead, .kernel = "__kernel void ", .buffer = "__global ", .shared = "__local ", .barrier = "barrier(CLK_LOCAL_MEM_FENCE);",
     .ids = {"get_group_id(%c)", "get_local_id(%c)"}, .dims = "012", .int_index = true, .overloaded_math = true, .native_math = true,
     .dbl_cast = "(double)",
     .bitcast = [](const std::string& to, const std::string&, const std::string& a) {  // OpenCL names as_<builtin type>
       return "as_" + (to == "uint16_t" ? std::string("ushort") : to) + "(" + a + ")";
     },
     .wmma = Spelling::Wmma::Local, .fp64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"},
};

// the type values of `d` are computed in (16-bit floats compute in float)
static std::string ctype(DType d, const Spelling& sp) {
  if (d.scalar <= Scalar::UInt64) return sp.ints[size_t(d.scalar)];
  return d.scalar == Scalar::Float64 ? "double" : d.scalar == Scalar::Void ? "void" : "float";
}
static std::string storage_type(DType d, const Spelling& sp) { return is16(d) ? "uint16_t" : dtypes::is_bool(d) ? sp.bool_storage : ctype(d, sp); }
// 16-bit floats are stored as their bits and computed in float: the conversions between the two
static std::string from_storage(DType d, const std::string& v) {
  return d.scalar == Scalar::Float16 ? "tg_h2f(" + v + ")" : d.scalar == Scalar::BFloat16 ? "tg_bf2f(" + v + ")" : v;
}
static std::string to_storage(DType d, const std::string& v) {
  return d.scalar == Scalar::Float16 ? "tg_f2h(" + v + ")" : d.scalar == Scalar::BFloat16 ? "tg_f2bf(" + v + ")" : v;
}
static std::string round16(DType d, const std::string& x) {
  return d.scalar == Scalar::Float16 ? "tg_hround(" + x + ")" : d.scalar == Scalar::BFloat16 ? "tg_bfround(" + x + ")" : x;
}
static std::string int_literal(DType d, int64_t v, const Spelling& sp) {
  const char* sfx = sp.i64_suffix;
  if (dtypes::is_unsigned(d)) return strformat("%llu", (unsigned long long)v) + "u" + sfx;
  return v == INT64_MIN ? strformat("(-9223372036854775807%s-1)", sfx) : strformat("%lld", (long long)v) + sfx;
}
static std::string literal(DType d, double v, const Spelling& sp) {
  if (dtypes::is_float(d)) {
    bool dbl = d.scalar == Scalar::Float64;
    if (sp.nonfinite_bits && !std::isfinite(v)) {
      const char* bits = std::isnan(v) ? (dbl ? "0x7ff8000000000000ll" : "0x7fc00000") : v > 0 ? (dbl ? "0x7ff0000000000000ll" : "0x7f800000")
                                                                                              : (dbl ? "(long long)0xfff0000000000000ull" : "(int)0xff800000u");
      return std::string(dbl ? "__longlong_as_double(" : "__int_as_float(") + bits + ")";
    }
    std::string cast = dbl ? sp.dbl_cast : "";
    if (std::isnan(v)) return "(" + cast + "NAN)";
    if (std::isinf(v)) return v > 0 ? "(" + cast + "INFINITY)" : "(-" + cast + "INFINITY)";
    std::string t = strformat(d.scalar == Scalar::Float64 ? "%.17g" : "%.9g", v);
    if (t.find_first_of(".e") == std::string::npos) t += ".0";
    return d.scalar == Scalar::Float64 ? t : t + "f";
  }
  if (dtypes::is_bool(d)) return v != 0 ? "1" : "0";
  if (d.scalar == Scalar::UInt64 || d.scalar == Scalar::Int64) return int_literal(d, int64_t(v), sp);
  if (d.scalar == Scalar::UInt32) return strformat("%lluu", (unsigned long long)v);
  return v < 0 ? strformat("(%lld)", (long long)v) : strformat("%lld", (long long)v);
}

std::string c_literal(DType d, const void* bytes) {
  const Spelling& sp = kDialects[int(Dialect::C)];
  auto get = [&](auto v) {
    std::memcpy(&v, bytes, sizeof v);
    return v;
  };
  switch (d.scalar) {
    case Scalar::Bool: return get(uint8_t()) ? "1" : "0";
    case Scalar::Int8: return literal(d, get(int8_t()), sp);
    case Scalar::UInt8: return literal(d, get(uint8_t()), sp);
    case Scalar::Int16: return literal(d, get(int16_t()), sp);
    case Scalar::UInt16:
    case Scalar::Float16:
    case Scalar::BFloat16: return strformat("0x%04x", unsigned(get(uint16_t())));
    case Scalar::Int32: return literal(d, get(int32_t()), sp);
    case Scalar::UInt32: return literal(d, get(uint32_t()), sp);
    case Scalar::Int64:
    case Scalar::UInt64: return int_literal(d, get(int64_t()), sp);  // from the bits: a double would round them
    case Scalar::Float32: return literal(d, get(float()), sp);
    case Scalar::Float64: return literal(d, get(double()), sp);
    default: fail(TG_ERROR_UNSUPPORTED, "C renderer: no literal for " + d.name());
  }
}

// WMMA: a function per tensor core shape and dtypes, d[] = A * B + C over a warp. CUDA issues mma.sync (operands packed
// two 16-bit values per register, the lower element in the lower half); OpenCL (EMULATE=CUDA) has the warp's work-items
// write their fragments to local memory in mma.sync's layout, each then computing its own elements of D.
static std::string wmma_fn(const UOp* u) {
  auto& g = u->arg_ints();
  return strformat("tg_wmma_%lld_%lld_%lld_", (long long)g[0], (long long)g[1], (long long)g[2]) + std::string(u->src[0]->dtype.scalar_of().name()) +
         "_" + std::string(u->dtype.scalar_of().name());
}
static constexpr int kWmmaScratch = 16 * 16 + 16 * 8;  // floats per warp in the emulation: A (16xK), B (Kx8)
static std::string wmma_helper(const UOp* u, const Spelling& sp) {
  auto& g = u->arg_ints();
  DType in = u->src[0]->dtype.scalar_of(), out = u->dtype.scalar_of();
  int na = u->src[0]->dtype.count, nb = u->src[1]->dtype.count, nc = u->dtype.count;
  const int64_t K = g[2];
  bool tf32 = in.scalar == Scalar::Float32;
  bool shape = g[0] == 8 && g[1] == 16 && ((K == 16 && na == 8 && nb == 4) || (K == 8 && na == 4 && nb == 2)) && nc == 4;
  TG_CHECK(shape && (is16(in) || (tf32 && K == 8)), TG_ERROR_UNSUPPORTED,
           "C renderer: no WMMA for tensor core " + wmma_fn(u) + " (m16n8k16, m16n8k8)");
  TG_CHECK(sp.wmma != Spelling::Wmma::None, TG_ERROR_UNSUPPORTED, "C renderer: WMMA on a CPU target");
  // mma.sync takes 16-bit A and B as their bit patterns (the call passes a loaded value's bits as they are); the
  // emulation, and tf32, floats
  bool bits = sp.wmma == Spelling::Wmma::MmaSync && is16(in);
  std::string sig = "TG_FN void " + wmma_fn(u) + "(float* d";
  for (auto [p, n] : {std::pair{'a', na}, std::pair{'b', nb}, std::pair{'c', nc}})
    for (int i = 0; i < n; i++) sig += strformat(", %s %c%d", bits && p != 'c' ? "uint16_t" : "float", p, i);
  if (sp.wmma == Spelling::Wmma::Local) {
    // where element e of A and of B sits in its matrix (row, column), from the fragment layouts (renderer/tc.cpp)
    std::string arow, acol, brow;
    if (K == 16) arow = "g + 8 * ((e >> 1) & 1)", acol = "2 * t + (e & 1) + 8 * (e >> 2)", brow = "2 * t + (e & 1) + 8 * (e >> 1)";
    else if (!tf32) arow = "g + 8 * (e >> 1)", acol = "2 * t + (e & 1)", brow = "2 * t + (e & 1)";
    else arow = "g + 8 * (e & 1)", acol = "t + 4 * (e >> 1)", brow = "t + 4 * e";
    std::string body = strformat(R"( {
  float a[%d], b[%d], c[4] = {c0, c1, c2, c3};
)", na, nb);
    for (int i = 0; i < na; i++) body += strformat("  a[%d] = a%d;\n", i, i);
    for (int i = 0; i < nb; i++) body += strformat("  b[%d] = b%d;\n", i, i);
    body += strformat(R"(  int g = lane >> 2, t = lane & 3;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int e = 0; e < %d; e++) s[(%s) * %lld + %s] = a[e];
  for (int e = 0; e < %d; e++) s[256 + (%s) * 8 + g] = b[e];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int e = 0; e < 4; e++) {
    int row = g + 8 * (e >> 1), col = 2 * t + (e & 1);
    float acc = c[e];
    for (int k = 0; k < %lld; k++) acc += s[row * %lld + k] * s[256 + k * 8 + col];
    d[e] = %s(acc);
  }
}
)",
                      na, arow.c_str(), (long long)K, acol.c_str(), nb, brow.c_str(), (long long)K, (long long)K,
                      out.scalar == Scalar::Float16 ? "tg_hround" : "");
    return sig + ", __local float* s, int lane)" + body;
  }
  std::string b = sig + ") {\n";
  int ra = tf32 ? na : na / 2, rb = tf32 ? nb : nb / 2;  // registers: two 16-bit values in each, or one tf32
  auto regs_of = [&](char p, int n) {
    for (int i = 0; i < n; i++) {
      if (tf32) b += strformat("  uint32_t r%c%d; asm(\"cvt.rna.tf32.f32 %%0, %%1;\" : \"=r\"(r%c%d) : \"f\"(%c%d));\n", p, i, p, i, p, i);
      else b += strformat("  uint32_t r%c%d = (uint32_t)%c%d | (uint32_t)%c%d << 16;\n", p, i, p, 2 * i, p, 2 * i + 1);
    }
  };
  regs_of('a', ra), regs_of('b', rb);
  bool f32 = out.scalar == Scalar::Float32;
  int ncr = f32 ? 4 : 2;  // C/D registers
  const char* ti = tf32 ? "tf32" : in.scalar == Scalar::BFloat16 ? "bf16" : "f16";
  const char* to = f32 ? "f32" : "f16";
  auto regs = [](int from, int n) {
    std::string r = "{";
    for (int i = 0; i < n; i++) r += strformat("%s%%%d", i ? "," : "", from + i);
    return r + "}";
  };
  std::string ptx = strformat("mma.sync.aligned.m16n8k%lld.row.col.%s.%s.%s.%s ", (long long)K, to, ti, ti, to) + regs(0, ncr) + ", " +
                    regs(ncr, ra) + ", " + regs(ncr + ra, rb) + ", " + regs(0, ncr) + ";";
  std::string outs, ins;
  if (f32) {
    b += "  d[0] = c0, d[1] = c1, d[2] = c2, d[3] = c3;\n";
    for (int i = 0; i < 4; i++) outs += strformat("%s\"+f\"(d[%d])", i ? ", " : "", i);
  } else {
    b += "  uint32_t rc[2] = {(uint32_t)tg_f2h(c0) | (uint32_t)tg_f2h(c1) << 16, (uint32_t)tg_f2h(c2) | (uint32_t)tg_f2h(c3) << 16};\n";
    outs = "\"+r\"(rc[0]), \"+r\"(rc[1])";
  }
  for (int i = 0; i < ra; i++) ins += strformat("%s\"r\"(ra%d)", i ? ", " : "", i);
  for (int i = 0; i < rb; i++) ins += strformat(", \"r\"(rb%d)", i);
  b += "  asm(\"" + ptx + "\" : " + outs + " : " + ins + ");\n";
  if (!f32)
    for (int i = 0; i < 4; i++) b += strformat("  d[%d] = tg_h2f((uint16_t)(rc[%d] >> %d));\n", i, i / 2, 16 * (i % 2));
  return b + "}\n";
}

// vectors are GCC/clang vector extensions; the devectorizer leaves only these types and ops as vectors
static bool c_vector_scalar(DType d) { return !is16(d) && !dtypes::is_bool(d) && d.scalar != Scalar::Void; }

struct CRenderer {
  const LinearProgram& lp;
  const Spelling& sp;
  int prefetch_bytes = 0;  // Target's
  std::string ctype(DType d) const { return tg::ctype(d, sp); }
  std::string storage_type(DType d) const { return tg::storage_type(d, sp); }
  std::string from_storage(DType d, const std::string& v) const {
    return dtypes::is_bool(d) && storage_type(d) != ctype(d) ? "((" + ctype(d) + ")" + v + ")" : tg::from_storage(d, v);
  }
  std::string literal(DType d, double v) const { return tg::literal(d, v, sp); }
  std::string fn(DType d, const char* name) const { return std::string(name) + (d.scalar == Scalar::Float64 || sp.overloaded_math ? "" : "f"); }
  std::string i64() const { return ctype(dtypes::int64); }
  std::unordered_map<const UOp*, std::string> names;
  std::unordered_set<const UOp*> operand_bits;  // loads of a tensor core's 16-bit operands (CUDA)
  std::unordered_map<const UOp*, std::string> bits;  // their bits' names
  std::map<std::string, std::string> typedefs, helpers;
  std::string out;
  std::string type(DType d) {
    if (d.count == 1) return d == dtypes::index ? i64() : ctype(d);
    std::string base = ctype(d.scalar_of()), nm = "tg_" + std::string(d.scalar_of().name()) + "x" + std::to_string(d.count);
    typedefs[nm] = "typedef " + base + " " + nm + " __attribute__((vector_size(" + std::to_string(d.itemsize()) + ")));";
    return nm;
  }
  // GPUs do 64-bit integer math in several instructions: index values whose whole range fits int32 are ints there
  std::string value_type(const UOpRef& u) {
    if (sp.int_index && u->dtype == dtypes::index && u->vmin() >= INT32_MIN && u->vmax() <= INT32_MAX) return "int";
    return type(u->dtype);
  }
  std::string lanes(DType d, const std::vector<std::string>& v) {
    std::string s = "((" + type(d) + "){";
    for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + v[i];
    return s + "})";
  }
  int indent = 1;
  int counter = 0;
  static bool reg_load(const UOpRef& u) { return u->op == Ops::LOAD && u->src[0]->dtype.addrspace == AddrSpace::Reg; }

  std::string r(const UOpRef& u) {
    if (auto it = names.find(u.get()); it != names.end()) return it->second;
    if (u->op == Ops::CONST && u->dtype.count > 1)
      return lanes(u->dtype, std::vector<std::string>(u->dtype.count, r(u->replace_dtype(u->dtype.scalar_of()))));
    if (u->op == Ops::CONST && dtypes::is_int(u->dtype)) {  // exact: from the int64 bits, not through double
      int64_t v = std::get<int64_t>(u->arg);
      if (sp.int_index && u->dtype == dtypes::index && v >= 0 && v <= INT32_MAX) return std::to_string(v);  // keeps int index math int
      return int_literal(dtypes::is_unsigned(u->dtype) ? dtypes::uint64 : dtypes::int64, v, sp);
    }
    if (u->op == Ops::CONST) return literal(u->dtype, u->const_value());
    if (u->op == Ops::AFTER || reg_load(u)) return r(u->src[0]);  // a register is read by its name
    return expr(u);  // a loop's bound, an INDEX: rendered inline
  }
  std::string index(const UOpRef& idx) { return r(idx->src[0]) + "[" + r(idx->src[1]) + "]"; }
  // memcpy in small static functions (compilers inline them): unaligned vector loads and bitcasts in ISO C, which has no
  // statement expressions
  std::string vector_load(DType d) {
    std::string t = type(d), nm = "tg_load_" + t.substr(3);
    if (!helpers.count(nm)) helpers[nm] = "TG_FN " + t + " " + nm + "(const void* p) { " + t + " v; memcpy(&v, p, sizeof v); return v; }\n";
    return nm;
  }
  std::string c_bitcast(const std::string& to, const std::string& from, const std::string& a) {
    auto id = [](std::string s) {
      std::replace(s.begin(), s.end(), ' ', '_');
      return s;
    };
    std::string nm = "tg_bits_" + id(to) + "_" + id(from);
    if (!helpers.count(nm)) helpers[nm] = "TG_FN " + to + " " + nm + "(" + from + " a) { " + to + " b; memcpy(&b, &a, sizeof b); return b; }\n";
    return nm + "(" + a + ")";
  }
  // a read `v` under its INDEX's gate, if it has one: `zero` where the gate is false
  std::string gated(const UOpRef& idx, const std::string& v, const std::string& zero) {
    return idx->src.size() > 2 ? "(" + r(idx->src[2]) + "?" + v + ":" + zero + ")" : v;
  }
  std::string expr(const UOpRef& u) {
    auto& s = u->src;
    DType d = u->dtype;
    auto bin = [&](const char* op) { return "(" + r(s[0]) + op + r(s[1]) + ")"; };
    switch (u->op) {
      case Ops::LOAD: {
        const UOpRef& idx = s[0];
        std::string v = d.count > 1 ? vector_load(d) + "(&" + index(idx) + ")" : from_storage(d, index(idx));
        std::string zero = d.count > 1 ? r(UOp::const_(d.scalar_of(), 0)->replace_dtype(d)) : literal(d, 0);
        return gated(idx, v, zero);
      }
      case Ops::VECTORIZE: {
        std::vector<std::string> v;
        for (auto& x : s) v.push_back(r(x));
        return lanes(d, v);
      }
      case Ops::GEP: {
        std::vector<std::string> v;
        for (auto l : u->arg_ints()) v.push_back(r(s[0]) + "[" + std::to_string(l) + "]");
        return d.count == 1 ? v[0] : lanes(d, v);
      }
      case Ops::ADD: return round16(d, bin("+"));
      case Ops::SUB: return round16(d, bin("-"));
      case Ops::MUL: return round16(d, bin("*"));
      case Ops::FDIV: return round16(d, bin("/"));
      case Ops::IDIV: return bin("/");
      case Ops::MOD: return bin("%");
      case Ops::CMPLT: return bin("<");
      case Ops::CMPNE: return bin("!=");
      case Ops::CMPEQ: return bin("==");
      case Ops::AND: return bin("&");
      case Ops::OR: return bin("|");
      case Ops::XOR: return bin("^");
      case Ops::SHL: return bin("<<");
      case Ops::SHR: return bin(">>");
      case Ops::NEG: return "(-" + r(s[0]) + ")";
      case Ops::WHERE: return "(" + r(s[0]) + "?" + r(s[1]) + ":" + r(s[2]) + ")";
      case Ops::MULACC: {  // fused, one rounding, for floats (Target::fma): C99's fma
        if (!dtypes::is_float(d)) return "(" + r(s[0]) + "*" + r(s[1]) + "+" + r(s[2]) + ")";
        std::string args = "(" + r(s[0]) + "," + r(s[1]) + "," + r(s[2]) + ")";
        if (d.count == 1) return round16(d, fn(d, "fma") + args);
        // a vector, in a helper: clang fuses a vector a*b+c that it may contract into vector FMAs (the kernels' targets
        // have FMA); elsewhere (GCC) each lane's fmaf, which its SLP vectorizer joins where it can
        std::string t = type(d), nm = "tg_fma_" + t.substr(3);  // type(): "tg_float32x16"
        if (!helpers.count(nm)) {
          std::string lanes;
          for (int i = 0; i < d.count; i++)
            lanes += (i ? ", " : "") + strformat("%s(a[%d], b[%d], c[%d])", fn(d.scalar_of(), "fma").c_str(), i, i, i);
          helpers[nm] = "TG_FN " + t + " " + nm + "(" + t + " a, " + t + " b, " + t + " c) {\n#if defined(__clang__)\n#pragma clang fp contract(fast)\n" +
                        "  return a * b + c;\n#else\n  return (" + t + "){" + lanes + "};\n#endif\n}\n";
        }
        return nm + args;
      }
      case Ops::EXP2: return round16(d, fn(d, "exp2") + "(" + r(s[0]) + ")");
      case Ops::LOG2: return round16(d, fn(d, "log2") + "(" + r(s[0]) + ")");
      case Ops::SIN: return round16(d, fn(d, "sin") + "(" + r(s[0]) + ")");
      case Ops::SQRT: return round16(d, fn(d, "sqrt") + "(" + r(s[0]) + ")");
      case Ops::TRUNC: return round16(d, fn(d, "trunc") + "(" + r(s[0]) + ")");
      case Ops::POW: return round16(d, fn(d, "pow") + "(" + r(s[0]) + "," + r(s[1]) + ")");
      case Ops::RECIPROCAL: return round16(d, "(" + literal(d, 1) + "/" + r(s[0]) + ")");
      case Ops::SPECIAL: {  // gidxN / lidxN: the work-group / work-item id along dimension N
        auto& nm = std::get<std::string>(u->arg);
        return "((" + i64() + ")" + strformat(sp.ids[nm[0] == 'g' ? 0 : 1], sp.dims[nm.back() - '0']) + ")";
      }
      case Ops::CAST: {
        DType from = s[0]->dtype;
        if (dtypes::is_bool(d)) return "(" + r(s[0]) + "!=0)";
        // float -> unsigned goes through int64 so negative values wrap like numpy instead of being undefined
        if (dtypes::is_float(from) && dtypes::is_unsigned(d)) return "((" + ctype(d) + ")(" + i64() + ")(" + r(s[0]) + "))";
        return round16(d, "((" + ctype(d) + ")(" + r(s[0]) + "))");
      }
      case Ops::BITCAST: {  // 16-bit floats live as float in registers: go through their storage bits
        DType from = s[0]->dtype;
        std::string a = to_storage(from, r(s[0]));
        return from_storage(d, sp.bitcast ? sp.bitcast(storage_type(d), storage_type(from), a) : c_bitcast(storage_type(d), storage_type(from), a));
      }
      default: fail(TG_ERROR_UNSUPPORTED, "C renderer: no rule for " + std::string(op_name(u->op)));
    }
  }
  void line(const std::string& s) { out += std::string(size_t(indent) * 2, ' ') + s + "\n"; }

  std::string run() {
    std::string params, entry_args;
    for (size_t i = 0; i < lp.globals.size(); i++) {
      DType pd = lp.globals[i]->dtype;
      std::string nm = "data" + std::to_string(i), t = storage_type(pd.base());
      names[lp.globals[i].get()] = nm;
      params += (i ? ", " : "") + std::string(sp.buffer) + (i ? "const " : "") + t + "* " + sp.restrict_kw + " " + nm;
      entry_args += (i ? ", " : "") + std::string("(") + (i ? "const " : "") + t + "*)bufs[" + std::to_string(i) + "]";
    }
    for (size_t i = 0; i < lp.vars.size(); i++) {
      std::string nm = lp.vars[i]->argv<VarArg>().name;
      names[lp.vars[i].get()] = nm;
      params += ", const " + i64() + " " + nm;
      entry_args += ", vars[" + std::to_string(i) + "]";
    }
    if (sp.wmma == Spelling::Wmma::MmaSync)
      for (auto& u : lp.uops)
        if (u->op == Ops::WMMA)
          for (size_t i = 0; i < 2; i++)
            for (int64_t j = 0; j < u->src[i]->dtype.count; j++) {
              UOpRef x = lane_of(u->src[i], j);
              if (x->op == Ops::LOAD && is16(x->dtype) && x->dtype.count == 1 && x->src[0]->dtype.addrspace != AddrSpace::Reg)
                operand_bits.insert(x.get());
            }
    for (auto& u : lp.uops) {
      if (u->op == Ops::RANGE) {
        std::string nm = u->render();
        names[u.get()] = nm;
        line("for (" + i64() + " " + nm + " = 0; " + nm + " < " + r(u->src[0]) + "; " + nm + "++) {");
        indent++;
      } else if (u->op == Ops::END) {
        indent--;
        line("}");
      } else if (u->op == Ops::DEFINE_LOCAL) {  // a work-group's shared array (GROUP reduces); on a CPU a PACK's, on the stack
        std::string nm = "temp" + std::to_string(std::get<int64_t>(u->arg));
        names[u.get()] = nm;
        line(sp.shared + storage_type(u->dtype.base()) + " " + nm + "[" + std::to_string(u->dtype.size) + "]" + sp.align + ";");
      } else if (u->op == Ops::BARRIER) {
        if (sp.barrier) line(sp.barrier);
      } else if (u->op == Ops::DEFINE_REG) {
        std::string nm = "acc" + std::to_string(std::get<int64_t>(u->arg));
        names[u.get()] = nm;
        line(type(u->dtype.deref()) + " " + nm + ";");
      } else if (u->op == Ops::STORE) {
        if (u->src[0]->dtype.addrspace == AddrSpace::Reg) line(r(u->src[0]) + " = " + r(u->src[1]) + ";");
        else {
          DType d = u->src[1]->dtype;
          const UOpRef& idx = u->src[0];
          std::string st = d.count > 1 ? "{ " + type(d) + " _v = " + r(u->src[1]) + "; memcpy(&" + index(idx) + ", &_v, sizeof _v); }"
                                       : index(idx) + " = " + to_storage(d, r(u->src[1])) + ";";
          line(idx->src.size() > 2 ? "if (" + r(idx->src[2]) + ") " + st : st);  // a padded axis writes only where valid
        }
      } else if ((u->op == Ops::VECTORIZE && !sp.vectors) || reg_load(u)) {
        continue;  // GPUs hold no vectors (only a WMMA takes one, lane by lane); a register is read by its name
      } else if (u->op == Ops::WMMA) {
        std::string fn = wmma_fn(u.get()), nm = "wmma" + std::to_string(counter++), call = fn + "(" + nm;
        names[u.get()] = nm;
        if (!helpers.count(fn)) helpers[fn] = wmma_helper(u.get(), sp);  // once per kernel, not per call
        line(ctype(u->dtype.scalar_of()) + " " + nm + "[" + std::to_string(u->dtype.count) + "];");
        for (size_t i = 0; i < 3; i++)
          for (int64_t j = 0; j < u->src[i]->dtype.count; j++) {
            UOpRef x = lane_of(u->src[i], j);
            auto b = bits.find(x.get());
            call += ", " + (i == 2 || sp.wmma != Spelling::Wmma::MmaSync ? r(x) : b != bits.end() ? b->second : to_storage(x->dtype, r(x)));
          }
        if (sp.wmma == Spelling::Wmma::Local) call += strformat(", tg_wmma_s + tg_lid / 32 * %d, tg_lid %% 32", kWmmaScratch);
        line(call + ");");
      } else {
        std::string nm = (u->op == Ops::LOAD ? "val" : "alu") + std::to_string(counter++);
        // a hint, as the LLVM renderer's: no fault where the address is past the buffer (an integer sum, not a pointer's)
        if (u->op == Ops::LOAD && lp.prefetched(u.get()))
          line("__builtin_prefetch((const void*)((__UINTPTR_TYPE__)&" + index(u->src[0]) + " + " + std::to_string(prefetch_bytes) + "), 0, 3);");
        if (operand_bits.count(u.get())) {  // a tensor core's 16-bit operand: mma.sync takes its bits, not a float and back
          bits[u.get()] = nm + "_b";
          line("uint16_t " + nm + "_b = " + gated(u->src[0], index(u->src[0]), "(uint16_t)0") + ";");
          line(value_type(u) + " " + nm + " = " + tg::from_storage(u->dtype, nm + "_b") + ";");  // unused: dead code to NVRTC
        } else line(value_type(u) + " " + nm + " = " + expr(u) + ";");
        names[u.get()] = nm;
      }
    }
    std::string body = std::move(out), defs, fns;
    for (auto& [k, v] : typedefs) defs += v + "\n";
    for (auto& [k, v] : helpers) fns += v;
    if (sp.wmma == Spelling::Wmma::Local && !helpers.empty()) {  // the emulated warps' scratch and each work-item's place in the work-group
      int64_t items = 1;
      for (auto& u : lp.uops)
        if (u->op == Ops::SPECIAL && std::get<std::string>(u->arg)[0] == 'l') items *= u->src[0]->vmax();
      body = strformat("  __local float tg_wmma_s[%lld];\n", (long long)((items + 31) / 32 * kWmmaScratch)) +
             "  int tg_lid = get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2));\n" + body;
    }
    bool fp64 = false;
    for (auto& u : lp.uops) fp64 |= u->dtype.scalar == Scalar::Float64;
    for (auto& g : lp.globals) fp64 |= g->dtype.base().scalar == Scalar::Float64;
    parts.head = std::string(fp64 ? sp.fp64 : "") + sp.head + kHalf + sp.half + kBFloat;
    parts.typedefs = std::move(typedefs), parts.helpers = std::move(helpers);
    // CUDA: registers capped so that a work-group fits an SM (a kernel needing more registers than that fails to launch)
    std::string bounds;
    if (sp.wmma == Spelling::Wmma::MmaSync && lp.local_items > 0)
      bounds = strformat("__launch_bounds__(%lld) ", (long long)std::min<int64_t>(lp.local_items, 1024));
    parts.kernel = sp.kernel + bounds + lp.name + "(" + params + ") {\n" + body + "}\n";
    std::string src = parts.head + defs + fns + parts.kernel;
    if (!sp.entry) return src;
    return src + "void tg_entry(void** bufs, const int64_t* vars) {\n  (void)vars;\n  " + lp.name + "(" + entry_args + ");\n}\n";
  }
  CSourceParts parts;
};

static Spelling spelling(Dialect d, bool vectors) {
  Spelling sp = kDialects[int(d)];
  sp.vectors = sp.vectors && vectors;
  return sp;
}
std::string CStyleRenderer::render(const LinearProgram& lp) const {
  Spelling sp = spelling(dialect_, vectors_);
  return CRenderer{lp, sp, target_.prefetch_bytes}.run();
}
CSourceParts CStyleRenderer::render_parts(const LinearProgram& lp) const {
  Spelling sp = spelling(dialect_, vectors_);
  CRenderer r{lp, sp, target_.prefetch_bytes};
  r.run();
  return std::move(r.parts);
}
bool CStyleRenderer::native_op(Ops op, DType dt) const {
  if (op == Ops::DOT4 || op == Ops::DOT2) return false;
  return kDialects[int(dialect_)].native_math || !((op == Ops::EXP2 || op == Ops::LOG2 || op == Ops::SIN) && dtypes::is_float(dt));
}
bool CStyleRenderer::holds_vector(Ops op, DType dt) const {
  if (!vectors_ || !kDialects[int(dialect_)].vectors || !c_vector_scalar(dt.scalar_of())) return false;
  if (dt.count & (dt.count - 1)) return false;  // GCC's vector_size takes powers of two only (clang more): lanes then
  switch (op) {
    case Ops::ADD:
    case Ops::SUB:
    case Ops::MUL:
    case Ops::NEG:
    case Ops::MULACC:  // a float vector's through a helper (CRenderer, MULACC)
    case Ops::LOAD:
    case Ops::STORE:
    case Ops::DEFINE_REG:
    case Ops::CONST:
    case Ops::VECTORIZE:
    case Ops::GEP: return true;
    case Ops::FDIV: return dtypes::is_float(dt);
    case Ops::AND:
    case Ops::OR:
    case Ops::XOR: return dtypes::is_int(dt);
    default: return false;
  }
}

}  // namespace tg
