"""Julia: the raw module bindings/julia/src/LibTinygrad.jl (every constant, enum, struct, handle, callback and function
of the manifest, each function a ccall wrapper with its C types) and bindings/julia/src/ops.jl, the checked methods that
bindings/julia/src/Tinygrad.jl includes: one per function whose parameters a generic rule covers (handles, scalars,
strings), returning the new handle type, nothing for a status, or the value, and throwing TinygradError on failure.

Type mapping (C -> ccall): handles and void* -> Ptr{Cvoid}; a non-NULL `const char*` argument -> Cstring (refuses an
embedded NUL), a nullable one -> Ptr{UInt8} (so C_NULL can be passed); string results -> Ptr{UInt8} (NULL is an error, so
the caller must look before unsafe_string); enums -> Int32; int -> Cint; size_t -> Csize_t; structs -> isbits structs of
the same layout, passed as Ptr{T} (a Ref(x) converts)."""
from bindgen.common import HEADER_NOTE, wrap

RAW = "bindings/julia/src/LibTinygrad.jl"
OPS = "bindings/julia/src/ops.jl"
SCALAR = {"int": "Cint", "int64_t": "Int64", "uint64_t": "UInt64", "size_t": "Csize_t", "double": "Cdouble", "char": "UInt8",
          "void": "Cvoid", "int32_t": "Int32", "uint32_t": "UInt32", "uint8_t": "UInt8", "uint16_t": "UInt16"}
KEYWORDS = {"baremodule", "begin", "break", "catch", "const", "continue", "do", "else", "elseif", "end", "export", "false",
            "finally", "for", "function", "global", "if", "import", "let", "local", "macro", "module", "quote", "return",
            "struct", "true", "try", "using", "while", "where", "in", "isa", "abstract", "mutable", "primitive", "type", "outer"}
# the Julia types of the handles (Tinygrad.jl defines them); Module and Expr would shadow Base's
JULIA_TYPE = {"tg_tensor": "Tensor", "tg_expr": "SymExpr", "tg_module": "Layer", "tg_optimizer": "Optimizer",
              "tg_state": "State", "tg_plan": "Plan", "tg_jit": "Jit", "tg_uop": "Uop",
              "tg_onnx_model": "OnnxModel", "tg_llm": "Llm", "tg_comm": "Comm"}
# tensor functions that are Base operators or functions of the same meaning in Julia (div is Julia's integer division)
BASE_AS = {"add": ":+", "sub": ":-", "mul": ":*", "div": ":/", "pow": ":^", "add_scalar": ":+", "sub_scalar": ":-",
           "mul_scalar": ":*", "div_scalar": ":/", "pow_scalar": ":^", "neg": ":-", "idiv": "div", "maximum": "max",
           "minimum": "min", "fmod": "rem", "bitwise_and": ":&", "bitwise_or": ":|", "bitwise_xor": "xor",
           "bitwise_not": ":~", "lshift": ":<<", "rshift": ":>>"}
BASE_SAME = {"exp", "exp2", "log", "log2", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
             "asinh", "acosh", "atanh", "abs", "sign", "trunc", "floor", "ceil", "round", "isnan", "isinf", "isfinite",
             "copysign", "clamp", "mod", "transpose", "argmax", "argmin", "cumsum", "cumprod"}


def fn_doc(f):
  return f["doc"] or f.get("group_doc") or ""


def jl_doc(text):
  return text.replace("\\", "\\\\").replace("$", "\\$").replace('"""', '\\"\\"\\"')


def ident(s): return s + "_" if s in KEYWORDS else s


def c_type(t, structs, nullable=False, result=False):
  """A C type as the type ccall declares."""
  readonly = t.startswith("const ")
  t = t.replace("struct ", "").replace("const ", "").replace(" const", "").strip()
  stars = t.count("*")
  base = t.replace("*", "").strip()
  if base == "char" and stars == 1: return "Cstring" if readonly and not (nullable or result) else "Ptr{UInt8}"
  if base == "char" and stars == 2: return "Ptr{Ptr{UInt8}}"
  if base in JULIA_TYPE or base == "DLManagedTensor": r = "Ptr{Cvoid}"; stars -= 1
  elif base.startswith("tg_") and base in structs: r = base
  elif base.startswith("tg_") and base.endswith("_fn"): r = "Ptr{Cvoid}"  # a @cfunction pointer
  elif base.startswith("tg_"): r = "Int32"  # enums are 32-bit (their MAX_ENUM forces it)
  elif base in SCALAR: r = SCALAR[base]
  else: raise SystemExit(f"bindgen/julia.py: no Julia type for C type '{t}'")
  for _ in range(stars): r = f"Ptr{{{r}}}"
  return r


def raw(m):
  structs = {s["name"] for s in m["structs"]}
  out = [f"# {HEADER_NOTE}", "# The C API of libtinygrad as ccall wrappers, one per function, with the header's types (see",
         "# scripts/bindgen/julia.py for the mapping). Nothing here checks errors: Tinygrad.jl does.", "module LibTinygrad", "",
         '"The library ccall opens: \\$TINYGRAD_LIB (a path), else libtinygrad on the loader\'s search path."',
         'const libtinygrad = get(ENV, "TINYGRAD_LIB", "libtinygrad")', "", "# ---- constants"]
  for c in m["constants"]:
    v = '"' + jl_doc(c["value"]) + '"' if c["type"] == "string" else str(c["value"])
    out.append(f"const {c['name']} = {v}")
  for e in m["enums"]:
    out += ["", f"# ---- enum {e['name']}" + (f": {e['doc']}" if e["doc"] else "")[:110], f"const {e['name']} = Int32"]
    for v in e["values"]:
      out.append(f"const {v['name']} = Int32({v['value']})" + (f"  # {v['doc']}" if v["doc"] else ""))
  out += ["", "# ---- handles: opaque pointers (Ptr{Cvoid}), each a new reference to release with its *_release"]
  for h in m["handles"]:
    out.append(f"# {h['name']}: {h['doc']}; release: {h['release']}" + (f", retain: {h['retain']}" if h["retain"] else ""))
  out += ["", "# ---- callbacks: pass @cfunction pointers"]
  for cb in m["callbacks"]:
    args = ", ".join(c_type(p["type"], structs) for p in cb["params"])
    out += [f'"""{jl_doc(cb["doc"])}', "", f"As a @cfunction: `@cfunction(f, {c_type(cb['returns'], structs)}, ({args},))`", '"""',
            f"const {cb['name']} = Ptr{{Cvoid}}"]
  out += ["", "# ---- externs: structs the header names only (passed as Ptr{Cvoid})"]
  out += [f"# {x['name']}: {x['doc'][:100]}" for x in m["externs"]]
  out += ["", "# ---- structs (isbits, laid out as in C; pass a Ref(x) where the C API takes a pointer)"]
  for s in m["structs"]:
    out += [f'"""{jl_doc(s["doc"])}"""' if s["doc"] else "", f"struct {s['name']}"]
    for fl in s["fields"]:
      t = c_type(fl["type"], structs, result=True)
      out.append(f"  {ident(fl['name'])}::" + (f"NTuple{{{fl['count']}, {t}}}" if fl.get("count") else t))
    out += ["end", ""]
  out.append("# ---- functions")
  for f in m["functions"]:
    params = [ident(p["name"]) for p in f["params"]]
    types = [c_type(p["type"], structs, nullable=p.get("nullable", False)) for p in f["params"]]
    ret = c_type(f["returns"]["type"], structs, result=True)
    d = fn_doc(f)
    if d: out += ['"""', *[jl_doc(l) for l in wrap(d)], '"""']
    tys = "(" + ", ".join(types) + ("," if len(types) == 1 else "") + ")"
    out.append(f"{f['name']}({', '.join(params)}) = ccall((:{f['name']}, libtinygrad), {ret}, {tys}" +
               "".join(f", {p}" for p in params) + ")")
  out += ["", "# every name above, so `using .LibTinygrad` sees them"]
  names = [c["name"] for c in m["constants"]] + [e["name"] for e in m["enums"]] + \
          [v["name"] for e in m["enums"] for v in e["values"]] + [c["name"] for c in m["callbacks"]] + \
          [s["name"] for s in m["structs"]] + [f["name"] for f in m["functions"]] + ["libtinygrad"]
  line = "export"
  for n in names:
    if len(line) + len(n) + 2 > 118: out.append(line.rstrip(",")); line = "export"
    line += f" {n},"
  out += [line.rstrip(","), "", "end # module", ""]
  return "\n".join(l for l in out if l is not None)


def rule(f):
  """The checked method of `f` by the generic rule, or None: handle/scalar/string parameters only, and a new handle,
  a status or an error-checked value as the result. Names are the function's without tg_ (without tg_tensor_ for
  tensors), or Base's operator or function of the same meaning; a Julia keyword (where) gets a trailing _."""
  r = f["returns"]
  if r["kind"] == "handle" and (r["ownership"] != "new_reference" or r["handle"] not in JULIA_TYPE): return None
  if r["kind"] not in ("handle", "status", "value"): return None
  if r["kind"] == "value" and r["errors"]["kind"] != "value": return None
  if r["kind"] == "status" and r["errors"]["kind"] != "status": return None  # tg_last_error reports, it doesn't fail
  if f["name"].endswith("_retain"): return None  # a Julia copy of a handle is the same object: nothing to retain
  args, call = [], []
  for p in f["params"]:
    n = ident(p["name"])
    if p["kind"] == "handle" and p["ownership"] == "borrowed":
      t = JULIA_TYPE[p["handle"]]
      args.append(f"{n}::Union{{{t}, Nothing}}" if p.get("nullable") else f"{n}::{t}")
      call.append(f"something({n}, C_NULL)" if p.get("nullable") else n)
    elif p["kind"] == "value":
      args.append(f"{n}::" + ("Bool" if p.get("flag") else "Real" if p["value"] == "float64" else "Integer"))
      call.append(n)
    elif p["kind"] == "string":
      args.append(f"{n}::Union{{AbstractString, Nothing}}" + (" = nothing" if n == "device" else "") if p.get("nullable")
                  else f"{n}::AbstractString")
      call.append(f"cstr({n})")
    else: return None
  if any("=" in a for a in args[:-1]): return None  # a default only where it can be (a trailing device)
  stem = f["name"][3:]
  if f["name"].startswith("tg_tensor_") and f["params"] and f["params"][0].get("handle") == "tg_tensor": stem = stem[7:]
  elif f["name"].startswith("tg_tensor_"): stem = stem[7:]  # creation: eye, arange, randperm, ...
  name = f"Base.{BASE_AS[stem]}" if stem in BASE_AS else f"Base.{stem}" if stem in BASE_SAME else ident(stem)
  body = f"L.{f['name']}({', '.join(call)})"
  if r["kind"] == "handle": body = f"adopt({JULIA_TYPE[r['handle']]}, {body})"
  elif r["kind"] == "status": body = f"check({body})"
  else:
    e = r["errors"]
    body = f"check_value(() -> {body}, {e['value']}, {'true' if e['check_last_error'] else 'false'})"
  return name, f"{name}({', '.join(args)}) = {body}"


def covered(m):
  """The functions ops.jl has a checked method for."""
  return [f["name"] for f in m["functions"] if rule(f)]


def ops(m):
  out = [f"# {HEADER_NOTE}", "# Checked methods over LibTinygrad (included by Tinygrad.jl): one per function whose parameters are handles,",
         "# scalars and strings. Failures throw TinygradError; new handles come back as Tensor, Layer, ... with finalizers.", ""]
  exported = []
  for f in m["functions"]:
    g = rule(f)
    if not g: continue
    name, line = g
    out.append(f"# {f['name']}")
    out.append(line)
    if not name.startswith("Base."): exported.append(name)
  out += ["", f"# {len(covered(m))} methods generated from {len(m['functions'])} functions"]
  line = "export"
  for n in sorted(set(exported)):
    if len(line) + len(n) + 2 > 118: out.append(line.rstrip(",")); line = "export"
    line += f" {n},"
  out += [line.rstrip(","), ""]
  return "\n".join(out)


def generate(m):
  return {RAW: raw(m), OPS: ops(m)}
