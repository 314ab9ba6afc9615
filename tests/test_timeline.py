"""Timelines from recorded IKET profiles (H200, ``benchmarks/profile_kernels.py``): placed in TS's schedules,
summarised, replayed through the checker, saved and exported; and what ``profile`` refuses before it needs a GPU."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from cutlass.experimental.task_scheduling.enums import Every, LoopGuard, ScheduleStage, ScheduleStageType
from cutlass.experimental.task_scheduling.schedule_builder import ScheduleResult
from cutlass.experimental.task_scheduling.task import Task

import tslab
from tslab import gpu
from tslab.gpu import profiling
from tslab.gpu.profiled_tasks import TimelineError, signal_resources, task_steps
from tslab.gpu.timeline import Timeline, place
from tslab.kernels import design
from tslab.kernels._teaching import Buffer, Sink, Source, async_pipeline

RECORDED = Path(__file__).parent / "fixtures" / "iket"
ROOT = Path(__file__).resolve().parents[1]


def job(name: str) -> dict:
    with gzip.open(RECORDED / f"{name}.job.json.gz", "rt") as fh:
        return json.load(fh)


def timeline(name: str, kernel: str) -> Timeline:
    d = design(kernel)
    return Timeline.from_job(kernel, task_steps(d.lower().tasks), job(name))


def test_every_copy_range_is_placed_in_its_tasks_schedule():
    t = timeline("tma_copy", "tma_copy")
    assert len(t.frame) == 85 and t.frame.section.notna().all()
    store = t.frame[t.frame.task == "StoreTask"]
    assert sorted(store.warp.unique()) == [0, 1, 2, 3]  # the store task's four warps
    assert (store.groupby("warp").size() == 17).all()  # bind once, then 4 trips of wait, read, store, release
    assert set(store[store.section == "loop"].iteration) == {0, 1, 2, 3}
    assert (t.frame.start_ns >= 0).all() and (t.frame.duration_ns >= 0).all()
    assert t.lifetimes.start_ns.min() == 0


def test_the_gemm_summary_names_what_each_wait_waits_for():
    t = timeline("gemm_sm90_replay", "gemm_sm90")
    s = t.summary().set_index(["task", "step"])
    assert s.loc[("MmaTask", "smem_ab.ConsumerWait"), "waits_for"].startswith("overlapped")
    assert s.loc[("LoadTask", "smem_ab.ProducerAcquire"), "waits_for"] == "no free stage"
    assert s.loc[("EpilogueTask", "smem_epi.ConsumerWait"), "waits_for"] == "data not yet committed"
    assert ((s.share >= 0) & (s.share <= 1)).all()
    reading = t.reading()
    assert any(line.startswith("MmaTask waited") and "not a stall" in line for line in reading)
    assert t.overhead == pytest.approx(t.marked_us / t.minimal_us) and t.plain_us > 0


def test_a_filtered_profile_keeps_only_the_marked_steps():
    d = design("gemm_sm90")
    steps = task_steps(d.lower().tasks, {"ConsumerWait", "ProducerAcquire"})
    t = Timeline.from_job("gemm_sm90", steps, job("gemm_sm90_waits"))
    assert set(t.frame.stage) == {"ConsumerWait", "ProducerAcquire"}
    assert (t.frame[t.frame.task == "MmaTask"].groupby(["warp", "tile"]).size() > 60).all()


def test_the_measured_order_replays_through_the_checker():
    d = design("gemm_sm90")
    explorer = timeline("gemm_sm90_replay", "gemm_sm90").replay(d)
    assert explorer.status.kind == "complete"
    assert len(explorer.history) - 1 == len(tslab.trace(d, to="complete").steps) - 1


def test_a_measured_order_the_checker_would_not_take_is_said_loudly():
    d = design("gemm_sm90")
    t = timeline("gemm_sm90_replay", "gemm_sm90")
    mma = t.frame.task == "MmaTask"
    t.frame.loc[mma, ["start_ns", "end_ns"]] -= 10_000  # the MMAs finish before their data arrived
    with pytest.raises(TimelineError, match=r"MmaTask's measured step .* is not one the checker lets run then"):
        t.replay(d)


def test_a_block_that_ran_more_trips_than_the_checker_models_is_refused_with_the_shape_to_profile():
    saved = Path(__file__).parents[1] / "notebooks" / "data" / "h200_profile_gemm_sm90.timeline.json.gz"
    t = Timeline.load(saved)  # 4096^3: 64 K tiles per work tile
    with pytest.raises(TimelineError, match=r"LoadTask ran 64 loop trips per work tile, the checker models 4: .*"
                                            r"1536 x 5632 x 256"):
        t.replay(design("gemm_sm90"))


def test_replay_needs_every_step_marked():
    t = timeline("gemm_sm90_replay", "gemm_sm90")
    t.meta["stages"] = ["ConsumerWait"]
    with pytest.raises(TimelineError, match=r"replay needs every step marked"):
        t.replay(design("gemm_sm90"))


def test_ranges_no_trip_count_explains_are_not_a_path_of_the_design():
    (store,) = [s for s in task_steps(design("tma_copy").lower().tasks) if s.name == "StoreTask"]
    items = [(i * 100, i * 100 + 10, n) for i, n in enumerate(
        ["smem_ring_ConsumerAuxWork", "smem_ring_ConsumerWork", "smem_ring_ConsumerWait"])]
    with pytest.raises(TimelineError, match=r"task 'StoreTask': ranges 1.. of a warp .* match no trip count"):
        place(store, items)


def test_ranges_on_one_clock_tick_may_come_in_either_order():
    (store,) = [s for s in task_steps(design("tma_copy").lower().tasks) if s.name == "StoreTask"]
    names = ["smem_ring_ConsumerAuxWork", "smem_ring_ConsumerWait", "gmem_out_ProducerWork", "smem_ring_ConsumerWork",
             "smem_ring_ConsumerRelease"]
    items = [(0, 0, names[0]), (32, 64, names[1]), (64, 64, names[2]), (64, 64, names[3]), (96, 96, names[4])]
    placed = place(store, items)
    assert [s["stage"] for _item, s in placed] == ["ConsumerAuxWork", "ConsumerWait", "ConsumerWork", "ProducerWork",
                                                  "ConsumerRelease"]


def test_a_timeline_saves_loads_and_exports_for_perfetto(tmp_path):
    t = timeline("gemm_sm90_replay", "gemm_sm90")
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(t.to_dict(), fh)
    back = Timeline.load(path)
    assert back.frame.equals(t.frame) and back.lifetimes.equals(t.lifetimes)
    assert back.summary().equals(t.summary()) and back.text() == t.text()
    trace = json.loads(t.to_perfetto(tmp_path / "t.perfetto.json").read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == len(t.frame) and {e["ph"] for e in trace["traceEvents"]} == {"M", "X"}
    with pytest.raises(TimelineError, match=r"not a tslab timeline"):
        Timeline.from_dict({"kernel": "x"})


def test_profile_without_a_gpu_says_so():
    with pytest.raises(gpu.NoGpuError, match=r"profile of 'tma_copy': no NVIDIA GPU .* run, bench and profile"):
        gpu.profile(design("tma_copy"))


def test_bad_profile_arguments_are_refused_before_any_gpu_work():
    with pytest.raises(tslab.DesignError, match=r"blocks=0 is not a positive int"):
        gpu.profile(design("tma_copy"), blocks=0)
    with pytest.raises(tslab.DesignError, match=r"dynamic='yes' is not a bool"):
        gpu.profile(design("tma_copy"), dynamic="yes")


def test_a_dynamic_profile_runs_the_kernel_a_package_holds_at_the_shape_asked():
    from tslab.kernels import attention_sm90

    shape = (4, 4096, 4096, 32, 32)
    target = profiling.profiled_target(attention_sm90.design(), shape, None, None, True)
    assert target.dynamic and tuple(target.shape) == shape
    assert not profiling.profiled_target(attention_sm90.design(), shape, None, None, False).dynamic
    with pytest.raises(gpu.NoGpuError, match=r"profile of 'attention_sm90': no NVIDIA GPU"):
        gpu.profile(attention_sm90.design(), shape=shape, dynamic=True)


def test_too_many_distinct_steps_for_ikets_narrow_encoding_names_the_filter():
    bufs = [Buffer(name=f"b{i}", buffer=f"b{i}", stage_bytes=1024, pipeline_config=async_pipeline(2))
            for i in range(6)]
    loop = ScheduleStageType.Loop
    produce = [(b, getattr(ScheduleStage, s), loop, LoopGuard.Always, "write" if s == "ProducerWork" else None)
               for b in bufs for s in ("ProducerAcquire", "ProducerWork", "ProducerCommit")]
    consume = [(b, getattr(ScheduleStage, s), loop, LoopGuard.Always, "read" if s == "ConsumerWork" else None)
               for b in bufs for s in ("ConsumerWait", "ConsumerWork", "ConsumerRelease")]
    tasks = [Task(name="P", src_resources=[], dst_resources=bufs, warp_idx=0, num_warps=1,
                  schedule=ScheduleResult(schedule_list=produce, loop_start=0, loop_end=2, loop_step=1)),
             Task(name="C", src_resources=bufs, dst_resources=[], warp_idx=1, num_warps=1,
                  schedule=ScheduleResult(schedule_list=consume, loop_start=0, loop_end=2, loop_step=1))]
    steps = task_steps(tasks)
    with pytest.raises(tslab.DesignError, match=r"(?s)36 distinct steps would be marked, more than the 30 .*stages="):
        profiling._check_slots("wide", steps, None, None)
    profiling._check_slots("wide", task_steps(tasks, {"ConsumerWait", "ProducerAcquire"}), None, None)


def test_the_one_marker_the_cost_is_measured_against_runs_least_often():
    steps = task_steps(design("gemm_sm90").lower().tasks)
    resource, stage = profiling.minimal_step(steps)
    counts = {}
    for t in steps:
        for s in t.tile(1):
            counts[(s["resource"], s["stage"])] = counts.get((s["resource"], s["stage"]), 0) + 1
    assert counts[(resource, stage)] == min(counts.values())


def test_both_sides_of_a_shallow_ring_waiting_on_each_other_read_as_too_few_stages():
    """The H200 profile of tutorial 06's row copy (2 row buffers): the load waits for a free stage and the store for
    data, most of the time each; the sweep measured 4 buffers 1.8x faster, so the reading must not say 'more stages
    would not help'."""
    recorded = Timeline.load(ROOT / "notebooks" / "data" / "h200_profile_row_copy.timeline.json.gz")
    load, store = (next(line for line in recorded.reading() if line.startswith(t)) for t in ("LoadTask", "StoreTask"))
    assert "too shallow" in load and "more stages should help" in load and "would not help" not in load
    assert "data late" in store


@pytest.mark.parametrize("trips", [[63, 63], [127, 40, 1]])
def test_a_loop_with_a_last_trip_step_places_every_trip_count(trips):
    """gemm_sm90 waits for its last K tile's MMAs in a step of the loop's last trip only (``LastIter``): tiles of
    many trips are placed with their own trip counts (a steady trip is one step shorter than the first)."""
    (mma,) = [s for s in task_steps(design("gemm_sm90").lower().tasks) if s.name == "MmaTask"]
    names = [f"{s['resource']}_{s['stage']}" for n in trips for s in mma.tile(n)]
    placed = place(mma, [(32 * i, 32 * i + 16, name) for i, name in enumerate(names)])
    per_tile = {}
    for _, step in placed:
        if step["section"] == "loop":
            per_tile[step["tile"]] = max(per_tile.get(step["tile"], 0), step["iteration"] + 1)
    assert [per_tile.get(t, 0) for t in range(len(trips))] == trips
    drains = [(s["tile"], s["iteration"]) for _, s in placed if s["section"] == "loop" and s["index"] == 2]
    assert drains == [(t, n - 1) for t, n in enumerate(trips)]  # the last trip's wait, once per tile


@pytest.mark.parametrize("trips", [[64, 63], [9, 130]])
def test_a_loop_with_steps_every_second_trip_places_every_trip_count(trips):
    """A consumer that releases two stages on trips 1, 3, 5, ... (``every(2, start=1)``): a trip that releases is
    two steps longer than one that does not, so no trip count may be ruled out by the longer trips' length."""
    src, out = Source(name="src"), Sink(name="out")
    ring = Buffer(name="ring", buffer="ring_buf", stage_bytes=1024, pipeline_config=async_pipeline(2))
    loop, every = ScheduleStageType.Loop, Every(period=2, start=1)
    steps = [(src, ScheduleStage.ConsumerWork, ScheduleStageType.Head, LoopGuard.Always, "load"),
             (ring, ScheduleStage.ConsumerWait, loop, LoopGuard.Always, None),
             (ring, ScheduleStage.ConsumerWork, loop, LoopGuard.Always, "read"),
             (ring, ScheduleStage.ConsumerRelease, loop, every, None),
             (ring, ScheduleStage.ConsumerRelease, loop, every, None),
             (out, ScheduleStage.ProducerWork, ScheduleStageType.Tail, LoopGuard.Always, "store")]
    task = Task(name="C", src_resources=[src, ring], dst_resources=[out], warp_idx=0, num_warps=1,
                schedule=ScheduleResult(schedule_list=steps, loop_start=0, loop_end=4, loop_step=1))
    (consumer,) = task_steps([task])
    names = [f"{s['resource']}_{s['stage']}" for n in trips for s in consumer.tile(n)]
    placed = place(consumer, [(32 * i, 32 * i + 16, name) for i, name in enumerate(names)])
    per_tile = {}
    for _, step in placed:
        if step["section"] == "loop":
            per_tile[step["tile"]] = max(per_tile.get(step["tile"], 0), step["iteration"] + 1)
    assert [per_tile[t] for t in range(len(trips))] == trips
    releases = {s["iteration"] for _, s in placed if s["stage"] == "ConsumerRelease" and s["tile"] == 0}
    assert releases == set(range(1, trips[0], 2))


def test_a_wait_that_spans_the_whole_block_is_in_the_saved_timeline():
    """Attention's EpilogueTask waits ~82 of its 83 us for O: the saved payload shows the ranges up to where 2,000
    have ended, and a range under way then is shown too (cut there by the drawing), never left out."""
    t = Timeline.load(ROOT / "notebooks" / "data" / "h200_profile_attention_sm90.timeline.json.gz")
    payload = t.to_mime()
    assert payload["shown_until_ns"] < payload["total_ns"]  # a long run: only its start is kept
    epilogue = [i for i, task in enumerate(payload["tasks"]) if task["name"] == "EpilogueTask"]
    waits = [r for r in payload["ranges"] if r[0] in epilogue and r[3] == "ConsumerWait"]
    assert sorted(r[1] for r in waits) == [9, 10, 11]
    assert all(r[8] < payload["shown_until_ns"] < r[9] for r in waits)
    assert all(r[8] < payload["shown_until_ns"] for r in payload["ranges"])
    small = t.to_mime(max_ranges=10)  # a range ending after the cut only enters when it started before it
    assert all(r[8] < small["shown_until_ns"] for r in small["ranges"]) and len(small["ranges"]) >= 10


def test_a_wait_for_a_signal_reads_as_the_other_tasks_steps_not_memory():
    """attention_sm90's turn (``mma_turn``) holds no buffer: TS's own lowering says so (no SMEM, no TMEM), and the
    H200 profile's MmaTask1, which waits a third of its time for it, reads as waiting for MmaTask0's steps."""
    assert signal_resources(task_steps(design("attention_sm90").lower().tasks)) == ["mma_turn"]
    # not a global-memory source with no producing task (gemm_sm90's gmem_ab), not a work queue (gemm_sm100's)
    assert signal_resources(task_steps(design("gemm_sm90").lower().tasks)) == []
    assert signal_resources(task_steps(design("gemm_sm100").lower().tasks)) == []
    recorded = Timeline.load(ROOT / "notebooks" / "data" / "h200_profile_attention_sm90.timeline.json.gz")
    line = next(line for line in recorded.reading() if line.startswith("MmaTask1"))
    assert "mma_turn holds no data" in line and "MmaTask0's own steps" in line and "data late" not in line


def test_a_wait_for_the_tiles_result_reads_as_idle_by_design():
    """A GEMM's epilogue waits once a work tile for C, which the MMA task commits after every K trip: not a stall.
    A copy's store waits for data its load commits every trip: that one stays 'data late'."""
    gemm = Timeline.load(ROOT / "notebooks" / "data" / "h200_profile_gemm_sm90.timeline.json.gz")
    epilogue = next(line for line in gemm.reading() if line.startswith("EpilogueTask"))
    assert "the tile's result" in epilogue and "MmaTask commits it" in epilogue and "not a stall" in epilogue
    copy = Timeline.load(ROOT / "notebooks" / "data" / "h200_profile_tma_copy.timeline.json.gz")
    store = next(line for line in copy.reading() if line.startswith("StoreTask"))
    assert "data late" in store and "the tile's result" not in store


def test_a_profile_keeps_its_signals_for_the_reading():
    """What a profile job becomes keeps the design's signals (here none: gemm_sm90's resources all hold data), so
    a saved timeline reads the same after loading."""
    t = timeline("gemm_sm90_replay", "gemm_sm90")
    assert t.meta["signals"] == []
    assert Timeline.from_dict(t.to_dict()).reading() == t.reading()


def test_one_trip_reads_step_by_step_with_the_work_each_step_ran():
    """The H100 recording of attention's default: trip 10 of each task's loop, in time order from its first step,
    each step named with its work from the schedule TS expanded (the trip tutorial 10 reads)."""
    recorded = Timeline.load(ROOT / "notebooks" / "data" / "h100_profile_attention_default.timeline.json.gz")
    trip = recorded.trip(design("attention_sm90"), 10)
    assert trip.start_ns.iloc[0] == 0 and trip.start_ns.is_monotonic_increasing
    mma0 = list(trip[trip.task == "MmaTask0"].step)
    assert mma0[:3] == ["smem_kv.ConsumerWait", "mma_turn.ProducerAcquire", "smem_kv.ConsumerWork(multiply_qk)"]
    assert "smem_q.ConsumerWork(softmax)" in mma0 and "mma_turn.ConsumerWork(take)" in list(trip.step)
    with pytest.raises(TimelineError, match=r"no loop trip 99 .* 30 \(MmaTask0\)"):
        recorded.trip(design("attention_sm90"), 99)
    with pytest.raises(TimelineError, match="pass the design that was profiled"):
        recorded.trip(design("gemm_sm90"), 1)


def test_the_turn_passes_as_the_recorded_trips_say():
    """The H100 recording of attention's default: the hand-off of ``mma_turn`` read by ``handoffs`` is what the
    rows say when read by hand over the loop's trips (tutorial 10's reading: MmaTask1 takes the turn soon after
    MmaTask0 gives it, MmaTask0 comes back for it long after)."""
    recorded = Timeline.load(ROOT / "notebooks" / "data" / "h100_profile_attention_default.timeline.json.gz")
    h = recorded.handoffs(design("attention_sm90"))
    assert list(h.index) == ["MmaTask0", "MmaTask1"] and list(h.side) == ["producer", "consumer"]
    loop = recorded.frame[(recorded.frame.section == "loop") & recorded.frame.warp.isin([0, 4])]
    turn = loop[loop.resource == "mma_turn"].set_index(["stage", "iteration"]).end_ns
    took0, gave0 = turn["ProducerAcquire"], turn["ProducerCommit"]
    took1, gave1 = turn["ConsumerWait"], turn["ConsumerRelease"]
    assert h.loc["MmaTask1", "after_other_gave_ns"] == (took1 - gave0).median()
    assert h.loc["MmaTask0", "after_other_gave_ns"] == (took0.shift(-1) - gave1).median()
    assert h.loc["MmaTask0", "held_ns"] == (gave0 - took0).median()
    assert h.loc["MmaTask0", "after_other_gave_ns"] > 2 * h.loc["MmaTask1", "after_other_gave_ns"]
    assert (h.period_ns == took0.diff().median()).all() and (h["count"] == 33).all()  # head, 31 trips, tail


def test_a_deeper_ring_hands_the_signal_back_stages_later():
    """With S stages the producer's take k + S follows the consumer's k-th give: a 2-stage turn, produced at
    0, 100, 200, ... and given back 50 ns after each take, reads 150 ns from a give to the take it allows."""
    rows = []
    for k in range(6):
        rows += [("MmaTask0", "ProducerAcquire", 100 * k, 100 * k + 10), ("MmaTask0", "ProducerCommit", 100 * k + 20,
                                                                          100 * k + 30),
                 ("MmaTask1", "ConsumerWait", 100 * k + 30, 100 * k + 40),
                 ("MmaTask1", "ConsumerRelease", 100 * k + 80, 100 * k + 90)]
    frame = pd.DataFrame([{"block": 0, "warp": 0 if t == "MmaTask0" else 4, "task": t, "resource": "mma_turn",
                           "stage": s, "section": "loop", "index": 0, "iteration": k // 4, "tile": 0,
                           "start_ns": a, "end_ns": b, "duration_ns": b - a} for k, (t, s, a, b) in enumerate(rows)])
    t = Timeline("attention_sm90", frame, pd.DataFrame(), 1.0)
    h = t.handoffs(design("attention_sm90").with_pipeline("mma_turn", num_stages=2))
    assert h.loc["MmaTask0", "after_other_gave_ns"] == 210 - 90  # take 2 (ends 210) after give 0 (ends 90)
    assert h.loc["MmaTask1", "after_other_gave_ns"] == 10 and h.loc["MmaTask1", "held_ns"] == 50
    assert h.loc["MmaTask0", "period_ns"] == 100 and h.loc["MmaTask0", "waited_ns"] == 10
    one = t.handoffs(design("attention_sm90"))  # the same rows read as one stage: one trip sooner
    assert one.loc["MmaTask0", "after_other_gave_ns"] == 110 - 90


def test_a_handoff_is_refused_where_there_is_no_signal_or_it_is_the_wrong_design():
    gemm = Timeline.load(ROOT / "notebooks" / "data" / "h200_profile_gemm_sm90.timeline.json.gz")
    with pytest.raises(TimelineError, match="no signal between tasks"):
        gemm.handoffs(design("gemm_sm90"))
    recorded = Timeline.load(ROOT / "notebooks" / "data" / "h200_profile_attention_sm90.timeline.json.gz")
    with pytest.raises(TimelineError, match=r"'smem_kv' is not a signal .* its signals: mma_turn"):
        recorded.handoffs(design("attention_sm90"), "smem_kv")
    with pytest.raises(TimelineError, match="pass the design that was profiled"):
        recorded.handoffs(design("gemm_sm90"))
    waits_only = Timeline(recorded.kernel, recorded.frame[recorded.frame.stage.isin(["ConsumerWait",
                                                                                     "ProducerAcquire"])],
                          recorded.lifetimes, recorded.block_us)  # as a profile with stages= the two waits
    with pytest.raises(TimelineError, match=r"ProducerAcquire and ProducerCommit steps are not both .* "
                                            r"resources=\{'mma_turn'\}"):
        waits_only.handoffs(design("attention_sm90"))
