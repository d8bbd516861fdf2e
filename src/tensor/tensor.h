// Tensor: a lazy handle over a tensor-level UOp graph. Every op appends UOps; nothing runs until realize().
#pragma once
#include <atomic>
#include <functional>
#include <unordered_map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "schedule/graph.h"
#include "uop/uop.h"

namespace tg {


// TG_ERROR_SHAPE naming `what` unless the shape is one a tensor of dtype can take (dims >= 0, the nonzero ones
// multiplying, times the itemsize, to an int64)
void check_shape(const Shape& s, DType dt, const char* what);
class Tensor;
// the order-reversing map of a dtype (negation for floats, bitwise not for ints, logical not for bools): min is
// order_inverse(max(order_inverse(x)))
Tensor order_inverse(const Tensor& t);

// What a Tensor handle points at. Copies of a Tensor share it, as Python references to one tinygrad Tensor do: realize
// swaps its graph for the computed buffer, backward fills its grad, for every copy.
struct TensorState {
  UOpRef uop;
  std::string device;
  bool requires_grad = false;
  std::shared_ptr<TensorState> grad;
  UOpRef origin;  // the graph a realized tensor was computed from, kept while gradients may need to flow through it
};

// Guards the TensorState fields other threads read: uop, requires_grad and origin. backward() and the gradient
// bookkeeping scan every tensor that requires grad or keeps an origin, on whichever thread owns it (as tinygrad walks
// all live tensors), so the owner writes those fields under this lock; it reads its own without it.
std::mutex& tensor_state_mu();

bool is_buffer_view(const UOp* u, int64_t numel);
class Tensor;
std::string sym_shape_str(const Shape& s, const std::vector<const UOp*>& sym);  // "(n=5,784)"
std::string sym_shape_str(const Tensor& t);
// a dim's size: a value, and its expression of the Variables where it is symbolic (null: a plain number)
struct SymInt {
  int64_t v = 0;
  UOpRef e;
};
SymInt sym_add(const SymInt& a, const SymInt& b);  // a + b, simplified
UOpRef at_binding(const UOpRef& root);            // the graph with every Variable at its bound value (plain shapes)
// the graph with the Variables named in `vals` bound to those values (shapes follow)
UOpRef rebind_vars(const UOpRef& root, const std::unordered_map<std::string, int64_t>& vals);  // BUFFER, or a RESHAPE of one, of exactly numel elements
// While one is alive on a thread, every tensor assigned in place on that thread is listed in it (the JIT realizes them
// with a call's outputs, so side effects are captured).
struct AssignLog {
  std::vector<std::weak_ptr<TensorState>> tensors;
  std::vector<std::weak_ptr<TensorState>>* prev;
  AssignLog();
  ~AssignLog();
};
void note_assign(const std::shared_ptr<TensorState>& s);

class Tensor;
// One entry of a Python-style index: t[1, 2:8:2, None, ..., idx]
struct Index {
  enum Kind { Int, Slice, NewAxis, Ellipsis, TensorIdx } kind = Slice;
  int64_t start = 0, stop = 0, step = 1;  // Int: start is the index
  bool has_start = false, has_stop = false, has_step = false;
  std::shared_ptr<Tensor> tensor;  // TensorIdx
};

class Tensor {
 public:
  Tensor(UOpRef uop, std::string device) : s_(std::make_shared<TensorState>(TensorState{std::move(uop), std::move(device)})) {}
  explicit Tensor(std::shared_ptr<TensorState> s) : s_(std::move(s)) {}
  const std::shared_ptr<TensorState>& state() const { return s_; }

  // creation
  static Tensor from_data(const void* data, size_t nbytes, DType dtype, const Shape& shape, const std::string& device);
  static Tensor empty(const Shape& shape, DType dtype, const std::string& device);
  static Tensor full(const Shape& shape, double value, DType dtype, const std::string& device, const char* what = "full");
  static Tensor arange(double start, double stop, double step, DType dtype, const std::string& device);
  static Tensor eye(int64_t n, DType dtype, const std::string& device);

  const UOpRef& uop() const { return s_->uop; }
  const Shape& shape() const { return uop()->shape(); }
  int64_t ndim() const { return int64_t(shape().size()); }
  int64_t numel() const { return tg::prod(shape()); }
  DType dtype() const { return uop()->dtype; }
  const std::string& device() const { return s_->device; }
  bool same(const Tensor& o) const { return s_ == o.s_; }  // the same tensor, not just equal graphs

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
  Tensor bitcast(DType dt) const;  // the same bits as another dtype of the same size
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
  Tensor rsqrt() const;
  Tensor square() const;
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor erf() const;
  Tensor sign() const;
  Tensor trunc() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  // activations
  Tensor relu6() const;
  Tensor leaky_relu(double neg_slope = 0.01) const;
  Tensor elu(double alpha = 1.0) const;
  Tensor celu(double alpha = 1.0) const;
  Tensor selu() const;
  Tensor gelu() const;
  Tensor quick_gelu() const;
  Tensor silu() const;
  Tensor mish() const;
  Tensor hardsigmoid() const;
  Tensor logsigmoid() const;
  Tensor softplus(double beta = 1.0) const;
  Tensor softsign() const;
  Tensor hardswish() const;
  Tensor hardtanh(double min_val = -1, double max_val = 1) const;
  Tensor clamp(double min_val, double max_val) const;
  // more binary
  Tensor mod(const Tensor& o) const;   // Python's %: the divisor's sign
  Tensor fmod(const Tensor& o) const;  // C's fmod: the dividend's sign
  Tensor bitwise_and(const Tensor& o) const;
  Tensor bitwise_or(const Tensor& o) const;
  Tensor bitwise_xor(const Tensor& o) const;
  Tensor bitwise_not() const;
  Tensor lshift(int64_t bits) const;
  Tensor rshift(int64_t bits) const;
  Tensor lshift(const Tensor& bits) const;  // elementwise counts, broadcast and promoted as add; counts past the width as C's
  Tensor rshift(const Tensor& bits) const;
  Tensor copysign(const Tensor& o) const;
  Tensor logaddexp(const Tensor& o) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor isclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  Tensor full_like(double v) const;  // a constant of this shape and dtype (a view, no memory)

  // reductions; empty axes = all
  Tensor sum(std::vector<int64_t> axes = {}, bool keepdim = false, const char* what = "sum") const;
  Tensor prod(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor max(std::vector<int64_t> axes = {}, bool keepdim = false, const char* what = "max") const;
  Tensor min(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor mean(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor softmax(int64_t axis = -1) const;
  Tensor log_softmax(int64_t axis = -1) const;
  Tensor var(std::vector<int64_t> axes = {}, bool keepdim = false, double correction = 1) const;
  Tensor std(std::vector<int64_t> axes = {}, bool keepdim = false, double correction = 1) const;
  Tensor all(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor any(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor logsumexp(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;  // nullopt: flattened
  Tensor argmin(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor cumsum(int64_t axis = 0) const;
  Tensor cumprod(int64_t axis = 0) const;
  Tensor cummax(int64_t axis = 0) const;
  Tensor cummin(int64_t axis = 0) const;

  // movement: views, no copies
  Tensor reshape(Shape shape) const;
  Tensor reshape(Shape shape, const std::vector<const UOp*>& sym) const;
  // dim `axis` with `before` elements in front and as many after as make it `size` (tinygrad's x.pad((0, N - x.shape[0]))):
  // on a dim bound to a Variable the result is `size` at every binding
  Tensor pad_to(int64_t axis, int64_t before, int64_t size, double value = 0) const;
  // dim `axis` padded by symbolic amounts: `before` in front, to `size` (cat along a symbolic dim)
  Tensor pad_sym(int64_t axis, const SymInt& before, const SymInt& size, double value = 0) const;
  Tensor permute(std::vector<int64_t> order) const;
  Tensor expand(Shape shape) const;
  Tensor expand(Shape shape, const std::vector<const UOp*>& sym) const;  // sym: per dim the Variable a dim expanded from 1 binds to
  // this[..., 0:var, ...] along `dim`, with var (a DEFINE_VAR in [1, that dim's size]) bound to `value`: the dim's size is
  // the Variable, so graphs that differ only in the bound value schedule and compile once
  // size may also be an expression of Variables that grows with each (v+t): `inner` binds its Variables (BIND nodes)
  // where the graph does not
  Tensor shrink_var(int64_t dim, const UOpRef& size, int64_t value, UOps inner = {}) const;
  // [start, start + size) of dim `axis`, which may be symbolic, with `size` a value or an expression of the Variables
  // bound in this graph: the gradient of a pad of a symbolic dim
  Tensor shrink_sym(int64_t axis, int64_t start, const SymInt& size) const;
  // t[..., s:s+size, ...] along axis for a start s that is an expression of Variables (value: s at their bound values;
  // inner: BINDs of Variables nothing else binds). One graph serves every start: the offset is a kernel argument, so a
  // captured JIT replays it for each binding (a KV cache written at a position). A start whose window passes the dim
  // reads zeros there, and an assign through it writes nothing there.
  Tensor shrink_at(int64_t axis, const UOpRef& start, int64_t value, int64_t size, UOps inner = {}) const;
  Tensor rebind(const UOpRef& var, int64_t value) const;  // the same graph with `var` bound to `value` instead
  Tensor pad(const std::vector<std::pair<int64_t, int64_t>>& pads, double value = 0) const;
  Tensor shrink(const std::vector<std::pair<int64_t, int64_t>>& bounds) const;
  Tensor flip(std::vector<int64_t> axes) const;
  Tensor transpose(int64_t d0 = 1, int64_t d1 = 0) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, Shape sizes) const;
  Tensor squeeze(std::optional<int64_t> dim = std::nullopt) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor repeat(std::vector<int64_t> repeats) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor roll(std::vector<int64_t> shifts, std::vector<int64_t> dims) const;
  static Tensor cat(const std::vector<Tensor>& ts, int64_t dim = 0);
  static Tensor stack(const std::vector<Tensor>& ts, int64_t dim = 0);
  Tensor tril(int64_t k = 0) const;
  Tensor triu(int64_t k = 0) const;
  Tensor tril(const Tensor& k) const;  // the diagonal as a 0-d integer tensor: a symbolic one (Tensor of a bound expression)
  Tensor triu(const Tensor& k) const;
  enum class PadMode { Constant, Reflect, Replicate, Circular };
  Tensor pad(const std::vector<std::pair<int64_t, int64_t>>& pads, PadMode mode, double value = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  int64_t chunk_count(int64_t chunks, int64_t dim = 0) const;  // how many pieces chunk makes, without making them
  Tensor diag() const;
  Tensor diagonal() const;
  static std::vector<Tensor> meshgrid(const std::vector<Tensor>& ts, bool xy = false);
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;

  // random numbers (random.cpp): counter-based threefry, generated inside the kernels that use them
  static void manual_seed(uint64_t seed);
  static Tensor rand(const Shape& shape, DType dtype, const std::string& device);
  static Tensor randn(const Shape& shape, DType dtype, const std::string& device);
  static Tensor uniform(const Shape& shape, double low, double high, DType dtype, const std::string& device);
  static Tensor normal(const Shape& shape, double mean, double std, DType dtype, const std::string& device);
  static Tensor randint(const Shape& shape, int64_t low, int64_t high, DType dtype, const std::string& device);
  static Tensor linspace(double start, double stop, int64_t steps, DType dtype, const std::string& device);
  static Tensor scaled_uniform(const Shape& shape, DType dtype, const std::string& device);
  static Tensor glorot_uniform(const Shape& shape, DType dtype, const std::string& device);
  static Tensor kaiming_uniform(const Shape& shape, double a, DType dtype, const std::string& device);
  static Tensor kaiming_normal(const Shape& shape, double a, DType dtype, const std::string& device);
  static Tensor randperm(int64_t n, DType dtype, const std::string& device);
  Tensor multinomial(int64_t num_samples, bool replacement) const;

  // autograd (gradient.cpp)
  bool requires_grad() const { return s_->requires_grad; }
  Tensor& requires_grad_(bool on = true);
  std::optional<Tensor> grad() const;
  void set_grad(const std::optional<Tensor>& g);
  Tensor& backward(const std::vector<Tensor>& also = {});  // also: float tensors that take a grad whatever their requires_grad
  std::vector<Tensor> gradient(const std::vector<Tensor>& wrt) const;  // d this / d wrt, zeros where unreached
  Tensor contiguous_backward() const;
  void became(UOpRef realized);  // this tensor is now `realized` (its buffer); keeps its origin if gradients need it

  Tensor matmul(const Tensor& o) const;

  // nn functional (nn.cpp); reduction: 0 none, 1 mean, 2 sum
  Tensor linear(const Tensor& w, const std::optional<Tensor>& b) const;  // w is (in, out), as tinygrad's
  Tensor dot(const Tensor& o) const;
  static Tensor einsum(const std::string& formula, const std::vector<Tensor>& xs);
  Tensor conv_transpose2d(const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, Shape stride, Shape dilation, Shape padding,
                          Shape output_padding) const;
  Tensor interpolate(const Shape& size, const std::string& mode = "linear", bool align_corners = false) const;
  Tensor pool(const Shape& k, const Shape& stride, const Shape& dilation) const;  // (..., i...) -> (..., o..., k...)
  Tensor conv2d(const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, Shape stride, Shape dilation, Shape padding) const;
  Tensor max_pool2d(Shape k, Shape stride = {}, Shape dilation = {}, Shape padding = {}) const;
  Tensor avg_pool2d(Shape k, Shape stride = {}, Shape padding = {}, bool count_include_pad = true) const;
  // N-d forms (any number of spatial dims = the weight's or kernel's): padding is one (before, after) pair per spatial
  // dim, negative pairs crop, as tinygrad's; stride/dilation hold one value for every dim or one each
  using PadPairs = std::vector<std::pair<int64_t, int64_t>>;
  Tensor conv(const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, Shape stride, Shape dilation, PadPairs padding) const;
  Tensor conv_transpose(const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, Shape stride, Shape dilation, PadPairs padding,
                        Shape output_padding) const;
  // Winograd F(4, 3) for 3-tap stride-1 convolutions (WINO: -1 when it pays, by a rule or under BEAM by timing both; 1 always; 0 never)
  bool use_winograd(const Tensor& w, int64_t groups, const Shape& stride, const Shape& dilation, const PadPairs& padding) const;
  Tensor conv_winograd(const Tensor& w, int64_t groups, const PadPairs& padding) const;
  // a depthwise 2-d conv with stride 2 and dilation 1 over the input's four phases: contiguous loads per tap
  Tensor conv_depthwise_s2(const Tensor& w, const PadPairs& padding) const;
  bool winograd_faster(const Tensor& w, int64_t groups, const Shape& stride, const Shape& dilation, const PadPairs& padding) const;
  // the conv's result as a node whose gradient is conv_backward, plus the bias
  Tensor conv_finish(Tensor ret, const Tensor& w, const std::optional<Tensor>& bias, int64_t groups, const Shape& stride, const Shape& dilation,
                     const PadPairs& padding) const;
  // the gradients (d input, d weight) of conv(w, groups, stride, dilation, padding) = *this for an incoming gradient g:
  // a transposed convolution and a reduce over the batch and the output positions, both forward-conv-shaped kernels
  static std::pair<Tensor, Tensor> conv_backward(const Tensor& g, const Tensor& x, const Tensor& w, const std::vector<int64_t>& arg);
  enum class PoolKind { Max, Avg };
  // stride empty: the kernel; padding empty: none
  Tensor pool_nd(PoolKind kind, Shape k, Shape stride, Shape dilation, PadPairs padding, bool ceil_mode, bool count_include_pad) const;
  // (max, int32 flat index of the max within each window's spatial plane), tinygrad's max_pool2d(return_indices=True)
  std::pair<Tensor, Tensor> max_pool_indices(Shape k, Shape stride, Shape dilation, PadPairs padding, bool ceil_mode) const;
  // self (N, C, o...) scattered to the positions `indices` name in (N, C, output_size...): a partial inverse of max_pool
  Tensor max_unpool(const Tensor& indices, Shape k, Shape stride, Shape dilation, PadPairs padding, Shape output_size) const;
  Tensor layernorm(std::vector<int64_t> axes = {-1}, double eps = 1e-5) const;
  Tensor batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& mean, const Tensor& invstd) const;
  Tensor dropout(double p) const;
  // enable_gqa: key/value heads (dim -3) repeated to the query's, which must be a multiple, as torch and tinygrad
  Tensor scaled_dot_product_attention(const Tensor& key, const Tensor& value, const std::optional<Tensor>& mask, bool is_causal,
                                      bool enable_gqa = false) const;
  Tensor one_hot(int64_t num_classes) const;
  Tensor cross_entropy(const Tensor& y, double label_smoothing = 0, int reduction = 1) const;
  Tensor sparse_categorical_crossentropy(const Tensor& y, int64_t ignore_index = -1, double label_smoothing = 0, int reduction = 1) const;
  // weight: per class (C,); targets equal to ignore_index count neither in the sum nor in the mean's weight total
  Tensor nll_loss(const Tensor& y, int reduction = 1, const std::optional<Tensor>& weight = std::nullopt,
                  std::optional<int64_t> ignore_index = std::nullopt) const;
  Tensor binary_crossentropy(const Tensor& y, int reduction = 1) const;
  Tensor binary_crossentropy_logits(const Tensor& y, int reduction = 1, const std::optional<Tensor>& pos_weight = std::nullopt) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor& assign(const Tensor& value);
  // indexing (indexing.cpp)
  Tensor getitem(const std::vector<Index>& idx) const;
  Tensor& setitem(const std::vector<Index>& idx, const Tensor& value);  // basic indices only
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;  // values, int32 indices (stable)
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true) const;
  // values (broadcast to pos's shape) stored at flat row-major positions of this tensor, in pos's row-major order: a
  // position named twice keeps the last value, or with a reduce ("sum", "prod", "amax", "amin") each value is combined
  // into the element in turn. Positions outside [0, numel) are skipped. One kernel over the values after a copy of this
  // tensor: the work is the positions', whatever this tensor's size (numpy's put).
  Tensor put(const Tensor& pos, const Tensor& values, const std::string& reduce = "replace") const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce, bool include_self = true) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  Tensor nonzero() const;                          // (count, ndim) int64; reads the count back (data-dependent shape)
  Tensor masked_select(const Tensor& mask) const;  // 1-d; reads the count back
  // tinygrad's nonzero(size=) (int32) and masked_select(size=): `size` rows, fill_value past the hits; size < 0 reads the count
  Tensor nonzero_sized(int64_t size, double fill_value) const;
  Tensor masked_select_sized(const Tensor& mask, int64_t size, double fill_value) const;
  Tensor clone() const;  // a new buffer (lazy), gradients flow through
  Tensor contiguous() const;
  Tensor detach() const;

  Tensor& realize();
  static void realize_all(const std::vector<Tensor*>& ts);
  void to_data(void* out, size_t nbytes);
  // A copy on `device` (a canonical name), realized now (copy_between: through the host between two GPUs).
  // The copy is an item a TinyJit captures (engine copy_step). It starts a new graph: gradients don't flow back across it.
  Tensor to(const std::string& device) const;
  // this tensor (every handle on it) takes x's graph, dtype and device; requires_grad stays, the grad goes
  void replace(const Tensor& x);
  // the buffer holding the elements in order, realized now (a kernel first when this is a view or not yet computed);
  // `what` names the caller in the error for a tensor with Variable dims
  std::shared_ptr<Buffer> contiguous_buffer(const char* what) const;
  // a tensor of `shape` (b's size elements) over buffer b, on b's device
  static Tensor on_buffer(std::shared_ptr<Buffer> b, const Shape& shape);

 private:
  Tensor alu(Ops op, const Tensor& o) const;  // broadcast, promote, apply
  Tensor unary_float(Ops op) const;
  Tensor reduce(Ops op, std::vector<int64_t> axes, bool keepdim, const char* what) const;
  std::vector<int64_t> resolve_axes(std::vector<int64_t> axes, const char* what) const;  // sorted, unique; empty = all
  Tensor cumalu(int64_t axis, Ops op, const char* what) const;
  Tensor bitwise(Ops op, const Tensor& o, const char* what) const;
  int64_t chunk_step(int64_t chunks, int64_t dim) const;  // ceil(size / chunks), as torch
  std::pair<Tensor, Tensor> broadcasted(const Tensor& o, const char* what) const;
  Tensor mv(Ops op, std::vector<int64_t> arg) const;
  int64_t resolve_axis(int64_t axis, const char* what) const;
  std::shared_ptr<TensorState> s_;
};

}  // namespace tg
