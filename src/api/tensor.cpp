// C API: tensors. Handles are checked against a live set (api/handles.h), so NULL and released handles are errors, not crashes.
#include <cstring>

#include "api/handles.h"
#include "tensor/jit.h"
#include "tensor/linalg.h"

using namespace tg;

namespace tg::api {
tg_tensor* wrap(Tensor t) { return Handles<tg_tensor>::add(new tg_tensor{std::move(t)}); }
std::vector<int64_t> ints(const int64_t* p, size_t n, const char* fn, const char* what) {
  TG_ARG(p || n == 0, std::string(fn) + ": " + what + " is NULL with a nonzero count");
  TG_ARG(n <= 64, strformat("%s: %zu %s is too many", fn, n, what));
  return std::vector<int64_t>(p, p + n);
}
DType dtype_arg(tg_dtype d, const char* fn) {
  TG_CHECK(unsigned(d) <= TG_FLOAT64, TG_ERROR_DTYPE, strformat("%s: unknown dtype %d", fn, int(d)));
  return dtypes::all()[size_t(d)];
}
}  // namespace tg::api
using tg::api::get;
using tg::api::wrap;
using tg::api::ints;

namespace {
DType dt_of(tg_dtype d, const char* fn) { return api::dtype_arg(d, fn); }
std::vector<std::pair<int64_t, int64_t>> pairs(const int64_t* p, size_t n, const char* fn) {
  TG_ARG(n <= 64, strformat("%s: %zu pairs is too many", fn, n));  // before 2*n can wrap
  auto v = ints(p, 2 * n, fn, "pairs");
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i < n; i++) out.emplace_back(v[2 * i], v[2 * i + 1]);
  return out;
}
const UOpRef& var(const tg_expr* e, const char* fn) { return api::Handles<tg_expr>::get(e, fn, "var").u; }
// an optional tensor argument: NULL means none, anything else must be a live handle
std::optional<Tensor> opt(const tg_tensor* h, const char* fn, const char* arg) {
  if (!h) return std::nullopt;
  return get(h, fn, arg);
}
std::vector<Index> indices(const tg_index* idx, size_t n, const char* fn) {
  TG_ARG(idx || n == 0, std::string(fn) + ": idx is NULL with a nonzero count");
  TG_ARG(n <= 64, strformat("%s: %zu index entries is too many", fn, n));
  std::vector<Index> out;
  for (size_t i = 0; i < n; i++) {
    const tg_index& e = idx[i];
    TG_ARG(unsigned(e.kind) <= TG_INDEX_TENSOR, strformat("%s: idx[%zu] has unknown kind %d", fn, i, int(e.kind)));
    Index ix{Index::Kind(e.kind), e.start, e.stop, e.step, e.has_start != 0, e.has_stop != 0, e.has_step != 0, nullptr};
    if (e.kind == TG_INDEX_TENSOR) ix.tensor = std::make_shared<Tensor>(get(e.tensor, fn, strformat("idx[%zu].tensor", i).c_str()));
    out.push_back(std::move(ix));
  }
  return out;
}
}  // namespace

namespace tg::api {
void write_out(std::vector<Tensor> ts, tg_tensor** out, const char* fn) {
  TG_ARG(out || ts.empty(), std::string(fn) + ": out is NULL");
  std::vector<tg_tensor*> made;
  for (auto& t : ts) made.push_back(wrap(std::move(t)));
  std::copy(made.begin(), made.end(), out);
}
std::vector<Tensor> tensors(tg_tensor* const* ts, size_t n, const char* fn, const char* what) {
  TG_ARG(ts || n == 0, strformat("%s: %s is NULL with a nonzero count", fn, what));
  TG_ARG(n <= (size_t(1) << 20), strformat("%s: %zu tensors is too many", fn, n));
  std::vector<Tensor> v;
  for (size_t i = 0; i < n; i++) v.push_back(get(ts[i], fn, strformat("%s[%zu]", what, i).c_str()));
  return v;
}
}  // namespace tg::api
using tg::api::tensors;
using tg::api::write_out;

#define TG_T(name, body) \
  tg_tensor* tg_tensor_##name { return api::make([&]() -> tg_tensor* { body }); }
#define TG_UNARY(name) TG_T(name(tg_tensor* t), return wrap(get(t, #name).name());)
#define TG_BINARY(name) TG_T(name(tg_tensor* a, tg_tensor* b), return wrap(get(a, #name, "a").name(get(b, #name, "b")));)
#define TG_SCALAR(name, op) TG_T(name##_scalar(tg_tensor* a, double b), Tensor& x = get(a, #name "_scalar"); return wrap(x.op(x.scalar_like(b)));)
#define TG_REDUCE(name) \
  TG_T(name(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim), return wrap(get(t, #name).name(ints(axes, naxes, #name, "axes"), keepdim != 0));)

extern "C" {

TG_T(from_data(const void* data, size_t nbytes, tg_dtype dtype, const int64_t* shape, size_t ndim, const char* device),
     return wrap(Tensor::from_data(data, nbytes, dt_of(dtype, "from_data"), ints(shape, ndim, "from_data", "shape"), canonical_device(device)));)
TG_T(empty(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device),
     return wrap(Tensor::empty(ints(shape, ndim, "empty", "shape"), dt_of(dtype, "empty"), canonical_device(device)));)
TG_T(zeros(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device),
     return wrap(Tensor::full(ints(shape, ndim, "zeros", "shape"), 0, dt_of(dtype, "zeros"), canonical_device(device), "zeros"));)
TG_T(ones(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device),
     return wrap(Tensor::full(ints(shape, ndim, "ones", "shape"), 1, dt_of(dtype, "ones"), canonical_device(device), "ones"));)
TG_T(full(const int64_t* shape, size_t ndim, double value, tg_dtype dtype, const char* device),
     return wrap(Tensor::full(ints(shape, ndim, "full", "shape"), value, dt_of(dtype, "full"), canonical_device(device)));)
TG_T(arange(double start, double stop, double step, tg_dtype dtype, const char* device),
     return wrap(Tensor::arange(start, stop, step, dt_of(dtype, "arange"), canonical_device(device)));)
TG_T(eye(int64_t n, tg_dtype dtype, const char* device), return wrap(Tensor::eye(n, dt_of(dtype, "eye"), canonical_device(device)));)

int64_t tg_tensor_ndim(const tg_tensor* t) {
  int64_t r = -1;
  api::call([&] { r = get(t, "ndim").ndim(); });
  return r;
}
int64_t tg_tensor_numel(const tg_tensor* t) {
  int64_t r = -1;
  api::call([&] { r = get(t, "numel").numel(); });
  return r;
}
tg_status tg_tensor_shape(const tg_tensor* t, int64_t* out, size_t capacity) {
  return api::call([&] {
    const Shape& s = get(t, "shape").shape();
    TG_ARG(out || s.empty(), "shape: out is NULL");
    TG_ARG(capacity >= s.size(), strformat("shape: capacity %zu < ndim %zu", capacity, s.size()));
    std::copy(s.begin(), s.end(), out);
  });
}
tg_status tg_tensor_dtype(const tg_tensor* t, tg_dtype* out) {
  return api::call([&] {
    DType d = get(t, "dtype").dtype();
    TG_ARG(out, "dtype: out is NULL");
    *out = tg_dtype(d.scalar);
  });
}
const char* tg_tensor_device(const tg_tensor* t) {
  const char* r = nullptr;
  api::call([&] { r = get(t, "device").device().c_str(); });
  return r;
}

tg_status tg_tensor_replace(tg_tensor* t, tg_tensor* x) {
  return api::call([&] { get(t, "replace", "t").replace(get(x, "replace", "x")); });
}
TG_T(to(tg_tensor* t, const char* device), Tensor& x = get(t, "to"); TG_ARG(device, "to: device is NULL"); return wrap(x.to(canonical_device(device)));)

TG_BINARY(add)
TG_BINARY(sub)
TG_BINARY(mul)
TG_BINARY(div)
TG_BINARY(idiv)
TG_BINARY(maximum)
TG_BINARY(minimum)
TG_BINARY(pow)
TG_BINARY(lt)
TG_BINARY(le)
TG_BINARY(gt)
TG_BINARY(ge)
TG_BINARY(eq)
TG_BINARY(ne)
TG_BINARY(matmul)
TG_SCALAR(add, add)
TG_SCALAR(sub, sub)
TG_SCALAR(mul, mul)
TG_SCALAR(div, div)
TG_SCALAR(pow, pow)
TG_T(where(tg_tensor* c, tg_tensor* x, tg_tensor* y), return wrap(get(c, "where", "cond").where(get(x, "where", "x"), get(y, "where", "y")));)
TG_T(cast(tg_tensor* t, tg_dtype dtype), return wrap(get(t, "cast").cast(dt_of(dtype, "cast")));)
TG_UNARY(neg)
TG_UNARY(exp)
TG_UNARY(exp2)
TG_UNARY(log)
TG_UNARY(log2)
TG_UNARY(sqrt)
TG_UNARY(reciprocal)
TG_UNARY(sin)
TG_UNARY(cos)
TG_UNARY(abs)
TG_UNARY(relu)
TG_UNARY(sigmoid)
TG_UNARY(tanh)
TG_UNARY(contiguous)
TG_UNARY(rsqrt)
TG_UNARY(square)
TG_UNARY(tan)
TG_UNARY(asin)
TG_UNARY(acos)
TG_UNARY(atan)
TG_UNARY(sinh)
TG_UNARY(cosh)
TG_UNARY(asinh)
TG_UNARY(acosh)
TG_UNARY(atanh)
TG_UNARY(erf)
TG_UNARY(sign)
TG_UNARY(trunc)
TG_UNARY(floor)
TG_UNARY(ceil)
TG_UNARY(round)
TG_UNARY(isnan)
TG_UNARY(isinf)
TG_UNARY(isfinite)
TG_UNARY(logical_not)
TG_UNARY(relu6)
TG_UNARY(selu)
TG_UNARY(gelu)
TG_UNARY(quick_gelu)
TG_UNARY(silu)
TG_UNARY(mish)
TG_UNARY(hardsigmoid)
TG_UNARY(logsigmoid)
TG_UNARY(softsign)
TG_UNARY(hardswish)
TG_UNARY(bitwise_not)
TG_BINARY(mod)
TG_BINARY(fmod)
TG_BINARY(bitwise_and)
TG_BINARY(bitwise_or)
TG_BINARY(bitwise_xor)
TG_BINARY(copysign)
TG_BINARY(logaddexp)
TG_T(leaky_relu(tg_tensor* t, double s), return wrap(get(t, "leaky_relu").leaky_relu(s));)
TG_T(elu(tg_tensor* t, double alpha), return wrap(get(t, "elu").elu(alpha));)
TG_T(celu(tg_tensor* t, double alpha), return wrap(get(t, "celu").celu(alpha));)
TG_T(softplus(tg_tensor* t, double beta), return wrap(get(t, "softplus").softplus(beta));)
TG_T(hardtanh(tg_tensor* t, double lo, double hi), return wrap(get(t, "hardtanh").hardtanh(lo, hi));)
TG_T(clamp(tg_tensor* t, double lo, double hi), return wrap(get(t, "clamp").clamp(lo, hi));)
TG_T(lshift(tg_tensor* t, int64_t bits), return wrap(get(t, "lshift").lshift(bits));)
TG_T(rshift(tg_tensor* t, int64_t bits), return wrap(get(t, "rshift").rshift(bits));)
TG_T(lshift_tensor(tg_tensor* a, tg_tensor* b), return wrap(get(a, "lshift_tensor", "a").lshift(get(b, "lshift_tensor", "b")));)
TG_T(rshift_tensor(tg_tensor* a, tg_tensor* b), return wrap(get(a, "rshift_tensor", "a").rshift(get(b, "rshift_tensor", "b")));)
TG_T(lerp(tg_tensor* a, tg_tensor* b, tg_tensor* w), return wrap(get(a, "lerp", "a").lerp(get(b, "lerp", "b"), get(w, "lerp", "weight")));)
TG_T(isclose(tg_tensor* a, tg_tensor* b, double rtol, double atol, int equal_nan),
     return wrap(get(a, "isclose", "a").isclose(get(b, "isclose", "b"), rtol, atol, equal_nan != 0));)
TG_REDUCE(sum)
TG_REDUCE(prod)
TG_REDUCE(max)
TG_REDUCE(min)
TG_REDUCE(mean)
TG_REDUCE(all)
TG_REDUCE(any)
TG_REDUCE(logsumexp)
#define TG_STAT(name)                                                                                                  \
  TG_T(name(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim, double correction),                          \
       return wrap(get(t, #name).name(ints(axes, naxes, #name, "axes"), keepdim != 0, correction));)                   \
  tg_status tg_tensor_##name##_mean(tg_tensor* t, const int64_t* axes, size_t naxes, int keepdim, double correction, tg_tensor** out) { \
    return api::call([&] {                                                                                             \
      Tensor& x = get(t, #name "_mean");                                                                               \
      auto ax = ints(axes, naxes, #name "_mean", "axes");                                                              \
      write_out({x.name(ax, keepdim != 0, correction), x.mean(ax, keepdim != 0)}, out, #name "_mean");                \
    });                                                                                                                \
  }
TG_STAT(std)
TG_STAT(var)
#undef TG_STAT
TG_T(argmax(tg_tensor* t, int64_t axis, int keepdim, int flatten),
     return wrap(get(t, "argmax").argmax(flatten ? std::nullopt : std::optional<int64_t>(axis), keepdim != 0));)
TG_T(argmin(tg_tensor* t, int64_t axis, int keepdim, int flatten),
     return wrap(get(t, "argmin").argmin(flatten ? std::nullopt : std::optional<int64_t>(axis), keepdim != 0));)
TG_T(cumsum(tg_tensor* t, int64_t axis), return wrap(get(t, "cumsum").cumsum(axis));)
TG_T(cumprod(tg_tensor* t, int64_t axis), return wrap(get(t, "cumprod").cumprod(axis));)
TG_T(cummax(tg_tensor* t, int64_t axis), return wrap(get(t, "cummax").cummax(axis));)
TG_T(cummin(tg_tensor* t, int64_t axis), return wrap(get(t, "cummin").cummin(axis));)
TG_T(softmax(tg_tensor* t, int64_t axis), return wrap(get(t, "softmax").softmax(axis));)
TG_T(log_softmax(tg_tensor* t, int64_t axis), return wrap(get(t, "log_softmax").log_softmax(axis));)
TG_T(reshape(tg_tensor* t, const int64_t* shape, size_t ndim), return wrap(get(t, "reshape").reshape(ints(shape, ndim, "reshape", "shape")));)
TG_T(permute(tg_tensor* t, const int64_t* order, size_t ndim), return wrap(get(t, "permute").permute(ints(order, ndim, "permute", "order")));)
TG_T(expand(tg_tensor* t, const int64_t* shape, size_t ndim), return wrap(get(t, "expand").expand(ints(shape, ndim, "expand", "shape")));)
TG_T(pad(tg_tensor* t, const int64_t* pads, size_t npairs, double value),
     return wrap(get(t, "pad").pad(pairs(pads, npairs, "pad"), Tensor::PadMode::Constant, value));)
TG_T(pad_to(tg_tensor* t, int64_t axis, int64_t before, int64_t size, double value), return wrap(get(t, "pad_to").pad_to(axis, before, size, value));)
TG_T(shrink(tg_tensor* t, const int64_t* bounds, size_t npairs), return wrap(get(t, "shrink").shrink(pairs(bounds, npairs, "shrink")));)
TG_T(shrink_var(tg_tensor* t, int64_t axis, const tg_expr* v, int64_t value),
     return wrap(get(t, "shrink_var").shrink_var(axis, var(v, "shrink_var"), value));)
TG_T(rebind(tg_tensor* t, const tg_expr* v, int64_t value), return wrap(get(t, "rebind").rebind(var(v, "rebind"), value));)
TG_T(at_binding(tg_tensor* t), {
  const Tensor& x = get(t, "at_binding");
  if (x.uop()->sym().empty()) return wrap(x);
  // a capture would keep this binding's value in its kernels, and replay it for every other binding
  TG_CHECK(!TinyJit::in_function(), TG_ERROR_UNSUPPORTED,
           "at_binding: a tensor of shape " + sym_shape_str(x) + " inside a TinyJit function: its replays would keep this binding");
  return wrap(Tensor(tg::at_binding(x.uop()), x.device()));
})
tg_status tg_tensor_shape_vars(const tg_tensor* t, tg_expr** out, size_t capacity) {
  return api::call([&] {
    const Tensor& x = get(t, "shape_vars");
    size_t n = x.shape().size();
    TG_ARG(out || n == 0, "shape_vars: out is NULL");
    TG_ARG(capacity >= n, strformat("shape_vars: capacity %zu < ndim %zu", capacity, n));
    std::vector<const UOp*> sym = x.uop()->sym();
    sym.resize(n);  // empty for a plain shape
    std::vector<tg_expr*> made = api::node_handles<tg_expr>(sym, "shape_vars");
    std::copy(made.begin(), made.end(), out);
  });
}
TG_T(flip(tg_tensor* t, const int64_t* axes, size_t naxes), return wrap(get(t, "flip").flip(ints(axes, naxes, "flip", "axes")));)
TG_T(transpose(tg_tensor* t, int64_t d0, int64_t d1), return wrap(get(t, "transpose").transpose(d0, d1));)
TG_T(flatten(tg_tensor* t, int64_t a, int64_t b), return wrap(get(t, "flatten").flatten(a, b));)
TG_T(unflatten(tg_tensor* t, int64_t dim, const int64_t* sizes, size_t n), return wrap(get(t, "unflatten").unflatten(dim, ints(sizes, n, "unflatten", "sizes")));)
TG_T(squeeze(tg_tensor* t, int64_t dim), return wrap(get(t, "squeeze").squeeze(dim));)
TG_T(squeeze_all(tg_tensor* t), return wrap(get(t, "squeeze_all").squeeze());)
TG_T(unsqueeze(tg_tensor* t, int64_t dim), return wrap(get(t, "unsqueeze").unsqueeze(dim));)
TG_T(repeat(tg_tensor* t, const int64_t* reps, size_t n), return wrap(get(t, "repeat").repeat(ints(reps, n, "repeat", "repeats")));)
TG_T(repeat_interleave(tg_tensor* t, int64_t repeats, int64_t dim), return wrap(get(t, "repeat_interleave").repeat_interleave(repeats, dim));)
TG_T(roll(tg_tensor* t, const int64_t* shifts, const int64_t* dims, size_t n),
     return wrap(get(t, "roll").roll(ints(shifts, n, "roll", "shifts"), ints(dims, n, "roll", "dims")));)
TG_T(cat(tg_tensor* const* ts, size_t n, int64_t dim), return wrap(Tensor::cat(tensors(ts, n, "cat"), dim));)
TG_T(stack(tg_tensor* const* ts, size_t n, int64_t dim), return wrap(Tensor::stack(tensors(ts, n, "stack"), dim));)
TG_T(tril(tg_tensor* t, int64_t k), return wrap(get(t, "tril").tril(k));)
TG_T(triu(tg_tensor* t, int64_t k), return wrap(get(t, "triu").triu(k));)
TG_T(tril_tensor(tg_tensor* t, tg_tensor* k), return wrap(get(t, "tril_tensor").tril(get(k, "tril_tensor", "k")));)
TG_T(triu_tensor(tg_tensor* t, tg_tensor* k), return wrap(get(t, "triu_tensor").triu(get(k, "triu_tensor", "k")));)
TG_T(pad_mode(tg_tensor* t, const int64_t* pads, size_t npairs, int mode, double value), {
  TG_ARG(mode >= 0 && mode <= 3, strformat("pad_mode: unknown mode %d (0 constant, 1 reflect, 2 replicate, 3 circular)", mode));
  return wrap(get(t, "pad_mode").pad(pairs(pads, npairs, "pad_mode"), Tensor::PadMode(mode), value));
})

TG_T(linear(tg_tensor* x, tg_tensor* w, tg_tensor* b), return wrap(get(x, "linear", "x").linear(get(w, "linear", "weight"), opt(b, "linear", "bias")));)
TG_T(conv2d(tg_tensor* x, tg_tensor* w, tg_tensor* b, int64_t groups, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t ph, int64_t pw),
     return wrap(get(x, "conv2d", "x").conv2d(get(w, "conv2d", "weight"), opt(b, "conv2d", "bias"), groups, {sh, sw}, {dh, dw}, {ph, pw}));)
TG_T(max_pool2d(tg_tensor* t, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t ph, int64_t pw),
     return wrap(get(t, "max_pool2d").max_pool2d({kh, kw}, {sh, sw}, {dh, dw}, {ph, pw}));)
TG_T(avg_pool2d(tg_tensor* t, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int count_include_pad),
     return wrap(get(t, "avg_pool2d").avg_pool2d({kh, kw}, {sh, sw}, {ph, pw}, count_include_pad != 0));)
TG_T(layernorm(tg_tensor* t, const int64_t* axes, size_t naxes, double eps), {
  auto ax = ints(axes, naxes, "layernorm", "axes");
  return wrap(get(t, "layernorm").layernorm(ax.empty() ? std::vector<int64_t>{-1} : ax, eps));
})
TG_T(batchnorm(tg_tensor* x, tg_tensor* w, tg_tensor* b, tg_tensor* mean, tg_tensor* invstd),
     return wrap(get(x, "batchnorm", "x").batchnorm(opt(w, "batchnorm", "weight"), opt(b, "batchnorm", "bias"), get(mean, "batchnorm", "mean"),
                                                    get(invstd, "batchnorm", "invstd")));)
TG_T(dropout(tg_tensor* t, double p), return wrap(get(t, "dropout").dropout(p));)
TG_T(scaled_dot_product_attention(tg_tensor* q, tg_tensor* k, tg_tensor* v, tg_tensor* mask, int is_causal),
     return wrap(get(q, "scaled_dot_product_attention", "q").scaled_dot_product_attention(get(k, "scaled_dot_product_attention", "k"),
                                                                                          get(v, "scaled_dot_product_attention", "v"),
                                                                                          opt(mask, "scaled_dot_product_attention", "mask"), is_causal != 0));)
TG_T(one_hot(tg_tensor* t, int64_t n), return wrap(get(t, "one_hot").one_hot(n));)
TG_T(scaled_dot_product_attention_gqa(tg_tensor* q, tg_tensor* k, tg_tensor* v, tg_tensor* mask, int is_causal, int enable_gqa),
     constexpr const char* f = "scaled_dot_product_attention_gqa";
     return wrap(get(q, f, "q").scaled_dot_product_attention(get(k, f, "k"), get(v, f, "v"), opt(mask, f, "mask"), is_causal != 0, enable_gqa != 0));)
TG_T(nll_loss_weighted(tg_tensor* x, tg_tensor* y, tg_tensor* w, int use_ignore, int64_t ignore_index, int red),
     constexpr const char* f = "nll_loss_weighted";
     return wrap(get(x, f, "logprobs").nll_loss(get(y, f, "target"), red, opt(w, f, "weight"),
                                                use_ignore ? std::optional<int64_t>(ignore_index) : std::nullopt));)
TG_T(binary_crossentropy_logits_weighted(tg_tensor* x, tg_tensor* y, tg_tensor* pw, int red),
     constexpr const char* f = "binary_crossentropy_logits_weighted";
     return wrap(get(x, f, "x").binary_crossentropy_logits(get(y, f, "y"), red, opt(pw, f, "pos_weight")));)
TG_T(cross_entropy(tg_tensor* x, tg_tensor* y, double ls, int red),
     return wrap(get(x, "cross_entropy", "logits").cross_entropy(get(y, "cross_entropy", "target"), ls, red));)
TG_T(sparse_categorical_crossentropy(tg_tensor* x, tg_tensor* y, int64_t ignore, double ls, int red),
     return wrap(get(x, "sparse_categorical_crossentropy", "logits").sparse_categorical_crossentropy(get(y, "sparse_categorical_crossentropy", "labels"), ignore, ls, red));)
TG_T(nll_loss(tg_tensor* x, tg_tensor* y, int red), return wrap(get(x, "nll_loss", "logprobs").nll_loss(get(y, "nll_loss", "target"), red));)
TG_T(binary_crossentropy(tg_tensor* x, tg_tensor* y, int red), return wrap(get(x, "binary_crossentropy", "p").binary_crossentropy(get(y, "binary_crossentropy", "y"), red));)
TG_T(binary_crossentropy_logits(tg_tensor* x, tg_tensor* y, int red),
     return wrap(get(x, "binary_crossentropy_logits", "x").binary_crossentropy_logits(get(y, "binary_crossentropy_logits", "y"), red));)
TG_T(gather(tg_tensor* t, int64_t dim, tg_tensor* idx), return wrap(get(t, "gather").gather(dim, get(idx, "gather", "index")));)
tg_status tg_tensor_assign(tg_tensor* t, tg_tensor* v) {
  return api::call([&] {
    Tensor& x = get(t, "assign");
    x.assign(get(v, "assign", "value"));
  });
}

TG_T(getitem(tg_tensor* t, const tg_index* idx, size_t n), return wrap(get(t, "getitem").getitem(indices(idx, n, "getitem")));)
tg_status tg_tensor_setitem(tg_tensor* t, const tg_index* idx, size_t n, tg_tensor* value) {
  return api::call([&] {
    Tensor& x = get(t, "setitem");
    x.setitem(indices(idx, n, "setitem"), get(value, "setitem", "value"));
  });
}

tg_status tg_tensor_split(tg_tensor* t, const int64_t* sizes, size_t n, int64_t dim, tg_tensor** out) {
  return api::call([&] { write_out(get(t, "split").split(ints(sizes, n, "split", "sizes"), dim), out, "split"); });
}
int64_t tg_tensor_chunk(tg_tensor* t, int64_t chunks, int64_t dim, tg_tensor** out, size_t capacity) {
  int64_t r = -1;
  api::call([&] {
    Tensor& x = get(t, "chunk");
    int64_t pieces = x.chunk_count(chunks, dim);
    TG_ARG(uint64_t(pieces) <= capacity, strformat("chunk: %lld pieces, out has room for %zu", (long long)pieces, capacity));
    write_out(x.chunk(chunks, dim), out, "chunk");
    r = pieces;
  });
  return r;
}
tg_status tg_tensor_meshgrid(tg_tensor* const* ts, size_t n, int xy, tg_tensor** out) {
  return api::call([&] { write_out(Tensor::meshgrid(tensors(ts, n, "meshgrid"), xy != 0), out, "meshgrid"); });
}
TG_UNARY(diag)
TG_UNARY(diagonal)
TG_UNARY(nonzero)
TG_T(unfold(tg_tensor* t, int64_t dim, int64_t size, int64_t step), return wrap(get(t, "unfold").unfold(dim, size, step));)
tg_status tg_tensor_sort(tg_tensor* t, int64_t dim, int descending, tg_tensor** out) {
  return api::call([&] {
    auto [v, i] = get(t, "sort").sort(dim, descending != 0);
    write_out({v, i}, out, "sort");
  });
}
TG_T(argsort(tg_tensor* t, int64_t dim, int descending), return wrap(get(t, "argsort").argsort(dim, descending != 0));)
tg_status tg_tensor_topk(tg_tensor* t, int64_t k, int64_t dim, int largest, tg_tensor** out) {
  return api::call([&] {
    auto [v, i] = get(t, "topk").topk(k, dim, largest != 0);
    write_out({v, i}, out, "topk");
  });
}
TG_T(scatter(tg_tensor* t, int64_t dim, tg_tensor* index, tg_tensor* src),
     return wrap(get(t, "scatter").scatter(dim, get(index, "scatter", "index"), get(src, "scatter", "src")));)
TG_T(scatter_reduce(tg_tensor* t, int64_t dim, tg_tensor* index, tg_tensor* src, const char* reduce, int include_self), {
  TG_ARG(reduce, "scatter_reduce: reduce is NULL");
  return wrap(get(t, "scatter_reduce").scatter_reduce(dim, get(index, "scatter_reduce", "index"), get(src, "scatter_reduce", "src"), reduce, include_self != 0));
})
TG_T(masked_fill(tg_tensor* t, tg_tensor* mask, tg_tensor* value),
     return wrap(get(t, "masked_fill").masked_fill(get(mask, "masked_fill", "mask"), get(value, "masked_fill", "value")));)
TG_T(masked_select(tg_tensor* t, tg_tensor* mask), return wrap(get(t, "masked_select").masked_select(get(mask, "masked_select", "mask")));)
TG_T(nonzero_sized(tg_tensor* t, int64_t size, double fill_value), return wrap(get(t, "nonzero_sized").nonzero_sized(size, fill_value));)
TG_T(masked_select_sized(tg_tensor* t, tg_tensor* mask, int64_t size, double fill_value),
     return wrap(get(t, "masked_select_sized").masked_select_sized(get(mask, "masked_select_sized", "mask"), size, fill_value));)
TG_UNARY(clone)
TG_T(bitcast(tg_tensor* t, tg_dtype dtype), return wrap(get(t, "bitcast").bitcast(dt_of(dtype, "bitcast")));)
TG_T(dot(tg_tensor* a, tg_tensor* b), return wrap(get(a, "dot", "a").dot(get(b, "dot", "b")));)
TG_T(einsum(const char* formula, tg_tensor* const* ts, size_t n), {
  TG_ARG(formula, "einsum: formula is NULL");
  return wrap(Tensor::einsum(formula, tensors(ts, n, "einsum")));
})
tg_status tg_tensor_qr(tg_tensor* t, tg_tensor** out) {
  return api::call([&] {
    auto [q, r] = tg::qr(get(t, "qr"));
    write_out({q, r}, out, "qr");
  });
}
tg_status tg_tensor_svd(tg_tensor* t, int full_matrices, tg_tensor** out) {
  return api::call([&] {
    auto [u, s, vh] = tg::svd(get(t, "svd"), full_matrices != 0);
    write_out({u, s, vh}, out, "svd");
  });
}
TG_T(conv_transpose2d(tg_tensor* x, tg_tensor* w, tg_tensor* b, int64_t groups, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t ph, int64_t pw,
                      int64_t oph, int64_t opw),
     return wrap(get(x, "conv_transpose2d", "x").conv_transpose2d(get(w, "conv_transpose2d", "weight"), opt(b, "conv_transpose2d", "bias"), groups, {sh, sw},
                                                                  {dh, dw}, {ph, pw}, {oph, opw}));)
TG_T(conv(tg_tensor* x, tg_tensor* w, tg_tensor* b, int64_t groups, const int64_t* stride, size_t nstride, const int64_t* dilation, size_t ndilation,
          const int64_t* padding, size_t npairs),
     return wrap(get(x, "conv", "x").conv(get(w, "conv", "weight"), opt(b, "conv", "bias"), groups, ints(stride, nstride, "conv", "stride"),
                                          ints(dilation, ndilation, "conv", "dilation"), pairs(padding, npairs, "conv")));)
TG_T(conv_transpose(tg_tensor* x, tg_tensor* w, tg_tensor* b, int64_t groups, const int64_t* stride, size_t nstride, const int64_t* dilation,
                    size_t ndilation, const int64_t* padding, size_t npairs, const int64_t* output_padding, size_t noutput_padding), {
  const char* fn = "conv_transpose";
  Shape op = ints(output_padding, noutput_padding, fn, "output_padding");
  if (op.empty()) op.push_back(0);
  return wrap(get(x, fn, "x").conv_transpose(get(w, fn, "weight"), opt(b, fn, "bias"), groups, ints(stride, nstride, fn, "stride"),
                                             ints(dilation, ndilation, fn, "dilation"), pairs(padding, npairs, fn), op));
})
TG_T(pool(tg_tensor* t, int kind, const int64_t* kernel, size_t nkernel, const int64_t* stride, size_t nstride, const int64_t* dilation, size_t ndilation,
          const int64_t* padding, size_t npairs, int ceil_mode, int count_include_pad), {
  TG_ARG(kind == 0 || kind == 1, strformat("pool: unknown kind %d (0 max, 1 average)", kind));
  return wrap(get(t, "pool").pool_nd(kind == 0 ? Tensor::PoolKind::Max : Tensor::PoolKind::Avg, ints(kernel, nkernel, "pool", "kernel"),
                                     ints(stride, nstride, "pool", "stride"), ints(dilation, ndilation, "pool", "dilation"), pairs(padding, npairs, "pool"),
                                     ceil_mode != 0, count_include_pad != 0));
})
tg_status tg_tensor_max_pool_indices(tg_tensor* t, const int64_t* kernel, size_t nkernel, const int64_t* stride, size_t nstride, const int64_t* dilation,
                                     size_t ndilation, const int64_t* padding, size_t npairs, int ceil_mode, tg_tensor** out) {
  return api::call([&] {
    const char* fn = "max_pool_indices";
    auto [v, i] = get(t, fn).max_pool_indices(ints(kernel, nkernel, fn, "kernel"), ints(stride, nstride, fn, "stride"), ints(dilation, ndilation, fn, "dilation"),
                                              pairs(padding, npairs, fn), ceil_mode != 0);
    write_out({v, i}, out, fn);
  });
}
TG_T(max_unpool(tg_tensor* t, tg_tensor* indices, const int64_t* kernel, size_t nkernel, const int64_t* stride, size_t nstride, const int64_t* dilation,
                size_t ndilation, const int64_t* padding, size_t npairs, const int64_t* output_size, size_t noutput_size), {
  const char* fn = "max_unpool";
  return wrap(get(t, fn).max_unpool(get(indices, fn, "indices"), ints(kernel, nkernel, fn, "kernel"), ints(stride, nstride, fn, "stride"),
                                    ints(dilation, ndilation, fn, "dilation"), pairs(padding, npairs, fn), ints(output_size, noutput_size, fn, "output_size")));
})
TG_T(interpolate(tg_tensor* t, const int64_t* size, size_t n, const char* mode, int align_corners), {
  TG_ARG(mode, "interpolate: mode is NULL");
  return wrap(get(t, "interpolate").interpolate(ints(size, n, "interpolate", "size"), mode, align_corners != 0));
})
TG_T(linspace(double start, double stop, int64_t steps, tg_dtype dtype, const char* device),
     return wrap(Tensor::linspace(start, stop, steps, dt_of(dtype, "linspace"), canonical_device(device)));)
TG_T(scaled_uniform(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device),
     return wrap(Tensor::scaled_uniform(ints(shape, ndim, "scaled_uniform", "shape"), dt_of(dtype, "scaled_uniform"), canonical_device(device)));)
TG_T(glorot_uniform(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device),
     return wrap(Tensor::glorot_uniform(ints(shape, ndim, "glorot_uniform", "shape"), dt_of(dtype, "glorot_uniform"), canonical_device(device)));)
TG_T(kaiming_uniform(const int64_t* shape, size_t ndim, double a, tg_dtype dtype, const char* device),
     return wrap(Tensor::kaiming_uniform(ints(shape, ndim, "kaiming_uniform", "shape"), a, dt_of(dtype, "kaiming_uniform"), canonical_device(device)));)
TG_T(kaiming_normal(const int64_t* shape, size_t ndim, double a, tg_dtype dtype, const char* device),
     return wrap(Tensor::kaiming_normal(ints(shape, ndim, "kaiming_normal", "shape"), a, dt_of(dtype, "kaiming_normal"), canonical_device(device)));)
TG_T(randperm(int64_t n, tg_dtype dtype, const char* device), return wrap(Tensor::randperm(n, dt_of(dtype, "randperm"), canonical_device(device)));)
TG_T(multinomial(tg_tensor* t, int64_t n, int replacement), return wrap(get(t, "multinomial").multinomial(n, replacement != 0));)
TG_T(rand_like(tg_tensor* t), { Tensor& x = get(t, "rand_like"); return wrap(Tensor::rand(x.shape(), x.dtype(), x.device())); })
TG_T(randn_like(tg_tensor* t), { Tensor& x = get(t, "randn_like"); return wrap(Tensor::randn(x.shape(), x.dtype(), x.device())); })
TG_T(full_like(tg_tensor* t, double v), { Tensor& x = get(t, "full_like"); return wrap(Tensor::full(x.shape(), v, x.dtype(), x.device(), "full_like")); })
TG_T(zeros_like(tg_tensor* t), { Tensor& x = get(t, "zeros_like"); return wrap(Tensor::full(x.shape(), 0, x.dtype(), x.device(), "zeros_like")); })
TG_T(ones_like(tg_tensor* t), { Tensor& x = get(t, "ones_like"); return wrap(Tensor::full(x.shape(), 1, x.dtype(), x.device(), "ones_like")); })

void tg_manual_seed(uint64_t seed) {
  api::call([&] { Tensor::manual_seed(seed); });  // its first call allocates: no exception may leave
}
TG_T(rand(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device),
     return wrap(Tensor::rand(ints(shape, ndim, "rand", "shape"), dt_of(dtype, "rand"), canonical_device(device)));)
TG_T(randn(const int64_t* shape, size_t ndim, tg_dtype dtype, const char* device),
     return wrap(Tensor::randn(ints(shape, ndim, "randn", "shape"), dt_of(dtype, "randn"), canonical_device(device)));)
TG_T(uniform(const int64_t* shape, size_t ndim, double low, double high, tg_dtype dtype, const char* device),
     return wrap(Tensor::uniform(ints(shape, ndim, "uniform", "shape"), low, high, dt_of(dtype, "uniform"), canonical_device(device)));)
TG_T(normal(const int64_t* shape, size_t ndim, double mean, double std, tg_dtype dtype, const char* device),
     return wrap(Tensor::normal(ints(shape, ndim, "normal", "shape"), mean, std, dt_of(dtype, "normal"), canonical_device(device)));)
TG_T(randint(const int64_t* shape, size_t ndim, int64_t low, int64_t high, tg_dtype dtype, const char* device),
     return wrap(Tensor::randint(ints(shape, ndim, "randint", "shape"), low, high, dt_of(dtype, "randint"), canonical_device(device)));)

tg_status tg_tensor_set_requires_grad(tg_tensor* t, int flag) {
  return api::call([&] { get(t, "set_requires_grad").requires_grad_(flag != 0); });
}
int tg_tensor_requires_grad(const tg_tensor* t) {
  int r = -1;
  api::call([&] { r = get(t, "requires_grad").requires_grad() ? 1 : 0; });
  return r;
}
tg_status tg_tensor_backward(tg_tensor* loss) {
  return api::call([&] { get(loss, "backward").backward(); });
}
tg_status tg_tensor_backward_also(tg_tensor* loss, tg_tensor* const* also, size_t n) {
  return api::call([&] {
    Tensor& l = get(loss, "backward_also");
    TG_ARG(also || n == 0, "backward_also: also is NULL with n > 0");
    std::vector<Tensor> ts;
    for (size_t i = 0; i < n; i++) ts.push_back(get(also[i], "backward_also", "also"));
    l.backward(ts);
  });
}
TG_T(grad(tg_tensor* t), {
  auto g = get(t, "grad").grad();
  TG_ARG(g, "grad: the tensor has no gradient (requires_grad not set, or no backward through it yet)");
  return wrap(*g);
})
tg_status tg_tensor_set_grad(tg_tensor* t, tg_tensor* g) {
  return api::call([&] {
    Tensor& x = get(t, "set_grad");
    x.set_grad(g ? std::optional<Tensor>(get(g, "set_grad", "grad")) : std::nullopt);
  });
}
tg_status tg_tensor_gradient(tg_tensor* target, tg_tensor* const* wrt, size_t n, tg_tensor** out) {
  return api::call([&] {
    Tensor& y = get(target, "gradient", "target");
    std::vector<Tensor> xs = tensors(wrt, n, "gradient");
    TG_ARG(out || n == 0, "gradient: out is NULL");
    write_out(y.gradient(xs), out, "gradient");
  });
}
TG_UNARY(detach)
TG_UNARY(contiguous_backward)

tg_status tg_tensor_realize(tg_tensor* t) {
  return api::call([&] { get(t, "realize").realize(); });
}
tg_status tg_tensor_realize_many(tg_tensor* const* ts, size_t n) {
  return api::call([&] {
    TG_ARG(ts || n == 0, "realize_many: tensors is NULL");
    std::vector<Tensor*> v;
    for (size_t i = 0; i < n; i++) v.push_back(&get(ts[i], "realize_many", strformat("tensors[%zu]", i).c_str()));
    Tensor::realize_all(v);
  });
}
tg_status tg_tensor_to_data(tg_tensor* t, void* out, size_t nbytes) {
  return api::call([&] { get(t, "to_data").to_data(out, nbytes); });
}
tg_tensor* tg_tensor_retain(tg_tensor* t) {
  return api::make([&] { return api::Handles<tg_tensor>::retain(t, "tg_tensor_retain"); });
}
void tg_tensor_release(tg_tensor* t) { api::Handles<tg_tensor>::release(t, "tg_tensor_release"); }

tg_status tg_counters_get(tg_counters* out) {
  return api::call([&] {
    TG_ARG(out, "counters_get: out is NULL");
    TG_ARG(out->struct_size >= offsetof(tg_counters, kernel_count) + sizeof(uint64_t), "counters_get: struct_size is not set");
    tg_counters c{};
    c.struct_size = sizeof c;
    c.kernel_count = GlobalCounters::kernel_count, c.global_ops = GlobalCounters::global_ops, c.global_mem = GlobalCounters::global_mem;
    c.time_sum_s = GlobalCounters::time_sum_s, c.compile_count = GlobalCounters::compile_count;
    c.schedule_count = GlobalCounters::schedule_count, c.lower_count = GlobalCounters::lower_count;
    c.copy_count = GlobalCounters::copy_count, c.copy_bytes = GlobalCounters::copy_bytes;
    size_t n = std::min(out->struct_size, sizeof c);  // a caller built against an older, smaller struct gets its prefix
    std::memcpy(out, &c, n);
    out->struct_size = n;
  });
}
void tg_counters_reset(void) { GlobalCounters::reset(); }
int64_t tg_live_handles(void) { return api::live_handle_count.load(std::memory_order_relaxed); }

}  // extern "C"
