"""The C example programs run as a user runs them: examples/c/train_cnn.c (tinygrad's beautiful_mnist convnet trained
from C under a TinyJit) must learn in a few steps, evaluate the test set within 2 GB, and refuse bad arguments."""
import os
import re
import subprocess
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("TINYGRAD_LIB", "build/libtinygrad.so")).resolve().parent
EXE = BUILD / "example_train_cnn"


@pytest.fixture(autouse=True)
def _built():
  if not EXE.exists(): pytest.fail(f"{EXE} is not built: the examples build with the library (cmake --build {BUILD})")


def test_train_cnn_learns_in_a_few_steps():
  # 40 steps of batch 64 with Adam: about 70% on the 10,000 test images (chance is 10%)
  r = subprocess.run([str(EXE), "40", "", "64"], capture_output=True, text=True, timeout=600)
  assert r.returncode == 0, r.stdout + r.stderr
  assert "trained 40 steps of batch 64" in r.stdout
  acc = float(re.search(r"^test accuracy: ([0-9.]+)$", r.stdout, re.M).group(1))
  assert 0.6 <= acc <= 1.0, r.stdout


def test_train_cnn_evaluates_all_test_images_in_one_graph_under_2_gb():
  # 0 steps: the untrained model's eval over the 10,000 test images, planned first; the planner's peak for the
  # intermediates (the activations, no materialized windows) stays under 2 GB
  r = subprocess.run([str(EXE), "0"], capture_output=True, text=True, timeout=600)
  assert r.returncode == 0, r.stdout + r.stderr
  m = re.search(r"^eval: 10000 test images in ([0-9.]+) s .* planned peak memory ([0-9.]+) MB$", r.stdout, re.M)
  assert m, r.stdout
  assert 0 < float(m.group(2)) < 2048, r.stdout
  acc = float(re.search(r"^test accuracy: ([0-9.]+) \(untrained\)$", r.stdout, re.M).group(1))
  assert 0.0 <= acc <= 1.0


def test_train_cnn_refuses_bad_arguments():
  r = subprocess.run([str(EXE), "-1"], capture_output=True, text=True, timeout=60)
  assert r.returncode == 2 and "usage" in r.stderr
  r = subprocess.run([str(EXE), "1", "/nonexistent/dir"], capture_output=True, text=True, timeout=60)
  assert r.returncode == 1 and "tg_dataset_mnist" in r.stderr


def test_export_fashion_mnist_runs_without_the_library(tmp_path):
  # make run's last steps: export the classifier (random weights: "-"), build the exported C with the system compiler
  # alone, and run it on the 10,000 test images; it exits 1 if any prediction differs from the library's
  exe = BUILD / "example_export_fashion_mnist"
  r = subprocess.run([str(exe), "-", str(tmp_path)], capture_output=True, text=True, timeout=600)
  assert r.returncode == 0, r.stdout + r.stderr
  lib = re.search(r"library \(tg_jit replay, one image per call\): test accuracy ([0-9.]+), ([0-9.]+) us per image", r.stdout)
  assert lib, r.stdout
  src = Path(__file__).resolve().parents[2] / "examples" / "c" / "fashion_exported.c"
  prog = tmp_path / "prog"
  b = subprocess.run(["cc", "-O2", "-std=c99", "-march=native", f"-I{tmp_path}", str(src), str(tmp_path / "fashion.c"),
                      str(tmp_path / "fashion_weights.c"), "-lm", "-o", str(prog)], capture_output=True, text=True)
  assert b.returncode == 0, b.stderr
  nm = subprocess.run(["nm", "-u", str(prog)], capture_output=True, text=True).stdout
  assert "tg_" not in nm  # nothing from libtinygrad
  p = subprocess.run([str(prog), str(tmp_path)], capture_output=True, text=True, timeout=600)
  assert p.returncode == 0, p.stdout + p.stderr
  assert f"library test accuracy:  {float(lib.group(1)):.4f}" in p.stdout
  assert f"exported test accuracy: {float(lib.group(1)):.4f} (0 of 10000 predictions differ" in p.stdout
