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


#: Characters of a markdown code block that fit one line in JupyterLab at a 1000 px window with the file browser
#: open; a longer line wraps mid-diagram (Lab wraps a rendered markdown ``pre``), which is hard to read.
PRE_COLUMNS = 56


def _preformatted(source: str) -> list[str]:
    """The lines of a markdown cell's code blocks: fenced, or indented by four spaces after a blank line."""
    lines, found, fenced, indented = source.split("\n"), [], False, False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        indented = line.startswith("    ") and (indented or i == 0 or lines[i - 1] == "")
        if fenced or indented:
            found.append(line)
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_blocks_in_the_text_fit_a_1000_px_window(path):
    wide = [(i, line) for i, cell in enumerate(_read(path).cells) if cell.cell_type == "markdown"
            for line in _preformatted(cell.source) if len(line) > PRE_COLUMNS]
    assert not wide, f"{path.name}: markdown code lines over {PRE_COLUMNS} columns (cell, line): {wide[:3]}"


def test_the_code_block_finder_sees_both_kinds():
    text = "intro\n\n    indented one\n\n    indented two\nprose\n```\nfenced\n```\n    not after a blank"
    assert _preformatted(text) == ["    indented one", "    indented two", "fenced"]
