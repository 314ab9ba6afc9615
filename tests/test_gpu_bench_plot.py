from pathlib import Path

import pytest

from tslab.gpu.bench import BenchResult, row_labels

RECORDED = Path(__file__).resolve().parents[1] / "notebooks" / "data" / "h200-2026-11-29.json"


def test_rows_with_the_same_parameters_get_distinct_labels_and_bars_are_never_summed():
    pytest.importorskip("plotly")
    result = BenchResult.load(RECORDED)
    fig = result.plot()
    bars = fig.data[0]
    assert len(set(bars.y)) == len(bars.y) == len(result)  # one category per row: nothing stacks
    assert list(bars.x) == list(result.table["gbps"])
    assert max(bars.x) < 5000  # the two 4,08x GB/s runs of one configuration stay two bars
    assert fig.layout.xaxis.title.text == "GB/s (read + write)"
    # At 1000 px: the kernel and what varies on two lines, the ratio inside its bar (not past the axis).
    assert bars.textposition == "inside"
    assert all(max(len(line) for line in label.split("<br>")) <= 36 for label in bars.y)


def test_row_labels_name_what_varies_and_number_repeats():
    import pandas as pd

    table = pd.DataFrame({"kernel": ["copy", "copy", "copy"], "shape": ["8", "8", "8"],
                          "params": ["stages=4,ctas=2", "stages=4,ctas=2", "stages=3,ctas=2"]})
    assert row_labels(table) == ["copy stages=4 (run 1)", "copy stages=4 (run 2)", "copy stages=3"]
