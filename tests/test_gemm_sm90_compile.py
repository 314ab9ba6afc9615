"""gemm_sm90 compiled for sm_90a on a machine without a GPU, with runtime extents as its exported packages are:
no spills and no ptxas C75xx (C7517: a wgmma wait injected; C7511: every wgmma serialised), and a K loop whose
wgmmas stay in flight together."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tslab.compiling.targets import resolve
from tslab.gpu.worker import run_job
from tslab.kernels import gemm_sm90
from tslab.kernels.gemm_sm90_dispatch import CANDIDATES


def _compile(params: dict) -> dict:
    target = dataclasses.replace(resolve(gemm_sm90.design(**params), (256, 8192, 8192)), dynamic=True)
    return run_job("tslab.compiling.compile:compile_job", {"target": target.to_dict(), "arch": "sm_90a", "sms": 132},
                   timeout=900, what="compile of 'gemm_sm90' for sm_90a")


@pytest.mark.parametrize("name", ["default", "pingpong_128x128", "pairs", "swap_64x192", "swap_128x160_alone",
                                  "swap_128x192_aliased", "subtiles", "swap_128x160_subtiles", "coop_256x192"])
def test_runtime_extents_keep_the_wgmmas_pipelined(name):
    """Before the epilogue waited for the wgmmas on every path, ptxas could not tell the branch that skips a runtime
    K loop from the one after it: C7517 in every design, and in ping-pong C7511 with a warpgroup arrive and wait
    around each of the K loop's 16 wgmmas (32 WARPGROUP instructions; 4 when pipelined)."""
    from tests.sass import loops

    out = _compile(CANDIDATES[name])
    assert out["spill_stores"] == 0 and out["spill_loads"] == 0, out["log"][-2000:]
    assert not re.search(r"\(C75\d\d\)", out["log"]), out["log"][-3000:]
    k_loop = next(ops for ops in loops(out["cubin"]) if ops["HGMMA"])
    assert k_loop["WARPGROUP"] <= 4, dict(k_loop)


def test_per_warp_release_arrives_on_the_empty_barrier_from_one_lane_per_warp():
    """per_warp_release=True: the K loop's release of a stage is an arrive predicated on the warp's lane 0
    (``@!P SYNCS.ARRIVE``), not an arrive by every MMA thread."""
    from tests.sass import loop_bodies

    bodies = loop_bodies(_compile({"per_warp_release": True})["cubin"])
    k_loop = next(body for body in bodies if any("HGMMA" in ins for ins in body))
    arrives = [ins for ins in k_loop if "SYNCS.ARRIVE" in ins]
    assert arrives and all(re.match(r"@!?U?P\w+\s", ins) for ins in arrives), arrives


def test_an_edited_epilogue_ring_compiles_with_as_many_slots_as_its_stages():
    """The sub-tiled epilogue's SMEM layout takes its slots from the ring TS checked (an edit's ``num_stages``), as
    the A/B layouts take theirs from ``smem_ab``'s (three here, where the params say four): both compile clean."""
    design = (gemm_sm90.design(epilogue="subtiles", stages=4).with_pipeline("smem_epi", num_stages=3)
              .with_pipeline("smem_ab", num_stages=3))
    target = dataclasses.replace(resolve(design, (256, 8192, 8192)), dynamic=True)
    out = run_job("tslab.compiling.compile:compile_job", {"target": target.to_dict(), "arch": "sm_90a", "sms": 132},
                  timeout=900, what="compile of 'gemm_sm90' for sm_90a")
    assert out["spill_stores"] == 0 and out["spill_loads"] == 0, out["log"][-2000:]
    assert not re.search(r"\(C75\d\d\)", out["log"]), out["log"][-3000:]


def test_pdl_waits_before_the_first_tma_load_and_launches_dependents_after_the_last():
    """pdl=True: the SASS waits for the grid before (ACQBULK, griddepcontrol.wait) ahead of every TMA load of A and B
    (UTMALDG) and lets the next grid launch (PREEXIT, griddepcontrol.launch_dependents) after the last; without it,
    neither instruction is there."""
    from tests.sass import pdl_order

    def order(params: dict) -> list[str]:
        return pdl_order(_compile(params)["cubin"])

    for params in ({"pdl": True}, {**CANDIDATES["swap_128x160_alone"], "pdl": True}):
        ops = order(params)
        assert ops.count("ACQBULK") == 1 and ops.count("PREEXIT") == 1, ops
        assert ops.index("ACQBULK") < ops.index("UTMALDG") and ops.index("PREEXIT") > max(
            i for i, op in enumerate(ops) if op == "UTMALDG"), ops
    assert not {"ACQBULK", "PREEXIT"} & set(order(CANDIDATES["swap_128x160_alone"]))


def test_a_raster_group_of_16_compiles_clean_and_walks_its_groups_by_a_mask_of_15():
    """``raster_group`` is a compile-time constant: 16 compiles without spills, and the grouped order's mask of a
    group's rows (``rest & (group - 1)``) and shift to its columns (``rest >> log2(group)``) are 15 and 4 where the
    default's are 7 and 3 (the PTX's ``and.b32``/``shr.s32`` immediates; nothing else of theirs changes)."""

    def immediates(ptx: str, op: str) -> set[str]:
        return set(re.findall(rf"{re.escape(op)}\s+%r\d+, %r\d+, (\d+);", ptx))

    out = _compile({"raster_group": 16})
    assert out["spill_stores"] == 0 and out["spill_loads"] == 0, out["log"][-2000:]
    assert not re.search(r"\(C75\d\d\)", out["log"]), out["log"][-3000:]
    default = _compile({})["ptx"]
    for op, ours, theirs in (("and.b32", "15", "7"), ("shr.s32", "4", "3")):
        assert immediates(out["ptx"], op) - immediates(default, op) == {ours}, op
        assert immediates(default, op) - immediates(out["ptx"], op) == {theirs}, op


def test_a_cooperative_256_x_192_tile_moves_registers_to_its_mma_warpgroups():
    """192 accumulators a thread fit only with the register split: setmaxnreg raises the MMA warpgroups to 232 and
    lowers the load and epilogue warps' warpgroup to 40, and nothing spills."""
    out = _compile(CANDIDATES["coop_256x192"])
    regs = gemm_sm90.REGISTER_SPLIT
    assert re.search(rf"setmaxnreg\.inc\.sync\.aligned\.u32\s+{regs['mma']}\b", out["ptx"])
    assert re.search(rf"setmaxnreg\.dec\.sync\.aligned\.u32\s+{regs['other']}\b", out["ptx"])
    assert out["spill_stores"] == 0 and out["spill_loads"] == 0, out["log"][-2000:]
