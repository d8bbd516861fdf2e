# Devices beside the CPU (the GPUs present, and the virtual CPU:1, which has its own allocator): copies between devices
# for every dtype, a training step on each against the same step on the CPU, device errors, processes sharing a driver's
# cache. The whole op/autograd/nn suite also runs on each device present (make test runs tests/python again with
# DEV=CL); these tests are the ones that need two devices or processes at once.
import numpy as np
import pytest

from tinygrad_c import Device, Tensor, TinygradError, dtypes

GPUS = ["CL", "CUDA", "CPU:1"]


def _open_or_skip(dev: str):
  try:
    Device.open(dev)
  except TinygradError as e:
    pytest.skip(f"{dev} is not on this machine: {e}")


@pytest.fixture(params=GPUS)
def gpu(request):
  _open_or_skip(request.param)
  return request.param


def _values(dt, n=257, seed=0):
  rng = np.random.default_rng(seed)
  if dt == dtypes.bool: return rng.random(n) < 0.5
  np_dt = np.dtype(dt.np) if dt != dtypes.bfloat16 else np.float32
  if np.issubdtype(np_dt, np.integer):
    info = np.iinfo(np_dt)
    v = rng.integers(info.min, info.max, size=n, dtype=np_dt, endpoint=True)
    v[:2] = info.min, info.max  # the extremes survive too
    return v
  v = (rng.standard_normal(n) * 100).astype(np_dt)
  v[:4] = [np.inf, -np.inf, 0.0, -0.0]
  return v


ALL = [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64,
       dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]


@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_round_trip_every_dtype(gpu, dt):
  v = _values(dt)
  cpu = Tensor(v, dtype=dt, device="CPU")
  on = cpu.to(gpu)
  assert on.device == gpu and on.dtype == dt and on.shape == cpu.shape
  back = on.to("CPU")
  assert back.device == "CPU"
  np.testing.assert_array_equal(back.numpy(), cpu.numpy())  # bit for bit: NaN-free inputs, so equality is exact
  np.testing.assert_array_equal(on.numpy(), cpu.numpy())  # read straight from the device too


def test_copy_on_the_device_and_views(gpu):
  v = np.arange(24, dtype=np.float32).reshape(4, 6)
  t = Tensor(v, device=gpu)
  assert t.to(gpu) is t or t.to(gpu).device == gpu
  # a view (a permuted, shrunk tensor) is made contiguous before it moves
  np.testing.assert_array_equal(t.permute(1, 0)[1:4].to("CPU").numpy(), v.T[1:4])
  np.testing.assert_array_equal(Tensor(v).permute(1, 0)[1:4].to(gpu).numpy(), v.T[1:4])
  # a computed tensor moves its value, and the copy is independent of the original
  c = (t * 2 + 1).to("CPU:CLANG")
  np.testing.assert_array_equal(c.numpy(), v * 2 + 1)


def test_ops_on_the_device_match_numpy(gpu):
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((37, 53)).astype(np.float32), rng.standard_normal((53, 29)).astype(np.float32)
  ta, tb = Tensor(a, device=gpu), Tensor(b, device=gpu)
  np.testing.assert_allclose((ta @ tb).numpy(), a @ b, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(ta.sum(1).numpy(), a.sum(1), rtol=1e-5, atol=1e-4)
  np.testing.assert_allclose(ta.max().numpy(), a.max())
  np.testing.assert_allclose(ta.exp().log().numpy(), a, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(ta.softmax(1).numpy(), np.exp(a) / np.exp(a).sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
  x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
  w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
  got = Tensor(x, device=gpu).conv2d(Tensor(w, device=gpu), padding=1).numpy()
  want = Tensor(x, device="CPU").conv2d(Tensor(w, device="CPU"), padding=1).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _train(device, steps=3):
  """Three SGD steps of a 2-layer MLP (forward, backward, update by assign) on fixed data; the losses and weights."""
  rng = np.random.default_rng(7)
  X, Y = rng.standard_normal((32, 20)).astype(np.float32), rng.integers(0, 5, 32)
  w1 = Tensor(rng.standard_normal((20, 16)).astype(np.float32) * 0.3, device=device, requires_grad=True)
  w2 = Tensor(rng.standard_normal((16, 5)).astype(np.float32) * 0.3, device=device, requires_grad=True)
  x, y = Tensor(X, device=device), Tensor(Y.astype(np.int32), device=device)
  losses = []
  with Tensor.train():
    for _ in range(steps):
      loss = (x @ w1).relu().matmul(w2).sparse_categorical_crossentropy(y)
      loss.backward()
      for w in (w1, w2):
        w.assign(w.detach() - w.grad * 0.1)
      Tensor.realize_many(loss, w1, w2)
      losses.append(float(loss.numpy()))
      w1.grad = w2.grad = None
  return losses, w1.numpy(), w2.numpy()


def test_training_step_agrees_with_the_cpu(gpu):
  l_cpu, a_cpu, b_cpu = _train("CPU")
  l_gpu, a_gpu, b_gpu = _train(gpu)
  assert l_gpu[-1] < l_gpu[0]
  np.testing.assert_allclose(l_gpu, l_cpu, rtol=1e-5)
  np.testing.assert_allclose(a_gpu, a_cpu, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(b_gpu, b_cpu, rtol=1e-5, atol=1e-6)


def test_mixing_devices_is_an_error(gpu):
  with pytest.raises(TinygradError, match="different devices"):
    Tensor([1.0, 2.0], device="CPU") + Tensor([1.0, 2.0], device=gpu)


def test_device_errors():
  with pytest.raises(TinygradError, match="CL:77 doesn't exist|CL is not available"):
    Device.open("CL:77")
  with pytest.raises(TinygradError, match="unknown device"):
    Device.open("TPU")
  with pytest.raises(TinygradError, match="device number"):
    Device.open("CL:x")
  names = [n for n, _ in Device.available()]
  assert names[:2] == ["CPU", "CPU:CLANG"]
  for n in names: Device.open(n)  # every listed device opens
  assert Device.canonicalize("gpu") == "CL" if "CL" in names else True


def test_virtual_cpu_devices():
  # tinygrad's CPU:1, CPU:2, ...: distinct devices (an op needs its tensors on one), the same compiler and cores
  a = Tensor(np.arange(6, dtype=np.float32), device="CPU:2")
  b = a.to("CPU:3")
  assert (a.device, b.device) == ("CPU:2", "CPU:3")
  np.testing.assert_equal((b * 2).numpy(), np.arange(6) * 2)
  assert Tensor([1.0], device="cpu:0").device == "CPU"
  with pytest.raises(TinygradError, match="different devices"):
    a + b
  for bad in ("CPU:1024", "CPU:x", "CPU:-1"):
    with pytest.raises(TinygradError, match="CPU:1 ... CPU:1023"):
      Device.open(bad)


def test_every_listed_device_has_a_description():
  for name, desc in Device.available():
    assert desc, name


def test_jit_replays_on_the_device(gpu):
  """A captured function replays on the device with new inputs each call (a CUDA graph on CUDA, updated in place)."""
  from tinygrad_c import TinyJit
  rng = np.random.default_rng(5)
  w_np = rng.standard_normal((24, 16)).astype(np.float32)
  w = Tensor(w_np, device=gpu)
  jit = TinyJit(lambda x: (x @ w).relu().sum(1))
  for _ in range(6):
    x = rng.standard_normal((8, 24)).astype(np.float32)
    got = jit(Tensor(x, device=gpu)).numpy()
    np.testing.assert_allclose(got, np.maximum(x @ w_np, 0).sum(1), rtol=1e-5, atol=1e-5)



# x * (k + 0.5) + k on CL for k < argv[1], after "go" on stdin: processes started together build the same new kernels together
_SAME_KERNELS = """
import sys
import numpy as np
from tinygrad_c import Tensor
x = Tensor(np.arange(16, dtype=np.float32), device="CL").realize()
print("ready", flush=True)
sys.stdin.readline()
for k in range(int(sys.argv[1])):
  got = (x * (k + 0.5) + k).numpy()
  assert np.array_equal(got, np.arange(16, dtype=np.float32) * np.float32(k + 0.5) + k), (k, got)
print("ok")
"""


def _cl_processes(cache, n, kernels):
  import os, subprocess, sys
  binding = os.path.join(os.path.dirname(__file__), "..", "..", "bindings", "python")
  env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=os.pathsep.join([binding, os.environ.get("PYTHONPATH", "")]))
  env.pop("POCL_CACHE_DIR", None)
  procs = [subprocess.Popen([sys.executable, "-c", _SAME_KERNELS, str(kernels)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True) for _ in range(n)]
  for p in procs: assert p.stdout.readline().startswith("ready"), p.communicate(timeout=60)[0]
  for p in procs: p.stdin.write("go\n"), p.stdin.flush()
  for p in procs:
    out = p.communicate(timeout=300)[0]
    assert p.returncode == 0 and out.strip().endswith("ok"), out


def test_processes_building_the_same_kernels_at_once(tmp_path):
  # PoCL before 6.0 rewrites files of its kernel cache in place, unlocked: processes building the same kernel together
  # got damaged binaries from it and aborted inside PoCL (4 processes x 20 kernels failed 4 runs in 5)
  _open_or_skip("CL")
  _cl_processes(tmp_path, 4, 16)


def test_a_damaged_pocl_binary_in_the_cache_is_built_again(tmp_path):
  # a binary of PoCL's with an empty entry (what the race above stored) is rebuilt; PoCL itself aborts on loading it
  _open_or_skip("CL")
  _cl_processes(tmp_path, 1, 1)
  damaged = 0
  for f in (tmp_path / "tinygrad" / "kernels").iterdir():
    b = bytearray(f.read_bytes())
    if b[:8] != b"poclbin\0": continue
    flags = int.from_bytes(b[24:32], "little")
    at = 77 + (8 if flags & 2 else 0)  # magic, device, version, kernels, flags, entries, build hash (41), [scope vars]
    b[at:at + 8] = bytes(8)
    f.write_bytes(bytes(b))
    damaged += 1
  if damaged == 0: pytest.skip("the CL device is not PoCL")
  _cl_processes(tmp_path, 1, 1)
