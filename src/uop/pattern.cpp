#include "uop/pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "uop/spec.h"

namespace tg {

UPat::UPat(Ops op, std::vector<UPat> s, const char* n, Loc l) : UPat({op}, std::move(s), n, l) {}
UPat::UPat(std::initializer_list<Ops> o, std::vector<UPat> s, const char* n, Loc l) : src(std::move(s)), name(n), file(l.file_name()), line(l.line()) {
  bool all_comm = o.size() > 0;
  for (Ops x : o) ops.set(size_t(x)), all_comm &= GroupOp::commutative(x);
  // commutative ops match their two sources in either order unless .ordered() is asked for
  mode = src.empty() ? SrcMode::Any : (all_comm && src.size() == 2) ? SrcMode::Permute : SrcMode::Ordered;
}
UPat UPat::named(const char* n) const { UPat p = *this; p.name = n; return p; }
UPat UPat::dtype(std::vector<DType> d) const { UPat p = *this; p.dts = std::move(d); return p; }
UPat UPat::scalar_kind(bool (*pred)(DType)) const { UPat p = *this; p.kind_pred = pred; return p; }
UPat UPat::with_arg(Arg a) const { UPat p = *this; p.arg = std::move(a); return p; }
UPat UPat::with_value(double v) const { UPat p = *this; p.value = v; return p; }
UPat UPat::ordered() const { UPat p = *this; if (p.mode == SrcMode::Permute) p.mode = SrcMode::Ordered; return p; }
UPat UPat::any_len() const { UPat p = *this; p.prefix = true; return p; }
UPat UPat::each(UPat e) const { UPat p = *this; p.src = {std::move(e)}; p.mode = SrcMode::Each; return p; }
UPat UPat::at(Loc l) const { UPat p = *this; p.file = l.file_name(), p.line = l.line(); return p; }
UPat UPat::alu(Ops op, std::vector<UPat> more) const {
  more.insert(more.begin(), *this);
  UPat p(op, std::move(more));
  p.file = file, p.line = line;
  return p;
}
std::string UPat::str(int depth) const {
  std::string s = name ? std::string(name) + ":" : "";
  if (ops.none()) s += name ? "" : "*";
  else {
    std::string o;
    for (int i = 0; i < kNumOps; i++)
      if (ops.test(size_t(i))) o += (o.empty() ? "" : "|") + std::string(op_name(Ops(i)));
    s += ops.count() > 1 ? "{" + o + "}" : o;
  }
  if (value) {
    char b[32];
    std::snprintf(b, sizeof b, " %g", *value);
    s += b;
  }
  if (!dts.empty()) s += "." + dts[0].name() + (dts.size() > 1 ? "|.." : "");
  if (src.empty()) return s;
  if (depth <= 0) return s + "(..)";
  s += "(";
  for (size_t i = 0; i < src.size(); i++) s += (i ? ", " : "") + src[i].str(depth - 1);
  return s + (prefix ? ", ..)" : mode == SrcMode::Each ? "...)" : ")");
}
UPat operator+(const UPat& a, const UPat& b) { return a.alu(Ops::ADD, {b}); }
UPat operator*(const UPat& a, const UPat& b) { return a.alu(Ops::MUL, {b}); }
UPat operator/(const UPat& a, const UPat& b) { return a.alu(Ops::IDIV, {b}); }
UPat operator%(const UPat& a, const UPat& b) { return a.alu(Ops::MOD, {b}); }
UPat operator<(const UPat& a, const UPat& b) { return a.alu(Ops::CMPLT, {b}); }
UPat operator+(const UPat& a, double c) { return a + UPat::const_(c); }
UPat operator*(const UPat& a, double c) { return a * UPat::const_(c); }
UPat operator/(const UPat& a, double c) { return a / UPat::const_(c); }
UPat operator%(const UPat& a, double c) { return a % UPat::const_(c); }
UPat operator<(const UPat& a, double c) { return a < UPat::const_(c); }

const UOp* Match::get(const char* n) const {
  for (auto& [k, v] : binds)
    if (std::strcmp(k, n) == 0) return v;
  return nullptr;
}
UOpRef Match::operator[](const char* n) const {
  const UOp* u = get(n);
  TG_CHECK(u, TG_ERROR_INTERNAL, std::string("pattern: no binding named '") + n + "'");
  return u->ref();
}

// Matching backtracks across nested choices: each step gets the rest of the match as a continuation, so a commutative
// source that binds a name one way is retried the other way when a later part of the pattern disagrees.
namespace {
class Cont {  // a non-owning bool() callable
 public:
  template <class F>
  Cont(F& f) : obj_(&f), fn_([](void* o) { return (*static_cast<F*>(o))(); }) {}
  bool operator()() const { return fn_(obj_); }

 private:
  void* obj_;
  bool (*fn_)(void*);
};
bool match(const UPat& p, const UOp* u, Match& m, Cont k);
// pats[i] against srcs[i] for every i (or p against every src when `each`), then k
bool match_list(const UPat* pats, bool each, const UOp* const* srcs, size_t n, Match& m, Cont k) {
  if (n == 0) return k();
  auto rest = [&] { return match_list(each ? pats : pats + 1, each, srcs + 1, n - 1, m, k); };
  return match(*pats, srcs[0], m, Cont(rest));
}
bool match(const UPat& p, const UOp* u, Match& m, Cont k) {
  if (p.ops.any() && !p.ops.test(size_t(u->op))) return false;
  if (!p.dts.empty() && std::find(p.dts.begin(), p.dts.end(), u->dtype) == p.dts.end()) return false;
  if (p.kind_pred && !p.kind_pred(u->dtype)) return false;
  if (p.arg && !arg_eq(*p.arg, u->arg)) return false;
  if (p.value && !(u->op == Ops::CONST && u->const_value() == *p.value)) return false;
  size_t mark = m.binds.size();
  if (p.name) {
    if (const UOp* prev = m.get(p.name)) {
      if (prev != u) return false;  // a repeated name must bind the same node
    } else m.binds.emplace_back(p.name, u);
  }
  size_t n = u->src.size();
  const UOp* small[4];
  std::vector<const UOp*> big(n > 4 ? n : 0);
  const UOp** src = n > 4 ? big.data() : small;
  for (size_t i = 0; i < n && p.mode != UPat::SrcMode::Any; i++) src[i] = u->src[i].get();
  bool ok = false;
  switch (p.mode) {
    case UPat::SrcMode::Any: ok = k(); break;
    case UPat::SrcMode::Each: ok = match_list(p.src.data(), true, src, n, m, k); break;
    case UPat::SrcMode::Ordered:
      ok = (p.prefix ? n >= p.src.size() : n == p.src.size()) && match_list(p.src.data(), false, src, p.src.size(), m, k);
      break;
    case UPat::SrcMode::Permute:  // two sources of a commutative op: as given, then swapped
      if (n != 2 || p.src.size() != 2) break;
      ok = match_list(p.src.data(), false, src, 2, m, k);
      if (!ok && src[0] != src[1]) std::swap(src[0], src[1]), ok = match_list(p.src.data(), false, src, 2, m, k);
  }
  if (!ok) m.binds.resize(mark);
  return ok;
}
}  // namespace

bool upat_match(const UPat& p, const UOp* u, Match& m) {
  auto done = [] { return true; };
  return match(p, u, m, Cont(done));
}

PatternMatcher::PatternMatcher(std::vector<Rule> rules, std::string name)
    : name_(std::move(name)), rules_(std::move(rules)), by_op_(size_t(kNumOps)),
      hits_(std::make_shared<std::vector<std::atomic<uint64_t>>>(rules_.size())) {
  for (uint32_t i = 0; i < rules_.size(); i++)
    for (int o = 0; o < kNumOps; o++)
      if (rules_[i].first.ops.none() || rules_[i].first.ops.test(size_t(o))) by_op_[size_t(o)].push_back(i);
}
PatternMatcher PatternMatcher::operator+(const PatternMatcher& o) const {
  std::vector<Rule> r = rules_;
  r.insert(r.end(), o.rules_.begin(), o.rules_.end());
  return PatternMatcher(std::move(r), name_ + "+" + o.name_);
}

static const bool track_stats = getenv_int("TRACK_MATCH_STATS", 0) > 0;
const std::shared_ptr<const viz::RuleLabels>& PatternMatcher::labels() const {
  std::call_once(lazy_->once, [&] {
    auto l = std::make_shared<viz::RuleLabels>();
    for (size_t i = 0; i < rules_.size(); i++) {
      const UPat& p = rules_[i].first;
      l->label.push_back(name_ + " #" + std::to_string(i) + " " + p.str());
      std::string f = p.file ? p.file : "";
      if (auto at = f.rfind("src/"); at != std::string::npos) f = f.substr(at);
      bool generic = f.empty() || f == "src/uop/pattern.h" || f == "src/uop/pattern.cpp";  // a helper's line says nothing
      l->loc.push_back(generic ? "" : f + ":" + std::to_string(p.line));
    }
    lazy_->labels = std::move(l);
  });
  return lazy_->labels;
}

UOpRef PatternMatcher::rewrite(const UOp* u, void* ctx, uint32_t* fired) const {
  Match m{u, ctx, {}};
  for (uint32_t i : by_op_[size_t(u->op)]) {
    m.binds.clear();
    if (!upat_match(rules_[i].first, u, m)) continue;
    UOpRef r = rules_[i].second(m);
    if (r && r.get() != u) {
      if (track_stats || DEBUG >= 5) (*hits_)[i].fetch_add(1, std::memory_order_relaxed);
      if (fired) *fired = i;
      return r;
    }
  }
  return {};
}
void PatternMatcher::print_stats() const {
  for (size_t i = 0; i < rules_.size(); i++)
    if (auto h = (*hits_)[i].load()) std::fprintf(stderr, "  %-24s rule %3zu: %llu hits\n", name_.c_str(), i, (unsigned long long)h);
}

UOpRef graph_rewrite(const UOpRef& root, const PatternMatcher& pm, void* ctx, bool top_down, const char* stage) {
  struct Item {
    const UOp* n;
    int stage;
    UOpRef new_n;
  };
  std::unordered_map<const UOp*, UOpRef> replace;
  std::vector<UOpRef> keep;  // rewritten intermediates must stay alive while `replace` points at them
  std::vector<Item> stack{{root.get(), 0, root}};
  // a deep graph needs a deep stack, so the loop guard counts rewrites: rules that cycle keep rewriting the same nodes
  // while `replace` stops growing
  size_t rewrites = 0;
  viz::Rewrite* rec = viz::on() ? viz::begin_rewrite(stage, root) : nullptr;
  uint32_t fired = 0;
  while (!stack.empty()) {
    Item it = std::move(stack.back());
    stack.pop_back();
    if (replace.count(it.n)) continue;
    if (it.stage == 0) {
      if (top_down) {
        UOpRef cur = it.new_n;
        for (int n = 0; UOpRef x = pm.rewrite(cur.get(), ctx, &fired); n++) {
          TG_CHECK(n < 100000 && ++rewrites < 1000000 + 64 * replace.size(), TG_ERROR_INTERNAL, "graph_rewrite: rules rewrite in a loop (" + pm.name() + ")");
          if (rec) viz::add_step(rec, cur.get(), x, pm.labels(), fired);
          cur = std::move(x);
        }
        if (auto f = replace.find(cur.get()); f != replace.end()) {
          replace[it.n] = f->second;
          continue;
        }
        it.new_n = cur;
      }
      const UOp* nn = it.new_n.get();
      stack.push_back({it.n, 1, it.new_n});
      for (auto s = nn->src.rbegin(); s != nn->src.rend(); ++s)
        if (!replace.count(s->get())) stack.push_back({s->get(), 0, *s});
    } else if (it.stage == 1) {
      const UOp* nn = it.new_n.get();
      UOps new_src;
      new_src.reserve(nn->src.size());
      bool same = true;
      for (auto& s : nn->src) {
        auto& r = replace.at(s.get());
        same &= r.get() == s.get();
        new_src.push_back(r);
      }
      if (same) {
        UOpRef x = top_down ? UOpRef() : pm.rewrite(nn, ctx, &fired);
        if (x && rec) viz::add_step(rec, nn, x, pm.labels(), fired);
        if (!x) {
          replace[it.n] = it.new_n;
          if (it.n != nn) keep.push_back(it.new_n);
          continue;
        }
        stack.push_back({it.n, 2, x});
        stack.push_back({x.get(), 0, x});
        TG_CHECK(++rewrites < 1000000 + 64 * replace.size(), TG_ERROR_INTERNAL, "graph_rewrite: rules rewrite in a loop (" + pm.name() + ")");
      } else {
        UOpRef x = nn->replace_src(std::move(new_src));
        stack.push_back({it.n, 2, x});
        stack.push_back({x.get(), 0, x});
      }
      keep.push_back(stack.back().new_n);
    } else {
      replace[it.n] = replace.at(it.new_n.get());
    }
  }
  UOpRef out = replace.at(root.get());
  if (rec) viz::end_rewrite(rec, out);
  if (stage && DEBUG >= 6) std::fprintf(stderr, "=== after %s ===\n%s", stage, out->str().c_str());
  if (SPEC >= 1) spec::verify(out);
  return out;
}

// ---- substitute: replace nodes by identity; a replacement is not itself searched again ----
UOpRef UOp::substitute(const UOpMap<UOpRef>& m) const {
  std::unordered_map<const UOp*, UOpRef> done;
  for (auto& n : toposort()) {
    if (auto it = m.find(n); it != m.end()) {
      done[n.get()] = it->second;
      continue;
    }
    UOps src;
    bool same = true;
    for (auto& s : n->src) src.push_back(done.at(s.get())), same &= src.back() == s;
    done[n.get()] = same ? n : n->replace_src(std::move(src));
  }
  return done.at(this);
}

}  // namespace tg
