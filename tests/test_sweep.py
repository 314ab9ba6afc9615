"""tslab.sweep on the CPU: space and where, pruning by TS's checks, the result table, errors."""

import pandas as pd
import pytest

import tslab
from tslab.sweep import SweepError, SweepResult

SPACE = {"stages": [2, 4, 8], "tile_cols": [128, 256]}


def test_where_filters_exactly_and_capacity_prunes_with_its_reason(tmp_path):
    r = tslab.sweep("tma_copy", SPACE, where=lambda p: p["stages"] != 4, measure="check", executor="serial",
                    quiet=True)
    assert isinstance(r, SweepResult)
    assert r.table[["stages", "tile_cols"]].values.tolist() == [[2, 128], [2, 256], [8, 128], [8, 256]]
    assert r.pruned == {"capacity": 1}
    assert r.counts == {"ok": 3, "pruned": 1}
    over = r.table[r.table["status"] == "pruned"].iloc[0]
    assert (over["stages"], over["tile_cols"], over["error_kind"]) == (8, 256, "capacity")
    assert "exceeds hardware capacity" in over["error"]
    assert r.best("smem_bytes")["stages"] == 2
    assert r.pareto("smem_bytes", "states")[["stages", "tile_cols"]].values.tolist()[0] == [2, 128]
    r.to_parquet(tmp_path / "t.parquet")
    r.to_csv(tmp_path / "t.csv")
    assert pd.read_parquet(tmp_path / "t.parquet").equals(r.table)
    assert pd.read_csv(tmp_path / "t.csv")["status"].tolist() == r.table["status"].tolist()


def test_teaching_designs_are_pruned_with_their_reason():
    expected = {"demo_deadlock": ([1, 2], [["pruned", "deadlock"], ["ok", None]]),
                "demo_race": ([1, 2], [["pruned", "race"], ["ok", None]]),
                "demo_overflow": ([2, 8], [["ok", None], ["pruned", "capacity"]])}
    for kernel, (stages, rows) in expected.items():
        r = tslab.sweep(kernel, {"stages": stages}, measure="check", executor="serial", quiet=True)
        got = r.table[["status", "reason"]].astype(object).where(r.table[["status", "reason"]].notna(), None)
        assert got.values.tolist() == rows, kernel
        assert r.pruned == {rows[0][1] or rows[1][1]: 1}


def test_pipeline_fields_and_invalid_values_are_rows():
    r = tslab.sweep("tma_copy", {"smem_ring.num_stages": [2, 0]}, measure="check", executor="serial", quiet=True)
    assert r.table["status"].tolist() == ["ok", "pruned"]
    assert r.pruned == {"invalid": 1}
    assert "smem_ring" in r.table["error"].iloc[1]


def test_a_bad_space_is_refused_with_a_hint():
    with pytest.raises(SweepError, match=r"'stage': not a parameter .* did you mean 'stages'"):
        tslab.sweep("tma_copy", {"stage": [2]}, measure="check", executor="serial", quiet=True)
    with pytest.raises(SweepError, match="measure='time' is not a stage"):
        tslab.sweep("tma_copy", {"stages": [2]}, measure="time", quiet=True)
    with pytest.raises(SweepError, match="not a non-empty list"):
        tslab.sweep("tma_copy", {"stages": []}, measure="check", quiet=True)


def test_bench_without_a_gpu_is_refused_up_front():
    if tslab.gpu.device() is not None:
        pytest.skip("this machine has a GPU")
    with pytest.raises(tslab.gpu.NoGpuError, match="measure='bench'"):
        tslab.sweep("tma_copy", {"stages": [2]}, quiet=True)


def test_budget_stops_starting_points(capsys):
    r = tslab.sweep("tma_copy", SPACE, measure="check", executor="serial", budget_s=0)
    assert len(r.table) == 0 and r.not_started == 6
    assert "6 not started (budget)" in capsys.readouterr().out


def test_bench_stage_times_only_the_survivors_after_their_compile(monkeypatch):
    """The orchestration of the GPU stage, on the CPU: this machine's timing is replaced, nothing of TS is."""
    import importlib

    timed = []

    def fake_bench(design_json, point, repeats, io):
        timed.append(point)
        return {"device": "0: test", "status": "ok", "median_us": 10.0 * point["stages"]}

    monkeypatch.setattr(importlib.import_module("tslab.gpu.guards"), "require_gpu", lambda what: None)
    monkeypatch.setattr(importlib.import_module("tslab.sweep.run"), "bench_stage", fake_bench)
    r = tslab.sweep("tma_copy", {"stages": [2, 16]}, arch="sm_90a", executor="serial", quiet=True)
    assert timed == [{"stages": 2}]
    assert r.table[["stages", "status", "median_us", "device"]].astype(object).values.tolist()[0] == [
        2, "ok", 20.0, "0: test"]
    assert r.table["registers"].iloc[0] > 0 and r.table["reason"].iloc[1] == "capacity"
    assert r.best("median_us")["stages"] == 2


def test_a_space_over_problem_shapes_compiles_each_point_for_its_problem():
    """``"shape"`` is a problem, not an edit: the design (and its check) stays, each point compiles for its shape."""
    r = tslab.sweep("gemm_sm90", {"tile_n": [128], "shape": [(128, 8192, 8192), (100, 200, 56)]},
                    measure="compile", arch="sm_90a", executor="serial", quiet=True)
    assert r.table["status"].tolist() == ["ok", "ok"]
    assert [tuple(s) for s in r.table["shape"]] == [(128, 8192, 8192), (100, 200, 56)]
    assert r.table["verdict"].tolist() == ["SAFE", "SAFE"] and (r.table["spills"] == 0).all()


@pytest.mark.parametrize("shapes", [[(128, 0, 64)], [128], [("M", 8192, 8192)]])
def test_a_space_of_bad_shapes_is_refused_with_the_form_to_use(shapes):
    with pytest.raises(SweepError, match=r"sweep space 'shape': .* is not a problem shape; give tuples"):
        tslab.sweep("gemm_sm90", {"shape": shapes}, measure="check", executor="serial", quiet=True)
