"""A design's edits applied to the objects a kernel hands to ``TaskManager``, inside a compile trace.

A TS kernel builds its own resources, tasks and allocators while it is traced. For the compiled kernel (or
a re-trace of a captured kernel) to be the design tslab checked, the edits must reach *those* objects.
:func:`edited_arguments` rewrites ``TaskManager.__init__``'s arguments with the same lowering that
:func:`tslab.check` uses: pipeline fields, schedule steps and alias groups applied through TS's own
constructors, then fresh allocators laying out the edited resources (TS generates the task code from these
lists). :func:`edits_at_construction` does it for every ``TaskManager`` built while it is active.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cutlass.experimental.task_scheduling.task_manager import TaskManager

from .blueprint import Blueprint, lower
from .steps import normalize_steps
from .wrap import split_items


@dataclass(frozen=True)
class Edits:
    """The overrides of a design, as plain data: what a trace applies at TaskManager construction."""

    pipelines: dict[str, dict[str, Any]] = field(default_factory=dict)
    schedules: dict[str, Any] = field(default_factory=dict)
    alias_groups: list[list[list[str]]] | None = None

    @classmethod
    def of(cls, design: Any) -> Edits:
        over = design.overrides
        return cls(over["pipelines"], over["schedules"], over["alias_groups"])

    def __bool__(self) -> bool:
        return bool(self.pipelines or self.schedules or self.alias_groups is not None)

    def to_dict(self) -> dict[str, Any]:
        return {"pipelines": self.pipelines, "schedules": {t: [list(s) for s in v] for t, v in self.schedules.items()},
                "alias_groups": self.alias_groups}


def _resources(tasks: list[Any], graph: dict[Any, list[Any]]) -> list[Any]:
    found = list({id(r): r for t in tasks for r in (*t.src_resources, *t.dst_resources)}.values())
    found += [r for down, ups in graph.items() for r in (down, *ups) if all(r is not x for x in found)]
    return found


def edited_arguments(arguments: dict[str, Any], edits: Edits) -> dict[str, Any]:
    """``TaskManager.__init__`` keyword arguments with ``edits`` applied to the objects they hold.

    Tasks whose schedule is edited are rebuilt (same warps, resources and loop bounds); resources get their
    edited PipelineConfig; the allocators are replaced by fresh ones laid out with the edited sizes and alias
    groups. Returns ``arguments`` unchanged when there are no edits.
    """
    if not edits:
        return arguments
    tasks = list(arguments["tasks"])
    graph = dict(arguments.get("resource_dependency_graph") or {})
    resources = _resources(tasks, graph)
    old_smem, old_tmem = arguments.get("smem_allocator"), arguments.get("tmem_allocator")
    smem, smem_groups, pipeline_groups = split_items(old_smem, "smem", resources)
    tmem, tmem_groups, _ = split_items(old_tmem, "tmem", resources)
    bp = Blueprint(tasks=tasks, graph=graph, smem_resources=smem, tmem_resources=tmem, alias_groups=smem_groups,
                   tmem_alias_groups=tmem_groups, pipeline_groups=pipeline_groups,
                   smem_capacity_bytes=arguments.get("smem_capacity_bytes"),
                   tmem_capacity_columns=arguments.get("tmem_capacity_columns"),
                   dma_consumer_release_labels=arguments.get("dma_consumer_release_labels"),
                   assume_pdl_wait_completed=bool(arguments.get("assume_pdl_wait_completed")))
    schedules = {t: normalize_steps(t, s) for t, s in edits.schedules.items()}
    low = lower(bp, pipelines=edits.pipelines, schedules=schedules, alias_groups=edits.alias_groups)
    out = dict(arguments, tasks=low.tasks)
    if old_smem is not None:
        tmem_ptr = getattr(old_smem, "_tmem_ptr_alloc", None)
        if tmem_ptr is not None and low.smem_allocator is not None:
            low.smem_allocator._tmem_ptr_alloc = tmem_ptr
        out["smem_allocator"] = low.smem_allocator
    if old_tmem is not None:
        out["tmem_allocator"] = low.tmem_allocator
    return out


def bind_arguments(init: Any, instance: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """``TaskManager.__init__``'s arguments by name, defaults filled in (``self`` left out)."""
    bound = inspect.signature(init).bind(instance, *args, **kwargs)
    bound.apply_defaults()
    named = dict(bound.arguments)
    named.pop("self", None)
    return named


@contextlib.contextmanager
def edits_at_construction(edits: Edits, *, validate: bool = True) -> Iterator[None]:
    """While active, every ``TaskManager(...)`` built in this process gets ``edits`` applied first.

    ``validate=False`` passes ``skip_validation=True`` to TS, which then warns instead of raising when its
    checks fail: how a design the checker refused is compiled on purpose (to watch it hang, say).
    Meant for a compile trace in a worker process; ``TaskManager.__init__`` is restored on exit.
    """
    if not edits and validate:
        yield
        return
    original = TaskManager.__init__

    def edited_init(self: Any, *args: Any, **kwargs: Any) -> None:
        arguments = edited_arguments(bind_arguments(original, self, args, kwargs), edits)
        if not validate:
            arguments = dict(arguments, skip_validation=True)
        original(self, **arguments)

    TaskManager.__init__ = edited_init
    try:
        yield
    finally:
        TaskManager.__init__ = original


@contextlib.contextmanager
def markers_at_construction(stages: frozenset[str] | None = None,
                            resources: frozenset[str] | None = None) -> Iterator[None]:
    """While active, every ``TaskManager(...)`` built in this process emits TS's IKET markers: a range named
    ``<resource>_<ScheduleStage>`` around each schedule step, for the given stages and resources (all when
    ``None``). TaskManager overwrites each task's own profiling flags with these, so they go to it."""
    from cutlass.experimental.task_scheduling.enums import ScheduleStage

    original = TaskManager.__init__

    def marked_init(self: Any, *args: Any, **kwargs: Any) -> None:
        arguments = bind_arguments(original, self, args, kwargs)
        arguments["iket_enable_profiling"] = True
        if stages is not None:
            arguments["iket_profiling_stages"] = frozenset(ScheduleStage[s] for s in stages)
        if resources is not None:
            arguments["iket_profiling_resources"] = frozenset(resources)
        original(self, **arguments)

    TaskManager.__init__ = marked_init
    try:
        yield
    finally:
        TaskManager.__init__ = original
