#!/usr/bin/env python3
"""The API manifest: every function, enum, handle type, struct, callback and constant of include/tinygrad.h as JSON,
with each argument's role, ownership and nullability and each function's error convention, so the language bindings
are generated from one description (scripts/bindgen.py) instead of being copied by hand.

What the manifest says comes from the header alone: its C types, read by the rules the header states in its
"Ownership" paragraph, and the tags in each declaration's comment (@nullable, @len, @takes, @errors). A declaration the
rules can't place (a numeric result without @errors, a `tg_x**` slot array without a length, a tag naming no argument)
stops the script with a message naming it, so the header can't grow a function the bindings would guess about.

usage: api_manifest.py [include/tinygrad.h] [-o bindings/tinygrad_api.json] [--check]
  --check: fail (exit 1) if the file at -o differs from what the header gives (run by the tests)
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = "api_manifest.py"
SCALARS = {"int": "int32", "int64_t": "int64", "uint64_t": "uint64", "size_t": "size", "double": "float64", "uint8_t": "uint8",
           "uint16_t": "uint16", "int32_t": "int32", "uint32_t": "uint32"}
TAG = re.compile(r"@(nullable|len|takes|errors|int)\(([^)]*)\)")


def die(msg):
  sys.stderr.write(f"{PROG}: error: {msg}\n")
  sys.exit(1)


def norm_type(t):
  """'const  tg_tensor *' -> 'const tg_tensor*', 'tg_tensor *const *' -> 'tg_tensor* const*'."""
  t = re.sub(r"\s+", " ", t.strip())
  t = re.sub(r"\s*\*\s*", "* ", t).strip()
  return re.sub(r"\*\s+\*", "**", t)


def split_param(p, where):
  am = re.fullmatch(r"(.*?[\s*])(\w+)\s*(\[\s*(\w*)\s*\])?", p.strip())
  if not am or not am.group(1).strip():
    die(f"{where}: cannot read the parameter or field '{p.strip()}' (every parameter needs a name)")
  return norm_type(am.group(1)), am.group(2), am.group(4)


def tokens(text):
  """The header as a list of (kind, text): 'comment', 'define', 'decl' (up to its ';' or closing brace + ';')."""
  out, i, n, prev_end = [], 0, len(text), 0
  while i < n:
    if text.startswith("/*", i):
      j = text.index("*/", i) + 2
      trailing = bool(out) and out[-1][0] == "decl" and "\n" not in text[prev_end:i]
      out.append(("trailing" if trailing else "comment", text[i + 2:j - 2]))
      i = prev_end = j
    elif text[i] == "#":
      j = i
      while True:
        e = text.find("\n", j)
        e = n if e < 0 else e
        if text[e - 1] != "\\": break
        j = e + 1
      out.append(("define", text[i:e]))
      i = e
    elif text[i].isspace():
      i += 1
    else:
      depth, j = 0, i
      while j < n:
        if text.startswith("/*", j):  # a comment inside a declaration (enum values, struct fields) stays with it
          j = text.index("*/", j) + 2
          continue
        c = text[j]
        if c == "{" and text[i:j].lstrip().startswith("extern"): break  # extern "C" { opens no declaration
        if c == "}" and depth == 0: break  # its closing brace
        depth += c == "{"
        depth -= c == "}"
        if c == ";" and depth == 0: break
        j += 1
      out.append(("decl", text[i:j + 1]))
      i = prev_end = j + 1
  return out


def doc_of(comment):
  lines = [re.sub(r"^\s*\*\s?", "", l).rstrip() for l in comment.strip("\n").split("\n")]
  return TAG.sub("", " ".join(l.strip() for l in lines if l.strip())).replace("  ", " ").strip()


def tags_of(comment, where):
  tags = {"nullable": set(), "len": {}, "takes": set(), "int": set(), "errors": None}
  for kind, body in TAG.findall(comment):
    items = [x.strip() for x in body.split(",") if x.strip()]
    if kind in ("nullable", "takes", "int"):
      tags[kind] |= set(items)
    elif kind == "len":
      for it in items:
        k, _, v = it.partition("=")
        if not v: die(f"{where}: @len({body}) needs name=length entries")
        tags["len"][k.strip()] = int(v) if v.strip().isdigit() else v.strip()
    else:
      if items == ["none"]: tags["errors"] = {"kind": "none"}
      elif items == ["NULL"]: tags["errors"] = {"kind": "null"}
      elif items and re.fullmatch(r"-?\d+", items[0]) and items[1:] in ([], ["last_error"]):
        tags["errors"] = {"kind": "value", "value": int(items[0]), "check_last_error": items[1:] == ["last_error"]}
      else: die(f"{where}: @errors({body}) is not one of @errors(none), @errors(NULL), @errors(N), @errors(N, last_error)")
  return tags


def c_int(expr, consts):
  e = re.sub(r"\b([A-Z_][A-Z0-9_]*)\b", lambda m: str(consts[m.group(1)]) if m.group(1) in consts else m.group(1), expr)
  if not re.fullmatch(r"[\d\s+\-*()x0-9a-fA-F]+", e): raise ValueError(expr)
  return int(eval(e, {"__builtins__": {}}))  # digits and + - * ( ) only


class Header:
  def __init__(self, path):
    try:
      self.text = open(path, encoding="utf-8").read()
    except OSError as e:
      die(f"cannot read {path}: {e}")
    self.path = path
    self.consts, self.constants, self.enums, self.handles, self.structs, self.callbacks, self.externs, self.fns = {}, [], [], [], [], [], [], []
    self.section, self.comment, self.fresh, self.last = "", "", False, None
    self.docs = {}  # name -> (doc, group_doc)
    for kind, body in tokens(self.text):
      if kind == "trailing":
        if self.last: self.docs[self.last] = (doc_of(body), "")
        continue
      if kind == "comment":
        sm = re.match(r"\s*-{4} (.+?) -+\s*$", body)
        if sm: self.section, self.comment = sm.group(1), ""
        else: self.comment = self.comment + "\n" + body if self.fresh else body
        self.fresh = not sm
      elif kind == "define": self.define(body)
      else:
        self.last = self.decl(body)
        self.fresh = False

  def define(self, line):
    m = re.match(r"#define\s+(TG_[A-Z0-9_]+)\s+(.+)$", line.strip())
    if not m or m.group(1) == "TG_API": return
    name, v = m.group(1), m.group(2).strip()
    if v.startswith('"'): val, t = json.loads(v), "string"
    else:
      try: val, t = c_int(v, self.consts), "int"
      except (ValueError, SyntaxError): die(f"cannot evaluate #define {name} {v}")
      self.consts[name] = val
    self.constants.append({"name": name, "type": t, "value": val})

  def decl(self, d):
    name = self.decl_only(d)
    if name: self.docs[name] = (doc_of(self.comment), "") if self.fresh else ("", doc_of(self.comment))
    return name

  def doc(self, name):
    doc, group = self.docs.get(name, ("", ""))
    return {"doc": doc, **({"group_doc": group} if group else {})}

  def decl_only(self, d):
    flat = re.sub(r"\s+", " ", re.sub(r"/\*.*?\*/", " ", d, flags=re.S)).strip()
    if flat.startswith('extern "C"') or flat == "}": return
    if flat.startswith("TG_API"): return self.function(flat[6:].rstrip(";").strip())
    m = re.fullmatch(r"typedef enum (\w+) \{(.*)\} (\w+);", flat)
    if m: return self.enum(m.group(1), d)
    m = re.fullmatch(r"typedef struct (\w+) (\w+);", flat)
    if m: return self.add(self.handles, {"name": m.group(1)})
    m = re.fullmatch(r"typedef struct (\w+) \{(.*)\} (\w+);", flat)
    if m: return self.struct(m.group(1), m.group(2))
    m = re.fullmatch(r"typedef (.+?)\(\*(\w+)\)\((.*)\);", flat)
    if m:
      params = [dict(zip(("type", "name"), split_param(p, m.group(2))[:2])) for p in m.group(3).split(",")]
      return self.add(self.callbacks, {"name": m.group(2), "returns": norm_type(m.group(1)), "params": params})
    m = re.fullmatch(r"struct (\w+);", flat)
    if m: return self.add(self.externs, {"name": m.group(1)})
    die(f"cannot read the declaration '{flat[:120]}' in {self.path}")

  @staticmethod
  def add(table, entry):
    table.append(entry)
    return entry["name"]

  def enum(self, name, d):
    body = d[d.index("{") + 1:d.rindex("}")]
    values, nxt = [], 0
    for m in re.finditer(r"(TG_\w+)(?:\s*=\s*([^,/]+?))?\s*,?\s*(?:/\*(.*?)\*/)?\s*(?=TG_\w+|$)", body, flags=re.S):
      v = c_int(m.group(2), self.consts) if m.group(2) else nxt
      self.consts[m.group(1)] = v
      nxt = v + 1
      if m.group(1).endswith("_MAX_ENUM"): continue  # forces a 32-bit enum; not a value
      values.append({"name": m.group(1), "value": v, "doc": doc_of(m.group(3) or "")})
    return self.add(self.enums, {"name": name, "values": values})

  def struct(self, name, body):
    fields = []
    for stmt in [s.strip() for s in body.split(";") if s.strip()]:
      first = split_param(stmt.split(",")[0], name)
      base = re.sub(r"\*+$", "", first[0]).strip()
      for k, part in enumerate(stmt.split(",")):
        t, n, count = split_param(part if k == 0 else base + " " + part.strip(), name)
        f = {"name": n, "type": t}
        if count: f["count"] = c_int(count, self.consts)
        fields.append(f)
    return self.add(self.structs, {"name": name, "fields": fields, "sized": bool(fields) and fields[0]["name"] == "struct_size"})

  def function(self, decl):
    pm = re.fullmatch(r"(.+?)\b(tg_\w+)\s*\((.*)\)", decl)
    if not pm: die(f"cannot parse the declaration 'TG_API {decl}'")
    ret, name, plist = norm_type(pm.group(1)), pm.group(2), pm.group(3).strip()
    params = [] if plist in ("", "void") else [split_param(p, name)[:2] for p in plist.split(",")]
    self.fns.append((ret, name, params, self.comment, self.section))
    return name


class Manifest:
  def __init__(self, h):
    self.h = h
    self.handle_names = {x["name"] for x in h.handles}
    self.struct_names = {x["name"] for x in h.structs}
    self.enum_names = {x["name"] for x in h.enums}
    self.callback_names = {x["name"] for x in h.callbacks}
    self.extern_names = {"struct " + x["name"] for x in h.externs}

  def base(self, t):
    """'const tg_tensor* const*' -> ('tg_tensor', pointer depth)."""
    core = re.sub(r"\bconst\b", "", t).replace(" ", "")
    return core.rstrip("*"), core.count("*")

  def value_kind(self, t):
    if t in SCALARS: return SCALARS[t]
    if t in self.enum_names: return "enum"
    return None

  def function(self, ret, name, params, comment, section):
    where = f"{name} (include/tinygrad.h)"
    tags = tags_of(comment, where)
    names = [n for _, n in params]
    for k in ("nullable", "takes", "int"):
      for n in tags[k] - set(names): self.check_group_tag(k, n, name, comment)
    for n in set(tags["len"]) - set(names): self.check_group_tag("len", n, name, comment)
    out, used_as_len = [], {}
    for i, (t, n) in enumerate(params):
      nxt = params[i + 1] if i + 1 < len(params) else None
      length = tags["len"].get(n)
      p = {"name": n, "type": t}
      b, depth = self.base(t)
      if length is None and nxt and nxt[0] == "size_t" and "*" in t and not (b in self.handle_names and depth == 1):
        length = nxt[1]
      const = t.startswith("const ")
      if name.endswith("_release") and i == 0:
        p.update(kind="handle", handle=b, ownership="taken", nullable=True)
      elif b in self.handle_names and depth == 1:
        p.update(kind="handle", handle=b, ownership="taken" if n in tags["takes"] else "borrowed", nullable=n in tags["nullable"])
      elif b in self.handle_names and depth == 2 and "* const*" in t:
        p.update(kind="handle_array", handle=b, ownership="borrowed")
      elif b in self.handle_names and depth == 2:
        if length is None: die(f"{where}: the slot array '{n}' needs a length: a size_t argument after it or @len({n}=N)")
        p.update(kind="handle_out", handle=b, ownership="new_reference", nullable=n in tags["nullable"])
      elif t == "const char*":
        p.update(kind="string", ownership="borrowed", nullable=n in tags["nullable"] or n == "device")
      elif t == "const char* const*":
        p.update(kind="string_array", ownership="borrowed")
      elif t == "char*":
        p.update(kind="chars_out", ownership="caller_owned")
      elif t == "const void*":
        p.update(kind="bytes_in", ownership="borrowed")
      elif t == "void*" and n == "userdata":
        p.update(kind="userdata", ownership="borrowed", nullable=True)
      elif t == "void*":
        p.update(kind="bytes_out", ownership="caller_owned")
      elif t in self.callback_names:
        p.update(kind="callback", callback=t)
      elif self.value_kind(t):
        p.update(kind="value", value=self.value_kind(t))
        if t in self.enum_names: p["enum"] = t
        if t == "int" and n not in tags["int"]: p["flag"] = True  # 0 or nonzero: a bool in the bindings
      elif depth == 1 and self.value_kind(b) and const:
        p.update(kind="array_in", elem=b, ownership="borrowed")
      elif depth == 1 and self.value_kind(b):
        p.update(kind="array_out" if length is not None else "value_out", elem=b, ownership="caller_owned", nullable=n in tags["nullable"])
      elif depth == 1 and b in self.struct_names:
        p.update(kind=("struct_in" if const else "struct_out") if length is None else "struct_array_in", struct=b,
                 ownership="borrowed" if const else "caller_owned", nullable=n in tags["nullable"])
      elif t.rstrip("*") in self.extern_names:
        p.update(kind="extern", extern=t[len("struct "):].rstrip("*"), ownership="taken" if n in tags["takes"] else "borrowed",
                 nullable=n in tags["nullable"])
      else:
        die(f"{where}: no rule for the parameter '{t} {n}': extend {PROG} and say the rule in the header's Ownership paragraph")
      if length is not None and p["kind"] not in ("value", "value_out"):
        p["length"] = length
        if isinstance(length, str):
          if length not in names: die(f"{where}: @len({n}={length}) names no argument")
          used_as_len.setdefault(length, []).append(n)
      if p["kind"] in ("array_in", "handle_array", "string_array", "bytes_in", "struct_array_in", "array_out", "handle_out"):
        p.setdefault("nullable", False)
        if p["kind"] in ("array_in", "handle_array", "string_array", "struct_array_in"): p["nullable"] = True  # NULL with a count of 0
      out.append(p)
    for p in out:
      if p["name"] in used_as_len:
        if p["type"] != "size_t": die(f"{where}: the length '{p['name']}' of {used_as_len[p['name']]} must be a size_t")
        p.update(kind="length", of=used_as_len[p["name"]])
    return {"name": name, "section": section, "returns": self.result(ret, name, tags, where), "params": out, **self.h.doc(name)}

  def check_group_tag(self, kind, n, fn, comment):
    # a tag in a comment that covers several declarations must name an argument of at least one of them
    if not any(n in [pn for _, pn in params] for _, f, params, c, _ in self.h.fns if c is comment):
      die(f"{fn} (include/tinygrad.h): @{kind}({n}) names no argument of the declarations its comment covers")

  def result(self, ret, name, tags, where):
    b, depth = self.base(ret)
    r = {"type": ret}
    err = tags["errors"]
    if ret == "void": r.update(kind="void")
    elif b in self.handle_names and depth == 1: r.update(kind="handle", handle=b, ownership="new_reference")
    elif ret == "const char*": r.update(kind="string", ownership="borrowed")
    elif ret == "tg_status": r.update(kind="status")
    elif ret.rstrip("*") in self.extern_names: r.update(kind="extern", extern=b.replace("struct", "").strip(), ownership="caller_owned")
    elif self.value_kind(ret): r.update(kind="value", value=self.value_kind(ret))
    else: die(f"{where}: no rule for the result type '{ret}'")
    if err is None:
      if r["kind"] in ("handle", "string", "extern"): err = {"kind": "null"}
      elif r["kind"] == "status": err = {"kind": "status"}
      elif r["kind"] == "void": err = {"kind": "none"}
      else: die(f"{where}: a {ret} result needs @errors(...) in its comment: @errors(-1), @errors(0, last_error) or @errors(none)")
    if ret == "tg_status" and err["kind"] not in ("status", "none"): die(f"{where}: a tg_status result is a status or @errors(none)")
    r["errors"] = err
    return r

  def build(self):
    h = self.h
    fns = [self.function(*f) for f in h.fns]
    names = {f["name"] for f in fns}
    for x in h.handles:
      release, retain = x["name"] + "_release", x["name"] + "_retain"
      if release not in names: die(f"handle {x['name']} has no {release}")
      x["release"], x["retain"] = release, retain if retain in names else None
    for table in (h.enums, h.handles, h.structs, h.callbacks, h.externs):
      for x in table: x.update(h.doc(x["name"]))
    return {
        "manifest_version": 1,
        "library": "tinygrad",
        "soname": f"libtinygrad.so.{h.consts['TG_VERSION_MAJOR']}",
        "version": next(c["value"] for c in h.constants if c["name"] == "TG_VERSION_STRING"),
        "conventions": {
            "errors": "a function whose result is an error value (errors.kind: null, value, status) has failed; the code and "
                      "message are then tg_last_error() and tg_last_error_message() on the same thread. check_last_error: the "
                      "value is also a valid result, so clear the error first and read tg_last_error() after the call.",
            "ownership": "borrowed: the callee does not keep the caller's reference; new_reference: the caller must release it; "
                         "taken: the callee takes the caller's reference; caller_owned: memory the caller provides (an argument) "
                         "or must free as the declaration says (a result).",
            "length": "an array argument's element count is the argument named by `length` (kind length, derived from the "
                      "array by bindings) or a constant; an array may be NULL when its count is 0.",
        },
        "constants": h.constants,
        "enums": h.enums,
        "handles": h.handles,
        "structs": h.structs,
        "callbacks": h.callbacks,
        "externs": h.externs,
        "functions": fns,
    }


def main():
  ap = argparse.ArgumentParser(description="Write the API manifest of include/tinygrad.h")
  ap.add_argument("header", nargs="?", default=os.path.join(ROOT, "include", "tinygrad.h"))
  ap.add_argument("-o", "--output", default=os.path.join(ROOT, "bindings", "tinygrad_api.json"))
  ap.add_argument("--check", action="store_true", help="fail if the manifest at -o is not what the header gives")
  a = ap.parse_args()
  text = json.dumps(Manifest(Header(a.header)).build(), indent=1) + "\n"
  if a.check:
    try: old = open(a.output, encoding="utf-8").read()
    except OSError: old = ""
    if old != text:
      die(f"{a.output} does not match {a.header}: run scripts/{PROG} (and scripts/bindgen.py) and commit the result")
    return
  with open(a.output, "w", encoding="utf-8") as f: f.write(text)
  print(f"{PROG}: {a.output}: {len(json.loads(text)['functions'])} functions")


if __name__ == "__main__":
  main()
