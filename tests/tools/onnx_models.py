"""Models the ONNX tests and benchmarks export from PyTorch (random weights): a BERT-like encoder written out (torch's
fused encoder layer has no ONNX export) and an LSTM; export() writes any module to ONNX bytes."""
import io

import torch


def export(model, args, names, dynamic_axes=None, opset=13):
  model.eval()
  f = io.BytesIO()
  with torch.no_grad():
    torch.onnx.export(model, args, f, input_names=names, opset_version=opset, dynamic_axes=dynamic_axes or {})
  return f.getvalue()



class Layer(torch.nn.Module):
  """A BERT layer written out (torch's fused encoder layer has no ONNX export): self-attention with a padding mask, then
  a GELU feed-forward, each with a residual and a post-LayerNorm."""

  def __init__(self, d, heads):
    super().__init__()
    self.h, self.qkv, self.o = heads, torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
    self.ff1, self.ff2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
    self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)

  def forward(self, x, bias):
    b, t, d = x.shape
    q, k, v = self.qkv(x).reshape(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
    att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.h) ** 0.5 + bias, dim=-1)
    x = self.n1(x + self.o((att @ v).transpose(1, 2).reshape(b, t, d)))
    return self.n2(x + self.ff2(torch.nn.functional.gelu(self.ff1(x))))


class Encoder(torch.nn.Module):
  """BERT-like: token + position embeddings, LayerNorm, 4 transformer layers, a tanh pooler over the first token."""

  def __init__(self, vocab=1000, d=128, heads=4, layers=4, seq=64):
    super().__init__()
    self.tok, self.pos, self.norm = torch.nn.Embedding(vocab, d), torch.nn.Embedding(seq, d), torch.nn.LayerNorm(d)
    self.layers = torch.nn.ModuleList(Layer(d, heads) for _ in range(layers))
    self.pool = torch.nn.Linear(d, d)

  def forward(self, ids, mask):
    x = self.norm(self.tok(ids) + self.pos(torch.arange(ids.shape[1]).unsqueeze(0)))
    bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
    for layer in self.layers: x = layer(x, bias)
    return x, torch.tanh(self.pool(x[:, 0]))


class Lstm(torch.nn.Module):
  def __init__(self):
    super().__init__()
    self.lstm = torch.nn.LSTM(40, 64, num_layers=2, batch_first=True, bidirectional=True)
    self.head = torch.nn.Linear(128, 10)

  def forward(self, x):
    y, (h, c) = self.lstm(x)
    return self.head(y), h, c
