// The C API's handles. Every opaque type goes through Handles<H>, so all of them count references, catch NULL and
// released handles, and word those errors the same way.
#pragma once
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "api/api.h"

namespace tg::api {

// Handles of every type alive in the process (tg_live_handles).
inline std::atomic<int64_t> live_handle_count{0};

// The live handles of type H, each with its reference count: looking a handle up here before touching it turns NULL and
// released handles into TG_ERROR_INVALID_ARGUMENT instead of crashes. H names its C type in `kind` ("tg_tensor"); an
// argument is called by that name less "tg_" unless the caller says otherwise. Creating, checking, retaining and
// releasing are thread-safe for every type (one mutex per type); using the object behind a handle is as thread-safe as
// the header says of that type.
template <class H>
class Handles {
 public:
  static H* add(H* h) {
    std::lock_guard<std::mutex> lk(reg().mu);
    reg().rc[h] = 1;
    live_handle_count.fetch_add(1, std::memory_order_relaxed);
    return h;
  }
  // the object behind a live handle; errors name `fn` and `arg`
  static H& get(const H* h, const char* fn, const char* arg = H::kind + 3) {
    check(h, 0, fn, arg, "released?");
    return const_cast<H&>(*h);
  }
  static H* retain(H* h, const char* fn) {
    check(h, 1, fn, H::kind + 3, "released?");
    return h;
  }
  // NULL is a no-op; a handle that is not live (released twice) only sets the error
  static void release(H* h, const char* fn) noexcept {
    if (h) call([&] { check(h, -1, fn, H::kind + 3, "released twice?"); });
  }

 private:
  struct Registry {
    std::mutex mu;
    std::unordered_map<const H*, int64_t> rc;
  };
  static Registry& reg() {
    static auto* r = new Registry();  // never destroyed: handles may outlive statics
    return *r;
  }
  // adds `d` to the live handle's count, deleting it at 0; false if `h` is not live
  static bool count(const H* h, int d) {
    {
      std::lock_guard<std::mutex> lk(reg().mu);
      auto it = reg().rc.find(h);
      if (it == reg().rc.end()) return false;
      if ((it->second += d) > 0) return true;
      reg().rc.erase(it);
    }
    live_handle_count.fetch_sub(1, std::memory_order_relaxed);
    delete h;
    return true;
  }
  static void check(const H* h, int d, const char* fn, const char* arg, const char* why) {
    TG_ARG(h, strformat("%s: %s is NULL", fn, arg));
    TG_ARG(count(h, d), strformat("%s: %s is not a live %s handle (%s)", fn, arg, H::kind, why));
  }
};

}  // namespace tg::api

#include "tensor/tensor.h"

struct tg_tensor {
  static constexpr const char* kind = "tg_tensor";
  tg::Tensor t;
};
struct tg_expr {
  static constexpr const char* kind = "tg_expr";
  tg::UOpRef u;
};
struct tg_uop {
  static constexpr const char* kind = "tg_uop";
  tg::UOpRef u;
};

namespace tg::api {
// New handles (an expression's, a node's) on `nodes`, a NULL for each null entry, all made before the caller writes any:
// when one fails the others are released and out-arrays stay untouched
template <class H>
std::vector<H*> node_handles(const std::vector<const UOp*>& nodes, const char* fn) {
  std::vector<H*> made(nodes.size(), nullptr);
  try {
    for (size_t i = 0; i < nodes.size(); i++)
      if (nodes[i]) made[i] = Handles<H>::add(new H{nodes[i]->ref()});
  } catch (...) {
    for (H* h : made) Handles<H>::release(h, fn);
    throw;
  }
  return made;
}
tg_tensor* wrap(Tensor t);  // a new handle (reference count 1)
// the tensor behind a live handle
inline Tensor& get(const tg_tensor* h, const char* fn, const char* arg = "tensor") { return Handles<tg_tensor>::get(h, fn, arg).t; }
// a C array of n int64s (dims, axes); NULL with n > 0 and more than 64 entries are TG_ERROR_INVALID_ARGUMENT naming `what`
std::vector<int64_t> ints(const int64_t* p, size_t n, const char* fn, const char* what);
DType dtype_arg(tg_dtype d, const char* fn);  // a caller's tg_dtype; any other int is TG_ERROR_DTYPE naming `fn`
// a caller's array of n tensor handles, called `what` in errors (NULL with n > 0, a dead handle, more than 2^20)
std::vector<Tensor> tensors(tg_tensor* const* ts, size_t n, const char* fn, const char* what = "tensors");
// the tensors of a multi-result function into out[0..]: new handles, all made before any is written
void write_out(std::vector<Tensor> ts, tg_tensor** out, const char* fn);
}  // namespace tg::api

// nn.state: a tg_state is an ordered set of named tensors and the metadata of the file it came from.
#include "nn/state.h"
struct tg_state {
  static constexpr const char* kind = "tg_state";
  tg::nn::StateDict sd;
  tg::nn::Metadata meta;
};

// onnx: a loaded model, with the strings the C API lends out
#include "onnx/model.h"
struct tg_onnx_model {
  static constexpr const char* kind = "tg_onnx_model";
  std::shared_ptr<tg::onnx::Model> m;
  std::string producer;
};

// llm: a language model from a GGUF file
#include "nn/llm.h"
struct tg_llm {
  static constexpr const char* kind = "tg_llm";
  std::shared_ptr<tg::nn::LlmModel> m;
};

// distributed: a communicator
#include "tensor/comm.h"
struct tg_comm {
  static constexpr const char* kind = "tg_comm";
  std::shared_ptr<tg::Communicator> c;
};
