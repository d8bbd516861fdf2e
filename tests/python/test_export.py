"""TinyJit.export / tg_jit_export (docs/export.md): a captured JIT written out as C that needs only a C compiler and
libm. Each exported model is compiled as ISO C99 with -Wall -Wextra -Werror -pedantic (a vector target adds only its
-march/-mfpu), linked with malloc, calloc and realloc wrapped to abort (the run allocates nothing), run on inputs the
library also ran, and every output element compared: bit for bit where the export renders the library's kernels with
the same choices (generic: scalar C, the library's CPU device also computes lane by lane in the same order; native), within
float32 rounding elsewhere (ARM targets under qemu, whose vector width makes the heuristics choose other kernels)."""
import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tinygrad_c import Tensor, TinyJit, nn, dtypes
from tinygrad_c import _capi, C

HOST_CC = os.environ.get("CC", "cc")
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2"]
# a run that allocates aborts: the exported code must take all its memory from the caller
NO_ALLOC = r"""
#include <stdlib.h>
int tg_test_armed; /* set around NAME_run only: the driver's stdio may allocate */
void* __real_malloc(size_t n);
void* __real_calloc(size_t n, size_t m);
void* __real_realloc(void* p, size_t n);
void* __wrap_malloc(size_t n) { if (tg_test_armed) abort(); return __real_malloc(n); }
void* __wrap_calloc(size_t n, size_t m) { if (tg_test_armed) abort(); return __real_calloc(n, m); }
void* __wrap_realloc(void* p, size_t n) { if (tg_test_armed) abort(); return __real_realloc(p, n); }
"""
CROSS = {"aarch64": ("aarch64-linux-gnu-gcc", "qemu-aarch64", []), "armv7": ("arm-linux-gnueabihf-gcc", "qemu-arm", ["-mfpu=neon"])}


def driver(name, ins, outs, threads=0):
  """main(): reads each input from argv files, runs NAME_run once with a static arena, writes each output to a file."""
  lines = ["#include <stdio.h>", "#include <stdint.h>", f'#include "{name}.h"', "extern int tg_test_armed;",
           f"static unsigned char arena[{name}_ARENA_BYTES + 1] __attribute__((aligned({name}_ARENA_ALIGN)));"]
  for i, a in enumerate(ins): lines.append(f"static {ctype(a.dtype)} in{i}[{a.size}];")
  for i, a in enumerate(outs): lines.append(f"static {ctype(a.dtype)} out{i}[{a.size}];")
  lines += ["int main(int argc, char** argv) {", "  FILE* f;", f"  {name}_inputs in;", f"  {name}_outputs out;",
            f"  if (argc != {1 + len(ins) + len(outs)}) return 9;"]
  for i, a in enumerate(ins):
    lines += [f'  if (!(f = fopen(argv[{1 + i}], "rb")) || fread(in{i}, sizeof in{i}[0], {a.size}, f) != {a.size}) return 8;', "  fclose(f);",
              f"  in.in{i} = in{i};"]
  for i in range(len(outs)): lines.append(f"  out.out{i} = out{i};")
  if threads > 1: lines.append(f"  {name}_start();")  # pthread_create may allocate: before the check is armed
  lines += ["  tg_test_armed = 1;", f"  if ({name}_run(&in, &out, arena) != 0) return 7;", "  tg_test_armed = 0;"]
  for i, a in enumerate(outs):
    lines += [f'  if (!(f = fopen(argv[{1 + len(ins) + i}], "wb")) || fwrite(out{i}, sizeof out{i}[0], {a.size}, f) != {a.size}) return 6;',
              "  fclose(f);"]
  return "\n".join(lines + ["  return 0;", "}", ""])


def ctype(dt):
  return {"float32": "float", "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t", "bool": "_Bool"}[np.dtype(dt).name]


def run_exported(tmp, jit, name, target, ins, n_out, threads=0):
  """Export, build with the target's compiler, run (under qemu for ARM); the outputs as numpy arrays."""
  d = tmp / f"{name}_{target}_{threads}"
  d.mkdir()
  sizes = jit.export(str(d), name, target, threads=threads)
  pt = ["-pthread"] if threads > 1 else []
  h = (d / f"{name}.h").read_text()
  cc, runner, extra = CROSS.get(target, (HOST_CC, None, {"native": ["-march=native"]}.get(target, [])))
  res = jit(*[Tensor(a) for a in ins])
  ref = [o.numpy() for o in (res if isinstance(res, (tuple, list)) else [res])]
  (d / "main.c").write_text(driver(name, ins, ref, threads))
  (d / "noalloc.c").write_text(NO_ALLOC)
  for src in (f"{name}.c", f"{name}_weights.c"):
    r = subprocess.run([cc, *CFLAGS, *extra, *pt, "-c", src], cwd=d, capture_output=True, text=True)
    assert r.returncode == 0, f"{target}: {src} does not build as ISO C99 with -pedantic -Werror:\n{r.stderr[:3000]}"
  link = [cc, "-O2", *pt, "main.c", "noalloc.c", f"{name}.o", f"{name}_weights.o", "-lm", "-o", "prog",
          "-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc"] + (["-static"] if runner else [])
  r = subprocess.run(link, cwd=d, capture_output=True, text=True)
  assert r.returncode == 0, r.stderr
  files = []
  for i, a in enumerate(ins):
    a.tofile(d / f"in{i}.bin")
    files.append(str(d / f"in{i}.bin"))
  files += [str(d / f"out{i}.bin") for i in range(n_out)]
  r = subprocess.run(([runner] if runner else []) + [str(d / "prog"), *files], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, f"{target}: the exported program exited {r.returncode}: {r.stderr}"
  outs = [np.fromfile(d / f"out{i}.bin", dtype=o.dtype).reshape(o.shape) for i, o in enumerate(ref)]
  return outs, ref, sizes, h


def mlp_jit():
  Tensor.manual_seed(3)
  l1, l2 = nn.Linear(784, 96), nn.Linear(96, 10)

  @TinyJit
  def f(x): return l2(l1(x).relu()).log_softmax(-1)

  return f


def cnn_jit():
  Tensor.manual_seed(4)
  c1, bn, c2, lin = nn.Conv2d(1, 8, 5), nn.BatchNorm(8), nn.Conv2d(8, 16, 3), nn.Linear(16 * 5 * 5, 10)
  bn.running_mean.assign(Tensor.rand(8) * 0.1).realize()
  bn.running_var.assign(Tensor.rand(8) + 0.5).realize()

  @TinyJit
  def f(x):
    h = bn(c1(x).relu()).max_pool2d()
    logits = lin(c2(h).relu().max_pool2d().flatten(1))
    return logits, logits.argmax(1).cast(dtypes.int32)

  return f


def warm(jit, shapes, dtype=np.float32):
  rng = np.random.default_rng(0)
  for _ in range(2): jit(*[Tensor(rng.standard_normal(s).astype(dtype)) for s in shapes])
  return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("target", ["generic", "native"])
def test_mlp_host_bit_identical(tmp_path, target):
  f = mlp_jit()
  ins = warm(f, [(5, 784)])
  outs, ref, sizes, h = run_exported(tmp_path, f, "mlp", target, ins, 1)
  assert outs[0].tobytes() == ref[0].tobytes(), np.abs(outs[0] - ref[0]).max()
  # the header's figures: weights are the two layers (float32), the arena holds the hidden activations
  assert sizes["weight_bytes"] == (784 * 96 + 96 + 96 * 10 + 10) * 4
  assert 5 * 96 * 4 <= sizes["arena_bytes"] <= 64 * 1024
  assert "#define mlp_IN0_ELEMENTS 3920" in h and "#define mlp_OUT0_ELEMENTS 50" in h


@pytest.mark.parametrize("target", ["generic", "native"])
def test_cnn_host(tmp_path, target):
  f = cnn_jit()
  ins = warm(f, [(3, 1, 28, 28)])
  outs, ref, _, h = run_exported(tmp_path, f, "cnn", target, ins, 2)
  assert outs[0].tobytes() == ref[0].tobytes(), np.abs(outs[0] - ref[0]).max()
  assert np.array_equal(outs[1], ref[1]) and outs[1].dtype == np.int32
  assert "int32_t* out1;" in h


@pytest.mark.parametrize("target", ["aarch64", "armv7"])
def test_arm_under_qemu(tmp_path, target):
  for tool in CROSS[target][:2]:
    if not shutil.which(tool): pytest.fail(f"{tool} is missing: make deps installs the cross compilers and qemu-user")
  f = cnn_jit()
  ins = warm(f, [(2, 1, 28, 28)])
  outs, ref, _, _ = run_exported(tmp_path, f, "cnn", target, ins, 2)
  # other kernels (a 16-byte vector width) sum in another order: float32 rounding apart, the same classes
  np.testing.assert_allclose(outs[0], ref[0], rtol=1e-5, atol=1e-5)
  assert np.array_equal(outs[1], ref[1])
  g = mlp_jit()
  ins = warm(g, [(3, 784)])
  outs, ref, _, _ = run_exported(tmp_path, g, "mlp", target, ins, 1)
  np.testing.assert_allclose(outs[0], ref[0], rtol=1e-5, atol=1e-5)


def test_refusals_write_nothing(tmp_path):
  f = mlp_jit()
  with pytest.raises(Exception, match="has not captured"):
    f.export(str(tmp_path), "m")
  warm(f, [(2, 784)])
  for name in ["1abc", "a-b", "", "x" * 65]:
    with pytest.raises(Exception, match="not a C identifier"):
      f.export(str(tmp_path), name)
  with pytest.raises(Exception, match="unknown target 'riscv'"):
    f.export(str(tmp_path), "m", "riscv")
  with pytest.raises(Exception, match="can't create"):
    f.export(str(tmp_path / "missing"), "m")
  assert list(tmp_path.iterdir()) == []

  @TinyJit
  def view(x): return x[:, :2]  # a view of the input

  for _ in range(2): view(Tensor.ones(3, 4).contiguous())
  with pytest.raises(Exception, match="output 0 is a view"):
    view.export(str(tmp_path), "v")

  @TinyJit
  def same(x): return x

  for _ in range(2): same(Tensor.ones(3).contiguous())
  with pytest.raises(Exception, match="not computed by the captured kernels"):
    same.export(str(tmp_path), "s")
  assert list(tmp_path.iterdir()) == []


def test_c_options_struct_size(tmp_path):
  f = mlp_jit()
  warm(f, [(2, 784)])
  for size in (0, 8, ctypes.sizeof(_capi.tg_export_options) + 8):
    o = _capi.tg_export_options(struct_size=size, dir=str(tmp_path).encode(), name=b"m", target=None)
    assert C.jit_export(f._h, ctypes.byref(o)) == _capi.TG_ERROR_INVALID_ARGUMENT
  assert C.jit_export(f._h, None) == _capi.TG_ERROR_INVALID_ARGUMENT
  o = _capi.tg_export_options(struct_size=ctypes.sizeof(_capi.tg_export_options), dir=str(tmp_path).encode(), name=b"m", target=None)
  assert C.jit_export(f._h, ctypes.byref(o)) == 0
  assert sorted(p.name for p in tmp_path.iterdir()) == ["m.c", "m.h", "m_weights.c"]


def test_the_allocation_check_catches_one(tmp_path):
  # the harness itself: a model whose run allocates must abort, or the checks above could not fail
  (tmp_path / "m.h").write_text("#define m_ARENA_BYTES 0\n#define m_ARENA_ALIGN 64\ntypedef struct { const float* in0; } m_inputs;\n"
                                "typedef struct { float* out0; } m_outputs;\nint m_run(const m_inputs* in, m_outputs* out, void* arena);\n")
  (tmp_path / "m.c").write_text('#include <stdlib.h>\n#include "m.h"\nint m_run(const m_inputs* in, m_outputs* out, void* arena) {\n'
                                "  float* p = malloc(4); (void)arena; if (!p) return 1; *p = in->in0[0]; out->out0[0] = *p; free(p); return 0;\n}\n")
  a = np.ones(1, np.float32)
  (tmp_path / "main.c").write_text(driver("m", [a], [a]))
  (tmp_path / "noalloc.c").write_text(NO_ALLOC)
  a.tofile(tmp_path / "in0.bin")
  r = subprocess.run([HOST_CC, "-O2", "main.c", "noalloc.c", "m.c", "-o", "prog", "-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc"], cwd=tmp_path,
                     capture_output=True, text=True)
  assert r.returncode == 0, r.stderr
  r = subprocess.run([str(tmp_path / "prog"), str(tmp_path / "in0.bin"), str(tmp_path / "out0.bin")], capture_output=True)
  assert r.returncode == -6  # SIGABRT from the wrapped malloc


def test_state_a_kernel_updates_in_place(tmp_path):
  # a tensor the function assigns into and reads (a running statistic) is a mutable array holding its value at export
  # time: one run of the export gives what the JIT's next replay gives
  s = Tensor([1.0, -2.0, 0.5, 3.0]).contiguous().realize()

  @TinyJit
  def f(x):
    s.assign(s * 0.5 + x.sum(0))
    return (x * s).sum(1)

  ins = warm(f, [(3, 4)])
  outs, ref, _, _ = run_exported(tmp_path, f, "st", "generic", ins, 1)
  assert outs[0].tobytes() == ref[0].tobytes(), (outs[0], ref[0])
  assert "\nfloat st_s0[4] = {" in (tmp_path / "st_generic_0" / "st_weights.c").read_text()


def test_variable_batch_is_an_argument(tmp_path):
  # a batch bound to a Variable stays symbolic: a field of NAME_inputs, checked against its range; buffers are laid out
  # for the largest batch, so one export serves every batch size
  from tinygrad_c import Variable
  Tensor.manual_seed(5)
  l1, l2 = nn.Linear(16, 24), nn.Linear(24, 4)
  rng = np.random.default_rng(1)
  full_np = rng.standard_normal((12, 16)).astype(np.float32)
  full = Tensor(full_np).realize()
  v = Variable("batch", 1, 12)

  @TinyJit
  def f(x): return l2(l1(x).relu()).softmax(-1)

  for n in (3, 4): f(full[:v.bind(n)])
  f.export(str(tmp_path), "vb", "generic")
  h = (tmp_path / "vb.h").read_text()
  assert "int64_t batch; /* a Variable: 1..12 */" in h and "#define vb_IN0_ELEMENTS 192" in h and "#define vb_OUT0_ELEMENTS 48" in h
  (tmp_path / "main.c").write_text(r'''
#include <stdio.h>
#include <stdlib.h>
#include "vb.h"
static unsigned char arena[vb_ARENA_BYTES + 1];
int main(int argc, char** argv) {
  static float x[vb_IN0_ELEMENTS], y[vb_OUT0_ELEMENTS];
  vb_inputs in;
  vb_outputs out;
  FILE* f = fopen(argv[1], "rb");
  if (argc != 4 || !f || fread(x, 4, vb_IN0_ELEMENTS, f) != vb_IN0_ELEMENTS) return 8;
  fclose(f);
  in.in0 = x, in.batch = atoi(argv[3]), out.out0 = y;
  if (vb_run(&in, &out, arena) != 0) return 7;
  f = fopen(argv[2], "wb");
  fwrite(y, 4, (size_t)in.batch * 4, f);
  fclose(f);
  return 0;
}
''')
  full_np.tofile(tmp_path / "x.bin")
  for src in ("vb.c", "vb_weights.c", "main.c"):
    r = subprocess.run([HOST_CC, *CFLAGS, "-c", src], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
  r = subprocess.run([HOST_CC, "main.o", "vb.o", "vb_weights.o", "-lm", "-o", "prog"], cwd=tmp_path, capture_output=True, text=True)
  assert r.returncode == 0, r.stderr
  for n in (1, 5, 12):
    r = subprocess.run([str(tmp_path / "prog"), str(tmp_path / "x.bin"), str(tmp_path / "y.bin"), str(n)], capture_output=True)
    assert r.returncode == 0
    got = np.fromfile(tmp_path / "y.bin", dtype=np.float32).reshape(n, 4)
    ref = f(full[:v.bind(n)]).numpy()
    assert got.tobytes() == ref.tobytes(), (n, np.abs(got - ref).max())
  for bad in (0, 13):  # outside the Variable's range: refused
    r = subprocess.run([str(tmp_path / "prog"), str(tmp_path / "x.bin"), str(tmp_path / "y.bin"), str(bad)], capture_output=True)
    assert r.returncode == 7


def test_an_output_returned_twice_is_refused(tmp_path):
  @TinyJit
  def twice(x):
    y = (x * 2).contiguous()
    return y, y

  for _ in range(2): twice(Tensor.ones(3).contiguous())
  with pytest.raises(Exception, match="output 1 is output 0 again"):
    twice.export(str(tmp_path), "t")
  assert list(tmp_path.iterdir()) == []


def test_weights_of_every_kind_and_an_int64_output(tmp_path):
  # exact literals for NaN, infinities, -0.0, a float32 denormal, float16 bits, uint8, int64's extremes; an int64 output
  # (int64_t may be long where the kernel takes long long)
  w = Tensor(np.array([1.5, np.nan, -np.inf, np.inf, -0.0, 3e-45], np.float32)).realize()
  h = Tensor(np.array([0.5, -2, 65504, 1e-7, 0, 1], np.float16)).realize()
  u8 = Tensor(np.array([0, 255, 7, 1, 2, 3], np.uint8)).realize()
  i64 = Tensor(np.array([-2**63, 2**63 - 1, 5, -7, 0, 1], np.int64)).realize()

  @TinyJit
  def f(x):
    y = (x + w + h.cast(dtypes.float32) + u8.cast(dtypes.float32)).contiguous()
    return y, (i64 + x.cast(dtypes.int64)).contiguous()

  ins = warm(f, [(6,)])
  ins[0][:] = np.round(ins[0])  # small whole numbers: the int64 sum stays in range
  outs, ref, _, _ = run_exported(tmp_path, f, "lit", "generic", ins, 2)
  np.testing.assert_array_equal(outs[0], ref[0])
  assert outs[1].dtype == np.int64 and np.array_equal(outs[1], ref[1])


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_split_kernels_on_a_pool(tmp_path, threads):
  # threads > 1: the kernels THREAD splits run on the caller and threads-1 pthreads; the split only divides output
  # rows among cores, so every element is computed as the single-threaded export computes it
  f = cnn_jit()
  ins = warm(f, [(6, 1, 28, 28)])
  outs, ref, sizes, h = run_exported(tmp_path, f, "cnn", "native", ins, 2, threads=threads)
  single, _, _, h1 = run_exported(tmp_path, f, "cnn", "native", ins, 2)
  np.testing.assert_allclose(outs[0], ref[0], rtol=1e-5, atol=1e-5)
  assert outs[0].tobytes() == single[0].tobytes() and np.array_equal(outs[1], ref[1])
  assert sizes["threads"] == threads and f"#define cnn_THREADS {threads}" in h and "void cnn_start(void);" in h
  c = (tmp_path / f"cnn_native_{threads}" / "cnn.c").read_text()
  assert "cnn_parallel(" in c and "pthread_create" in c
  assert "#define cnn_THREADS 1" in h1 and "pthread" not in (tmp_path / "cnn_native_0" / "cnn.c").read_text()
  with pytest.raises(Exception, match="threads=-1"): f.export(str(tmp_path), "cnn", "native", threads=-1)


def test_threads_under_tsan_from_two_callers(tmp_path):
  # the pool's hand-off under ThreadSanitizer: two threads call cnn_run 25 times each (they take turns), every output
  # equal to the library's
  f = cnn_jit()
  ins = warm(f, [(4, 1, 28, 28)])
  d = tmp_path / "tsan"
  d.mkdir()
  f.export(str(d), "cnn", "native", threads=3)
  ref = f(Tensor(ins[0]))[0].numpy()
  ins[0].tofile(d / "in0.bin")
  ref.tofile(d / "ref.bin")
  (d / "main.c").write_text(f"""
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "cnn.h"
static float x[{ins[0].size}], want[{ref.size}];
static void* caller(void* arg) {{
  static _Alignas(64) unsigned char arenas[2][cnn_ARENA_BYTES + 1];
  unsigned char* arena = arenas[(long)arg];
  float logits[{ref.size}];
  int32_t cls[{ref.shape[0]}], i;
  cnn_inputs in;
  cnn_outputs out;
  in.in0 = x, out.out0 = logits, out.out1 = cls;
  for (i = 0; i < 25; i++) {{
    if (cnn_run(&in, &out, arena) != 0 || memcmp(logits, want, sizeof want) != 0) return (void*)1;
  }}
  return 0;
}}
int main(void) {{
  pthread_t t[2];
  void* r[2];
  FILE* f = fopen("in0.bin", "rb");
  if (!f || fread(x, sizeof x[0], {ins[0].size}, f) != {ins[0].size}) return 8;
  fclose(f);
  if (!(f = fopen("ref.bin", "rb")) || fread(want, sizeof want[0], {ref.size}, f) != {ref.size}) return 8;
  fclose(f);
  pthread_create(&t[0], 0, caller, (void*)0);
  pthread_create(&t[1], 0, caller, (void*)1);
  pthread_join(t[0], &r[0]);
  pthread_join(t[1], &r[1]);
  return r[0] || r[1] ? 3 : 0;
}}
""")
  cc = shutil.which("clang") or HOST_CC
  r = subprocess.run([cc, "-O1", "-g", "-fsanitize=thread", "-march=native", "-pthread", "main.c", "cnn.c", "cnn_weights.c", "-lm", "-o", "prog"],
                     cwd=d, capture_output=True, text=True)
  assert r.returncode == 0, r.stderr[:3000]
  r = subprocess.run([str(d / "prog")], cwd=d, capture_output=True, text=True, timeout=300,
                     env={**os.environ, "TSAN_OPTIONS": "halt_on_error=1 exitcode=66"})
  assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[:3000]}"
  assert "WARNING: ThreadSanitizer" not in r.stderr


def onnx_jit(tmp_path):
  """A small convnet exported from PyTorch as ONNX, loaded by the importer, its run captured by a TinyJit"""
  import sys
  import torch
  sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
  from onnx_models import export
  from tinygrad_c.nn.onnx import OnnxRunner
  torch.manual_seed(5)
  m = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                          torch.nn.Conv2d(8, 16, 3, stride=2), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16 * 6 * 6, 10))
  with torch.no_grad():
    m[1].running_mean.uniform_(-0.1, 0.1), m[1].running_var.uniform_(0.5, 1.5)
  (tmp_path / "net.onnx").write_bytes(export(m, (torch.randn(2, 1, 28, 28),), ["image"]))
  runner = OnnxRunner(tmp_path / "net.onnx")

  @TinyJit
  def f(x): return runner({"image": x})[runner.graph_outputs[0]]

  return f, m


@pytest.mark.parametrize("target", ["generic", "aarch64", "armv7"])
def test_onnx_model_exported(tmp_path, target):
  # an ONNX model the importer loaded, exported as C: bit for bit on the host's scalar target, within float32 rounding
  # under qemu on ARM, and PyTorch's outputs either way
  if target in CROSS:
    for tool in CROSS[target][:2]:
      if not shutil.which(tool): pytest.fail(f"{tool} is missing: make deps installs the cross compilers and qemu-user")
  import torch
  f, m = onnx_jit(tmp_path)
  ins = warm(f, [(2, 1, 28, 28)])
  outs, ref, _, h = run_exported(tmp_path, f, "net", target, ins, 1)
  if target == "generic": assert outs[0].tobytes() == ref[0].tobytes(), np.abs(outs[0] - ref[0]).max()
  else: np.testing.assert_allclose(outs[0], ref[0], rtol=1e-5, atol=1e-5)
  with torch.no_grad(): want = m.eval()(torch.from_numpy(ins[0])).numpy()
  np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-5)
  assert "#define net_OUT0_ELEMENTS 20" in h
