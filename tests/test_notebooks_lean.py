"""The committed tutorials stay small: no saved widget state, no multi-megabyte outputs."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")  # the GPU machine has no Jupyter stack

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_tutorial_carries_no_widget_state(path):
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata, f"run: python tests/strip_notebook.py {path.name}"
    assert path.stat().st_size < 1_500_000


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_test_directives_are_cell_tags_not_lines_readers_see(path):
    """nbval's directives live in the cell's tags (``nbval-ignore-output``), not as ``# NBVAL_...`` comments."""
    nb = nbformat.read(path, as_version=4)
    shown = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "NBVAL_" in c.source]
    assert not shown, f"{path.name} cells {shown}: move the # NBVAL_ line into the cell's tags"
