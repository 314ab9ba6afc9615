"""Running TS's exhaustive interleaving checker the way ``TaskManager`` does, with a state bound.

``TaskManager`` runs ``check_all_interleavings`` once per assignment of opaque predicates (and once more for
skipped work tiles), over 2 tiles for persistent kernels, but exposes no state limit; tslab runs the same
sequence itself so that ``max_states`` applies and the results come back as data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cutlass.experimental.task_scheduling import exhaustive_checker as ec
from cutlass.experimental.task_scheduling.resources import WorkQueue
from cutlass.experimental.task_scheduling.task_manager import (
    _collect_opaque_keys,
    _format_opaque_assignment,
    _opaque_assignments,
)


@dataclass(frozen=True)
class CheckerRun:
    """The arguments of one ``check_all_interleavings`` call, enough to repeat it exactly."""

    num_tiles: int
    skipped_tile: bool
    opaque_assignment: dict | None
    context: str

    def kwargs(self, max_states: int) -> dict[str, Any]:
        return {"num_tiles": self.num_tiles, "skipped_tile": self.skipped_tile, "max_states": max_states,
                "opaque_assignment": self.opaque_assignment}


@dataclass
class CheckerResult:
    """What the exhaustive checker found, summed over its runs; records as plain dicts."""

    verdict: str  # safe | deadlock | race | pdl-order | not-proven | not-run
    states_explored: int = 0
    complete_count: int = 0
    hit_state_limit: bool = False
    max_states: int = 0
    runs: int = 0
    context: str = ""
    deadlocks: list[dict[str, Any]] = field(default_factory=list)
    races: list[dict[str, Any]] = field(default_factory=list)
    pdl_order: list[dict[str, Any]] = field(default_factory=list)
    failed_run: CheckerRun | None = None
    raw: Any = field(default=None, repr=False)

    @property
    def is_safe(self) -> bool:
        return self.verdict == "safe"


def planned_runs(tasks: list[Any]) -> list[CheckerRun]:
    """The checker runs ``TaskManager._exhaustive_aliasing_races`` would make for these tasks."""
    persistent = any(isinstance(r, WorkQueue) for t in tasks for r in (*t.src_resources, *t.dst_resources))
    num_tiles = 2 if persistent else 1
    assignments = _opaque_assignments(_collect_opaque_keys(tasks))
    skip = any(getattr(t, "skip_if", None) is not None for t in tasks)
    runs = []
    for assignment in assignments:
        label = _format_opaque_assignment(assignment) if len(assignments) > 1 else ""
        runs.append(CheckerRun(num_tiles, False, assignment, label))
        if skip:
            runs.append(CheckerRun(num_tiles, True, assignment, (label + ", " if label else "") + "skipped tile"))
    return runs


def _deadlock_record(d: Any) -> dict[str, Any]:
    return {"cursors": list(d.cursors),
            "blocked": [{"task": b.task_name, "resource": b.resource_name, "stage": b.stage_name,
                         "waits_for": b.credit_kind, "physical_stage": b.physical_stage} for b in d.blocked_details]
            or [{"task": t, "resource": r, "stage": s, "waits_for": "", "physical_stage": None}
                for t, r, s in d.blocked_tasks],
            "lines": d.format_lines()}


def _race_record(r: Any) -> dict[str, Any]:
    return {"cursors": list(r.cursors), "writer_task": r.writer_task, "writer_resource": r.writer_resource,
            "victim_task": r.victim_task, "victim_resource": r.victim_resource, "victim_access": r.victim_access,
            "overlap": r.overlap_desc}


def _pdl_record(p: Any) -> dict[str, Any]:
    return {"cursors": list(p.cursors), "launch_task": p.launch_task, "launch_resource": p.launch_resource}


def run_checker(tasks: list[Any], *, max_states: int, verbose: bool = True,
                assume_pdl_wait_completed: bool = False) -> CheckerResult:
    """Run every planned checker pass until one is unsafe; sums states over the passes run."""
    total = CheckerResult(verdict="safe", max_states=max_states)
    for run in planned_runs(tasks):
        res = ec.check_all_interleavings(tasks, verbose=verbose, assume_pdl_wait_completed=assume_pdl_wait_completed,
                                         **run.kwargs(max_states))
        total.runs += 1
        total.states_explored += res.states_explored
        total.complete_count += res.complete_count
        total.hit_state_limit |= bool(res.hit_state_limit)
        unsafe = res.deadlock_states or res.race_states or res.pdl_order_states
        if unsafe:
            total.deadlocks = [_deadlock_record(d) for d in res.deadlock_states]
            total.races = [_race_record(r) for r in res.race_states]
            total.pdl_order = [_pdl_record(p) for p in res.pdl_order_states]
            total.verdict = "deadlock" if total.deadlocks else "race" if total.races else "pdl-order"
            total.context, total.failed_run, total.raw = run.context, run, res
            return total
    if total.hit_state_limit:
        total.verdict = "not-proven"
    return total
