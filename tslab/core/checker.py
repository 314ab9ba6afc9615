"""Running TS's exhaustive interleaving checker the way ``TaskManager`` does, with a state bound.

``TaskManager`` runs ``check_all_interleavings`` once per assignment of opaque predicates (and once more for
skipped work tiles), over 2 tiles for persistent kernels, but exposes no state limit; tslab runs the same
sequence itself so that ``max_states`` applies and the results come back as data.

Each run is searched by one of two provers (``strategy``): ``"ts"`` is TS's own breadth-first search, exactly
as TaskManager runs it; ``"reduced"`` is :mod:`tslab.core.search`, the same transitions with a partial-order
reduction; ``"auto"`` (the default) lets the reduced search decide and runs TS's search beside it while that
costs at most ``ts_budget`` states, so small designs report both state counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cutlass.experimental.task_scheduling import exhaustive_checker as ec
from cutlass.experimental.task_scheduling.resources import WorkQueue
from cutlass.experimental.task_scheduling.task_manager import _collect_opaque_keys, _opaque_assignments

from . import search
from .guards import Conditions
from .output import captured_stdout
from .trace import internals_ok, recording

STRATEGIES = ("auto", "reduced", "ts")
#: States TS's own search may take beside the reduced one under ``strategy="auto"``.
TS_BUDGET = 10_000


@dataclass(frozen=True)
class CheckerRun:
    """The arguments of one ``check_all_interleavings`` call, enough to repeat it exactly."""

    num_tiles: int
    skipped_tile: bool
    opaque_assignment: dict | None
    context: str
    assume_pdl_wait_completed: bool = False

    def kwargs(self, max_states: int | None = None) -> dict[str, Any]:
        """The keyword arguments of ``check_all_interleavings`` for this run (with ``max_states`` if given)."""
        out = {"num_tiles": self.num_tiles, "skipped_tile": self.skipped_tile,
               "opaque_assignment": self.opaque_assignment,
               "assume_pdl_wait_completed": self.assume_pdl_wait_completed}
        return out if max_states is None else {**out, "max_states": max_states}


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
    recording: Any = field(default=None, repr=False)
    first_run: CheckerRun | None = None
    strategy: str = "ts"
    prover: str = "ts"  # the search whose result this is: "ts" (TS's BFS) or "reduced" (tslab.core.search)
    ts_states: int | None = None  # TS's own BFS beside the reduced search (auto): its states, if it finished
    ts_verdict: str | None = None  # and what it found: safe, deadlock, race or pdl-order
    held_merges: int = 0  # states reached again with other held entries (then searched on exact states)

    @property
    def is_safe(self) -> bool:
        return self.verdict == "safe"

    def states_text(self) -> str:
        """The state count and which search it comes from, as the verdict prints it."""
        text = f"{self.states_explored:,} states"
        if self.prover == "reduced":
            text += " (reduced search"
            if self.ts_states is not None:
                text += f"; TS's BFS: {self.ts_states:,}"
            elif self.strategy == "auto":
                text += f"; TS's BFS: over {TS_BUDGET:,}"
            text += ")"
        return text


def planned_runs(tasks: list[Any], *, assume_pdl_wait_completed: bool = False,
                 conditions: Conditions | None = None) -> list[CheckerRun]:
    """The checker runs ``TaskManager._exhaustive_aliasing_races`` would make for these tasks: one per assignment
    of the runtime conditions TS enumerates (each named as ``conditions`` names it, by default as in ``tasks``),
    and one more per assignment for skipped work tiles."""
    conditions = Conditions.of(tasks) if conditions is None else conditions
    persistent = any(isinstance(r, WorkQueue) for t in tasks for r in (*t.src_resources, *t.dst_resources))
    num_tiles = 2 if persistent else 1
    assignments = _opaque_assignments(_collect_opaque_keys(tasks))
    skip = any(getattr(t, "skip_if", None) is not None for t in tasks)
    runs = []
    for assignment in assignments:
        label = conditions.assignment(assignment) if len(assignments) > 1 else ""
        runs.append(CheckerRun(num_tiles, False, assignment, label, assume_pdl_wait_completed))
        if skip:
            runs.append(CheckerRun(num_tiles, True, assignment, (label + ", " if label else "") + "skipped tile",
                                   assume_pdl_wait_completed))
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


def run_checker(tasks: list[Any], *, max_states: int, verbose: bool = True, record: bool = False,
                assume_pdl_wait_completed: bool = False, strategy: str = "ts",
                progress: Any = None, conditions: Conditions | None = None) -> CheckerResult:
    """Run every planned checker pass until one is unsafe; sums states over the passes run.

    With ``record=True`` each pass is recorded (:mod:`tslab.core.trace`); ``recording`` keeps the failing
    pass's recording (the first pass's when all are safe), from which
    :func:`tslab.core.replay.trace_from_result` rebuilds the counterexample. ``verbose`` lets TS's own search
    print its report (``strategy="ts"``); ``progress(states, queued)`` hears from the reduced search;
    ``conditions`` names the runtime conditions in each run's label.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r} is not one of {STRATEGIES}")
    if strategy != "ts" and not internals_ok():
        strategy = "ts"  # the reduced search needs the checker internals; TS's own search does not
    total = CheckerResult(verdict="safe", max_states=max_states, strategy=strategy,
                          prover="ts" if strategy == "ts" else "reduced", ts_states=0 if strategy == "auto" else None)
    record = record and internals_ok()
    runs = planned_runs(tasks, assume_pdl_wait_completed=assume_pdl_wait_completed, conditions=conditions)
    total.first_run = runs[0]
    for run in runs:
        rec = None
        if strategy != "ts":
            found = search.explore(tasks, max_states=max_states, progress=progress, **run.kwargs())
            res, rec = found.result, found.recording if record else None
            total.held_merges += found.merges
            if strategy == "auto":
                _beside(total, tasks, run, verbose)
        elif record:
            with recording() as rec:
                res = ec.check_all_interleavings(tasks, verbose=verbose, **run.kwargs(max_states))
        else:
            res = ec.check_all_interleavings(tasks, verbose=verbose, **run.kwargs(max_states))
        total.runs += 1
        if total.recording is None:
            total.recording = rec
        total.states_explored += res.states_explored
        total.complete_count += res.complete_count
        total.hit_state_limit |= bool(res.hit_state_limit)
        unsafe = res.deadlock_states or res.race_states or res.pdl_order_states
        if unsafe:
            total.deadlocks = [_deadlock_record(d) for d in res.deadlock_states]
            total.races = [_race_record(r) for r in res.race_states]
            total.pdl_order = [_pdl_record(p) for p in res.pdl_order_states]
            total.verdict = "deadlock" if total.deadlocks else "race" if total.races else "pdl-order"
            total.context, total.failed_run, total.raw, total.recording = run.context, run, res, rec
            return total
    if total.hit_state_limit:
        total.verdict = "not-proven"
    return total


def _beside(total: CheckerResult, tasks: list[Any], run: CheckerRun, verbose: bool) -> None:
    """TS's own search of ``run`` within :data:`TS_BUDGET` states; its count joins ``total.ts_states`` and,
    with ``verbose``, what it printed is printed when it finished (a budget is not TS's limit)."""
    if total.ts_states is None:
        return
    with captured_stdout() as printed:
        res = ec.check_all_interleavings(tasks, verbose=verbose, **run.kwargs(TS_BUDGET))
    if res.hit_state_limit:
        total.ts_states, total.ts_verdict = None, None
        return
    print(printed.getvalue(), end="")
    total.ts_states += res.states_explored
    found = "deadlock" if res.deadlock_states else "race" if res.race_states else \
        "pdl-order" if res.pdl_order_states else "safe"
    if total.ts_verdict in (None, "safe"):
        total.ts_verdict = found
