# Installs offline with the setuptools already on the machine (Debian's python3-setuptools): with no pyproject.toml, pip
# builds in the current environment instead of downloading setuptools into an isolated one.
#   python3 -m pip install ./bindings/python
# The package finds libtinygrad.so through $TINYGRAD_LIB, or a libtinygrad.so placed next to its __init__.py (copy it
# into tinygrad_c/ before installing and it is installed with the package), then the repository's build/, then
# ctypes.util.find_library("tinygrad"). See docs/python.md.
import re
from pathlib import Path

from setuptools import setup

# the library's version, as scripts/bindgen.py copied it from include/tinygrad.h into the generated module
VERSION = re.search(r"^VERSION = '(.+)'$", (Path(__file__).parent / "tinygrad_c" / "_capi.py").read_text(), re.M).group(1)

setup(name="tinygrad-c", version=VERSION, description="ctypes binding over libtinygrad.so with tinygrad's Tensor API",
      packages=["tinygrad_c", "tinygrad_c.nn", "tinygrad_c.engine", "tinygrad_c.uop"], package_data={"tinygrad_c": ["libtinygrad.so", "libtinygrad.so.*"]}, install_requires=["numpy"],
      python_requires=">=3.8")
