"""BenchPanel driven from Python: compile for sm_90a on a CPU, clear errors, results accumulate on a GPU."""

from pathlib import Path

import pytest

from tslab import gpu
from tslab.widgets import BenchPanel
from tslab.widgets.bench_panel import ptx_excerpt


@pytest.fixture(scope="module")
def panel():
    p = BenchPanel("tma_copy", arch="sm_90a", shape=(512, 512))
    p.set_param("stages", 2)
    assert p.compile() is not None, p.last_error
    return p


def test_compile_shows_registers_smem_spills_and_ptx(panel):
    assert panel.compiled.arch == "sm_90a"
    assert panel.design.params["stages"] == 2
    view = panel._compile_view.value
    assert "registers / thread" in view and "SMEM / block (B)" in view and "spills (B)" in view
    assert "cp.async.bulk.tensor" in view


def test_ptx_excerpt_starts_near_the_bulk_copy():
    ptx = "\n".join(["header"] * 10 + [".entry k", "a", "cp.async.bulk.tensor.2d x", "b"])
    excerpt = ptx_excerpt(ptx, lines=6)
    assert "cp.async.bulk.tensor" in excerpt and excerpt.splitlines()[0] == "header"


def test_bad_input_is_shown_not_raised(panel):
    with pytest.raises(Exception, match="has no parameter 'stage'"):
        panel.set_param("stage", 3)
    panel._shape.value = "512 by 512"
    assert panel.compile() is None
    assert "write it as numbers joined by 'x'" in panel.last_error
    assert "numbers joined" in panel._status.value
    panel._shape.value = "512x512"
    assert panel.compiled is not None  # the last good compile is kept


def test_an_edit_after_compiling_is_compiled_before_anything_runs(tmp_path):
    p = BenchPanel("tma_copy", arch="sm_90a", shape=(512, 512))
    assert p.compile() is not None, p.last_error
    p.set_param("stages", 3)
    assert p._compiled().target.params["stages"] == 3  # not the 4-stage kernel compiled before the edit
    p.set_param("tile_cols", 100000)  # refused by the checker: nothing stale may run in its place
    with pytest.raises(Exception, match=r"tile_cols|SMEM|capacity"):
        p._compiled()
    assert p.run() is None and p.bench() is None


@pytest.mark.skipif(gpu.device() is not None, reason="checks the no-GPU behaviour")
def test_without_a_gpu_the_panel_says_so(panel):
    assert "No GPU here" in BenchPanel("grid_stride_copy")._status.value
    assert panel.run() is None and "no NVIDIA GPU" in panel.last_error
    assert panel.bench() is None and panel.results == []
    assert panel.profile() is None and "need a GPU" in panel.last_error and panel.timeline is None
    assert "no GPU here: compile results only" in panel._chart.children[0].value
    assert panel._figure is None  # no empty axes


@pytest.mark.gpu
def test_bench_results_accumulate(panel):
    assert panel.run() is not None, panel.last_error
    panel.bench(sizes=[(4096, 4096)], repeats=2)
    panel.bench(sizes=[(8192, 8192)], repeats=2)
    assert len(panel.results) == 2 and panel._table.value.count("<tr>") == 3
    assert len(panel.figure.data) >= 1


@pytest.mark.gpu
def test_profile_draws_the_timeline_of_the_fields_design(panel):
    timeline = panel.profile()
    assert timeline is not None, panel.last_error
    assert timeline.kernel == "tma_copy" and len(timeline.frame) > 0
    (shown,) = panel._timeline.outputs
    assert "application/vnd.tslab.timeline.v1+json" in shown["data"]


def test_export_writes_a_package(panel, tmp_path):
    path = panel.export(tmp_path / "tma_copy_pkg")
    assert path is not None, panel.last_error
    assert (path / "design.json").is_file() and (path / "kernel.o").is_file()


def test_the_gemm_compiles_in_the_panel_and_an_over_full_ring_is_refused():
    p = BenchPanel("gemm_sm90", arch="sm_90a", shape=(4096, 4096, 4096))
    compiled = p.compile()
    assert compiled is not None, p.last_error
    assert compiled.spills == 0 and "wgmma.mma_async" in compiled.ptx and "SAFE" in p._compile_view.value
    p.set_param("stages", 4)  # 256-wide tiles: four stages and the C tile exceed 227 KiB
    assert p.compile() is None and "CAPACITY" in p.last_error
    assert p.run() is None  # the 3-stage kernel compiled before the edit is not run in its place


def test_every_gemm_param_has_a_field_of_its_type_and_reaches_the_design():
    """bf16, the aliased epilogue and clusters are chosen in the panel, not silently left at their defaults."""
    import ipywidgets as widgets

    p = BenchPanel("gemm_sm90", arch="sm_90a", dtype="bf16", persistent=False)
    fields = p._param_inputs
    assert isinstance(fields["dtype"], widgets.Dropdown) and isinstance(fields["persistent"], widgets.Checkbox)
    assert isinstance(fields["cluster_m"], widgets.Dropdown) and isinstance(fields["stages"], widgets.IntText)
    p.set_param("epilogue", "aliased")
    p.set_param("cluster_m", 2)
    params = p.design.params
    assert params["dtype"] == "bf16" and params["persistent"] is False
    assert params["epilogue"] == "aliased" and params["cluster_m"] == 2
    with pytest.raises(Exception, match="dtype='fp32' is not one of 'fp16', 'bf16'"):
        p.set_param("dtype", "fp32")
    assert p.design.params["dtype"] == "bf16"


def test_a_misspelt_param_is_refused_by_name():
    with pytest.raises(Exception, match="has no parameter 'stage'"):
        BenchPanel("tma_copy", stage=3)


# -- a captured kernel and the Studio's GPU tab -----------------------------------------------------------
KERNELS = Path(__file__).resolve().parents[1] / "notebooks" / "kernels"


@pytest.fixture(scope="module")
def row_copy():
    import tslab
    from tslab import fake

    return tslab.capture_file(KERNELS / "row_copy.py", "copy_rows", fake.tensor("f16", (1024, 8192)),
                              fake.tensor("f16", (1024, 8192)))


def test_a_captured_design_offers_its_knobs_and_compiles_them_as_edited(row_copy):
    p = BenchPanel(row_copy, arch="sm_90a")
    assert set(p._param_inputs) == set(row_copy.knobs()) == {"ring_stages", "row_elems", "store_threads"}
    p.set_param("ring_stages", 3)
    assert p.design.knobs()["ring_stages"] == 3
    kernel = p.compile()
    assert kernel is not None, p.last_error
    assert kernel.captured and kernel.verdict.design.knobs()["ring_stages"] == 3
    assert "cp.async.bulk.tensor" in kernel.ptx


def test_a_captured_run_without_inputs_says_how_to_give_them(row_copy):
    p = BenchPanel(row_copy, arch="sm_90a")
    assert p.run() is None and "inputs=make_inputs" in p.last_error
    assert p.bench() is None and p.profile() is None and p.results == []


@pytest.mark.skipif(gpu.device() is not None, reason="checks the no-GPU behaviour")
def test_without_a_gpu_run_bench_and_profile_are_disabled(row_copy):
    p = BenchPanel(row_copy, arch="sm_90a", inputs=lambda: None)
    assert [n for n, b in p._buttons.items() if b.disabled] == ["run", "bench", "profile"]
    assert "needs an NVIDIA GPU" in p._buttons["run"].tooltip
    # Called from code, the lambda is taken (the worker is sent a copy) and the run says what it needs.
    assert p.run() is None and "no NVIDIA GPU" in p.last_error


def test_the_studios_gpu_tab_acts_on_the_studios_design_after_every_edit():
    from tslab.kernels import tma_copy
    from tslab.widgets import Studio

    studio = Studio(tma_copy.design(), debounce=0)
    try:
        tabs = studio.editors
        assert tabs.titles[-1] == "GPU" and tabs.children[-1] is studio.bench_panel
        studio.pipeline_editor.set("smem_ring", "num_stages", 2)
        studio.wait()
        assert studio.bench_panel.design.to_json() == studio.design.to_json()
        assert studio.bench_panel.design.pipelines()["smem_ring"]["num_stages"] == 2
        studio.revert(0)
        assert studio.bench_panel.design.to_json() == studio.history[0].to_json()
    finally:
        studio.close()


def test_a_given_design_without_gpu_rules_gets_plain_fields_not_a_crash():
    from tslab.kernels import design

    p = BenchPanel(design("demo_race"), arch="sm_90a")  # a CPU-only teaching design: no RULES, no menus
    assert set(p._param_inputs) == set(design("demo_race").params)
    assert BenchPanel(design("gemm_sm90"), arch="sm_90a")._param_inputs["raster"].options == ("grouped", "row")
