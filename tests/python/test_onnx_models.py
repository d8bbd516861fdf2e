"""Real models exported from PyTorch (torch.onnx.export, random weights) and run through the ONNX importer: ResNet-18,
MobileNetV2, a 4-layer BERT-like encoder and an LSTM. Outputs agree with PyTorch's and with ONNX Runtime's on random
inputs within 1e-4 relative error (of the output's largest magnitude); a repeated run replays the capture and gives the
same bits."""
import os
import sys
import tempfile

import numpy as np
import pytest
import torch

from tinygrad_c import Tensor
from tinygrad_c.nn.onnx import OnnxRunner

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import ort_ref  # noqa: E402
from onnx_models import Encoder, Lstm, export  # noqa: E402


def rel_err(g, w): return np.abs(g.astype(np.float64) - w).max() / max(np.abs(w).max(), 1e-6)


def check(model, args, names, dynamic_axes=None, rtol=1e-4):
  torch.manual_seed(0)
  data = export(model, args, names, dynamic_axes)
  with torch.no_grad():
    want = model(*args)
  want = [w.numpy() for w in (want if isinstance(want, (tuple, list)) else (want,))]
  runner = OnnxRunner(data)
  feeds = {n: Tensor(a.numpy()) for n, a in zip(names, args)}
  got = [t.numpy() for t in runner(feeds).values()]
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.shape == w.shape
    assert rel_err(g, w) < rtol, f"relative error {rel_err(g, w):.3g} against PyTorch"
  assert ort_ref.available(), "ONNX Runtime is missing: scripts/ort.sh (make test-build) installs it"
  with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "model.onnx")
    with open(path, "wb") as f: f.write(data)
    ref, _, _ = ort_ref.run(path, {n: a.numpy() for n, a in zip(names, args)})
  for g, r in zip(got, ref):
    assert g.shape == r.shape
    assert rel_err(g, r) < rtol, f"relative error {rel_err(g, r):.3g} against ONNX Runtime"
  again = [t.numpy() for t in runner(feeds).values()]  # the second call captures, the third replays
  again = [t.numpy() for t in runner(feeds).values()]
  for g, a in zip(got, again): np.testing.assert_array_equal(g, a)
  return runner


def test_resnet18():
  tv = pytest.importorskip("torchvision")
  torch.manual_seed(0)
  check(tv.models.resnet18(), (torch.randn(1, 3, 224, 224),), ["input"])


def test_mobilenet_v2():
  tv = pytest.importorskip("torchvision")
  torch.manual_seed(0)
  check(tv.models.mobilenet_v2(), (torch.randn(1, 3, 224, 224),), ["input"])


def test_bert_like_encoder():
  torch.manual_seed(0)
  ids = torch.randint(0, 1000, (2, 64))
  mask = torch.ones(2, 64, dtype=torch.int64)
  mask[1, 40:] = 0
  check(Encoder(), (ids, mask), ["input_ids", "attention_mask"])


def test_lstm():
  torch.manual_seed(0)
  check(Lstm(), (torch.randn(3, 25, 40),), ["x"])


def test_runner_interface():
  torch.manual_seed(0)
  m = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
  data = export(m, (torch.randn(2, 8),), ["x"], dynamic_axes={"x": {0: "batch"}})
  r = OnnxRunner(data)
  assert list(r.graph_inputs) == ["x"]
  assert r.graph_inputs["x"][1] == ("batch", 8)
  assert r.producer.startswith("pytorch")
  x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
  out = r({"x": x})  # numpy in, as tinygrad's runner takes it; any batch
  with torch.no_grad():
    np.testing.assert_allclose(list(out.values())[0].numpy(), m(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)
  with pytest.raises(RuntimeError, match="no input"):
    r({"y": x})
  with pytest.raises(Exception, match="batch|dim"):
    OnnxRunner(data, dims={"batch": 2})({"x": x})
