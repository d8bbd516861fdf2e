// UPat / PatternMatcher / graph_rewrite: the only way graphs are transformed.
// A rule is (UPat, fn): fn gets the bindings and returns a replacement node, or null for "no match, try the next rule".
#pragma once
#include <bitset>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {

class UPat {
 public:
  enum class SrcMode : uint8_t { Any, Ordered, Permute, Each };

  UPat() = default;  // matches anything
  UPat(Ops op, std::vector<UPat> src = {}, const char* name = nullptr);
  UPat(std::initializer_list<Ops> ops, std::vector<UPat> src = {}, const char* name = nullptr);

  static UPat var(const char* name = nullptr) { return UPat().named(name); }
  static UPat var(const char* name, DType dt) { return UPat().named(name).dtype({dt}); }
  static UPat cvar(const char* name = nullptr) { return UPat(Ops::CONST).named(name); }
  static UPat cvar(const char* name, DType dt) { return UPat(Ops::CONST).named(name).dtype({dt}); }
  static UPat const_(double v) { return UPat(Ops::CONST).with_value(v); }
  static UPat ops_(std::initializer_list<Ops> ops, const char* name = nullptr) { return UPat(ops, {}, name); }

  UPat named(const char* n) const;
  UPat dtype(std::vector<DType> dts) const;  // exact dtype match (any of)
  UPat scalar_kind(bool (*pred)(DType)) const;  // e.g. dtypes::is_int
  UPat with_arg(Arg a) const;
  UPat with_value(double v) const;  // a CONST whose value is v (any dtype)
  UPat ordered() const;             // match srcs in order even for commutative ops
  UPat any_len() const;             // srcs given are a prefix
  UPat each(UPat p) const;          // every src matches p (any count)

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
  // the first rule that matches and returns a different node wins; null if none
  UOpRef rewrite(const UOp* u, void* ctx = nullptr) const;
  const std::string& name() const { return name_; }
  size_t size() const { return rules_.size(); }
  void print_stats() const;  // rule hit counts (TRACK_MATCH_STATS / DEBUG>=5)

 private:
  std::string name_;
  std::vector<Rule> rules_;
  std::vector<std::vector<uint32_t>> by_op_;  // op -> rule indices, in order
  std::shared_ptr<std::vector<std::atomic<uint64_t>>> hits_;
};

bool upat_match(const UPat& p, const UOp* u, Match& m);

// Rewrite to a fixed point. Default: a node's sources are rewritten before the node (bottom-up). top_down: a node is
// rewritten before its sources are visited (tinygrad's bottom_up=True), so a rule can see the original subgraph.
UOpRef graph_rewrite(const UOpRef& root, const PatternMatcher& pm, void* ctx = nullptr, bool top_down = false, const char* stage = nullptr);

}  // namespace tg
