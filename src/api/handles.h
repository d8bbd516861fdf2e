// The tensor handle shared by the C API's files: a tg_tensor is one reference to a Tensor, checked against a live set.
#pragma once
#include "api/api.h"
#include "tensor/tensor.h"

struct tg_tensor {
  tg::Tensor t;
};
struct tg_expr {
  tg::UOpRef u;
};

namespace tg::api {
LiveHandles<tg_tensor>& tensor_handles();
tg_tensor* wrap(Tensor t);  // a new handle (reference count 1)
// the tensor behind a live handle; NULL or released handles are TG_ERROR_INVALID_ARGUMENT naming `fn` and `arg`
Tensor& get(const tg_tensor* h, const char* fn, const char* arg = "tensor");
const UOpRef& get_expr(const tg_expr* e, const char* fn);  // the expression behind a live handle
// a C array of n int64s (dims, axes); NULL with n > 0 and more than 64 entries are TG_ERROR_INVALID_ARGUMENT naming `what`
std::vector<int64_t> ints(const int64_t* p, size_t n, const char* fn, const char* what);
}  // namespace tg::api

// nn.state: a tg_state is an ordered set of named tensors and the metadata of the file it came from.
#include "nn/state.h"
struct tg_state {
  tg::nn::StateDict sd;
  tg::nn::Metadata meta;
};
namespace tg::api {
tg_state* new_state(nn::StateDict sd);  // a new handle (reference count 1)
// the entries of a live handle; NULL or released handles are TG_ERROR_INVALID_ARGUMENT naming `fn`
nn::StateDict& state_entries(const tg_state* s, const char* fn);
}  // namespace tg::api
