"""Python (ctypes): bindings/python/tinygrad_c/_capi.py, the C functions' ctypes signatures, structs, callback types,
enums and constants. tinygrad_c binds every function from it, so the Python binding declares nothing by hand."""
from bindgen.common import HEADER_NOTE

OUT = "bindings/python/tinygrad_c/_capi.py"
SCALAR = {"int": "ctypes.c_int", "int64_t": "ctypes.c_int64", "uint64_t": "ctypes.c_uint64", "size_t": "ctypes.c_size_t",
          "double": "ctypes.c_double", "int32_t": "ctypes.c_int32", "uint32_t": "ctypes.c_uint32", "uint8_t": "ctypes.c_uint8",
          "uint16_t": "ctypes.c_uint16"}


class Types:
  def __init__(self, m):
    self.enums = {e["name"] for e in m["enums"]}
    self.handles = {h["name"] for h in m["handles"]}
    self.structs = {s["name"] for s in m["structs"]}
    self.callbacks = {c["name"] for c in m["callbacks"]}

  def c(self, t):
    """A C type as its ctypes expression. Handles and other opaque pointers are c_void_p."""
    core = t.replace("const ", "").replace(" const", "").strip()
    if core in SCALAR: return SCALAR[core]
    if core in self.enums: return "ctypes.c_int"  # C enums here are 32-bit ints (each has a _MAX_ENUM = 0x7fffffff)
    if core in self.callbacks or core in self.structs: return core
    if core == "void": return "None"
    if core in ("char*",): return "ctypes.c_char_p"
    if core == "char**": return "ctypes.POINTER(ctypes.c_char_p)"
    if core.endswith("*"):
      inner = core[:-1].strip()
      if inner == "void" or inner.startswith("struct ") or inner in self.handles: return "ctypes.c_void_p"
      return f"ctypes.POINTER({self.c(inner)})"
    raise SystemExit(f"bindgen/python.py: no ctypes type for '{t}'")


def generate(m):
  ty = Types(m)
  out = [f'"""{HEADER_NOTE}"""', "import ctypes", ""]
  out.append(f"VERSION = {m['version']!r}")
  for c in m["constants"]: out.append(f"{c['name']} = {c['value']!r}")
  out.append("")
  for e in m["enums"]:
    out.append(f"# {e['name']}")
    for v in e["values"]: out.append(f"{v['name']} = {v['value']}")
  out.append("")
  for cb in m["callbacks"]:
    args = ", ".join(ty.c(p["type"]) for p in cb["params"])
    out.append(f"{cb['name']} = ctypes.CFUNCTYPE({ty.c(cb['returns'])}, {args})")
  for s in m["structs"]:
    out += ["", "", f"class {s['name']}(ctypes.Structure):", f"  \"\"\"struct {s['name']}, laid out as include/tinygrad.h declares it.\"\"\"",
            "  _fields_ = ["]
    for f in s["fields"]:
      t = ty.c(f["type"]) + (f" * {f['count']}" if "count" in f else "")
      out.append(f"    ({f['name']!r}, {t}),")
    out.append("  ]")
  out += ["", "", "# name -> (result type, argument types)", "SIGNATURES = {"]
  for f in m["functions"]:
    args = ", ".join(ty.c(p["type"]) for p in f["params"])
    out.append(f"  {f['name']!r}: ({ty.c(f['returns']['type'])}, [{args}]),")
  out += ["}", "", "# name -> the manifest's error convention: 'null', 'status', 'none', or ('value', v, check_last_error)", "ERRORS = {"]
  for f in m["functions"]:
    e = f["returns"]["errors"]
    v = (e["kind"] if e["kind"] != "value" else ("value", e["value"], e["check_last_error"]))
    out.append(f"  {f['name']!r}: {v!r},")
  out += ["}", ""]
  return {OUT: "\n".join(out)}
