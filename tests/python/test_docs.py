"""docs/C-API.md's function index names every function the header declares, and nothing else: it can't drift."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_c_api_index_matches_header():
  header = re.sub(r"/\*.*?\*/", " ", (ROOT / "include" / "tinygrad.h").read_text(), flags=re.S)
  declared = set(re.findall(r"\bTG_API\b[^;]*?\b(tg_\w+)\s*\(", header))
  index = (ROOT / "docs" / "C-API.md").read_text().split("## Function index", 1)[1]
  listed = set(re.findall(r"`(tg_\w+)`", index))
  assert declared, "no TG_API declarations found"
  assert not declared - listed, f"declared but missing from docs/C-API.md's index: {sorted(declared - listed)}"
  assert not listed - declared, f"in docs/C-API.md's index but not declared: {sorted(listed - declared)}"


def test_c_api_examples_compile(tmp_path):
  """Every ```c example in docs/C-API.md compiles as C99 against the header, warnings as errors."""
  import subprocess
  text = (ROOT / "docs" / "C-API.md").read_text()
  blocks = [b for b in re.findall(r"```c\n(.*?)```", text, flags=re.S) if "#include <tinygrad.h>" in b]
  assert len(blocks) >= 8
  for i, b in enumerate(blocks):
    src = tmp_path / f"example{i}.c"
    src.write_text(b)
    r = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function", "-c", str(src), "-I", str(ROOT / "include"),
                        "-o", str(tmp_path / f"example{i}.o")], capture_output=True, text=True)
    assert r.returncode == 0, f"example {i} of docs/C-API.md does not compile:\n{b}\n{r.stderr}"


def test_c_api_version_block_is_the_headers():
  """docs/C-API.md's Version section shows the header's version macros as they are."""
  header = (ROOT / "include" / "tinygrad.h").read_text()
  doc = (ROOT / "docs" / "C-API.md").read_text().split("## Version", 1)[1]
  shown = re.findall(r"^#define TG_VERSION_\w+ .*$", doc.split("```c", 1)[1].split("```", 1)[0], flags=re.M)
  assert shown and all(line in header.splitlines() for line in shown), shown
