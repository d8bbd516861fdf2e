// Symbolic simplifier: a table of rewrites compared by node identity (and checked numerically), then a fuzz that
// evaluates random expressions before and after simplification with an independent C-semantics evaluator.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "uop/symbolic.h"

using namespace tg;

namespace {
UOpRef I(int64_t v) { return UOp::const_int(dtypes::index, v); }
UOpRef B(bool v) { return UOp::const_(dtypes::bool_, v); }

// Evaluates a graph with C semantics (truncating division, remainder has the dividend's sign) in 128 bits, and checks
// every integer node's value against the vmin/vmax the library claims for it.
struct Eval {
  std::unordered_map<std::string, int64_t> env;
  std::unordered_map<const UOp*, __int128> memo;
  std::string err;
  __int128 at(const UOp* u) {
    if (auto it = memo.find(u); it != memo.end()) return it->second;
    auto s = [&](size_t i) { return at(u->src[i].get()); };
    __int128 v = 0;
    switch (u->op) {
      case Ops::CONST: v = std::holds_alternative<bool>(u->arg) ? std::get<bool>(u->arg) : std::get<int64_t>(u->arg); break;
      case Ops::DEFINE_VAR: v = env.at(std::get<VarArg>(u->arg).name); break;
      case Ops::ADD: v = s(0) + s(1); break;
      case Ops::SUB: v = s(0) - s(1); break;
      case Ops::MUL: v = s(0) * s(1); break;
      case Ops::NEG: v = -s(0); break;
      case Ops::IDIV:
      case Ops::MOD: {
        __int128 a = s(0), b = s(1);
        // defined as tinygrad defines it: x//0 == 0, x%0 == x
        v = b == 0 ? (u->op == Ops::IDIV ? 0 : a) : u->op == Ops::IDIV ? a / b : a % b;
        break;
      }
      case Ops::MAX: v = std::max(s(0), s(1)); break;
      case Ops::CMPLT: v = s(0) < s(1); break;
      case Ops::CMPNE: v = s(0) != s(1); break;
      case Ops::CMPEQ: v = s(0) == s(1); break;
      case Ops::AND: v = s(0) & s(1); break;
      case Ops::OR: v = s(0) | s(1); break;
      case Ops::XOR: v = s(0) ^ s(1); break;
      case Ops::WHERE: v = s(0) ? s(1) : s(2); break;
      case Ops::CAST: {  // C casts: bool is "!= 0", ints wrap to their width
        int bits = u->dtype.itemsize() * 8;
        v = dtypes::is_bool(u->dtype) ? __int128(s(0) != 0) : s(0);
        if (dtypes::is_int(u->dtype) && bits < 64) {
          v &= (__int128(1) << bits) - 1;
          if (!dtypes::is_unsigned(u->dtype) && v >= (__int128(1) << (bits - 1))) v -= __int128(1) << bits;
        }
        break;
      }
      default: return err = "evaluator: unexpected op " + std::string(op_name(u->op)), 0;
    }
    if (v < INT64_MIN || v > INT64_MAX) err = "int64 overflow in " + u->render();
    else if (err.empty() && (v < u->vmin() || v > u->vmax()))
      err = strformat("value %lld outside claimed range [%lld, %lld] of ", (long long)v, (long long)u->vmin(), (long long)u->vmax()) + u->render();
    return memo[u] = v;
  }
  int64_t operator()(const UOpRef& u) {
    memo.clear();
    return int64_t(at(u.get()));
  }
};

// every DEFINE_VAR in the graphs, once
std::vector<VarArg> vars_of(std::initializer_list<UOpRef> us) {
  std::vector<VarArg> out;
  for (auto& u : us)
    for (auto& n : u->toposort())
      if (n->op == Ops::DEFINE_VAR && std::find(out.begin(), out.end(), n->argv<VarArg>()) == out.end()) out.push_back(n->argv<VarArg>());
  return out;
}
// random assignments inside the variables' ranges, plus the all-min and all-max corners
template <class F>
void for_assignments(const std::vector<VarArg>& vs, std::mt19937_64& rng, int n, F&& f) {
  std::unordered_map<std::string, int64_t> env;
  for (int k = 0; k < n + 2; k++) {
    for (auto& v : vs) env[v.name] = k == 0 ? v.vmin : k == 1 ? v.vmax : v.vmin + int64_t(rng() % uint64_t(v.vmax - v.vmin + 1));
    f(env);
  }
}
std::string env_str(const std::unordered_map<std::string, int64_t>& env) {
  std::string s;
  for (auto& [k, v] : env) s += k + "=" + std::to_string(v) + " ";
  return s;
}

// check that two graphs agree on random assignments; returns "" or a description of the first mismatch
std::string agree(const UOpRef& a, const UOpRef& b, std::mt19937_64& rng, int n) {
  std::string out;
  for_assignments(vars_of({a, b}), rng, n, [&](auto& env) {
    if (!out.empty()) return;
    Eval ea{env, {}, {}}, eb{env, {}, {}};
    int64_t va = ea(a), vb = eb(b);
    if (!ea.err.empty() || !eb.err.empty()) out = env_str(env) + ": " + ea.err + " " + eb.err;
    else if (va != vb) out = env_str(env) + ": " + std::to_string(va) + " != " + std::to_string(vb);
  });
  return out;
}

struct Vars {
  UOpRef x = UOp::variable("x", 0, 15), y = UOp::variable("y", 0, 3), z = UOp::variable("z", 0, 7), n = UOp::variable("n", -8, 8),
         w = UOp::variable("w", 1, 100);
};
struct Case {
  const char* name;
  std::function<UOpRef(const Vars&)> in, want;
};
// x in [0,15], y in [0,3], z in [0,7], n in [-8,8], w in [1,100]
const Case kCases[] = {
    // identities and constant folding
    {"x+0", [](auto& v) { return v.x + 0; }, [](auto& v) { return v.x; }},
    {"0+x", [](auto& v) { return 0 + v.x; }, [](auto& v) { return v.x; }},
    {"x*1", [](auto& v) { return v.x * 1; }, [](auto& v) { return v.x; }},
    {"x*0", [](auto& v) { return v.x * 0; }, [](auto&) { return I(0); }},
    {"(x+y)*0", [](auto& v) { return (v.x + v.y) * 0; }, [](auto&) { return I(0); }},
    {"x*y*0", [](auto& v) { return v.x * v.y * 0; }, [](auto&) { return I(0); }},
    {"x//1", [](auto& v) { return v.x / 1; }, [](auto& v) { return v.x; }},
    {"x%1", [](auto& v) { return v.x % 1; }, [](auto&) { return I(0); }},
    {"n//1", [](auto& v) { return v.n / 1; }, [](auto& v) { return v.n; }},
    {"x-x", [](auto& v) { return v.x - v.x; }, [](auto&) { return I(0); }},
    {"n-n", [](auto& v) { return v.n - v.n; }, [](auto&) { return I(0); }},
    {"-(-x)", [](auto& v) { return -(-v.x); }, [](auto& v) { return v.x; }},
    {"3+4", [](auto&) { return I(3) + 4; }, [](auto&) { return I(7); }},
    {"3*4+5", [](auto&) { return I(3) * 4 + 5; }, [](auto&) { return I(17); }},
    {"-7//2", [](auto&) { return I(-7) / 2; }, [](auto&) { return I(-3); }},
    {"-7%2", [](auto&) { return I(-7) % 2; }, [](auto&) { return I(-1); }},
    {"7%-2", [](auto&) { return I(7) % -2; }, [](auto&) { return I(1); }},
    {"7//-2", [](auto&) { return I(7) / -2; }, [](auto&) { return I(-3); }},
    {"max(3,5)", [](auto&) { return I(3)->maximum(I(5)); }, [](auto&) { return I(5); }},
    {"3<5", [](auto&) { return I(3) < 5; }, [](auto&) { return B(true); }},
    {"2^53+1 < 2^53+2 exactly", [](auto&) { return I((1LL << 53) + 1) < I((1LL << 53) + 2); }, [](auto&) { return B(true); }},
    {"(2^62+3)//2 exactly", [](auto&) { return I((1LL << 62) + 3) / I(2); }, [](auto&) { return I((1LL << 61) + 1); }},
    {"(2^62+3)%4 exactly", [](auto&) { return I((1LL << 62) + 3) % I(4); }, [](auto&) { return I(3); }},
    {"int32(2^53+1) exactly", [](auto&) { return I((1LL << 53) + 1)->cast(dtypes::int32); }, [](auto&) { return UOp::const_int(dtypes::int32, 1); }},
    {"int64 max(2^60+1, 2^60)", [](auto&) { return I((1LL << 60) + 1)->maximum(I(1LL << 60)); }, [](auto&) { return I((1LL << 60) + 1); }},
    // sums: like terms collected, constants folded and moved right
    {"x+x", [](auto& v) { return v.x + v.x; }, [](auto& v) { return v.x * 2; }},
    {"x*3+x*-3", [](auto& v) { return v.x * 3 + v.x * -3; }, [](auto&) { return I(0); }},
    {"x*3+y+x*-3", [](auto& v) { return v.x * 3 + v.y + v.x * -3; }, [](auto& v) { return v.y; }},
    {"x*2+y*3-x*2", [](auto& v) { return v.x * 2 + v.y * 3 - v.x * 2; }, [](auto& v) { return v.y * 3; }},
    {"(x+y)-y", [](auto& v) { return (v.x + v.y) - v.y; }, [](auto& v) { return v.x; }},
    {"x*-1+x", [](auto& v) { return v.x * -1 + v.x; }, [](auto&) { return I(0); }},
    {"(x+3)+4", [](auto& v) { return (v.x + 3) + 4; }, [](auto& v) { return v.x + 7; }},
    {"(x+3)-3", [](auto& v) { return (v.x + 3) - 3; }, [](auto& v) { return v.x; }},
    {"3+x", [](auto& v) { return 3 + v.x; }, [](auto& v) { return v.x + 3; }},
    {"2*x", [](auto& v) { return 2 * v.x; }, [](auto& v) { return v.x * 2; }},
    {"(x*2)*3", [](auto& v) { return (v.x * 2) * 3; }, [](auto& v) { return v.x * 6; }},
    {"(x+1)*2", [](auto& v) { return (v.x + 1) * 2; }, [](auto& v) { return v.x * 2 + 2; }},
    {"x*0+y", [](auto& v) { return v.x * 0 + v.y; }, [](auto& v) { return v.y; }},
    // division and modulo with value ranges
    {"(x*4+y)//4", [](auto& v) { return (v.x * 4 + v.y) / 4; }, [](auto& v) { return v.x; }},
    {"(x*4+y)%4", [](auto& v) { return (v.x * 4 + v.y) % 4; }, [](auto& v) { return v.y; }},
    {"(y+x*4)//4", [](auto& v) { return (v.y + v.x * 4) / 4; }, [](auto& v) { return v.x; }},
    {"(x*4+z)//4 = x+z//4", [](auto& v) { return (v.x * 4 + v.z) / 4; }, [](auto& v) { return v.x + v.z / 4; }},
    {"(x*4+z)%4", [](auto& v) { return (v.x * 4 + v.z) % 4; }, [](auto& v) { return v.z % 4; }},
    {"(x*8+z)//8", [](auto& v) { return (v.x * 8 + v.z) / 8; }, [](auto& v) { return v.x; }},
    {"(x*2+1)//2", [](auto& v) { return (v.x * 2 + 1) / 2; }, [](auto& v) { return v.x; }},
    {"(x*2+1)%2", [](auto& v) { return (v.x * 2 + 1) % 2; }, [](auto&) { return I(1); }},
    {"(x*4+8)//4", [](auto& v) { return (v.x * 4 + 8) / 4; }, [](auto& v) { return v.x + 2; }},
    {"(x*4+9)//4", [](auto& v) { return (v.x * 4 + 9) / 4; }, [](auto& v) { return v.x + 2; }},
    {"(x+4)%4", [](auto& v) { return (v.x + 4) % 4; }, [](auto& v) { return v.x % 4; }},
    {"(x+5)//4", [](auto& v) { return (v.x + 5) / 4; }, [](auto& v) { return (v.x + 1) / 4 + 1; }},
    {"x%16 in range", [](auto& v) { return v.x % 16; }, [](auto& v) { return v.x; }},
    {"x//16 in range", [](auto& v) { return v.x / 16; }, [](auto&) { return I(0); }},
    {"y%4 in range", [](auto& v) { return v.y % 4; }, [](auto& v) { return v.y; }},
    {"n%16 in range", [](auto& v) { return v.n % 16; }, [](auto& v) { return v.n; }},
    {"n//16 truncates to 0", [](auto& v) { return v.n / 16; }, [](auto&) { return I(0); }},
    {"(x+16)//16", [](auto& v) { return (v.x + 16) / 16; }, [](auto&) { return I(1); }},
    {"(x+16)%16", [](auto& v) { return (v.x + 16) % 16; }, [](auto& v) { return v.x; }},
    {"(x*4)//4", [](auto& v) { return (v.x * 4) / 4; }, [](auto& v) { return v.x; }},
    {"(x*4)%4", [](auto& v) { return (v.x * 4) % 4; }, [](auto&) { return I(0); }},
    {"(n*4)//4", [](auto& v) { return (v.n * 4) / 4; }, [](auto& v) { return v.n; }},
    {"(n*4)%4", [](auto& v) { return (v.n * 4) % 4; }, [](auto&) { return I(0); }},
    {"(x*3)//3", [](auto& v) { return v.x * 3 / 3; }, [](auto& v) { return v.x; }},
    {"(n+8)//4 kept", [](auto& v) { return (v.n + 8) / 4; }, [](auto& v) { return (v.n + 8) / 4; }},
    {"(n*4+y)//4 kept", [](auto& v) { return (v.n * 4 + v.y) / 4; }, [](auto& v) { return (v.n * 4 + v.y) / 4; }},
    {"n%4 kept", [](auto& v) { return v.n % 4; }, [](auto& v) { return v.n % 4; }},
    {"(x//2)//3", [](auto& v) { return v.x / 2 / 3; }, [](auto& v) { return v.x / 6; }},
    {"(n//2)//3", [](auto& v) { return v.n / 2 / 3; }, [](auto& v) { return v.n / 6; }},
    {"(x//4)//4", [](auto& v) { return v.x / 4 / 4; }, [](auto&) { return I(0); }},
    {"(w//4)//5", [](auto& v) { return v.w / 4 / 5; }, [](auto& v) { return v.w / 20; }},
    {"(w%8)%4", [](auto& v) { return v.w % 8 % 4; }, [](auto& v) { return v.w % 4; }},
    {"(w%4)%8", [](auto& v) { return v.w % 4 % 8; }, [](auto& v) { return v.w % 4; }},
    {"(n%8)%4", [](auto& v) { return v.n % 8 % 4; }, [](auto& v) { return v.n % 4; }},
    {"gcd (x*6+4)//4", [](auto& v) { return (v.x * 6 + 4) / 4; }, [](auto& v) { return v.x + v.x / 2 + 1; }},
    {"gcd (x*6+4)%4", [](auto& v) { return (v.x * 6 + 4) % 4; }, [](auto& v) { return (v.x % 2) * 2; }},
    {"gcd (z*2)//4", [](auto& v) { return (v.z * 2) / 4; }, [](auto& v) { return v.z / 2; }},
    {"gcd (z*2)%4", [](auto& v) { return (v.z * 2) % 4; }, [](auto& v) { return (v.z % 2) * 2; }},
    {"gcd (w*6+y*3)//3", [](auto& v) { return (v.w * 6 + v.y * 3) / 3; }, [](auto& v) { return v.w * 2 + v.y; }},
    {"(x*3)%2", [](auto& v) { return (v.x * 3) % 2; }, [](auto& v) { return v.x % 2; }},
    {"(x*5)//4", [](auto& v) { return (v.x * 5) / 4; }, [](auto& v) { return v.x + v.x / 4; }},
    {"(n*5)//4 kept", [](auto& v) { return (v.n * 5) / 4; }, [](auto& v) { return (v.n * 5) / 4; }},
    {"(x*5+z*9+3)%4", [](auto& v) { return (v.x * 5 + v.z * 9 + 3) % 4; }, [](auto& v) { return (v.x + v.z + 3) % 4; }},
    {"x//-4", [](auto& v) { return v.x / -4; }, [](auto& v) { return (v.x / 4) * -1; }},
    {"x%-4", [](auto& v) { return v.x % -4; }, [](auto& v) { return v.x % 4; }},
    {"x%4+(x//4)*4", [](auto& v) { return v.x % 4 + (v.x / 4) * 4; }, [](auto& v) { return v.x; }},
    {"(x//4)*4+x%4", [](auto& v) { return (v.x / 4) * 4 + v.x % 4; }, [](auto& v) { return v.x; }},
    {"(w%7)*3+(w//7)*21", [](auto& v) { return (v.w % 7) * 3 + (v.w / 7) * 21; }, [](auto& v) { return v.w * 3; }},
    {"x%4+(x//4)*4-x", [](auto& v) { return v.x % 4 + (v.x / 4) * 4 - v.x; }, [](auto&) { return I(0); }},
    {"n%4+(n//4)*4", [](auto& v) { return v.n % 4 + (v.n / 4) * 4; }, [](auto& v) { return v.n; }},
    // a rest smaller than the factor that divides the divisor: a flattened 2-d position divided by a row multiple
    {"(x*4+y)//32", [](auto& v) { return (v.x * 4 + v.y) / 32; }, [](auto& v) { return v.x / 8; }},
    {"(x*4+y)%32", [](auto& v) { return (v.x * 4 + v.y) % 32; }, [](auto& v) { return (v.x % 8) * 4 + v.y; }},
    {"(x*8+z+1)//16 kept", [](auto& v) { return (v.x * 8 + v.z + 1) / 16; }, [](auto& v) { return (v.x * 8 + v.z + 1) / 16; }},
    // comparisons folded by range and normalized
    {"x<16", [](auto& v) { return v.x < 16; }, [](auto&) { return B(true); }},
    {"x<0", [](auto& v) { return v.x < 0; }, [](auto&) { return B(false); }},
    {"n<-8", [](auto& v) { return v.n < -8; }, [](auto&) { return B(false); }},
    {"n<9", [](auto& v) { return v.n < 9; }, [](auto&) { return B(true); }},
    {"x<x", [](auto& v) { return v.x < v.x; }, [](auto&) { return B(false); }},
    {"x<8 kept", [](auto& v) { return v.x < 8; }, [](auto& v) { return v.x < 8; }},
    {"x%4<4", [](auto& v) { return v.x % 4 < 4; }, [](auto&) { return B(true); }},
    {"x//4<4", [](auto& v) { return v.x / 4 < 4; }, [](auto&) { return B(true); }},
    {"(x+3)<5", [](auto& v) { return (v.x + 3) < 5; }, [](auto& v) { return v.x < 2; }},
    {"x*2<7", [](auto& v) { return v.x * 2 < 7; }, [](auto& v) { return v.x < 4; }},
    {"x*-1<-3", [](auto& v) { return v.x * -1 < -3; }, [](auto& v) { return 3 < v.x; }},
    {"x//4<2", [](auto& v) { return v.x / 4 < 2; }, [](auto& v) { return v.x < 8; }},
    {"(x*4+y)<8", [](auto& v) { return v.x * 4 + v.y < 8; }, [](auto& v) { return v.x < 2; }},
    {"(x*4+y*8)<12", [](auto& v) { return v.x * 4 + v.y * 8 < 12; }, [](auto& v) { return v.x + v.y * 2 < 3; }},
    {"x+y<20", [](auto& v) { return v.x + v.y < 20; }, [](auto&) { return B(true); }},
    {"x!=16", [](auto& v) { return v.x->ne(I(16)); }, [](auto&) { return B(true); }},
    {"x==x", [](auto& v) { return v.x->eq(v.x); }, [](auto&) { return B(true); }},
    // max / min
    {"max(x,20)", [](auto& v) { return v.x->maximum(I(20)); }, [](auto&) { return I(20); }},
    {"max(x,-1)", [](auto& v) { return v.x->maximum(I(-1)); }, [](auto& v) { return v.x; }},
    {"max(x,x)", [](auto& v) { return v.x->maximum(v.x); }, [](auto& v) { return v.x; }},
    {"max(x,y) kept", [](auto& v) { return v.x->maximum(v.y); }, [](auto& v) { return v.x->maximum(v.y); }},
    {"max(x+16,n)", [](auto& v) { return (v.x + 16)->maximum(v.n); }, [](auto& v) { return v.x + 16; }},
    {"min(x,20)", [](auto& v) { return v.x->minimum(I(20)); }, [](auto& v) { return v.x; }},
    {"min(x,-1)", [](auto& v) { return v.x->minimum(I(-1)); }, [](auto&) { return I(-1); }},
    // where
    {"where(True,x,y)", [](auto& v) { return B(true)->where(v.x, v.y); }, [](auto& v) { return v.x; }},
    {"where(x<20,x,y)", [](auto& v) { return (v.x < 20)->where(v.x, v.y); }, [](auto& v) { return v.x; }},
    {"where(x<0,x,y)", [](auto& v) { return (v.x < 0)->where(v.x, v.y); }, [](auto& v) { return v.y; }},
    {"where(c,x,x)", [](auto& v) { return (v.n < 0)->where(v.x, v.x); }, [](auto& v) { return v.x; }},
    {"where(n<0,x,y) kept", [](auto& v) { return (v.n < 0)->where(v.x, v.y); }, [](auto& v) { return (v.n < 0)->where(v.x, v.y); }},
    {"where(c,x+0,y*1)", [](auto& v) { return (v.n < 0)->where(v.x + 0, v.y * 1); }, [](auto& v) { return (v.n < 0)->where(v.x, v.y); }},
    // bools
    {"(x<4)&True", [](auto& v) { return (v.x < 4) & B(true); }, [](auto& v) { return v.x < 4; }},
    {"(x<4)&False", [](auto& v) { return (v.x < 4) & B(false); }, [](auto&) { return B(false); }},
    {"(x<4)|True", [](auto& v) { return (v.x < 4) | B(true); }, [](auto&) { return B(true); }},
    {"(x<4)|(x<4)", [](auto& v) { return (v.x < 4) | (v.x < 4); }, [](auto& v) { return v.x < 4; }},
};
}  // namespace

TEST(Symbolic, Table) {
  ASSERT_GE(std::size(kCases), 60u);
  std::mt19937_64 rng(7);
  Vars v;
  Context ctx({{"SPEC", 1}});
  for (auto& c : kCases) {
    UOpRef in = c.in(v), want = c.want(v), got;
    ASSERT_NO_THROW(got = in->simplify()) << c.name;
    EXPECT_EQ(got, want) << c.name << "\n  in:   " << in->render() << "\n  got:  " << got->render() << "\n  want: " << want->render();
    EXPECT_EQ(got->simplify(), got) << c.name << ": not a fixed point";
    std::string bad = agree(in, want, rng, 64);  // the expectation itself is right
    EXPECT_EQ(bad, "") << c.name << ": expected form differs from the input";
  }
}

TEST(Symbolic, FloatsAreNotReassociated) {
  auto f = UOp::make(Ops::DEFINE_VAR, dtypes::int32, {}, VarArg{"i", 0, 9})->cast(dtypes::float32);
  auto c = [](double v) { return UOp::const_(dtypes::float32, v); };
  EXPECT_EQ((f + c(0))->simplify(), f);
  EXPECT_EQ((f * c(1))->simplify(), f);
  EXPECT_EQ((f * c(0))->simplify(), f * c(0));  // NaN*0 is NaN: no folding
  EXPECT_EQ((f + f)->simplify(), f + f);
  EXPECT_EQ((c(1.5) + c(2.25))->simplify(), c(3.75));
  EXPECT_EQ((c(1) / c(4))->simplify(), c(0.25));
}

// random integer expressions: simplification must keep the value on every assignment
TEST(Symbolic, FuzzAgainstEvaluator) {
  std::mt19937_64 rng(20240601);
  auto r = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint64_t(hi - lo + 1)); };
  UOps vars;
  auto leaf = [&]() -> UOpRef { return r(0, 2) ? vars[size_t(r(0, int64_t(vars.size()) - 1))] : I(r(-9, 9)); };
  std::function<UOpRef(int)> expr = [&](int depth) -> UOpRef {
    if (depth == 0 || r(0, 6) == 0) return leaf();
    UOpRef a = expr(depth - 1);
    switch (r(0, 12)) {
      case 0:
      case 1: return a + expr(depth - 1);
      case 2: return a - expr(depth - 1);
      case 3: return a * r(-4, 6);
      case 4: return leaf() * leaf();
      case 5:
      case 6: return a / r(1, 9);
      case 7:
      case 8: return a % r(1, 9);
      case 9: return r(0, 3) ? a->maximum(expr(depth - 1)) : a->minimum(expr(depth - 1));
      case 10: {
        UOpRef b = expr(depth - 1), t = expr(depth - 1);
        return (a < b)->where(t, expr(depth - 1));
      }
      case 11: return r(0, 1) ? a / r(-9, -1) : a % r(-9, -1);  // negative divisors (C semantics)
      default: {
        UOpRef b = expr(depth - 1);
        return (r(0, 2) == 0 ? a < b : r(0, 1) ? a->ne(b) : a->eq(b))->cast(dtypes::index);
      }
    }
  };
  constexpr int kExprs = 10000;
  int tested = 0, failures = 0, changed = 0;
  Context ctx({{"SPEC", 1}});
  while (tested < kExprs && failures < 10) {
    vars.clear();
    for (int i = 0, nv = int(r(2, 3)); i < nv; i++) {
      int64_t lo = r(-20, 10);
      vars.push_back(UOp::variable(std::string(1, char('a' + i)), lo, lo + r(0, 30)));
    }
    UOpRef e = expr(int(r(4, 6)));
    if (r(0, 7) == 0) e = e < expr(3);
    if (e->vmin() < -(int64_t(1) << 40) || e->vmax() > (int64_t(1) << 40)) continue;  // keep products well inside int64
    tested++;
    UOpRef s;
    try {
      s = e->simplify();
    } catch (const Error& err) {
      ADD_FAILURE() << "simplify threw: " << err.what() << "\n  in: " << e->render();
      failures++;
      continue;
    }
    changed += s != e;
    if (UOpRef again = s->simplify(); again != s) {
      failures++;
      ADD_FAILURE() << "not a fixed point\n  in:    " << e->render() << "\n  out:   " << s->render() << "\n  again: " << again->render();
    }
    std::string bad = agree(e, s, rng, 12);
    if (!bad.empty()) {
      failures++;
      ADD_FAILURE() << "expression " << tested << "\n  in:  " << e->render() << "\n  out: " << s->render() << "\n  " << bad;
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(changed, kExprs / 2) << "the simplifier barely did anything";
}
