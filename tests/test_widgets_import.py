"""Importing tslab's widgets makes no widget: a model made at import is opened once per kernel, shared by every
view that uses it, and lost to all of them if the front end misses that one message."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import importlib, pkgutil
from ipywidgets.widgets.widget import _instances
import tslab.widgets
before = set(_instances)
for info in pkgutil.walk_packages(tslab.widgets.__path__, "tslab.widgets."):
    importlib.import_module(info.name)
print(sorted(type(_instances[k]).__name__ for k in set(_instances) - before))
"""


def test_importing_the_widgets_makes_no_widget():
    # a fresh interpreter: tslab.widgets must not be imported yet, and the first import must be counted too
    baseline = "from ipywidgets.widgets.widget import _instances; import ipywidgets; n = len(_instances)\n"
    out = subprocess.run([sys.executable, "-c", baseline + "import tslab.widgets\nprint(len(_instances) - n)\n"
                          + PROBE], capture_output=True, text=True, timeout=300, check=True).stdout.split()
    assert out == ["0", "[]"], f"widgets made at import (first import, then every module): {out}"
