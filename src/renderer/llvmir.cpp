#include "renderer/llvmir.h"

#include <algorithm>

#include <bit>
#include <set>
#include <unordered_map>

namespace tg {

static bool is16(DType d) { return d.scalar == Scalar::Float16 || d.scalar == Scalar::BFloat16; }
static int width(DType d) { return dtypes::is_bool(d) ? 1 : d.base().itemsize() * 8; }
static bool zero_extends(DType d) { return dtypes::is_unsigned(d) || dtypes::is_bool(d); }
static DType like(Scalar s, DType d) { return DType(s, d.count); }
// 16-bit floats are computed in float, rounded after every op (as the C renderer does). A bfloat is held as its i16
// bits: LLVM promotes bfloat values it can't hold natively (selects, phis) through __truncsfbf2, which libgcc 12 lacks
static DType compute(DType d) { return is16(d) ? like(Scalar::Float32, d) : d; }

static std::string ty(DType d) {
  static const char* names[] = {"i1", "i8", "i8", "i16", "i16", "i32", "i32", "i64", "i64", "half", "i16", "float", "double", "void"};
  std::string s = names[int(d.scalar)];
  return d.count > 1 ? "<" + std::to_string(d.count) + " x " + s + ">" : s;
}
// the type in memory: bools are bytes
static std::string mem_ty(DType d) { return ty(dtypes::is_bool(d) ? like(Scalar::UInt8, d) : d); }
static std::string splat(DType d, const std::string& lit) {
  if (d.count == 1) return lit;
  std::string s = "<";
  for (int i = 0; i < d.count; i++) s += (i ? ", " : "") + ty(d.scalar_of()) + " " + lit;
  return s + ">";
}

static uint16_t bf16_bits(float f) {  // round to nearest even; NaN stays NaN (quieted), as tg_f2bf in the C prelude
  uint32_t b = std::bit_cast<uint32_t>(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x40);
  return uint16_t((b + 0x7fffu + ((b >> 16) & 1)) >> 16);
}
// a float literal of `d` (scalar), exact: LLVM reads float and double as the bits of a double, half as 0xH; a bfloat is its bits
static std::string flit(DType d, double v) {
  switch (d.scalar) {
    case Scalar::Float16: return strformat("0xH%04X", unsigned(f32_to_f16_bits(float(v))));
    case Scalar::BFloat16: return std::to_string(int16_t(bf16_bits(float(v))));
    case Scalar::Float32: return strformat("0x%016llX", (unsigned long long)std::bit_cast<uint64_t>(double(float(v))));
    default: return strformat("0x%016llX", (unsigned long long)std::bit_cast<uint64_t>(v));
  }
}
static std::string lit(const UOp& c) {
  DType d = c.dtype.scalar_of();
  if (dtypes::is_bool(d)) return c.const_value() != 0 ? "true" : "false";
  if (!dtypes::is_int(d)) return flit(d, c.const_value());
  int64_t v = std::holds_alternative<int64_t>(c.arg) ? std::get<int64_t>(c.arg) : int_bits(d, c.const_value());
  int w = width(d);
  if (w < 64) v = int64_t(uint64_t(v) << (64 - w)) >> (64 - w);  // the two's complement of the width, as LLVM reads it
  return std::to_string(v);
}

namespace {
struct LLRenderer {
  const LinearProgram& lp;
  int dot4_bytes, dot2_bytes, prefetch_bytes;  // Target's
  std::unordered_map<const UOp*, std::string> names;
  std::unordered_map<const UOp*, std::string> loop_ids;
  std::set<std::string> decls;  // intrinsic declarations and helpers, sorted so the same program renders the same text
  std::string allocas, out, block = "entry";
  int n = 0;

  std::string id() { return std::to_string(n++); }
  std::string emit(const std::string& rhs) {
    std::string t = "%t" + id();
    out += "  " + t + " = " + rhs + "\n";
    return t;
  }
  void ins(const std::string& s) { out += "  " + s + "\n"; }
  void label(const std::string& l) {
    out += l + ":\n";
    block = l;
  }

  std::string val(const UOpRef& u) {
    if (auto it = names.find(u.get()); it != names.end()) return it->second;
    if (u->op == Ops::CONST) return splat(u->dtype, lit(*u));
    return expr(u);  // a node not listed (AFTER, INDEX, a loop bound): rendered where it is used
  }
  std::string typed(const UOpRef& u) { return ty(u->dtype) + " " + val(u); }
  // an operand of a `lanes`-wide op: a scalar constant there stands for its splat
  std::string val(const UOpRef& u, int lanes) { return u->op == Ops::CONST && lanes > 1 ? splat(u->dtype.vec(lanes), lit(*u)) : val(u); }

  std::string widen(const std::string& v, DType d) {
    if (d.scalar != Scalar::BFloat16) return is16(d) ? emit("fpext " + ty(d) + " " + v + " to " + ty(compute(d))) : v;
    DType i = like(Scalar::UInt32, d);
    std::string w = emit("shl " + ty(i) + " " + emit("zext " + ty(d) + " " + v + " to " + ty(i)) + ", " + splat(i, "16"));
    return emit("bitcast " + ty(i) + " " + w + " to " + ty(compute(d)));
  }
  std::string narrow(const std::string& v, DType d) {  // v is a float (of d's lanes) when d is 16-bit
    if (d.scalar == Scalar::Float16) return emit("fptrunc " + ty(compute(d)) + " " + v + " to " + ty(d));
    if (d.scalar == Scalar::BFloat16) return emit("call " + ty(d) + " " + bf_round(d.count) + "(" + ty(compute(d)) + " " + v + ")");
    return v;
  }
  // float -> bfloat bits by integer rounding: LLVM's fptrunc lowers to vcvtneps2bf16, which flushes subnormals to zero
  std::string bf_round(int count) {
    DType f(Scalar::Float32, uint16_t(count)), i = like(Scalar::UInt32, f);
    std::string fn = "@tg_f2bf" + (count > 1 ? ".v" + std::to_string(count) : ""), I = ty(i), B = ty(like(Scalar::BFloat16, f));
    auto k = [&](uint32_t v) { return splat(i, std::to_string(int32_t(v))); };
    decls.insert("define internal " + B + " " + fn + "(" + ty(f) + " %f) alwaysinline {\n  %b = bitcast " + ty(f) + " %f to " + I + "\n  %a = and " + I +
                 " %b, " + k(0x7fffffff) + "\n  %nan = icmp ugt " + I + " %a, " + k(0x7f800000) + "\n  %hi = lshr " + I + " %b, " + k(16) +
                 "\n  %odd = and " + I + " %hi, " + k(1) + "\n  %r0 = add " + I + " %b, " + k(0x7fff) + "\n  %r1 = add " + I + " %r0, %odd\n  %r = lshr " +
                 I + " %r1, " + k(16) + "\n  %q = or " + I + " %hi, " + k(0x40) + "\n  %s = select " + ty(like(Scalar::Bool, f)) + " %nan, " + I + " %q, " +
                 I + " %r\n  %t = trunc " + I + " %s to " + B + "\n  ret " + B + " %t\n}");
    return fn;
  }
  std::string call(const char* name, DType c, const std::vector<std::string>& args) {
    std::string t = ty(c), fn = std::string("@llvm.") + name + "." + (c.count > 1 ? "v" + std::to_string(c.count) : "") + (c.scalar == Scalar::Float64 ? "f64" : "f32");
    std::string params, a;
    for (size_t i = 0; i < args.size(); i++) params += (i ? ", " : "") + t, a += (i ? ", " : "") + t + " " + args[i];
    decls.insert("declare " + t + " " + fn + "(" + params + ")");
    return emit("call " + t + " " + fn + "(" + a + ")");
  }

  // int -> int of another width: truncate, or extend by the source's signedness
  std::string resize(const std::string& v, DType from, DType to) {
    int a = width(from), b = width(to);
    if (a == b) return v;
    if (a > b) return emit("trunc " + ty(from) + " " + v + " to " + ty(to));
    return emit(std::string(zero_extends(from) ? "zext " : "sext ") + ty(from) + " " + v + " to " + ty(to));
  }
  std::string cast(std::string v, DType from, DType to) {
    if (dtypes::is_bool(to)) {  // x != 0 (NaN is true)
      if (dtypes::is_bool(from)) return v;
      if (dtypes::is_float(from)) return emit("fcmp une " + ty(compute(from)) + " " + widen(v, from) + ", zeroinitializer");
      return emit("icmp ne " + ty(from) + " " + v + ", zeroinitializer");
    }
    if (dtypes::is_float(to)) {  // through float for 16-bit targets: the C renderer's (float)x then its rounding
      DType c = compute(to);
      if (dtypes::is_float(from)) {
        v = widen(v, from);
        DType f = compute(from);
        if (width(f) > width(c)) v = emit("fptrunc " + ty(f) + " " + v + " to " + ty(c));
        if (width(f) < width(c)) v = emit("fpext " + ty(f) + " " + v + " to " + ty(c));
      } else {
        v = emit(std::string(zero_extends(from) ? "uitofp " : "sitofp ") + ty(from) + " " + v + " to " + ty(c));
      }
      return narrow(v, to);
    }
    if (dtypes::is_float(from)) {
      // float -> unsigned goes through int64 so negative values wrap like numpy; narrow signed ints through int32, as C on x86
      DType via = like(dtypes::is_unsigned(to) ? Scalar::Int64 : width(to) < 32 ? Scalar::Int32 : to.scalar, to);
      v = emit("fptosi " + ty(compute(from)) + " " + widen(v, from) + " to " + ty(via));
      return resize(v, via, to);
    }
    return resize(v, from, to);
  }

  std::string int_alu(const UOpRef& u) {
    auto& s = u->src;
    int n = u->dtype.count;
    DType d(s[0]->dtype.scalar, uint16_t(n));
    bool b = dtypes::is_bool(d), uns = zero_extends(d);
    std::string t = ty(d), x = val(s[0], n), y = s.size() > 1 ? val(s[1], n) : "";
    auto bin = [&](const std::string& op) { return emit(op + " " + t + " " + x + ", " + y); };
    switch (u->op) {
      // bools add, subtract and multiply as C's _Bool: a+b is a|b, a-b is a^b, a*b is a&b
      case Ops::ADD: return bin(b ? "or" : "add");
      case Ops::SUB: return bin(b ? "xor" : "sub");
      case Ops::MUL: return bin(b ? "and" : "mul");
      case Ops::AND: return bin("and");
      case Ops::OR: return bin("or");
      case Ops::XOR: return bin("xor");
      case Ops::CMPLT: return bin(uns ? "icmp ult" : "icmp slt");
      case Ops::CMPNE: return bin("icmp ne");
      case Ops::CMPEQ: return bin("icmp eq");
      case Ops::NEG: return emit("sub " + t + " zeroinitializer, " + x);
      case Ops::MULACC: return emit("add " + t + " " + bin("mul") + ", " + val(s[2], n));
      case Ops::IDIV: return bin(uns ? "udiv" : "sdiv");
      case Ops::MOD: return bin(uns ? "urem" : "srem");
      case Ops::SHL: return bin("shl");
      case Ops::SHR: return bin(uns ? "lshr" : "ashr");
      default: fail(TG_ERROR_UNSUPPORTED, "LLVM renderer: no rule for " + std::string(op_name(u->op)) + " on " + d.name());
    }
  }
  std::string float_alu(const UOpRef& u) {
    auto& s = u->src;
    DType c = compute(DType(s[0]->dtype.scalar, u->dtype.count));
    std::vector<std::string> a;
    for (auto& x : s) a.push_back(widen(val(x, u->dtype.count), x->dtype.vec(u->dtype.count)));
    std::string t = ty(c), r;
    auto bin = [&](const char* op) { return emit(std::string(op) + " " + t + " " + a[0] + ", " + a[1]); };
    switch (u->op) {
      case Ops::CMPLT: return bin("fcmp olt");
      case Ops::CMPNE: return bin("fcmp une");
      case Ops::CMPEQ: return bin("fcmp oeq");
      case Ops::ADD: r = bin("fadd"); break;
      case Ops::SUB: r = bin("fsub"); break;
      case Ops::MUL: r = bin("fmul"); break;
      case Ops::FDIV: r = bin("fdiv"); break;
      case Ops::NEG: r = emit("fneg " + t + " " + a[0]); break;
      case Ops::RECIPROCAL: r = emit("fdiv " + t + " " + splat(c, flit(c.scalar_of(), 1)) + ", " + a[0]); break;
      case Ops::MULACC: r = call("fma", c, {a[0], a[1], a[2]}); break;  // one rounding (Target::fma)
      case Ops::EXP2: r = call("exp2", c, {a[0]}); break;
      case Ops::LOG2: r = call("log2", c, {a[0]}); break;
      case Ops::SIN: r = call("sin", c, {a[0]}); break;
      case Ops::SQRT: r = call("sqrt", c, {a[0]}); break;
      case Ops::TRUNC: r = call("trunc", c, {a[0]}); break;
      case Ops::POW: r = call("pow", c, {a[0], a[1]}); break;
      default: fail(TG_ERROR_UNSUPPORTED, "LLVM renderer: no rule for " + std::string(op_name(u->op)) + " on " + s[0]->dtype.name());
    }
    return narrow(r, u->dtype);
  }

  // DOT4(a, b, c): vpdpbusd on pieces as wide as the target's (each a's and b's bytes as int32 lanes); DOT2(a, b, c):
  // vdpbf16ps (each a's and b's pairs of bfloat bits as bfloat lanes); put back together
  std::string dot(const UOpRef& u) {
    auto& s = u->src;
    bool bf = u->op == Ops::DOT2;
    int n = u->dtype.count, k = bf ? 2 : 4, w = std::min((bf ? dot2_bytes : dot4_bytes) / 4, n);
    while (w > 0 && n % w) w /= 2;
    TG_CHECK(w >= 4, TG_ERROR_UNSUPPORTED, "LLVM renderer: " + std::string(op_name(u->op)) + " of " + u->dtype.name() + " on a target without it");
    std::string W = ty(DType(bf ? Scalar::Float32 : Scalar::Int32, uint16_t(w)));
    std::string fn = bf ? "@llvm.x86.avx512bf16.dpbf16ps." + std::to_string(w * 32) : "@llvm.x86.avx512.vpdpbusd." + std::to_string(w * 32);
    std::string P = bf ? "<" + std::to_string(2 * w) + " x bfloat>" : W;  // the type a piece of a or b is passed as
    decls.insert("declare " + W + " " + fn + "(" + W + ", " + P + ", " + P + ")");
    auto lanes = [](int from, int count, int total) {
      std::string m;
      for (int i = 0; i < total; i++) m += (i ? ", i32 " : "i32 ") + (i < count ? std::to_string(from + i) : std::string("poison"));
      return "<" + std::to_string(total) + " x i32> <" + m + ">";
    };
    auto piece = [&](const UOpRef& v, int at) {  // lanes [k at, k (at + w)) of a byte (bfloat bits) vector, as P
      std::string x = val(v, k * n);
      if (w < n) x = emit("shufflevector " + ty(v->dtype) + " " + x + ", " + ty(v->dtype) + " poison, " + lanes(k * at, k * w, k * w));
      return emit("bitcast <" + std::to_string(k * w) + (bf ? " x i16> " : " x i8> ") + x + " to " + P);
    };
    std::string acc = val(s[2], n), out = "poison";
    for (int at = 0; at < n; at += w) {
      std::string c = w < n ? emit("shufflevector " + ty(u->dtype) + " " + acc + ", " + ty(u->dtype) + " poison, " + lanes(at, w, w)) : acc;
      std::string r = emit("call " + W + " " + fn + "(" + W + " " + c + ", " + P + " " + piece(s[0], at) + ", " + P + " " + piece(s[1], at) + ")");
      if (w == n) return r;
      std::string m;  // out with lanes [at, at + w) from r
      std::string wide = emit("shufflevector " + W + " " + r + ", " + W + " poison, " + lanes(0, w, n));
      for (int i = 0; i < n; i++) m += (i ? ", i32 " : "i32 ") + std::to_string(i >= at && i < at + w ? n + i - at : i);
      out = emit("shufflevector " + ty(u->dtype) + " " + out + ", " + ty(u->dtype) + " " + wide + ", <" + std::to_string(n) + " x i32> <" + m + ">");
    }
    return out;
  }

  // memory: globals hold scalars (a vector access covers consecutive ones), registers hold their declared (maybe vector) type
  static bool in_reg(const UOpRef& buf) { return buf->dtype.addrspace == AddrSpace::Reg; }
  std::string address(const UOpRef& idx) {
    const UOpRef& buf = idx->src[0];
    std::string elem = in_reg(buf) ? ty(buf->dtype.deref()) : mem_ty(buf->dtype.base());
    return emit("getelementptr " + elem + ", ptr " + val(buf) + ", i64 " + resize(val(idx->src[1]), idx->src[1]->dtype, dtypes::int64));
  }
  std::string align(const UOpRef& buf) { return in_reg(buf) ? "" : ", align " + std::to_string(buf->dtype.base().itemsize()); }
  // runs `body` only where the INDEX's gate (its third source) holds; returns the block the branch left from
  template <class F>
  void gated(const UOpRef& idx, F&& body) {
    if (idx->src.size() < 3) return body("");
    std::string gate = val(idx->src[2]), k = id(), from = block;
    ins("br i1 " + gate + ", label %then" + k + ", label %done" + k);
    label("then" + k);
    body(from);
    ins("br label %done" + k);
    label("done" + k);
  }
  // a vector access gated lane by lane (a vector of gates): LLVM's masked load/store, which touch only the enabled lanes
  static bool masked(const UOpRef& idx) { return idx->src.size() > 2 && idx->src[2]->dtype.count > 1; }
  std::string masked_fn(const char* what, DType mem) {
    std::string m = ty(mem), elem = m.substr(m.find(" x ") + 3);
    elem.pop_back();
    std::string suffix = "v" + std::to_string(mem.count) + (elem == "float" ? "f32" : elem == "double" ? "f64" : elem == "half" ? "f16" : elem);
    std::string mask = ty(like(Scalar::Bool, mem));
    if (std::string(what) == "load") decls.insert("declare " + m + " @llvm.masked.load." + suffix + ".p0(ptr, i32, " + mask + ", " + m + ")");
    else decls.insert("declare void @llvm.masked.store." + suffix + ".p0(" + m + ", ptr, i32, " + mask + ")");
    return std::string("@llvm.masked.") + what + "." + suffix + ".p0";
  }
  std::string load(const UOpRef& u) {
    const UOpRef& idx = u->src[0];
    if (idx->op != Ops::INDEX) return emit("load " + ty(u->dtype) + ", ptr " + val(idx));  // an accumulator
    bool byte = dtypes::is_bool(u->dtype) && !in_reg(idx->src[0]);
    if (masked(idx)) {
      DType mem = byte ? like(Scalar::UInt8, u->dtype) : u->dtype;
      std::string v = emit("call " + ty(mem) + " " + masked_fn("load", mem) + "(ptr " + address(idx) + ", i32 " + std::to_string(mem.base().itemsize()) +
                           ", " + typed(idx->src[2]) + ", " + ty(mem) + " zeroinitializer)");
      return byte ? emit("icmp ne " + ty(mem) + " " + v + ", zeroinitializer") : v;
    }
    std::string v, from, then;
    gated(idx, [&](const std::string& f) {
      from = f;
      std::string at = address(idx);
      // a hint: no fault and no effect on the program where the address is past the buffer (a plain, not inbounds, GEP)
      if (lp.prefetched(u.get())) {
        decls.insert("declare void @llvm.prefetch.p0(ptr, i32, i32, i32)");
        ins("call void @llvm.prefetch.p0(ptr " + emit("getelementptr i8, ptr " + at + ", i64 " + std::to_string(prefetch_bytes)) +
            ", i32 0, i32 3, i32 1)");
      }
      v = emit("load " + (byte ? mem_ty(u->dtype) : ty(u->dtype)) + ", ptr " + at + align(idx->src[0]));
      if (byte) v = emit("icmp ne " + mem_ty(u->dtype) + " " + v + ", zeroinitializer");
      then = block;
    });
    // a gated-off load reads nothing and yields 0
    return from.empty() ? v : emit("phi " + ty(u->dtype) + " [ " + v + ", %" + then + " ], [ zeroinitializer, %" + from + " ]");
  }
  void store(const UOpRef& u) {
    const UOpRef &dst = u->src[0], &v = u->src[1];
    std::string t = ty(v->dtype), x = val(v);
    if (dst->op != Ops::INDEX) return ins("store " + t + " " + x + ", ptr " + val(dst));
    if (dtypes::is_bool(v->dtype) && !in_reg(dst->src[0])) x = emit("zext " + t + " " + x + " to " + mem_ty(v->dtype)), t = mem_ty(v->dtype);
    if (masked(dst)) {
      DType mem = dtypes::is_bool(v->dtype) ? like(Scalar::UInt8, v->dtype) : v->dtype;
      return ins("call void " + masked_fn("store", mem) + "(" + t + " " + x + ", ptr " + address(dst) + ", i32 " + std::to_string(mem.base().itemsize()) +
                 ", " + typed(dst->src[2]) + ")");
    }
    gated(dst, [&](const std::string&) { ins("store " + t + " " + x + ", ptr " + address(dst) + align(dst->src[0])); });
  }

  std::string expr(const UOpRef& u) {
    auto& s = u->src;
    switch (u->op) {
      case Ops::LOAD: return load(u);
      case Ops::AFTER: return val(s[0]);
      case Ops::VECTORIZE: {  // the distinct scalars, inserted once each, then one shuffle to place them (a splat is one insert)
        std::vector<const UOp*> uniq;
        std::string mask;
        for (size_t i = 0; i < s.size(); i++) {
          size_t k = size_t(std::find(uniq.begin(), uniq.end(), s[i].get()) - uniq.begin());
          if (k == uniq.size()) uniq.push_back(s[i].get());
          mask += (i ? ", i32 " : "i32 ") + std::to_string(k);
        }
        std::string v = "poison";
        for (size_t i = 0; i < uniq.size(); i++) v = emit("insertelement " + ty(u->dtype) + " " + v + ", " + typed(uniq[i]->ref()) + ", i32 " + std::to_string(i));
        if (uniq.size() == s.size()) return v;
        return emit("shufflevector " + ty(u->dtype) + " " + v + ", " + ty(u->dtype) + " poison, <" + std::to_string(s.size()) + " x i32> <" + mask + ">");
      }
      case Ops::GEP: {
        auto& lanes = u->arg_ints();
        if (s[0]->dtype.count == 1) return val(s[0]);
        if (lanes.size() == 1) return emit("extractelement " + typed(s[0]) + ", i32 " + std::to_string(lanes[0]));
        std::string mask;
        for (size_t i = 0; i < lanes.size(); i++) mask += (i ? ", i32 " : "i32 ") + std::to_string(lanes[i]);
        return emit("shufflevector " + typed(s[0]) + ", " + ty(s[0]->dtype) + " poison, <" + std::to_string(lanes.size()) + " x i32> <" + mask + ">");
      }
      case Ops::CAST: return cast(val(s[0]), s[0]->dtype, u->dtype);
      case Ops::BITCAST: return emit("bitcast " + typed(s[0]) + " to " + ty(u->dtype));
      case Ops::DOT4:
      case Ops::DOT2: return dot(u);
      case Ops::WHERE: {
        int n = u->dtype.count;
        return emit("select " + ty(s[0]->dtype) + " " + val(s[0]) + ", " + ty(u->dtype) + " " + val(s[1], n) + ", " + ty(u->dtype) + " " + val(s[2], n));
      }
      default:
        TG_CHECK(GroupOp::alu(u->op), TG_ERROR_UNSUPPORTED, "LLVM renderer: no rule for " + std::string(op_name(u->op)));
        return dtypes::is_float(s[0]->dtype) ? float_alu(u) : int_alu(u);
    }
  }

  void open_loop(const UOpRef& r) {
    std::string k = id(), nm = "%ridx" + k, t = ty(r->dtype), end = val(r->src[0]), from = block;
    names[r.get()] = nm, loop_ids[r.get()] = k;
    ins("br label %loop" + k);
    label("loop" + k);
    ins(nm + " = phi " + t + " [ 0, %" + from + " ], [ " + nm + "n, %latch" + k + " ]");
    ins("br i1 " + emit("icmp slt " + t + " " + nm + ", " + end) + ", label %body" + k + ", label %exit" + k);
    label("body" + k);
  }
  void close_loop(const UOpRef& end) {
    const UOp* r = nullptr;
    for (auto& s : end->src)
      if (s->op == Ops::RANGE) r = s.get();
    TG_CHECK(r && loop_ids.count(r), TG_ERROR_UNSUPPORTED, "LLVM renderer: END of a loop that is not open");
    std::string k = loop_ids.at(r), nm = "%ridx" + k;
    ins("br label %latch" + k);
    label("latch" + k);
    ins(nm + "n = add " + ty(r->dtype) + " " + nm + ", 1");
    ins("br label %loop" + k);
    label("exit" + k);
  }

  std::string run() {
    std::string params, args, entry;
    for (size_t i = 0; i < lp.globals.size(); i++) {
      std::string k = std::to_string(i);
      if (lp.globals[i]) names[lp.globals[i].get()] = "%data" + k;
      params += (i ? ", " : "") + std::string("ptr noalias %data") + k;  // restrict, as in C
      entry += "  %bp" + k + " = getelementptr ptr, ptr %bufs, i64 " + k + "\n  %b" + k + " = load ptr, ptr %bp" + k + "\n";
      args += (i ? ", " : "") + std::string("ptr %b") + k;
    }
    for (size_t i = 0; i < lp.vars.size(); i++) {
      std::string k = std::to_string(i), t = ty(lp.vars[i]->dtype);
      names[lp.vars[i].get()] = "%var" + k;
      params += (params.empty() ? "" : ", ") + t + " %var" + k;
      entry += "  %vp" + k + " = getelementptr i64, ptr %vars, i64 " + k + "\n  %v" + k + " = load i64, ptr %vp" + k + "\n";
      if (t != "i64") entry += "  %v" + k + "t = trunc i64 %v" + k + " to " + t + "\n";
      args += (args.empty() ? "" : ", ") + t + " %v" + k + (t != "i64" ? "t" : "");
    }
    for (auto& u : lp.uops) {
      if (names.count(u.get())) continue;  // parameters
      switch (u->op) {
        case Ops::RANGE: open_loop(u); break;
        case Ops::END: close_loop(u); break;
        case Ops::DEFINE_REG:  // in the entry block, where mem2reg turns it into SSA values
          names[u.get()] = "%acc" + id();
          allocas += "  " + names[u.get()] + " = alloca " + ty(u->dtype.deref()) + "\n";
          break;
        case Ops::DEFINE_LOCAL: {  // a PACK's scratch array: on the stack of the thread running the kernel
          std::string nm = "%local" + id();
          names[u.get()] = nm;
          std::string n = std::to_string(std::max<int64_t>(u->dtype.size, 1));
          allocas += "  " + nm + " = alloca " + mem_ty(u->dtype.base()) + ", i64 " + n + ", align 64\n";
          break;
        }
        case Ops::BARRIER: break;  // one thread runs the kernel's body: program order is the order
        case Ops::STORE: store(u); break;
        case Ops::GROUP:
        case Ops::NOOP:
        case Ops::SINK: break;  // orders statements, renders nothing
        default: names[u.get()] = expr(u);
      }
    }
    std::string fn = "@\"" + lp.name + "\"", mod;
    for (auto& d : decls) mod += d + "\n";
    return mod + "\ndefine internal void " + fn + "(" + params + ") #0 {\nentry:\n" + allocas + out + "  ret void\n}\n\ndefine void @tg_entry(ptr %bufs, ptr %vars) #0 {\n" +
           entry + "  call void " + fn + "(" + args + ")\n  ret void\n}\n\nattributes #0 = { nounwind }\n";
  }
};
}  // namespace

std::string LLVMRenderer::render(const LinearProgram& lp) const {
  return LLRenderer{lp, target_.dot4_bytes, target_.dot2_bytes, target_.prefetch_bytes}.run();
}
// every float width: 16-bit floats decompose through float32, so no lane is a libm call
bool LLVMRenderer::native_op(Ops op, DType dt) const {
  if (op == Ops::DOT4) return target_.dot4_bytes > 0;
  if (op == Ops::DOT2) return target_.dot2_bytes > 0;
  return !((op == Ops::EXP2 || op == Ops::LOG2 || op == Ops::SIN) && dtypes::is_float(dt));
}

}  // namespace tg
