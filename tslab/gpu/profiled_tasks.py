"""The TS tasks of a design as a profile's timeline reads them: each task's warps, the marked steps it runs on one
work tile for a given number of loop trips (TS's own expansion of its schedule), and which of the design's
resources are signals (a ping-pong's turn) rather than data."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from ..core.trace import steps_for_trips
from ..errors import TslabError


class TimelineError(TslabError, ValueError):
    """The measured ranges do not follow the design's schedule (a finding about TS's model or the markers)."""


@dataclass
class TaskSteps:
    """One task as the timeline reads it: its warps, and the marked steps it runs on one work tile for a given
    number of loop trips (TS's own expansion of its schedule, guards included)."""

    task: Any  # the TS Task (of a fresh lowering of the design)
    marked: Any  # (resource name, stage name) -> whether TS emits a range for that step
    _tiles: dict[int, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.task.name

    @property
    def first_warp(self) -> int:
        return int(self.task.warp_idx)

    def owns(self, warp: int) -> bool:
        return self.first_warp <= warp < self.first_warp + int(self.task.num_warps)

    @functools.cached_property
    def overlapped_waits(self) -> frozenset[str]:
        """Resources this task waits on while its own asynchronous MMAs still run (``advance_on_wait``)."""
        return frozenset(r.name for r in self.task.src_resources
                         if getattr(getattr(r, "pipeline_config", None), "advance_on_wait", False))

    def tile(self, trips: int) -> list[dict[str, Any]]:
        """The marked steps of one work tile with ``trips`` loop trips (a step under a runtime condition as TS
        expands it without an assignment: ``when_true`` steps never run, ``when_false`` steps always)."""
        if trips not in self._tiles:
            self._tiles[trips] = [s for s in steps_for_trips(self.task, trips)
                                  if self.marked(s["resource"], s["stage"])]
        return self._tiles[trips]

    @functools.cached_property
    def loop_length(self) -> int:
        """The fewest marked steps one more trip adds, so that no trip count is ruled out by its length: a
        ``LastIter`` step runs on the last trip only and an ``every(n)`` step on every n-th, so the shortest of
        trips 1 to 8 is taken (one of them fires no ``every`` guard of a period of 2 or more)."""
        return max(1, min(len(self.tile(t + 1)) - len(self.tile(t)) for t in range(1, 9)))


def signal_resources(tasks: list[TaskSteps]) -> list[str]:
    """Resources one task of the design produces and another waits on that hold no buffer (no SMEM, no TMEM): what
    the producer commits is a signal, not data, as a ping-pong's turn (``mma_turn``), so a wait on one is a wait
    for the other task's steps. A work queue carries tiles (in memory TS lays out itself), so it is not one."""
    from cutlass.experimental.task_scheduling.resources import WorkQueue

    produced = {r.name for t in tasks for r in t.task.dst_resources}
    consumed = {r.name: r for t in tasks for r in t.task.src_resources if r.name in produced}
    return sorted(name for name, r in consumed.items() if not isinstance(r, WorkQueue)
                  and not r.get_smem_requirements() and not r.get_tmem_requirements())


def task_steps(tasks: list[Any], stages: set[str] | None = None, resources: set[str] | None = None) -> list[TaskSteps]:
    """The TS tasks of a design as the timeline reads them, with the profiling filters TS was given."""

    def marked(resource: str, stage: str) -> bool:
        return (stages is None or stage in stages) and (resources is None or resource in resources)

    return [TaskSteps(t, marked) for t in tasks]
