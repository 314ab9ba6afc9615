"""The catalog package: every kernel module is an attribute of ``tslab.kernels``, imported on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tslab
from tslab.kernels import NAMES


def test_kernels_is_an_attribute_of_tslab():
    assert tslab.kernels.NAMES == NAMES
    assert "kernels" in tslab.__all__


@pytest.mark.parametrize("name", NAMES)
def test_each_catalog_module_is_an_attribute(name):
    module = getattr(tslab.kernels, name)
    assert name == module.NAME and callable(module.design)


def test_dir_lists_the_catalog():
    assert set(NAMES) <= set(dir(tslab.kernels))


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        tslab.kernels.nope  # noqa: B018


def test_modules_are_imported_lazily():
    code = "import sys, tslab; print('tslab.kernels.gemm_sm90' in sys.modules); tslab.kernels.gemm_sm90; " \
           "print('tslab.kernels.gemm_sm90' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "True"]
