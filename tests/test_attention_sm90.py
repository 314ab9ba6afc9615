"""The Hopper attention design on the CPU: its variants SAFE, what the Studio draws, the unsafe edits caught."""

from __future__ import annotations

import pytest

import tslab
from tslab.errors import DesignError
from tslab.kernels import attention_sm90 as attn

VARIANTS = [
    {},
    {"overlap": False},
    {"schedule": "cooperative"},
    attn.ONE_WARPGROUP,
    {**attn.ONE_WARPGROUP, "overlap": False},
    {"persistent": True},
    {"persistent": True, "q_stages": 2},
    {"causal": True},
    {"tile_n": 96, "kv_stages": 6},
    attn.HEAD_DIM_64_TWO_WARPGROUPS,
    {"wg_rows": 128, "head_dim": 64, "tile_n": 64},
    attn.ALIASED,
    {"kv_stages": 3},
    {"kv_tiles": 1},
    attn.THREE_WARPGROUPS,
    {**attn.THREE_WARPGROUPS, "causal": True},
    {**attn.THREE_WARPGROUPS, "persistent": True},
    {**attn.THREE_WARPGROUPS, "persistent": True, "q_stages": 2},
    {**attn.THREE_WARPGROUPS, "schedule": "cooperative"},
    {**attn.THREE_WARPGROUPS, "kv_tiles": 1},
]


@pytest.mark.parametrize("params", VARIANTS, ids=str)
def test_variants_are_safe(params):
    verdict = tslab.check(attn.design(**params))
    assert verdict.status == "SAFE", verdict.text()


@pytest.mark.parametrize("params", [{}, {"overlap": False}, {"persistent": True}, attn.ONE_WARPGROUP,
                                    attn.THREE_WARPGROUPS, {"persistent": True, "q_stages": 2}], ids=str)
def test_ts_own_search_agrees(params):
    assert tslab.check(attn.design(**params), strategy="ts").status == "SAFE"


def test_pingpong_is_two_tasks_that_take_turns_and_get_the_registers():
    """Each ping-pong warpgroup is a TS task with registers of its own; MmaTask0 acquires and commits the turn ring,
    MmaTask1 waits on it and releases it; setmaxnreg moves registers from the load/epilogue warpgroup to them."""
    tasks = {t.name: t for t in attn.build().tasks}
    assert [(tasks[n].warp_idx, tasks[n].num_warps, tasks[n].num_registers) for n in ("MmaTask0", "MmaTask1")] == [
        (0, 4, 240), (4, 4, 240)]
    assert [(tasks[n].warp_idx, tasks[n].num_warps, tasks[n].num_registers) for n in ("LoadTask", "EpilogueTask")] == [
        (8, 1, 24), (9, 3, 24)]
    turn0 = [s[1] for s in attn.design().schedule("MmaTask0") if s[0] == "mma_turn"]
    turn1 = [s[1] for s in attn.design().schedule("MmaTask1") if s[0] == "mma_turn"]
    assert turn0[:3] == ["ProducerAcquire", "ProducerWork", "ProducerCommit"]
    assert turn1[:3] == ["ConsumerWait", "ConsumerWork", "ConsumerRelease"]
    assert attn.block_warps(attn.PARAMS) == 12
    # TS's rule: the tasks' changes from the even share (65,536 / 384 -> 168 a thread) sum to at most 0.
    assert 8 * (168 - attn.REGISTERS[2]["mma"]) + 4 * (168 - attn.REGISTERS[2]["other"]) <= 0


def test_three_warpgroups_take_turns_in_a_ring():
    """Head dim 64's 192-row tile: three ping-pong tasks of 160 registers; turn k goes from warpgroup k to k + 1, so
    each waits for the one before it. The first does not wait before its first GEMM and the last does not give
    after its last, so every turn is given as often as it is taken, and TS's checker finds no deadlock."""
    design = attn.design(**attn.THREE_WARPGROUPS)
    tasks = {t.name: t for t in attn.build(**attn.THREE_WARPGROUPS).tasks}
    assert [(tasks[f"MmaTask{k}"].warp_idx, tasks[f"MmaTask{k}"].num_registers) for k in range(3)] == [
        (0, 160), (4, 160), (8, 160)]
    assert [(tasks[n].warp_idx, tasks[n].num_registers) for n in ("LoadTask", "EpilogueTask")] == [(12, 24), (13, 24)]
    assert attn.block_warps(design.params) == 16 and attn.tile_rows(design.params) == 192
    # TS's rule at 512 threads (65,536 / 512 -> 128 a thread): 12 MMA warps up, 4 others down, summing to <= 0
    assert 12 * (attn.REGISTERS[3]["mma"] - 128) + 4 * (attn.REGISTERS[3]["other"] - 128) <= 0

    def turns(task: str) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for step in design.schedule(task):
            if step[0].startswith("mma_turn") and step[1] in ("ConsumerWait", "ProducerCommit"):
                found.setdefault(step[2], []).append(f"{step[1]} {step[0]}")
        return found

    assert turns("MmaTask0") == {"Head": ["ProducerCommit mma_turn0"],
                                 "Loop": ["ConsumerWait mma_turn2", "ProducerCommit mma_turn0"],
                                 "Tail": ["ConsumerWait mma_turn2", "ProducerCommit mma_turn0"]}
    assert turns("MmaTask1")["Loop"] == ["ConsumerWait mma_turn0", "ProducerCommit mma_turn1"]
    assert turns("MmaTask2") == {"Head": ["ConsumerWait mma_turn1", "ProducerCommit mma_turn2"],
                                 "Loop": ["ConsumerWait mma_turn1", "ProducerCommit mma_turn2"],
                                 "Tail": ["ConsumerWait mma_turn1"]}


def test_the_ring_is_filled_in_the_order_the_warpgroups_read_it():
    """With the overlap: K0, then K_i before V_i-1, then V_last; without: K_i, V_i."""
    loads = [s for s in attn.design().schedule("LoadTask") if s[3] == "tma_load" and s[0] == "smem_kv"]
    assert [s[2] for s in loads] == ["Head", "Loop", "Loop", "Tail"]
    plain = [s for s in attn.design(overlap=False).schedule("LoadTask") if s[3] == "tma_load" and s[0] == "smem_kv"]
    assert [s[2] for s in plain] == ["Loop", "Loop"]


def test_memory_map_and_flow_are_there_for_the_studio():
    verdict = tslab.check(attn.design())
    layout = {row["name"]: row for row in verdict.layout_rows()}
    assert layout["q_buf"]["size"] == 128 * 128 * 2 and layout["o_buf"]["size"] == 128 * 128 * 2
    assert layout["kv_buf"]["size"] == 4 * 128 * 128 * 2
    rings = verdict.rings()
    assert rings["smem_kv"]["num_stages"] == 4 and rings["smem_q"]["num_stages"] == 1
    assert rings["mma_turn"]["num_stages"] == 1
    mime = verdict.to_mime()
    assert {t["name"] for t in mime["tasks"]} == {"LoadTask", "MmaTask0", "MmaTask1", "EpilogueTask"}
    assert {r["task"] for r in mime["schedule"]} >= {"MmaTask0", "MmaTask1"}


def test_studio_opens_the_design():
    pytest.importorskip("ipywidgets")
    from tslab.widgets import Studio

    studio = Studio(attn.design())
    studio.wait()
    assert studio.verdict.status == "SAFE"


@pytest.mark.parametrize("params", [{}, attn.ONE_WARPGROUP, {"schedule": "cooperative"}], ids=str)
def test_a_ring_too_shallow_for_the_overlap_deadlocks(params):
    """With the overlap a warpgroup waits for K_i before it releases V_i-1: one K/V stage cannot hold both."""
    verdict = tslab.check(attn.design(**params, kv_stages=1))
    assert verdict.status == "DEADLOCK" and verdict.trace is not None
    assert "smem_kv.ProducerAcquire" in verdict.errors[0].message
    text = verdict.trace.text()
    assert "ConsumerWait(smem_kv)" in text and "DEADLOCK at cursors" in text


def test_one_stage_is_enough_without_the_overlap():
    assert tslab.check(attn.design(**attn.ONE_WARPGROUP, kv_stages=1, overlap=False)).status == "SAFE"


@pytest.mark.parametrize("params", [{}, attn.THREE_WARPGROUPS, {"persistent": True}], ids=str)
def test_q_is_released_before_the_last_pv(params):
    """With the overlap the last Q K^T is done when the K/V loop ends: each warpgroup releases Q there, before the
    tail's P V and the epilogue, so a persistent block's next Q loads under them (and not after the epilogue)."""
    design = attn.design(**params)
    for task in [t for t in design.tasks() if t.startswith("MmaTask")]:
        steps = design.schedule(task)
        release = next(i for i, s in enumerate(steps) if s[:2] == ("smem_q", "ConsumerRelease"))
        last_pv = max(i for i, s in enumerate(steps) if s[3] == "multiply_pv")
        last_qk = max(i for i, s in enumerate(steps) if s[3] == "multiply_qk")
        assert last_qk < release < last_pv, (task, steps[release - 2:release + 3])


@pytest.mark.parametrize("params", [{}, attn.THREE_WARPGROUPS, {"persistent": True, "causal": True}], ids=str)
def test_turn_after_v_takes_the_turn_once_k_and_v_have_landed(params):
    """``turn_after_v``: a warpgroup waits for K_i and V_i-1 before it takes the turn, so the other does not wait
    while it holds the turn for a V tile still landing; Q K^T then reads the K stage noted before the wait for V.
    SAFE under the reduced search and TS's own, and no stage-binding caution."""
    design = attn.design(turn_after_v=True, **params)
    for task in [t for t in design.tasks() if t.startswith("MmaTask")]:
        loop = [s for s in design.schedule(task) if s[2] == "Loop"]
        waits = [i for i, s in enumerate(loop) if s[:2] == ("smem_kv", "ConsumerWait")]
        turn = [i for i, s in enumerate(loop) if s[0].startswith("mma_turn")]
        assert loop[waits[0] + 1][3] == "note_k_stage", (task, loop)
        qk = next(i for i, s in enumerate(loop) if s[3] == "multiply_qk")
        assert waits[1] < min(turn) < qk, (task, loop)
    for strategy in ("auto", "ts"):
        verdict = tslab.check(design, strategy=strategy)
        assert verdict.status == "SAFE" and verdict.shown_cautions == [], (strategy, verdict.text())


@pytest.mark.parametrize(("params", "why"), [({"overlap": False}, "overlap=True"),
                                             ({"schedule": "cooperative"}, "schedule='pingpong'"),
                                             ({"turn_after_v": 1}, "not a bool")])
def test_turn_after_v_outside_the_overlapped_pingpong_is_refused(params, why):
    with pytest.raises(tslab.DesignError, match="turn_after_v") as info:
        attn.design(**{"turn_after_v": True, **params}).lower()
    assert why in str(info.value)


@pytest.mark.parametrize("params", [{}, {"causal": True}, attn.THREE_WARPGROUPS, {"schedule": "cooperative"},
                                    {"persistent": True, "q_stages": 2}, {"turn_after_v": True}], ids=str)
def test_rescale_under_qk_scales_o_between_the_two_gemms(params):
    """``rescale_under_qk``: each K/V trip rescales O after issuing Q K^T and before the P V that adds to O (the
    tensor cores run Q K^T meanwhile), not after the wait for that P V; the last factors are applied once after the
    loop, before Q is released. SAFE under the reduced search and TS's own, no caution."""
    design = attn.design(rescale_under_qk=True, **params)
    for task in [t for t in design.tasks() if t.startswith("MmaTask")]:
        steps = design.schedule(task)
        loop = [s[3] for s in steps if s[2] == "Loop" and s[3]]
        assert loop.count("rescale") == 1, (task, loop)
        assert loop.index("multiply_qk") < loop.index("rescale") < loop.index("multiply_pv"), (task, loop)
        tail = [s for s in steps if s[2] == "Tail"]
        release_q = tail.index(("smem_q", "ConsumerRelease", "Tail", None))
        assert tail[release_q - 1][3] == "rescale", (task, tail)
        assert [s[3] for s in steps if s[2] == "Head"].count("rescale") == 0, task
    for strategy in ("auto", "ts"):
        verdict = tslab.check(design, strategy=strategy)
        assert verdict.status == "SAFE" and verdict.shown_cautions == [], (strategy, verdict.text())


@pytest.mark.parametrize(("params", "why"), [({"overlap": False}, "overlap=True"),
                                             ({"rescale_under_qk": "yes"}, "not a bool")])
def test_rescale_under_qk_without_the_overlap_is_refused(params, why):
    with pytest.raises(tslab.DesignError, match="rescale_under_qk") as info:
        attn.design(**{"rescale_under_qk": True, **params}).lower()
    assert why in str(info.value)


@pytest.mark.parametrize(("value", "hint"), [(1, "FMA pipe"), (7, "FMA pipe"), (9, "FMA pipe"), (-1, "int >= 0"),
                                             (True, "int >= 0"), (3.0, "int >= 0"), ("3", "int >= 0")])
def test_poly_exp2_outside_its_choices_is_refused(value, hint):
    with pytest.raises(tslab.DesignError, match="poly_exp2") as info:
        attn.design(poly_exp2=value)
    assert hint in str(info.value.hint)


def test_poly_exp2_zero_is_the_default_and_may_be_given():
    assert attn.design(poly_exp2=0).params == attn.design().params


def test_poly_exp2_leaves_the_schedule_as_it_was():
    """Which unit computes an exp2 is inside the softmax's work: the steps, the rings and the verdict are the
    default's (the GPU kernel differs, so the launch takes the param: tests/test_launch_constants.py)."""
    design, default = attn.design(poly_exp2=3), attn.design()
    for task in default.tasks():
        assert design.schedule(task) == default.schedule(task)
    assert tslab.check(design).status == "SAFE"


@pytest.mark.parametrize("params", [{}, {**attn.THREE_WARPGROUPS, "causal": True}, {"turn_after_v": True},
                                    {"persistent": True, "q_stages": 2}], ids=str)
def test_convert_before_turn_converts_p_before_the_waits_for_k_and_the_turn(params):
    """The loop's P conversion moves out of the Q K^T step to a step on Q before the trip's first wait; the tail's
    (after Q is released) stays in its P V step. Both searches prove it SAFE: Q is held there."""
    design = attn.design(**params, convert_before_turn=True)
    for task in design.tasks():
        if task.startswith("MmaTask"):
            steps = design.schedule(task)
            converts = [i for i, step in enumerate(steps) if step[3] == "convert_p"]
            assert converts and all(steps[i][2] == "Loop" and steps[i + 1][:2] == ("smem_kv", "ConsumerWait")
                                    for i in converts), steps
    assert tslab.check(design).status == "SAFE"
    assert tslab.check(design, strategy="ts").status == "SAFE"


@pytest.mark.parametrize("flags", [{"skip_unseen": True}, {"mask_prefix": True, "mask_bits": True}], ids=str)
@pytest.mark.parametrize("params", [{"causal": True}, {**attn.THREE_WARPGROUPS, "causal": True},
                                    {"persistent": True, "q_stages": 2, "causal": True}], ids=str)
def test_work_side_flags_leave_the_schedule_as_it_was(params, flags):
    """Which trips a warpgroup skips the softmax of (``skip_unseen``), and which it masks and how (``mask_prefix``,
    ``mask_bits``), is decided inside its work, at run time: every task waits for, releases and passes the same
    stages and turns, so what both searches prove is the default's schedule."""
    _assert_same_schedule_and_safe(params, flags)


def _assert_same_schedule_and_safe(params: dict, flags: dict) -> None:
    """``flags`` over ``params`` leave every task's steps as they were, and both searches prove them SAFE."""
    design, default = attn.design(**params, **flags), attn.design(**params)
    for task in default.tasks():
        assert design.schedule(task) == default.schedule(task)
    assert tslab.check(design).status == "SAFE"
    assert tslab.check(design, strategy="ts").status == "SAFE"


@pytest.mark.parametrize("flags", [{"causal_order": "longest_first_zigzag"},
                                   {"causal_order": "longest_first_all", "snake_rounds": True}], ids=str)
def test_the_order_of_a_persistent_blocks_tiles_leaves_the_schedule_as_it_was(flags):
    """Which causal tile a persistent block takes next (``causal_order``, ``snake_rounds``) is launch arithmetic
    where a tile starts: every task's steps are the default order's, and both searches prove them SAFE."""
    _assert_same_schedule_and_safe({"persistent": True, "q_stages": 2, "causal": True}, flags)


@pytest.mark.parametrize("params", [{}, {"causal": True}, attn.THREE_WARPGROUPS], ids=str)
def test_one_epilogue_warp_parks_the_other_two(params):
    """``epilogue_warps=1``: one warp waits for O and stores it (O's stage counts 32 consumer threads), two warps of
    the load warp's warpgroup have a task with no step, so the block keeps its warpgroups and their registers;
    SAFE under both searches."""
    design = attn.design(epilogue_warps=1, **params)
    tasks = {task.name: task for task in design.lower().tasks}
    assert tasks["EpilogueTask"].num_warps == 1 and tasks["ParkTask"].num_warps == 2
    assert tasks["ParkTask"].warp_idx == tasks["EpilogueTask"].warp_idx + 1
    assert design.pipelines()["smem_o"]["consumer_group"]["size"] == 32
    assert "ParkTask" not in {task.name for task in attn.design(**params).lower().tasks}
    for strategy in ("reduced", "ts"):
        assert tslab.check(design, strategy=strategy).status == "SAFE", strategy


@pytest.mark.parametrize(("params", "hint"), [({"epilogue_warps": 2}, "1 (two of its warps parked)"),
                                              ({"epilogue_warps": True}, "positive int"),
                                              ({"epilogue_warps": 1, "persistent": True}, "epilogue_warps=3")])
def test_epilogue_warps_outside_its_choices_is_refused(params, hint):
    with pytest.raises(tslab.DesignError, match="epilogue_warps") as info:
        attn.design(**params).lower()
    assert hint in str(info.value.hint)


@pytest.mark.parametrize(("params", "warps"), [({}, 8), (attn.THREE_WARPGROUPS, 12), (attn.ONE_WARPGROUP, 4)],
                         ids=str)
def test_per_warp_release_counts_one_lane_per_mma_warp(params, warps):
    """``per_warp_release``: the Q and K/V stages are released by one lane per MMA warp (the barrier counts the
    warps), as CUTLASS and flash-attn-4 release them; every MMA thread without it. SAFE either way."""
    design = attn.design(per_warp_release=True, **params)
    pipes = design.pipelines()
    assert pipes["smem_q"]["consumer_group"]["size"] == pipes["smem_kv"]["consumer_group"]["size"] == warps
    assert attn.design(**params).pipelines()["smem_kv"]["consumer_group"]["size"] == 32 * warps
    assert tslab.check(design).status == "SAFE"


def test_o_over_q_in_the_pingpong_races():
    """Staging O over Q's bytes is safe for one warpgroup, but in the ping-pong one warpgroup writes its O while
    the other may still multiply with Q: TS's checker names both (a counterexample, step by step)."""
    verdict = tslab.check(attn.design().with_alias_groups([[["q_buf"], ["o_buf"]]]))
    assert verdict.status == "RACE" and verdict.trace is not None
    assert "writes smem_o while MmaTask" in verdict.errors[0].message and "smem_q" in verdict.errors[0].message


def test_a_second_stage_of_o_is_invalid():
    """O is staged in one buffer: a second ``smem_o`` stage would be checked SAFE by TS (which counts it as bytes of
    its own) while the kernel writes the next O over the one being stored, so the edit is refused by name."""
    v = tslab.check(attn.design().with_pipeline("smem_o", num_stages=2))
    assert v.status == "INVALID" and [e.where for e in v.errors] == ["resource 'smem_o'"]
    assert "one buffer" in v.errors[0].message and v.errors[0].hint == "keep num_stages=1"


def test_a_release_moved_ahead_of_its_work_is_refused_by_ts():
    """Moving the K/V release ahead of the wgmma that reads the stage: TS refuses the schedule (the work would
    run on a stage no longer held)."""
    design = attn.design(**attn.ONE_WARPGROUP)
    steps = design.schedule("MmaTask")
    release = next(i for i, s in enumerate(steps) if s[:3] == ("smem_kv", "ConsumerRelease", "Loop"))
    qk = next(i for i, s in enumerate(steps) if s[3] == "multiply_qk" and s[2] == "Loop")
    moved = list(steps)
    moved.insert(qk, moved.pop(release))
    verdict = tslab.check(design.with_schedule("MmaTask", moved))
    assert verdict.status == "INVALID"
    assert "ConsumerWork group before ConsumerWait for resource 'smem_kv'" in verdict.errors[0].message


@pytest.mark.parametrize(("params", "match"), [
    ({"head_dim": 96}, "param 'head_dim'.*not 64 or 128"),
    ({"dtype": "fp32"}, "param 'dtype'"),
    ({"schedule": "ping-pong"}, "did you mean 'pingpong'"),
    ({"mma_warpgroups": 1}, "param 'mma_warpgroups'.*two or three warpgroups"),
    ({"mma_warpgroups": 4, "schedule": "cooperative"}, "param 'mma_warpgroups'.*not 1, 2 or 3"),
    ({"mma_warpgroups": 3}, r"(?s)param 'mma_warpgroups'.*needs 160 registers .* over 128 .*use mma_warpgroups=2"),
    ({**attn.THREE_WARPGROUPS, "tile_n": 144}, r"param 'tile_n'.*64 x 144 with head_dim=64 needs 140 registers"),
    ({**attn.THREE_WARPGROUPS, "overlap": False}, "param 'overlap'.*three ping-pong warpgroups"),
    ({"wg_rows": 96}, "param 'wg_rows'"),
    ({"tile_n": 120}, "param 'tile_n'.*multiple of 16"),
    ({"tile_n": 256}, r"64 x 256 with head_dim=128 needs 256 registers"),
    ({"tile_n": 224}, r"64 x 224 with head_dim=128 needs 232 registers per MMA thread for S, P and O, over 208"),
    ({"head_dim": 64, "tile_n": 256}, r"64 x 256 with head_dim=64 needs 224 registers"),
    ({"wg_rows": 128}, r"128 x 128 with head_dim=128 needs 320 registers"),
    ({"kv_stages": 0}, "param 'kv_stages'"),
    ({"causal": 1}, "param 'causal'.*not a bool"),
    ({"late_pv_wait": "yes"}, "param 'late_pv_wait'.*not a bool"),
    ({"pdl": 1}, "param 'pdl'.*not a bool"),
    ({"skip_unseen": "yes"}, "param 'skip_unseen'.*not a bool"),
    ({"convert_before_turn": 1}, "param 'convert_before_turn'.*not a bool"),
    ({"mask_prefix": 1}, "param 'mask_prefix'.*not a bool"),
    ({"mask_bits": "yes"}, "param 'mask_bits'.*not a bool"),
    ({"snake_rounds": 1}, "param 'snake_rounds'.*not a bool"),
    ({"snake_rounds": True, "causal_order": "longest_first"}, "param 'snake_rounds'.*persistent=False"),
    ({"snake_rounds": True, "persistent": True}, "param 'snake_rounds'.*causal_order='by_pair'"),
    ({"epilogue": "aliased", "persistent": True}, "param 'epilogue'.*persistent=True"),
    ({"q_stages": 3}, "param 'q_stages'.*not 1 or 2"),
    ({"causal_order": "lpt"}, "param 'causal_order'"),
    ({**attn.ALIASED, "q_stages": 2}, "param 'q_stages'.*epilogue='aliased'"),
])
def test_invalid_params_name_the_param(params, match):
    with pytest.raises(DesignError, match=match):
        attn.build(**params)


@pytest.mark.parametrize("strategy", ["auto", "ts"])
@pytest.mark.parametrize("params", [{}, {"causal": True}, {"persistent": True, "q_stages": 2}, attn.THREE_WARPGROUPS],
                         ids=["default", "causal", "persistent", "three-warpgroups"])
def test_pdl_waits_for_the_grid_before_the_first_load_and_lets_the_next_launch_after_the_last(params, strategy):
    """``pdl=True``: the load task waits for the grid before it ahead of its first TMA load of Q, K or V and lets the
    next grid launch after its last; TS checks the wait precedes every load (its PDL wiring) and that no interleaving
    launches the next grid before the wait (its PDL order)."""
    d = attn.design(**params, pdl=True)
    assert tslab.check(d, strategy=strategy).status == "SAFE"
    steps = d.schedule("LoadTask")
    assert steps[0][:4] == ("pdl_wait", "ConsumerWork", "Head", "wait_griddep")
    assert steps[-1][:4] == ("pdl_launch", "ProducerWork", "Tail", "launch_griddep")
    assert {"pdl_wait", "pdl_launch"} <= set(d.resources())
    assert not {"pdl_wait", "pdl_launch"} & set(attn.design(**params).resources())
