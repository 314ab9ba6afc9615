"""The Hopper GEMM design on the CPU: defaults, the aliased variant, and invalid parameters refused by name."""

from __future__ import annotations

import re

import pytest

import tslab
from tslab.errors import DesignError
from tslab.kernels import gemm_sm90


def test_default_is_persistent_with_a_dedicated_c_tile_and_safe():
    d = gemm_sm90.design()
    v = tslab.check(d)
    assert v.status == "SAFE" and d.alias_groups() == []
    assert {"work_queue"} <= set(d.resources())
    assert v.smem_total == 3 * (128 + 256) * 64 * 2 + 128 * 256 * 2


def test_a_raster_group_of_16_checks_safe_like_the_default():
    """``raster_group`` orders the tiles a block takes, not its resources or tasks: 16 checks as 8 does."""
    d = gemm_sm90.design(raster_group=16)
    v = tslab.check(d)
    assert v.status == "SAFE" and d.params["raster_group"] == 16
    assert v.smem_total == tslab.check(gemm_sm90.design()).smem_total


def test_aliased_variant_saves_the_c_tile_and_is_safe():
    v = tslab.check(gemm_sm90.design(**gemm_sm90.ALIASED))
    assert v.status == "SAFE" and v.alias_savings == 128 * 128 * 2


@pytest.mark.parametrize("params", [{"cluster_m": 2}, {"cluster_m": 2, **gemm_sm90.ALIASED}])
def test_clusters_of_two_release_each_stage_to_both_blocks(params):
    """In a pair, each MMA warp releases a stage in both blocks (one lane each): TS checks that count."""
    d = gemm_sm90.design(**params)
    assert tslab.check(d).status == "SAFE"
    ring = d.pipelines()["smem_ab"]
    warps = 4 * d.params["mma_warpgroups"]
    assert ring["cta_layout_vmnk"] == [1, 2, 1, 1] and ring["consumer_group"]["size"] == 2 * warps


@pytest.mark.parametrize("params", [{}, gemm_sm90.PINGPONG], ids=["cooperative", "pingpong"])
def test_per_warp_release_alone_counts_one_lane_per_mma_warp(params):
    """per_warp_release=True: one lane per MMA warp releases a stage in a block alone (CUTLASS's release)."""
    d = gemm_sm90.design(**params, per_warp_release=True)
    assert tslab.check(d).status == "SAFE"
    ring = d.pipelines()["smem_ab"]
    assert ring["consumer_group"]["size"] == 8 and ring.get("cta_layout_vmnk") in (None, [1, 1, 1, 1])


def test_subtiled_epilogue_buys_the_default_a_fourth_stage():
    """``epilogue='subtiles'``: C staged in a ring of two groups of two 128 x 32 sub-tiles (32 KB, the whole tile
    was 64 KB), so the 128 x 256 default takes four A/B stages; five do not fit."""
    d = gemm_sm90.design(epilogue="subtiles", stages=4)
    v = tslab.check(d)
    assert v.status == "SAFE" and v.smem_total == 4 * (128 + 256) * 64 * 2 + 2 * 2 * 128 * 32 * 2
    assert gemm_sm90.epilogue_groups(d.params) == (4, 2)
    assert d.pipelines()["smem_epi"]["num_stages"] == gemm_sm90.EPILOGUE_RING
    assert tslab.check(gemm_sm90.design(epilogue="subtiles", stages=5)).status == "CAPACITY"


@pytest.mark.parametrize(("params", "groups"), [({}, (4, 2)), ({"tile_n": 160}, (5, 1)),
                                               ({"tile_m": 64, "tile_n": 64, "mma_warpgroups": 1}, (2, 1))])
def test_the_subtiled_epilogue_always_stages_two_groups_or_more(params, groups):
    assert gemm_sm90.epilogue_groups({**gemm_sm90.PARAMS, **params, "epilogue": "subtiles"}) == groups


def test_subtiled_epilogue_stages_each_group_in_the_mma_tail_and_stores_it_in_the_loop():
    """A TS task has one loop (the MMA task's is the K loop), so its tail stages the groups one after another, each
    step naming its group at compile time; the store task's loop stores one group a trip, from the stage it read."""
    tasks = {t.name: t for t in gemm_sm90.build(epilogue="subtiles", stages=4).tasks}
    tail = [(res.name, stage.name) for res, stage, *_ in tasks["MmaTask"].tail_schedule_list if res.name == "smem_epi"]
    assert tail == [("smem_epi", "ProducerAcquire"), ("smem_epi", "ProducerWork"), ("smem_epi", "ProducerCommit")] * 4
    assert sorted(kwargs["group"] for kwargs in tasks["MmaTask"].constexpr_work_kwargs.values()) == [0, 1, 2, 3]
    store = tasks["EpilogueTask"]
    assert (store.domain_start, store.domain) == (0, 4)
    assert tslab.check(gemm_sm90.design(epilogue="subtiles", stages=4), strategy="ts").status == "SAFE"


#: CuTe's Hopper epilogue tile for each design, computed in a process of its own: the helper needs an MLIR context,
#: and one made and dropped here would leave objects of a dead context for this process's later tests.
CUTES_SUBTILE = """
import json, sys
import cutlass, cutlass.utils.hopper_helpers as sm90
from cutlass._mlir import ir
with ir.Context(), ir.Location.unknown():
    print(json.dumps([list(sm90.compute_tile_shape_or_override(tuple(t), cutlass.Float16, c))
                      for t, c in json.loads(sys.argv[1])]))
"""


def test_the_sub_tile_the_resources_count_is_cutes_default():
    """The launch passes ``epilogue_subtile`` to CuTe as an override; it is CuTe's own default for 16-bit C, so the
    kernels whose C tile is staged whole store the same sub-tiles as before."""
    import json
    import subprocess
    import sys

    variants = ({}, gemm_sm90.PINGPONG, gemm_sm90.DECODE, {"tile_n": 160},
                {"swap_ab": True, "tile_n": 64, "mma_warpgroups": 1})
    designs = [{**gemm_sm90.PARAMS, **params} for params in variants]
    asks = [[(p["tile_m"], p["tile_n"], p["tile_k"]), p["mma_warpgroups"] == 2 and p["schedule"] != "pingpong"]
            for p in designs]
    out = subprocess.run([sys.executable, "-c", CUTES_SUBTILE, json.dumps(asks)], capture_output=True, text=True,
                         timeout=300, check=True)
    assert [list(gemm_sm90.epilogue_subtile(p)) for p in designs] == json.loads(out.stdout.strip().splitlines()[-1])


def test_decode_preset_fits_and_is_safe():
    v = tslab.check(gemm_sm90.design(**gemm_sm90.DECODE))
    assert v.status == "SAFE" and v.smem_total == 8 * (64 + 128) * 64 * 2 + 64 * 128 * 2


@pytest.mark.parametrize("strategy", ["auto", "ts"])
def test_pingpong_is_safe_with_whole_tiles_per_warpgroup_and_reallocated_registers(strategy):
    """Ping-pong gives each warpgroup a TS task of its own (MmaTask0, MmaTask1): both wait on and release every
    stage of the one ring and acquire and commit every staged C tile, so TS checks every interleaving of the two,
    each with the accumulators of a whole 128 x 192 tile and setmaxnreg moving registers to them."""
    d = gemm_sm90.design(**gemm_sm90.PINGPONG)
    v = tslab.check(d, strategy=strategy)
    assert v.status == "SAFE" and v.smem_total == 4 * (128 + 192) * 64 * 2 + 128 * 192 * 2
    tasks = {t.name: t for t in gemm_sm90.build(**gemm_sm90.PINGPONG).tasks}
    mma = gemm_sm90.REGISTER_SPLIT["mma"]
    assert [(tasks[f"MmaTask{wg}"].warp_idx, tasks[f"MmaTask{wg}"].num_warps, tasks[f"MmaTask{wg}"].num_registers)
            for wg in (0, 1)] == [(0, 4, mma), (4, 4, mma)]
    assert "MmaTask" not in tasks
    assert [(t.warp_idx, t.num_warps, t.num_registers) for t in (tasks["LoadTask"], tasks["EpilogueTask"])] == [
        (8, 1, 40), (9, 3, 40)]
    assert gemm_sm90.block_warps(d.params) == 12
    regs = gemm_sm90.REGISTER_SPLIT
    assert 2 * 128 * regs["mma"] + 128 * regs["other"] <= 65536


def test_a_cooperative_tile_past_128_accumulators_a_thread_takes_the_register_split():
    """256 x 192 with two cooperative warpgroups needs 192 fp32 accumulators a thread: the MMA task gets the
    ping-pong's setmaxnreg budget and the load and epilogue warps (three epilogue warps, a warpgroup with the load
    warp) give theirs up. 128 x 256 keeps an even budget, one epilogue warp and ten warps a block."""
    params = {"tile_m": 256, "tile_n": 192, "stages": 3, "epilogue": "subtiles"}
    d = gemm_sm90.design(**params)
    assert gemm_sm90.register_split(d.params) and gemm_sm90.accumulator_registers(d.params) == 192
    assert tslab.check(d).status == "SAFE"
    tasks = {t.name: t for t in gemm_sm90.build(**params).tasks}
    regs = gemm_sm90.REGISTER_SPLIT
    assert [(t.warp_idx, t.num_warps, t.num_registers) for t in tasks.values()] == [
        (8, 1, regs["other"]), (0, 8, regs["mma"]), (9, 3, regs["other"])]
    assert gemm_sm90.block_warps(d.params) == 12
    default = {t.name: t for t in gemm_sm90.build().tasks}
    assert [(t.num_warps, t.num_registers) for t in default.values()] == [(1, None), (8, None), (1, None)]
    assert gemm_sm90.block_warps(gemm_sm90.PARAMS) == 10


ALL_THREADS = {"consumer_group": {"agent": "Thread", "size": 256}}


@pytest.mark.parametrize(("params", "edit", "match"), [
    # TS accepts an all-thread release; in a pair it frees only the releasing block's stage: refused by tslab.
    ({"cluster_m": 2}, ALL_THREADS, "consumer_group.size=256 in a cluster of 2"),
    ({"cluster_m": 2}, {"cta_layout_vmnk": None}, "does not match the cluster the kernel launches"),
    ({}, {"cta_layout_vmnk": [1, 2, 1, 1], "consumer_group": {"agent": "Thread", "size": 16}},
     r"cluster_m=1: None"),
])
def test_ring_edits_that_break_the_cluster_are_invalid(params, edit, match):
    v = tslab.check(gemm_sm90.design(**params).with_pipeline("smem_ab", **edit))
    assert v.status == "INVALID" and any(re.search(match, e.message) for e in v.errors), v.errors


@pytest.mark.parametrize(("params", "match"), [
    ({"persistent": True, "epilogue": "aliased"}, "param 'epilogue'.*persistent=True"),
    ({"tile_k": 32}, "param 'tile_k'"),
    ({"mma_warpgroups": 3}, "param 'mma_warpgroups'"),
    ({"tile_m": 64, "mma_warpgroups": 2}, "param 'tile_m'"),
    ({"tile_n": 80}, r"(?s)param 'tile_n'.*not a multiple of 32 in 64..256.*use one of 64, 96, 128, 160"),
    ({"swap_ab": 1}, r"param 'swap_ab'.*not a bool"),
    ({"per_warp_release": 1}, r"param 'per_warp_release'.*not a bool"),
    ({"pdl": "yes"}, r"param 'pdl'.*not a bool"),
    ({"tile_m": 128, "tile_n": 256, "mma_warpgroups": 1}, "256 fp32 accumulator registers"),
    ({"stages": 1}, "param 'stages'"),
    ({"cluster_m": 4}, "param 'cluster_m'.*not 1 or 2"),
    ({"dtype": "fp32"}, "param 'dtype'"),
    ({"raster": "rows"}, "did you mean 'row'"),
    ({"raster_group": 12}, r"(?s)param 'raster_group'.*=12 is not a power of two in 1..64.*use one of 1, 2"),
    ({"raster_group": 0}, r"param 'raster_group'.*not a power of two"),
    ({"raster_group": True}, r"param 'raster_group'.*raster_group=True is not a power of two"),
    ({"raster_group": 1, "cluster_m": 2}, r"(?s)param 'raster_group'.*cluster_m=2.*use raster_group=2 or more"),
    ({"schedule": "ping-pong"}, "did you mean 'pingpong'"),
    ({"schedule": "pingpong", "mma_warpgroups": 1, "tile_n": 128}, "param 'mma_warpgroups'.*two warpgroups"),
    ({"schedule": "pingpong", "persistent": False, "tile_n": 128}, "param 'persistent'.*take turns"),
    ({"schedule": "pingpong", "tile_n": 256}, r"256 fp32 accumulator registers.*'pingpong', over 192"),
    ({"tile_n": 256, "mma_warpgroups": 1}, r"(?s)256 fp32 .*over 192.*mma_warpgroups=2"),
    # the hint offers only what would fit: two warpgroups of 128 rows each already hold 256 a thread here
    ({"tile_m": 256, "tile_n": 256}, r"(?s)over 192\n  hint: use a smaller tile$"),
    ({"schedule": "pingpong", "tile_n": 256}, r"hint: use a smaller tile, e.g. gemm_sm90.PINGPONG's 128 x 192"),
])
def test_invalid_combinations_name_the_param(params, match):
    with pytest.raises(DesignError, match=match):
        gemm_sm90.build(**params)


@pytest.mark.parametrize("params", [{}, gemm_sm90.ALIASED, gemm_sm90.PINGPONG],
                         ids=["dedicated", "aliased", "pingpong"])
def test_a_second_stage_of_a_whole_c_tile_is_invalid(params):
    """The whole-tile epilogues stage C in one buffer; TS would count a second stage as bytes of its own and check
    SAFE a kernel that writes the next tile over the one being stored, so the edit is refused by name."""
    v = tslab.check(gemm_sm90.design(**params).with_pipeline("smem_epi", num_stages=2))
    assert v.status == "INVALID"
    assert [e.where for e in v.errors] == ["resource 'smem_epi'"]
    assert "one buffer" in v.errors[0].message and "epilogue='subtiles'" in v.errors[0].hint


def test_the_subtiled_epilogue_takes_any_ring_depth():
    """Its ring's stages are buffers of their own, sized from the ring (the kernel's layout too)."""
    for stages in (1, 3):
        d = gemm_sm90.design(epilogue="subtiles", stages=3).with_pipeline("smem_epi", num_stages=stages)
        v = tslab.check(d)
        assert v.status == "SAFE" and v.smem_total == 3 * (128 + 256) * 64 * 2 + stages * 2 * 128 * 32 * 2


PDL_DESIGNS = [{}, {"persistent": False, "epilogue": "aliased", "tile_n": 128}, gemm_sm90.PINGPONG, gemm_sm90.DECODE]


@pytest.mark.parametrize("strategy", ["auto", "ts"])
@pytest.mark.parametrize("params", PDL_DESIGNS, ids=["default", "one-tile", "pingpong", "decode-pairs"])
def test_pdl_waits_for_the_grid_before_the_first_load_and_lets_the_next_launch_after_the_last(params, strategy):
    """``pdl=True``: the load task waits for the grid before it (PDL) ahead of its first TMA load and lets the next
    grid launch after its last; TS checks the wait precedes every load of the A/B ring (its PDL wiring) and that no
    interleaving launches the next grid before waiting (its PDL order). Persistent, both run once around the
    work-tile loop, not every tile."""
    d = gemm_sm90.design(**params, pdl=True)
    assert tslab.check(d, strategy=strategy).status == "SAFE"
    steps = d.schedule("LoadTask")
    assert steps[0][:4] == ("pdl_wait", "ConsumerWork", "Head", "wait_griddep")
    assert steps[-1][:4] == ("pdl_launch", "ProducerWork", "Tail", "launch_griddep")
    load = next(t for t in d.lower().tasks if t.name == "LoadTask")
    once = {(name, stage.name) for res, stage, _ in [*load.pre_work_loop_head_slots, *load.post_work_loop_tail_slots]
            for name in [r.name for r in (*load.src_resources, *load.dst_resources) if id(r) == res]}
    assert once == ({("pdl_wait", "ConsumerWork"), ("pdl_launch", "ProducerWork")} if d.params["persistent"] else set())
    assert "pdl_wait" not in gemm_sm90.design(**params).resources()


def test_an_edited_schedule_keeps_the_steps_that_run_once_around_the_work_tile_loop():
    """Plain steps have no place for 'once before the work-tile loop': an edit of the load task keeps the PDL wait
    and launch there (where they stay in their section), instead of turning them into steps run every tile; moved
    into the K loop, the wait runs every K tile as asked."""
    d = gemm_sm90.design(pdl=True)
    steps = d.schedule("LoadTask")
    same = next(t for t in d.with_schedule("LoadTask", steps).lower().tasks if t.name == "LoadTask")
    assert len(same.pre_work_loop_head_slots) == 1 and len(same.post_work_loop_tail_slots) == 1
    moved = [steps[1], ("pdl_wait", "ConsumerWork", "Loop", "wait_griddep"), *steps[2:]]
    edited = d.with_schedule("LoadTask", moved)
    task = next(t for t in edited.lower().tasks if t.name == "LoadTask")
    assert not task.pre_work_loop_head_slots and len(task.post_work_loop_tail_slots) == 1
    assert tslab.check(edited).status == "SAFE"
