// Spec: the verifier for well-formed UOps. check_node runs on every UOp::make when SPEC>=1; verify walks a graph.
#pragma once
#include "uop/uop.h"

namespace tg::spec {
// Throws tg::Error(TG_ERROR_SPEC) naming the op and what is wrong.
void check_node(Ops op, DType dtype, const UOps& src, const Arg& arg);
void verify(const UOpRef& root);
// the reduces a SCATTER (Tensor::put) combines its values with
bool scatter_reduce_known(const std::string& r);
}  // namespace tg::spec
