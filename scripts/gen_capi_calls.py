#!/usr/bin/env python3
"""Generate the C API fuzzer's call table (tests/test_fuzz_capi.cpp) from include/tinygrad.h.

Every `TG_API` prototype in the header becomes one table row: the function's name, whether it realizes (compiles and
runs kernels, so the fuzzer gives it a small share of the calls), and a thunk `void call(FuzzCtx&)` that
  1. builds each argument from the fuzz context by the parameter's C type and name (a pointer followed by a size_t
     count such as `shape, ndim` or `pads, npairs` is drawn as one array-and-count pair, so the array is as long as
     the count says, or the count is huge and the pointer NULL/short and the library must refuse from the count alone),
  2. calls the function and hands the result to the context's checker for its return type.
So a function added to the header later is fuzzed without a new test.

Coverage can't silently drop: a prototype this script can't parse, a parameter type with no generator, an unnamed
parameter or a return type with no checker stops the build with a non-zero exit and a message naming the function.

usage: gen_capi_calls.py include/tinygrad.h out.inc
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_manifest import Header  # noqa: E402

PROG = "gen_capi_calls.py"

# parameter C type -> context generator (called with the parameter's name)
SCALARS = {
    "int64_t": "f.i64",
    "uint64_t": "f.u64",
    "tg_tensor**": "f.out_tensors",
    "int": "f.int32",
    "size_t": "f.size",
    "double": "f.f64",
    "tg_dtype": "f.dtype",
    "tg_binop": "f.binop",
    "tg_reduce": "f.reduce_op",
    "tg_status": "f.status",
    "const char*": "f.str",
    "tg_tensor*": "f.tensor",
    "const tg_tensor*": "f.tensor",
    "tg_expr*": "f.expr",
    "const tg_expr*": "f.expr",
    "tg_uop*": "f.uop",
    "const tg_uop*": "f.uop",
    "int64_t*": "f.out_i64",
    "double*": "f.out_f64",
    "int*": "f.out_int",
    "const int64_t*": "f.in_i64",
    "tg_dtype*": "f.out_dtype",
    "tg_counters*": "f.counters",
    "const void*": "f.in_ptr",
    "void*": "f.out_ptr",
    "tg_jit_fn": "f.jit_fn",
    "tg_jit*": "f.jit",
    "const tg_jit*": "f.jit",
    "tg_plan*": "f.plan",
    "const tg_plan*": "f.plan",
    "tg_kernel_info*": "f.kernel_info",
    "tg_state*": "f.state",
    "const tg_state*": "f.state",
    "tg_optimizer*": "f.optimizer",
    "const tg_optimizer*": "f.optimizer",
    "tg_optimizer_kind": "f.optim_kind",
    "tg_module*": "f.module",
    "const tg_module*": "f.module",
    "tg_optimizer_options*": "f.optim_options_out",
    "const tg_optimizer_options*": "f.optim_options",
    "const tg_export_options*": "f.export_options",
    "tg_onnx_model*": "f.onnx_model",
    "const tg_onnx_model*": "f.onnx_model",
    "const tg_onnx_options*": "f.onnx_options",
    "tg_llm*": "f.llm",
    "const tg_llm*": "f.llm",
    "tg_comm*": "f.comm",
    "const tg_comm*": "f.comm",
    "const tg_llm_options*": "f.llm_options",
    "tg_llm_sampling*": "f.llm_sampling_out",
    "const tg_llm_sampling*": "f.llm_sampling",
    "tg_llm_token_fn": "f.llm_token_fn",
    # NULL or a DLManagedTensor the fuzzer built (the library takes it on success; the context frees it after a failure)
    "struct DLManagedTensor*": "f.dlpack",
}
# (C type, name) -> context generator, where the name says more than the type (a callback's userdata outlives the call)
NAMED = {("void*", "userdata"): "f.userdata",
         ("int", "port"): "f.port", ("const char*", "route"): "f.route",
         # module sizes: small, or values refused at once (a fuzzed Linear(2^31, 64) would fill gigabytes with random numbers)
         **{("int64_t", n): "f.module_size" for n in ("in_features", "out_features", "in_channels", "out_channels", "kernel_h", "kernel_w",
                                                       "kernel_size", "num_features", "dim", "num_groups", "num_channels", "vocab_size",
                                                       "embed_size", "input_size", "hidden_size")}}
# in a function that takes ownership of its handle (…_release), the handle is handed over instead of lent
OWNED = {"tg_tensor*": "f.owned_tensor", "tg_expr*": "f.owned_expr", "tg_uop*": "f.owned_uop", "tg_jit*": "f.owned_jit", "tg_plan*": "f.owned_plan", "tg_state*": "f.owned_state",
         "tg_optimizer*": "f.owned_optimizer", "tg_module*": "f.owned_module", "tg_onnx_model*": "f.owned_onnx_model",
         "tg_llm*": "f.owned_llm", "tg_comm*": "f.owned_comm"}
# pointer parameter(s) followed by their size_t count -> context generator (called with all the names)
GROUPS = {
    ("const int64_t*",): "f.i64_array",
    ("int64_t*",): "f.out_i64_array",
    ("const void*",): "f.in_bytes",
    ("void*",): "f.out_bytes",
    ("char*",): "f.out_chars",
    ("tg_tensor* const*",): "f.tensor_array",
    ("const char* const*", "const int64_t*"): "f.bindings",
    ("const char* const*", "tg_tensor* const*"): "f.named_tensors",
    ("const char* const*",): "f.device_names",
    ("const int64_t*", "const int64_t*"): "f.i64_arrays2",
    ("const tg_index*",): "f.index_array",
    ("tg_tensor**",): "f.out_tensor_array",
    ("tg_expr**",): "f.out_expr_array",
    ("tg_uop**",): "f.out_uop_array",
    ("tg_module* const*",): "f.module_array",
}
# a size_t right after a pointer is that pointer's count when its name says so
COUNT_NAME = re.compile(r"^(n|n[a-z_]+|size|capacity|count|len|length)$")
# return C type -> context checker
RETURNS = {
    "tg_tensor*": "f.ret_tensor",
    "tg_expr*": "f.ret_expr",
    "tg_uop*": "f.ret_uop",
    "uint64_t": "f.ret_u64",
    "tg_jit*": "f.ret_jit",
    "tg_plan*": "f.ret_plan",
    "tg_state*": "f.ret_state",
    "tg_optimizer*": "f.ret_optimizer",
    "tg_module*": "f.ret_module",
    "tg_onnx_model*": "f.ret_onnx_model",
    "tg_llm*": "f.ret_llm",
    "tg_comm*": "f.ret_comm",
    "struct DLManagedTensor*": "f.ret_dlpack",  # checked, read through and freed with its deleter
    "tg_status": "f.ret_status",
    "const char*": "f.ret_cstr",
    "int64_t": "f.ret_i64",
    "int": "f.ret_int",
    "size_t": "f.ret_size",
    "void": None,
}
# functions that compile and run kernels: a small share of the calls (each kernel costs 50-250 ms on a cold cache)
REALIZING = re.compile(r"(^|_)(realize|realize_many|to_data|item|numpy|nonzero|masked_select|jit_call|plan_create|plan_run|state_save|nn_[a-z0-9_]+|module_load_state|dataset_mnist|tensor_from_idx|optim_(?:sgd|adam|adamw|lars|lamb|muon)|optimizer_step|optimizer_set_lr|to_dlpack)$")


def die(msg):
    sys.stderr.write(f"{PROG}: error: {msg}\n")
    sys.exit(1)


def parse(path):
  """(result type, name, [(type, name)]) of every TG_API prototype, read by the API manifest's header reader (which stops
  with a message naming any declaration it can't read)."""
  fns = [(ret, name, params) for ret, name, params, _, _ in Header(path).fns]
  if not fns:
    die(f"no TG_API prototypes found in {path}")
  names = [f[1] for f in fns]
  dups = {n for n in names if names.count(n) > 1}
  if dups:
    die(f"duplicate prototypes: {', '.join(sorted(dups))}")
  return fns


def thunk(ret, name, params):
    lines, args, i = [], [], 0
    owns = name.endswith("_release")
    while i < len(params):
        t, n = params[i]
        # the longest run of pointer parameters ending in a size_t count that forms a known group
        group = None
        for k in (2, 1):
            ts = tuple(p[0] for p in params[i:i + k])
            if len(ts) == k and ts in GROUPS and i + k < len(params):
                ct, cn = params[i + k]
                if ct == "size_t" and COUNT_NAME.match(cn):
                    group = (k, GROUPS[ts])
                    break
        v = f"a{i}"
        if group:
            k, gen = group
            names = [p[1] for p in params[i:i + k + 1]]
            per = 2 if re.search(r"pair", names[-1]) else 1  # pads/bounds: `npairs` (before, after) pairs
            extra = f", {per}" if gen == "f.i64_array" else ""
            lines.append(f"auto {v} = {gen}({', '.join(chr(34) + x + chr(34) for x in names)}{extra});")
            if k == 1:
                args += [f"{v}.p", f"{v}.n"]
            else:
                args += [f"{v}.p0", f"{v}.p1", f"{v}.n"]
            i += k + 1
            continue
        gen = OWNED.get(t) if owns else None
        gen = gen or NAMED.get((t, n)) or SCALARS.get(t)
        if not gen:
            die(f"no generator for parameter '{t} {n}' of {name}: add one to {PROG} and the fuzz context in "
                f"tests/test_fuzz_capi.cpp (or name its count parameter so it pairs with its pointer)")
        lines.append(f"auto {v} = {gen}(\"{n}\");")
        args.append(v)
        i += 1
    if ret not in RETURNS:
        die(f"no result checker for return type '{ret}' of {name}: add one to {PROG} and tests/test_fuzz_capi.cpp")
    call = f"{name}({', '.join(args)})"
    check = RETURNS[ret]
    lines.append("f.begin_call();")
    lines.append(f"{check}({call});" if check else f"{call};")
    lines.append("f.end_call();")
    body = "\n       ".join(lines)
    realizing = "true" if REALIZING.search(name) else "false"
    return f"    {{\"{name}\", {realizing}, [](FuzzCtx& f) {{\n       {body}\n     }}}},"


def main():
    if len(sys.argv) != 3:
        die("usage: gen_capi_calls.py include/tinygrad.h out.inc")
    header, out = sys.argv[1], sys.argv[2]
    fns = parse(header)
    rows = [thunk(*fn) for fn in fns]
    text = (f"// Generated by scripts/{PROG} from include/tinygrad.h ({len(fns)} functions). Do not edit.\n"
            "// Included by tests/test_fuzz_capi.cpp, which defines FuzzCtx and FuzzFn.\n"
            f"static const FuzzFn kCApiCalls[{len(fns)}] = {{\n" + "\n".join(rows) + "\n};\n")
    try:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        die(f"cannot write {out}: {e}")


if __name__ == "__main__":
    main()
