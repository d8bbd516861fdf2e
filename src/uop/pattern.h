// UPat / PatternMatcher / graph_rewrite: the only way graphs are transformed.
// A rule is (UPat, fn): fn gets the bindings and returns a replacement node, or null for "no match, try the next rule".
#pragma once
#include <bitset>
#include <functional>
#include <mutex>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "uop/uop.h"
#include "uop/viz.h"

namespace tg {

class UPat {
 public:
  enum class SrcMode : uint8_t { Any, Ordered, Permute, Each };

  using Loc = std::source_location;
  UPat() = default;  // matches anything
  // `loc`: where the pattern is written, which VIZ shows beside a rule that fired (the operators keep their left side's)
  UPat(Ops op, std::vector<UPat> src = {}, const char* name = nullptr, Loc loc = Loc::current());
  UPat(std::initializer_list<Ops> ops, std::vector<UPat> src = {}, const char* name = nullptr, Loc loc = Loc::current());

  static UPat var(const char* name = nullptr, Loc l = Loc::current()) { return UPat().at(l).named(name); }
  static UPat var(const char* name, DType dt, Loc l = Loc::current()) { return UPat().at(l).named(name).dtype({dt}); }
  static UPat cvar(const char* name = nullptr, Loc l = Loc::current()) { return UPat(Ops::CONST, {}, nullptr, l).named(name); }
  static UPat cvar(const char* name, DType dt, Loc l = Loc::current()) { return UPat(Ops::CONST, {}, nullptr, l).named(name).dtype({dt}); }
  static UPat const_(double v, Loc l = Loc::current()) { return UPat(Ops::CONST, {}, nullptr, l).with_value(v); }
  static UPat ops_(std::initializer_list<Ops> ops, const char* name = nullptr, Loc l = Loc::current()) { return UPat(ops, {}, name, l); }

  UPat named(const char* n) const;
  UPat dtype(std::vector<DType> dts) const;  // exact dtype match (any of)
  UPat scalar_kind(bool (*pred)(DType)) const;  // e.g. dtypes::is_int
  UPat with_arg(Arg a) const;
  UPat with_value(double v) const;  // a CONST whose value is v (any dtype)
  UPat ordered() const;             // match srcs in order even for commutative ops
  UPat any_len() const;             // srcs given are a prefix
  UPat each(UPat p) const;          // every src matches p (any count)
  UPat at(Loc l) const;
  std::string str(int depth = 3) const;  // "ADD(x, c:CONST)"

  // build patterns with operators: commutative ops match in either order
  UPat alu(Ops op, std::vector<UPat> more = {}) const;

  std::bitset<kNumOps> ops;  // empty: any op
  std::vector<DType> dts;
  bool (*kind_pred)(DType) = nullptr;
  std::vector<UPat> src;
  SrcMode mode = SrcMode::Any;
  bool prefix = false;
  const char* name = nullptr;
  std::optional<Arg> arg;
  std::optional<double> value;
  const char* file = nullptr;
  uint32_t line = 0;
};
UPat operator+(const UPat& a, const UPat& b);
UPat operator*(const UPat& a, const UPat& b);
UPat operator/(const UPat& a, const UPat& b);  // IDIV
UPat operator%(const UPat& a, const UPat& b);
UPat operator<(const UPat& a, const UPat& b);
UPat operator+(const UPat& a, double c);
UPat operator*(const UPat& a, double c);
UPat operator/(const UPat& a, double c);
UPat operator%(const UPat& a, double c);
UPat operator<(const UPat& a, double c);

// What a rule's function sees: the matched root, named bindings and the rewrite context.
class Match {
 public:
  const UOp* root;
  void* ctx_ = nullptr;
  std::vector<std::pair<const char*, const UOp*>> binds;
  UOpRef operator[](const char* name) const;  // throws if unbound
  const UOp* get(const char* name) const;     // null if unbound
  template <class T>
  T& ctx() const { return *static_cast<T*>(ctx_); }
};
using RewriteFn = std::function<UOpRef(const Match&)>;
using Rule = std::pair<UPat, RewriteFn>;

class PatternMatcher {
 public:
  PatternMatcher(std::vector<Rule> rules, std::string name = "");
  PatternMatcher operator+(const PatternMatcher& o) const;
  // the first rule that matches and returns a different node wins; null if none. `fired`: that rule's index
  UOpRef rewrite(const UOp* u, void* ctx = nullptr, uint32_t* fired = nullptr) const;
  // the rules' names and source lines for VIZ, made on first use
  const std::shared_ptr<const viz::RuleLabels>& labels() const;
  const std::string& name() const { return name_; }
  size_t size() const { return rules_.size(); }
  void print_stats() const;  // rule hit counts (TRACK_MATCH_STATS / DEBUG>=5)

 private:
  std::string name_;
  std::vector<Rule> rules_;
  std::vector<std::vector<uint32_t>> by_op_;  // op -> rule indices, in order
  std::shared_ptr<std::vector<std::atomic<uint64_t>>> hits_;
  struct Lazy {
    std::once_flag once;
    std::shared_ptr<const viz::RuleLabels> labels;
  };
  std::shared_ptr<Lazy> lazy_ = std::make_shared<Lazy>();
};

bool upat_match(const UPat& p, const UOp* u, Match& m);

// Rewrite to a fixed point. Default: a node's sources are rewritten before the node (bottom-up). top_down: a node is
// rewritten before its sources are visited (tinygrad's bottom_up=True), so a rule can see the original subgraph.
UOpRef graph_rewrite(const UOpRef& root, const PatternMatcher& pm, void* ctx = nullptr, bool top_down = false, const char* stage = nullptr);

}  // namespace tg
