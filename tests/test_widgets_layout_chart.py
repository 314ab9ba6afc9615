import itertools

import tslab
from tslab.kernels import design
from tslab.kernels.gemm_sm90 import ALIASED
from tslab.widgets import LayoutChart
from tslab.widgets.layout_chart import LayoutView, chart_data
from tslab.widgets.layout_data import PHASE_COLOURS, layout_chart_data, summary_text


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


def test_a_map_holds_the_rows_and_figures_a_saved_verdict_keeps():
    verdict = tslab.check(design("gemm_sm90", **ALIASED))
    view = LayoutView()
    view.show(verdict, "layout")
    saved = verdict.to_mime()
    assert view.allocations == saved["layout"] and view.memory == saved["memory"] and view.heading == "layout"
    assert [r["phase"] for r in view.allocations] == [0, 0, 1, None]


def test_a_design_that_cannot_be_lowered_draws_an_empty_map_with_a_note():
    from tslab.core.check import _empty_verdict

    verdict = _empty_verdict(None, tslab.Issue("input", "design", "cannot be lowered", "fix it"), 0.0)
    assert verdict.status == "INVALID"
    data = chart_data(verdict)
    assert data["layout"]["smem"] == [] and data["without_aliasing"] is None
    chart = LayoutChart(verdict)
    assert chart.map.allocations == [] and chart._what_if_box.layout.display == "none"


def test_widget_updates_in_place():
    chart = LayoutChart(tslab.check(design("gemm_sm90", **ALIASED)))
    assert chart._what_if_box.layout.display is None and chart.map.heading == "with aliasing"
    assert chart.what_if.heading == "without aliasing" and chart.map.map_width == chart.what_if.map_width == 380
    assert chart.what_if.memory["alias_savings"] == 0
    assert "without aliasing 163,920 B" in chart._summary.value
    chart.update(tslab.check(design("tma_copy", stages=12)))
    assert chart._what_if_box.layout.display == "none"
    assert chart.map.heading == "" and chart.map.map_width == 760  # the chart's own line is the only summary
    assert not chart.map.summary and not chart.what_if.summary and LayoutView().summary
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
    view = LayoutView()
    view.show(with_tmem)
    assert [r["name"] for r in view.allocations if r["space"] == "tmem"] == ["acc"] and view.memory["tmem_used"] == 256


def test_tmem_aliased_phases_share_columns_and_the_summary_counts_what_they_save():
    verdict = tslab.check(design("attention_tmem"))
    data = layout_chart_data(verdict)
    bars = {b["name"]: b for b in data["tmem"]}
    assert bars["s"]["offset"] == bars["p"]["offset"] and bars["s"]["colour"] != bars["p"]["colour"]
    assert bars["o"]["phase"] is None and {b["space"] for b in data["tmem"]} == {"tmem"}
    s = data["summary"]
    assert (s["tmem_used"], s["tmem_capacity"], s["tmem_alias_savings"], s["tmem_fits"]) == (256, 512, 64, True)
    assert summary_text(data).endswith("TMEM 256 / 512 columns (alias savings 64 columns)")
    assert chart_data(verdict)["without_aliasing"] is None  # TMEM alias groups are the kernel's own


def test_tmem_past_capacity_is_said_in_the_summary():
    data = layout_chart_data(tslab.check(design("gemm_sm100", acc_stages=3)))
    assert not data["summary"]["tmem_fits"] and data["summary"]["fits"]  # SMEM fits, TMEM does not
    assert summary_text(data).endswith("TMEM 768 / 512 columns, 256 over")
    assert [(b["name"], b["end"]) for b in data["tmem"]] == [("acc", 768)]
