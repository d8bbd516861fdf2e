# Make the in-tree binding importable (bindings/python/tinygrad_c) without installing it.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bindings" / "python"))
