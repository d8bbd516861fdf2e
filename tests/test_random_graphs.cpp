// Random op graphs against the double-precision reference (tests/reference.h). Each graph is a seeded chain of 6-10
// ops on float32 or float64 mixing elementwise unary ops (neg, abs, relu, sin, cos, tanh, sigmoid), binary ops (add,
// sub, mul, div, maximum, minimum) with a fresh operand that broadcasts (fewer dims, size-1 dims, or a size-1 dim of
// the chain widened) and is sometimes a transposed or flipped view, movement ops (reshape, permute, expand, pad with a
// value, shrink, flip) and reductions (sum, max, min, mean over random axes, negative ones included, keepdim or not).
// The generator tracks the shape, so every step is valid; the same program runs on tg::Tensor and on the reference,
// and every element of the result is compared.
//
// Tolerance: the reference carries, next to each value, a first-order bound E on how far a correct evaluation in the
// tensor's dtype can be from the exact result, in units of the dtype's unit roundoff u (2^-24 float32, 2^-53 float64):
//   inputs 0 (exactly representable); neg/abs/relu/movement/max/min keep E (pad fills 0); add/sub E_x + E_y + |r|;
//   mul |x|E_y + |y|E_x + |r|; div (E_x + |r|E_y)/|y| + |r|; sin E + 4(|x| + 1); cos E + 4(|x| + 2) (it is
//   sin(pi/2 - x)); sigmoid E/4 + |x|/2 + 4; tanh E + 2|x| + 10 (2 sigmoid(2x) - 1); sum over n elements
//   sum(E) + (n - 1) sum(|x|); mean E_sum / n + 2|r|.
// An element passes when |got - ref| <= 4 u E (the reference's own double rounding is covered by the factor), so exact
// steps must be bit-exact and no tolerance is looser than the op sequence can justify. Non-finite reference values
// (max/min/mean over an empty axis) must match exactly: the same infinity, or NaN.
//
// About 100 graphs (TG_RANDOM_GRAPHS overrides, TG_RANDOM_GRAPHS_SEED picks another sequence); each realizes once, and
// at most one reduction per graph keeps it to one or two kernels, so a cold run stays under 30 s.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reference.h"
#include "tensor/tensor.h"
#include "tinygrad.h"

namespace {

using namespace tg_ref;

// ---- the reference with its error bound ---------------------------------------------------------------------------------
Nd k64(double c) { return Nd({}, dt::float64, {c}); }
struct Ref {
  Nd v;  // the value in double
  Nd e;  // the bound on |correct evaluation in v's dtype - exact| in units of u (float64, same shape)

  static Ref leaf(const Nd& x) { return {x, Nd(x.shape, dt::float64)}; }
  Ref neg() const { return {v.neg(), e}; }
  Ref abs() const { return {v.abs(), e}; }
  Ref relu() const { return {v.relu(), e}; }
  Ref sin() const { return {v.sin(), e.add(v.abs().add(k64(1)).mul(k64(4)))}; }
  Ref cos() const { return {v.cos(), e.add(v.abs().add(k64(2)).mul(k64(4)))}; }
  Ref sigmoid() const { return {v.sigmoid(), e.mul(k64(0.25)).add(v.abs().mul(k64(0.5))).add(k64(4))}; }
  Ref tanh() const { return {v.tanh(), e.add(v.abs().mul(k64(2))).add(k64(10))}; }
  Ref add(const Ref& o) const {
    Nd r = v.add(o.v);
    return {r, e.add(o.e).add(r.abs())};
  }
  Ref sub(const Ref& o) const {
    Nd r = v.sub(o.v);
    return {r, e.add(o.e).add(r.abs())};
  }
  Ref mul(const Ref& o) const {
    Nd r = v.mul(o.v);
    return {r, v.abs().mul(o.e).add(o.v.abs().mul(e)).add(r.abs())};
  }
  Ref div(const Ref& o) const {
    Nd r = v.div(o.v), ay = o.v.abs();
    return {r, e.div(ay).add(r.abs().mul(o.e).div(ay)).add(r.abs())};
  }
  Ref maximum(const Ref& o) const { return {v.maximum(o.v), e.maximum(o.e)}; }
  Ref minimum(const Ref& o) const { return {v.minimum(o.v), e.maximum(o.e)}; }
  Ref reshape(const Shape& s) const { return {v.reshape(s), e.reshape(s)}; }
  Ref permute(const std::vector<int64_t>& o) const { return {v.permute(o), e.permute(o)}; }
  Ref transpose(int64_t a, int64_t b) const { return {v.transpose(a, b), e.transpose(a, b)}; }
  Ref expand(const Shape& s) const { return {v.expand(s), e.expand(s)}; }
  Ref pad(const Pairs& p, double value) const { return {v.pad(p, value), e.pad(p, 0)}; }
  Ref shrink(const Pairs& b) const { return {v.shrink(b), e.shrink(b)}; }
  Ref flip(const std::vector<int64_t>& a) const { return {v.flip(a), e.flip(a)}; }
  double reduced_per_output(const Nd& r) const { return r.numel() ? double(v.numel()) / double(r.numel()) : 0; }
  Ref sum(const std::vector<int64_t>& axes, bool keep) const {
    Nd r = v.sum(axes, keep);
    double n = reduced_per_output(r);
    return {r, e.sum(axes, keep).add(v.abs().sum(axes, keep).mul(k64(std::max(n - 1, 0.0))))};
  }
  Ref mean(const std::vector<int64_t>& axes, bool keep) const {
    Ref s = sum(axes, keep);
    Nd r = v.mean(axes, keep);
    double n = reduced_per_output(r);
    return {r, n > 0 ? s.e.div(k64(n)).add(r.abs().mul(k64(2))) : s.e};
  }
  // the bound of an empty reduction is 0 (max/min give -inf/+inf there, which must match exactly)
  Ref max(const std::vector<int64_t>& axes, bool keep) const { return {v.max(axes, keep), e.max(axes, keep).maximum(k64(0))}; }
  Ref min(const std::vector<int64_t>& axes, bool keep) const { return {v.min(axes, keep), e.max(axes, keep).maximum(k64(0))}; }
};

// ---- graphs ---------------------------------------------------------------------------------------------------------------
enum Kind { kUnary, kBinary, kReshape, kPermute, kExpand, kPad, kShrink, kFlip, kReduce, kKinds };
const char* const kUnaryNames[] = {"neg", "abs", "relu", "sin", "cos", "tanh", "sigmoid"};
const char* const kBinaryNames[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
const char* const kReduceNames[] = {"sum", "max", "min", "mean"};

struct Step {
  Kind kind;
  int which = 0;               // unary / binary / reduce op
  std::vector<int64_t> ints;   // reshape shape, permute order, expand shape, flip or reduce axes
  Pairs pairs;                 // pad / shrink
  double value = 0;            // pad value
  bool keepdim = false;
  int operand = -1;            // binary: index into the inputs
  int view = 0;                // binary operand: 0 as is, 1 transposed back from its stored layout, 2 flipped on axis 0
};
struct Graph {
  DType dtype;
  std::vector<Nd> inputs;  // inputs[0] starts the chain; the rest are binary operands
  std::vector<Step> steps;
};

std::string ints_s(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}
std::string pairs_s(const Pairs& p) {
  std::string s = "{";
  for (size_t i = 0; i < p.size(); i++) s += (i ? "," : "") + std::string("(") + std::to_string(p[i].first) + "," + std::to_string(p[i].second) + ")";
  return s + "}";
}
std::string describe(const Graph& g) {
  std::ostringstream o;
  o << g.dtype.name() << " x" << shape_s(g.inputs[0].shape);
  for (auto& s : g.steps) {
    o << "\n    .";
    switch (s.kind) {
      case kUnary: o << kUnaryNames[s.which] << "()"; break;
      case kBinary:
        o << kBinaryNames[s.which] << "(in" << s.operand << shape_s(g.inputs[size_t(s.operand)].shape)
          << (s.view == 1 ? ".transpose(-1,-2)" : s.view == 2 ? ".flip({0})" : "") << ")";
        break;
      case kReshape: o << "reshape(" << ints_s(s.ints) << ")"; break;
      case kPermute: o << "permute(" << ints_s(s.ints) << ")"; break;
      case kExpand: o << "expand(" << ints_s(s.ints) << ")"; break;
      case kPad: o << "pad(" << pairs_s(s.pairs) << ", " << s.value << ")"; break;
      case kShrink: o << "shrink(" << pairs_s(s.pairs) << ")"; break;
      case kFlip: o << "flip(" << ints_s(s.ints) << ")"; break;
      case kReduce: o << kReduceNames[s.which] << "(" << ints_s(s.ints) << (s.keepdim ? ", keepdim" : "") << ")"; break;
      case kKinds: break;
    }
  }
  return o.str();
}

struct Gen {
  std::mt19937_64& g;
  int64_t ri(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g); }
  bool pct(int p) { return ri(0, 99) < p; }

  Graph make(DType d) {
    Graph gr{d, {}, {}};
    Shape sh;
    if (!pct(8))
      for (int64_t i = 0, n = ri(1, 3); i < n; i++) sh.push_back(ri(1, 5));
    gr.inputs.push_back(rnd(sh, d, Dom::Any, g));
    bool reduced = false;
    for (int64_t n = ri(6, 10), i = 0; i < n; i++) {
      int64_t nd = int64_t(sh.size()), numel = tg::prod(sh);
      Step st{Kind(ri(0, kKinds - 1))};
      if (st.kind == kReduce && (reduced || pct(35))) st.kind = Kind(ri(0, kFlip));  // at most one reduction: 1-2 kernels
      if ((st.kind == kExpand || st.kind == kPad) && numel > 300) st.kind = kShrink;      // keep the reference cheap
      switch (st.kind) {
        case kUnary: st.which = int(ri(0, 6)); break;
        case kBinary: {
          st.which = int(ri(0, 5));
          // the operand takes a suffix of the shape with some dims 1; where the chain has a 1, it may widen it
          Shape os(sh.begin() + ri(0, nd), sh.end()), out = sh;
          for (size_t j = 0; j < os.size(); j++) {
            size_t k = sh.size() - os.size() + j;
            if (os[j] == 1 && numel <= 300 && pct(30)) os[j] = out[k] = ri(2, 3);
            else if (pct(30)) os[j] = 1;
          }
          st.view = os.size() >= 2 && pct(25) ? 1 : !os.empty() && pct(15) ? 2 : 0;
          Shape stored = os;
          if (st.view == 1) std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
          st.operand = int(gr.inputs.size());
          gr.inputs.push_back(rnd(stored, d, st.which == 3 ? Dom::NonZero : Dom::Any, g));
          sh = out;
          break;
        }
        case kReshape: {
          Shape ns;
          if (nd && pct(30)) ns = {numel};
          else if (pct(15)) ns = sh, ns.insert(ns.begin() + ri(0, nd), 1);
          else {
            for (int64_t j = 0; j < nd; j++) {  // split an even dim or merge two neighbours
              int64_t x = sh[size_t(j)];
              if (x % 2 == 0 && x > 2 && pct(40)) ns.push_back(2), ns.push_back(x / 2);
              else if (j + 1 < nd && pct(30)) ns.push_back(x * sh[size_t(++j)]);
              else ns.push_back(x);
            }
            if (ns.size() > 5) ns = {numel};
          }
          sh = ns, st.ints = ns;
          if (!ns.empty() && numel > 0 && pct(30)) st.ints[size_t(ri(0, int64_t(ns.size()) - 1))] = -1;
          break;
        }
        case kPermute: {
          std::vector<int64_t> o(static_cast<size_t>(nd));
          std::iota(o.begin(), o.end(), 0);
          std::shuffle(o.begin(), o.end(), g);
          Shape ns;
          for (auto x : o) ns.push_back(sh[size_t(x)]);
          for (auto& x : o)
            if (pct(25)) x -= nd;  // negative axes
          sh = ns, st.ints = o;
          break;
        }
        case kExpand: {
          Shape ns = sh;
          bool widened = false;
          for (auto& x : ns)
            if (x == 1 && pct(70)) x = ri(2, 4), widened = true;
          if ((!widened || pct(30)) && ns.size() < 5) ns.insert(ns.begin(), ri(2, 3));
          st.ints = ns;
          for (size_t j = ns.size() - sh.size(); j < ns.size(); j++)
            if (ns[j] == sh[j - (ns.size() - sh.size())] && pct(30)) st.ints[j] = -1;  // -1 keeps a dim
          sh = ns;
          break;
        }
        case kPad:
          st.value = std::vector<double>{0.0, 0.0, 1.5, -2.0}[size_t(ri(0, 3))];
          for (auto& x : sh) {
            int64_t b = ri(0, 2), a = ri(0, 2);
            st.pairs.emplace_back(b, a), x += a + b;
          }
          break;
        case kShrink:
          for (auto& x : sh) {
            int64_t b = ri(0, std::max<int64_t>(x - 1, 0)), e = x == 0 ? 0 : pct(4) ? b : ri(b + 1, x);  // sometimes empty
            st.pairs.emplace_back(b, e), x = e - b;
          }
          break;
        case kFlip:
          for (int64_t j = 0; j < nd; j++)
            if (pct(50)) st.ints.push_back(pct(50) ? j : j - nd);
          break;
        case kReduce: {
          reduced = true;
          st.which = int(ri(0, 3)), st.keepdim = pct(50);
          for (int64_t j = 0; j < nd; j++)
            if (pct(50)) st.ints.push_back(pct(70) ? j : j - nd);
          if (st.ints.empty() && nd && pct(70)) st.ints.push_back(ri(0, nd - 1));  // empty axes reduce everything
          std::vector<bool> red(size_t(nd), st.ints.empty());
          for (auto a : st.ints) red[size_t(a < 0 ? a + nd : a)] = true;
          Shape ns;
          for (int64_t j = 0; j < nd; j++)
            if (!red[size_t(j)]) ns.push_back(sh[size_t(j)]);
            else if (st.keepdim) ns.push_back(1);
          sh = ns;
          break;
        }
        case kKinds: break;
      }
      gr.steps.push_back(st);
    }
    return gr;
  }
};

template <class T>
T run(const Graph& gr, const std::vector<T>& in) {
  T x = in[0];
  for (auto& s : gr.steps) {
    switch (s.kind) {
      case kUnary: {
        const int w = s.which;
        x = w == 0 ? x.neg() : w == 1 ? x.abs() : w == 2 ? x.relu() : w == 3 ? x.sin() : w == 4 ? x.cos() : w == 5 ? x.tanh() : x.sigmoid();
        break;
      }
      case kBinary: {
        T y = in[size_t(s.operand)];
        if (s.view == 1) y = y.transpose(-1, -2);
        if (s.view == 2) y = y.flip({0});
        const int w = s.which;
        x = w == 0 ? x.add(y) : w == 1 ? x.sub(y) : w == 2 ? x.mul(y) : w == 3 ? x.div(y) : w == 4 ? x.maximum(y) : x.minimum(y);
        break;
      }
      case kReshape: x = x.reshape(s.ints); break;
      case kPermute: x = x.permute(s.ints); break;
      case kExpand: x = x.expand(s.ints); break;
      case kPad: x = x.pad(s.pairs, s.value); break;
      case kShrink: x = x.shrink(s.pairs); break;
      case kFlip: x = x.flip(s.ints); break;
      case kReduce:
        x = s.which == 0 ? x.sum(s.ints, s.keepdim) : s.which == 1 ? x.max(s.ints, s.keepdim) : s.which == 2 ? x.min(s.ints, s.keepdim) : x.mean(s.ints, s.keepdim);
        break;
      case kKinds: break;
    }
  }
  return x;
}

double unit_roundoff(DType d) { return d == dt::float64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24); }

// every element of the library's result against the reference and its bound; a message listing the worst ones
std::string compare(const Graph& gr, Tensor t, const Ref& ref) {
  std::ostringstream msg;
  if (shape_s(t.shape()) != shape_s(ref.v.shape)) return "shape " + shape_s(t.shape()) + ", reference " + shape_s(ref.v.shape);
  if (t.dtype() != gr.dtype) return std::string("dtype ") + t.dtype().name() + ", want " + gr.dtype.name();
  size_t isz = size_t(gr.dtype.itemsize()), n = ref.v.v.size();
  std::vector<uint8_t> out(n * isz);
  t.to_data(out.data(), out.size());
  double u = unit_roundoff(gr.dtype);
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    double got = get_float(gr.dtype, out.data() + i * isz), want = ref.v.v[i], bound = 4 * u * ref.e.v[i];
    bool ok;
    if (!std::isfinite(want)) ok = (std::isnan(want) && std::isnan(got)) || got == want;
    else ok = !std::isfinite(bound) || std::fabs(got - want) <= bound;
    if (ok) continue;
    if (bad++ < 8) {
      char b[200];
      std::snprintf(b, sizeof b, "  [%zu] got %.17g want %.17g (diff %.3g, allowed %.3g)\n", i, got, want, std::fabs(got - want), bound);
      msg << b;
    }
  }
  if (!bad) return "";
  return std::to_string(bad) + " of " + std::to_string(n) + " elements outside the bound:\n" + msg.str();
}

uint64_t env_or(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : dflt;
}

TEST(RandomGraphs, Float32AndFloat64ChainsMatchTheReferenceWithinBounds) {
  const uint64_t seed = env_or("TG_RANDOM_GRAPHS_SEED", seed_of("random graphs, bounded")), count = env_or("TG_RANDOM_GRAPHS", 100);
  std::printf("[ GRAPHS   ] seed %llu, %llu graphs (TG_RANDOM_GRAPHS_SEED / TG_RANDOM_GRAPHS override)\n", (unsigned long long)seed,
              (unsigned long long)count);
  std::mt19937_64 g(seed);
  Gen gen{g};
  int failures = 0, ops = 0, per_kind[kKinds] = {};
  tg_counters c0{sizeof(tg_counters)}, c1{sizeof(tg_counters)};
  tg_counters_get(&c0);
  for (uint64_t i = 0; i < count && failures < 10; i++) {
    Graph gr = gen.make(i % 2 ? dt::float64 : dt::float32);
    ops += int(gr.steps.size());
    for (auto& st : gr.steps) per_kind[st.kind]++;
    std::string what = "graph " + std::to_string(i) + ": " + describe(gr);
    try {
      std::vector<Ref> rin;
      std::vector<Tensor> tin;
      for (auto& x : gr.inputs) rin.push_back(Ref::leaf(x)), tin.push_back(to_tensor(x));
      Ref ref = run(gr, rin);
      std::string err = compare(gr, run(gr, tin), ref);
      if (!err.empty()) failures++, ADD_FAILURE() << what << "\n  " << err;
    } catch (const tg::Error& e) {
      failures++, ADD_FAILURE() << what << "\n  the library threw " << tg_status_name(e.code) << ": " << e.what();
    } catch (const std::exception& e) {
      failures++, ADD_FAILURE() << what << "\n  threw " << e.what();
    }
  }
  tg_counters_get(&c1);
  std::printf("[ GRAPHS   ] %llu graphs, %d ops (unary %d, binary %d, reshape %d, permute %d, expand %d, pad %d, shrink %d, flip %d, "
              "reduce %d), %llu kernels compiled, %d failed\n",
              (unsigned long long)count, ops, per_kind[kUnary], per_kind[kBinary], per_kind[kReshape], per_kind[kPermute], per_kind[kExpand],
              per_kind[kPad], per_kind[kShrink], per_kind[kFlip], per_kind[kReduce], (unsigned long long)(c1.compile_count - c0.compile_count),
              failures);
}

}  // namespace
