// tg_uop: read-only handles on graph nodes (tinygrad's Tensor.uop), and tg_tensor_schedule: the kernels' ASTs.
#include <algorithm>
#include <cstring>

#include "api/handles.h"
#include "engine/realize.h"

using namespace tg;
using Uops = api::Handles<tg_uop>;

namespace {

tg_uop* new_uop(UOpRef u) { return Uops::add(new tg_uop{std::move(u)}); }
const UOpRef& node(const tg_uop* u, const char* fn) { return Uops::get(u, fn, "u").u; }

// new references to the first `capacity` of `nodes` written to out; the count of nodes
int64_t handles_out(const std::vector<UOpRef>& nodes, tg_uop** out, size_t capacity, const char* fn) {
  int64_t n = -1;
  tg_status s = api::call([&] {
    TG_ARG(out || capacity == 0, std::string(fn) + ": out is NULL with capacity > 0");
    std::vector<const UOp*> first;
    for (size_t i = 0; i < capacity && i < nodes.size(); i++) first.push_back(nodes[i].get());
    std::vector<tg_uop*> made = api::node_handles<tg_uop>(first, fn);
    std::copy(made.begin(), made.end(), out);
    n = int64_t(nodes.size());
  });
  return s == TG_OK ? n : -1;
}

}  // namespace

extern "C" {

tg_uop* tg_tensor_uop(const tg_tensor* t) {
  return api::make([&] { return new_uop(api::get(t, "tensor_uop").uop()); });
}
const char* tg_uop_op(const tg_uop* u) {
  return api::make([&] { return op_name(node(u, "uop_op")->op).data(); });
}
int64_t tg_uop_dtype(const tg_uop* u, char* buf, size_t size) {
  return api::text_result(buf, size, "uop_dtype", [&] { return node(u, "uop_dtype")->dtype.name(); });
}
int64_t tg_uop_arg(const tg_uop* u, char* buf, size_t size) {
  return api::text_result(buf, size, "uop_arg", [&] { return node(u, "uop_arg")->arg_repr(); });
}
tg_status tg_uop_arg_number(const tg_uop* u, double* out) {
  return api::call([&] {
    const Arg& a = node(u, "uop_arg_number")->arg;
    TG_ARG(out, "uop_arg_number: out is NULL");
    if (auto* i = std::get_if<int64_t>(&a)) *out = double(*i);
    else if (auto* d = std::get_if<double>(&a)) *out = *d;
    else if (auto* b = std::get_if<bool>(&a)) *out = *b;
    else fail(TG_ERROR_INVALID_ARGUMENT, "uop_arg_number: the arg " + arg_str(a).substr(0, 80) + " is not a number");
  });
}
int64_t tg_uop_shape(const tg_uop* u, int64_t* out, size_t capacity) {
  int64_t n = -1;
  tg_status s = api::call([&] {
    const UOpRef& x = node(u, "uop_shape");
    TG_ARG(x->has_shape(), "uop_shape: a " + std::string(op_name(x->op)) + " node has no shape");
    TG_ARG(out || capacity == 0, "uop_shape: out is NULL with capacity > 0");
    const Shape& sh = x->shape();
    std::copy_n(sh.begin(), std::min(capacity, sh.size()), out);
    n = int64_t(sh.size());
  });
  return s == TG_OK ? n : -1;
}
int64_t tg_uop_srcs(const tg_uop* u, tg_uop** out, size_t capacity) {
  std::vector<UOpRef> src;
  if (api::call([&] { src = node(u, "uop_srcs")->src; }) != TG_OK) return -1;
  return handles_out(src, out, capacity, "uop_srcs");
}
int64_t tg_uop_toposort(const tg_uop* u, tg_uop** out, size_t capacity) {
  std::vector<UOpRef> order;
  if (api::call([&] { order = node(u, "uop_toposort")->toposort(); }) != TG_OK) return -1;
  return handles_out(order, out, capacity, "uop_toposort");
}
int64_t tg_uop_print(const tg_uop* u, char* buf, size_t size) {
  return api::text_result(buf, size, "uop_print", [&] { return node(u, "uop_print")->repr(); });
}
uint64_t tg_uop_id(const tg_uop* u) {
  uint64_t id = 0;
  api::call([&] { id = uint64_t(reinterpret_cast<uintptr_t>(node(u, "uop_id").get())); });
  return id;
}
int64_t tg_tensor_schedule(tg_tensor* const* tensors, size_t n, tg_uop** out, size_t capacity) {
  std::vector<UOpRef> asts;
  tg_status s = api::call([&] {
    TG_ARG(tensors || n == 0, "tensor_schedule: tensors is NULL with n > 0");
    std::vector<UOpRef> roots;
    for (size_t i = 0; i < n; i++) roots.push_back(api::get(tensors[i], "tensor_schedule", strformat("tensors[%zu]", i).c_str()).uop());
    if (roots.empty()) return;
    Normalized nz = normalize(roots);
    for (auto& k : get_schedule(nz.sink, nz.specs)->kernels) asts.push_back(k->ast);
  });
  if (s != TG_OK) return -1;
  return handles_out(asts, out, capacity, "tensor_schedule");
}
tg_uop* tg_uop_retain(tg_uop* u) {
  return api::make([&] { return Uops::retain(u, "tg_uop_retain"); });
}
void tg_uop_release(tg_uop* u) { Uops::release(u, "tg_uop_release"); }

}  // extern "C"
