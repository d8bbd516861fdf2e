"""The Julia binding without a Julia toolchain: every manifest function has a ccall wrapper in LibTinygrad.jl with the
right symbol, argument count and Julia types (by a mapping written here, apart from the generator's), structs and enums
match, the checked methods and hand-written code call only functions that exist with the right number of arguments,
and every Julia file's blocks are closed."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JL = ROOT / "bindings" / "julia"
M = json.loads((ROOT / "bindings" / "tinygrad_api.json").read_text(encoding="utf-8"))
FUNCS = {f["name"]: f for f in M["functions"]}
STRUCTS = {s["name"] for s in M["structs"]}
VALUE = {"int32": "Cint", "int64": "Int64", "uint64": "UInt64", "size": "Csize_t", "float64": "Cdouble", "enum": "Int32"}
ELEM = {"int64_t": "Int64", "tg_dtype": "Int32", "double": "Cdouble", "int": "Cint"}


def expected_param(p):
  k = p["kind"]
  if k == "handle": return "Ptr{Cvoid}"
  if k in ("handle_array", "handle_out"): return "Ptr{Ptr{Cvoid}}"
  if k == "string": return "Ptr{UInt8}" if p.get("nullable") else "Cstring"
  if k == "string_array": return "Ptr{Ptr{UInt8}}"
  if k == "chars_out": return "Ptr{UInt8}"
  if k in ("bytes_in", "bytes_out", "userdata", "callback", "extern"): return "Ptr{Cvoid}"
  if k == "value": return VALUE[p["value"]]
  if k in ("value_out", "array_in", "array_out"): return f"Ptr{{{ELEM[p['elem']]}}}"
  if k in ("struct_in", "struct_out", "struct_array_in"): return f"Ptr{{{p['struct']}}}"
  if k == "length": return "Csize_t"
  raise AssertionError(f"param kind {k} unknown to this test")


def expected_return(r):
  return {"handle": "Ptr{Cvoid}", "status": "Int32", "string": "Ptr{UInt8}", "void": "Cvoid", "extern": "Ptr{Cvoid}"}.get(
    r["kind"]) or VALUE[r["value"]]


def split_top(s):
  """'a, f(b, c), {d, e}' -> ['a', 'f(b, c)', '{d, e}']"""
  out, depth, cur = [], 0, ""
  for ch in s:
    if ch in "({[": depth += 1
    if ch in ")}]": depth -= 1
    if ch == "," and depth == 0: out.append(cur.strip()); cur = ""
    else: cur += ch
  return [x for x in out + [cur.strip()] if x]


def code(path):
  """Julia source without comments, docstrings and string literals."""
  t = path.read_text(encoding="utf-8")
  t = re.sub(r'"""(?:\\.|[^\\])*?"""', '""', t, flags=re.S)
  t = re.sub(r'"(?:\\.|[^"\\])*"', '""', t)
  return re.sub(r"#[^\n]*", "", t)


WRAPPER = re.compile(r"^(tg_\w+)\(([^)]*)\) = ccall\(\(:(\w+), libtinygrad\), (\S+), \((.*?),?\)((?:, \w+)*)\)$", re.M)


def wrappers():
  return {m.group(1): m for m in WRAPPER.finditer((JL / "src" / "LibTinygrad.jl").read_text(encoding="utf-8"))}


def test_every_function_has_a_ccall_wrapper():
  w = wrappers()
  assert sorted(set(FUNCS) - set(w)) == [], "functions without a wrapper"
  assert sorted(set(w) - set(FUNCS)) == [], "wrappers of functions the manifest lacks"


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_wrapper_types(name):
  f, m = FUNCS[name], wrappers()[name]
  args, sym, ret, types, passed = m.group(2), m.group(3), m.group(4), split_top(m.group(5)), m.group(6)
  assert sym == name
  assert ret == expected_return(f["returns"])
  assert types == [expected_param(p) for p in f["params"]]
  names = [a.strip() for a in args.split(",") if a.strip()]
  assert len(names) == len(f["params"]) and [x.strip() for x in passed.split(",") if x.strip()] == names


def test_structs_and_enums():
  src = (JL / "src" / "LibTinygrad.jl").read_text(encoding="utf-8")
  for s in M["structs"]:
    body = re.search(rf"^struct {s['name']}\n(.*?)^end$", src, re.S | re.M)
    assert body, s["name"]
    fields = [l.strip().split("::") for l in body.group(1).strip().splitlines()]
    assert [f[0].rstrip("_") for f in fields] == [f["name"] for f in s["fields"]]
    for (_, t), fl in zip(fields, s["fields"]):
      base = fl["type"].replace("const ", "")
      want = {"size_t": "Csize_t", "double": "Cdouble", "int": "Cint", "int64_t": "Int64", "uint64_t": "UInt64",
              "char*": "Ptr{UInt8}", "int64_t*": "Ptr{Int64}"}.get(base) or ("Ptr{Cvoid}" if base.endswith("*") else "Int32")
      assert t == (f"NTuple{{{fl['count']}, {want}}}" if fl.get("count") else want), (s["name"], fl)
  for e in M["enums"]:
    for v in e["values"]:
      assert re.search(rf"^const {v['name']} = Int32\({v['value']}\)", src, re.M), v["name"]
  for c in M["constants"]:
    assert re.search(rf"^const {c['name']} = ", src, re.M), c["name"]
  assert 'const libtinygrad = get(ENV, "TINYGRAD_LIB", "libtinygrad")' in src


@pytest.mark.parametrize("file", ["src/ops.jl", "src/Tinygrad.jl", "examples/mlp.jl", "test/runtests.jl"])
def test_calls_name_real_functions_with_their_arity(file):
  src = code(JL / file)
  calls = re.findall(r"\bL\.(tg_\w+)\(", src)
  assert calls or file != "src/ops.jl"
  for m in re.finditer(r"\bL\.(tg_\w+)\(", src):
    name = m.group(1)
    assert name in FUNCS, f"{file}: L.{name} is not in the manifest"
    depth, i = 1, m.end()  # the argument list up to its closing parenthesis
    while depth:
      depth += {"(": 1, ")": -1}.get(src[i], 0)
      i += 1
    assert len(split_top(src[m.end():i - 1])) == len(FUNCS[name]["params"]), f"{file}: L.{name} arity"


@pytest.mark.parametrize("file", ["src/LibTinygrad.jl", "src/ops.jl", "src/Tinygrad.jl", "examples/mlp.jl", "test/runtests.jl"])
def test_blocks_are_closed(file):
  """Openers (at a statement's start, or begin/let/quote/do anywhere) against `end`s; the files are written so that
  comprehension `for`s and `a[end]` don't occur where this would miscount them."""
  opens = ends = 0
  for line in code(JL / file).splitlines():
    s = line.strip()
    opens += bool(re.match(r"(@\w+ )?(mutable struct|struct|function|if|for|while|try|module|macro)\b", s))
    opens += len(re.findall(r"\b(begin|let|quote|do)\b", s))
    opens += bool(re.match(r"\w+ = (if|try)\b", s)) + bool(re.search(r"\breturn (if|try)\b", s))
    ends += len(re.findall(r"\bend\b", s))
  assert opens == ends, f"{file}: {opens} blocks opened, {ends} closed"


def test_generated_files_are_current():
  r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bindgen.py"), "--check", "julia"], capture_output=True, text=True)
  assert r.returncode == 0, r.stderr
