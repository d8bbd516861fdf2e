"""C# binding: bindings/csharp/Native.g.cs (the raw layer: every constant, enum, struct, handle, callback and function of
the manifest as P/Invoke) and bindings/csharp/Api.g.cs (the safe layer: a method per function whose parameter kinds
have a generic C# form, on the class of its first handle or of the handle it returns, throwing TinygradException).
Functions left out of Api.g.cs are listed at its end; bindings/csharp/Tinygrad.cs wraps them by hand."""
from bindgen import common

NS = "Tinygrad"
TOKENS = {"dtype": "DType", "binop": "BinOp", "uint8": "UInt8", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
          "bfloat16": "BFloat16", "newaxis": "NewAxis", "adamw": "AdamW"}
KEYWORDS = {"out", "in", "params", "ref", "base", "fixed", "object", "string", "checked", "default", "event", "lock",
            "operator", "decimal", "internal", "is", "as", "char", "byte", "const", "this", "var"}
VALUE = {"int32": "int", "int64": "long", "uint64": "ulong", "float64": "double", "size": "UIntPtr"}
CTYPE = {"int": "int", "int64_t": "long", "uint64_t": "ulong", "double": "double", "size_t": "UIntPtr", "void": "void"}
STRUCTS = {"tg_index": "TensorIndex"}  # System.Index exists
# int32 parameters that are numbers; every other int32 parameter is a 0/1 flag ("Flags are 0/1 ints"), a bool here
# the hand-written layer (Tinygrad.cs) wraps these in a shape the generic rules can't give
HAND = {"tg_tensor_requires_grad": "Tensor.RequiresGrad (a bool property)",
        **{f: "TinygradException carries the error" for f in ("tg_last_error", "tg_last_error_message", "tg_clear_error")}}


def pascal(name): return common.pascal(name, TOKENS)


def camel(name):
  t = name.lower().split("_")
  s = t[0] + pascal("_".join(t[1:]))
  return "@" + s if s in KEYWORDS else s


def raw_name(name):
  return "@" + name if name in KEYWORDS else name


def xml(s):
  return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def doc(text, ind):
  lines = common.wrap(xml(text), 110 - len(ind))
  if not lines: return []
  return [f"{ind}/// <summary>{lines[0]}"] + [f"{ind}/// {l}" for l in lines[1:]] + [f"{ind}/// </summary>"]


class Gen:
  def __init__(self, m):
    self.m = m
    self.enums = {e["name"]: pascal(common.stem(e["name"])) for e in m["enums"]}
    self.structs = {s["name"]: s for s in m["structs"]}
    self.sname = {s["name"]: STRUCTS.get(s["name"]) or pascal(common.stem(s["name"])) for s in m["structs"]}
    self.handles = {h["name"]: pascal(common.stem(h["name"])) for h in m["handles"]}
    self.prefixes = sorted(((common.stem(h) + "_", c) for h, c in self.handles.items()), key=lambda x: -len(x[0]))

  def ctype(self, t):
    """A C type as a C# field or callback type."""
    t = t.replace("const ", "").strip()
    if t.endswith("*"): return "IntPtr"
    return CTYPE.get(t) or self.enums.get(t) or self.sname.get(t) or t

  def vtype(self, p, key="value"):
    v = p.get(key)
    return self.enums[p["enum"]] if v == "enum" else VALUE[v]

  def elem(self, e):
    return self.enums.get(e) or CTYPE[e]

  # ---- Native.g.cs -------------------------------------------------------------------------------------------------
  def enum_members(self, e):
    names = [v["name"][3:] if v["name"].startswith("TG_") else v["name"] for v in e["values"]]
    toks = [n.split("_") for n in names]
    k = 0
    while all(len(t) > k + 1 and t[k] == toks[0][k] for t in toks): k += 1
    own = common.stem(e["name"]).upper().split("_")[0] + "_"
    out = []
    for t in toks:
      n = "_".join(t[k:])
      out.append(pascal(n[len(own):] if n.startswith(own) and n != own else n))
    return out

  def raw_param(self, p):
    k, n = p["kind"], raw_name(p["name"])
    if k == "handle": return f"IntPtr {n}" if p["ownership"] == "taken" else f"{self.handles[p['handle']]}Handle {n}"
    if k == "handle_array": return f"IntPtr[] {n}"
    if k == "handle_out": return f"[Out] IntPtr[] {n}"
    if k == "string": return f"[MarshalAs(UnmanagedType.LPUTF8Str)] string {n}"
    if k == "string_array": return f"[MarshalAs(UnmanagedType.LPArray, ArraySubType = UnmanagedType.LPUTF8Str)] string[] {n}"
    if k == "chars_out": return f"[Out] byte[] {n}"
    if k in ("bytes_in", "bytes_out", "userdata", "extern"): return f"IntPtr {n}"
    if k == "callback": return f"{pascal(common.stem(p['callback']))} {n}"
    if k == "value": return f"{self.vtype(p)} {n}"
    if k == "length": return f"UIntPtr {n}"
    if k == "value_out": return f"{self.elem(p['elem'])}* {n}" if p["nullable"] else f"out {self.elem(p['elem'])} {n}"
    if k == "array_in": return f"{self.elem(p['elem'])}[] {n}"
    if k == "array_out": return f"[Out] {self.elem(p['elem'])}[] {n}"
    if k == "struct_in": return f"{self.sname[p['struct']]}* {n}" if p["nullable"] else f"ref {self.sname[p['struct']]} {n}"
    if k == "struct_out": return f"ref {self.sname[p['struct']]} {n}"
    if k == "struct_array_in": return f"[In] {self.sname[p['struct']]}[] {n}"
    raise ValueError(f"csharp: unknown parameter kind {k}")

  def raw_return(self, r):
    k = r["kind"]
    if k == "handle": return f"{self.handles[r['handle']]}Handle"
    if k in ("string", "extern"): return "IntPtr"
    if k == "status": return "Status"
    if k == "void": return "void"
    return self.enums.get(r["type"]) or CTYPE[r["type"]]

  def native(self):
    m, o = self.m, []
    o += [f"// {common.HEADER_NOTE}", "using System;", "using System.Runtime.InteropServices;", "", f"namespace {NS} {{"]
    for e in m["enums"]:
      o += doc(e["doc"], "") + [f"public enum {self.enums[e['name']]} : int {{"]
      for v, name in zip(e["values"], self.enum_members(e)):
        o += [f"  {name} = {v['value']},{'  // ' + v['doc'] if v['doc'] else ''}"]
      o += ["}", ""]
    for s in m["structs"]:
      unsafe = any("count" in f for f in s["fields"])
      o += doc(s["doc"], "") + ["[StructLayout(LayoutKind.Sequential)]",
                                   f"public {'unsafe ' if unsafe else ''}partial struct {self.sname[s['name']]} {{"]
      for f in s["fields"]:
        t = self.ctype(f["type"])
        o += [f"  public fixed {t} {pascal(f['name'])}[{f['count']}];" if "count" in f else f"  public {t} {pascal(f['name'])};"]
      if s["sized"]:
        n = self.sname[s["name"]]
        o += ["  /// <summary>A value with StructSize set, as the library requires before it reads or writes one.</summary>",
              f"  public static {n} New() => new {n} {{ StructSize = (UIntPtr)Marshal.SizeOf(typeof({n})) }};"]
      o += ["}", ""]
    for c in m["callbacks"]:
      ps = ", ".join(f"{self.ctype(p['type'])} {raw_name(p['name'])}" for p in c["params"])
      o += doc(c["doc"], "") + ["[UnmanagedFunctionPointer(CallingConvention.Cdecl)]",
                                 f"public delegate {self.ctype(c['returns'])} {pascal(common.stem(c['name']))}({ps});", ""]
    for h in m["handles"]:
      c = self.handles[h["name"]]
      o += [f"/// <summary>An owned {h['name']} reference: released ({h['release']}) by Dispose or, if never disposed, by the",
            "/// finalizer.</summary>",
            f"public sealed class {c}Handle : SafeHandle {{",
            f"  public {c}Handle() : base(IntPtr.Zero, true) {{}}",
            f"  internal {c}Handle(IntPtr h) : base(IntPtr.Zero, true) {{ SetHandle(h); }}",
            "  // passed for a NULL argument: invalid, so never released",
            f"  internal static readonly {c}Handle Null = new {c}Handle();",
            "  public override bool IsInvalid => handle == IntPtr.Zero;",
            f"  protected override bool ReleaseHandle() {{ Native.{h['release']}(handle); return true; }}", "}", ""]
    o += ["/// <summary>Every function of include/tinygrad.h as it is, with the C names; the safe layer is the classes in",
          "/// Api.g.cs and Tinygrad.cs. Returned strings are IntPtr: the library owns them (see Native.Str).</summary>",
          "public static unsafe partial class Native {", '  const string Lib = "tinygrad";']
    for c in m["constants"]:
      t = "string" if c["type"] == "string" else "int"
      v = f'"{c["value"]}"' if t == "string" else c["value"]
      o += [f"  public const {t} {c['name']} = {v};"]
    sec = None
    for f in m["functions"]:
      if f["section"] != sec:
        sec = f["section"]
        o += ["", f"  // ---- {sec}"]
      o += doc(f["doc"], "  ")
      ps = ", ".join(self.raw_param(p) for p in f["params"])
      o += ["  [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]",
            f"  public static extern {self.raw_return(f['returns'])} {f['name']}({ps});"]
    o += ["}", "}", ""]
    return "\n".join(o)

  # ---- Api.g.cs ----------------------------------------------------------------------------------------------------
  def place(self, f):
    """(class, method name, instance?) for a function."""
    st, ps = common.stem(f["name"]), f["params"]
    first = ps[0] if ps else None
    if first and first["kind"] == "handle" and first["ownership"] == "borrowed" and not first["nullable"]:
      cls = self.handles[first["handle"]]
      pre = common.stem(first["handle"]) + "_"
      return cls, pascal(st[len(pre):] if st.startswith(pre) else st), True
    for pre, cls in self.prefixes:
      if st.startswith(pre): return cls, pascal(st[len(pre):]), False
    if f["returns"]["kind"] == "handle": return self.handles[f["returns"]["handle"]], pascal(st.split("_", 1)[1]), False
    return "Tg", pascal(st), False

  def method(self, f):
    """The safe method's lines, or a reason it has none."""
    if f["name"] in HAND: return HAND[f["name"]]
    cls, name, inst = self.place(f)
    ps = {p["name"]: p for p in f["params"]}
    sig, pre, args, outs, unsafe = [], [], [], [], False
    for i, p in enumerate(f["params"]):
      k, n = p["kind"], camel(p["name"])
      v = n.lstrip("@") + "_"  # the local holding its native form
      if k == "length" and all(ps[x]["kind"] == "handle" for x in p["of"]): k = "index"  # a count after a handle: an index
      if k == "handle":
        if p["ownership"] != "borrowed": return "takes a reference (Dispose does it)"
        c = self.handles[p["handle"]]
        if inst and i == 0: args.append("H")
        elif p["nullable"]: sig.append(f"{c} {n}"); args.append(f"{n}?.H ?? {c}Handle.Null")
        else: sig.append(f"{c} {n}"); args.append(f"Native.Arg({n}, nameof({n})).H")
      elif k == "handle_array":
        sig.append(f"{self.handles[p['handle']]}[] {n}")
        pre.append(f"using (var {v} = new HandleArray({n}))")
        args.append(f"{v}.Ptrs")
      elif k == "handle_out":
        c, ln = self.handles[p["handle"]], p["length"]
        if isinstance(ln, int): size = str(ln)
        else:
          src = [x for x in ps[ln]["of"] if x != p["name"]]
          if not src: return f"`{p['name']}` holds as many references as the caller asks for"
          size = f"({camel(src[0])}?.Length ?? 0)"
        pre.append(f"var {v} = new IntPtr[{size}];")
        args.append(f"{v}")
        outs.append((c, f"new {c}(new {c}Handle({v}[0]))", n) if ln == 1 else
                    (f"{c}[]", f"Array.ConvertAll({v}, x_ => new {c}(new {c}Handle(x_)))", n))
      elif k == "length":
        arrs = [x for x in p["of"] if ps[x]["kind"] != "handle_out"]
        lens = [f"({camel(x)}?.Length ?? 0)" for x in arrs]
        for a, l in zip(arrs[1:], lens[1:]):
          pre.append(f"if ({lens[0]} != {l}) throw new ArgumentException(\"{camel(arrs[0])} and {camel(a)} differ in length\");")
        args.append(f"(UIntPtr){lens[0]}")
      elif k == "index": sig.append(f"long {n}"); args.append(f"Native.Size({n})")
      elif k == "value":
        t = self.vtype(p)
        if p.get("flag"): sig.append(f"bool {n}"); args.append(f"{n} ? 1 : 0")  # an `int` the header calls a flag
        elif t == "UIntPtr": sig.append(f"long {n}"); args.append(f"Native.Size({n})")
        else: sig.append(f"{t} {n}"); args.append(n)
      elif k in ("string", "string_array", "array_in", "struct_array_in"):
        t = {"string": "string", "string_array": "string[]"}.get(k) or \
            (f"{self.elem(p['elem'])}[]" if k == "array_in" else f"{self.sname[p['struct']]}[]")
        sig.append(f"{t} {n}"); args.append(n)
      elif k == "value_out":
        t = self.elem(p["elem"])
        pre.append(f"{t} {v};")
        if p["nullable"]: args.append(f"&{v}"); unsafe = True
        else: args.append(f"out {v}")
        outs.append((t, f"{v}", n))
      elif k == "struct_in" and p["nullable"]:
        t = self.sname[p["struct"]]
        sig.append(f"{t}? {n}")
        pre.append(f"var {v} = {n}.GetValueOrDefault();")
        args.append(f"{n}.HasValue ? &{v} : null"); unsafe = True
      elif k == "struct_out":
        t = self.sname[p["struct"]]
        pre.append(f"var {v} = {t + '.New()' if self.structs[p['struct']]['sized'] else f'default({t})'};")
        args.append(f"ref {v}")
        outs.append((t, f"{v}", n))
      else: return f"a `{k}` parameter"
    # a trailing nullable argument may be left out; a trailing array may be listed
    for j in range(len(sig) - 1, -1, -1):
      pj = next(p for p in f["params"] if camel(p["name"]) == sig[j].split()[-1])
      if pj.get("nullable") and pj["kind"] in ("string", "handle", "struct_in"): sig[j] += " = null"
      else: break
    if sig and sig[-1].split()[0].endswith("[]") and "=" not in sig[-1]: sig[-1] = "params " + sig[-1]
    r, call = f["returns"], f"Native.{f['name']}({', '.join(args)})"
    body, err = [], r["errors"]
    if r["kind"] == "handle":
      if outs: return "a handle result with outputs"
      c = self.handles[r["handle"]]
      rt, body = c, [f"return new {c}(Native.Check({call}));"]
    elif r["kind"] == "status": rt, body = None, [f"Native.Check({call});"]
    elif r["kind"] == "void": rt, body = None, [f"{call};"]
    elif r["kind"] == "string":
      rt, body = "string", [f"return Native.Str({call}){' ?? throw Native.Fail()' if err['kind'] == 'null' else ''};"]
    elif r["kind"] == "value":
      if outs: return "a count result with outputs"
      t = self.ctype(r["type"])
      rt, v = ("long", f"(long){call}.ToUInt64()") if t == "UIntPtr" else (t, call)
      if err["kind"] == "value" and err.get("check_last_error"):
        body = ["Native.tg_clear_error();", f"var r = {v};",
                f"if (r == {err['value']} && Native.tg_last_error() != Status.Ok) throw Native.Fail();", "return r;"]
      elif err["kind"] == "value": body = [f"var r = {v};", f"if (r == {err['value']}) throw Native.Fail();", "return r;"]
      else: body = [f"return {v};"]
    else: return f"a `{r['kind']}` result"
    if outs:
      if rt: return "a result with outputs"
      if len(outs) == 1: rt, ret = outs[0][0], outs[0][1]
      else:
        rt = "(" + ", ".join(f"{t} {nm.lstrip('@')}" for t, _, nm in outs) + ")"
        ret = "(" + ", ".join(e for _, e, _ in outs) + ")"
      body.append(f"return {ret};")
    # using (...) statements wrap the call: brace them
    usings = [s for s in pre if s.startswith("using")]
    lines = [s for s in pre if not s.startswith("using")]
    if usings: lines += usings[:-1] + [usings[-1] + " {"] + ["  " + b for b in body] + ["}"]
    else: lines += body
    mods = "public " + ("" if inst else "static ") + ("unsafe " if unsafe else "")
    head = doc(f["doc"] + f" ({f['name']})", "  ")
    return cls, head + [f"  {mods}{rt or 'void'} {name}({', '.join(sig)}) {{"] + ["    " + l for l in lines] + ["  }"]

  def api(self):
    classes = {c: [] for c in self.handles.values()}
    classes["Tg"], left = [], []
    for f in self.m["functions"]:
      res = self.method(f)
      if isinstance(res, str): left.append((f["name"], res))
      else: classes[res[0]] += res[1] + [""]
    o = [f"// {common.HEADER_NOTE}", "using System;", "", f"namespace {NS} {{"]
    for h in self.m["handles"]:
      c = self.handles[h["name"]]
      o += [f"/// <summary>A {h['name']} reference. Dispose releases it; one never disposed is released by its handle's finalizer.",
            "/// </summary>",
            f"public sealed partial class {c} : IDisposable, IHandle {{",
            f"  internal readonly {c}Handle H;",
            f"  internal {c}({c}Handle h) {{ H = h; }}",
            "  SafeHandleRef IHandle.Handle => H;",
            "  public void Dispose() => H.Dispose();",
            "  /// <summary>True once disposed: any further use throws ObjectDisposedException.</summary>",
            "  public bool IsDisposed => H.IsClosed;", ""] + classes[c][:-1] + ["}", ""]
    o += ["/// <summary>The library's functions that belong to no handle.</summary>", "public static partial class Tg {"]
    o += classes["Tg"][:-1] + ["}", "}", "",
                               f"// Not generated here ({len(left)}; Tinygrad.cs wraps those a C# user needs, *_release is Dispose):"]
    o += [f"//   {n}: {why}" for n, why in left] + [""]
    self.left = left
    return "\n".join(o).replace("SafeHandleRef", "System.Runtime.InteropServices.SafeHandle")


def generate(manifest):
  g = Gen(manifest)
  return {"bindings/csharp/Native.g.cs": g.native(), "bindings/csharp/Api.g.cs": g.api()}
