#include "uop/uop.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numeric>
#include <unordered_set>

#include "uop/spec.h"
#include "uop/symbolic.h"

namespace tg {

std::string_view op_name(Ops op) {
  static const char* names[] = {
#define TG_OP_NAME(x) #x,
      TG_OPS(TG_OP_NAME)
#undef TG_OP_NAME
  };
  return int(op) < kNumOps ? names[int(op)] : "?";
}

// ---- args ----
static uint64_t dbits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
bool arg_eq(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (auto x = std::get_if<double>(&a)) return dbits(*x) == dbits(std::get<double>(b));
  if (auto x = std::get_if<VarArg>(&a)) {
    auto& y = std::get<VarArg>(b);
    return x->name == y.name && x->vmin == y.vmin && x->vmax == y.vmax;
  }
  if (auto x = std::get_if<std::shared_ptr<const ArgExt>>(&a)) {
    auto& y = std::get<std::shared_ptr<const ArgExt>>(b);
    return x->get() == y.get() || (*x && y && (*x)->eq(*y));
  }
  return a == b;
}
size_t arg_hash(const Arg& a) {
  size_t h = a.index();
  std::visit(
      [&](auto&& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, double>) h = hash_combine(h, dbits(v));
        else if constexpr (std::is_same_v<T, std::string>) h = hash_combine(h, std::hash<std::string>()(v));
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (auto x : v) h = hash_combine(h, size_t(x));
        } else if constexpr (std::is_same_v<T, VarArg>) h = hash_combine(hash_combine(std::hash<std::string>()(v.name), size_t(v.vmin)), size_t(v.vmax));
        else if constexpr (std::is_same_v<T, std::shared_ptr<const ArgExt>>) h = hash_combine(h, v ? v->hash() : 0);
        else h = hash_combine(h, size_t(v));
      },
      a);
  return h;
}
std::string arg_str(const Arg& a) {
  return std::visit(
      [](auto&& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "None";
        else if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) {  // Python's repr: the shortest text that reads back, 1.0 not 1
          if (std::isnan(v)) return "nan";
          if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
          std::string r;
          for (int p = 1; p <= 17; p++)
            if (r = strformat("%.*g", p, v); std::strtod(r.c_str(), nullptr) == v) break;
          if (r.find_first_of(".e") == std::string::npos) r += ".0";
          return r;
        } else if constexpr (std::is_same_v<T, std::string>) return "'" + v + "'";
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {  // a tuple: (2, 3), (2,)
          std::string r = "(";
          for (size_t i = 0; i < v.size(); i++) r += (i ? ", " : "") + std::to_string(v[i]);
          return r + (v.size() == 1 ? ",)" : ")");
        }
        else if constexpr (std::is_same_v<T, VarArg>) return strformat("('%s', %lld, %lld)", v.name.c_str(), (long long)v.vmin, (long long)v.vmax);
        else return v ? v->str() : "None";
      },
      a);
}

// ---- interning ----
struct Interner {
  struct Key {
    Ops op;
    DType dtype;
    const UOps* src;
    const Arg* arg;
    const Arg* tag;
    size_t hash;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(const UOp* u) const { return u->hash_; }
    size_t operator()(const Key& k) const { return k.hash; }
  };
  struct Eq {
    using is_transparent = void;
    static bool same(Ops op, DType dt, const UOps& src, const Arg& arg, const Arg& tag, const UOp* u) {
      return u->op == op && u->dtype == dt && u->src == src && arg_eq(u->arg, arg) && arg_eq(u->tag, tag);
    }
    bool operator()(const UOp* a, const UOp* b) const { return a == b; }
    bool operator()(const Key& k, const UOp* u) const { return k.hash == u->hash_ && same(k.op, k.dtype, *k.src, *k.arg, *k.tag, u); }
    bool operator()(const UOp* u, const Key& k) const { return (*this)(k, u); }
  };
  static constexpr size_t kShards = 64;
  struct Shard {
    std::mutex mu;
    std::unordered_set<UOp*, Hash, Eq> set;
  };
  Shard shards[kShards];
  Shard& shard(size_t h) { return shards[(h >> 7) % kShards]; }
  static void destroy(const UOp* u) { delete u; }
  static Interner& get() {
    static Interner* in = new Interner();  // never destroyed: nodes may outlive static destruction order
    return *in;
  }
  // Nodes whose last reference dropped are freed iteratively (a long chain would otherwise recurse once per node) and
  // without allocating: this runs in destructors, where a std::bad_alloc would be std::terminate. The dying nodes wait
  // on a list linked through the nodes themselves while this thread frees, or holds a shard lock (UOp::make).
  static inline thread_local const UOp* dying = nullptr;
  static inline thread_local bool busy = false;
  static void release(const UOp* u) noexcept {
    u->next_free_ = dying, dying = u;
    if (!busy) drain();
  }
  static void drain() noexcept {
    busy = true;
    while (dying) {
      const UOp* n = dying;
      dying = n->next_free_;
      auto& sh = get().shard(n->hash());
      {
        std::lock_guard<std::mutex> lk(sh.mu);
        auto it = sh.set.find(const_cast<UOp*>(n));
        if (it != sh.set.end() && *it == n) sh.set.erase(it);
      }
      destroy(n);  // releasing its sources may put more nodes on the list
    }
    busy = false;
  }
  // Defers the frees of nodes dying on this thread (UOp::make's sources, when making a node fails) until it ends: they
  // may be in the shard it locks.
  struct Hold {
    bool outer = !busy;
    Hold() { busy = true; }
    ~Hold() {
      if (outer) busy = false, drain();
    }
  };
};

static size_t node_hash(Ops op, DType dt, const UOps& src, const Arg& arg, const Arg& tag) {
  size_t h = hash_combine(size_t(op) * 0x100000001b3ull, dt.hash());
  for (auto& s : src) h = hash_combine(h, s->hash());
  h = hash_combine(h, arg_hash(arg));
  if (tag.index() != 0) h = hash_combine(h, arg_hash(tag));
  return h;
}

UOp::UOp(Ops op, DType dtype, UOps src, Arg arg, Arg tag, size_t hash)
    : op(op), dtype(dtype), src(std::move(src)), arg(std::move(arg)), tag(std::move(tag)), hash_(hash) {
  compute_range();
  compute_shape();
  compute_sym();
}

UOpRef UOp::make(Ops op, DType dtype, UOps src, Arg arg, Arg tag) {
  if (SPEC.get() >= 1) spec::check_node(op, dtype, src, arg);
  // the range and shape computations index sources: a wrong count must be an error even with SPEC off
  else if ((GroupOp::alu(op) && src.size() != size_t(GroupOp::alu_arity(op))) || ((GroupOp::movement(op) || op == Ops::REDUCE_AXIS) && src.size() != 1) ||
           ((op == Ops::RANGE || op == Ops::SPECIAL || op == Ops::CAST || op == Ops::BIND) && src.empty()))
    spec::check_node(op, dtype, src, arg);
  size_t h = node_hash(op, dtype, src, arg, tag);
  auto& sh = Interner::get().shard(h);
  Interner::Hold hold;  // outlives the lock
  std::lock_guard<std::mutex> lk(sh.mu);
  auto it = sh.set.find(Interner::Key{op, dtype, &src, &arg, &tag, h});
  if (it != sh.set.end()) {
    // take a reference only if the node is not already dying (refcount 0 means its destructor is on its way)
    int32_t c = (*it)->rc_.load(std::memory_order_relaxed);
    while (c > 0)
      if ((*it)->rc_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) return UOpRef(*it, UOpRef::Adopt{});
    sh.set.erase(it);  // dying: replace its entry with a fresh node
  }
  UOp* u = new UOp(op, dtype, std::move(src), std::move(arg), std::move(tag), h);
  try {
    sh.set.insert(u);
  } catch (...) {  // no memory for the table's entry: the node goes, once the lock is released
    Interner::release(u);
    throw;
  }
  u->rc_.store(1, std::memory_order_relaxed);
  return UOpRef(u, UOpRef::Adopt{});
}

size_t UOp::live_count() {
  size_t n = 0;
  for (auto& sh : Interner::get().shards) {
    std::lock_guard<std::mutex> lk(sh.mu);
    n += sh.set.size();
  }
  return n;
}

UOpRef::UOpRef(const UOp* p) : p_(p) {
  if (p_) p_->rc_.fetch_add(1, std::memory_order_relaxed);
}
UOpRef::UOpRef(const UOpRef& o) : p_(o.p_) {
  if (p_) p_->rc_.fetch_add(1, std::memory_order_relaxed);
}
UOpRef& UOpRef::operator=(const UOpRef& o) {
  if (o.p_) o.p_->rc_.fetch_add(1, std::memory_order_relaxed);
  const UOp* old = p_;
  p_ = o.p_;
  if (old && old->rc_.fetch_sub(1, std::memory_order_acq_rel) == 1) Interner::release(old);
  return *this;
}
UOpRef& UOpRef::operator=(UOpRef&& o) noexcept {
  if (this != &o) {
    const UOp* old = p_;
    p_ = o.p_;
    o.p_ = nullptr;
    if (old && old->rc_.fetch_sub(1, std::memory_order_acq_rel) == 1) Interner::release(old);
  }
  return *this;
}
UOpRef::~UOpRef() {
  if (p_ && p_->rc_.fetch_sub(1, std::memory_order_acq_rel) == 1) Interner::release(p_);
}

// ---- value ranges (integers and bools only; saturating int64) ----
static int64_t sat(__int128 v) { return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : int64_t(v); }
static bool ranged(DType d) { return !d.ptr && d.count == 1 && (dtypes::is_int(d) || dtypes::is_bool(d)); }

void UOp::compute_range() {
  if (!ranged(dtype)) {
    vmin_ = INT64_MIN, vmax_ = INT64_MAX;
    return;
  }
  double dlo = dtypes::min(dtype), dhi = dtypes::max(dtype);
  int64_t lo = dlo <= -9.2e18 ? INT64_MIN : int64_t(dlo), hi = dhi >= 9.2e18 ? INT64_MAX : int64_t(dhi);
  auto set = [&](__int128 a, __int128 b) {
    if (a >= lo && b <= hi && a <= b) vmin_ = sat(a), vmax_ = sat(b);
    else vmin_ = lo, vmax_ = hi;  // could overflow the dtype: no claim
  };
  set(lo, hi);
  auto s = [&](int i) { return src[size_t(i)].get(); };
  switch (op) {
    case Ops::CONST: {
      int64_t v = std::holds_alternative<bool>(arg) ? int64_t(std::get<bool>(arg)) : std::get<int64_t>(arg);
      set(v, v);
      break;
    }
    case Ops::DEFINE_VAR: set(std::get<VarArg>(arg).vmin, std::get<VarArg>(arg).vmax); break;
    case Ops::BIND: set(s(0)->vmin_, s(0)->vmax_); break;
    case Ops::RANGE:
    case Ops::SPECIAL: set(0, std::max<__int128>(0, __int128(s(0)->vmax_) - 1)); break;
    case Ops::ADD: set(__int128(s(0)->vmin_) + s(1)->vmin_, __int128(s(0)->vmax_) + s(1)->vmax_); break;
    case Ops::SUB: set(__int128(s(0)->vmin_) - s(1)->vmax_, __int128(s(0)->vmax_) - s(1)->vmin_); break;
    case Ops::NEG: set(-__int128(s(0)->vmax_), -__int128(s(0)->vmin_)); break;
    case Ops::MUL: {
      __int128 c[4] = {__int128(s(0)->vmin_) * s(1)->vmin_, __int128(s(0)->vmin_) * s(1)->vmax_, __int128(s(0)->vmax_) * s(1)->vmin_,
                       __int128(s(0)->vmax_) * s(1)->vmax_};
      set(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
      break;
    }
    case Ops::IDIV:
      if (s(1)->vmin_ > 0 || s(1)->vmax_ < 0) {  // truncating division is monotonic per sign of the divisor: corners bound it
        __int128 c[4] = {__int128(s(0)->vmin_) / s(1)->vmin_, __int128(s(0)->vmin_) / s(1)->vmax_, __int128(s(0)->vmax_) / s(1)->vmin_,
                         __int128(s(0)->vmax_) / s(1)->vmax_};
        set(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
      }
      break;
    case Ops::MOD:
      if (s(1)->vmin_ > 0) {
        int64_t m = s(1)->vmax_ - 1;
        if (s(0)->vmin_ >= 0) set(0, std::min(s(0)->vmax_, m));
        else if (s(0)->vmax_ <= 0) set(std::max(s(0)->vmin_, -m), 0);
        else set(-m, m);
      }
      break;
    case Ops::MAX: set(std::max(s(0)->vmin_, s(1)->vmin_), std::max(s(0)->vmax_, s(1)->vmax_)); break;
    case Ops::CMPLT:
      if (s(0)->vmax_ < s(1)->vmin_) set(1, 1);
      else if (s(0)->vmin_ >= s(1)->vmax_) set(0, 0);
      else set(0, 1);
      break;
    case Ops::CMPNE:
    case Ops::CMPEQ: {
      bool disjoint = s(0)->vmax_ < s(1)->vmin_ || s(1)->vmax_ < s(0)->vmin_;
      bool same_single = s(0)->vmin_ == s(0)->vmax_ && s(1)->vmin_ == s(1)->vmax_ && s(0)->vmin_ == s(1)->vmin_;
      int64_t ne = disjoint ? 1 : same_single ? 0 : -1;
      if (ne < 0 || !ranged(s(0)->dtype)) set(0, 1);
      else set(op == Ops::CMPNE ? ne : 1 - ne, op == Ops::CMPNE ? ne : 1 - ne);
      break;
    }
    case Ops::WHERE:
      if (s(0)->vmin_ == 1) set(s(1)->vmin_, s(1)->vmax_);
      else if (s(0)->vmax_ == 0) set(s(2)->vmin_, s(2)->vmax_);
      else set(std::min(s(1)->vmin_, s(2)->vmin_), std::max(s(1)->vmax_, s(2)->vmax_));
      break;
    case Ops::AND:
      if (dtypes::is_bool(dtype)) set(s(0)->vmin_ & s(1)->vmin_, s(0)->vmax_ & s(1)->vmax_);
      else if (s(0)->vmin_ >= 0 && s(1)->vmin_ >= 0) set(0, std::min(s(0)->vmax_, s(1)->vmax_));
      break;
    case Ops::OR:
      if (dtypes::is_bool(dtype)) set(s(0)->vmin_ | s(1)->vmin_, s(0)->vmax_ | s(1)->vmax_);
      break;
    case Ops::SHR:
      if (s(1)->op == Ops::CONST && s(0)->vmin_ >= 0 && s(1)->vmin_ >= 0 && s(1)->vmin_ < 63)
        set(s(0)->vmin_ >> s(1)->vmin_, s(0)->vmax_ >> s(1)->vmin_);
      break;
    case Ops::CAST:
      if (ranged(s(0)->dtype)) set(s(0)->vmin_, s(0)->vmax_);
      break;
    default: break;
  }
}

// ---- tensor-level shapes ----
// ops whose value has their first source's shape (and Variable dims)
static bool keeps_shape(Ops op) {
  return op == Ops::FLIP || op == Ops::CONTIGUOUS || op == Ops::CONTIGUOUS_BACKWARD || op == Ops::DETACH || op == Ops::COPY || op == Ops::ASSIGN ||
         op == Ops::CUSTOM_BACKWARD || op == Ops::CAST || op == Ops::BITCAST || op == Ops::SCATTER;
}

void UOp::compute_shape() {
  auto from = [&](const UOp* s) {
    if (s->has_shape_) has_shape_ = true, shape_ = s->shape_;
    return s->has_shape_;
  };
  auto ints = [&]() -> const std::vector<int64_t>& { return std::get<std::vector<int64_t>>(arg); };
  switch (op) {
    case Ops::BUFFER: has_shape_ = true, shape_ = {std::get<int64_t>(arg)}; break;
    case Ops::PARAM: has_shape_ = true, shape_ = {ints().at(1)}; break;
    case Ops::CONST:
    case Ops::DEFINE_VAR:
    case Ops::BIND:
      if (src.empty() || op == Ops::BIND) has_shape_ = true;
      break;
    case Ops::RESHAPE:
    case Ops::EXPAND:
      if (src[0]->has_shape_) has_shape_ = true, shape_ = ints();
      break;
    case Ops::PERMUTE:
      if (src[0]->has_shape_)
        for (auto p : ints()) has_shape_ = true, shape_.push_back(src[0]->shape_.at(size_t(p)));
      break;
    case Ops::PAD:
    case Ops::SHRINK:
      if (from(src[0].get()))
        for (size_t i = 0; i < shape_.size(); i++)
          shape_[i] = op == Ops::PAD ? shape_[i] + ints().at(2 * i) + ints().at(2 * i + 1) : ints().at(2 * i + 1) - ints().at(2 * i);
      break;
    case Ops::REDUCE_AXIS:
      if (from(src[0].get()))
        for (size_t i = 1; i < ints().size(); i++) shape_.at(size_t(ints()[i])) = 1;
      break;
    case Ops::MULTI:  // the shards, one per device, put together along arg[0] (-1: each source is the whole)
    case Ops::MSTACK:
      if (!src.empty() && std::all_of(src.begin(), src.end(), [](auto& s) { return s->has_shape_; }) && from(src[0].get()) && ints().at(0) >= 0) {
        size_t a = size_t(ints()[0]);
        shape_.at(a) = 0;
        for (auto& s : src) shape_.at(a) += s->shape_.at(a);
      }
      break;
    case Ops::ALLREDUCE: from(src.at(0).get()); break;
    default:
      // a tensor-level ALU: sources share one shape (a scalar CONST among them takes the others' rank)
      if (keeps_shape(op)) from(src[0].get());
      else if (GroupOp::alu(op) && std::all_of(src.begin(), src.end(), [](auto& s) { return s->has_shape_; }))
        from(std::max_element(src.begin(), src.end(), [](auto& a, auto& b) { return a->shape_.size() < b->shape_.size(); })->get());
  }
}

// Variable dims follow the data: through views (a reshape keeps a dim that stays on its own), permutes, ALUs; a reduce
// over one makes it 1.
void UOp::compute_sym() {
  if (!has_shape_ || shape_.empty()) return;
  size_t n = shape_.size();
  auto inherit = [&](const UOp* s) {
    if (!s->sym_.empty() && s->shape_.size() == n) sym_ = s->sym_;
  };
  switch (op) {
    case Ops::PERMUTE:
      if (!src[0]->sym_.empty())
        for (auto p : arg_ints()) sym_.push_back(src[0]->sym_[size_t(p)]);
      break;
    case Ops::RESHAPE: {
      const UOp* s = src[0].get();
      if (s->sym_.empty()) break;
      // a tag names the output dims of the source's Variable dims, in order: a Variable bound to 1 beside other 1s is
      // ambiguous by sizes alone ((3,i=1) -> (3,1,1))
      if (auto* dims = std::get_if<std::vector<int64_t>>(&tag)) {
        sym_.assign(n, nullptr);
        size_t k = 0;
        for (const UOp* v : s->sym_)
          if (v && k < dims->size() && size_t((*dims)[k]) < n) sym_[size_t((*dims)[k++])] = v;
        break;
      }
      // blocks of dims whose products match; a Variable dim carries over when its block holds one dim that isn't 1 on each
      // side (or, bound to 1, one dim on each side)
      const Shape& in = s->shape_;
      sym_.assign(n, nullptr);
      size_t i = 0, j = 0;
      while (i < in.size() && j < n) {
        size_t i0 = i, j0 = j;
        int64_t a = in[i++], b = shape_[j++];
        while (a != b) {
          if (a < b && i < in.size()) a *= in[i++];
          else if (b < a && j < n) b *= shape_[j++];
          else break;
        }
        std::vector<size_t> big_in, big_out;
        for (size_t k = i0; k < i; k++)
          if (in[k] != 1 || s->sym_[k]) big_in.push_back(k);
        for (size_t k = j0; k < j; k++)
          if (shape_[k] != 1) big_out.push_back(k);
        if (big_out.empty() && j - j0 == 1) big_out.push_back(j0);
        if (big_in.size() == 1 && big_out.size() == 1 && s->sym_[big_in[0]]) sym_[big_out[0]] = s->sym_[big_in[0]];
      }
      break;
    }
    case Ops::REDUCE_AXIS:
      inherit(src[0].get());
      if (!sym_.empty())
        for (size_t k = 1; k < arg_ints().size(); k++) sym_[size_t(arg_ints()[k])] = nullptr;
      break;
    case Ops::EXPAND:
    case Ops::SHRINK: inherit(src[0].get()); break;
    case Ops::PAD:
      inherit(src[0].get());
      // a tag lists the dims padded by symbolic amounts; per dim two extra sources, the padding before and the size after
      // (each a CONST or a carrier): the size names the dim, a CONST size makes it plain whatever the source's Variable
      if (auto* dims = std::get_if<std::vector<int64_t>>(&tag); dims && src.size() == 1 + 2 * dims->size()) {
        if (sym_.empty()) sym_.assign(n, nullptr);
        for (size_t k = 0; k < dims->size(); k++) {
          const UOp* sz = src[2 + 2 * k].get();
          if (size_t((*dims)[k]) < n) sym_[size_t((*dims)[k])] = sz->op == Ops::CONST ? nullptr : sz->op == Ops::BIND ? sz->src[0].get() : sz;
        }
      }
      break;
    default:
      if (keeps_shape(op)) inherit(src[0].get());
      else if (GroupOp::alu(op))
        for (auto& x : src)
          if (!x->sym_.empty() && x->shape_.size() == n) {
            if (sym_.empty()) sym_.assign(n, nullptr);
            for (size_t k = 0; k < n; k++)
              if (x->sym_[k]) sym_[k] = x->sym_[k];
          }
  }
  if ((op == Ops::EXPAND || op == Ops::SHRINK) && std::holds_alternative<std::vector<int64_t>>(tag)) {
    auto& dims = std::get<std::vector<int64_t>>(tag);
    if (sym_.empty()) sym_.assign(n, nullptr);
    for (size_t k = 0; k < dims.size() && k + 1 < src.size(); k++) {
      const UOp* v = src[k + 1].get();
      if (size_t(dims[k]) < n) sym_[size_t(dims[k])] = v->op == Ops::BIND ? v->src[0].get() : v->op == Ops::CONST ? nullptr : v;  // CONST: plain
    }
  }
  if (std::all_of(sym_.begin(), sym_.end(), [](const UOp* v) { return v == nullptr; })) sym_.clear();
}

// ---- constants and builders ----
double UOp::const_value() const {
  if (auto b = std::get_if<bool>(&arg)) return *b;
  if (auto i = std::get_if<int64_t>(&arg)) return double(*i);
  return std::get<double>(arg);
}
// a vector dtype gives a splat: the constant in every lane
UOpRef UOp::const_(DType dtype, double v) {
  DType b = dtype.base(), d = b.vec(dtype.ptr ? 1 : dtype.count);
  if (dtypes::is_bool(b)) return make(Ops::CONST, d, {}, v != 0);
  if (dtypes::is_int(b)) return make(Ops::CONST, d, {}, int_bits(b, v));  // uint64 args hold the bit pattern
  return make(Ops::CONST, d, {}, truncate_to(b, v));
}
UOpRef UOp::const_int(DType dtype, int64_t v) {
  if (!dtypes::is_int(dtype)) return const_(dtype, double(v));
  int bits = dtype.base().itemsize() * 8;  // wrap to the dtype like a C cast, exactly
  if (bits < 64) {
    uint64_t u = uint64_t(v) & ((1ull << bits) - 1);
    v = !dtypes::is_unsigned(dtype) && (u >> (bits - 1)) ? int64_t(u) - (int64_t(1) << bits) : int64_t(u);
  }
  return make(Ops::CONST, dtype.base().vec(dtype.ptr ? 1 : dtype.count), {}, v);
}
UOpRef UOp::variable(const std::string& name, int64_t vmin, int64_t vmax, DType dtype) {
  TG_CHECK(vmin <= vmax, TG_ERROR_INVALID_ARGUMENT, strformat("variable '%s': min %lld > max %lld", name.c_str(), (long long)vmin, (long long)vmax));
  return make(Ops::DEFINE_VAR, dtype, {}, VarArg{name, vmin, vmax});
}
UOpRef UOp::range(int64_t end, int64_t axis, int64_t kind) { return range(const_int(dtypes::index, end), axis, kind); }
UOpRef UOp::range(UOpRef end, int64_t axis, int64_t kind) { return make(Ops::RANGE, dtypes::index, {std::move(end)}, std::vector<int64_t>{axis, kind}); }

UOpRef UOp::replace(Ops o) const { return make(o, dtype, src, arg, tag); }
UOpRef UOp::replace_src(UOps s) const { return make(op, dtype, std::move(s), arg, tag); }
UOpRef UOp::replace_arg(Arg a) const { return make(op, dtype, src, std::move(a), tag); }
UOpRef UOp::replace_dtype(DType dt) const { return make(op, dt, src, arg, tag); }
UOpRef UOp::with_tag(Arg t) const { return make(op, dtype, src, arg, std::move(t)); }
UOpRef UOp::const_like(double v) const { return const_(dtype, v); }
UOpRef UOp::alu(Ops o, UOps more) const {
  UOps s{ref()};
  for (auto& m : more) s.push_back(m);
  DType dt = GroupOp::comparison(o) ? dtypes::bool_.vec(dtype.count) : o == Ops::WHERE ? s.at(1)->dtype : dtype;
  return make(o, dt, std::move(s));
}
UOpRef UOp::cast(DType dt) const { return dt == dtype ? ref() : make(Ops::CAST, dt, {ref()}); }
UOpRef UOp::bitcast(DType dt) const { return dt == dtype ? ref() : make(Ops::BITCAST, dt, {ref()}); }
UOpRef UOp::lt(const UOpRef& b) const { return alu(Ops::CMPLT, {b}); }
UOpRef UOp::ne(const UOpRef& b) const { return alu(Ops::CMPNE, {b}); }
UOpRef UOp::eq(const UOpRef& b) const { return alu(Ops::CMPEQ, {b}); }
UOpRef UOp::maximum(const UOpRef& b) const { return alu(Ops::MAX, {b}); }
// -max(-a,-b) is wrong for unsigned values and INT64_MIN: ints select instead
UOpRef UOp::minimum(const UOpRef& b) const { return dtypes::is_float(dtype) ? -((-ref())->maximum(-b)) : lt(b)->where(ref(), b); }
UOpRef UOp::where(const UOpRef& a, const UOpRef& b) const { return alu(Ops::WHERE, {a, b}); }
UOpRef UOp::logical_not() const { return ne(const_like(1)); }

UOpRef operator+(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::ADD, {b}); }
UOpRef operator*(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::MUL, {b}); }
// integer subtraction is canonicalized to a + b*-1 so the symbolic rules see one form of every sum
UOpRef operator-(const UOpRef& a, const UOpRef& b) { return dtypes::is_int(a->dtype) ? a + b * -1 : a->alu(Ops::SUB, {b}); }
UOpRef operator-(const UOpRef& a) { return dtypes::is_int(a->dtype) ? a * -1 : a->alu(Ops::NEG); }
UOpRef operator/(const UOpRef& a, const UOpRef& b) { return a->alu(dtypes::is_float(a->dtype) ? Ops::FDIV : Ops::IDIV, {b}); }
UOpRef operator%(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::MOD, {b}); }
UOpRef operator<(const UOpRef& a, const UOpRef& b) { return a->lt(b); }
UOpRef operator&(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::AND, {b}); }
UOpRef operator|(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::OR, {b}); }
UOpRef operator^(const UOpRef& a, const UOpRef& b) { return a->alu(Ops::XOR, {b}); }

// ---- algebra helpers ----
// The helpers below walk ADD/MUL trees with their own stacks: symbolic expressions come from users too (tg_expr), and
// a chain a million terms long must not overflow the stack.
template <class F>
static void post_order_addmul(const UOp* root, F&& visit) {  // visit(node) after its ADD/MUL sources, once per node
  std::unordered_set<const UOp*> seen{root};
  std::vector<std::pair<const UOp*, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [n, expanded] = stack.back();
    stack.pop_back();
    if (expanded || (n->op != Ops::ADD && n->op != Ops::MUL)) {
      visit(n);
      continue;
    }
    stack.push_back({n, true});
    for (auto& s : n->src)
      if (seen.insert(s.get()).second) stack.push_back({s.get(), false});
  }
}
int64_t UOp::const_factor() const {
  std::unordered_map<const UOp*, int64_t> f;
  post_order_addmul(this, [&](const UOp* n) {
    if (n->op == Ops::CONST && dtypes::is_int(n->dtype)) {
      int64_t c = std::get<int64_t>(n->arg);
      f[n] = c == INT64_MIN ? int64_t(1) << 62 : std::abs(c);  // |INT64_MIN| doesn't fit; 2^62 divides it
    }
    else if (n->op == Ops::ADD) f[n] = std::gcd(f.at(n->src[0].get()), f.at(n->src[1].get()));
    else if (n->op == Ops::MUL) f[n] = sat(__int128(f.at(n->src[0].get())) * f.at(n->src[1].get()));
    else f[n] = 1;
  });
  return f.at(this);
}
UOpRef UOp::divides(int64_t v) const {
  if (v == 1) return ref();
  if (v == 0) return {};
  std::unordered_map<const UOp*, UOpRef> q;  // n / v when exact, else null
  post_order_addmul(this, [&](const UOp* n) {
    UOpRef r;
    if (n->op == Ops::CONST && dtypes::is_int(n->dtype)) r = std::get<int64_t>(n->arg) % v == 0 ? n->const_like(double(std::get<int64_t>(n->arg) / v)) : UOpRef();
    else if (n->op == Ops::ADD) {
      const UOpRef &a = q.at(n->src[0].get()), &b = q.at(n->src[1].get());
      if (a && b) r = a + b;
    } else if (n->op == Ops::MUL) {
      if (const UOpRef& a = q.at(n->src[0].get())) r = a * n->src[1];
      else if (const UOpRef& b = q.at(n->src[1].get())) r = n->src[0] * b;
    }
    q[n] = std::move(r);
  });
  return q.at(this);
}
UOpRef UOp::pop_const(int64_t* c) const {
  if (op == Ops::ADD && src[1]->op == Ops::CONST && dtypes::is_int(dtype)) return *c = std::get<int64_t>(src[1]->arg), src[0];
  return *c = 0, ref();
}
void UOp::split_uop(Ops sep, UOps& out) const {
  std::vector<const UOp*> stack{this};
  while (!stack.empty()) {
    const UOp* n = stack.back();
    stack.pop_back();
    if (n->op != sep) out.push_back(n->ref());
    else
      for (size_t i = n->src.size(); i-- > 0;) stack.push_back(n->src[i].get());  // left to right
  }
}

UOps UOp::toposort() const {
  UOps order;
  std::unordered_set<const UOp*> seen;
  std::vector<std::pair<const UOp*, size_t>> stack{{this, 0}};
  seen.insert(this);
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->src.size()) {
      const UOp* c = n->src[i++].get();
      if (seen.insert(c).second) stack.push_back({c, 0});
    } else {
      order.push_back(n->ref());
      stack.pop_back();
    }
  }
  return order;
}

// the printers recurse: refuse graphs deep enough to exhaust the stack instead of crashing the host
static void check_depth(const UOp* root, const char* what) {
  std::unordered_map<const UOp*, size_t> depth;
  for (auto& n : root->toposort()) {
    size_t d = 0;
    for (auto& s : n->src) d = std::max(d, depth[s.get()] + 1);
    depth[n.get()] = d;
  }
  TG_CHECK(depth[root] <= 10000, TG_ERROR_UNSUPPORTED, strformat("%s: graph is %zu levels deep (at most 10000 can be printed)", what, depth[root]));
}

std::string UOp::str() const {
  check_depth(this, "str");
  std::unordered_map<const UOp*, int> names;
  std::unordered_map<const UOp*, int> uses;
  for (auto& n : toposort())
    for (auto& s : n->src) uses[s.get()]++;
  std::string out;
  std::function<void(const UOp*, int)> rec = [&](const UOp* u, int depth) {
    std::string pad(size_t(depth) * 2, ' ');
    if (auto it = names.find(u); it != names.end()) {
      out += pad + "x" + std::to_string(it->second) + "\n";
      return;
    }
    std::string nm;
    if (uses[u] > 1) names[u] = int(names.size()), nm = "x" + std::to_string(names[u]) + ":";
    out += pad + nm + "UOp(Ops." + std::string(op_name(u->op)) + ", " + u->dtype.name();
    if (u->arg.index() != 0) out += ", arg=" + arg_str(u->arg);
    if (u->tag.index() != 0) out += ", tag=" + arg_str(u->tag);
    if (u->src.empty()) {
      out += ")\n";
      return;
    }
    out += ", src=(\n";
    for (auto& s : u->src) rec(s.get(), depth + 1);
    out += pad + "))\n";
  };
  rec(this, 0);
  return out;
}

std::string UOp::arg_repr() const {
  if (op == Ops::REDUCE_AXIS && !arg_ints().empty()) {  // (Ops.ADD, (0, 2))
    auto& a = arg_ints();
    std::string r = "(Ops." + std::string(op_name(Ops(a[0]))) + ", (";
    for (size_t i = 1; i < a.size(); i++) r += (i > 1 ? ", " : "") + std::to_string(a[i]);
    return r + (a.size() == 2 ? ",))" : "))");
  }
  if (op == Ops::REDUCE && std::holds_alternative<int64_t>(arg)) return "Ops." + std::string(op_name(Ops(std::get<int64_t>(arg))));
  return arg_str(arg);
}
std::string UOp::repr() const {
  check_depth(this, "print");
  // as tinygrad's pretty_print: a node is numbered by when a preorder walk over sources first meets it; a node used
  // twice prints as xN:=UOp(...) the first time and xN after
  std::unordered_map<const UOp*, std::pair<size_t, size_t>> seen;  // number, uses
  std::vector<std::pair<const UOp*, size_t>> walk{{this, 0}};
  while (!walk.empty()) {
    auto [u, i] = walk.back();
    if (i == u->src.size()) {
      walk.pop_back();
      continue;
    }
    walk.back().second++;
    const UOp* s = u->src[i].get();
    auto it = seen.try_emplace(s, seen.size(), 0).first;
    if (++it->second.second == 1) walk.push_back({s, 0});
  }
  std::string out;
  std::unordered_set<const UOp*> printed;
  auto head = [&](const UOp* u, size_t d) {  // true when its sources follow
    out.append(d, ' ');
    auto it = seen.find(u);
    std::string name = it == seen.end() ? "" : "x" + std::to_string(it->second.first);
    if (!printed.insert(u).second) {
      out += name;
      return false;
    }
    if (it != seen.end() && it->second.second > 1) out += name + ":=";
    out += "UOp(Ops." + std::string(op_name(u->op)) + ", dtypes." + u->dtype.name() + ", arg=" + u->arg_repr();
    if (u->tag.index() != 0) out += ", tag=" + arg_str(u->tag);
    out += ", src=(";
    return true;
  };
  struct Frame {
    const UOp* u;
    size_t d, i;
  };
  std::vector<Frame> st;
  if (head(this, 0)) st.push_back({this, 0, 0});
  while (!st.empty()) {
    Frame& f = st.back();
    if (f.i == f.u->src.size()) {
      out += "))";
      st.pop_back();
      if (!st.empty()) out += ",";
      continue;
    }
    const UOp* s = f.u->src[f.i++].get();
    size_t d = f.d + 2;
    out += "\n";
    if (head(s, d)) st.push_back({s, d, 0});
    else out += ",";
  }
  return out;
}

std::string UOp::render() const {
  static thread_local int level = 0;  // check the depth once, at the outermost call
  if (level == 0) check_depth(this, "render");
  level++;
  struct Exit {
    ~Exit() { level--; }
  } exit_guard;
  return render_();
}
std::string UOp::render_() const {
  auto r = [](const UOpRef& u) { return u->render(); };
  static const std::unordered_map<int, const char*> infix = {{int(Ops::ADD), "+"},  {int(Ops::SUB), "-"},   {int(Ops::MUL), "*"},
                                                             {int(Ops::IDIV), "//"}, {int(Ops::FDIV), "/"},  {int(Ops::MOD), "%"},
                                                             {int(Ops::CMPLT), "<"}, {int(Ops::CMPNE), "!="}, {int(Ops::CMPEQ), "=="},
                                                             {int(Ops::AND), "&"},   {int(Ops::OR), "|"},    {int(Ops::XOR), "^"}};
  switch (op) {
    case Ops::CONST: return dtypes::is_float(dtype) ? strformat("%g", const_value()) : dtypes::is_bool(dtype) ? (const_value() ? "True" : "False") : std::to_string(std::get<int64_t>(arg));
    case Ops::DEFINE_VAR: return std::get<VarArg>(arg).name;
    case Ops::RANGE: {  // named by its path: a split range is ridx<axis>_<part>...
      std::string n = "ridx";
      for (size_t i = 0; i + 1 < arg_ints().size(); i++) n += (i ? "_" : "") + std::to_string(arg_ints()[i]);
      return n;
    }
    case Ops::NEG: return "(-" + r(src[0]) + ")";
    case Ops::MAX: return "max(" + r(src[0]) + ", " + r(src[1]) + ")";
    case Ops::WHERE: return "(" + r(src[1]) + " if " + r(src[0]) + " else " + r(src[2]) + ")";
    case Ops::CAST: return dtype.name() + "(" + r(src[0]) + ")";
    default:
      if (auto it = infix.find(int(op)); it != infix.end()) {
        // a + b*-1 reads as a - b
        if (op == Ops::ADD && src[1]->op == Ops::MUL && src[1]->src[1]->is_const(-1)) return "(" + r(src[0]) + "-" + r(src[1]->src[0]) + ")";
        if (op == Ops::MUL && src[1]->is_const(-1)) return "(-" + r(src[0]) + ")";
        return "(" + r(src[0]) + it->second + r(src[1]) + ")";
      }
      std::string s = std::string(op_name(op)) + "(";
      for (size_t i = 0; i < src.size(); i++) s += (i ? ", " : "") + r(src[i]);
      return s + ")";
  }
}

// ---- constant evaluation ----
static float f16_round(float f) {  // round a float to the nearest half, returned as float
  return f16_bits_to_f32(f32_to_f16_bits(f));
}
static float bf16_round(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if ((b & 0x7fffffff) > 0x7f800000) return f;  // NaN stays
  b = (b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&f, &b, 4);
  return f;
}
int64_t int_bits(DType dt, double v) {
  if (std::isnan(v) || std::isinf(v)) return 0;
  int bits = dt.base().itemsize() * 8;
  // reduce mod 2^64 first (exact in double), so the cast to 128 bits is always defined
  __int128 i = __int128(std::fmod(std::trunc(v), 18446744073709551616.0));
  uint64_t u = uint64_t(i) & (bits == 64 ? ~0ull : ((1ull << bits) - 1));
  if (!dtypes::is_unsigned(dt) && bits < 64 && (u >> (bits - 1))) return int64_t(u) - (int64_t(1) << bits);
  return int64_t(u);
}
double truncate_to(DType dt, double v) {
  switch (dt.scalar) {
    case Scalar::Bool: return v != 0;
    case Scalar::Float16: return f16_round(float(v));
    case Scalar::BFloat16: return bf16_round(float(v));
    case Scalar::Float32: return double(float(v));
    case Scalar::Float64: return v;
    default: break;
  }
  int64_t b = int_bits(dt, v);
  return dtypes::is_unsigned(dt) ? double(uint64_t(b)) : double(b);
}

double exec_alu(Ops op, DType dt, const std::vector<double>& v) {
  if (op == Ops::WHERE) return v[0] != 0 ? v[1] : v[2];
  if (GroupOp::comparison(op)) {
    bool r = op == Ops::CMPLT ? v[0] < v[1] : op == Ops::CMPNE ? v[0] != v[1] : v[0] == v[1];
    return r;
  }
  if (dtypes::is_int(dt) || dtypes::is_bool(dt)) {
    // integers compute in 128 bits, then wrap to the dtype
    __int128 a = __int128(v[0]), b = v.size() > 1 ? __int128(v[1]) : 0, r = 0;
    switch (op) {
      case Ops::NEG: r = -a; break;
      case Ops::ADD: r = a + b; break;
      case Ops::SUB: r = a - b; break;
      case Ops::MUL: r = a * b; break;
      case Ops::IDIV: r = b == 0 ? 0 : a / b; break;  // x//0 == 0 and x%0 == x, as tinygrad defines them
      case Ops::MOD: r = b == 0 ? a : a % b; break;
      case Ops::MAX: r = std::max(a, b); break;
      case Ops::AND: r = a & b; break;
      case Ops::OR: r = a | b; break;
      case Ops::XOR: r = a ^ b; break;
      case Ops::SHL: r = b >= 64 ? 0 : a << int(b); break;
      case Ops::SHR: r = b >= 64 ? 0 : a >> int(b); break;
      case Ops::MULACC: r = a * b + __int128(v[2]); break;
      default: fail(TG_ERROR_INTERNAL, "exec_alu: no integer rule for " + std::string(op_name(op)));
    }
    return truncate_to(dt, double(int64_t(uint64_t(r))));
  }
  double a = v[0], b = v.size() > 1 ? v[1] : 0, r = 0;
  switch (op) {
    case Ops::NEG: r = -a; break;
    case Ops::EXP2: r = std::exp2(a); break;
    case Ops::LOG2: r = std::log2(a); break;
    case Ops::SIN: r = std::sin(a); break;
    case Ops::SQRT: r = std::sqrt(a); break;
    case Ops::RECIPROCAL: r = 1.0 / a; break;
    case Ops::TRUNC: r = std::trunc(a); break;
    case Ops::ADD: r = a + b; break;
    case Ops::SUB: r = a - b; break;
    case Ops::MUL: r = a * b; break;
    case Ops::FDIV: r = a / b; break;
    case Ops::MAX: r = std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); break;
    case Ops::POW: r = std::pow(a, b); break;
    case Ops::MULACC: r = a * b + v[2]; break;
    default: fail(TG_ERROR_INTERNAL, "exec_alu: no float rule for " + std::string(op_name(op)));
  }
  return truncate_to(dt, r);
}

UOpRef gep(const UOpRef& v, std::vector<int64_t> lanes) {
  bool ident = int64_t(lanes.size()) == v->dtype.count;
  for (size_t i = 0; ident && i < lanes.size(); i++) ident = lanes[i] == int64_t(i);
  if (ident) return v;
  if (lanes.size() == 1) return lane_of(v, lanes[0]);
  if (v->op == Ops::VECTORIZE || (v->op == Ops::CONST && v->dtype.count > 1)) {
    UOps s;
    for (auto l : lanes) s.push_back(lane_of(v, l));
    return UOp::make(Ops::VECTORIZE, v->dtype.scalar_of().vec(int(lanes.size())), s);
  }
  if (v->op == Ops::GEP) {  // GEP of GEP is one GEP
    auto& inner = v->arg_ints();
    for (auto& l : lanes) l = inner[size_t(l)];
    return gep(v->src[0], lanes);
  }
  return UOp::make(Ops::GEP, v->dtype.scalar_of().vec(int(lanes.size())), {v}, lanes);
}
UOpRef lane_of(const UOpRef& v, int64_t i) {
  if (v->op == Ops::VECTORIZE) return v->src[size_t(i)];
  if (v->dtype.count == 1) return v;
  if (v->op == Ops::CONST) return v->replace_dtype(v->dtype.scalar_of());
  if (v->op == Ops::GEP) return lane_of(v->src[0], v->arg_ints()[size_t(i)]);
  return UOp::make(Ops::GEP, v->dtype.scalar_of(), {v}, std::vector<int64_t>{i});
}

}  // namespace tg
