// The tensor-level graph's leaves and bindings, shared by tensors, the scheduler and the engine: BUFFER nodes that hold
// device memory, the identity of a pending assign, and Variable bindings.
#pragma once
#include <atomic>
#include <functional>
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

// The identity of one pending assign (an ASSIGN's third source is UNIQUE of it), done once its kernel has run: from then
// on the ASSIGN stands for its target's buffer.
struct AssignArg : ArgExt {
  mutable std::atomic<bool> done{false};
  std::string str() const override { return done ? "assign(done)" : "assign"; }
};
const AssignArg* assign_arg(const UOp* u);  // null unless u is an ASSIGN made by Tensor::assign
UOpRef bound_var(const UOp* var, int64_t value);  // BIND(var, value)
// a movement op's arg with each Variable dim's size from `size` (normalization: the Variable's max; rebinding: a value)
std::vector<int64_t> sym_arg(const UOp* u, const std::function<int64_t(const UOp* var, int64_t now)>& size);

}  // namespace tg
