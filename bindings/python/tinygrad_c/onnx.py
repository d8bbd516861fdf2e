"""The ONNX runner (tinygrad_c.nn.onnx) under a shorter name: from tinygrad_c.onnx import OnnxRunner."""
from .nn.onnx import OnnxRunner

__all__ = ["OnnxRunner"]
