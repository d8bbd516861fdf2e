// The tensor-level graph's leaves and bindings, shared by tensors, the scheduler and the engine: BUFFER nodes that hold
// device memory, the identity of a pending assign, and Variable bindings.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
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
  // the identity of this assign's part on device d of a multi tensor: the same node at every realize that lowers it
  UOpRef part(size_t d) const;

 private:
  mutable std::mutex mu_;
  mutable std::vector<UOpRef> parts_;
};
const AssignArg* assign_arg(const UOp* u);  // null unless u is an ASSIGN made by Tensor::assign
// A symbolic dim's size is a Variable (DEFINE_VAR) or an expression of Variables that grows with each of them (i+2 from a
// cat, i+j). Its carrier in a graph is BIND(size, value, inner...): for an expression the inner BINDs give its Variables
// their values, so a graph that holds only the carrier (a realized output's view) still binds them.
UOpRef bound_var(const UOp* size, int64_t value, UOps inner = {});
std::string sym_name(const UOp* size);                 // "i", "(i+2)"
std::vector<const UOp*> sym_vars(const UOp* size);     // its Variables, in graph order
// the size with each Variable at val(var); -1 where val gives -1 for one of them
int64_t sym_eval(const UOp* size, const std::function<int64_t(const UOp* var)>& val);
int64_t sym_largest(const UOp* size);  // at its Variables' largest values: the extent a buffer is laid out for
bool sym_grows(const UOp* size);        // largest at its Variables' largest values, so that layout holds every binding
// the Variables' values bound anywhere in a graph (BIND(var, value) nodes), by DEFINE_VAR
std::unordered_map<const UOp*, int64_t> graph_binds(const UOp* root);
// a movement op's arg with each symbolic dim's size from `size` (normalization: its largest; rebinding: a value)
std::vector<int64_t> sym_arg(const UOp* u, const std::function<int64_t(const UOp* size, int64_t now)>& size);

}  // namespace tg
