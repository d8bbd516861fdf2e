#include "uop/symbolic.h"

#include <algorithm>
#include <numeric>

#include "uop/viz.h"

namespace tg {

static bool is_intlike(DType d) { return dtypes::is_int(d); }
static int64_t ci(const UOpRef& c) { return std::get<int64_t>(c->arg); }
static UOpRef cint(const UOpRef& like, int64_t v) { return UOp::const_int(like->dtype, v); }
static UPat ivar(const char* n) { return UPat::var(n).scalar_kind(is_intlike); }

// ---- exact integer constants (doubles lose bits past 2^53) ----
static bool int_or_bool(DType d) { return d.count == 1 && !d.ptr && (dtypes::is_int(d) || dtypes::is_bool(d)); }
static __int128 const_exact(const UOp* c) {  // uint64 args hold the bit pattern
  if (auto b = std::get_if<bool>(&c->arg)) return *b;
  int64_t v = std::get<int64_t>(c->arg);
  return c->dtype.scalar == Scalar::UInt64 ? __int128(uint64_t(v)) : __int128(v);
}
// two's complement wrap to the dtype, like a C cast; bool is != 0
static UOpRef const_wrapped(DType dt, __int128 v) {
  if (dtypes::is_bool(dt)) return UOp::const_(dt, v != 0);
  int bits = dt.itemsize() * 8;
  uint64_t u = uint64_t(v) & (bits == 64 ? ~0ull : (1ull << bits) - 1);
  int64_t r = !dtypes::is_unsigned(dt) && bits < 64 && (u >> (bits - 1)) ? int64_t(u) - (int64_t(1) << bits) : int64_t(u);
  return UOp::const_int(dt, r);
}
static UOpRef fold_int_alu(const UOp* r) {
  std::vector<__int128> v;
  for (auto& s : r->src) v.push_back(const_exact(s.get()));
  auto u = [&](size_t i) { return uint64_t(v[i]); };  // ADD/SUB/MUL/SHL wrap mod 2^64 anyway
  switch (r->op) {
    case Ops::NEG: return const_wrapped(r->dtype, -v[0]);
    case Ops::ADD: return const_wrapped(r->dtype, u(0) + u(1));
    case Ops::SUB: return const_wrapped(r->dtype, u(0) - u(1));
    case Ops::MUL: return const_wrapped(r->dtype, u(0) * u(1));
    case Ops::MULACC: return const_wrapped(r->dtype, u(0) * u(1) + u(2));
    // defined for every input, as the renderers define them: x//0 == 0, x%0 == x (INT_MIN//-1 wraps)
    case Ops::IDIV: return const_wrapped(r->dtype, v[1] == 0 ? 0 : v[0] / v[1]);
    case Ops::MOD: return const_wrapped(r->dtype, v[1] == 0 ? v[0] : v[0] % v[1]);
    case Ops::MAX: return const_wrapped(r->dtype, std::max(v[0], v[1]));
    case Ops::CMPLT: return const_wrapped(r->dtype, v[0] < v[1]);
    case Ops::CMPNE: return const_wrapped(r->dtype, v[0] != v[1]);
    case Ops::CMPEQ: return const_wrapped(r->dtype, v[0] == v[1]);
    case Ops::AND: return const_wrapped(r->dtype, v[0] & v[1]);
    case Ops::OR: return const_wrapped(r->dtype, v[0] | v[1]);
    case Ops::XOR: return const_wrapped(r->dtype, v[0] ^ v[1]);
    case Ops::SHL: return v[1] < 0 ? UOpRef() : const_wrapped(r->dtype, v[1] >= 64 ? 0 : u(0) << int(v[1]));
    case Ops::SHR: return v[1] < 0 ? UOpRef() : const_wrapped(r->dtype, v[1] >= 64 ? 0 : v[0] >> int(v[1]));
    case Ops::WHERE: return const_wrapped(r->dtype, v[0] ? v[1] : v[2]);
    default: return {};
  }
}

// index arithmetic wraps modulo 2^64 like the ints it models, so combining constants and coefficients wraps too
static int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
// a sum as (base, coefficient) terms plus a constant, in first-seen order
struct Terms {
  std::vector<std::pair<UOpRef, int64_t>> terms;
  int64_t k = 0;
  int nconst = 0;
};
static Terms collect_terms(const UOp* sum) {
  UOps flat;
  sum->split_uop(Ops::ADD, flat);
  Terms t;
  std::unordered_map<const UOp*, size_t> at;
  for (auto& x : flat) {
    if (x->op == Ops::CONST) {
      t.k = wrap_add(t.k, ci(x)), t.nconst++;
      continue;
    }
    UOpRef base = x;
    int64_t coef = 1;
    if (x->op == Ops::MUL && x->src[1]->op == Ops::CONST) base = x->src[0], coef = ci(x->src[1]);
    auto [it, fresh] = at.try_emplace(base.get(), t.terms.size());
    if (fresh) t.terms.emplace_back(base, coef);
    else t.terms[it->second].second = wrap_add(t.terms[it->second].second, coef);
  }
  return t;
}
static UOpRef build_sum(const UOp* like, const std::vector<std::pair<UOpRef, int64_t>>& terms, int64_t k) {
  UOpRef out;
  for (auto& [b, c] : terms) {
    if (c == 0) continue;
    UOpRef term = c == 1 ? b : b * cint(b, c);
    out = out ? out + term : term;
  }
  if (!out) return UOp::const_int(like->dtype, k);
  return k ? out + cint(out, k) : out;
}

// x%c*k + x//c*(k*c) == x*k: pair them up inside a sum
static bool fold_divmod_pairs(std::vector<std::pair<UOpRef, int64_t>>& terms) {
  for (size_t i = 0; i < terms.size(); i++) {
    auto& [m, km] = terms[i];
    if (m->op != Ops::MOD || m->src[1]->op != Ops::CONST || km == 0) continue;
    for (size_t j = 0; j < terms.size(); j++) {
      auto& [d, kd] = terms[j];
      int64_t kc;
      if (d->op == Ops::IDIV && d->src[0] == m->src[0] && d->src[1] == m->src[1] && !__builtin_mul_overflow(km, ci(m->src[1]), &kc) && kd == kc) {
        UOpRef x = m->src[0];
        int64_t k = km;
        terms[i] = {x, k}, terms[j].second = 0;
        return true;
      }
    }
  }
  return false;
}

static UOpRef canon_sum(const Match& m) {
  const UOp* r = m.root;
  Terms t = collect_terms(r);
  fold_divmod_pairs(t.terms);
  // merge bases that became equal
  std::vector<std::pair<UOpRef, int64_t>> merged;
  for (auto& [b, c] : t.terms) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](auto& p) { return p.first == b; });
    if (it == merged.end()) merged.emplace_back(b, c);
    else it->second = wrap_add(it->second, c);
  }
  UOpRef out = build_sum(r, merged, t.k);
  return out.get() == r ? UOpRef() : out;
}

// division of a nonnegative sum by c > 0: x = c*q + rem with rem >= 0 gives x//c = q + rem//c, x%c = rem%c.
// A term f*b with f > c and b >= 0 splits as c*(f//c)*b + (f%c)*b, so (x*5)//4 -> x + x//4 and (x*5)%4 -> x%4.
static UOpRef divmod_split(const UOpRef& x, int64_t c, bool is_mod) {
  if (x->vmin() < 0 || (x->op != Ops::ADD && x->op != Ops::MUL)) return {};
  Terms t = collect_terms(x.get());
  std::vector<std::pair<UOpRef, int64_t>> q, rem;
  for (auto& [b, f] : t.terms) {
    if (f % c == 0) q.emplace_back(b, f / c);
    else if (f > c && b->vmin() >= 0) q.emplace_back(b, f / c), rem.emplace_back(b, f % c);
    else rem.emplace_back(b, f);
  }
  int64_t kq = floordiv(t.k, c), kr = t.k - kq * c;
  if (q.empty() && kq == 0) return {};
  UOpRef r = build_sum(x.get(), rem, kr);
  if (r->vmin() < 0) return {};
  if (is_mod) return r % cint(r, c);
  return build_sum(x.get(), q, kq) + r / cint(r, c);
}

// x >= 0 as g*y + r with 0 <= r < g for a g dividing c (the terms whose factor g divides, and the rest): x//c ==
// y//(c/g) and x%c == (y%(c/g))*g + r, so ((a*512 + b)//262144 with 0 <= b < 512 is a//512: an index that no
// longer depends on b, which a flattened reshape makes of a 2-d position)
static UOpRef divmod_small_rest(const UOpRef& x, int64_t c, bool is_mod) {
  if (x->vmin() < 0 || x->op != Ops::ADD) return {};
  Terms t = collect_terms(x.get());
  int64_t best = 1;
  for (auto& [b, f] : t.terms) {
    int64_t g = std::gcd(c, f);
    if (g <= best || g == c) continue;
    // the rest: the constant's remainder and the terms g doesn't divide, each nonnegative; y >= 0 follows from x >= 0
    __int128 hi = t.k - floordiv(t.k, g) * g;
    bool ok = true;
    for (auto& [b2, f2] : t.terms)
      if (f2 % g != 0) {
        if (f2 < 0 || b2->vmin() < 0) ok = false;
        else hi += __int128(f2) * b2->vmax();
      }
    if (ok && hi < g) best = g;
  }
  if (best == 1) return {};
  std::vector<std::pair<UOpRef, int64_t>> q, rem;
  for (auto& [b, f] : t.terms) (f % best == 0 ? q : rem).emplace_back(b, f % best == 0 ? f / best : f);
  int64_t kq = floordiv(t.k, best), kr = t.k - kq * best;
  UOpRef y = build_sum(x.get(), q, kq), r = build_sum(x.get(), rem, kr), cc = cint(y, c / best);
  return is_mod ? (y % cc) * cint(y, best) + r : y / cc;
}

static UOpRef fold_divmod(const Match& m) {
  UOpRef x = m["x"], cu = m["c"];
  int64_t c = ci(cu);
  bool is_mod = m.root->op == Ops::MOD;
  if (c == 0) return is_mod ? x : cint(x, 0);  // defined, as tinygrad: x//0 == 0, x%0 == x
  if (c == INT64_MIN || (c < 0 && dtypes::is_unsigned(x->dtype))) return {};  // a uint64 constant past 2^63 is not negative
  if (c < 0) return is_mod ? x % cint(x, -c) : -(x / cint(x, -c));  // C semantics: x%-c == x%c, x/-c == -(x/c)
  if (c == 1) return is_mod ? cint(x, 0) : x;
  // the whole range lands in one quotient bucket (truncating division is monotonic)
  if (x->vmin() != INT64_MIN && x->vmax() != INT64_MAX && x->vmin() / c == x->vmax() / c) {
    int64_t q = x->vmin() / c;
    return is_mod ? x - cint(x, q * c) : cint(x, q);
  }
  // (x//a)//c == x//(a*c), for truncation too;  (x%a)%c == x%c when c divides a (both keep x's sign and are congruent mod c)
  int64_t ac;
  if (!is_mod && x->op == Ops::IDIV && x->src[1]->op == Ops::CONST && ci(x->src[1]) > 0 && !__builtin_mul_overflow(ci(x->src[1]), c, &ac))
    return x->src[0] / cint(x, ac);
  if (is_mod && x->op == Ops::MOD && x->src[1]->op == Ops::CONST && ci(x->src[1]) > 0 && ci(x->src[1]) % c == 0) return x->src[0] % cu;
  // common factor: (g*y)//(g*d) == y//d, (g*y)%(g*d) == (y%d)*g
  Terms t = collect_terms(x.get());
  int64_t g = std::gcd(c, t.k);
  for (auto& [b, f] : t.terms) g = std::gcd(g, f);
  if (g > 1)
    if (UOpRef y = x->divides(g)) return is_mod ? (y % cint(y, c / g)) * cint(y, g) : y / cint(y, c / g);
  if (UOpRef v = divmod_small_rest(x, c, is_mod)) return v;
  return divmod_split(x, c, is_mod);
}

// sum of multiples of d + p < c with 0 <= p < d and d | c  <=>  (sum/d) < c/d
static UOpRef lt_folding(const Match& m) {
  UOps terms, np;
  m["x"]->split_uop(Ops::ADD, terms);
  int64_t c = ci(m["c"]), d = c;
  __int128 lo = 0, hi = 0;
  for (auto& t : terms) {
    if (t->const_factor() == 1) lo += t->vmin(), hi += t->vmax();
    else np.push_back(t), d = std::gcd(d, t->const_factor());
  }
  if (np.empty() || d <= 1 || lo < 0 || hi >= d) return {};
  UOpRef s = np[0];
  for (size_t i = 1; i < np.size(); i++) s = s + np[i];
  UOpRef q = s->divides(d);
  return q ? q < cint(q, c / d) : UOpRef();
}

const PatternMatcher& symbolic_simple() {
  static const PatternMatcher pm(
      {
          // constant folding
          {UPat({Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIPROCAL, Ops::NEG, Ops::TRUNC, Ops::ADD, Ops::SUB, Ops::MUL, Ops::IDIV,
                 Ops::FDIV, Ops::MOD, Ops::MAX, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::XOR, Ops::OR, Ops::AND, Ops::SHL, Ops::SHR,
                 Ops::WHERE, Ops::MULACC})
               .each(UPat(Ops::CONST)),
           [](const Match& m) -> UOpRef {
             const UOp* r = m.root;
             if (r->dtype.count != 1) return {};
             // integers and bools fold exactly; WHERE's condition is bool, so only its branches decide
             if (int_or_bool(r->dtype) && std::all_of(r->src.begin(), r->src.end(), [](auto& s) { return int_or_bool(s->dtype); }))
               return fold_int_alu(r);
             std::vector<double> v;
             for (auto& s : r->src) v.push_back(s->const_value());
             return UOp::const_(r->dtype, exec_alu(r->op, r->dtype, v));
           }},
          {UPat(Ops::CAST, {UPat::cvar("c")}), [](const Match& m) -> UOpRef {
             if (m.root->dtype.count != 1) return {};
             if (int_or_bool(m.root->dtype) && int_or_bool(m["c"]->dtype)) return const_wrapped(m.root->dtype, const_exact(m["c"].get()));
             return UOp::const_(m.root->dtype, m["c"]->const_value());
           }},
          // two-stage folding of an associative op, for every dtype as tinygrad does: (x+c1)+c2 -> x+(c1+c2)
          {UPat({Ops::ADD, Ops::MUL, Ops::MAX, Ops::AND, Ops::OR}, {UPat({Ops::ADD, Ops::MUL, Ops::MAX, Ops::AND, Ops::OR}, {UPat::var("x"), UPat::cvar("c1")}, "f"),
                                                                   UPat::cvar("c2")}),
           [](const Match& m) -> UOpRef {
             if (m["f"]->op != m.root->op || m.root->dtype.count != 1) return {};
             return m["x"]->alu(m.root->op, {m["c1"]->alu(m.root->op, {m["c2"]})});
           }},
          // identities
          {UPat::var("x") + 0, [](const Match& m) { return m["x"]; }},
          {UPat::var("x") * 1, [](const Match& m) { return m["x"]; }},
          {ivar("x") * 0, [](const Match& m) { return m["x"]->const_like(0); }},
          {UPat(Ops::FDIV, {UPat::var("x"), UPat::const_(1)}), [](const Match& m) { return m["x"]; }},
          {UPat(Ops::SUB, {UPat::var("x"), UPat::const_(0)}), [](const Match& m) { return m["x"]; }},
          {UPat(Ops::MAX, {UPat::var("x"), UPat::var("x")}), [](const Match& m) { return m["x"]; }},
          {UPat(Ops::AND, {UPat::var("x"), UPat::var("x")}), [](const Match& m) { return m["x"]; }},
          {UPat(Ops::OR, {UPat::var("x"), UPat::var("x")}), [](const Match& m) { return m["x"]; }},
          {UPat(Ops::AND, {UPat::var("x").dtype({dtypes::bool_}), UPat::cvar("c")}),
           [](const Match& m) { return m["c"]->const_value() ? m["x"] : m["c"]; }},
          {UPat(Ops::OR, {UPat::var("x").dtype({dtypes::bool_}), UPat::cvar("c")}),
           [](const Match& m) { return m["c"]->const_value() ? m["c"] : m["x"]; }},
          {UPat(Ops::WHERE, {UPat::var(), UPat::var("x"), UPat::var("x")}), [](const Match& m) { return m["x"]; }},
          {UPat(Ops::WHERE, {UPat::cvar("c"), UPat::var("a"), UPat::var("b")}),
           [](const Match& m) { return m["c"]->const_value() ? m["a"] : m["b"]; }},
          {UPat(Ops::CMPLT, {ivar("x"), UPat::var("x")}), [](const Match& m) { return UOp::const_(m.root->dtype, 0); }},
          {UPat(Ops::CMPNE, {ivar("x"), UPat::var("x")}), [](const Match& m) { return UOp::const_(m.root->dtype, 0); }},
          {UPat(Ops::CMPEQ, {ivar("x"), UPat::var("x")}), [](const Match& m) { return UOp::const_(m.root->dtype, 1); }},
          // an integer/bool ALU node whose value range is one point is that constant
          {UPat(), [](const Match& m) -> UOpRef {
             const UOp* r = m.root;
             if (!GroupOp::alu(r->op) || r->dtype.count != 1 || !(dtypes::is_int(r->dtype) || dtypes::is_bool(r->dtype))) return {};
             return r->vmin() == r->vmax() ? UOp::const_int(r->dtype, r->vmin()) : UOpRef();
           }},
      },
      "symbolic_simple");
  return pm;
}

const PatternMatcher& symbolic() {
  static const PatternMatcher pm =
      symbolic_simple() +
      PatternMatcher(
          {
              // canonical integer forms: x-y -> x+y*-1, -x -> x*-1, constants on the right
              {UPat(Ops::SUB, {ivar("x"), UPat::var("y")}), [](const Match& m) { return m["x"] + m["y"] * -1; }},
              {UPat(Ops::NEG, {ivar("x")}), [](const Match& m) { return m["x"] * -1; }},
              {UPat({Ops::ADD, Ops::MUL, Ops::MAX, Ops::AND, Ops::OR, Ops::XOR}, {UPat::cvar("c"), UPat::var("x")}).ordered(),
               [](const Match& m) -> UOpRef { return m["x"]->op == Ops::CONST ? UOpRef() : m["x"]->alu(m.root->op, {m["c"]}); }},
              // sums: like terms combined, constants folded to one at the end, x%c + (x//c)*c -> x
              {UPat(Ops::ADD, {ivar("a"), UPat::var("b")}).ordered(), canon_sum},
              // (x*c1)*c2 -> x*(c1*c2);  (x+y)*c -> x*c + y*c
              {UPat(Ops::MUL, {UPat(Ops::MUL, {ivar("x"), UPat::cvar("c1")}).ordered(), UPat::cvar("c2")}).ordered(),
               [](const Match& m) { return m["x"] * cint(m["x"], ci(m["c1"]) * ci(m["c2"])); }},
              {UPat(Ops::MUL, {UPat(Ops::ADD, {ivar("x"), UPat::var("y")}).ordered(), UPat::cvar("c")}).ordered(),
               [](const Match& m) { return m["x"] * m["c"] + m["y"] * m["c"]; }},
              // division and modulo by a constant
              {UPat({Ops::IDIV, Ops::MOD}, {ivar("x"), UPat::cvar("c")}), fold_divmod},
              // max by range
              {UPat(Ops::MAX, {ivar("x"), UPat::var("y")}), [](const Match& m) -> UOpRef {
                 if (m["x"]->vmin() >= m["y"]->vmax()) return m["x"];
                 if (m["y"]->vmin() >= m["x"]->vmax()) return m["y"];
                 return {};
               }},
              // comparisons against constants: move constants and factors to the right
              {UPat(Ops::CMPLT, {UPat(Ops::ADD, {ivar("x"), UPat::cvar("c1")}).ordered(), UPat::cvar("c2")}).ordered(),
               [](const Match& m) -> UOpRef {
                 int64_t k;
                 return __builtin_sub_overflow(ci(m["c2"]), ci(m["c1"]), &k) ? UOpRef() : m["x"] < cint(m["x"], k);
               }},
              // x*c1 < c2  <=>  x < ceil(c2/c1) for c1 > 0,  floor(c2/c1) < x for c1 < 0
              {UPat(Ops::CMPLT, {UPat(Ops::MUL, {ivar("x"), UPat::cvar("c1")}).ordered(), UPat::cvar("c2")}).ordered(),
               [](const Match& m) -> UOpRef {
                 int64_t c1 = ci(m["c1"]), c2 = ci(m["c2"]);
                 if (c2 == INT64_MIN) return {};
                 if (c1 > 0) return m["x"] < cint(m["x"], ceildiv(c2, c1));
                 return c1 < 0 ? cint(m["x"], floordiv(c2, c1)) < m["x"] : UOpRef();
               }},
              {UPat(Ops::CMPLT, {UPat(Ops::ADD, {}, "x").scalar_kind(is_intlike), UPat::cvar("c")}).ordered(), lt_folding},
              {UPat(Ops::CMPLT, {UPat(Ops::IDIV, {ivar("x"), UPat::cvar("c1")}).ordered(), UPat::cvar("c2")}).ordered(),
               [](const Match& m) -> UOpRef {  // x//c < k <=> x < k*c for x >= 0, c > 0, k > 0
                 int64_t c1 = ci(m["c1"]), c2 = ci(m["c2"]), k;
                 return c1 > 0 && c2 > 0 && m["x"]->vmin() >= 0 && !__builtin_mul_overflow(c2, c1, &k) ? m["x"] < cint(m["x"], k) : UOpRef();
               }},
          },
          "symbolic");
  return pm;
}

static thread_local SimplifyMemo* g_memo = nullptr;
SimplifyMemo::SimplifyMemo() : prev_(g_memo) { g_memo = this; }
SimplifyMemo::~SimplifyMemo() { g_memo = prev_; }

// VIZ, which records each rewrite, runs them all
UOpRef UOp::simplify() const {
  UOpRef me = ref();
  if (src.empty()) return me;
  SimplifyMemo* memo = viz::on() ? nullptr : g_memo;
  if (memo)
    if (auto it = memo->memo_.find(me); it != memo->memo_.end()) return it->second;
  UOpRef out = graph_rewrite(me, symbolic(), nullptr, false, "simplify");
  if (memo) memo->memo_.emplace(me, out);
  return out;
}

}  // namespace tg
