"""The VIZ viewer in a real browser: Debian's chromium, headless, driven by npm's puppeteer-core (tests/viz/browser.js),
against a VIZ=1 training step served when its process exits, and against a tg_viz_dump folder opened as file://.
make deps installs chromium, node and (scripts/viz_deps.sh) puppeteer-core; none of them missing is a skip.
Screenshots of the three views go under build/viz-shots/{server,dump}."""
import os
import pathlib
import shutil
import socket
import subprocess
import sys

import tinygrad_c

ROOT = pathlib.Path(__file__).resolve().parents[2]
# a child Python finds the binding where this one did
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(tinygrad_c.__file__)), os.environ.get("PYTHONPATH", "")]),
             "TINYGRAD_LIB": tinygrad_c.library_path}
BUILD = pathlib.Path(os.environ.get("TINYGRAD_LIB", ROOT / "build" / "libtinygrad.so")).resolve().parent
NODE_MODULES = pathlib.Path(os.environ.get("TG_VIZ_NODE_MODULES", BUILD / "viz" / "node_modules"))
SHOTS = BUILD / "viz-shots"

# a small training step as a tinygrad user writes it: an MLP, a loss, backward, an optimizer step
TRAIN = """
from tinygrad_c import Tensor, nn
from tinygrad_c.nn.optim import SGD
from tinygrad_c.nn.state import get_parameters
Tensor.manual_seed(0)
l1, l2 = nn.Linear(4, 8), nn.Linear(8, 3)
opt = SGD(get_parameters([l1, l2]), lr=0.1)
x, y = Tensor.randn(8, 4), Tensor.randint(8, high=3)
with Tensor.train():
  opt.zero_grad()
  loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y).backward()
  opt.step()
print("loss", loss.item(), flush=True)
"""


def browser(url: str, shots: pathlib.Path):
  assert shutil.which("node"), "node is missing (make deps)"
  assert pathlib.Path(os.environ.get("TG_VIZ_CHROMIUM", "/usr/bin/chromium")).exists(), "chromium is missing (make deps)"
  assert (NODE_MODULES / "puppeteer-core").is_dir(), f"{NODE_MODULES}/puppeteer-core is missing (scripts/viz_deps.sh)"
  shots.mkdir(parents=True, exist_ok=True)
  env = {**os.environ, "TG_VIZ_NODE_MODULES": str(NODE_MODULES)}
  r = subprocess.run(["node", str(ROOT / "tests/viz/browser.js"), "--url", url, "--shots", str(shots)], env=env, capture_output=True, text=True,
                     timeout=240)
  print(r.stdout, r.stderr)
  assert r.returncode == 0, r.stdout + r.stderr
  for f in ["kernel_list.png", "graph.png", "timeline.png"]: assert (shots / f).stat().st_size > 1000, f


def free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_viewer_served_at_exit():
  port = free_port()
  env = {**CHILD_ENV, "VIZ": "1", "VIZ_PORT": str(port)}
  p = subprocess.Popen([sys.executable, "-c", TRAIN], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  try:
    assert p.stdout.readline().startswith("loss")
    line = p.stderr.readline()
    assert f"http://127.0.0.1:{port}/" in line, line
    browser(f"http://127.0.0.1:{port}/", SHOTS / "server")
  finally:
    p.kill()
    p.wait(timeout=10)


def test_viewer_from_a_dumped_folder(tmp_path):
  code = "from tinygrad_c import viz\nviz.enable()\n" + TRAIN + f"viz.dump({str(tmp_path / 'dump')!r})\n"
  r = subprocess.run([sys.executable, "-c", code], env=CHILD_ENV, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr
  browser((tmp_path / "dump" / "index.html").as_uri(), SHOTS / "dump")
