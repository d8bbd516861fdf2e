// Tensor: a lazy handle over a tensor-level UOp graph. Every op appends UOps; nothing runs until realize().
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "uop/uop.h"

namespace tg {

// BUFFER nodes carry their device memory as an arg, so the buffer lives exactly as long as some graph refers to it.
struct BufferArg : ArgExt {
  std::shared_ptr<Buffer> buf;
  explicit BufferArg(std::shared_ptr<Buffer> b) : buf(std::move(b)) {}
  std::string str() const override;
};
UOpRef buffer_uop(std::shared_ptr<Buffer> buf);  // BUFFER(UNIQUE(buf)) with shape (size,)
const std::shared_ptr<Buffer>& buffer_of(const UOp* buffer_node);

class Tensor {
 public:
  Tensor(UOpRef uop, std::string device) : uop_(std::move(uop)), device_(std::move(device)) {}

  // creation
  static Tensor from_data(const void* data, size_t nbytes, DType dtype, const Shape& shape, const std::string& device);
  static Tensor empty(const Shape& shape, DType dtype, const std::string& device);
  static Tensor full(const Shape& shape, double value, DType dtype, const std::string& device, const char* what = "full");
  static Tensor arange(double start, double stop, double step, DType dtype, const std::string& device);
  static Tensor eye(int64_t n, DType dtype, const std::string& device);

  const UOpRef& uop() const { return uop_; }
  const Shape& shape() const { return uop_->shape(); }
  int64_t ndim() const { return int64_t(shape().size()); }
  int64_t numel() const { return tg::prod(shape()); }
  DType dtype() const { return uop_->dtype; }
  const std::string& device() const { return device_; }

  // elementwise (broadcasting, dtype promotion as in tinygrad)
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;   // true division
  Tensor idiv(const Tensor& o) const;  // integer division, truncating
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor pow(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor where(const Tensor& x, const Tensor& y) const;  // this is the condition
  Tensor scalar_like(double v) const;                     // a broadcastable scalar tensor, promoted like tinygrad's python consts
  Tensor cast(DType dt) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor reciprocal() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor abs() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor logical_not() const;

  // reductions; empty axes = all
  Tensor sum(std::vector<int64_t> axes = {}, bool keepdim = false, const char* what = "sum") const;
  Tensor prod(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor max(std::vector<int64_t> axes = {}, bool keepdim = false, const char* what = "max") const;
  Tensor min(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor mean(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor softmax(int64_t axis = -1) const;
  Tensor log_softmax(int64_t axis = -1) const;

  // movement: views, no copies
  Tensor reshape(Shape shape) const;
  Tensor permute(std::vector<int64_t> order) const;
  Tensor expand(Shape shape) const;
  Tensor pad(const std::vector<std::pair<int64_t, int64_t>>& pads, double value = 0) const;
  Tensor shrink(const std::vector<std::pair<int64_t, int64_t>>& bounds) const;
  Tensor flip(std::vector<int64_t> axes) const;
  Tensor transpose(int64_t d0 = 1, int64_t d1 = 0) const;

  Tensor matmul(const Tensor& o) const;
  Tensor contiguous() const;
  Tensor detach() const;

  Tensor& realize();
  static void realize_all(const std::vector<Tensor*>& ts);
  void to_data(void* out, size_t nbytes);

 private:
  Tensor alu(Ops op, const Tensor& o) const;  // broadcast, promote, apply
  Tensor unary_float(Ops op) const;
  Tensor reduce(Ops op, std::vector<int64_t> axes, bool keepdim, const char* what) const;
  std::pair<Tensor, Tensor> broadcasted(const Tensor& o, const char* what) const;
  Tensor mv(Ops op, std::vector<int64_t> arg) const;
  int64_t resolve_axis(int64_t axis, const char* what) const;
  UOpRef uop_;
  std::string device_;
};

}  // namespace tg
