// A communicator: collectives and point-to-point messages on tensors between processes, over MPI (runtime/mpi.h).
// Each one realizes its input, then runs as a host step between kernels (engine/realize.h), so a TinyJit capturing a
// training step records it with the kernels and replays it; its output is a new buffer on the input's device. Device
// memory that is not the host's goes through host memory (CUDA-aware MPI is not assumed).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/mpi.h"
#include "tensor/multi.h"
#include "tensor/tensor.h"

namespace tg {

class Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  using Op = ReduceOp;  // Avg: the sum divided by the size, for float dtypes
  // every process of the job (MPI_COMM_WORLD); MPI is initialized on first use
  static std::shared_ptr<Communicator> world();
  explicit Communicator(mpi::Comm c);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // the ranks that pass the same color, ordered by key then rank (MPI_Comm_split); every rank must call it
  std::shared_ptr<Communicator> split(int64_t color, int64_t key);

  // t combined over every rank (the same shape and dtype on each); 16-bit floats are combined in float32. bool: sum and
  // max are a logical or, prod and min a logical and.
  Tensor allreduce(const Tensor& t, Op op);
  // each of ts combined over every rank, in one host step (one agreement check for all): realized together first
  std::vector<Tensor> allreduce(const std::vector<Tensor>& ts, Op op);
  // every rank's t (the same shape on each) concatenated along dim 0 in rank order; a 0-d t gives a (size,) tensor
  Tensor allgather(const Tensor& t);
  // root's t on every rank (each passes a tensor of root's shape and dtype; its values are not read)
  Tensor broadcast(const Tensor& t, int64_t root);
  void send(const Tensor& t, int64_t dest, int64_t tag);
  // a message of exactly `shape` and `dtype` from rank src with tag `tag`
  Tensor recv(const Shape& shape, DType dtype, int64_t src, int64_t tag, const std::string& device);
  // data-parallel training: every parameter's gradient replaced by its average over the ranks (one host step for all).
  // Parameters without a gradient are skipped; every rank must have gradients on the same ones.
  // `also` (a loss) is computed in the same schedule and averaged in the same step: its averages are returned
  std::vector<Tensor> average_gradients(const std::vector<Tensor>& params, const std::vector<Tensor>& also = {});
  // every tensor assigned root's values, realized (the same initial weights on every rank)
  void broadcast_tensors(const std::vector<Tensor>& ts, int64_t root);

 private:
  mpi::Comm c_;
  int rank_ = 0, size_ = 1;
};

}  // namespace tg
