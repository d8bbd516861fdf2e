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
UOpRef bound_var(const UOp* var, int64_t value) { return UOp::make(Ops::BIND, var->dtype, {var->ref(), UOp::const_int(var->dtype, value)}); }

std::vector<int64_t> sym_arg(const UOp* u, const std::function<int64_t(const UOp* var, int64_t now)>& size) {
  std::vector<int64_t> a = u->arg_ints();
  if (u->op == Ops::RESHAPE || u->op == Ops::EXPAND || u->op == Ops::SHRINK)
    for (size_t i = 0; i < u->sym().size(); i++)
      if (const UOp* v = u->sym()[i]) {
        int64_t& x = a[u->op == Ops::SHRINK ? 2 * i + 1 : i];
        x = size(v, x);
      }
  return a;
}

}  // namespace tg
