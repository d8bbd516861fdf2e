# The parts of the binding that need no tensors: version, dtypes, errors, symbolic expressions.
import ctypes
import re

import pytest

import tinygrad_c as tg
from tinygrad_c import Expr, TinygradError, Variable, dtypes, least_upper_dtype


def test_version():
  assert re.fullmatch(r"\d+\.\d+\.\d+", tg.version())
  major, minor, patch = map(int, tg.version().split("."))
  assert tg.version_number() == major * 10000 + minor * 100 + patch


@pytest.mark.parametrize("dt, name, size", [(dtypes.bool, "bool", 1), (dtypes.int8, "int8", 1), (dtypes.uint8, "uint8", 1),
                                            (dtypes.int16, "int16", 2), (dtypes.int32, "int32", 4), (dtypes.uint64, "uint64", 8),
                                            (dtypes.float16, "float16", 2), (dtypes.bfloat16, "bfloat16", 2),
                                            (dtypes.float32, "float32", 4), (dtypes.float64, "float64", 8)])
def test_dtype_names(dt, name, size):
  assert dt.name == name and dt.itemsize == size and repr(dt) == f"dtypes.{name}"
  assert tg.to_dtype(name) is dt


def test_dtype_aliases():
  assert dtypes.float is dtypes.float32 and dtypes.half is dtypes.float16 and dtypes.double is dtypes.float64
  assert dtypes.int is dtypes.int32 and dtypes.default_float is dtypes.float32 and dtypes.default_int is dtypes.int32
  assert dtypes.is_float(dtypes.bfloat16) and dtypes.is_int(dtypes.uint8) and not dtypes.is_int(dtypes.bool)
  assert dtypes.is_unsigned(dtypes.uint32) and not dtypes.is_unsigned(dtypes.int32)


# tinygrad's promotion lattice (least_upper_dtype)
@pytest.mark.parametrize("a, b, want", [(dtypes.int8, dtypes.uint8, dtypes.int16), (dtypes.bool, dtypes.int8, dtypes.int8),
                                        (dtypes.int32, dtypes.float16, dtypes.float16), (dtypes.float16, dtypes.float32, dtypes.float32),
                                        (dtypes.uint8, dtypes.int32, dtypes.int32), (dtypes.int32, dtypes.uint32, dtypes.int64),
                                        (dtypes.float16, dtypes.bfloat16, dtypes.float32), (dtypes.float32, dtypes.float64, dtypes.float64)])
def test_promote(a, b, want):
  assert least_upper_dtype(a, b) is want and least_upper_dtype(b, a) is want


def test_error_is_runtime_error():
  with pytest.raises(TinygradError) as e: tg._ok(tg.C.dtype_promote(99, 0, ctypes.byref(ctypes.c_int())), "dtype_promote")
  assert isinstance(e.value, RuntimeError) and e.value.status == "TG_ERROR_INVALID_ARGUMENT" and "unknown dtype" in e.value.message
  # the error is read once, then cleared
  assert tg.C.last_error() == 0


# ---- symbolic expressions
def test_expr_simplify_divmod():
  x, y = Variable("x", 0, 10), Variable("y", 0, 3)
  assert str(((x * 4 + y) // 4).simplify()) == "x"
  assert str(((x * 4 + y) % 4).simplify()) == "y"
  assert str(((x * 4 + y) // 4)) != "x"  # simplify is explicit


def test_expr_eval_bounds():
  x, y = Variable("x", 0, 10), Variable("y", 0, 3)
  e = x * 4 + y
  assert e.eval(x=2, y=3) == 11 and e.bounds() == (0, 43) and (e.vmin, e.vmax) == (0, 43)
  assert (10 - x).bounds() == (0, 10) and (x // 3).bounds() == (0, 3) and (x % 3).bounds() == (0, 2)
  assert (-x).eval(x=7) == -7 and (x.maximum(y) - x.minimum(y)).eval(x=1, y=3) == 2
  assert (x < 5).eval(x=4) == 1 and (x < 5).eval(x=5) == 0
  assert Expr(7).eval() == 7 and str(Expr(7)) == "7" and str(x) == "x"


@pytest.mark.parametrize("a, b", [(7, 2), (-7, 2), (7, -2), (-7, -2)])
def test_expr_truncates_like_c(a, b):
  x = Variable("x", -10, 10)
  assert (x // b).eval(x=a) == int(a / b) and (x % b).eval(x=a) == a - int(a / b) * b


@pytest.mark.parametrize("make, status", [(lambda: Variable("x", 3, 1), "TG_ERROR_INVALID_ARGUMENT"),
                                          (lambda: Variable("", 0, 1), "TG_ERROR_INVALID_ARGUMENT"),
                                          (lambda: Variable("x", 0, 5) // 0, "TG_ERROR_INVALID_ARGUMENT"),
                                          (lambda: Variable("x", 0, 5) % 0, "TG_ERROR_INVALID_ARGUMENT"),
                                          (lambda: (Variable("x", 0, 5) + Variable("y", 0, 5)).eval(x=1), "TG_ERROR_INVALID_ARGUMENT"),
                                          (lambda: Variable("x", 0, 5).eval(x=6), "TG_ERROR_INVALID_ARGUMENT")])
def test_expr_errors(make, status):
  with pytest.raises(TinygradError) as e: make()
  assert e.value.status == status and e.value.message
