"""The API manifest and the bindings generated from it are what include/tinygrad.h gives, and the Python binding reaches
every C function with the manifest's signature."""
import ctypes
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = json.loads((ROOT / "bindings" / "tinygrad_api.json").read_text())


@pytest.mark.parametrize("cmd", [["scripts/api_manifest.py", "--check"], ["scripts/bindgen.py", "--check"]])
def test_generated_files_are_current(cmd):
  r = subprocess.run([sys.executable, *cmd], cwd=ROOT, capture_output=True, text=True)
  assert r.returncode == 0, r.stderr


def test_manifest_covers_the_header():
  header = (ROOT / "include" / "tinygrad.h").read_text()
  import re
  declared = set(re.findall(r"^TG_API [^(]*?\b(tg_\w+)\(", header, flags=re.M))
  assert declared == {f["name"] for f in MANIFEST["functions"]}
  for f in MANIFEST["functions"]:
    for p in f["params"]:
      if isinstance(p.get("length"), str):  # a length names a size_t argument of the same function
        assert any(q["name"] == p["length"] and q["kind"] == "length" for q in f["params"]), (f["name"], p)
  handles = {h["name"]: h for h in MANIFEST["handles"]}
  assert set(handles) == {"tg_tensor", "tg_expr", "tg_jit", "tg_plan", "tg_module", "tg_optimizer", "tg_state", "tg_uop", "tg_onnx_model", "tg_llm", "tg_comm"}
  assert all(h["release"] for h in handles.values())


def test_manifest_rejects_an_untagged_numeric_result(tmp_path):
  h = tmp_path / "h.h"
  h.write_text((ROOT / "include" / "tinygrad.h").read_text().replace(
    "TG_API void tg_counters_reset(void);", "TG_API void tg_counters_reset(void);\nTG_API int64_t tg_new_count(void);"))
  r = subprocess.run([sys.executable, "scripts/api_manifest.py", str(h), "-o", str(tmp_path / "m.json")], cwd=ROOT,
                     capture_output=True, text=True)
  assert r.returncode != 0 and "tg_new_count" in r.stderr and "@errors" in r.stderr


def test_python_binding_reaches_every_function():
  import tinygrad_c
  from tinygrad_c import _capi
  assert set(_capi.SIGNATURES) == {f["name"] for f in MANIFEST["functions"]}
  for name, (res, args) in _capi.SIGNATURES.items():
    fn = getattr(tinygrad_c.C, name[3:])
    assert isinstance(fn, ctypes._CFuncPtr), f"{name} is not bound from the library"
    assert len(fn.argtypes) == len(args), name


def test_package_versions_are_the_headers():
  """The version is written once, in include/tinygrad.h (CMake reads it from there too); the binding packages whose
  formats can't read it spell it out, and must say the same."""
  import re
  header = (ROOT / "include" / "tinygrad.h").read_text()
  version = ".".join(re.search(rf"^#define TG_VERSION_{part} (\d+)$", header, flags=re.M).group(1) for part in ("MAJOR", "MINOR", "PATCH"))
  assert f'#define TG_VERSION_STRING "{version}"' in header
  stated = {f: re.findall(r'^version = "([^"]+)"$', (ROOT / f).read_text(), flags=re.M) for f in
            ["bindings/rust/tinygrad/Cargo.toml", "bindings/rust/tinygrad-sys/Cargo.toml", "bindings/rust/Cargo.lock", "bindings/julia/Project.toml"]}
  assert all(stated.values()) and {f: v for f, v in stated.items() if set(v) != {version}} == {}, f"not the header's {version}: {stated}"
  assert [c["value"] for c in MANIFEST["constants"] if c["name"] == "TG_VERSION_STRING"] == [version]
