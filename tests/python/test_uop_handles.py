"""The graph in hand (tg_uop, Tensor.uop, Tensor.schedule): read-only handles on the engine's nodes, checked against
what the graph must be for the ops built (op names, dtypes, args, sources, shapes), tinygrad's print format and
toposort order, and the kernels a schedule lists against the kernels a realize then runs."""
import ctypes
import gc

import numpy as np
import pytest

import tinygrad_c as tg
from tinygrad_c import C, Ops, Tensor, UOp, dtypes


def test_a_lazy_graph_reads_back():
  a = Tensor([1.0, 2.0, 3.0])
  u = (a * 2 + a).sum().uop
  assert isinstance(u, UOp) and u.op is Ops.RESHAPE and u.shape == () and u.dtype == dtypes.float32
  r = u.src[0]
  assert r.op is Ops.REDUCE_AXIS and r.arg == (Ops.ADD, (0,)) and r.shape == (1,)
  add = r.src[0]
  assert add.op is Ops.ADD and add.arg is None and add.shape == (3,) and len(add.src) == 2
  mul, buf = add.src
  assert mul.op is Ops.MUL and buf.op is Ops.BUFFER and buf.arg == 3
  assert mul.src[0] == buf and hash(mul.src[0]) == hash(buf)  # the same node from two walks: equal, hash alike
  const = mul.src[1].toposort()
  assert any(n.op is Ops.CONST and n.arg == 2.0 and n.dtype == dtypes.float32 for n in const)


def test_toposort_puts_sources_first_and_each_node_once():
  x = Tensor.rand(4, 4)
  y = (x @ x).relu() + x
  order = list(y.uop.toposort())
  assert order[-1] == y.uop and len(set(order)) == len(order)
  pos = {n: i for i, n in enumerate(order)}
  for n in order:
    for s in n.src: assert pos[s] < pos[n], f"{s.op} comes after its user {n.op}"


def test_print_is_tinygrads_format():
  a = Tensor([1.0, 2.0])
  text = repr((a + a).uop)
  lines = text.split("\n")
  assert lines[0] == "UOp(Ops.ADD, dtypes.float32, arg=None, src=("
  # the shared source is named once with :=, then referred to by name; every source line ends with a comma
  assert sum("x" in ln and ":=UOp(Ops.BUFFER" in ln for ln in lines) == 1
  name = next(ln.strip().split(":=")[0] for ln in lines if ":=" in ln)
  assert any(ln.strip().startswith(name + ",") for ln in lines) and text.endswith(",))")
  assert str((a + a).uop) == text and "arg=2.0" in repr((a * 2).uop)


def test_schedule_lists_the_kernels_a_realize_runs():
  a, b = Tensor.rand(8, 8).realize(), Tensor.rand(8, 8).realize()
  c = (a @ b).relu()
  d = c.sum(1) + c.max(1)
  items = d.schedule()
  assert items and all(it.ast.op is Ops.SINK for it in items)
  for it in items:
    assert any(n.op is Ops.STORE for n in it.ast.toposort()) and any(n.op is Ops.DEFINE_GLOBAL for n in it.ast.toposort())
  before = tg.counters()["kernel_count"]
  d.realize()
  assert tg.counters()["kernel_count"] - before == len(items)
  assert d.schedule() == [] and Ops.BUFFER in (d.uop.op, d.uop.src[0].op)  # realized: nothing left to run
  np.testing.assert_allclose(d.numpy(), np.maximum(a.numpy() @ b.numpy(), 0).sum(1) + np.maximum(a.numpy() @ b.numpy(), 0).max(1), rtol=1e-5)


def test_several_tensors_schedule_together():
  x = Tensor.rand(16).realize()
  assert len(Tensor.schedule(x + 1, x * 2)) >= 1
  with pytest.raises(TypeError): (x + 1).schedule(3)


def test_a_handle_keeps_its_node_alive_and_changes_nothing():
  t = Tensor([5.0, 6.0]) * 3
  u = t.uop
  del t
  gc.collect()
  assert u.op is Ops.MUL and [n.op for n in u.toposort()][-1] is Ops.MUL
  t2 = Tensor([1.0])
  u2 = t2.uop
  t2.assign(Tensor([2.0])).realize()
  assert u2.op is Ops.BUFFER or u2.op is Ops.RESHAPE  # the old node, unchanged by the assign
  assert t2.numpy()[0] == 2.0


def test_the_c_api_refuses_bad_handles():
  for fn in (C.uop_op,):
    assert fn(None) is None and C.last_error() != 0
    C.clear_error()
  assert C.uop_id(None) == 0 and C.last_error() != 0
  C.clear_error()
  assert C.uop_print(None, None, 0) == -1 and C.uop_srcs(None, None, 0) == -1 and C.uop_toposort(None, None, 0) == -1
  C.clear_error()
  u = Tensor([1.0, 2.0]).uop
  buf = ctypes.create_string_buffer(4)
  n = C.uop_print(u._h, buf, 4)
  assert n > 4 and len(buf.value) == 3  # truncated, NUL-terminated, full length returned
  assert C.uop_print(u._h, None, 5) == -1  # a NULL buffer with a size
  C.clear_error()
  d = ctypes.c_double()
  assert C.uop_arg_number(u._h, ctypes.byref(d)) == 0 and d.value == 2  # a BUFFER's arg: its size
  r = Tensor([1.0, 2.0]).reshape(2, 1).uop
  assert r.arg == (2, 1) and C.uop_arg_number(r._h, ctypes.byref(d)) != 0  # a RESHAPE's arg is a tuple, not a number
  C.clear_error()
  assert C.tensor_schedule(None, 1, None, 0) == -1
  C.clear_error()
  sink = (Tensor.rand(3) + 1).schedule()[0].ast
  assert sink.shape is None and C.last_error() == 0


def test_module_paths_as_tinygrad():
  from tinygrad_c.uop import UOp as U1, Ops as O1
  from tinygrad_c.uop.ops import UOp as U2, Ops as O2
  assert U1 is U2 is UOp and O1.ADD is O2.ADD is Ops.ADD and repr(Ops.ADD) == "Ops.ADD" and Ops.ADD.name == "ADD"
