"""The Blackwell GEMM design on the CPU: TMEM accumulators, UMMA rings, the CLC work queue, pairs, refusals."""

from __future__ import annotations

import re

import pytest

import tslab
from tslab.errors import DesignError
from tslab.kernels import gemm_sm100
from tslab.kernels.gemm_sm100_resources import EPI_STAGES


def test_default_is_safe_with_its_accumulators_filling_tmem():
    d = gemm_sm100.design()
    v = tslab.check(d)
    assert v.status == "SAFE", v.text()
    assert d.tasks() == ["EpilogueTask", "MmaTask", "LoadTask", "SchedulerTask"]
    kinds = {name: cfg["pipeline_type"] for name, cfg in d.pipelines().items()}
    assert kinds == {"smem_ab": "TmaUmma", "tmem_acc": "UmmaAsync", "work_queue": "ClcFetchAsync"}
    tmem = v.layout[v.layout["space"] == "tmem"]
    assert tmem[["name", "offset", "size"]].values.tolist() == [["acc", 0, 2 * 256]]
    assert v.tmem_total == v.tmem_capacity == 512
    smem = dict(zip(v.layout["name"], v.layout["size"], strict=True))
    assert smem["a_buf"] == 4 * 128 * 64 * 2 and smem["b_buf"] == 4 * 256 * 64 * 2
    assert smem["epi_buf"] == EPI_STAGES * 128 * 32 * 2 and smem["tmem_ptr"] == 4
    assert v.smem_used <= v.smem_capacity


@pytest.mark.parametrize("params", [{"scheduler": "static"}, {"cluster_m": 2}, {"epilogue": "direct"},
                                    {"dtype": "bf16", "tile_n": 128, "acc_stages": 4},
                                    {"cluster_m": 2, "scheduler": "static", "tile_k": 128, "stages": 3},
                                    {"ab_rings": "merged"}, {"ab_rings": "merged", "cluster_m": 2}])
def test_variants_are_safe(params):
    v = tslab.check(gemm_sm100.design(**params))
    assert v.status == "SAFE", v.text()


def test_the_static_scheduler_has_no_scheduler_warp_and_no_queue_pipeline():
    d = gemm_sm100.design(scheduler="static")
    assert "SchedulerTask" not in d.tasks() and "work_queue" not in d.pipelines()


def test_merged_rings_are_a_pipeline_group_filled_by_two_load_warps():
    d = gemm_sm100.design(ab_rings="merged")
    assert d.tasks() == ["EpilogueTask", "MmaTask", "LoadATask", "LoadBTask", "SchedulerTask"]
    rings = d.pipelines()
    assert rings["ab_sync"]["mode"] == "Merge" and rings["ab_sync"]["members"] == ["smem_a", "smem_b"]
    assert rings["smem_a"]["num_bytes"] == 128 * 64 * 2 and rings["smem_b"]["num_bytes"] == 256 * 64 * 2
    assert ("ab_sync", "ConsumerRelease", "Loop", None) in d.schedule("MmaTask")  # one release for both members
    v = tslab.check(d.with_pipeline("ab_sync", num_stages=3))  # edited as one, TS re-counts the group's barriers
    assert v.status == "SAFE" and {a["name"]: a["size"] for a in v.layout_rows()}["a_buf"] == 3 * 128 * 64 * 2


def test_a_pair_runs_two_cta_rings_signalled_from_its_first_block():
    d = gemm_sm100.design(cluster_m=2)
    rings = d.pipelines()
    assert {n: cfg["cta_layout_vmnk"] for n, cfg in rings.items()} == {n: [2, 1, 1, 1] for n in rings}
    assert rings["smem_ab"]["consumer_signaling_threads"] == "CtaLeader"
    assert rings["smem_ab"]["num_bytes"] == 2 * rings["smem_ab"]["num_bytes_per_warp_per_cta"]
    assert rings["tmem_acc"]["producer_signaling_threads"] == "CtaLeader"
    assert rings["tmem_acc"]["consumer_group"]["size"] == 2 * 128  # both blocks' epilogue threads release
    v = tslab.check(d)
    assert dict(zip(v.layout["name"], v.layout["size"], strict=True))["b_buf"] == 4 * 128 * 64 * 2  # half of B


def test_more_accumulator_stages_than_tmem_holds_is_ts_s_capacity_error():
    v = tslab.check(gemm_sm100.design(acc_stages=3))
    assert v.status == "CAPACITY" and v.tmem_total == 768
    (issue,) = v.errors
    assert issue.where == "tmem" and "TMEM usage (768 columns) exceeds hardware capacity (512 columns)" in issue.message
    assert tslab.check(gemm_sm100.design(acc_stages=3, tile_n=128)).status == "SAFE"  # 384 columns


def test_a_sweep_prunes_the_points_past_tmem_capacity():
    result = tslab.sweep("gemm_sm100", {"acc_stages": [1, 2, 3, 4], "tile_n": [128, 256]}, measure="check",
                         executor="serial", quiet=True)
    table = result.table.set_index(["acc_stages", "tile_n"])
    pruned = set(table.index[table["status"] == "pruned"])
    assert pruned == {(a, n) for a, n in table.index if a * n > 512} == {(3, 256), (4, 256)}
    assert set(table.loc[sorted(pruned), "verdict"]) == {"CAPACITY"}
    assert (table["tmem_cols"] == [a * n for a, n in table.index]).all()
    assert result.pruned == {"capacity": 2}


def test_a_ring_edit_that_breaks_the_pair_is_invalid():
    v = tslab.check(gemm_sm100.design().with_pipeline("tmem_acc", cta_layout_vmnk=[2, 1, 1, 1]))
    assert v.status == "INVALID"
    assert any("does not match the cluster the kernel launches (cluster_m=1: [1, 1, 1, 1])" in e.message
               for e in v.errors), v.errors


@pytest.mark.parametrize(("params", "match"), [
    ({"tile_n": 96}, "param 'tile_n'.*64, 128, 192, 256"),
    ({"tile_k": 32}, "param 'tile_k'"),
    ({"stages": 1}, "param 'stages'.*below 2"),
    ({"cluster_m": 4}, "param 'cluster_m'.*not 1 or 2"),
    ({"scheduler": "dynamic"}, "param 'scheduler'"),
    ({"epilogue": "tmaa"}, "did you mean 'tma'"),
    ({"dtype": "fp32"}, "param 'dtype'"),
])
def test_invalid_params_are_named_with_what_is_allowed(params, match):
    with pytest.raises(DesignError, match=match):
        gemm_sm100.build(**params)


def test_in_the_catalog_with_its_rules():
    assert "gemm_sm100" in tslab.kernels.NAMES and "gemm_sm100" in tslab.kernels.gpu_kernels()
    rules = tslab.kernels.kernel_rules("gemm_sm100")
    assert rules.archs == ("sm_100a",) and rules.package == "gemm"
    assert rules.arch_error("gemm_sm100", "sm_100a", "compile") is None
    assert re.search(r"arch='sm_90a', but this kernel is for sm_100a .*only; compile it with arch='sm_100a'",
                     rules.arch_error("gemm_sm100", "sm_90a", "compile"))
    # a run names the kernel and the GPU already: the kernel is not named twice
    assert rules.arch_error("gemm_sm100", "sm_90a", "run of 'gemm_sm100' on this NVIDIA H200").startswith(
        "run of 'gemm_sm100' on this NVIDIA H200: arch='sm_90a', but")
    assert rules.problem_error(gemm_sm100.PARAMS, (1000, 1000, 1000), "float16") is None
    assert "M a multiple of 256" in rules.problem_error({**gemm_sm100.PARAMS, "epilogue": "direct", "cluster_m": 2},
                                                        (1000, 1024, 1024), "float16")
