"""Every piece of TS's seed system lives in tslab's own catalog, where the README's table says it does.

Each row names a TS piece, the catalog designs that use it and a check run on fresh TS objects of each design;
the README holds the same table (regenerate it with ``python tests/test_catalog_coverage.py``).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from cutlass.experimental.task_scheduling.enums import Every, OpaqueCondition, PipelineType, ScheduleStage
from cutlass.experimental.task_scheduling.memory import SmemAllocator, TmemAllocator
from cutlass.experimental.task_scheduling.resources import WorkQueue

from tslab.kernels import design, kernel_module

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- catalog-coverage -->", "<!-- /catalog-coverage -->"


def _pipelines(low: Any, kind: str) -> bool:
    return any(getattr(r, "pipeline_config", None) is not None and r.pipeline_config.pipeline_type == PipelineType[kind]
               for r in low.blueprint.resources().values())


def _queues(low: Any) -> list[Any]:
    return [r for r in low.blueprint.resources().values() if isinstance(r, WorkQueue)]


def _stages(low: Any) -> set[ScheduleStage]:
    return {e[1] for t in low.tasks for e in (*t.head_schedule_list, *t.loop_schedule_list, *t.tail_schedule_list)}


def _source(name: str, params: dict[str, Any], low: Any) -> str:
    return inspect.getsource(kernel_module(name))


#: (TS piece, designs as (kernel, params), what is checked, the check on the lowered design).
COVERAGE: list[tuple[str, list[tuple[str, dict[str, Any]]], str, Any]] = [
    ("`SmemAllocator`", [("tma_copy", {}), ("gemm_sm90", {}), ("gemm_sm100", {})], "lays out its SMEM",
     lambda n, p, low: isinstance(low.smem_allocator, SmemAllocator) and low.smem_allocator.total > 0),
    ("`TmemAllocator`", [("gemm_sm100", {}), ("attention_tmem", {})], "lays out its TMEM columns",
     lambda n, p, low: isinstance(low.tmem_allocator, TmemAllocator) and low.tmem_allocator.total > 0),
    ("SMEM alias groups", [("gemm_sm90", {"epilogue": "aliased", "persistent": False}), ("demo_race", {})],
     "an SMEM alias group", lambda n, p, low: bool(low.smem_alias_names)),
    ("TMEM alias groups", [("attention_tmem", {})], "a TMEM alias group", lambda n, p, low: bool(low.tmem_alias_names)),
    *[(f"`create_{f}_pipeline_cfg`", designs, f"a ring of type {kind}",
       lambda n, p, low, kind=kind: _pipelines(low, kind))
      for f, kind, designs in (
          ("async_async", "AsyncAsync", [("gemm_sm90", {}), ("demo_race", {})]),
          ("tma_async", "TmaAsync", [("tma_copy", {}), ("gemm_sm90", {})]),
          ("tma_umma", "TmaUmma", [("gemm_sm100", {})]),
          ("umma_async", "UmmaAsync", [("gemm_sm100", {}), ("attention_tmem", {})]),
          ("async_umma", "AsyncUmma", [("attention_tmem", {})]),
          ("umma_umma", "UmmaUmma", [("attention_tmem", {})]),
          ("clc_fetch_async", "ClcFetchAsync", [("gemm_sm100", {})]))],
    ("`PipelineGroup`", [("gemm_sm100", {"ab_rings": "merged"})], "a Merge group of two rings",
     lambda n, p, low: any(len(g.members) == 2 for g in low.blueprint.groups().values())),
    ("`WorkQueue`, static persistent", [("gemm_sm90", {}), ("gemm_sm100", {"scheduler": "static"})],
     "a work queue without a fetch pipeline", lambda n, p, low: any(q.pipeline_config is None for q in _queues(low))),
    ("`WorkQueue`, CLC dynamic", [("gemm_sm100", {})], "a work queue fed by a scheduler warp's CLC fetches",
     lambda n, p, low: any(q in t.dst_resources for q in _queues(low) for t in low.tasks)),
    ("`SlotRouting` (task-local variables)", [("gemm_sm100", {}), ("demo_routing", {})],
     "a task's slot routing", lambda n, p, low: any(t.slot_routing for t in low.tasks)),
    ("`producer_work`, `consumer_work`, `WorkAttr.AUXILIARY`", [("tma_copy", {})], "auxiliary work steps",
     lambda n, p, low: {ScheduleStage.ProducerAuxWork, ScheduleStage.ConsumerAuxWork} <= _stages(low)),
    ("`@schedule` with `domain_loop`, `work_tile_loop`", [("gemm_sm100", {})], "the schedule builder",
     lambda n, p, low: all(w in _source(n, p, low) for w in ("@schedule", "domain_loop(", "work_tile_loop("))),
    ("loop guards `every(n)`, `when_true`", [("demo_guards", {})],
     "a step on every n-th trip and one under a runtime condition (checked for both values)",
     lambda n, p, low: {type(e[3]) for t in low.tasks for e in t.loop_schedule_list} >= {Every, OpaqueCondition}),
    ("legacy schedule lists (`ScheduleResult`)", [("demo_deadlock", {}), ("demo_routing", {})],
     "a schedule given as steps (as every schedule edit is)",
     lambda n, p, low: bool(getattr(kernel_module(n), "SCHEDULES", None))),
]


def _spec(name: str, params: dict[str, Any]) -> str:
    return f"`{name}`" + (" (" + ", ".join(f"`{k}={v!r}`" for k, v in params.items()) + ")" if params else "")


def table() -> str:
    """The README's table, rendered from :data:`COVERAGE`."""
    rows = ["| TS piece | in the catalog | what tslab checks there |", "|---|---|---|"]
    rows += [f"| {piece} | {', '.join(_spec(n, p) for n, p in designs)} | {what} |"
             for piece, designs, what, _ in COVERAGE]
    return "\n".join(rows)


@pytest.mark.parametrize(("piece", "name", "params"),
                         [(piece, n, p) for piece, designs, _, _ in COVERAGE for n, p in designs])
def test_each_piece_is_where_the_table_says(piece, name, params):
    check = next(c for row_piece, _, _, c in COVERAGE if row_piece == piece)
    assert check(name, params, design(name, **params).lower()), f"{piece} is not in {_spec(name, params)}"


def test_the_readme_holds_the_table():
    text = README.read_text()
    assert text[text.index(START) + len(START):text.index(END)].strip() == table(), \
        "README's catalog coverage table is stale; run: python tests/test_catalog_coverage.py"


if __name__ == "__main__":
    text = README.read_text()
    README.write_text(text[:text.index(START) + len(START)] + "\n" + table() + "\n" + text[text.index(END):])
