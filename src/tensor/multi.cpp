// Allreduce between the devices of one process. Each input is made one flat buffer on its device; a copy between two
// devices is a copy_step (an item, like a kernel), and every combination a kernel on the device that receives. Parts of
// an input are read by offset (a copy's, a kernel's index), never through a Buffer view, so a TinyJit that swaps in the
// next call's input buffers finds them in every item.
#include "tensor/multi.h"

#include <algorithm>
#include <optional>
#include <set>

#include "engine/realize.h"
#include "runtime/device.h"

namespace tg {

const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return names[int(op)];
}

Tensor reduce_pair(const Tensor& a, const Tensor& b, ReduceOp op) {
  bool logical = a.dtype() == dtypes::bool_;
  switch (op) {
    case ReduceOp::Prod: return logical ? a.bitwise_and(b) : a.mul(b);
    case ReduceOp::Max: return logical ? a.bitwise_or(b) : a.maximum(b);
    case ReduceOp::Min: return logical ? a.bitwise_and(b) : a.minimum(b);
    default: return logical ? a.bitwise_or(b) : a.add(b);
  }
}

namespace {

// elements [start, start + n) of flat buffer b copied to device `dev`, now, as an item (the whole buffer by default)
std::shared_ptr<Buffer> copy_to(const std::shared_ptr<Buffer>& b, const std::string& dev, int64_t start = 0, int64_t n = -1) {
  if (n < 0) n = b->size();
  auto d = std::make_shared<Buffer>(dev, b->dtype(), n);
  size_t item = size_t(b->dtype().itemsize());
  copy_step(d, b, 0, size_t(start) * item, size_t(n) * item);
  return d;
}

}  // namespace

std::vector<Tensor> allreduce_devices(const std::vector<Tensor>& ts, ReduceOp op) {
  size_t n = ts.size();
  TG_CHECK(n > 0, TG_ERROR_INVALID_ARGUMENT, "allreduce: no tensors");
  const Tensor& t0 = ts[0];
  std::set<std::string> devs;
  for (size_t i = 0; i < n; i++) {
    const Tensor& t = ts[i];
    TG_CHECK(t.dtype() == t0.dtype(), TG_ERROR_DTYPE,
             strformat("allreduce: tensor %zu is %s, tensor 0 %s", i, t.dtype().name().c_str(), t0.dtype().name().c_str()));
    TG_CHECK(t.shape() == t0.shape(), TG_ERROR_SHAPE,
             strformat("allreduce: tensor %zu has shape %s, tensor 0 %s", i, sym_shape_str(t).c_str(), sym_shape_str(t0).c_str()));
    TG_CHECK(devs.insert(t.device()).second, TG_ERROR_DEVICE, strformat("allreduce: two tensors on %s (one per device)", t.device().c_str()));
  }
  DType dt = t0.dtype();
  TG_CHECK(op != ReduceOp::Avg || dtypes::is_float(dt), TG_ERROR_DTYPE, "allreduce: avg of " + dt.name() + " (avg is for floats: sum, then divide)");
  DType wide = dt == dtypes::float16 || dt == dtypes::bfloat16 ? dtypes::float32 : dt;
  int64_t numel = t0.numel();
  // every input one flat buffer on its device, in the dtype it is combined in (a kernel first where it is a view or lazy)
  std::vector<std::shared_ptr<Buffer>> flat;
  for (auto& t : ts) flat.push_back((wide == dt ? t : t.cast(wide)).contiguous_buffer("allreduce"));

  auto on = [](const std::shared_ptr<Buffer>& b) { return Tensor::on_buffer(b, {b->size()}); };
  bool ring = n > 1 && numel > 0 && (RING >= 2 || (n > 2 && numel > RING_ALLREDUCE_THRESHOLD && RING >= 1));
  std::vector<std::optional<Tensor>> out(n);
  if (numel == 0) {
    for (size_t i = 0; i < n; i++) out[i] = on(flat[i]);
  } else if (!ring) {
    // every device adds the n tensors in the same order, so every device gets the same bits
    for (size_t i = 0; i < n; i++) {
      std::optional<Tensor> acc;
      for (size_t j = 0; j < n; j++) {
        Tensor x = on(j == i ? flat[i] : copy_to(flat[j], ts[i].device()));
        acc = acc ? reduce_pair(*acc, x, op) : x;
      }
      out[i] = acc;
    }
  } else {
    // n chunks, each a whole number of 64-byte units but the last
    int64_t unit = std::max<int64_t>(1, 64 / wide.itemsize());
    int64_t units = (numel + unit - 1) / unit, base = units / int64_t(n), left = units % int64_t(n);
    std::vector<std::pair<int64_t, int64_t>> chunks;
    for (int64_t i = 0, at = 0; i < int64_t(n); i++) {
      int64_t len = std::min(numel - at, (base + (i < left)) * unit);
      chunks.push_back({at, len}), at += len;
    }
    // reduce-scatter: chunk i starts on device i and gathers one more device's part at each of n-1 hops
    std::vector<std::shared_ptr<Buffer>> reduced(n);
    std::vector<size_t> holder(n);
    for (size_t i = 0; i < n; i++) {
      auto [s, len] = chunks[i];
      if (len == 0) continue;
      std::shared_ptr<Buffer> r;
      for (size_t step = 0; step + 1 < n; step++) {
        size_t dst = (i + step + 1) % n;
        Tensor mine = on(flat[dst]).shrink({{s, s + len}});
        r = reduce_pair(on(r ? copy_to(r, ts[dst].device()) : copy_to(flat[i], ts[dst].device(), s, len)), mine, op).contiguous_buffer("allreduce");
      }
      reduced[i] = r, holder[i] = (i + n - 1) % n;
    }
    // all-gather: each finished chunk goes around the ring once more, into its place in every device's result
    std::vector<std::shared_ptr<Buffer>> whole(n);
    for (size_t j = 0; j < n; j++) whole[j] = std::make_shared<Buffer>(ts[j].device(), wide, numel);
    size_t item = size_t(wide.itemsize());
    for (size_t i = 0; i < n; i++) {
      if (!reduced[i]) continue;
      size_t off = size_t(chunks[i].first) * item, len = size_t(chunks[i].second) * item;
      copy_step(whole[holder[i]], reduced[i], off, 0, len);  // on the device that finished it
      for (size_t step = 0, from = holder[i]; step + 1 < n; step++) {
        size_t dst = (i + step) % n;
        copy_step(whole[dst], whole[from], off, off, len);
        from = dst;
      }
    }
    for (size_t j = 0; j < n; j++) out[j] = on(whole[j]);
  }
  std::vector<Tensor> res;
  for (size_t i = 0; i < n; i++) {
    Tensor r = *out[i];
    if (op == ReduceOp::Avg) r = r.div(r.scalar_like(double(n)));
    r = r.reshape(t0.shape());
    res.push_back(r.dtype() == dt ? r : r.cast(dt));
  }
  return res;
}

}  // namespace tg
