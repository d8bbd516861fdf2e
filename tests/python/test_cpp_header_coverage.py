"""include/tinygrad.hpp covers the C API's tensor functions: every tg_tensor_* of the manifest is called in the header's
code (comments don't count), or is listed in EXCLUDED with the reason."""
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXCLUDED = {}  # name -> why the C++ layer doesn't call it (none today)


def _code():
  text = (ROOT / "include" / "tinygrad.hpp").read_text(encoding="utf-8")
  return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def _tensor_functions():
  m = json.loads((ROOT / "bindings" / "tinygrad_api.json").read_text(encoding="utf-8"))
  return {f["name"] for f in m["functions"] if f["name"].startswith("tg_tensor_")}


def test_every_tensor_function_is_wrapped():
  code = _code()
  missing = sorted(n for n in _tensor_functions() - set(EXCLUDED) if not re.search(rf"\b{n}\b", code))
  assert not missing, f"tg_tensor_* functions neither called in include/tinygrad.hpp nor excluded: {missing}"


def test_exclusions_are_current():
  fns, code = _tensor_functions(), _code()
  stale = sorted(n for n in EXCLUDED if n not in fns or re.search(rf"\b{n}\b", code))
  assert not stale, f"EXCLUDED names that are gone from the manifest or wrapped after all: {stale}"
  assert all(EXCLUDED.values()), "every exclusion states its reason"


def test_header_calls_only_declared_functions():
  """A tg_ name the header calls but the C API lacks would only fail in a user's build: catch it here."""
  m = json.loads((ROOT / "bindings" / "tinygrad_api.json").read_text(encoding="utf-8"))
  known = {f["name"] for f in m["functions"]}
  called = set(re.findall(r"\b(tg_[a-z0-9_]+)\s*\(", _code())) | set(re.findall(r"\b(tg_tensor_[a-z0-9_]+)\b", _code()))
  assert not sorted(called - known)
