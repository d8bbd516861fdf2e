"""VIZ through the Python binding: recording a training step, the data the viewer gets, the dumped folder, the server,
and VIZ=1 as tinygrad's users type it (the viewer served when the process exits)."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

import tinygrad_c
from tinygrad_c import Tensor, TinyJit, nn, viz
from tinygrad_c.nn.optim import Adam
from tinygrad_c.nn.state import get_parameters


def reach(rewrite, root):
  seen, stack = set(), [root]
  while stack:
    u = stack.pop()
    if u in seen: continue
    seen.add(u)
    stack += rewrite["nodes"][str(u)]["src"]
  return seen


@pytest.fixture
def recording():
  viz.clear()
  viz.enable()
  yield
  viz.disable()
  viz.clear()


def train_step(n_in: int):
  """One Adam step of a Linear(n_in, 4): a size no other test uses, so its kernels are compiled (and recorded) here."""
  Tensor.manual_seed(0)
  model = nn.Linear(n_in, 4)
  opt = Adam(get_parameters(model), lr=1e-2)
  x, y = Tensor.randn(16, n_in), Tensor.randint(16, high=4)
  with Tensor.train():
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    opt.step()
  return loss.item()


def test_off_records_nothing():
  viz.disable()
  viz.clear()
  (Tensor.ones(10) + 1).realize()
  assert viz.data("/api/index")["realizes"] == []


def test_training_step_is_recorded(recording):
  train_step(37)
  idx = viz.data("/api/index")
  assert idx["version"] == 1 and idx["realizes"] and idx["kernels"]
  kernels = {k["id"]: k for k in idx["kernels"]}
  for r in idx["realizes"]:
    assert all(k in kernels for k in r["kernels"])
  stepped = 0
  for k in idx["kernels"]:
    assert k["device"] and k["name"]
    full = viz.data(f"/api/kernel/{k['id']}")
    assert full["src"] and full["name"] == k["name"]
    assert [w["name"] for w in full["rewrites"]] == [w["name"] for w in k["rewrites"]]
    if full["rewrites"][0]["name"].startswith("ast (compiled before"): continue  # an earlier test compiled it: AST and source only
    assert full["rewrites"][0]["name"] == "ast" and full["rewrites"][-1]["name"] == "linearize"
    for w in full["rewrites"]:
      assert len(w["steps"]) >= 1 and w["steps"][0]["rule"] is None
      prev = reach(w, w["steps"][0]["root"])
      for s in w["steps"][1:]:
        assert s["rule"], s
        nodes = reach(w, s["root"])
        # a rule that matched a node of the graph shown before it: its result is in the graph shown after it
        if s["before"] in prev: assert s["after"] in nodes, (k["name"], w["name"], s)
        prev = nodes
      stepped += len(w["steps"]) > 1
  assert stepped >= 3
  tl = viz.data("/api/timeline")
  assert tl["devices"] and len(tl["launches"]) >= len(idx["kernels"])
  assert all(l["st_us"] <= l["en_us"] for l in tl["launches"])
  assert tl["memory"]
  # the realize's tensor graph
  r = next(r for r in idx["realizes"] if r["graph"])
  g = viz.data(f"/api/realize/{r['id']}")["graph"]
  assert g["steps"] and len(reach(g, g["steps"][0]["root"])) == len(g["nodes"])


def test_jit_replays_show_in_the_timeline(recording):
  @TinyJit
  def f(x): return (x * 2 + 1).relu().realize()
  for i in range(4): f(Tensor.full((8,), float(i)).realize())
  idx = viz.data("/api/index")
  replays = [r for r in idx["realizes"] if r["name"].startswith("jit replay")]
  assert len(replays) == 2 and all(r["launches"] >= 1 for r in replays)
  kernel_ids = {k["id"] for k in idx["kernels"]}
  launches = [l for l in viz.data("/api/timeline")["launches"] if l["realize"] in {r["id"] for r in replays}]
  assert launches and all(l["kernel"] in kernel_ids for l in launches)


def test_capacity(recording):
  viz.set_capacity(2)
  try:
    for i in range(5): (Tensor.full((4,), float(i)) + 1).realize()
    assert len(viz.data("/api/index")["realizes"]) == 2
  finally:
    viz.set_capacity(64)
  with pytest.raises(Exception, match="viz_set_capacity"): viz.set_capacity(0)


def test_bad_routes(recording):
  for bad in ["/api/kernel/123456", "/api/nope", "/index.html", "/api/../api/index"]:
    with pytest.raises(Exception, match="viz_json"): viz.data(bad)


def test_dump_and_serve(recording, tmp_path):
  train_step(41)
  viz.dump(tmp_path / "out")
  js = (tmp_path / "out" / "data.js").read_text()
  prefix = "window.TG_VIZ_DATA = "
  assert js.startswith(prefix)
  data = json.loads(js[len(prefix):].rstrip().rstrip(";"))
  assert data["index"]["kernels"] and set(data["kernels"]) == {str(k["id"]) for k in data["index"]["kernels"]}
  for f in ["index.html", "viz.js", "viz.css", "dagre.min.js"]: assert (tmp_path / "out" / f).stat().st_size > 0
  # a kernel compiled before recording began is still listed when it runs: its AST and source, without steps
  viz.clear()
  (Tensor.ones(10) + 1).realize()
  (Tensor.ones(10) + 1).realize()
  seen = viz.data("/api/index")["kernels"]
  assert seen and all(viz.data(f"/api/kernel/{k['id']}")["src"] for k in seen)
  port = viz.serve(0)
  try:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/index", timeout=10) as r:
      assert r.status == 200 and r.headers["Content-Type"].startswith("application/json")
      assert json.loads(r.read())["kernels"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r: assert b"<html" in r.read().lower()
    with pytest.raises(urllib.error.HTTPError) as e: urllib.request.urlopen(f"http://127.0.0.1:{port}/../../etc/passwd", timeout=10)
    assert e.value.code == 404
  finally:
    viz.stop()


# a child Python finds the binding where this one did
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(tinygrad_c.__file__)), os.environ.get("PYTHONPATH", "")]),
             "TINYGRAD_LIB": tinygrad_c.library_path}


def free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_viz_env_serves_at_exit():
  """VIZ=1 as tinygrad's guide has it: the script runs, then the viewer is served until the process is stopped."""
  port = free_port()
  env = {**CHILD_ENV, "VIZ": "1", "VIZ_PORT": str(port)}
  code = "from tinygrad_c import Tensor; Tensor.arange(10).sum().realize(); print('done', flush=True)"
  p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  try:
    assert p.stdout.readline().strip() == "done"
    line = p.stderr.readline()
    assert f"http://127.0.0.1:{port}/" in line, line
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/index", timeout=10) as r:
      idx = json.loads(r.read())
    assert any(k["name"].startswith("r_") for k in idx["kernels"]), idx["kernels"]  # the sum's reduce kernel
    assert p.poll() is None  # still serving
  finally:
    p.kill()
    p.wait(timeout=10)


def test_viz_env_port_taken_is_an_error_not_a_hang():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    env = {**CHILD_ENV, "VIZ": "1", "VIZ_PORT": str(port)}
    r = subprocess.run([sys.executable, "-c", "from tinygrad_c import Tensor; Tensor.ones(4).sum().realize()"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and f"port {port}" in r.stderr and "in use" in r.stderr, r.stderr
