import itertools

import plotly.graph_objects as go

import tslab
from tslab.kernels import design
from tslab.kernels.gemm_sm90 import ALIASED
from tslab.widgets import LayoutChart
from tslab.widgets.layout_chart import chart_data
from tslab.widgets.layout_data import PHASE_COLOURS, layout_chart_data, layout_figure, summary_text


def test_gemm_aliased_phases_share_offsets_in_distinct_colours():
    data = layout_chart_data(tslab.check(design("gemm_sm90", **ALIASED)))
    bars = {b["name"]: b for b in data["smem"]}
    assert bars["a_buf"]["offset"] == bars["epi_buf"]["offset"] == 0
    assert bars["a_buf"]["colour"] == PHASE_COLOURS[0] and bars["epi_buf"]["colour"] == PHASE_COLOURS[1]
    assert bars["barriers"]["space"] == "barrier" and bars["barriers"]["offset"] >= bars["b_buf"]["end"]
    s = data["summary"]
    assert s["alias_savings"] == bars["epi_buf"]["size"] and s["alias_savings_pct"] > 0
    assert s["smem_used"] == s["smem_data"] + s["barrier_bytes"] and s["fits"]


def test_what_if_without_aliasing_is_laid_out_by_the_real_allocator():
    verdict = tslab.check(design("gemm_sm90", **ALIASED))
    data = chart_data(verdict)
    other = data["without_aliasing"]
    assert other["summary"]["alias_savings"] == 0
    assert other["summary"]["smem_data"] == verdict.smem_total + verdict.alias_savings
    offsets = sorted((b["offset"], b["end"]) for b in other["smem"] if b["space"] == "smem")
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(offsets))  # nothing overlaps any more


def test_no_what_if_without_alias_groups_and_capacity_shown():
    data = chart_data(tslab.check(design("demo_overflow")))
    assert data["without_aliasing"] is None
    assert not data["layout"]["summary"]["fits"]
    assert "262,272 / 232,448 B" in summary_text(data["layout"])


def test_figure_has_one_bar_per_allocation_hover_and_capacity_line():
    data = layout_chart_data(tslab.check(design("gemm_sm90", **ALIASED)))
    fig = layout_figure(data)
    [bar] = fig.data
    assert list(bar.base) == [b["offset"] for b in data["smem"]] and len(bar.y) == 4
    assert "alignment" in bar.hovertemplate and "phase" in bar.customdata[2][5]
    assert any(shape.x0 == 232448 for shape in fig.layout.shapes)


def test_a_design_that_cannot_be_lowered_draws_an_empty_map_with_a_note():
    from tslab.core.check import _empty_verdict

    verdict = _empty_verdict(None, tslab.Issue("input", "design", "cannot be lowered", "fix it"), 0.0)
    assert verdict.status == "INVALID"
    data = chart_data(verdict)
    assert data["layout"]["smem"] == [] and data["without_aliasing"] is None
    assert layout_figure(data["layout"]).layout.annotations


def test_widget_updates_in_place():
    chart = LayoutChart(tslab.check(design("gemm_sm90", **ALIASED)))
    assert isinstance(chart.figure, go.FigureWidget) and chart._what_if_box.layout.display is None
    assert "without aliasing 163,920 B" in chart._summary.value
    chart.update(tslab.check(design("tma_copy", stages=12)))
    assert chart._what_if_box.layout.display == "none"
    assert chart.figure.layout.title.text.startswith("layout: ")
    assert "196,800 / 232,448 B" in chart._summary.value


def test_tmem_allocations_get_their_own_column_map():
    from dataclasses import replace

    import pandas as pd

    verdict = tslab.check(design("tma_copy"))
    tmem = pd.DataFrame([{"name": "acc", "space": "tmem", "offset": 0, "size": 256, "end": 256, "alignment": 1,
                          "alias_group": None, "phase": None}]).astype({"alias_group": "Int64", "phase": "Int64"})
    with_tmem = replace(verdict, layout=pd.concat([verdict.layout, tmem], ignore_index=True), tmem_total=256)
    data = layout_chart_data(with_tmem)
    assert [b["name"] for b in data["tmem"]] == ["acc"] and "TMEM 256 / 512 columns" in summary_text(data)
    fig = layout_figure(data)
    assert len(fig.data) == 2 and fig.data[1].xaxis == "x2" and fig.layout.xaxis2.title.text == "TMEM columns"
    assert [shape.x0 for shape in fig.layout.shapes] == [232448, 512]
