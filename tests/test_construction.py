"""Edits applied at TaskManager construction (what a compile trace of an edited design builds)."""

from __future__ import annotations

from cutlass.experimental.task_scheduling.memory import SmemAllocator
from cutlass.experimental.task_scheduling.task_manager import TaskManager

import tslab
from tslab.core.construction import Edits, edited_arguments, edits_at_construction
from tslab.core.output import captured_stdout
from tslab.kernels import tma_copy


def _kernel_arguments(stages: int = 4) -> dict:
    """What tma_copy's kernel hands to TaskManager: its own objects and an allocator it laid out."""
    bp = tma_copy.make_tasks(stages, 64, 128, 4, 4)
    allocator = SmemAllocator()
    for res in bp.smem_resources:
        allocator.add_resource(res)
    allocator.compute_layout()
    return {"tasks": bp.tasks, "resource_dependency_graph": bp.graph, "smem_allocator": allocator,
            "tmem_allocator": None}


def _steps(design, task):
    return [tuple(s) for s in design.schedule(task)]


def test_no_edits_leave_the_arguments_alone():
    args = _kernel_arguments()
    assert edited_arguments(args, Edits()) is args


def test_pipeline_edit_resizes_the_ring_the_kernel_declared():
    out = edited_arguments(_kernel_arguments(), Edits(pipelines={"smem_ring": {"num_stages": 2}}))
    assert out["smem_allocator"].total == 2 * 64 * 128 * 2
    assert out["smem_allocator"].barrier_smem_bytes == 2 * 16  # full and empty barrier per stage
    ring = out["tasks"][0].dst_resources[0]
    assert ring.pipeline_config.num_stages == 2


def test_schedule_edit_replaces_the_task_the_kernel_built():
    edited = tma_copy.design().with_schedule("StoreTask", [
        ("smem_ring", "ConsumerAuxWork", "Head", "bind_read"),
        ("smem_ring", "ConsumerWait", "Loop", None),
        ("smem_ring", "ConsumerWork", "Loop", "read_tile"),
        ("gmem_out", "ProducerWork", "Loop", "store"),
        ("smem_ring", "ConsumerRelease", "Loop", None),
    ])
    out = edited_arguments(_kernel_arguments(), Edits.of(edited))
    store = next(t for t in out["tasks"] if t.name == "StoreTask")
    assert store.warp_idx == 0 and store.num_warps == 4
    assert tslab.check(edited).ok


def test_every_taskmanager_built_while_active_gets_the_edits_and_the_hook_goes_away():
    original = TaskManager.__init__
    seen = []
    edits = Edits(pipelines={"smem_ring": {"num_stages": 3}})
    with edits_at_construction(edits), captured_stdout():
        args = _kernel_arguments()
        manager = TaskManager(**args, verbose=False, skip_validation=True, exhaustive_deadlock_race_check=False)
        seen.append(manager.smem_allocator.total)
    assert TaskManager.__init__ is original
    assert seen == [3 * 64 * 128 * 2]
