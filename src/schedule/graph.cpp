#include "schedule/graph.h"

namespace tg {

std::string BufferArg::str() const { return strformat("<%s %s[%lld]>", buf->device().c_str(), buf->dtype().name().c_str(), (long long)buf->size()); }
UOpRef buffer_uop(std::shared_ptr<Buffer> buf) {
  DType dt = buf->dtype();
  int64_t n = buf->size();
  auto unique = UOp::make(Ops::UNIQUE, dtypes::void_, {}, std::shared_ptr<const ArgExt>(std::make_shared<BufferArg>(std::move(buf))));
  return UOp::make(Ops::BUFFER, dt, {unique}, n);
}
const std::shared_ptr<Buffer>& buffer_of(const UOp* b) {
  auto& ext = std::get<std::shared_ptr<const ArgExt>>(b->src.at(0)->arg);
  return static_cast<const BufferArg*>(ext.get())->buf;
}

const AssignArg* assign_arg(const UOp* u) {
  if (u->op != Ops::ASSIGN || u->src.size() != 3) return nullptr;
  return static_cast<const AssignArg*>(std::get<std::shared_ptr<const ArgExt>>(u->src[2]->arg).get());
}
UOpRef AssignArg::part(size_t d) const {
  std::lock_guard<std::mutex> lk(mu_);
  while (parts_.size() <= d) parts_.push_back(UOp::make(Ops::UNIQUE, dtypes::void_, {}, std::shared_ptr<const ArgExt>(std::make_shared<AssignArg>())));
  return parts_[d];
}
UOpRef bound_var(const UOp* size, int64_t value, UOps inner) {
  UOps src{size->ref(), UOp::const_int(size->dtype, value)};
  if (size->op != Ops::DEFINE_VAR) src.insert(src.end(), inner.begin(), inner.end());
  return UOp::make(Ops::BIND, size->dtype, std::move(src));
}
std::string sym_name(const UOp* size) { return size->op == Ops::DEFINE_VAR ? size->argv<VarArg>().name : size->render(); }
std::vector<const UOp*> sym_vars(const UOp* size) {
  std::vector<const UOp*> out;
  for (auto& u : size->toposort())
    if (u->op == Ops::DEFINE_VAR) out.push_back(u.get());
  return out;
}
int64_t sym_eval(const UOp* size, const std::function<int64_t(const UOp* var)>& val) {
  if (size->op == Ops::DEFINE_VAR) return val(size);
  std::unordered_map<const UOp*, int64_t> v;
  for (auto& u : size->toposort()) {
    auto a = [&](size_t i) { return v.at(u->src[i].get()); };
    int64_t r = 0;
    switch (u->op) {
      case Ops::CONST: {  // an int constant as it is (INT64_MAX as a double is out of int64's range)
        auto i = std::get_if<int64_t>(&u->arg);
        TG_CHECK(i, TG_ERROR_SHAPE, "the symbolic size " + size->render() + " has a constant that is not an integer");
        r = *i;
        break;
      }
      case Ops::DEFINE_VAR:
        if ((r = val(u.get())) < 0) return -1;
        break;
      case Ops::ADD: TG_CHECK(!__builtin_add_overflow(a(0), a(1), &r), TG_ERROR_SHAPE, "the symbolic size " + size->render() + " overflows int64"); break;
      case Ops::MUL: TG_CHECK(!__builtin_mul_overflow(a(0), a(1), &r), TG_ERROR_SHAPE, "the symbolic size " + size->render() + " overflows int64"); break;
      case Ops::MAX: r = std::max(a(0), a(1)); break;
      case Ops::IDIV:  // x // 0 == 0, as tg_expr_eval
        TG_CHECK(a(1) != -1 || a(0) != INT64_MIN, TG_ERROR_SHAPE, "the symbolic size " + size->render() + " overflows int64");
        r = a(1) == 0 ? 0 : a(0) / a(1);
        break;
      case Ops::MOD: r = a(1) == 0 ? a(0) : a(1) == -1 ? 0 : a(0) % a(1); break;  // x % 0 == x, as tg_expr_eval
      default: TG_CHECK(false, TG_ERROR_UNSUPPORTED, "the symbolic size " + size->render() + " has a " + std::string(op_name(u->op)) + ": sizes are sums and products");
    }
    v[u.get()] = r;
  }
  return v.at(size);
}
int64_t sym_largest(const UOp* size) { return sym_eval(size, [](const UOp* var) { return var->argv<VarArg>().vmax; }); }
bool sym_grows(const UOp* size) { return size->op == Ops::DEFINE_VAR || sym_largest(size) == size->vmax(); }
std::unordered_map<const UOp*, int64_t> graph_binds(const UOp* root) {
  std::unordered_map<const UOp*, int64_t> out;
  for (auto& u : root->toposort())
    if (u->op == Ops::BIND && u->src[0]->op == Ops::DEFINE_VAR) out[u->src[0].get()] = int64_t(u->src[1]->const_value());
  return out;
}

std::vector<int64_t> sym_arg(const UOp* u, const std::function<int64_t(const UOp* var, int64_t now)>& size) {
  std::vector<int64_t> a = u->arg_ints();
  if (u->op == Ops::RESHAPE || u->op == Ops::EXPAND || u->op == Ops::SHRINK)
    for (size_t i = 0; i < u->sym().size(); i++)
      if (const UOp* v = u->sym()[i]) {
        if (u->op == Ops::SHRINK) a[2 * i + 1] = a[2 * i] + size(v, a[2 * i + 1] - a[2 * i]);  // a start past 0 stays
        else a[i] = size(v, a[i]);
      }
  return a;
}

}  // namespace tg
