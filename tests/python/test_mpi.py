"""The communicator over MPI (docs/distributed.md), run as a user runs it: under Open MPI's mpirun on this machine.

tests/mpi/collectives.py checks every collective for every dtype against numpy on 2 and 4 ranks; the data-parallel
Fashion-MNIST example with 2 ranks of 64 must give the losses of one process with batch 128 step by step; a rank that
dies or hangs must make the job fail within the timeout instead of hanging."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIB = Path(os.environ.get("TINYGRAD_LIB", ROOT / "build" / "libtinygrad.so")).resolve()
BUILD = LIB.parent
MPIRUN = shutil.which("mpirun")


@pytest.fixture(autouse=True)
def _mpirun():
  # make deps installs openmpi-bin; a missing mpirun is a broken set-up, not a skip
  if not MPIRUN: pytest.fail("mpirun is not installed: run make deps (Debian: openmpi-bin libopenmpi-dev)")


def mpirun(n, *cmd, env=None, timeout=300):
  # root may run mpirun here (CI); single-copy shared memory needs ptrace rights a container may not grant
  e = dict(os.environ, TINYGRAD_LIB=str(LIB), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism="none", **(env or {}))
  t0 = time.monotonic()
  r = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(n), *map(str, cmd)], capture_output=True, text=True,
                     timeout=timeout, env=e)
  return r, time.monotonic() - t0


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_every_dtype(n):
  r, _ = mpirun(n, sys.executable, ROOT / "tests" / "mpi" / "collectives.py")
  assert r.returncode == 0, r.stdout + r.stderr
  for k in range(n): assert f"collectives ok rank {k} of {n}" in r.stdout, r.stdout + r.stderr


def losses(out):
  return [float(x) for x in re.findall(r"step +\d+/\d+ +loss ([0-9.]+)", out)]


def test_data_parallel_fashion_mnist_matches_one_process(tmp_path):
  # 2 ranks x 64 images = one process x 128 images: the same loss at every step (float rounding apart) proves the
  # gradients are averaged, not summed or dropped
  exe = BUILD / "example_train_fashion_mnist"
  assert exe.exists(), f"{exe} is not built"
  one = subprocess.run([str(exe), "--log-every", "1", "20", "", str(tmp_path / "one.safetensors")], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, NUM_CPU_THREADS="1"))
  assert one.returncode == 0, one.stdout + one.stderr
  two, _ = mpirun(2, exe, "--ddp", "--log-every", "1", "20", "", tmp_path / "two.safetensors")
  assert two.returncode == 0, two.stdout + two.stderr
  a, b = losses(one.stdout), losses(two.stdout)
  assert len(a) == 20 and len(b) == 20, (one.stdout, two.stdout)
  for i, (x, y) in enumerate(zip(a, b)): assert abs(x - y) <= 1e-4 * max(1.0, abs(x)), f"step {i + 1}: {x} alone, {y} data parallel"
  assert "data parallel: 2 ranks, 64 images of each batch per rank" in two.stdout
  # one process saved the same weights as rank 0 of the job, and only rank 0 wrote
  assert re.search(r"^test accuracy: [0-9.]+$", two.stdout, re.M), two.stdout


DEATH = textwrap.dedent("""
  import os, sys, time
  sys.path.insert(0, {bindings!r})
  from tinygrad_c import Tensor, TinygradError
  from tinygrad_c.comm import Comm
  c = Comm.world()
  c.allreduce(Tensor.ones(4)).numpy()          # everyone is up
  if c.rank == 1:
    if {mode!r} == "die": os._exit(3)          # killed: no exit handlers, no MPI_Finalize
    if {mode!r} == "raise": raise RuntimeError("a bug on rank 1")
    time.sleep(60)                             # hangs
  try:
    c.allreduce(Tensor.ones(1 << 20)).numpy()
  except TinygradError as e:
    print("rank 0 error:", e.status, e.message, flush=True)
    sys.exit(2)
  print("rank 0 finished", flush=True)
""")


@pytest.mark.parametrize("mode", ["die", "raise", "hang"])
def test_a_rank_that_dies_or_hangs_fails_the_job(tmp_path, mode):
  # a rank killed or failing with an exception ends the job at once (mpirun, and the library's abort at a failing exit);
  # one that hangs makes the others' next call fail after TG_COMM_TIMEOUT seconds (3 here) with TG_ERROR_RUNTIME
  script = tmp_path / "death.py"
  script.write_text(DEATH.format(bindings=str(ROOT / "bindings" / "python"), mode=mode))
  r, dt = mpirun(2, sys.executable, script, env={"TG_COMM_TIMEOUT": "3"}, timeout=120)
  assert r.returncode != 0, r.stdout + r.stderr
  assert "rank 0 finished" not in r.stdout
  assert dt < 50, f"the job took {dt:.1f} s to fail"
  if mode == "hang":
    assert "rank 0 error: TG_ERROR_RUNTIME" in r.stdout and "TG_COMM_TIMEOUT" in r.stdout, r.stdout + r.stderr


def test_world_without_mpirun_is_a_job_of_one():
  code = textwrap.dedent(f"""
    import sys; sys.path.insert(0, {str(ROOT / 'bindings' / 'python')!r})
    import numpy as np
    from tinygrad_c import Tensor
    from tinygrad_c.comm import Comm
    c = Comm.world()
    assert (c.rank, c.size) == (0, 1)
    x = Tensor([1.5, -2.0])
    assert c.allreduce(x, "avg").tolist() == [1.5, -2.0] and c.allgather(x).shape == (2,)
    # bad arguments are errors naming the problem, before any MPI call
    from tinygrad_c import C, TinygradError, dtypes
    def err(fn):
      try: fn()
      except (TinygradError, ValueError) as e: return str(e)
      raise AssertionError("no error")
    assert C.comm_rank(None) == -1 and C.last_error() == 1 and b"comm is NULL" in C.last_error_message()
    assert not C.comm_allreduce(c._h, x._h, 9) and b"unknown op 9" in C.last_error_message()
    assert not C.comm_allreduce(None, x._h, 0) and b"comm is NULL" in C.last_error_message()
    assert not C.comm_allreduce(c._h, None, 0) and b"tensor is NULL" in C.last_error_message()
    assert "root 1 is not a rank of 1" in err(lambda: c.broadcast(x, 1))
    assert "dest 0 is not another rank" in err(lambda: c.send(x, 0))
    assert "src 0 is not another rank" in err(lambda: c.recv((2,), dtypes.float32, 0))
    assert "avg of int32" in err(lambda: c.allreduce(Tensor([1, 2]), "avg"))
    assert "color -1" in err(lambda: c.split(-1))
    assert "op must be one of" in err(lambda: c.allreduce(x, "mul"))
    print("ok")
  """)
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=dict(os.environ, TINYGRAD_LIB=str(LIB)))
  assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_without_libmpi_the_communicator_says_so():
  code = textwrap.dedent(f"""
    import sys; sys.path.insert(0, {str(ROOT / 'bindings' / 'python')!r})
    from tinygrad_c import Tensor, TinygradError
    from tinygrad_c.comm import Comm
    try: Comm.world()
    except TinygradError as e: print(e.status, e.message)
    print((Tensor([1.0]) + 1).tolist())
  """)
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                     env=dict(os.environ, TINYGRAD_LIB=str(LIB), TG_MPI_LIB="/nonexistent/libmpi.so.40"))
  assert r.returncode == 0, r.stdout + r.stderr
  assert "TG_ERROR_UNSUPPORTED MPI: TG_MPI_LIB=/nonexistent/libmpi.so.40 does not load" in r.stdout, r.stdout
  assert "[2.0]" in r.stdout
