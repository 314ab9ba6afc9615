"""SweepChart: points by status, the Pareto front, the pruned table, live rows, a click opens a Studio."""

import time

import pytest

import tslab
from tslab.sweep import SweepError
from tslab.widgets import Studio, SweepChart
from tslab.widgets.sweep_chart import chart_data, default_axes

SPACE = {"stages": [2, 4, 8], "tile_cols": [128, 256]}


def checked():
    return tslab.sweep("tma_copy", SPACE, measure="check", executor="serial", quiet=True)


def test_chart_data_groups_points_and_tables_pruned_ones():
    r = checked()
    assert default_axes(r.table) == ("smem_bytes", "states")
    data = chart_data(r, "smem_bytes", "states")
    assert len(data["groups"]["ok"]["x"]) == 5 and len(data["groups"]["pruned"]["x"]) == 1
    assert data["groups"]["pruned"]["text"] == ["stages=8, tile_cols=256"]
    assert data["front"] == {"x": [32800], "y": [43]}
    assert [(p["reason"], p["count"]) for p in data["pruned"]] == [("capacity", 1)]
    assert "exceeds hardware capacity" in data["pruned"][0]["example"]


def test_chart_fills_in_live_and_a_click_opens_the_point_in_a_studio():
    chart = SweepChart(tslab.Design("tma_copy"))
    r = tslab.sweep("tma_copy", SPACE, measure="check", executor="serial", quiet=True, on_row=chart.add_row)
    assert chart.result.table.drop(columns="check_s").equals(r.table.drop(columns="check_s"))
    names = [t.name for t in chart.figure.data]
    assert names == ["ok", "pruned", "Pareto front"]
    assert "stages=2, tile_cols=128" in chart.figure.data[0].text[0]
    studio = chart.open_point(5)
    assert isinstance(studio, Studio) and studio.design.params["stages"] == 8
    assert studio.verdict.status == "CAPACITY"
    assert (chart.x, chart.y) == ("smem_bytes", "states")
    chart.set_axes(y="smem_bytes")
    assert chart.figure.layout.yaxis.title.text == "smem_bytes"


def test_chart_opens_a_store(tmp_path):
    store = tmp_path / "s.jsonl"
    tslab.sweep("tma_copy", SPACE, measure="check", executor="serial", store=store, quiet=True)
    chart = SweepChart(str(store))
    assert repr(chart) == "SweepChart(smem_bytes vs states: 6 points; 5 ok; 1 pruned; pruned: 1 capacity)"
    chart._y_menu.value = "tile_cols"  # the user picks an axis
    assert chart.y == "tile_cols" and chart.figure.layout.yaxis.title.text == "tile_cols"


def test_chart_follows_a_store_another_sweep_writes(tmp_path):
    store = tmp_path / "s.jsonl"
    tslab.sweep("tma_copy", {"stages": [2]}, measure="check", executor="serial", store=store, quiet=True)
    chart = SweepChart(str(store))
    chart.follow(every_s=0.05)
    try:
        tslab.sweep("tma_copy", {"stages": [2, 16]}, measure="check", executor="serial", store=store, quiet=True)
        deadline = time.monotonic() + 10
        while len(chart.result.table) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        chart.stop()
    assert chart.result.table["status"].tolist() == ["ok", "pruned"]
    with pytest.raises(SweepError, match="follow\\(\\) polls a store file"):
        SweepChart(chart.result).follow()
