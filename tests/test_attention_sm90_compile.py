"""attention_sm90 compiled for sm_90a on a machine without a GPU: wgmma, TMA, setmaxnreg, no spills, no C75xx."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tslab.compiling.targets import resolve
from tslab.gpu.worker import run_job
from tslab.kernels import attention_sm90 as attn

SHAPE = (2, 1000, 1000, 4, 2)  # batch, seqlen_q, seqlen_k, heads, heads_kv: tails in both sequences, GQA 2


def _compile(params: dict, *, dynamic: bool = True) -> dict:
    """The compile job ``tslab.gpu.compile`` runs (in its worker), with runtime extents unless ``dynamic=False``."""
    target = resolve(attn.design(**params), SHAPE)
    if dynamic:
        target = dataclasses.replace(target, dynamic=True)
    return run_job("tslab.compiling.compile:compile_job", {"target": target.to_dict(), "arch": "sm_90a", "sms": 132},
                   timeout=900, what="compile of 'attention_sm90' for sm_90a")


CASES = [
    ({}, True),  # the default: ping-pong, overlap, bf16, head_dim 128, runtime extents
    ({}, False),
    ({"causal": True, "dtype": "fp16"}, True),
    ({"causal": True, "causal_order": "longest_first"}, True),
    ({**attn.HEAD_DIM_64_TWO_WARPGROUPS, "causal": True}, True),
    ({"overlap": False}, True),
    ({"schedule": "cooperative"}, True),
    (attn.ONE_WARPGROUP, True),
    ({"tile_n": 176, "kv_stages": 3, "causal": True}, True),  # FlashAttention-3's non-causal tile: the widest rule
    ({**attn.HEAD_DIM_64_TWO_WARPGROUPS, "tile_n": 224}, True),
    (attn.THREE_WARPGROUPS, True),  # head_dim 64's 192-row tile: 160 registers a thread hold S, P and O
    ({**attn.THREE_WARPGROUPS, "causal": True, "dtype": "fp16"}, True),
    ({**attn.THREE_WARPGROUPS, "persistent": True}, True),
    ({"persistent": True}, True),  # the work queue's state on top of 240 registers: C7512 before P's conversion moved
    ({"persistent": True, "q_stages": 2}, True),  # the next tile's Q loads under this one: 224 KB of SMEM
    ({"persistent": True, "q_stages": 2, "tile_n": 176, "kv_stages": 2}, True),  # A31: the short rows' schedule, wide
    ({**attn.THREE_WARPGROUPS, "persistent": True, "q_stages": 2}, True),
    ({**attn.THREE_WARPGROUPS, "persistent": True, "q_stages": 2, "causal": True, "causal_order": "longest_first"},
     True),  # A43: a persistent block's tiles in LPT order
    ({**attn.THREE_WARPGROUPS, "persistent": True, "q_stages": 2, "causal": True, "causal_order": "longest_first_all"},
     True),  # A45: the LPT order over all pairs as one section
    ({**attn.THREE_WARPGROUPS, "persistent": True, "q_stages": 2, "causal": True,
      "causal_order": "longest_first_zigzag"}, True),  # A46: every other L2 section shortest first
    ({**attn.THREE_WARPGROUPS, "persistent": True, "q_stages": 2, "causal": True, "causal_order": "longest_first_all",
      "snake_rounds": True}, True),  # A47: every other round of tiles in reverse (the grid's size read in the kernel)
    ({**attn.THREE_WARPGROUPS, "schedule": "cooperative", "causal": True}, True),  # A44: one copy of the K/V loop
    ({"turn_after_v": True}, True),  # Q K^T reads the K stage noted before the wait for V
    ({**attn.THREE_WARPGROUPS, "turn_after_v": True, "causal": True}, True),
    ({"per_warp_release": True, "persistent": True, "q_stages": 2}, True),  # one lane a warp releases a stage
    ({"rescale_under_qk": True, "causal": True}, True),  # O rescaled between the Q K^T and P V wgmmas' issue
    ({**attn.THREE_WARPGROUPS, "rescale_under_qk": True}, True),
    ({"poly_exp2": 2, "dtype": "fp16"}, True),  # every other exp2 of the loop's softmax on the FMA pipe
    ({**attn.THREE_WARPGROUPS, "poly_exp2": 3}, True),
    ({"poly_exp2": 3, "tile_n": 176, "kv_stages": 3}, True),
]


@pytest.mark.parametrize(("params", "dynamic"), CASES, ids=str)
def test_compiles_without_spills_or_serialised_wgmma(params, dynamic):
    out = _compile(params, dynamic=dynamic)
    p = {**attn.PARAMS, **params}
    dtype = {"bf16": "bf16", "fp16": "f16"}[p["dtype"]]
    assert f"wgmma.mma_async.sync.aligned.m64n{p['tile_n']}k16.f32.{dtype}.{dtype}" in out["ptx"]  # S = Q K^T
    assert f"wgmma.mma_async.sync.aligned.m64n{p['head_dim']}k16.f32.{dtype}.{dtype}" in out["ptx"]  # O += P V
    assert "cp.async.bulk.tensor.4d.shared::cta.global" in out["ptx"]  # TMA loads of Q, K, V
    assert "cp.async.bulk.tensor.4d.global.shared::cta" in out["ptx"]  # TMA store of O
    assert "stmatrix.sync.aligned" in out["ptx"] and "ex2.approx" in out["ptx"]
    assert out["spill_stores"] == 0 and out["spill_loads"] == 0 and out["stack_frame"] == 0, out["log"][-3000:]
    assert not re.search(r"\(C75\d\d\)", out["log"]), out["log"][-3000:]
    regs = attn.REGISTERS[p["mma_warpgroups"]]
    if regs["mma"] is not None:
        assert re.search(rf"setmaxnreg\.inc\.sync\.aligned\.u32\s+{regs['mma']}\b", out["ptx"])
        assert re.search(rf"setmaxnreg\.dec\.sync\.aligned\.u32\s+{regs['other']}\b", out["ptx"])
        assert f".reqntid {32 * attn.block_warps(p)}" in out["ptx"]


def test_pingpong_issues_each_gemm_once_per_step_without_injected_waits():
    """Per warpgroup body: the head's S, the loop's S and PV, the tail's PV (8 k16 steps each for head_dim 128),
    and one wgmma wait per release that needs one: ptxas adds no wgmma of its own."""
    out = _compile({})
    assert out["ptx"].count("wgmma.mma_async") == 2 * 4 * 8  # two warpgroup tasks x four GEMMs x 8 k-steps
    assert out["ptx"].count("wgmma.wait_group.sync.aligned") == 2 * 4


@pytest.mark.parametrize("params", [{}, {"causal": True}, attn.HEAD_DIM_64_TWO_WARPGROUPS, attn.THREE_WARPGROUPS],
                         ids=str)
def test_the_k_v_loop_is_lean(params):
    """The ping-pong's K/V loop in SASS, once per warpgroup task: 16 wgmmas (8 QK^T, 8 PV) and about 460 (non-causal)
    to 600 (causal) instructions a K/V tile, of which the mask (causal, taken only on tiles that need one) is one
    compare and one select a score. Four regressions it catches: a mask check in the non-causal loop, the mask as
    a runtime ``if`` per element (1,642 instructions, ~960 FSEL), P converted at the end of the softmax's step,
    which ptxas carried across the loop's back edge as fp32 copies (64 moves) and converted twice (711
    instructions, 64 F2FP), and the wgmma descriptors rebuilt for every k step (610 instructions instead of 582 at
    head_dim 128)."""
    from tests.sass import loops

    out = _compile(params)
    p = {**attn.PARAMS, **params}
    scores = 64 * p["tile_n"] // 128  # S elements a thread holds: a warpgroup's 64 rows x tile_n over 128 threads
    wgmmas = p["head_dim"] // 16 + p["tile_n"] // 16  # QK^T's k16 steps over head_dim, PV's over tile_n
    found = [ops for ops in loops(out["cubin"]) if ops["HGMMA"]]
    tasks = p["mma_warpgroups"]
    body = [ops for ops in found if ops["HGMMA"] == wgmmas][:tasks]
    assert len(body) == tasks, f"expected one K/V loop per MMA warpgroup task, found {[dict(o) for o in found[:4]]}"
    for ops in body:
        assert ops["MUFU"] <= scores + 4, ops  # one exp2 a score, and a rescale factor per row
        assert ops["F2FP"] == scores // 2, ops  # P packed two to a register, once
        assert ops["FSEL"] <= scores + 8, ops
        assert ops["MOV"] + ops["IMAD"] <= 16, ops
        # wgmma descriptors: an offset added to each (UIADD3.64 or an OR), not rebuilt word by word (UMOV pairs:
        # 23-41 a K/V tile when the GEMMs went through the tiled MMA over the staged fragment)
        assert ops["UMOV"] <= 12, ops
        assert sum(ops.values()) <= 10 * scores + 40, ops
        # the trip's mbarrier operations: a try-wait each for K and V and a release of each (one instruction on a
        # try-wait's fast path, its retry loop out of line), and the turn: two warpgroups one try-wait and one
        # arrive, as a named barrier's BAR.SYNC / BAR.ARV would; three, in a ring of turns, wait for and release
        # the turn before their own and acquire and give their own, four
        turn = 2 if tasks == 2 else 4
        assert ops["SYNCS"] <= 4 + turn, ops
        if not p["causal"]:
            # K/V tiles go last to first, so only the head's can reach past seqlen_k: the loop checks no mask.
            # (With the check, 582 instructions a tile at head_dim 128 instead of 456: its compare and branch
            # pushed the Q descriptors out of uniform registers, rebuilt each tile.)
            assert ops["FSEL"] <= 8 and ops["ISETP"] <= 2, ops
            assert sum(ops.values()) <= 7 * scores + 24, ops


@pytest.mark.parametrize(("params", "under"), [({}, False), ({"rescale_under_qk": True}, True),
                                               ({**attn.THREE_WARPGROUPS, "rescale_under_qk": True}, True)], ids=str)
def test_o_is_rescaled_where_the_schedule_puts_it(params, under):
    """The K/V loop's SASS keeps the schedule's order: with ``rescale_under_qk`` O's rescale (an FMUL an O element a
    thread holds) is issued among the wgmmas, under Q K^T (ptxas places all but the first two after the first Q K^T
    wgmma); without it, after them. The loop stays as lean."""
    from tests.sass import loop_bodies, opcode

    out = _compile(params)
    p = {**attn.PARAMS, **params}
    wgmmas = p["head_dim"] // 16 + p["tile_n"] // 16
    o_elements = 64 * p["head_dim"] // 128  # a warpgroup's 64 rows x head_dim over 128 threads
    bodies = [[opcode(i) for i in b] for b in loop_bodies(out["cubin"])]
    body = next(b for b in bodies if b.count("HGMMA") == wgmmas)
    first, last = body.index("HGMMA"), len(body) - 1 - body[::-1].index("HGMMA")
    among = body[first:last].count("FMUL")
    assert (among >= o_elements // 2) if under else (among == 0), (among, len(body))
    assert len(body) <= 7 * (64 * p["tile_n"] // 128) + 24, len(body)


@pytest.mark.parametrize(("params", "late"), [({}, False), ({"causal": True}, False), ({"late_pv_wait": True}, True),
                                              ({"late_pv_wait": True, "causal": True}, True),
                                              ({**attn.THREE_WARPGROUPS, "late_pv_wait": True}, True)], ids=str)
def test_the_pv_wait_stays_after_the_exponentials_with_late_pv_wait(params, late):
    """ptxas moves the wait for the P V wgmma (``WARPGROUP.DEPBAR.LE gsb0, 0x0``), written after the softmax, up
    above most of its MUFU.EX2 (to the row max; causal, to the wait for S); with ``late_pv_wait`` a no-op on the Q
    stage's barrier computed from the last row's sum keeps it after every exponential of the K/V loop, and the
    loop's wgmmas stay in flight (one wait for S, one for P V)."""
    from tests.sass import loop_bodies

    out = _compile(params)
    p = {**attn.PARAMS, **params}
    wgmmas = p["head_dim"] // 16 + p["tile_n"] // 16
    body = next(b for b in loop_bodies(out["cubin"]) if sum("HGMMA" in i for i in b) == wgmmas)
    waits = [n for n, i in enumerate(body) if "WARPGROUP.DEPBAR" in i]
    exps = [n for n, i in enumerate(body) if "MUFU.EX2" in i]
    assert len(waits) == 2, waits
    pv_wait = waits[-1]
    assert (pv_wait > exps[-1]) if late else (sum(n > pv_wait for n in exps) > len(exps) // 2), (pv_wait, exps)


@pytest.mark.parametrize(("params", "every"), [({"poly_exp2": 3}, 3), ({"poly_exp2": 4}, 4),
                                               ({**attn.THREE_WARPGROUPS, "poly_exp2": 3}, 3),
                                               ({"poly_exp2": 3, "causal": True}, 3)], ids=str)
def test_poly_exp2_moves_every_kth_exp2_off_mufu(params, every):
    """``poly_exp2=k``: the K/V loop's softmax computes every k-th exp2 of a row as a cubic on the FMA pipe (three
    FFMA and a shift-add into the exponent each) and the rest on MUFU; the causal loop, whose scores may be masked,
    also selects 0 for the cubic's 2^-125 below the clamp (one more FSEL each). No spills."""
    from tests.sass import loops

    out = _compile(params)
    assert out["spill_stores"] == 0 and out["spill_loads"] == 0, out["log"][-2000:]
    p = {**attn.PARAMS, **params}
    wgmmas = p["head_dim"] // 16 + p["tile_n"] // 16
    scores = 64 * p["tile_n"] // 128
    rows, cols = 2, scores // 2  # a thread's two rows of the 64 x tile_n accumulator
    moved = rows * (cols // every)
    body = next(ops for ops in loops(out["cubin"]) if ops["HGMMA"] == wgmmas)
    assert body["MUFU"] == scores + rows - moved, dict(body)  # one a score and one rescale factor a row
    assert body["LEA"] + body["IMAD"] >= moved, dict(body)  # n added to the cubic's exponent bits
    assert body["FFMA"] >= scores + 3 * moved, dict(body)
    if p["causal"]:
        assert body["FSEL"] >= scores + moved, dict(body)  # the mask's select a score, and the cubic's zero


@pytest.mark.parametrize("params", [{**attn.THREE_WARPGROUPS, "causal": True}, {"causal": True, "dtype": "fp16"},
                                    {"tile_n": 176, "kv_stages": 3, "causal": True}], ids=str)
def test_mask_bits_and_mask_prefix_shorten_the_causal_trip(params):
    """``mask_bits``: the mask's compare a score becomes a bit of a register, which ptxas moves into predicates
    seven at a time (R2P) for the FSEL: no ISETP a score. ``mask_prefix``: the trips that need a mask are counted
    once a tile, so the loop's check is one compare of the trip's index. Both together: the K/V loop (its masked
    path included) is shorter than the default's, with no spills and no injected waits."""
    from tests.sass import loops

    p = {**attn.PARAMS, **params}
    wgmmas = p["head_dim"] // 16 + p["tile_n"] // 16
    scores = 64 * p["tile_n"] // 128

    def loop(extra: dict) -> dict:
        out = _compile({**params, **extra})
        assert out["spill_stores"] == 0 and "C75" not in out["log"], out["log"][-2000:]
        return next(ops for ops in loops(out["cubin"]) if ops["HGMMA"] == wgmmas)

    default, both = loop({}), loop({"mask_prefix": True, "mask_bits": True})
    assert default["ISETP"] >= scores and default["R2P"] == 0, dict(default)
    assert both["ISETP"] <= 4 and both["R2P"] >= scores // 8, dict(both)
    assert sum(both.values()) <= sum(default.values()) - scores // 3, (sum(both.values()), sum(default.values()))


def test_pdl_waits_before_the_first_tma_load_and_launches_dependents_after_the_last():
    """pdl=True: the SASS waits for the grid before (ACQBULK, griddepcontrol.wait) once, ahead of every TMA load
    (UTMALDG), and lets the next grid launch (PREEXIT) once, after the last; without it, neither is there."""
    from tests.sass import pdl_order

    def order(params: dict) -> list[str]:
        return pdl_order(_compile(params)["cubin"])

    ops = order({"pdl": True, "causal": True})
    assert ops.count("ACQBULK") == 1 and ops.count("PREEXIT") == 1, ops
    loads = [i for i, op in enumerate(ops) if op == "UTMALDG"]
    assert ops.index("ACQBULK") < loads[0] and ops.index("PREEXIT") > loads[-1], ops
    assert not {"ACQBULK", "PREEXIT"} & set(order({"causal": True}))
