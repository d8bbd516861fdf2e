"""nn.state against files written here from the formats' specs: safetensors from torch tensors' bytes, GGUF with every
supported ggml type, dequantized in numpy as ggml's reference code does."""
import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tinygrad_c import Tensor, TinygradError, dtypes
from tinygrad_c.nn import state

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from gguf_writer import write_gguf  # noqa: E402  (test_llm.py imports it from here too)


# ---- safetensors ----
TORCH_DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
                torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}


def torch_bytes(t: torch.Tensor) -> bytes:
  t = t.contiguous()
  return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()


def write_safetensors(path, tensors: dict, metadata=None):
  """The format's spec: u64 little-endian header length, the JSON header, the data, tensors back to back."""
  header, blobs, off = {}, [], 0
  if metadata: header["__metadata__"] = metadata
  for k, t in tensors.items():
    b = torch_bytes(t)
    header[k] = {"dtype": TORCH_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
  h = json.dumps(header).encode()
  path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
  """A reader following the spec, checking the layout safe_save promises."""
  raw = path.read_bytes()
  n = struct.unpack("<Q", raw[:8])[0]
  assert n % 8 == 0, "the header is padded to 8 bytes"
  header = json.loads(raw[8:8 + n])
  data = raw[8 + n:]
  meta = header.pop("__metadata__", {})
  end = 0
  for v in header.values():
    assert v["data_offsets"][0] == end
    end = v["data_offsets"][1]
  assert end == len(data)
  return header, data, meta


def torch_tensors():
  g = torch.Generator().manual_seed(0)
  out = {}
  for dt in TORCH_DTYPES:
    if dt.is_floating_point: t = torch.randn(3, 5, generator=g).to(dt)
    elif dt == torch.bool: t = torch.randint(0, 2, (4,), generator=g).bool()
    else: t = torch.randint(-100 if dt != torch.uint8 else 0, 100, (2, 3, 2), generator=g).to(dt)
    out[f"w.{str(dt)[6:]}"] = t
  out["empty"] = torch.zeros(0, 3)
  out["scalar"] = torch.tensor(2.5)
  return out


def as_numpy(t: Tensor) -> np.ndarray:
  return t.numpy()


def test_torch_written_file_loads(tmp_path):
  ts = torch_tensors()
  p = tmp_path / "torch.safetensors"
  write_safetensors(p, ts, {"format": "pt"})
  loaded = state.safe_load(p)
  assert list(loaded) == list(ts)
  for k, t in ts.items():
    assert loaded[k].shape == tuple(t.shape)
    want = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    np.testing.assert_array_equal(as_numpy(loaded[k]), want, err_msg=k)
  _, _, meta = state.safe_load_metadata(p)
  assert meta["__metadata__"] == {"format": "pt"}


def test_safe_save_follows_the_spec(tmp_path):
  ts = {k: Tensor(v.float().numpy() if v.dtype == torch.bfloat16 else v.numpy(),
                  dtype=dtypes.bfloat16 if v.dtype == torch.bfloat16 else None) for k, v in torch_tensors().items()}
  p = tmp_path / "out.safetensors"
  state.safe_save(ts, p, {"epoch": "3", "n": 7})
  header, data, meta = read_safetensors(p)
  assert meta == {"epoch": "3", "n": "7"}
  assert list(header) == list(ts)
  for k, t in torch_tensors().items():
    h = header[k]
    assert h["dtype"] == TORCH_DTYPES[t.dtype] and h["shape"] == list(t.shape)
    assert data[h["data_offsets"][0]:h["data_offsets"][1]] == torch_bytes(t), k
  assert not [f for f in tmp_path.iterdir() if f.name != "out.safetensors"], "no temporary file left behind"


@pytest.mark.parametrize("mutate, problem", [
  (lambda raw: raw[:-1], "belong to no tensor|not inside"),
  (lambda raw: struct.pack("<Q", 1 << 40) + raw[8:], "header length"),
  (lambda raw: raw[:8] + raw[8:].replace(b'"F32"', b'"F8X"', 1), "unknown dtype"),
  (lambda raw: raw[:8] + b"[" + raw[9:], "invalid JSON"),
  (lambda raw: raw[:5], "too few"),
])
def test_hostile_files_raise(tmp_path, mutate, problem):
  p = tmp_path / "x.safetensors"
  write_safetensors(p, {"a": torch.ones(4), "b": torch.zeros(2, dtype=torch.int32)})
  p.write_bytes(mutate(p.read_bytes()))
  with pytest.raises(TinygradError, match=problem) as e:
    state.safe_load(p)
  assert e.value.status == "TG_ERROR_IO" and str(p) in str(e.value)


# ---- GGUF ----
F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, BF16 = 0, 1, 2, 3, 6, 7, 8, 12, 13, 14, 30
BLOCK = {Q4_0: (32, 18), Q4_1: (32, 20), Q5_0: (32, 22), Q5_1: (32, 24), Q8_0: (32, 34), Q4_K: (256, 144), Q5_K: (256, 176), Q6_K: (256, 210)}


def f16s(a): return np.asarray(a, dtype=np.float16).view(np.uint8).reshape(-1, 2)


def make_blocks(typ, nb, rng):
  """Random quant blocks whose f16 scales are finite."""
  elems, size = BLOCK[typ]
  b = rng.integers(0, 256, (nb, size), dtype=np.uint8)
  scale_at = {Q4_0: [0], Q4_1: [0, 2], Q5_0: [0], Q5_1: [0, 2], Q8_0: [0], Q4_K: [0, 2], Q5_K: [0, 2], Q6_K: [208]}[typ]
  for a in scale_at: b[:, a:a + 2] = f16s(rng.uniform(-2, 2, nb).astype(np.float16))
  return b


def ref_dequant(typ, b):
  """ggml's dequantize_row_* in numpy, float32 arithmetic in ggml's order."""
  f = lambda a: b[:, a:a + 2].copy().view(np.float16).astype(np.float32)  # (nb, 1)
  nb = b.shape[0]
  if typ in (Q4_0, Q4_1):
    qs = b[:, 4 if typ == Q4_1 else 2:]
    q = np.concatenate([qs & 0xF, qs >> 4], 1).astype(np.int32)
    return (q - 8).astype(np.float32) * f(0) if typ == Q4_0 else q.astype(np.float32) * f(0) + f(2)
  if typ in (Q5_0, Q5_1):
    o = 2 if typ == Q5_0 else 4
    qh = b[:, o:o + 4].copy().view(np.uint32).astype(np.int64)  # (nb, 1)
    qs = b[:, o + 4:].astype(np.int64)
    j = np.arange(16)
    x0 = (qs & 0xF) | (((qh >> j) << 4) & 0x10)
    x1 = (qs >> 4) | ((qh >> (j + 12)) & 0x10)
    x = np.concatenate([x0, x1], 1)
    return (x - 16).astype(np.float32) * f(0) if typ == Q5_0 else x.astype(np.float32) * f(0) + f(2)
  if typ == Q8_0: return b[:, 2:].view(np.int8).astype(np.float32) * f(0)
  if typ in (Q4_K, Q5_K):
    d, dmin, s = f(0), f(2), b[:, 4:16].astype(np.int64)
    def scale_min(j):
      if j < 4: return s[:, j] & 63, s[:, j + 4] & 63
      return (s[:, j + 4] & 0xF) | ((s[:, j - 4] >> 6) << 4), (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    ql = b[:, 48 if typ == Q5_K else 16:].astype(np.int64)
    qh = b[:, 16:48].astype(np.int64)
    y = np.zeros((nb, 256), np.float32)
    for j in range(4):
      for h in range(2):
        sc, m = scale_min(2 * j + h)
        d1, m1 = d[:, 0] * sc.astype(np.float32), dmin[:, 0] * m.astype(np.float32)
        q = (ql[:, 32 * j:32 * j + 32] >> (4 * h)) & 0xF
        if typ == Q5_K: q = q + ((qh >> (2 * j + h)) & 1) * 16
        y[:, 64 * j + 32 * h:64 * j + 32 * h + 32] = d1[:, None] * q.astype(np.float32) - m1[:, None]
    return y
  if typ == Q6_K:
    ql, qh, sc, d = b[:, :128].astype(np.int64), b[:, 128:192].astype(np.int64), b[:, 192:208].view(np.int8).astype(np.float32), f(208)
    y = np.zeros((nb, 256), np.float32)
    for n in range(2):
      L, H, S = ql[:, 64 * n:], qh[:, 32 * n:], sc[:, 8 * n:]
      for l in range(32):
        i = l // 16
        q = [((L[:, l] & 0xF) | (((H[:, l] >> 0) & 3) << 4)) - 32, ((L[:, l + 32] & 0xF) | (((H[:, l] >> 2) & 3) << 4)) - 32,
             ((L[:, l] >> 4) | (((H[:, l] >> 4) & 3) << 4)) - 32, ((L[:, l + 32] >> 4) | (((H[:, l] >> 6) & 3) << 4)) - 32]
        for k in range(4): y[:, 128 * n + l + 32 * k] = (d[:, 0] * S[:, i + 2 * k]) * q[k].astype(np.float32)
    return y
  raise AssertionError(typ)


@pytest.mark.parametrize("typ", list(BLOCK))
def test_gguf_dequantizes_every_quant_type(tmp_path, typ):
  rng = np.random.default_rng(typ)
  elems, _ = BLOCK[typ]
  shape = (3, 2 * elems)  # ggml dims (2*elems, 3): rows of two blocks
  blocks = make_blocks(typ, 6, rng)
  p = tmp_path / "q.gguf"
  write_gguf(p, [], [("w", shape, typ, blocks.tobytes())])
  kv, sd = state.gguf_load(p)
  assert kv == {} and list(sd) == ["w"]
  t = sd["w"]
  assert t.shape == shape and t.dtype is dtypes.float32
  np.testing.assert_allclose(t.numpy(), ref_dequant(typ, blocks).reshape(shape), rtol=1e-6, atol=1e-6)


def test_gguf_native_types_and_metadata(tmp_path):
  rng = np.random.default_rng(1)
  a32 = rng.standard_normal((2, 3)).astype(np.float32)
  a16 = rng.standard_normal((4,)).astype(np.float16)
  abf = (rng.standard_normal(5).astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)  # exact in bfloat16
  kv = [("general.architecture", 8, "llama"), ("general.alignment", 4, 64), ("u8", 0, 255), ("i8", 1, -3), ("u16", 2, 65535),
        ("i16", 3, -300), ("i32", 5, -7), ("f32", 6, 0.5), ("b", 7, True), ("u64", 10, 1 << 63), ("i64", 11, -(1 << 62)),
        ("f64", 12, 0.1), ("tokens", 9, (8, ["a", "bé", "\"q\""])), ("nested", 9, (9, [(5, [1, 2]), (5, [])]))]
  tensors = [("t32", (2, 3), F32, a32.tobytes()), ("t16", (4,), F16, a16.tobytes()),
             ("tbf", (5,), BF16, (abf.view(np.uint32) >> 16).astype(np.uint16).tobytes())]
  p = tmp_path / "n.gguf"
  write_gguf(p, kv, tensors, alignment=64, version=2)
  got_kv, sd = state.gguf_load(p)
  assert got_kv == {"general.architecture": "llama", "general.alignment": 64, "u8": 255, "i8": -3, "u16": 65535, "i16": -300,
                    "i32": -7, "f32": 0.5, "b": True, "u64": 1 << 63, "i64": -(1 << 62), "f64": 0.1, "tokens": ["a", "bé", "\"q\""],
                    "nested": [[1, 2], []]}
  assert sd["t16"].dtype is dtypes.float16 and sd["tbf"].dtype is dtypes.bfloat16
  np.testing.assert_array_equal(sd["t32"].numpy(), a32)
  np.testing.assert_array_equal(sd["t16"].numpy(), a16)
  np.testing.assert_array_equal(sd["tbf"].numpy(), abf)


@pytest.mark.parametrize("edit, problem", [
  (lambda b: b[:-31], "past the end"),
  (lambda b: b[:4] + struct.pack("<I", 1) + b[8:], "version 1"),
  (lambda b: b[:16] + struct.pack("<Q", 1 << 60) + b[24:], "key/values can't fit"),
])
def test_gguf_hostile_files_raise(tmp_path, edit, problem):
  p = tmp_path / "h.gguf"
  write_gguf(p, [("k", 8, "v")], [("w", (32,), Q8_0, make_blocks(Q8_0, 1, np.random.default_rng(0)).tobytes())])
  p.write_bytes(edit(p.read_bytes()))
  with pytest.raises(TinygradError, match=problem) as e:
    state.gguf_load(p)
  assert e.value.status == "TG_ERROR_IO"


# ---- state dicts of Python objects ----
class Linear:
  def __init__(self, i, o):
    self.weight, self.bias = Tensor(np.zeros((o, i), np.float32)), Tensor(np.zeros(o, np.float32))


class Net:
  def __init__(self):
    self.layers = [Linear(2, 3), Linear(3, 1)]
    self.head = {"scale": Tensor(np.ones(1, np.float32))}
    self.name = "net"


def test_get_state_dict_and_load_state_dict(tmp_path):
  net = Net()
  sd = state.get_state_dict(net)
  assert list(sd) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "head.scale"]
  assert len(state.get_parameters(net)) == 5
  rng = np.random.default_rng(0)
  vals = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in sd.items()}
  p = tmp_path / "net.safetensors"
  state.safe_save({k: Tensor(v) for k, v in vals.items()}, p)
  before = net.layers[0].weight
  state.load_state_dict(net, state.safe_load(p), verbose=False)
  assert net.layers[0].weight is before, "loaded in place"
  for k, v in state.get_state_dict(net).items(): np.testing.assert_array_equal(v.numpy(), vals[k])


def test_load_state_dict_strict_names_the_problems():
  net = Net()
  sd = state.get_state_dict(Net())
  del sd["head.scale"]
  sd["extra"] = Tensor(np.zeros(2, np.float32))
  with pytest.raises(KeyError, match="head.scale.*extra"):
    state.load_state_dict(net, sd, verbose=False)
  sd["layers.0.bias"] = Tensor(np.zeros(5, np.float32))
  with pytest.raises(ValueError, match="layers.0.bias"):
    state.load_state_dict(net, sd, strict=False, verbose=False)
  sd["layers.0.bias"] = Tensor(np.full(3, 2, np.float32))
  loaded = state.load_state_dict(net, sd, strict=False, verbose=False, consume=True)
  assert len(loaded) == 4 and "layers.0.bias" not in sd
  np.testing.assert_array_equal(net.layers[0].bias.numpy(), [2, 2, 2])
