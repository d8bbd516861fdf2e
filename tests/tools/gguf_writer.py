"""A GGUF writer following the format's spec (header, key/values, tensor infos, aligned data), for tests that need
files no model download can give here: nn.state's loader tests, hostile headers, tokenizer vocabularies."""
import struct

# GGUF metadata value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
KV_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}


def gstr(s) -> bytes:
  b = s if isinstance(s, bytes) else s.encode()
  return struct.pack("<Q", len(b)) + b


def gval(typ, v) -> bytes:
  """One value of `typ`; an array is (element type, items)."""
  if typ == STR: return gstr(v)
  if typ == ARR:
    et, items = v
    if et in KV_FMT: return struct.pack("<IQ", et, len(items)) + struct.pack(f"<{len(items)}{KV_FMT[et][1]}", *items)
    return struct.pack("<IQ", et, len(items)) + b"".join(gval(et, x) for x in items)
  return struct.pack(KV_FMT[typ], v)


def gguf_bytes(kv, tensors=(), alignment=32, version=3) -> bytes:
  """kv: (key, type, value) triples; tensors: (name, shape, ggml type, raw bytes), dims written innermost first."""
  out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kv))
  for k, typ, v in kv: out += gstr(k) + struct.pack("<I", typ) + gval(typ, v)
  off, data = 0, b""
  for name, shape, typ, raw in tensors:
    out += gstr(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in reversed(shape)) + struct.pack("<IQ", typ, off)
    pad = (-len(raw)) % alignment
    data += raw + b"\0" * pad
    off += len(raw) + pad
  out += b"\0" * ((-len(out)) % alignment)
  return out + data


def write_gguf(path, kv, tensors=(), alignment=32, version=3):
  with open(path, "wb") as f: f.write(gguf_bytes(kv, tensors, alignment, version))
