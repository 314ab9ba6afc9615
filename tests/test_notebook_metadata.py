"""The committed tutorials carry the kernelspec JupyterLab writes, so opening one does not rewrite it, and the
metadata that marks them as tslab's (the lab extension wraps their printed output between words)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_kernelspec_is_the_one_jupyterlab_writes(path):
    spec = json.loads(path.read_text())["metadata"]["kernelspec"]
    assert spec == {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_tutorial_is_marked_as_tslabs(path):
    assert json.loads(path.read_text())["metadata"]["tslab"] == {"notebook": 1}
