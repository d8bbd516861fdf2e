"""tinygrad's smaller public names on the binding, each called as a tinygrad user writes it, plus a check of the
docs/python.md table of tinygrad's names: every name it calls "same" or "differs" exists here, every one it calls
"missing" does not.

Values against numpy or hand-computed ones (float32: rtol 1e-6 where arithmetic is involved, exact otherwise).
"""
import pathlib
import re
import threading

import numpy as np
import pytest

import tinygrad_c as tg
from tinygrad_c import Context, Device, Tensor, Variable, dtypes, nn

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


# ---- Context(DEFAULT_FLOAT=...) --------------------------------------------------------------------------------------
def test_default_float_context_takes_a_dtype_or_name_and_restores():
  assert dtypes.default_float == dtypes.float32
  with Context(DEFAULT_FLOAT=dtypes.float16):
    assert Tensor([1.5]).dtype == dtypes.float16
    assert Tensor.rand(2).dtype == dtypes.float16 and Tensor.zeros(2).dtype == dtypes.float16
    with Context(DEFAULT_FLOAT="FLOAT64"):
      assert Tensor.ones(1).dtype == dtypes.float64
    assert Tensor.ones(1).dtype == dtypes.float16
  assert Tensor([1.5]).dtype == dtypes.float32

  @Context(DEFAULT_FLOAT="HALF", TRAINING=1)
  def f(): return Tensor.ones(2).dtype, Tensor.training
  assert f() == (dtypes.float16, True)
  assert Tensor.training is False and dtypes.default_float == dtypes.float32
  with pytest.raises(ValueError): Context(DEFAULT_FLOAT=dtypes.int32)


def test_default_float_context_is_per_thread():
  seen = []
  inside, release = threading.Event(), threading.Event()

  def other():
    inside.wait()
    seen.append(Tensor.ones(1).dtype)
    release.set()

  t = threading.Thread(target=other)
  t.start()
  with Context(DEFAULT_FLOAT="half"):
    inside.set()
    release.wait()
  t.join()
  assert seen == [dtypes.float32]


# ---- Device[...] -----------------------------------------------------------------------------------------------------
def test_device_subscript_opens_and_synchronizes():
  d = Device[Device.DEFAULT]
  assert d.device == Device.DEFAULT
  d.synchronize()
  assert Device["cpu"].device == "CPU"
  with pytest.raises(RuntimeError, match="NOPE"): Device["NOPE"]


# ---- optimizer state under tinygrad's names --------------------------------------------------------------------------
def test_adam_state_attributes_and_state_dict():
  w = Tensor([1.0, 2.0])
  opt = nn.optim.Adam([w])
  with Context(TRAINING=1):
    (w * w).sum().backward()
    opt.step()
  g = np.array([2.0, 4.0], np.float32)
  np.testing.assert_allclose(opt.m[0].numpy(), 0.1 * g, rtol=1e-6)
  np.testing.assert_allclose(opt.v[0].numpy(), 0.001 * g * g, rtol=1e-5)
  np.testing.assert_allclose(opt.b1_t.numpy(), [0.9], rtol=1e-6)
  np.testing.assert_allclose(opt.b2_t.numpy(), [0.999], rtol=1e-6)
  sd = nn.state.get_state_dict(opt)
  assert list(sd) == ["params.0", "lr", "b1_t", "b2_t", "m.0", "v.0"]
  # a checkpoint round trip: the state tensors are the optimizer's own, so loading into them restores a step count
  saved = {k: Tensor(v.numpy()) for k, v in sd.items()}
  opt.m[0].assign(Tensor([0.0, 0.0])).realize()
  nn.state.load_state_dict(opt, saved, verbose=False)
  np.testing.assert_allclose(opt.m[0].numpy(), 0.1 * g, rtol=1e-6)


def test_sgd_momentum_buffers_are_b():
  w = Tensor([1.0, 2.0])
  opt = nn.optim.SGD([w], momentum=0.9)
  with Context(TRAINING=1):
    (w * w).sum().backward()
    opt.step()
  np.testing.assert_array_equal(opt.b[0].numpy(), [2.0, 4.0])
  assert list(nn.state.get_state_dict(opt)) == ["params.0", "lr", "b.0"]
  assert nn.optim.SGD([Tensor([1.0])]).b == []


# ---- is_param --------------------------------------------------------------------------------------------------------
def test_is_param_flag_decides_params_and_buffers():
  bn = nn.BatchNorm(3)
  assert bn.weight.is_param and not bn.running_mean.is_param and not bn.num_batches_tracked.is_param
  extra = Tensor.zeros(3).is_param_(False)
  assert extra.is_param is False
  w = Tensor([1.0, 2.0, 3.0])
  opt = nn.optim.SGD([w, extra])
  assert len(opt.params) == 1 and opt.buffers == [extra]
  assert extra.is_param_().is_param is True  # marked a param again
  with pytest.raises(AssertionError): nn.optim.SGD([Tensor.zeros(2).is_param_(False)])


# ---- small Tensor names ----------------------------------------------------------------------------------------------
def test_const_ufix_usum_uprod():
  assert Tensor.const(3).item() == 3 and Tensor.const(3).shape == ()
  assert Tensor.const(1.5, dtypes.float16).dtype == dtypes.float16
  x = Tensor([1, 2], dtype=dtypes.int16)
  assert x.ufix(4).dtype == dtypes.int16 and x.ufix(2.5).dtype == dtypes.float32
  assert x.ufix(x) is x
  a, b, c = Tensor([1.0, 2.0]), Tensor([3.0, 4.0]), Tensor([5.0, 6.0])
  np.testing.assert_array_equal(a.usum(b, c).numpy(), [9.0, 12.0])
  np.testing.assert_array_equal(a.uprod([b, c]).numpy(), [15.0, 48.0])
  t, f = Tensor([True, False]), Tensor([False, False])
  np.testing.assert_array_equal(t.usum(f).numpy(), [True, False])
  np.testing.assert_array_equal(t.uprod(f).numpy(), [False, False])


def test_max_shape_and_max_numel():
  v = Variable("i", 1, 10).bind(3)
  t = Tensor.ones(10, 4)[:v]
  assert t.shape[0] == 3 and t.max_shape == (10, 4) and t.max_numel() == 40
  assert Tensor.ones(2, 3).max_shape == (2, 3) and Tensor.ones(2, 3).max_numel() == 6


def test_tinygrad_keyword_options_that_change_nothing_here():
  np.testing.assert_array_equal(Tensor.full((2,), 3, buffer=False).numpy(), [3, 3])
  np.testing.assert_array_equal(Tensor([1.0]).full_like(7, buffer=False).numpy(), [7.0])
  r = Tensor.rand(1000, contiguous=False).numpy()
  assert r.shape == (1000,) and 0 <= r.min() and r.max() < 1
  np.testing.assert_array_equal(Tensor([1, 2]).contiguous(tag="x").numpy(), [1, 2])


def test_submodules_are_attributes_after_import():
  assert tg.tensor.Tensor is Tensor and tg.dtype.dtypes is dtypes and tg.device.Device is Device
  assert tg.engine.jit.TinyJit is tg.TinyJit and tg.helpers.getenv is tg.getenv
  assert nn.TRAINING.value == 0
  with Context(TRAINING=1): assert nn.TRAINING.value == 1


def test_tensor_takes_tinygrads_argument_order():
  assert Tensor([1, 2], "CPU", dtypes.int16).dtype == dtypes.int16  # tinygrad: Tensor(data, device, dtype)
  assert Tensor([1, 2], "CPU", "int16").device == "CPU"
  assert Tensor([1, 2], dtypes.int8).dtype == dtypes.int8  # ours: Tensor(data, dtype, device)
  assert Tensor([1, 2], "float16", "CPU").dtype == dtypes.float16


def test_tensor_from_bytes_and_a_path(tmp_path):
  np.testing.assert_array_equal(Tensor(b"\x01\x02\xff").numpy(), [1, 2, 255])
  assert Tensor(b"ab").dtype == dtypes.uint8 and Tensor(bytearray(b"ab")).shape == (2,)
  f = tmp_path / "blob.bin"
  f.write_bytes(bytes(range(7)))
  np.testing.assert_array_equal(Tensor(f).numpy(), np.arange(7, dtype=np.uint8))


def test_assign_broadcasts_as_tinygrad():
  t = Tensor([1.0, 2.0]).contiguous().realize()
  np.testing.assert_array_equal(t.assign(Tensor([3.0])).numpy(), [3.0, 3.0])
  m = Tensor.zeros(2, 3).contiguous().realize()
  np.testing.assert_array_equal(m.assign(Tensor([1.0, 2.0, 3.0])).numpy(), [[1, 2, 3], [1, 2, 3]])
  np.testing.assert_array_equal(m.assign(5.0).numpy(), np.full((2, 3), 5.0))
  with pytest.raises(ValueError): m.assign(Tensor([1.0, 2.0]))


def test_optimizers_take_device_and_fused():
  w = Tensor([1.0, 2.0])
  for make in (nn.optim.SGD, nn.optim.Adam, nn.optim.AdamW, nn.optim.Muon, nn.optim.LAMB, nn.optim.LARS):
    assert make([w], device="CPU", fused=True).params[0].shape == (2,)
  with pytest.raises(NotImplementedError, match="state lives with the params"): nn.optim.Adam([w], device="CPU:CLANG")


def test_invalids_and_global_counters_names():
  assert Tensor.invalids(2, 3).shape == (2, 3) and Tensor.invalids(4, dtype=dtypes.int8).dtype == dtypes.int8
  names = dir(tg.GlobalCounters)
  assert {"kernel_count", "global_ops", "global_mem", "time_sum_s", "reset"} <= set(names)


# ---- docs/python.md's table of tinygrad's names ----------------------------------------------------------------------
def _table():
  """{(scope, name): status} from the table's sections."""
  text = DOC.read_text()
  start = text.index("## tinygrad's names")
  rows, scope = {}, None
  for line in text[start:].splitlines()[1:]:
    if line.startswith("## "): break
    if line.startswith("### "): scope = line[4:].strip().strip("`")
    m = re.match(r"\| `([^`]+)` \| (same|differs|missing) \|", line)
    if m and scope: rows[(scope, m.group(1))] = m.group(2)
  return rows


SCOPES = {"tinygrad_c": tg, "Tensor": Tensor, "nn": nn, "nn.state": nn.state, "nn.optim": nn.optim}


def test_names_table_claims_hold():
  rows = _table()
  assert len(rows) > 250 and {s for s, _ in rows} == set(SCOPES)
  wrong = [f"{s}.{n}: {st}" for (s, n), st in rows.items() if hasattr(SCOPES[s], n) != (st != "missing")]
  assert not wrong, f"docs/python.md's table says otherwise: {wrong}"


def test_names_table_missing_rows_say_why():
  text = DOC.read_text()
  for line in text[text.index("## tinygrad's names"):].splitlines():
    if "| missing |" in line: assert len(line.split("|")[3].strip()) > 5, f"no reason given: {line}"


def test_conv2d_string_padding_is_tinygrads_value_error():
  # Tensor.conv2d takes numbers only; "same"/"valid" belong to nn.Conv2d, as in tinygrad
  with pytest.raises(ValueError, match="Padding must be an int or a sequence of length 3 or 6"):
    Tensor.ones(1, 1, 3, 3, 3).conv2d(Tensor.ones(2, 1, 2, 2, 2), padding="same")
  assert nn.Conv2d(1, 2, (2, 2, 2), padding="same")(Tensor.ones(1, 1, 3, 3, 3)).shape == (1, 2, 3, 3, 3)
