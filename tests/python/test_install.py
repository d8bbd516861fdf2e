"""bindings/python installs offline with the machine's setuptools (plain pip install, --no-index) into a
--target directory, and the installed package finds the library through $TINYGRAD_LIB, or a libtinygrad.so shipped
inside the package, and computes with it from a fresh process outside the repository."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIB = Path(os.environ.get("TINYGRAD_LIB", str(ROOT / "build" / "libtinygrad.so"))).resolve()
PROG = ("import tinygrad_c as t, numpy as np; x = t.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3));"
        "print(t.__file__); print(t.library_path); print(((x * 2 + 1)[1, ::-1]).tolist(), x.sum().item())")


def _install(tmp_path: Path, with_lib: bool) -> Path:
  src, target = tmp_path / "src", tmp_path / "site"
  shutil.copytree(ROOT / "bindings" / "python", src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
  if with_lib: shutil.copy2(LIB, src / "tinygrad_c" / "libtinygrad.so")
  env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
  # --no-deps: numpy is the system's, which an empty --target directory can't see
  r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir", "--target",
                      str(target), str(src)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
  assert r.returncode == 0, r.stdout + r.stderr
  assert (target / "tinygrad_c" / "__init__.py").exists()
  return target


def _run(target: Path, cwd: Path, lib_env):
  env = {k: v for k, v in os.environ.items() if k not in ("TINYGRAD_LIB", "PYTHONPATH")}
  env["PYTHONPATH"] = str(target)
  if lib_env is not None: env["TINYGRAD_LIB"] = lib_env
  r = subprocess.run([sys.executable, "-c", PROG], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
  assert r.returncode == 0, r.stdout + r.stderr
  return r.stdout.splitlines()


def test_pip_install_offline_with_tinygrad_lib(tmp_path):
  target = _install(tmp_path, with_lib=False)
  assert not (target / "tinygrad_c" / "libtinygrad.so").exists()
  file, lib, result = _run(target, tmp_path, str(LIB))
  assert Path(file).resolve() == (target / "tinygrad_c" / "__init__.py").resolve()  # the installed copy, not the tree's
  assert Path(lib).resolve() == LIB
  assert result == "[11.0, 9.0, 7.0] 15.0"


def test_pip_install_with_the_library_inside_the_package(tmp_path):
  target = _install(tmp_path, with_lib=True)
  shipped = target / "tinygrad_c" / "libtinygrad.so"
  assert shipped.exists()
  file, lib, result = _run(target, tmp_path, None)  # no TINYGRAD_LIB: the copy beside __init__.py is found first
  assert Path(lib).resolve() == shipped.resolve()
  assert result == "[11.0, 9.0, 7.0] 15.0"


def test_missing_tinygrad_lib_is_an_error(tmp_path):
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  env.update(PYTHONPATH=str(ROOT / "bindings" / "python"), TINYGRAD_LIB=str(tmp_path / "nope.so"))
  r = subprocess.run([sys.executable, "-c", "import tinygrad_c"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
  assert r.returncode != 0 and "TINYGRAD_LIB" in r.stderr
