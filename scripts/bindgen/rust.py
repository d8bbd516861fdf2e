"""Rust: the raw declarations of the -sys crate (bindings/rust/tinygrad-sys/src/lib.rs) and the generated part of the
safe crate (bindings/rust/tinygrad/src/api.rs): handle types with Drop/Clone, enums, and a method or function for every
function whose parameter kinds a generic rule covers. The rest is hand-written in the safe crate (HANDWRITTEN says where
and why), so every one of the manifest's functions is either generated or accounted for."""
from bindgen.common import HEADER_NOTE, pascal, wrap

SYS = "bindings/rust/tinygrad-sys/src/lib.rs"
SAFE = "bindings/rust/tinygrad/src/api.rs"
SCALAR = {"int": "c_int", "int64_t": "i64", "uint64_t": "u64", "size_t": "usize", "double": "f64", "char": "c_char",
          "void": "c_void", "int32_t": "i32", "uint32_t": "u32", "uint8_t": "u8", "uint16_t": "u16"}
KEYWORDS = {"as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl", "in",
            "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super",
            "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract", "become", "box",
            "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen"}
TYPE_NAMES = {"tg_dtype": "DType", "tg_binop": "BinOp"}  # where CamelCase of the stem reads badly
OWNER_PREFIX = {"tg_nn_": "tg_module", "tg_optim_": "tg_optimizer", "tg_onnx_": "tg_onnx_model"}  # constructors named by their family, not their type
DEBUG_BY_HAND = {"tg_tensor", "tg_expr"}  # their Debug shows contents (shape, text); the others show the pointer
# Functions the safe crate writes by hand, with where: their shapes need a count query, a callback, borrowed struct
# fields or typed element data, which no generic rule covers well.
HANDWRITTEN = {
  "tg_last_error": "Error::last", "tg_last_error_message": "Error::last", "tg_clear_error": "Error (check_last_error)",
  "tg_tensor_from_data": "Tensor::from_slice / from_bytes", "tg_tensor_to_data": "Tensor::to_vec / to_bytes",
  "tg_tensor_shape": "Tensor::shape", "tg_tensor_requires_grad": "Tensor::requires_grad",
  "tg_tensor_chunk": "Tensor::chunk", "tg_tensor_getitem": "Tensor::getitem", "tg_tensor_setitem": "Tensor::setitem",
  "tg_module_parameters": "Module::parameters", "tg_optimizer_schedule_step": "Optimizer::schedule_step",
  "tg_optimizer_params": "Optimizer::params", "tg_optimizer_state": "Optimizer::state", "tg_expr_render": "Display for Expr", "tg_state_info": "State::info",
  "tg_plan_kernel": "Plan::kernel", "tg_jit_create": "Jit::new", "tg_jit_call": "Jit::call",
  "tg_jit_call_vars": "raw only (tinygrad_sys): Jit::call with Variable values is not written yet",
  "tg_tensor_from_dlpack": "raw only (tinygrad_sys): DLPack structs are the caller's",
  "tg_tensor_to_dlpack": "raw only (tinygrad_sys): DLPack structs are the caller's",
  "tg_tensor_shape_vars": "raw only (tinygrad_sys): one optional Variable slot per dim",
  "tg_tensor_shard_bounds": "raw only (tinygrad_sys): two slots per device (tg_tensor_device_count)",
  "tg_tensor_clone": "raw only (tinygrad_sys): a method `clone` would shadow Clone (another reference to the tensor)",
  "tg_jit_export": "raw only (tinygrad_sys): the options struct is the caller's (docs/export.md)",
  **{f: "raw only (tinygrad_sys): text into the caller's buffer (a safe Uop type is not written yet)"
     for f in ("tg_uop_dtype", "tg_uop_arg", "tg_uop_print", "tg_uop_shape", "tg_viz_json")},
  **{f: "raw only (tinygrad_sys): new node references written into the caller's array"
     for f in ("tg_uop_srcs", "tg_uop_toposort", "tg_tensor_schedule")},
  **{f"tg_llm_{n}": f"Llm::{n}" for n in ("load", "eval", "reset", "position", "context", "vocab_size", "config", "metadata", "tokenize",
                                            "detokenize", "token_piece", "bos", "eos", "is_eog", "sample", "generate")},
  "tg_llm_retain": "Clone for Llm", "tg_llm_release": "Drop for Llm", "tg_llm_sampling_default": "sampling_defaults",
  **{f: "raw only (tinygrad_sys): a safe Comm type is not written yet"
     for f in ("tg_comm_world", "tg_comm_split", "tg_comm_retain", "tg_comm_release", "tg_comm_rank", "tg_comm_size", "tg_comm_allreduce",
               "tg_comm_allgather", "tg_comm_broadcast", "tg_comm_send", "tg_comm_recv", "tg_comm_average_gradients", "tg_comm_broadcast_tensors")},
  **{f: "raw only (tinygrad_sys): a safe ONNX Model type is not written yet"
     for f in ("tg_onnx_load", "tg_onnx_load_buffer", "tg_onnx_input_info", "tg_onnx_output_info", "tg_onnx_run", "tg_onnx_run_named",
               "tg_onnx_run_values", "tg_onnx_load_value")},
}


def ident(s): return s + "_" if s in KEYWORDS else s
def type_name(c): return TYPE_NAMES.get(c, pascal(c[3:] if c.startswith("tg_") else c))
def doc(lines, indent=""): return [f"{indent}///{' ' if l else ''}{l}" for l in lines]


def fn_doc(f):
  """A function's own comment, else the one its declaration group shares (marked so, as it may name a neighbour)."""
  return f["doc"] or (f"Of its group: {f['group_doc']}" if f.get("group_doc") else "")


def raw_type(t, ty):
  """A C type as its Rust FFI type: `tg_tensor* const*` -> `*const *mut tg_tensor`."""
  t = t.replace("struct ", "").strip()
  parts = t.split("*")
  base = parts[0].strip()
  pointee_const = base.startswith("const ") or base.endswith(" const")
  base = base.replace("const", "").strip()
  r = SCALAR.get(base) or (base if base in ty["all"] else None)
  if r is None: raise SystemExit(f"bindgen/rust.py: no Rust type for C type '{t}'")
  for qual in parts[1:]:  # each '*' points at what is left of it; a `const` after it qualifies the next level's pointee
    r = f"*{'const' if pointee_const else 'mut'} {r}"
    pointee_const = "const" in qual
  return r


def rust_lit(c):
  if c["type"] == "string": return "&str", '"' + c["value"].replace("\\", "\\\\").replace('"', '\\"') + '"'
  return "i32", str(c["value"])


def variants(e):
  """(Rust variant, C name, value) of an enum's real values: the *_INVALID sentinel and common prefix dropped."""
  vals = [v for v in e["values"] if not (v["value"] == -1 and v["name"].endswith("INVALID"))]
  words = [v["name"].split("_") for v in vals]
  n = 0
  while all(len(w) > n + 1 and w[n] == words[0][n] for w in words): n += 1
  return [(pascal("_".join(w[n:])), v["name"], v["value"], v["doc"]) for w, v in zip(words, vals)]


def gen_sys(m, ty):
  o = [f"// {HEADER_NOTE}", "//! Raw declarations of libtinygrad's C API (include/tinygrad.h), one for one. The safe API is the",
       "//! `tinygrad` crate; the rules of ownership, errors and threads are the header's.",
       "#![allow(non_camel_case_types, non_upper_case_globals, clippy::missing_safety_doc)]", "#![no_std]", "",
       "use core::ffi::{c_char, c_int, c_void};", "use core::marker::{PhantomData, PhantomPinned};", ""]
  for c in m["constants"]:
    t, v = rust_lit(c)
    o.append(f"pub const {c['name']}: {t} = {v};")
  o.append(f'pub const TG_SONAME: &str = "{m["soname"]}";')
  for e in m["enums"]:
    o += [""] + doc(wrap(e["doc"])) + ["/// A C enum: 32 bits, and any value may cross the ABI, so it is an integer here.",
                                        f"pub type {e['name']} = i32;"]
    for v in e["values"]: o += doc(wrap(v["doc"])) + [f"pub const {v['name']}: {e['name']} = {v['value']};"]
  for h in [x["name"] for x in m["handles"]] + [x["name"] for x in m["externs"]]:
    o += ["", f"/// Opaque `{h}`: only ever behind a pointer (zero-sized, !Send, !Sync, !Unpin, as the nomicon suggests).",
          "#[repr(C)]", f"pub struct {h} {{", "  _data: [u8; 0],", "  _marker: PhantomData<(*mut u8, PhantomPinned)>,", "}"]
  for s in m["structs"]:
    o += [""] + doc(wrap(s["doc"])) + ["#[repr(C)]", "#[derive(Clone, Copy, Debug, PartialEq)]", f"pub struct {s['name']} {{"]
    for f in s["fields"]:
      t = raw_type(f["type"], ty)
      if "count" in f: t = f"[{t}; {f['count']}]"
      o.append(f"  pub {ident(f['name'])}: {t},")
    o += ["}", f"impl Default for {s['name']} {{"]
    o.append("  /// Zeroed" + (", with struct_size set to this header's size." if s["sized"] else "."))
    o += ["  fn default() -> Self {", "    // SAFETY: every field is an integer, a float or a raw pointer, for which all-zero bytes are valid.",
          f"    let {'mut ' if s['sized'] else ''}s: Self = unsafe {{ core::mem::zeroed() }};"]
    if s["sized"]: o.append("    s.struct_size = core::mem::size_of::<Self>();")
    o += ["    s", "  }", "}"]
  for cb in m["callbacks"]:
    args = ", ".join(f"{ident(p['name'])}: {raw_type(p['type'], ty)}" for p in cb["params"])
    o += [""] + doc(wrap(cb["doc"])) + ["#[rustfmt::skip]", f"pub type {cb['name']} = Option<unsafe extern \"C\" fn({args}) -> {raw_type(cb['returns'], ty)}>;"]
  o += ["", "#[rustfmt::skip] // one declaration a line, as generated", 'unsafe extern "C" {']
  section = None
  for f in m["functions"]:
    if f["section"] != section:
      section = f["section"]
      o += ["", f"  // ---- {section}"]
    args = ", ".join(f"{ident(p['name'])}: {raw_type(p['type'], ty)}" for p in f["params"])
    ret = "" if f["returns"]["type"] == "void" else f" -> {raw_type(f['returns']['type'], ty)}"
    o += doc(wrap(fn_doc(f), 106), "  ") + [f"  pub fn {f['name']}({args}){ret};"]
  o += ["}", ""]
  return "\n".join(o)


class Fn:
  """One safe wrapper being built: its Rust parameters, the statements before the call, the call's arguments, the
  values it returns (type, expression) and the handle slots to release if the call fails."""

  def __init__(self): self.params, self.pre, self.args, self.outs, self.slots = [], [], [], [], []


def owner_of(f, ty):
  """(impl target, method name, takes self) for a function, or (None, free function name, False)."""
  name, ps = f["name"], f["params"]
  for prefix, h in OWNER_PREFIX.items():
    if name.startswith(prefix): return type_name(h), ident(name[len(prefix):]), False
  for h in sorted(ty["handles"] | ty["enums"], key=len, reverse=True):
    if name.startswith(h + "_"):
      rest = ident(name[len(h) + 1:])
      first = ps[0] if ps else {}
      is_self = (first.get("kind") == "handle" and first.get("handle") == h and first.get("ownership") == "borrowed"
                 and not first.get("nullable")) or (first.get("kind") == "value" and first.get("enum") == h)
      return type_name(h), rest, is_self
  return None, ident(name[3:]), False


def length_users(f):
  return {p["name"]: p for p in f["params"] if p["kind"] == "length"}


def safe_fn(f, ty, structs):
  """A generated wrapper's code (lines), or a reason it is not generated."""
  if f["name"] in HANDWRITTEN: return None
  r = f["returns"]
  if r["kind"] == "extern": return None
  target, mname, is_self = owner_of(f, ty)
  if mname.endswith(("retain", "release")) and target: return None  # Clone and Drop
  byname = {p["name"]: p for p in f["params"]}
  g = Fn()
  inputs = {"array_in", "handle_array", "string_array", "bytes_in", "struct_array_in"}
  for i, p in enumerate(f["params"]):
    k, n = p["kind"], ident(p["name"])
    if i == 0 and is_self:
      g.args.append("self.as_ptr()" if k == "handle" else "self as i32")
      continue
    if k == "handle":
      w = type_name(p["handle"])
      if p.get("ownership") != "borrowed": return None
      if p.get("nullable"):
        g.params.append(f"{n}: Option<&{w}>")
        g.args.append(f"{n}.map_or(core::ptr::null_mut(), |h| h.as_ptr())")
      else:
        g.params.append(f"{n}: &{w}")
        g.args.append(f"{n}.as_ptr()")
    elif k == "value":
      if "enum" in p:
        g.params.append(f"{n}: {type_name(p['enum'])}")
        g.args.append(f"{n} as i32")
      elif p.get("flag"):  # an `int` the header calls a flag
        g.params.append(f"{n}: bool")
        g.args.append(f"{n} as c_int")
      else:
        g.params.append(f"{n}: {SCALAR[p['type']]}")
        g.args.append(n)
    elif k == "length":
      of = [byname[x] for x in p["of"]]
      ins = [q for q in of if q["kind"] in inputs]
      if not ins: return None  # only output arrays: their size is the caller's question (hand-written)
      lens = ", ".join(f"{ident(q['name'])}.len()" for q in ins)
      g.pre.append(f"let {n} = same_len(\"{', '.join(q['name'] for q in ins)}\", &[{lens}])?;" if len(ins) > 1
                   else f"let {n} = {ident(ins[0]['name'])}.len();")
      g.args.append(n)
    elif k == "string":
      if p.get("nullable"):
        g.params.append(f"{n}: Option<&str>")
        g.pre.append(f"let {n} = {n}.map(|s| cstring(s, \"{p['name']}\")).transpose()?;")
        g.args.append(f"{n}.as_ref().map_or(core::ptr::null(), |s| s.as_ptr())")
      else:
        g.params.append(f"{n}: &str")
        g.pre.append(f"let {n} = cstring({n}, \"{p['name']}\")?;")
        g.args.append(f"{n}.as_ptr()")
    elif k == "string_array":
      g.params.append(f"{n}: &[&str]")
      g.pre.append(f"let {n}_c = {n}.iter().map(|s| cstring(s, \"{p['name']}\")).collect::<Result<Vec<_>>>()?;")
      g.pre.append(f"let {n}_p: Vec<*const c_char> = {n}_c.iter().map(|s| s.as_ptr()).collect();")
      g.args.append(f"{n}_p.as_ptr()")
    elif k == "array_in":
      g.params.append(f"{n}: &[{SCALAR[p['elem']]}]")
      g.args.append(f"{n}.as_ptr()")
    elif k == "bytes_in":
      g.params.append(f"{n}: &[u8]")
      g.args.append(f"{n}.as_ptr().cast()")
    elif k == "handle_array":
      w = type_name(p["handle"])
      g.params.append(f"{n}: &[impl Borrow<{w}>]")
      g.pre.append(f"let {n} = raw_ptrs({n});")
      g.args.append(f"{n}.as_ptr()")
    elif k == "handle_out":
      w, ln = type_name(p["handle"]), p["length"]
      g.slots.append((w, n))
      g.args.append(f"{n}.as_mut_ptr()")
      if isinstance(ln, int):
        g.pre.append(f"let mut {n} = [core::ptr::null_mut(); {ln}];")
        names = [f"{n}{i}" for i in range(ln)]
        g.outs.append((w if ln == 1 else f"({', '.join([w] * ln)})",
                       f"take::<{w}>({n}[0])?" if ln == 1 else f"{{ let [{', '.join(names)}] = take_n::<{w}, {ln}>({n})?; ({', '.join(names)}) }}"))
        continue
      src = [q for q in byname[ln]["of"] if byname[q]["kind"] in inputs]
      if not src: return None
      g.pre.append(f"let mut {n} = vec![core::ptr::null_mut(); {ident(src[0])}.len()];")
      g.outs.append((f"Vec<{w}>", f"take_all::<{w}>({n})?"))
    elif k == "value_out":
      e = p["elem"]
      if e in ty["enums"]:
        g.pre.append(f"let mut {n}: i32 = 0;")
        g.outs.append((type_name(e), f"{type_name(e)}::from_raw({n}).ok_or_else(|| Error::new(Status::ErrorInternal, "
                                     f"format!(\"{f['name']}: unknown {e} {{{n}}}\")))?"))
      else:
        g.pre.append(f"let mut {n}: {SCALAR[e]} = Default::default();")
        g.outs.append((SCALAR[e], n))
      g.args.append(f"&mut {n}")
    elif k == "struct_in":
      st = type_name(p["struct"])
      if p["struct"] not in structs: return None
      if p.get("nullable"):
        g.params.append(f"{n}: Option<&{st}>")
        g.args.append(f"{n}.map_or(core::ptr::null(), |s| s as *const {st})")
      else:
        g.params.append(f"{n}: &{st}")
        g.args.append(n)
    elif k == "struct_out":
      if p["struct"] not in structs: return None
      st = type_name(p["struct"])
      g.pre.append(f"let mut {n} = {st}::default();")
      g.args.append(f"&mut {n}")
      g.outs.append((st, n))
    else:
      return None  # callbacks, userdata, byte and char outputs, struct arrays: hand-written
  call = f"unsafe {{ sys::{f['name']}({', '.join(g.args)}) }}"
  body = list(g.pre)
  e = r["errors"]
  fallible = e["kind"] != "none"
  if g.outs and not (r["kind"] == "status" and fallible): return None
  if r["kind"] == "handle":
    rt = type_name(r["handle"])
    body.append(f"unsafe {{ {rt}::from_raw(sys::{f['name']}({', '.join(g.args)})) }}")
  elif r["kind"] == "status" and fallible:
    if g.outs:
      body += [f"let status = {call};", "if status != sys::TG_OK {"]
      if g.slots:
        body += ["  let e = Error::last();"] + [f"  release::<{w}>(&{n});" for w, n in g.slots] + ["  return Err(e);", "}"]
      else:
        body += ["  return Err(Error::last());", "}"]
      rt = g.outs[0][0] if len(g.outs) == 1 else "(" + ", ".join(t for t, _ in g.outs) + ")"
      one = g.outs[0][1]
      body.append((one[:-1] if one.endswith("?") else f"Ok({one})") if len(g.outs) == 1 else "Ok((" + ", ".join(x for _, x in g.outs) + "))")
    else:
      rt = "()"
      body.append(f"check({call})")
  elif r["kind"] == "value":
    rt = SCALAR.get(r["type"])
    if rt is None: return None
    if e["kind"] == "value":
      if e["check_last_error"]:
        body += ["unsafe { sys::tg_clear_error() };", f"let r = {call};",
                 f"if r == {e['value']} && unsafe {{ sys::tg_last_error() }} != sys::TG_OK {{", "  return Err(Error::last());", "}", "Ok(r)"]
      else:
        body += [f"let r = {call};", f"if r == {e['value']} {{", "  return Err(Error::last());", "}", "Ok(r)"]
    else:
      body.append(call)
  elif r["kind"] == "status":  # cannot fail: the status is the value asked for
    rt = "Status"
    body.append(f"Status::from_raw({call}).unwrap_or(Status::ErrorInternal)")
  elif r["kind"] == "string":
    rt = "String"
    body.append(f"unsafe {{ {'string' if fallible else 'string_or_empty'}(sys::{f['name']}({', '.join(g.args)})) }}")
  elif r["kind"] == "void":
    rt, fallible = "()", False
    body.append(f"{call};")
  else:
    return None
  ret = f" -> Result<{rt}>" if fallible else ("" if rt == "()" else f" -> {rt}")
  recv = ["&self"] if is_self and f["params"][0]["kind"] == "handle" else (["self"] if is_self else [])
  sig = ", ".join(recv + g.params)
  lines = doc(wrap(f"`{f['name']}`: {fn_doc(f)}".rstrip(": "), 106), "  ")
  lines.append(f"  pub fn {mname}({sig}){ret} {{")
  lines += [f"    {b}" for b in body]
  lines.append("  }")
  return target, lines


def gen_safe(m, ty):
  structs = {s["name"] for s in m["structs"] if not any("*" in f["type"] for f in s["fields"])}
  o = [f"// {HEADER_NOTE}", "// The generated part of the safe API: handle types, enums, and wrappers of the functions whose parameter",
       "// kinds a generic rule covers (see scripts/bindgen/rust.py). The rest is hand-written in the other modules.",
       "#![allow(clippy::too_many_arguments, clippy::should_implement_trait)]", "use core::borrow::Borrow;",
       "use core::ffi::{c_char, c_int};", "use core::ptr::NonNull;", "",
       "use crate::ffi::*;", "use crate::{Error, Result};", "use tinygrad_sys as sys;", ""]
  for s in m["structs"]:
    if s["name"] in structs: o += doc(wrap(s["doc"])) + [f"pub type {type_name(s['name'])} = sys::{s['name']};", ""]
  for e in m["enums"]:
    vs = variants(e)
    o += doc(wrap(e["doc"]) or [f"`{e['name']}`."]) + ["#[repr(i32)]", "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]",
                                                      f"pub enum {type_name(e['name'])} {{"]
    for v, c, val, d in vs: o += doc(wrap(d), "  ") + [f"  {v} = sys::{c},"]
    o += ["}", f"impl {type_name(e['name'])} {{", "  /// Every value, in declaration order.",
          f"  pub const ALL: [Self; {len(vs)}] = [{', '.join('Self::' + v for v, *_ in vs)}];",
          "  /// The variant of a C value; None for values this header does not name.",
          "  pub fn from_raw(v: i32) -> Option<Self> {", "    Self::ALL.into_iter().find(|x| *x as i32 == v)", "  }", "}", ""]
  for h in m["handles"]:
    w, c = type_name(h["name"]), h["name"]
    o += doc(wrap(h["doc"][:1].upper() + h["doc"][1:] + "." if h["doc"] else "")) + [
          f"/// Owns one reference to a `{c}`: dropping it calls `{h['release']}`"
          + (f", cloning it `{h['retain']}`." if h["retain"] else "."),
          "/// Send, not Sync: the header allows one thread at a time per handle, which is what Rust's ownership gives.",
          "#[repr(transparent)]", f"pub struct {w}(NonNull<sys::{c}>);", f"unsafe impl Send for {w} {{}}", f"impl Handle for {w} {{", f"  type Raw = sys::{c};",
          "  fn as_ptr(&self) -> *mut Self::Raw {", "    self.0.as_ptr()", "  }",
          "  unsafe fn wrap(p: NonNull<Self::Raw>) -> Self {", "    Self(p)", "  }", "}",
          f"impl Drop for {w} {{", "  fn drop(&mut self) {", f"    unsafe {{ sys::{h['release']}(self.0.as_ptr()) }}", "  }", "}"]
    if h["retain"]:
      o += [f"impl Clone for {w} {{", "  fn clone(&self) -> Self {", f"    // {h['retain']} fails only for a NULL or released handle, which a live {w} is not.",
            f"    Self(NonNull::new(unsafe {{ sys::{h['retain']}(self.0.as_ptr()) }}).expect(\"{h['retain']} failed\"))", "  }", "}"]
    if c not in DEBUG_BY_HAND:
      o += [f"impl core::fmt::Debug for {w} {{", "  fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {",
            f"    write!(f, \"{w}({{:p}})\", self.0)", "  }", "}"]
    o.append("")
  impls, free, done = {}, [], []
  for f in m["functions"]:
    res = safe_fn(f, ty, structs)
    if res is None: continue
    target, lines = res
    done.append(f["name"])
    (impls.setdefault(target, []) if target else free).append(lines)
  for target, fns in impls.items():
    o.append(f"impl {target} {{")
    for i, lines in enumerate(fns): o += ([""] if i else []) + lines
    o += ["}", ""]
  for lines in free: o += [l[2:] for l in lines] + [""]
  hand = [f for f in m["functions"] if f["name"] not in done]
  o += [f"/// Functions wrapped above: {len(done)} of the manifest's {len(m['functions'])}. The others, and where they are:",
        "pub const HANDWRITTEN: &[(&str, &str)] = &["]
  for f in hand:
    where = HANDWRITTEN.get(f["name"]) or {"retain": "Clone", "release": "Drop"}.get(f["name"].rsplit("_", 1)[1])
    if where is None: raise SystemExit(f"bindgen/rust.py: {f['name']} is neither generated nor listed in HANDWRITTEN")
    o.append(f"  (\"{f['name']}\", \"{where}\"),")
  o += ["];", ""]
  return "\n".join(o), len(done)


def generate(m):
  ty = {"handles": {h["name"] for h in m["handles"]}, "enums": {e["name"] for e in m["enums"]}}
  ty["all"] = ty["handles"] | ty["enums"] | {s["name"] for s in m["structs"]} | {c["name"] for c in m["callbacks"]} | \
              {x["name"] for x in m["externs"]}
  safe, _ = gen_safe(m, ty)
  return {SYS: gen_sys(m, ty), SAFE: safe}
