"""Profiles on the GPU: one range per executed schedule step per warp, each where its task's schedule puts it.

Needs an NVIDIA GPU and IKET (it ships in nvidia-cutlass-dsl); skipped without a GPU.
"""

import pytest

from tslab import gpu
from tslab.kernels import design

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def copy_timeline():
    return gpu.profile(design("tma_copy"), shape=(4096, 4096), dtype="float16", repeats=3)


@pytest.fixture(scope="module")
def gemm_timeline():
    return gpu.profile(design("gemm_sm90"), shape=(2048, 2048, 1024), dtype="float16", repeats=3)


def _trips(frame, task):
    """Loop trips per work tile of one task's warps: {(warp, tile): trips}."""
    rows = frame[(frame.task == task) & (frame.section == "loop")]
    return rows.groupby(["warp", "tile"]).iteration.max().add(1).to_dict()


@pytest.mark.parametrize("which", ["copy_timeline", "gemm_timeline"])
def test_every_range_is_a_step_of_its_warps_task(which, request):
    t = request.getfixturevalue(which)
    d = design("tma_copy" if which == "copy_timeline" else "gemm_sm90")
    tasks = {task.name: task for task in d.lower().tasks}
    assert not t.frame.empty and t.frame.section.notna().all()
    for row in t.frame.itertuples():
        task = tasks[row.task]
        assert task.warp_idx <= row.warp < task.warp_idx + task.num_warps  # the task by warp is the task by name
    assert (t.frame.duration_ns >= 0).all()
    life = t.lifetimes.set_index(["block", "warp"])
    for row in t.frame.itertuples():
        start, end = life.loc[(row.block, row.warp), ["start_ns", "end_ns"]]
        assert start <= row.start_ns <= row.end_ns <= end
    assert t.meta["check"]["unwritten" if which == "gemm_timeline" else "mismatches"] == 0


def test_gemm_ranges_count_every_k_tile_of_every_tile(gemm_timeline):
    frame = gemm_timeline.frame
    k_tiles = 1024 // design("gemm_sm90").params["tile_k"]
    for task in ("LoadTask", "MmaTask"):
        trips = _trips(frame, task)
        assert set(trips.values()) == {k_tiles if task == "LoadTask" else k_tiles - 1}, task
    tiles = {task: frame[frame.task == task].groupby("warp").tile.max().unique().tolist()
             for task in ("LoadTask", "MmaTask", "EpilogueTask")}
    assert len({tuple(v) for v in tiles.values()}) == 1, tiles  # every task walked the same work tiles


def test_copy_load_and_store_agree_on_the_trip_count(copy_timeline):
    load, store = _trips(copy_timeline.frame, "LoadTask"), _trips(copy_timeline.frame, "StoreTask")
    assert set(load.values()) == set(store.values()) and len(set(load.values())) == 1


def test_the_summary_names_what_waits_wait_for(gemm_timeline):
    s = gemm_timeline.summary()
    waits = s.set_index(["task", "step"]).waits_for
    assert waits[("MmaTask", "smem_ab.ConsumerWait")].startswith("overlapped")
    assert waits[("LoadTask", "smem_ab.ProducerAcquire")] == "no free stage"
    assert gemm_timeline.overhead is not None and gemm_timeline.reading()


def test_a_blocks_measured_order_replays_in_the_explorer():
    """Two work tiles per block and 4 K tiles: the run the checker explored for the design as checked."""
    d = design("gemm_sm90")
    t = gpu.profile(d, shape=(1536, 5632, 256), dtype="float16", repeats=0)
    explorer = t.replay(d)
    assert explorer.status.kind == "complete"


def test_a_dynamic_profile_traces_the_runtime_extent_kernel_at_the_shape_asked(gemm_timeline):
    """Compiled with runtime extents (as a package holds it) and run at the same shape: the same steps a warp."""
    dynamic = gpu.profile(design("gemm_sm90"), shape=(2048, 2048, 1024), dtype="float16", repeats=3, dynamic=True)
    assert dynamic.meta["dynamic"] is True and gemm_timeline.meta["dynamic"] is False
    assert _trips(dynamic.frame, "MmaTask") == _trips(gemm_timeline.frame, "MmaTask")


@pytest.mark.parametrize("params", [{}, {"head_dim": 64, "mma_warpgroups": 3}], ids=["two", "three"])
def test_every_turn_is_taken_after_the_give_that_allows_it(params):
    """attention_sm90's warpgroups pass the turn in a ring (one signal for two warpgroups, three for three):
    ``handoffs`` pairs each take with the give TS's ring makes it wait for, so no take may end before that give
    (one tick of IKET's 32 ns clock of slack), and each task comes back for its turns at one period."""
    from tslab.gpu.profiled_tasks import signal_resources, task_steps

    d = design("attention_sm90", **params)
    signals = signal_resources(task_steps(d.lower().tasks))
    # three warpgroups mark more distinct steps than IKET's narrow encoding holds: only the turns
    t = gpu.profile(d, shape=(1, 1024, 1024, 1, 1), dtype="bfloat16", repeats=0, resources=set(signals))
    h = t.handoffs(d)
    assert len(signals) == (1 if not params else 3) and sorted(set(h.resource)) == signals
    assert (h.after_other_gave_ns >= -32).all() and (h.held_ns > 0).all()
    assert h.groupby("resource")["count"].nunique().eq(1).all() and (h["count"] >= 1024 // 128).all()
