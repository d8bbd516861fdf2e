"""Go emitter: bindings/go/zz_generated.go, a cgo file with the whole manifest in Go terms.

Per function it writes a C helper (in the cgo preamble) that makes the call and, when the manifest's error rule says it
failed, copies tg_last_error()/tg_last_error_message() out in the same cgo call: the last error is per OS thread and a
goroutine may move between threads between two cgo calls, so the pair must not be split. On the Go side it writes a
wrapper that converts arguments (slices for arrays and their lengths, strings, *Tensor/... handles, nil for nullable
ones), keeps the handles alive across the call, and returns new references as owning wrappers and failures as *Error.

A function whose first argument is a non-nullable handle becomes a method of that handle's type (tg_tensor_add(a, b) ->
a.Add(b)); one whose first argument is an enum and whose name starts with the enum's becomes a method of the enum type
(tg_dtype_size -> DType.Size); the rest are package functions (tg_tensor_ prefix dropped: tg_tensor_zeros -> Zeros).
"""
from bindgen.common import HEADER_NOTE, pascal, stem, wrap

OUT = "bindings/go/zz_generated.go"

# Go's initialisms and the spellings Go users expect; any other word is capitalized.
WORDS = {"nn": "NN", "sgd": "SGD", "lars": "LARS", "lamb": "LAMB", "adamw": "AdamW", "lr": "LR", "json": "JSON",
         "lstm": "LSTM", "idx": "IDX", "mnist": "MNIST", "dlpack": "DLPack", "dtype": "DType", "bfloat16": "BFloat16",
         "binop": "BinOp", "io": "IO", "idiv": "IDiv", "newaxis": "NewAxis", "isnan": "IsNaN",
         "isinf": "IsInf", "isfinite": "IsFinite", "isclose": "IsClose", "batchnorm": "BatchNorm", "layernorm": "LayerNorm",
         "rmsnorm": "RMSNorm", "groupnorm": "GroupNorm", "instancenorm": "InstanceNorm", "nll": "NLL", "ns": "NS", "ok": "OK", "id": "ID", "xy": "XY"}
# Functions whose generated wrapper stays unexported: a hand-written method (bindings/go/*.go) gives the friendlier
# form on top of it. Value: why.
UNEXPORTED = {
  "tg_last_error": "the last error is per OS thread; Go code gets it as the *Error the failing call returns",
  "tg_last_error_message": "as tg_last_error",
  "tg_clear_error": "as tg_last_error",
  "tg_tensor_shape": "Shape() asks Ndim first, so no capacity argument",
  "tg_module_parameters": "Parameters() asks ParameterCount first",
  "tg_optimizer_schedule_step": "ScheduleStep() asks the count first",
  "tg_optimizer_params": "Params() asks the count first",
  "tg_tensor_chunk": "Chunk() sizes the output itself",
  "tg_state_info": "Info() asks ndim first",
  "tg_jit_call": "Call() returns the Go function's own error when it failed",
}
# Not wrapped here; hand-written in bindings/go (a Go func as a C callback needs an exported trampoline).
HANDWRITTEN = {"tg_jit_create": "NewJit in jit.go: a Go func behind the tg_jit_fn callback",
               "tg_llm_generate": "Llm.Generate in llm.go: a Go func behind the tg_llm_token_fn callback"}
GO_SCALAR = {"int32": "int32", "int64": "int64", "uint64": "uint64", "size": "int", "float64": "float64"}
C_SCALAR = {"int32": "C.int", "int64": "C.int64_t", "uint64": "C.uint64_t", "size": "C.size_t", "float64": "C.double"}
C_ELEM = {"int64_t": ("int64", "C.int64_t"), "double": ("float64", "C.double"), "int": ("int32", "C.int")}
GO_TO_C = {"int32": "C.int", "int64": "C.int64_t", "uint64": "C.uint64_t", "int": "C.size_t", "float64": "C.double"}
GO_KEYWORDS = {"break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough", "for", "func", "go",
               "goto", "if", "import", "interface", "map", "package", "range", "return", "select", "struct", "switch",
               "type", "var"}
RESERVED = {"st", "ret", "err", "buf", "len", "cap", "new", "make", "copy", "string", "max", "min"}  # locals, builtins


def align(rows):
  """Lines of a const block or struct, cells padded as gofmt's tabwriter does: every cell but a line's last is a
  column cell, and a run of consecutive lines having column j pads it to the run's widest entry plus one."""
  width = [[0] * len(r) for r in rows]
  for j in range(max(map(len, rows)) - 1):
    i = 0
    while i < len(rows):
      if len(rows[i]) - 1 <= j: i += 1; continue
      k = i
      while k < len(rows) and len(rows[k]) - 1 > j: k += 1
      w = max(len(rows[x][j]) for x in range(i, k)) + 1
      for x in range(i, k): width[x][j] = w
      i = k
  return ["\t" + "".join(c.ljust(width[n][j]) if j < len(r) - 1 else c for j, c in enumerate(r)) for n, r in enumerate(rows)]


def camel(s, upper=True):
  out = pascal(s, WORDS)
  return out if upper else out[:1].lower() + out[1:]


def local(name):
  first, *rest = [p for p in name.split("_") if p]
  n = first + camel("_".join(rest))
  if n in GO_KEYWORDS or n in RESERVED: n += "Arg"
  return n


class Gen:
  def __init__(self, m):
    self.m = m
    self.handles = {h["name"]: camel(stem(h["name"])) for h in m["handles"]}
    self.enums = {e["name"]: camel(stem(e["name"])) for e in m["enums"]}
    self.structs = {s["name"]: s for s in m["structs"]}
    self.sgo = {s["name"]: camel(stem(s["name"])) for s in m["structs"]}
    self.c, self.go = [], []
    self.covered = []

  # ---- names -------------------------------------------------------------------------------------------------------
  def enum_const(self, enum, value):
    v = value[3:]
    if enum == "tg_dtype": return "DTypeInvalid" if v == "DTYPE_INVALID" else camel(v.lower())
    if enum == "tg_status":
      if v.startswith("ERROR_"): return "Err" + camel(v[6:].lower())
      return "OK" if v == "OK" else camel(v.lower())
    t = self.enums[enum]
    first, _, rest = v.partition("_")
    if rest and t.upper().startswith(first): v = rest  # TG_INDEX_INT -> IndexInt, TG_OPTIM_SGD -> OptimizerKindSGD
    return t + camel(v.lower())

  def placement(self, f):
    """(receiver param or None, receiver Go type or None, Go name)."""
    s, ps = stem(f["name"]), f["params"]
    if ps and ps[0]["kind"] == "handle" and not ps[0]["nullable"] and ps[0]["ownership"] == "borrowed":
      h = ps[0]["handle"]
      hs = stem(h) + "_"
      return ps[0], self.handles[h], camel(s[len(hs):] if s.startswith(hs) else s)
    if ps and ps[0]["kind"] == "value" and ps[0]["value"] == "enum" and s.startswith(stem(ps[0]["enum"]) + "_"):
      return ps[0], self.enums[ps[0]["enum"]], camel(s[len(stem(ps[0]["enum"])) + 1:])
    return None, None, camel(s[len("tensor_"):] if s.startswith("tensor_") else s)

  # ---- pieces --------------------------------------------------------------------------------------------------------
  def emit_header(self):
    m = self.m
    g = self.go
    g += [f"// {HEADER_NOTE}", "", "package tinygrad", "", "/*", "#cgo CFLAGS: -I${SRCDIR}/../../include",
          "#cgo LDFLAGS: -ltinygrad", "#include <stdlib.h>", "#include <string.h>", "#include <tinygrad.h>", "",
          "// A failure's code and message, copied out on the thread that made the call.",
          "typedef struct { tg_status code; char* msg; } tgw_err;",
          "static void tgw_fail(tgw_err* e, tg_status code) {",
          "  const char* msg = tg_last_error_message();",
          "  e->code = code == TG_OK ? TG_ERROR_INTERNAL : code;",
          "  e->msg = strdup(code == TG_OK ? \"the call failed without setting an error\" : msg);",
          "}", "@C@", "*/", 'import "C"', "", "import (", '\t"runtime"', '\t"unsafe"', ")", "",
          "// check turns a helper's copied-out failure into an *Error (nil when the call succeeded).",
          "func check(st *C.tgw_err) error {", "\tif st.code == C.TG_OK {", "\t\treturn nil", "\t}",
          "\tmsg := C.GoString(st.msg)", "\tC.free(unsafe.Pointer(st.msg))", "\treturn newError(Status(st.code), msg)", "}", "",
          "// freeAll frees the C strings a struct's toC made for one call.", "func freeAll(ps []unsafe.Pointer) {",
          "\tfor _, p := range ps {", "\t\tC.free(p)", "\t}", "}", "",
          "// ptr0 is the address of a slice's first element, or nil for an empty slice (the C API's NULL with count 0).",
          "func ptr0[T any](s []T) unsafe.Pointer {", "\tif len(s) == 0 {", "\t\treturn nil", "\t}",
          "\treturn unsafe.Pointer(&s[0])", "}", "",
          "// clampCount is how many of `capacity` output slots a call that returned the count n filled.",
          "func clampCount(n int64, capacity int) int {", "\tif n < int64(capacity) {", "\t\treturn int(n)", "\t}",
          "\treturn capacity", "}", "",
          "// cflag is a flag argument as the C int the header takes.",
          "func cflag(b bool) C.int {", "\tif b {", "\t\treturn 1", "\t}", "\treturn 0", "}", "",
          "// The manifest this file was generated from (bindings/tinygrad_api.json) and the library it describes.",
          "const ("] + align([["ManifestVersion", f'= {m["manifest_version"]}'], ["SONAME", f'= "{m["soname"]}"']]) + [")", ""]
    g += ["// Constants of include/tinygrad.h.", "const ("]
    funcs = {self.placement(f)[2] for f in m["functions"] if not self.placement(f)[0]}
    cname = lambda c: ("Header" if camel(c["name"][3:].lower()) in funcs else "") + camel(c["name"][3:].lower())  # tg_version_number()
    g += align([[cname(c), "= " + (f'"{c["value"]}"' if c["type"] == "string" else str(c["value"]))] for c in m["constants"]])
    g += [")", ""]
    for e in m["enums"]:
      t = self.enums[e["name"]]
      g += [f"// {t} is {e['name']}." + (" " + e["doc"] if e["doc"] else "")]
      g[-1:] = ["// " + l for l in wrap(g[-1][3:])]
      g += [f"type {t} int32", "", f"// Values of {e['name']}.", "const ("]
      g += align([[self.enum_const(e["name"], v["name"]), t, f"= {v['value']}"] + ([f"// {v['doc']}"] if v["doc"] else [])
                  for v in e["values"]])
      g += [")", ""]

  def emit_handles(self):
    g = self.go
    for h in self.m["handles"]:
      t, c = self.handles[h["name"]], h["name"]
      v = t[0].lower()
      g += [f"// {t} owns one reference to a {c}" + (f": {h['doc']}" if h.get("doc") else "") + ".",
            "// Close releases it; a finalizer releases it if Close was never called.",
            f"// A {t} may be used by one goroutine at a time.",
            f"type {t} struct {{", f"\tp    *C.{c}", "\tdone func() // Go state the C object refers to (a callback), freed by Close", "}", "",
            f"func new{t}(cp *C.{c}) *{t} {{",
            "\tif cp == nil {", "\t\treturn nil", "\t}",
            f"\t{v} := &{t}{{p: cp}}", f"\truntime.SetFinalizer({v}, (*{t}).Close)", f"\treturn {v}", "}", "",
            f"func ({v} *{t}) ptr() *C.{c} {{", f"\tif {v} == nil {{", "\t\treturn nil", "\t}", f"\treturn {v}.p", "}", "",
            f"// Close releases the reference ({h['release']}); later calls do nothing. A closed {t} passed to a",
            "// function is reported as an error by the library.",
            f"func ({v} *{t}) Close() {{",
            f"\tif {v} == nil || {v}.p == nil {{", "\t\treturn", "\t}",
            f"\tC.{h['release']}({v}.p)", f"\t{v}.p = nil", f"\truntime.SetFinalizer({v}, nil)",
            f"\tif {v}.done != nil {{", f"\t\t{v}.done()", "\t}", "}", ""]
      self.covered.append(h["release"])
      if any(p["kind"] == "handle_array" and p["handle"] == c for f in self.m["functions"] for p in f["params"]):
        g += [f"func c{t}s(xs []*{t}) []*C.{c} {{", f"\tps := make([]*C.{c}, len(xs))", "\tfor i, x := range xs {",
              "\t\tps[i] = x.ptr()", "\t}", "\treturn ps", "}", ""]

  def struct_layout(self, s):
    """Go fields: [(go name, go type, c field, how)]; how: scalar|enum|handle|string|slice(nfield, elem)|fixed(count)."""
    fields, out, skip = s["fields"], [], set()
    for i, fl in enumerate(fields):
      n, ty = fl["name"], fl["type"]
      if n in skip or (s["sized"] and i == 0): continue
      nxt = fields[i + 1] if i + 1 < len(fields) else None
      if n.startswith("n_") and ty == "size_t" and nxt and ("count" in nxt or nxt["type"].endswith("*")) and nxt["type"] != "const char*":
        elem = nxt["type"].replace("const ", "").rstrip("*").strip()
        out.append((camel(nxt["name"]), "[]" + C_ELEM[elem][0], nxt["name"], ("slice", n, elem, nxt.get("count"))))
        skip.add(nxt["name"])
        continue
      if ty in self.enums: out.append((camel(n), self.enums[ty], n, ("enum",)))
      elif ty.rstrip("*") in self.handles: out.append((camel(n), "*" + self.handles[ty.rstrip("*")], n, ("handle",)))
      elif ty == "const char*": out.append((camel(n), "string", n, ("string",)))
      elif "count" in fl: out.append((camel(n), f"[{fl['count']}]" + C_ELEM[ty][0], n, ("fixed", fl["count"], ty)))
      else:
        gt = {"int": "int32", "int64_t": "int64", "uint64_t": "uint64", "size_t": "int", "double": "float64"}[ty]
        out.append((camel(n), gt, n, ("scalar", gt)))
    return out

  def emit_structs(self, used_in, used_out):
    g = self.go
    for s in self.m["structs"]:
      t, lay = self.sgo[s["name"]], self.struct_layout(s)
      g += ["// " + l for l in wrap(f"{t} is {s['name']}. {s['doc']}")]
      if s["sized"]: g.append("// Its struct_size field is filled in by the binding.")
      g += [f"type {t} struct {{"] + align([[gn, gt] for gn, gt, _, _ in lay]) + ["}", ""]
      cname = s["name"]
      if s["name"] in used_in:
        # C strings made for the call are appended to *frees; the caller frees them after the call
        g += [f"func (x *{t}) toC(c *C.{cname}, frees *[]unsafe.Pointer) error {{"]
        if s["sized"]: g.append(f"\tc.struct_size = C.sizeof_{cname}")
        for gn, gt, cf, how in lay:
          cf_ = "_type" if cf == "type" else cf
          if how[0] == "scalar": g.append(f"\tc.{cf_} = {GO_TO_C[how[1]]}(x.{gn})")
          elif how[0] == "enum": g.append(f"\tc.{cf_} = C.{[k for k, v in self.enums.items() if v == gt][0]}(x.{gn})")
          elif how[0] == "handle": g.append(f"\tc.{cf_} = x.{gn}.ptr()")
          elif how[0] == "fixed": g.append(f"\tfor i, v := range x.{gn} {{\n\t\tc.{cf_}[i] = {C_ELEM[how[2]][1]}(v)\n\t}}")
          elif how[0] == "string":  # "" is NULL: the C default
            g += [f"\tif x.{gn} != \"\" {{", f"\t\ts := C.CString(x.{gn})", "\t\t*frees = append(*frees, unsafe.Pointer(s))",
                  f"\t\tc.{cf_} = s", "\t}"]
          elif how[0] == "slice" and how[3]:
            g += [f"\tif len(x.{gn}) > {how[3]} {{",
                  f'\t\treturn newErrorf(ErrInvalidArgument, "{cname}.{cf}: {how[3]} values at most, got %d", len(x.{gn}))', "\t}",
                  f"\tc.{how[1]} = C.size_t(len(x.{gn}))", f"\tfor i, v := range x.{gn} {{", f"\t\tc.{cf_}[i] = {C_ELEM[how[2]][1]}(v)", "\t}"]
          else: raise ValueError(f"{cname}.{cf}: no Go conversion into C")
        g += ["\treturn nil", "}", ""]
      if s["name"] in used_out:
        g += [f"func (x *{t}) fromC(c *C.{cname}) {{"]
        for gn, gt, cf, how in lay:
          if how[0] == "scalar": g.append(f"\tx.{gn} = {gt}(c.{cf})")
          elif how[0] == "enum": g.append(f"\tx.{gn} = {gt}(c.{cf})")
          elif how[0] == "string": g.append(f"\tx.{gn} = C.GoString(c.{cf})")
          elif how[0] == "fixed": g.append(f"\tfor i := range x.{gn} {{\n\t\tx.{gn}[i] = {gt[gt.index(']') + 1:]}(c.{cf}[i])\n\t}}")
          elif how[0] == "slice":
            et = C_ELEM[how[2]][0]
            src = f"c.{cf}[:c.{how[1]}]" if how[3] else f"unsafe.Slice(c.{cf}, c.{how[1]})"
            g += [f"\tx.{gn} = make([]{et}, c.{how[1]})", f"\tfor i, v := range {src} {{", f"\t\tx.{gn}[i] = {et}(v)", "\t}"]
          else: raise ValueError(f"{cname}.{cf}: no Go conversion from C")
        g += ["}", ""]

  def zero(self, t):
    if t == "string": return '""'
    if t in GO_SCALAR.values() or t in self.enums.values() or t in ("int", "Status"): return "0"
    if t in self.sgo.values(): return t + "{}"
    return "nil"

  # ---- functions -------------------------------------------------------------------------------------------------------
  def emit_function(self, f):
    name, ps, r = f["name"], f["params"], f["returns"]
    byname = {p["name"]: p for p in ps}
    recv, rtype, gname = self.placement(f)
    exported = name not in UNEXPORTED
    if not exported: gname = gname[:1].lower() + gname[1:]
    errs = r["errors"]["kind"]
    # C helper: the call plus the error read, one cgo call.
    helper = None
    if errs != "none":
      helper = "tgw_" + stem(name)
      cparams = ", ".join(f"{p['type']} {p['name']}" for p in ps)
      ret = r["type"]
      cond = {"null": "!tgw_r", "status": "tgw_r != TG_OK"}.get(errs) or f"tgw_r == {r['errors']['value']}"
      code = "tgw_r" if errs == "status" else "tg_last_error()"
      if r["errors"].get("check_last_error"): cond += " && tg_last_error() != TG_OK"
      self.c += [f"static {ret} {helper}({cparams + ', ' if cparams else ''}tgw_err* tgw_e) {{",
                 "  tg_clear_error();" if r["errors"].get("check_last_error") else None,
                 f"  {ret} tgw_r = {name}({', '.join(p['name'] for p in ps)});",
                 f"  if ({cond}) tgw_fail(tgw_e, {code});", "  return tgw_r;", "}"]
      self.c = [l for l in self.c if l is not None]
    # Go side.
    gparams, checks, pre, args, keep = [], [], [], [], []
    length_src = {}  # length param -> Go expression of its value
    outs = []  # (go var, go type, how to build result)
    for p in ps:
      if p["kind"] in ("array_in", "handle_array", "string_array", "bytes_in", "struct_array_in"):
        for q in ps:
          if q["kind"] == "length" and p["name"] in q["of"]: length_src.setdefault(q["name"], []).append(local(p["name"]))
    for p in ps:
      k, n, ln = p["kind"], local(p["name"]), p["name"]
      if p is recv: n = local(p["name"])
      if k == "handle":
        t = self.handles[p["handle"]]
        if p is not recv: gparams.append(f"{n} *{t}")
        args.append(f"{n}.ptr()")
        keep.append(n)
      elif k == "value":
        if p["value"] == "enum":
          gt = self.enums[p["enum"]]
          args.append(f"C.{p['enum']}({n})")
        elif p.get("flag"):  # an `int` the header calls a flag
          gt = "bool"
          args.append(f"cflag({n})")
        else:
          gt = GO_SCALAR[p["value"]]
          args.append(f"{C_SCALAR[p['value']]}({n})")
        if p is not recv: gparams.append(f"{n} {gt}")
      elif k == "length":
        srcs = length_src.get(ln)
        ofs = [byname[o] for o in p["of"]]
        if srcs:
          args.append(f"C.size_t(len({srcs[0]}))")
          for other in srcs[1:]:
            checks += [f"\tif len({other}) != len({srcs[0]}) {{",
                    f'\t\treturn {{ZERO}}newError(ErrInvalidArgument, "{name}: {other} and {srcs[0]} differ in length")', "\t}"]
        elif any(o["kind"] == "chars_out" for o in ofs):
          args.append("C.size_t(len(buf))")
        elif any(o["kind"] == "bytes_out" for o in ofs):
          args.append(f"C.size_t(len({local(p['of'][0])}))")
        else:
          gparams.append(f"{n} int")
          args.append(f"C.size_t({n})")
          checks += [f"\tif {n} < 0 {{", f'\t\treturn {{ZERO}}newError(ErrInvalidArgument, "{name}: negative {ln}")', "\t}"]
      elif k == "string":
        gparams.append(f"{n} string")
        cv = "cv" + camel(ln)
        if p["nullable"]:
          pre += [f"\tvar {cv} *C.char", f'\tif {n} != "" {{', f"\t\t{cv} = C.CString({n})",
                  f"\t\tdefer C.free(unsafe.Pointer({cv}))", "\t}"]
        else:
          pre += [f"\t{cv} := C.CString({n})", f"\tdefer C.free(unsafe.Pointer({cv}))"]
        args.append(cv)
      elif k == "string_array":
        gparams.append(f"{n} []string")
        cv = "cv" + camel(ln)
        pre += [f"\t{cv} := make([]*C.char, len({n}))", f"\tfor i, s := range {n} {{", f"\t\t{cv}[i] = C.CString(s)",
                f"\t\tdefer C.free(unsafe.Pointer({cv}[i]))", "\t}"]
        args.append(f"(**C.char)(ptr0({cv}))")
      elif k == "array_in":
        gt, ct = C_ELEM[p["elem"]]
        gparams.append(f"{n} []{gt}")
        args.append(f"(*{ct})(ptr0({n}))")
      elif k == "handle_array":
        t, c = self.handles[p["handle"]], p["handle"]
        gparams.append(f"{n} []*{t}")
        cv = "cv" + camel(ln)
        pre.append(f"\t{cv} := c{t}s({n})")
        args.append(f"(**C.{c})(ptr0({cv}))")
        keep.append(n)
      elif k == "bytes_in":
        gparams.append(f"{n} []byte")
        args.append(f"ptr0({n})")
      elif k == "bytes_out":
        gparams.append(f"{n} []byte")
        args.append(f"ptr0({n})")
      elif k == "struct_array_in":
        t, c = self.sgo[p["struct"]], p["struct"]
        gparams.append(f"{n} []{t}")
        cv = "cv" + camel(ln)
        pre += [f"\tvar frees{cv} []unsafe.Pointer", f"\tdefer freeAll(frees{cv})", f"\t{cv} := make([]C.{c}, len({n}))", f"\tfor i := range {n} {{",
                f"\t\tif err := {n}[i].toC(&{cv}[i], &frees{cv}); err != nil {{", "\t\t\treturn {ZERO}err", "\t\t}", "\t}"]
        args.append(f"(*C.{c})(ptr0({cv}))")
        keep.append(n)
      elif k == "struct_in":
        t, c = self.sgo[p["struct"]], p["struct"]
        gparams.append(f"{n} *{t}")
        cv = "cv" + camel(ln)
        pre += [f"\tvar {cv} *C.{c}", f"\tvar frees{cv} []unsafe.Pointer", f"\tdefer freeAll(frees{cv})", f"\tif {n} != nil {{",
                f"\t\t{cv} = new(C.{c})", f"\t\tif err := {n}.toC({cv}, &frees{cv}); err != nil {{", "\t\t\treturn {ZERO}err", "\t\t}", "\t}"]
        args.append(cv)
        keep.append(n)
      elif k == "struct_out":
        t, c = self.sgo[p["struct"]], p["struct"]
        cv = "cv" + camel(ln)
        pre += [f"\tvar {cv} C.{c}"]
        if self.structs[c]["sized"]: pre.append(f"\t{cv}.struct_size = C.sizeof_{c}")
        args.append(f"&{cv}")
        outs.append((n, t, [f"\tvar {n} {t}", f"\t{n}.fromC(&{cv})"]))
      elif k == "value_out":
        e = p["elem"]
        gt, ct = (self.enums[e], f"C.{e}") if e in self.enums else C_ELEM[e]
        cv = "cv" + camel(ln)
        pre.append(f"\tvar {cv} {ct}")
        args.append(f"&{cv}")
        outs.append((n, gt, [f"\t{n} := {gt}({cv})"]))
      elif k == "array_out":
        gt, ct = C_ELEM[p["elem"]]
        cap_ = local(p["length"])
        cv = "cv" + camel(ln)
        pre.append(f"\t{cv} := make([]{ct}, {cap_})")
        args.append(f"(*{ct})(ptr0({cv}))")
        outs.append((n, "[]" + gt, [f"\t{n} := make([]{gt}, len({cv}))", f"\tfor i, v := range {cv} {{", f"\t\t{n}[i] = {gt}(v)", "\t}"]))
      elif k == "handle_out":
        t, c = self.handles[p["handle"]], p["handle"]
        cv = "cv" + camel(ln)
        L = p["length"]
        if isinstance(L, int):
          pre.append(f"\tvar {cv} [{L}]*C.{c}")
          args.append(f"&{cv}[0]")
          if L == 1: outs.append((n, "*" + t, [f"\t{n} := new{t}({cv}[0])"]))
          else:
            for i in range(L): outs.append((f"{n}{i}", "*" + t, [f"\t{n}{i} := new{t}({cv}[{i}])"]))
        else:
          src = length_src.get(L)
          pre.append(f"\t{cv} := make([]*C.{c}, {'len(' + src[0] + ')' if src else local(L)})")
          args.append(f"(**C.{c})(ptr0({cv}))")
          trunc = r["kind"] == "value"
          outs.append((n, "[]*" + t, [f"\t{n} := make([]*{t}, 0, len({cv}))",
                                      f"\tfor _, p := range {cv}{'[:clampCount(int64(ret), len(' + cv + '))]' if trunc else ''} {{",
                                      f"\t\t{n} = append({n}, new{t}(p))", "\t}"]))
      elif k == "chars_out":
        args.append("(*C.char)(ptr0(buf))")
      elif k == "extern":
        gparams.append(f"{n} unsafe.Pointer")
        args.append(f"(*C.struct_{p['extern']})({n})")
      else:
        raise ValueError(f"{name}: param kind {k} has no Go rule")
    # results
    rk = r["kind"]
    rgo = None
    if rk == "handle": rgo = "*" + self.handles[r["handle"]]
    elif rk == "value": rgo = GO_SCALAR[r["value"]] if r["type"] != "int" else "int"
    elif rk == "string": rgo = "string"
    elif rk == "extern": rgo = "unsafe.Pointer"
    elif rk == "status" and errs == "none": rgo = "Status"
    chars = any(p["kind"] == "chars_out" for p in ps)
    if chars: rgo = "string"
    rtypes = ([rgo] if rgo else []) + [t for _, t, _ in outs] + (["error"] if errs != "none" else [])
    zeros = [self.zero(t) for t in rtypes[:-1]]
    zero = "".join(z + ", " for z in zeros) if errs != "none" else ""
    # assemble
    g = self.go
    doc = f"{gname} is {name}." + (" " + f["doc"] if f["doc"] else "")
    if not exported: doc += f" (Unexported: {UNEXPORTED[name]}.)"
    g += ["// " + l for l in wrap(doc)]
    recv_s = f"({local(recv['name'])} {'*' if recv['kind'] == 'handle' else ''}{rtype}) " if recv else ""
    rs = ", ".join(rtypes)
    g.append(f"func {recv_s}{gname}({', '.join(gparams)}) {'(' + rs + ')' if len(rtypes) > 1 else rs}{' ' if rs else ''}{{".replace("  {", " {"))
    g += [l.replace("{ZERO}", zero) for l in checks + pre]
    cargs = ", ".join(args)
    if chars:
      assert rk == "value"
      g += ["\tbuf := make([]byte, 128)", "\tfor {", "\t\tvar st C.tgw_err",
            f"\t\tn := int(C.{helper}({cargs}, &st))"]
      g += [f"\t\truntime.KeepAlive({k_})" for k_ in keep]  # buf holds a copy: the handles may go after the call
      g += ["\t\tif err := check(&st); err != nil {", '\t\t\treturn "", err', "\t\t}",
            "\t\tif n < len(buf) {", "\t\t\treturn string(buf[:n]), nil", "\t\t}", "\t\tbuf = make([]byte, n+1)", "\t}", "}", ""]
      self.covered.append(name)
      return
    call = f"C.{helper}({cargs + ', ' if cargs else ''}&st)" if helper else f"C.{name}({cargs})"
    if helper: g.append("\tvar st C.tgw_err")
    uses_ret = rk in ("handle", "value", "string", "extern") or (rk == "status" and errs == "none")
    g.append(f"\tret := {call}" if uses_ret else f"\t{call}")
    # the handles stay reachable across the call; a string or output struct may point into them until copied, below
    late = (rk == "string" or bool(outs)) and bool(keep)
    if not late: g += [f"\truntime.KeepAlive({k_})" for k_ in keep]
    if errs != "none":
      g += ["\tif err := check(&st); err != nil {"] + [f"\t\truntime.KeepAlive({k_})" for k_ in keep if late] + [f"\t\treturn {zero}err", "\t}"]
    for _, _, build in outs: g += build
    res = []
    if rk == "handle": res.append(f"new{self.handles[r['handle']]}(ret)")
    elif rk == "value": res.append(f"{rgo}(ret)")
    elif rk == "string": res.append("C.GoString(ret)")
    elif rk == "extern": res.append("unsafe.Pointer(ret)")
    elif rk == "status" and errs == "none": res.append("Status(ret)")
    res += [o for o, _, _ in outs]
    if errs != "none": res.append("nil")
    # Only now may the handles go: a borrowed string or struct result points into them until converted above.
    if late:
      g.append(f"\tresult := {res[0]}")
      res[0] = "result"
      g += [f"\truntime.KeepAlive({k_})" for k_ in keep]
    if res: g.append("\treturn " + ", ".join(res))
    g += ["}", ""]
    self.covered.append(name)

  def generate(self):
    m = self.m
    used_in = {p["struct"] for f in m["functions"] for p in f["params"] if p["kind"] in ("struct_in", "struct_array_in")}
    used_out = {p["struct"] for f in m["functions"] for p in f["params"] if p["kind"] == "struct_out"}
    self.emit_header()
    self.emit_handles()
    self.emit_structs(used_in, used_out)
    releases = {h["release"] for h in m["handles"]}
    for f in m["functions"]:
      if f["name"] in releases or f["name"] in HANDWRITTEN: continue
      self.emit_function(f)
    g = self.go
    g += [f"// {k} is wrapped by hand: {v}." for k, v in HANDWRITTEN.items()]
    g += [f"const generatedFunctions = {len(self.covered)} // of {len(m['functions'])} in the manifest", ""]
    text = "\n".join(g)
    return text.replace("@C@", "\n".join(self.c))


def generate(manifest):
  return {OUT: Gen(manifest).generate()}
