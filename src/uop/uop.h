// UOp: immutable, hash-consed, reference-counted graph node. Creating the same (op, dtype, src, arg, tag) twice returns
// the same node; a node is freed when the last reference goes, and leaves the intern table then.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "helpers.h"
#include "uop/dtype.h"
#include "uop/ops.h"

namespace tg {

// Extension point for args that are objects (a Buffer, kernel info): identity, hash and printing are theirs.
struct ArgExt {
  virtual ~ArgExt() = default;
  virtual size_t hash() const { return std::hash<const void*>()(this); }
  virtual bool eq(const ArgExt& o) const { return this == &o; }
  virtual std::string str() const = 0;
};
struct VarArg {  // DEFINE_VAR: a named integer in [vmin, vmax]
  std::string name;
  int64_t vmin, vmax;
  bool operator==(const VarArg&) const = default;
};
using Shape = std::vector<int64_t>;
using Arg = std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>, VarArg, std::shared_ptr<const ArgExt>>;
bool arg_eq(const Arg& a, const Arg& b);  // bitwise for doubles, so NaN and -0.0 intern correctly
size_t arg_hash(const Arg& a);
std::string arg_str(const Arg& a);

class UOp;
// Owning pointer to a UOp (intrusive refcount). == compares identity, which is structural equality thanks to interning.
class UOpRef {
 public:
  UOpRef() = default;
  UOpRef(std::nullptr_t) {}
  explicit UOpRef(const UOp* p);  // takes a new reference
  UOpRef(const UOpRef& o);
  UOpRef(UOpRef&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  UOpRef& operator=(const UOpRef& o);
  UOpRef& operator=(UOpRef&& o) noexcept;
  ~UOpRef();
  const UOp* get() const { return p_; }
  const UOp* operator->() const { return p_; }
  const UOp& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const UOpRef& o) const { return p_ == o.p_; }
  bool operator==(std::nullptr_t) const { return p_ == nullptr; }

 private:
  friend class UOp;
  struct Adopt {};
  UOpRef(const UOp* p, Adopt) : p_(p) {}
  const UOp* p_ = nullptr;
};
using UOps = std::vector<UOpRef>;
struct UOpHash {
  size_t operator()(const UOpRef& u) const { return std::hash<const void*>()(u.get()); }
};
template <class V>
using UOpMap = std::unordered_map<UOpRef, V, UOpHash>;

class UOp {
 public:
  const Ops op;
  const DType dtype;
  const UOps src;
  const Arg arg;
  const Arg tag;

  // The one constructor: interned. Throws tg::Error when SPEC=1 and the node is malformed.
  static UOpRef make(Ops op, DType dtype = dtypes::void_, UOps src = {}, Arg arg = {}, Arg tag = {});
  static UOpRef const_(DType dtype, double v);  // CONST with the arg kind matching dtype (bool / int64 / double)
  static UOpRef const_int(DType dtype, int64_t v);
  static UOpRef variable(const std::string& name, int64_t vmin, int64_t vmax, DType dtype = dtypes::index);
  static UOpRef range(int64_t end, int64_t axis, int64_t kind = 0);
  static UOpRef range(UOpRef end, int64_t axis, int64_t kind = 0);  // a loop to a Variable
  static UOpRef sink(UOps srcs) { return make(Ops::SINK, dtypes::void_, std::move(srcs)); }
  static size_t live_count();  // nodes in the intern table (for leak tests)

  UOpRef ref() const { return UOpRef(this); }
  size_t hash() const { return hash_; }
  template <class T>
  const T& argv() const { return std::get<T>(arg); }
  const std::vector<int64_t>& arg_ints() const { return std::get<std::vector<int64_t>>(arg); }
  double const_value() const;  // CONST arg as double
  bool is_const() const { return op == Ops::CONST; }
  bool is_const(double v) const { return op == Ops::CONST && const_value() == v; }

  // value range for integer/bool nodes (saturating); floats are unbounded
  int64_t vmin() const { return vmin_; }
  int64_t vmax() const { return vmax_; }
  // tensor-level shape (movement ops, reduces, ALU of shaped srcs); has_shape() is false for kernel-level nodes
  bool has_shape() const { return has_shape_; }
  const Shape& shape() const { return shape_; }
  // Variable dimensions: per dim the DEFINE_VAR its size is bound to, or null; empty when every dim is a plain integer.
  // The shape holds the bound value. A SHRINK or EXPAND introduces them: its tag lists the dims, src[1..] the BINDs.
  const std::vector<const UOp*>& sym() const { return sym_; }

  // builders (a rule's right-hand side reads like math)
  UOpRef replace(Ops op) const;
  UOpRef replace_src(UOps src) const;
  UOpRef replace_arg(Arg arg) const;
  UOpRef replace_dtype(DType dt) const;
  UOpRef with_tag(Arg tag) const;
  UOpRef const_like(double v) const;
  UOpRef alu(Ops op, UOps more = {}) const;
  UOpRef cast(DType dt) const;
  UOpRef bitcast(DType dt) const;
  UOpRef lt(const UOpRef& b) const;
  UOpRef ne(const UOpRef& b) const;
  UOpRef eq(const UOpRef& b) const;
  UOpRef maximum(const UOpRef& b) const;
  UOpRef minimum(const UOpRef& b) const;
  UOpRef where(const UOpRef& a, const UOpRef& b) const;
  UOpRef logical_not() const;

  // algebra helpers
  int64_t const_factor() const;        // largest known integer factor of this expression (gcd of terms)
  UOpRef divides(int64_t v) const;     // this / v if exact, else null
  UOpRef pop_const(int64_t* c) const;  // split x+c into x and c (c=0 and self if no const term)
  void split_uop(Ops sep, UOps& out) const;  // flatten a chain of `sep` (ADD: terms)
  UOpRef simplify() const;                   // graph_rewrite with the symbolic table
  UOps toposort() const;                     // sources before users, this node last
  UOpRef substitute(const UOpMap<UOpRef>& m) const;
  std::string str() const;  // readable tree, shared nodes named once
  std::string arg_repr() const;  // the arg as tinygrad prints it: a reduce's op as Ops.ADD
  std::string repr() const;  // tinygrad's print(uop): UOp(Ops.ADD, dtypes.float32, arg=None, src=(...)), xN:= on shared nodes
  std::string render() const;  // infix rendering of index/symbolic expressions, e.g. "((x*4)+y)"

  UOp(const UOp&) = delete;
  UOp& operator=(const UOp&) = delete;

 private:
  friend class UOpRef;
  friend struct Interner;
  UOp(Ops op, DType dtype, UOps src, Arg arg, Arg tag, size_t hash);
  ~UOp() = default;
  std::string render_() const;
  void compute_range();
  void compute_shape();
  void compute_sym();
  size_t hash_;
  int64_t vmin_ = 0, vmax_ = 0;
  bool has_shape_ = false;
  Shape shape_;
  std::vector<const UOp*> sym_;
  mutable std::atomic<int32_t> rc_{0};
  mutable const UOp* next_free_ = nullptr;  // links the dying nodes a thread frees (freeing must not allocate)
};

// operators build nodes; an arithmetic scalar on either side becomes a CONST like the UOp
UOpRef operator+(const UOpRef& a, const UOpRef& b);
UOpRef operator-(const UOpRef& a, const UOpRef& b);
UOpRef operator*(const UOpRef& a, const UOpRef& b);
UOpRef operator/(const UOpRef& a, const UOpRef& b);  // IDIV for ints (truncating, like C), FDIV for floats
UOpRef operator%(const UOpRef& a, const UOpRef& b);  // MOD (C remainder)
UOpRef operator<(const UOpRef& a, const UOpRef& b);  // CMPLT
UOpRef operator-(const UOpRef& a);
UOpRef operator&(const UOpRef& a, const UOpRef& b);
UOpRef operator|(const UOpRef& a, const UOpRef& b);
UOpRef operator^(const UOpRef& a, const UOpRef& b);
template <class T>
UOpRef scalar_const_like(const UOpRef& like, T v) {  // integers stay exact past 2^53
  if constexpr (std::is_integral_v<T>) return UOp::const_int(like->dtype, int64_t(v));
  else return like->const_like(double(v));
}
#define TG_SCALAR_OP(OP)                                                                    \
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>                     \
  UOpRef operator OP(const UOpRef& a, T b) { return a OP scalar_const_like(a, b); }        \
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>                     \
  UOpRef operator OP(T a, const UOpRef& b) { return scalar_const_like(b, a) OP b; }
TG_SCALAR_OP(+)
TG_SCALAR_OP(-)
TG_SCALAR_OP(*)
TG_SCALAR_OP(/)
TG_SCALAR_OP(%)
TG_SCALAR_OP(<)
#undef TG_SCALAR_OP

// evaluate an ALU op on constants with the dtype's semantics (wraparound ints, C division)
double exec_alu(Ops op, DType dtype, const std::vector<double>& vals);
// truncate a value to what `dtype` can hold (C cast semantics)
double truncate_to(DType dtype, double v);
// the bits an integer dtype holds for v: truncated toward zero, wrapped to the width (NaN and inf give 0); uint64 as int64
int64_t int_bits(DType dtype, double v);

// Scalar lane i of a vector value (folds GEP of VECTORIZE, of GEP and of a splat CONST); `gep`: the lanes as one value.
UOpRef lane_of(const UOpRef& v, int64_t i);
UOpRef gep(const UOpRef& v, std::vector<int64_t> lanes);

}  // namespace tg
