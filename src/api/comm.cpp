// C API: the communicator (tg_comm_*), collectives and messages on tensors over MPI; tg_tensor_allreduce between the
// devices of one process.
#include "api/handles.h"

#include <mutex>
#include <set>

#include "tensor/multi.h"

using namespace tg;

namespace {
using Comms = api::Handles<tg_comm>;
Communicator& comm(const tg_comm* c, const char* fn) { return *Comms::get(c, fn).c; }
}  // namespace

extern "C" {

tg_comm* tg_comm_world(void) {
  return api::make([] { return Comms::add(new tg_comm{Communicator::world()}); });
}
tg_comm* tg_comm_split(tg_comm* c, int64_t color, int64_t key) {
  return api::make([&] { return Comms::add(new tg_comm{comm(c, "comm_split").split(color, key)}); });
}
tg_comm* tg_comm_retain(tg_comm* c) {
  return api::make([&] { return Comms::retain(c, "comm_retain"); });
}
void tg_comm_release(tg_comm* c) { Comms::release(c, "comm_release"); }

int64_t tg_comm_rank(const tg_comm* c) {
  int64_t r = -1;
  api::call([&] { r = comm(c, "comm_rank").rank(); });
  return r;
}
int64_t tg_comm_size(const tg_comm* c) {
  int64_t r = -1;
  api::call([&] { r = comm(c, "comm_size").size(); });
  return r;
}

tg_tensor* tg_comm_allreduce(tg_comm* c, tg_tensor* t, tg_reduce op) {
  return api::make([&] {
    Communicator& m = comm(c, "comm_allreduce");
    const Tensor& x = api::get(t, "comm_allreduce");
    TG_ARG(unsigned(op) <= TG_REDUCE_AVG, strformat("comm_allreduce: unknown op %d", int(op)));
    return api::wrap(m.allreduce(x, Communicator::Op(op)));
  });
}
tg_tensor* tg_comm_allgather(tg_comm* c, tg_tensor* t) {
  return api::make([&] { return api::wrap(comm(c, "comm_allgather").allgather(api::get(t, "comm_allgather"))); });
}
tg_tensor* tg_comm_broadcast(tg_comm* c, tg_tensor* t, int64_t root) {
  return api::make([&] { return api::wrap(comm(c, "comm_broadcast").broadcast(api::get(t, "comm_broadcast"), root)); });
}
tg_status tg_comm_send(tg_comm* c, tg_tensor* t, int64_t dest, int64_t tag) {
  return api::call([&] { comm(c, "comm_send").send(api::get(t, "comm_send"), dest, tag); });
}
tg_tensor* tg_comm_recv(tg_comm* c, const int64_t* shape, size_t ndim, tg_dtype dtype, int64_t src, int64_t tag, const char* device) {
  return api::make([&] {
    Communicator& m = comm(c, "comm_recv");
    Shape s = api::ints(shape, ndim, "comm_recv", "shape");
    return api::wrap(m.recv(s, api::dtype_arg(dtype, "comm_recv"), src, tag, canonical_device(device)));
  });
}
tg_status tg_comm_average_gradients(tg_comm* c, tg_tensor* const* params, size_t n, tg_tensor* const* also, size_t n_also, tg_tensor** out) {
  return api::call([&] {
    Communicator& m = comm(c, "comm_average_gradients");
    auto ps = api::tensors(params, n, "comm_average_gradients", "params"), as = api::tensors(also, n_also, "comm_average_gradients", "also");
    TG_ARG(out || n_also == 0, "comm_average_gradients: out is NULL with n_also > 0");  // before the collective
    api::write_out(m.average_gradients(ps, as), out, "comm_average_gradients");
  });
}
tg_status tg_comm_broadcast_tensors(tg_comm* c, tg_tensor* const* ts, size_t n, int64_t root) {
  return api::call([&] { comm(c, "comm_broadcast_tensors").broadcast_tensors(api::tensors(ts, n, "comm_broadcast_tensors"), root); });
}

tg_status tg_tensor_allreduce(tg_tensor* const* ts, size_t n, tg_reduce op, tg_tensor** out) {
  return api::call([&] {
    auto xs = api::tensors(ts, n, "tensor_allreduce");
    TG_ARG(out, "tensor_allreduce: out is NULL");
    TG_ARG(unsigned(op) <= TG_REDUCE_AVG, strformat("tensor_allreduce: unknown op %d", int(op)));
    api::write_out(allreduce_devices(xs, ReduceOp(op)), out, "tensor_allreduce");
  });
}

tg_tensor* tg_tensor_shard(tg_tensor* t, const char* const* devices, size_t n, int64_t axis) {
  return api::make([&]() -> tg_tensor* {
    const Tensor& x = api::get(t, "tensor_shard");
    TG_ARG(devices || n == 0, "tensor_shard: devices is NULL");
    TG_ARG(n <= 4096, strformat("tensor_shard: %zu devices is too many", n));
    std::vector<std::string> devs;
    for (size_t i = 0; i < n; i++) {
      TG_ARG(devices[i], strformat("tensor_shard: devices[%zu] is NULL", i));
      devs.push_back(devices[i]);
    }
    TG_CHECK(axis >= -1, TG_ERROR_SHAPE, strformat("tensor_shard: axis %lld (a dim, or -1 for a whole copy on each device)", (long long)axis));
    return api::wrap(shard(x, devs, axis < 0 ? std::nullopt : std::optional<int64_t>(axis)));
  });
}
tg_tensor* tg_tensor_shard_like(tg_tensor* t, tg_tensor* like) {
  return api::make([&]() -> tg_tensor* {
    return api::wrap(shard_like(api::get(t, "tensor_shard_like", "t"), api::get(like, "tensor_shard_like", "like")));
  });
}
int64_t tg_tensor_device_count(const tg_tensor* t) {
  int64_t r = -1;
  api::call([&] { r = int64_t(split_devices(api::get(t, "tensor_device_count").device()).size()); });
  return r;
}
const char* tg_tensor_device_at(const tg_tensor* t, size_t i) {
  const char* r = nullptr;
  api::call([&] {
    auto devs = split_devices(api::get(t, "tensor_device_at").device());
    TG_ARG(i < devs.size(), strformat("tensor_device_at: device %zu of a tensor on %zu", i, devs.size()));
    // device names are few: kept for the process, so the pointer stays valid
    static std::mutex mu;
    static std::set<std::string> names;
    std::lock_guard<std::mutex> lk(mu);
    r = names.insert(devs[i]).first->c_str();
  });
  return r;
}
tg_status tg_tensor_shard_axis(const tg_tensor* t, int64_t* out) {
  return api::call([&] {
    const Tensor& x = api::get(t, "tensor_shard_axis");
    TG_ARG(out, "tensor_shard_axis: out is NULL");
    *out = multi_axis(x);
  });
}
tg_status tg_tensor_shard_bounds(const tg_tensor* t, int64_t* out, size_t capacity) {
  return api::call([&] {
    const Tensor& x = api::get(t, "tensor_shard_bounds");
    std::vector<std::pair<int64_t, int64_t>> b;
    if (is_multi_device(x.device())) b = multi_bounds(x);
    else b = {{0, x.ndim() ? x.shape()[0] : 1}};
    TG_ARG(out, "tensor_shard_bounds: out is NULL");
    TG_ARG(capacity >= 2 * b.size(), strformat("tensor_shard_bounds: capacity %zu, the tensor needs %zu", capacity, 2 * b.size()));
    for (size_t i = 0; i < b.size(); i++) out[2 * i] = b[i].first, out[2 * i + 1] = b[i].second;
  });
}
tg_tensor* tg_tensor_shard_get(tg_tensor* t, size_t i) {
  return api::make([&]() -> tg_tensor* { return api::wrap(multi_shard(api::get(t, "tensor_shard_get"), i)); });
}

}  // extern "C"
