"""The ONNX example programs run as a user runs them: examples/c/onnx_run.c on a model exported from PyTorch with random
and with .npy inputs (its printed values are PyTorch's), and examples/c/onnx_classify.c on a PPM image (its top-5 is
PyTorch's on the same preprocessing); both refuse bad files with a message."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from onnx_models import export  # noqa: E402

BUILD = Path(os.environ.get("TINYGRAD_LIB", "build/libtinygrad.so")).resolve().parent
RUN, CLASSIFY = BUILD / "example_onnx_run", BUILD / "example_onnx_classify"


@pytest.fixture(autouse=True)
def _built():
  for exe in (RUN, CLASSIFY):
    if not exe.exists(): pytest.fail(f"{exe} is not built: the examples build with the library (cmake --build {BUILD})")


def _mlp(tmp_path):
  torch.manual_seed(0)
  m = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
  p = tmp_path / "mlp.onnx"
  p.write_bytes(export(m, (torch.randn(2, 6),), ["x"], dynamic_axes={"x": {0: "batch"}}))
  return m, p


def test_onnx_run_prints_the_model_and_pytorchs_values(tmp_path):
  m, p = _mlp(tmp_path)
  x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
  np.save(tmp_path / "x.npy", x)
  r = subprocess.run([str(RUN), str(p), str(tmp_path / "x.npy")], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stdout + r.stderr
  assert re.search(r"in\s+x\s+float32 \(batch, 6\)", r.stdout), r.stdout
  line = re.search(r"^  \S+: \(4, 3\) = (.*?)( \.\.\.)?$", r.stdout, re.M)
  assert line, r.stdout
  with torch.no_grad(): want = m(torch.from_numpy(x)).numpy().ravel()[:5]
  np.testing.assert_allclose([float(v) for v in line.group(1).split()], want, rtol=1e-4, atol=1e-5)
  assert re.search(r"ms per run", r.stdout)
  # random inputs: symbolic dims taken as 1
  r = subprocess.run([str(RUN), str(p)], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0 and re.search(r"^  \S+: \(1, 3\)", r.stdout, re.M), r.stdout + r.stderr


def test_onnx_run_refuses_bad_files(tmp_path):
  bad = tmp_path / "bad.onnx"
  bad.write_bytes(b"\x3a\xff\xff\xff\xff\x0f")  # a graph field longer than the file
  r = subprocess.run([str(RUN), str(bad)], capture_output=True, text=True, timeout=60)
  assert r.returncode == 1 and "onnx_run: load:" in r.stderr and "past the end" in r.stderr
  _, p = _mlp(tmp_path)
  (tmp_path / "x.npy").write_bytes(b"not numpy")
  r = subprocess.run([str(RUN), str(p), str(tmp_path / "x.npy")], capture_output=True, text=True, timeout=60)
  assert r.returncode == 1 and "is not a .npy file" in r.stderr


def test_onnx_classify_top5_is_pytorchs(tmp_path):
  torch.manual_seed(0)
  model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(8, 20)).eval()
  p = tmp_path / "cls.onnx"
  p.write_bytes(export(model, (torch.randn(1, 3, 32, 32),), ["image"]))
  img = np.random.default_rng(1).integers(0, 256, (40, 50, 3), dtype=np.uint8)
  (tmp_path / "img.ppm").write_bytes(b"P6\n# a comment\n50 40\n255\n" + img.tobytes())
  (tmp_path / "labels.txt").write_text("".join(f"class{i}\n" for i in range(20)))
  r = subprocess.run([str(CLASSIFY), str(p), str(tmp_path / "img.ppm"), str(tmp_path / "labels.txt")], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stdout + r.stderr
  rows = re.findall(r"^\s+(\d+)\s+([0-9.]+)%\s+(\S*)$", r.stdout, re.M)
  assert len(rows) == 5, r.stdout
  x = torch.from_numpy(img).permute(2, 0, 1).float().div(255).unsqueeze(0)
  x = torch.nn.functional.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
  x = (x - torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)) / torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
  with torch.no_grad(): prob = torch.softmax(model(x)[0], 0)
  top = torch.topk(prob, 5)
  assert [int(i) for i, _, _ in rows] == top.indices.tolist()
  np.testing.assert_allclose([float(v) for _, v, _ in rows], (top.values * 100).tolist(), atol=0.01)
  assert [name for _, _, name in rows] == [f"class{i}" for i in top.indices.tolist()]
  (tmp_path / "bad.ppm").write_bytes(b"P6\n50 40\n255\n" + b"\0" * 10)
  r = subprocess.run([str(CLASSIFY), str(p), str(tmp_path / "bad.ppm")], capture_output=True, text=True, timeout=60)
  assert r.returncode == 1 and "not a binary 8-bit PPM" in r.stderr
