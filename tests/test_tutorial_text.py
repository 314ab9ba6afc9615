"""What the tutorials say to a reader: numbered sections in order, and a tour that shows the Studio and says where
to go next."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def _read(path: Path):
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_numbered_sections_run_1_2_3_without_a_repeat(path):
    numbers = [int(m.group(1)) for cell in _read(path).cells if cell.cell_type == "markdown"
               for m in re.finditer(r"^## (\d+)\. ", cell.source, re.M)]
    assert numbers == list(range(1, len(numbers) + 1)), f"{path.name}: sections numbered {numbers}"


def test_the_tour_shows_the_studio_and_ends_on_where_to_go_next():
    cells = _read(NOTEBOOKS[0]).cells
    assert NOTEBOOKS[0].name == "00_tour.ipynb"
    assert any(c.cell_type == "code" and "Studio(" in c.source for c in cells)
    assert cells[-1].cell_type == "markdown" and "(01_pipelines.ipynb)" in cells[-1].source
