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
