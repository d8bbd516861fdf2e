// Collectives between devices of one process (tinygrad's schedule/allreduce.py): one tensor per device, combined with
// kernels on each device and copies between them (engine copy_step), all items a TinyJit captures and replays.
#pragma once
#include <vector>

#include "tensor/tensor.h"

namespace tg {

enum class ReduceOp { Sum, Prod, Max, Min, Avg };  // Avg: the sum divided by the count, for float dtypes
const char* reduce_op_name(ReduceOp op);
// a op b elementwise: bool sum and max are a logical or, prod and min a logical and
Tensor reduce_pair(const Tensor& a, const Tensor& b, ReduceOp op);

// ts (one shape and dtype, each on a different device) combined by op; out[i] holds the result on ts[i]'s device, the
// same bits on every device. Ring (reduce-scatter, then all-gather: 2n(n-1) copies of 1/n of the tensor each) for n > 2
// and more than RING_ALLREDUCE_THRESHOLD (256000) elements, or with RING=2; else naive (every device copies the others'
// tensors: n(n-1) copies); RING=0 is always naive. 16-bit floats are combined in float32 and rounded once at the end.
std::vector<Tensor> allreduce_devices(const std::vector<Tensor>& ts, ReduceOp op);

}  // namespace tg

namespace tg {

// ---- tensors sharded over devices (tinygrad's Tensor.shard and schedule/multi.py) ----
// A multi tensor's device is its devices' canonical names joined by ',' ("CPU,CPU:1"). Its graph is built like any other:
// the leaves are MULTI nodes (one source per device, arg {axis}: the dim split between them, -1 for a whole copy on
// each), and everything above them is the logical tensor, so every Tensor op and autograd work unchanged. A realize
// lowers the graph to one graph per device (lower_multi): ops on matching shards run per device, a reduce over the
// split dim is an allreduce, a view that would move elements between shards first gathers the whole tensor on every
// device, and a whole copy meeting a shard is cut to the shard's bounds.
bool is_multi_device(const std::string& dev);
std::vector<std::string> split_devices(const std::string& dev);  // one name for a plain device
// each name canonical and opened (TG_ERROR_DEVICE names a bad one); two names for one device: TG_ERROR_INVALID_ARGUMENT
std::string join_devices(const std::vector<std::string>& devs, const char* what);
void check_devices(const std::string& dev);  // every device of a plain or multi device name opens

// x on each of devs: split along `axis` into ceil(size / n) pieces (the last ones smaller or empty, as tinygrad), or a
// whole copy on each (nullopt). The copies run now, as to() does, and start a new graph: no gradient flows back into x.
// A multi x is gathered first.
Tensor shard(const Tensor& x, const std::vector<std::string>& devs, std::optional<int64_t> axis);
// the multi tensor on `dev` (its devices joined by ',') whose part on device d is parts[d], split along axis (-1: whole)
Tensor multi_tensor(UOps parts, int64_t axis, const std::string& dev);
// x split as `like` is (its devices, its axis and bounds): the pieces an op with `like` expects
Tensor shard_like(const Tensor& x, const Tensor& like);
// uninitialized memory of like's shape, split as `like` (the state an optimizer keeps per parameter)
Tensor empty_like_sharding(const Tensor& like, DType dtype);
// the split dim of a multi tensor (-1: whole on every device) and each device's [start, end) along it
int64_t multi_axis(const Tensor& t);
std::vector<std::pair<int64_t, int64_t>> multi_bounds(const Tensor& t);
// the multi tensor realized, then its part on device i, as a plain tensor on that device (a view, no copy)
Tensor multi_shard(const Tensor& t, size_t i);
// the whole tensor on device `dev`: the shards copied there and put in place, now
Tensor multi_gather(const Tensor& t, const std::string& dev);
// Realizes multi tensors that share one device tuple: their graphs lowered to per-device graphs, the collectives in them
// run in order (each a step a TinyJit captures), then one schedule per device. Each tensor becomes MULTI of its results.
void realize_multi(const std::vector<Tensor*>& ts);

}  // namespace tg
