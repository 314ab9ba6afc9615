"""The code view's ``@schedule`` function, run through TS's schedule builder, gives back the task it was read from
(tasks whose work calls pass no data between them; the view leaves those arguments to the reader): the same head,
loop and tail steps, and for a persistent task the same work-tile loop, with the steps that run once before or after
it (the PDL wait and launch) outside it."""

from __future__ import annotations

import inspect

import pytest
from cutlass.experimental.task_scheduling.resources import MemoryResource
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule, work_tile_loop
from cutlass.experimental.task_scheduling.task import Task

from tslab.kernels import attention_sm90, gemm_sm90
from tslab.widgets.schedule_code import SIGNATURE_WIDTH, schedule_code


def _rebuilt(design, name: str, **names) -> tuple[Task, Task]:
    """``name``'s TS Task, and its code view executed and built into a TS Task over the design's own resources
    (``names``: what else the code names, a ``skip_if`` predicate)."""
    task = next(t for t in design.lower().blueprint.tasks if t.name == name)
    code = schedule_code(name, design.schedule(name), (task.domain_start, task.domain, task.step),
                         design.work_kwargs(name), design.tile_loop(name))
    namespace = {"schedule": schedule, "domain_loop": domain_loop, "work_tile_loop": work_tile_loop,
                 "MemoryResource": MemoryResource, **names}
    exec(compile(code, f"<{name} code view>", "exec"), namespace)
    fn = next(v for k, v in namespace.items() if k.endswith("_schedule"))
    by_name = {r.name: r for r in (*task.src_resources, *task.dst_resources)}
    params = inspect.signature(fn.__wrapped__ if hasattr(fn, "__wrapped__") else fn).parameters
    result = fn(*[by_name[p] for p in params])
    return task, Task(name=name, src_resources=task.src_resources, dst_resources=task.dst_resources,
                      warp_idx=task.warp_idx, num_warps=task.num_warps, num_registers=task.num_registers,
                      schedule=result)


def _shape(task: Task) -> dict:
    names = {id(r): r.name for r in (*task.src_resources, *task.dst_resources)}

    def entries(listed):
        return [(e[0].name, e[1].name, e[-1]) for e in listed]

    def slots(name):
        return sorted((names[res], stage.name, call) for res, stage, call in getattr(task, name))

    return {"head": entries(task.head_schedule_list), "loop": entries(task.loop_schedule_list),
            "tail": entries(task.tail_schedule_list), "persistent": task.is_persistent,
            "before": slots("pre_work_loop_head_slots"), "after": slots("post_work_loop_tail_slots")}


@pytest.mark.parametrize(("kernel", "params", "task"), [
    (gemm_sm90, {"pdl": True}, "MmaTask"),
    (gemm_sm90, {**gemm_sm90.PINGPONG, "pdl": True}, "MmaTask1"),
    (attention_sm90, {"persistent": True, "q_stages": 2, "pdl": True}, "LoadTask"),
    (attention_sm90, {"pdl": True}, "LoadTask"),
    (attention_sm90, {"persistent": True, "q_stages": 2}, "EpilogueTask"),
])
def test_the_code_view_rebuilds_the_task_it_shows(kernel, params, task):
    original, rebuilt = _rebuilt(kernel.design(**params), task)
    assert _shape(rebuilt) == _shape(original)


def test_a_persistent_load_task_runs_its_pdl_steps_outside_the_work_tile_loop():
    d = gemm_sm90.design(pdl=True)
    code = schedule_code("LoadTask", d.schedule("LoadTask"), (0, 4, 1), d.work_kwargs("LoadTask"),
                         d.tile_loop("LoadTask"))
    lines = code.splitlines()
    body = lines[lines.index(") -> None:") + 1:]
    assert body[:2] == ["    pdl_wait.wait_griddep()", "    with work_tile_loop(work_queue):"]
    assert body[-1] == "    pdl_launch.launch_griddep()"


def test_a_long_signature_takes_one_parameter_a_line_and_every_line_fits_the_pane():
    """gemm_sm90's load task with PDL names five resources: 158 characters on one line, past a 1000 px pane."""
    d = gemm_sm90.design(pdl=True)
    code = schedule_code("LoadTask", d.schedule("LoadTask"), (0, 4, 1), d.work_kwargs("LoadTask"),
                         d.tile_loop("LoadTask"))
    lines = code.splitlines()
    assert lines[1:3] == ["def load_schedule(", "    pdl_wait: MemoryResource,"]
    assert max(len(line) for line in lines) <= SIGNATURE_WIDTH
    short = schedule_code("StoreTask", [("ring", "ConsumerWait", "Loop", None)])
    assert short.splitlines()[1] == "def store_schedule(ring: MemoryResource) -> None:"


def test_a_skipped_tiles_steps_come_back_in_skippable_blocks():
    from test_skip_agreement import _design, even_tiles

    d = _design(even_tiles, even_tiles, heads=True)
    code = schedule_code("LoadTask", d.schedule("LoadTask"), (0, 4, 1), d.work_kwargs("LoadTask"),
                         d.tile_loop("LoadTask"))
    assert "    with work_tile_loop(work_queue, skip_if=even_tiles) as tile:  # skip_if: even_tiles" in code
    assert "        with tile.skippable():\n            ring.acquire()" in code
    assert "            with domain_loop(0, 4, 1):\n                ring.acquire()" in code
    assert "\n        work_queue.wait()" in code
    original, rebuilt = _rebuilt(d, "LoadTask", even_tiles=even_tiles)
    assert _shape(rebuilt) == _shape(original)
    assert len(rebuilt.skippable_head_slots) == len(original.skippable_head_slots) == 3
