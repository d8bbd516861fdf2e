// The communicator's collectives on tensors: each input realized to a buffer, the MPI call a host step on buffer handles.
#include "tensor/comm.h"

#include <climits>
#include <cstring>
#include <map>

#include "engine/realize.h"
#include "runtime/device.h"
#include "schedule/graph.h"

namespace tg {
namespace {

// A device's bytes as host memory for MPI: the memory itself on a host-memory device, else a staged copy (read in
// first for an input, written back by `done` for an output)
struct HostBytes {
  Device& d;
  void* handle;
  size_t n;
  std::vector<char> stage;
  void* p = nullptr;
  HostBytes(Device& dev, void* h, size_t nbytes, bool read) : d(dev), handle(h), n(nbytes) {
    if (d.host_memory()) {
      p = h;
      return;
    }
    stage.resize(n);
    if (read && n) d.allocator().copyout(stage.data(), h, 0, n);
    p = stage.data();
  }
  void done() {
    if (!d.host_memory() && n) d.allocator().copyin(handle, 0, stage.data(), n);
  }
};

mpi::Red red(Communicator::Op op) {
  switch (op) {
    case Communicator::Op::Prod: return mpi::Red::Prod;
    case Communicator::Op::Max: return mpi::Red::Max;
    case Communicator::Op::Min: return mpi::Red::Min;
    default: return mpi::Red::Sum;
  }
}

// what every rank must agree on for a collective, as one positive number
int64_t signature(const std::string& what, DType dt, int64_t n, int64_t extra) {
  size_t h = std::hash<std::string>()(what);
  for (int64_t v : {int64_t(dt.scalar), n, extra}) h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return int64_t(h & 0x3fffffffffffffffULL);
}
void check_same(mpi::Comm c, int64_t sig, const std::string& what, DType dt, int64_t n) {
  TG_CHECK(mpi::same_on_all(c, sig), TG_ERROR_SHAPE,
           strformat("%s: the ranks passed different tensors or arguments (this rank: %s of %lld elements): every rank must make the same call",
                     what.c_str(), dt.name().c_str(), (long long)n));
}

}  // namespace

Communicator::Communicator(mpi::Comm c) : c_(c), rank_(mpi::rank(c)), size_(mpi::size(c)) {}
Communicator::~Communicator() { mpi::release(c_); }

std::shared_ptr<Communicator> Communicator::world() {
  static std::shared_ptr<Communicator> w = std::make_shared<Communicator>(mpi::world());
  return w;
}

std::shared_ptr<Communicator> Communicator::split(int64_t color, int64_t key) {
  TG_CHECK(color >= 0 && color <= INT_MAX, TG_ERROR_INVALID_ARGUMENT, strformat("comm_split: color %lld is not in [0, 2^31)", (long long)color));
  TG_CHECK(key >= INT_MIN && key <= INT_MAX, TG_ERROR_INVALID_ARGUMENT, strformat("comm_split: key %lld is not a 32-bit int", (long long)key));
  return std::make_shared<Communicator>(mpi::split(c_, int(color), int(key)));
}

Tensor Communicator::allreduce(const Tensor& t, Op op) { return allreduce(std::vector<Tensor>{t}, op)[0]; }

std::vector<Tensor> Communicator::allreduce(const std::vector<Tensor>& ts, Op op) {
  // MPI has no 16-bit floats: they are combined in float32 and rounded once at the end
  std::vector<Tensor> in;
  for (auto& t : ts) {
    TG_CHECK(op != Op::Avg || dtypes::is_float(t.dtype()), TG_ERROR_DTYPE,
             "allreduce: avg of " + t.dtype().name() + " (avg is for floats: sum, then divide)");
    in.push_back(mpi::has_type(t.dtype()) ? t : t.cast(dtypes::float32));
  }
  // every input realized in one schedule (the kernels that compute them fused as they would be without the allreduce)
  std::vector<Tensor> held;
  for (auto& t : in) {
    TG_CHECK(t.uop()->sym().empty(), TG_ERROR_UNSUPPORTED, "allreduce: a tensor with Variable dims; bind it first");
    held.push_back(t.contiguous());
  }
  std::vector<Tensor*> ptrs;
  for (auto& t : held) ptrs.push_back(&t);
  Tensor::realize_all(ptrs);
  struct Part {
    int64_t n;
    DType dt;
  };
  std::vector<Part> parts;
  std::vector<std::shared_ptr<Buffer>> bufs;  // the outputs, then the inputs
  int64_t sig = signature("allreduce", dtypes::void_, int64_t(in.size()), int64_t(op));
  for (auto& t : in) {
    parts.push_back({t.numel(), t.dtype()});
    bufs.push_back(std::make_shared<Buffer>(t.device(), t.dtype(), t.numel()));
    sig = signature("allreduce", t.dtype(), t.numel(), sig);
  }
  for (size_t i = 0; i < in.size(); i++) bufs.push_back(held[i].contiguous_buffer("allreduce"));
  std::string name = strformat("allreduce_%s_%s_%lld", reduce_op_name(op), in[0].dtype().name().c_str(), (long long)in[0].numel());
  if (in.size() > 1) name = strformat("allreduce_%s_%zu_tensors", reduce_op_name(op), in.size());
  std::string dev = in[0].device();
  for (auto& t : in) TG_CHECK(t.device() == dev, TG_ERROR_DEVICE, "allreduce: tensors on " + dev + " and " + t.device());
  auto self = shared_from_this();
  run_host_step(name, [self, dev, parts, op, sig](void** p) {
    check_same(self->c_, sig, "allreduce", parts[0].dt, parts[0].n);
    Device& d = get_device(dev);
    size_t k = parts.size();
    for (size_t i = 0; i < k; i++) {
      size_t nb = size_t(parts[i].n) * size_t(parts[i].dt.itemsize());
      HostBytes hi(d, p[k + i], nb, true), ho(d, p[i], nb, false);
      mpi::allreduce(self->c_, hi.p, ho.p, parts[i].n, parts[i].dt, red(op));
      ho.done();
    }
  }, bufs);
  std::vector<Tensor> out;
  for (size_t i = 0; i < in.size(); i++) {
    Tensor r = Tensor::on_buffer(bufs[i], ts[i].shape());
    if (op == Op::Avg) r = r.div(r.scalar_like(double(size_)));
    out.push_back(r.dtype() == ts[i].dtype() ? r : r.cast(ts[i].dtype()));
  }
  return out;
}

Tensor Communicator::allgather(const Tensor& t) {
  DType dt = t.dtype();
  if (!mpi::has_type(dt)) return allgather(t.bitcast(dtypes::uint16)).bitcast(dt);  // bits travel as they are
  auto in = t.contiguous_buffer("allgather");
  int64_t n = t.numel(), sig = signature("allgather", dt, n, 0);
  Shape shape = t.shape();
  if (shape.empty()) shape = {size_};
  else shape[0] *= size_;
  auto out = std::make_shared<Buffer>(t.device(), dt, n * size_);
  std::string dev = t.device();
  auto self = shared_from_this();
  run_host_step(strformat("allgather_%s_%lld", dt.name().c_str(), (long long)n), [self, dev, n, dt, sig](void** p) {
    check_same(self->c_, sig, "allgather", dt, n);
    Device& d = get_device(dev);
    size_t nb = size_t(n) * size_t(dt.itemsize());
    HostBytes hi(d, p[1], nb, true), ho(d, p[0], nb * size_t(self->size_), false);
    mpi::allgather(self->c_, hi.p, ho.p, n, dt);
    ho.done();
  }, {out, in});
  return Tensor::on_buffer(out, shape);
}

Tensor Communicator::broadcast(const Tensor& t, int64_t root) {
  TG_CHECK(root >= 0 && root < size_, TG_ERROR_INVALID_ARGUMENT, strformat("broadcast: root %lld is not a rank of %d", (long long)root, size_));
  DType dt = t.dtype();
  if (!mpi::has_type(dt)) return broadcast(t.bitcast(dtypes::uint16), root).bitcast(dt);
  auto in = t.contiguous_buffer("broadcast");
  auto out = std::make_shared<Buffer>(t.device(), dt, t.numel());
  int64_t n = t.numel(), sig = signature("broadcast", dt, n, root);
  std::string dev = t.device();
  auto self = shared_from_this();
  run_host_step(strformat("broadcast_%s_%lld", dt.name().c_str(), (long long)n), [self, dev, n, dt, sig, root](void** p) {
    check_same(self->c_, sig, "broadcast", dt, n);
    Device& d = get_device(dev);
    size_t nb = size_t(n) * size_t(dt.itemsize());
    HostBytes ho(d, p[0], nb, false);
    if (self->rank_ == root && nb) {
      HostBytes hi(d, p[1], nb, true);
      std::memcpy(ho.p, hi.p, nb);
    }
    mpi::broadcast(self->c_, ho.p, n, dt, int(root));
    ho.done();
  }, {out, in});
  return Tensor::on_buffer(out, t.shape());
}

void Communicator::send(const Tensor& t, int64_t dest, int64_t tag) {
  TG_CHECK(dest >= 0 && dest < size_ && dest != rank_, TG_ERROR_INVALID_ARGUMENT,
           strformat("send: dest %lld is not another rank of %d (this is rank %d)", (long long)dest, size_, rank_));
  TG_CHECK(tag >= 0 && tag <= 32767, TG_ERROR_INVALID_ARGUMENT, strformat("send: tag %lld is not in [0, 32767]", (long long)tag));
  DType dt = t.dtype();
  if (!mpi::has_type(dt)) return send(t.bitcast(dtypes::uint16), dest, tag);
  auto in = t.contiguous_buffer("send");
  int64_t n = t.numel();
  std::string dev = t.device();
  auto self = shared_from_this();
  run_host_step(strformat("send_%s_%lld", dt.name().c_str(), (long long)n), [self, dev, n, dt, dest, tag](void** p) {
    HostBytes hi(get_device(dev), p[0], size_t(n) * size_t(dt.itemsize()), true);
    mpi::send(self->c_, hi.p, n, dt, int(dest), int(tag));
  }, {in});
}

Tensor Communicator::recv(const Shape& shape, DType dtype, int64_t src, int64_t tag, const std::string& device) {
  TG_CHECK(src >= 0 && src < size_ && src != rank_, TG_ERROR_INVALID_ARGUMENT,
           strformat("recv: src %lld is not another rank of %d (this is rank %d)", (long long)src, size_, rank_));
  TG_CHECK(tag >= 0 && tag <= 32767, TG_ERROR_INVALID_ARGUMENT, strformat("recv: tag %lld is not in [0, 32767]", (long long)tag));
  check_shape(shape, dtype, "recv");
  get_device(device);
  if (!mpi::has_type(dtype)) return recv(shape, dtypes::uint16, src, tag, device).bitcast(dtype);
  int64_t n = tg::prod(shape);
  auto out = std::make_shared<Buffer>(device, dtype, n);
  auto self = shared_from_this();
  run_host_step(strformat("recv_%s_%lld", dtype.name().c_str(), (long long)n), [self, device, n, dtype, src, tag](void** p) {
    HostBytes ho(get_device(device), p[0], size_t(n) * size_t(dtype.itemsize()), false);
    int64_t got = mpi::recv(self->c_, ho.p, n, dtype, int(src), int(tag));
    TG_CHECK(got == n, TG_ERROR_SHAPE,
             strformat("recv: %lld elements of %s arrived from rank %lld, %lld were expected", (long long)got, dtype.name().c_str(),
                       (long long)src, (long long)n));
    ho.done();
  }, {out});
  return Tensor::on_buffer(out, shape);
}

std::vector<Tensor> Communicator::average_gradients(const std::vector<Tensor>& params, const std::vector<Tensor>& also) {
  // one host step for all of them: each gradient computed by its own kernels into its own buffer (a concatenation would
  // fuse the backward matmuls into a copy kernel), then allreduced there; the division fuses into the optimizer's update
  std::vector<size_t> idx;
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params.size(); i++)
    if (auto g = params[i].grad()) {
      TG_CHECK(dtypes::is_float(g->dtype()), TG_ERROR_DTYPE,
               strformat("average_gradients: params[%zu]'s gradient is %s", i, g->dtype().name().c_str()));
      idx.push_back(i), grads.push_back(*g);
    }
  for (size_t i = 0; i < also.size(); i++)
    TG_CHECK(dtypes::is_float(also[i].dtype()), TG_ERROR_DTYPE, strformat("average_gradients: also[%zu] is %s", i, also[i].dtype().name().c_str()));
  grads.insert(grads.end(), also.begin(), also.end());
  std::vector<Tensor> avg = grads.empty() ? std::vector<Tensor>{} : allreduce(grads, Op::Avg);
  if (grads.empty()) check_same(c_, signature("average_gradients", dtypes::void_, 0, 0), "average_gradients", dtypes::void_, 0);
  for (size_t k = 0; k < idx.size(); k++) Tensor(params[idx[k]]).set_grad(avg[k]);
  return std::vector<Tensor>(avg.begin() + std::ptrdiff_t(idx.size()), avg.end());
}

void Communicator::broadcast_tensors(const std::vector<Tensor>& ts, int64_t root) {
  std::vector<Tensor> held(ts);
  for (auto& t : held) t.assign(broadcast(t, root));
  std::vector<Tensor*> ptrs;
  for (auto& t : held) ptrs.push_back(&t);
  Tensor::realize_all(ptrs);
}

}  // namespace tg
