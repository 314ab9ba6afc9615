"""``check(design)``: lower a design to fresh TS objects and run TS's own verification on the CPU.

``TaskManager`` runs its structural checks with ``skip_validation=True`` so that every failing check is
reported (as a warning we collect) instead of only the first; the exhaustive checker then runs through
:mod:`tslab.core.checker` with a state bound. Nothing here needs a kernel trace or a GPU.
"""

from __future__ import annotations

import re
import time
import warnings
from typing import Any

import pandas as pd
from cutlass.experimental.task_scheduling.task_manager import TaskManager

from ..errors import DesignError, Issue, one_line
from . import trips as trip_counts
from .blueprint import DEFAULT_SMEM_CAPACITY, DEFAULT_TMEM_CAPACITY, Lowered
from .checker import STRATEGIES, CheckerResult, run_checker
from .output import captured_stdout
from .replay import lingering_notes, trace_from_result
from .skip_agreement import differing_skip_predicates
from .stage_binding import unworked_waits
from .tables import LAYOUT_COLUMNS, SCHEDULE_COLUMNS, alias_savings, layout_table, schedule_table, task_rows
from .ts_lock import TS_LOCK
from .verdict import Verdict

_CHECK_KINDS = {
    "_verify_smem_capacity": "capacity",
    "_verify_tmem_capacity": "capacity",
    "_verify_pdl_wait_ordering": "pdl-order",
    "_verify_pipeline_thread_counts": "invalid-config",
    "_verify_interleaved_pipelines": "invalid-config",
    "_verify_pipeline_group_consistency": "invalid-config",
    "_verify_cta_layout_consistency": "invalid-config",
    "_verify_consumer_wait_signaling": "invalid-config",
    "_verify_leader_routed_producer_completions": "invalid-config",
    "_verify_register_budget": "invalid-config",
    "_verify_warp_group_registers": "invalid-config",
}
_HINTS = {
    "capacity": "reduce pipeline stages or tile sizes, or alias buffers whose lifetimes do not overlap",
    "invalid-config": "change the named PipelineConfig field to match the task that uses it",
    "schedule": "fix the named task's schedule: each wait/acquire needs its release/commit in the same section",
    "deadlock": "give the ring more stages, or release each stage before waiting for the next",
    "race": "move the aliased allocations into phases that are never live together, or drop the alias group",
    "pdl-order": "issue launch_griddep only after a PdlWaitBarrier.wait_griddep",
}
#: Fixes for the TS checks whose failures the kind's general hint does not fit.
_CHECK_HINTS = {
    "_verify_slot_routing": "every step that reads a task-local variable needs the step that writes it earlier in "
                            "the same task (the task keeps its kernel's routing through schedule edits): move the "
                            "reading step after its writer, or put the writer back",
    "_verify_tmem_capacity": "fewer accumulator stages or narrower tiles (columns = stages x tile width), or alias "
                             "TMEM buffers whose lifetimes do not overlap",
}
_CHECK_LOCK = TS_LOCK
_WARNING = re.compile(r"TS validation \((?P<check>\w+)\): (?P<msg>.*)", re.S)


def _where(message: str, names: list[tuple[str, str]], fallback: str) -> str:
    for kind, name in names:
        if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", message):
            return f"{kind} '{name}'"
    return fallback


def _issue_from_warning(text: str, names: list[tuple[str, str]]) -> Issue:
    match = _WARNING.match(text)
    check, msg = (match["check"], match["msg"].strip()) if match else ("TaskManager", text.strip())
    kind = _CHECK_KINDS.get(check, "schedule")
    if check == "_print_task_schedules" and "blocked" in msg:
        kind = "deadlock"
    where = "smem" if check == "_verify_smem_capacity" else "tmem" if check == "_verify_tmem_capacity" else \
        _where(msg, names, check.strip("_").replace("_", " "))
    return Issue(kind, where, msg, _CHECK_HINTS.get(check, _HINTS[kind]))  # type: ignore[arg-type]


def _checker_issues(result: CheckerResult, notes: dict[int, str] | None = None) -> list[Issue]:
    """The checker's faults as issues; ``notes`` (per race index) qualify races TS's model may invent."""
    notes = notes or {}
    issues = []
    for d in result.deadlocks:
        blocked = "; ".join(f"{b['task']} blocked on {b['resource']}.{b['stage']}"
                            + (f" waiting for {b['waits_for']}" if b["waits_for"] else "") for b in d["blocked"])
        where = ", ".join(f"task '{b['task']}'" for b in d["blocked"])
        issues.append(Issue("deadlock", where, f"deadlock at cursors {tuple(d['cursors'])}: {blocked}",
                            _HINTS["deadlock"]))
    for n, r in enumerate(result.races):
        note = f"; note: {notes[n]}" if n in notes else ""
        issues.append(Issue("race", f"resource '{r['writer_resource']}'",
                            f"{r['writer_task']} writes {r['writer_resource']} while {r['victim_task']} "
                            f"{r['victim_access']} {r['victim_resource']} ({r['overlap']}){note}", _HINTS["race"]))
    for p in result.pdl_order:
        issues.append(Issue("pdl-order", f"task '{p['launch_task']}'",
                            f"{p['launch_task']} issues {p['launch_resource']}.launch_griddep before any wait_griddep",
                            _HINTS["pdl-order"]))
    if result.context and issues:
        issues = [Issue(i.kind, i.where, f"{i.message} [{result.context}]", i.hint) for i in issues]
    return issues


def runtime_domains(tasks: list[Any]) -> list[str]:
    """Tasks whose loop bounds are runtime values, which TS's simulation and checker take as one trip."""
    out = []
    for task in tasks:
        bounds = (getattr(task, "domain_start", 0), getattr(task, "domain", 1), getattr(task, "step", 1))
        if any(not isinstance(b, int) for b in bounds):
            out.append(f"{task.name} (loop bound {getattr(task, 'domain', '?')!r})")
    return out


def under_assumption(errors: list[Issue], tasks: list[Any]) -> list[Issue]:
    """Deadlocks found while a loop bound is a runtime value become what TS says they are: blocked under the
    assumption of one trip (possibly a false positive), not a proven deadlock."""
    assumed = runtime_domains(tasks)
    if not assumed:
        return errors
    note = (f"TS assumed one loop trip for {', '.join(assumed)}: \"if the domain is not a compile-time Python int, "
            "this may be a FALSE POSITIVE (domain defaults to 1)\"")
    names = [t.name for t in tasks if any(a.startswith(f"{t.name} (") for a in assumed)]
    example = ", ".join(f"{name!r}: 'n'" for name in names[:3]) + (", ..." if len(names) > 3 else "")
    hint = (f"check it with the trip count each task really runs: tslab.check(design, trips={{{example}}}, "
            "n=range(1, 9)) (write 'n-1' for a task that runs one trip fewer); or capture the kernel with the "
            "loop bound as a compile-time int (a cutlass.Constexpr argument or a module constant), or open the "
            "kernel's TaskManager built outside the trace with an int bound (TS's validate-only mode) with "
            "tslab.capture_call(builder); or fix the blocked step if it blocks for any trip count")
    return [Issue("blocked-assumed", e.where, f"{e.message}; {note}", hint) if e.kind == "deadlock" else e
            for e in errors]


#: Loop trips a check steps through at most, per task: TS's checker unrolls every trip of every task's loop (its
#: precomputed steps and its search grow with them), so a loop of 690,864 trips would hold it for hours.
MAX_CHECK_TRIPS = 4096


def _too_many_trips(tasks: list[Any]) -> Issue | None:
    """The first task whose loop runs more trips than a check steps through, as an Issue naming it and the fix."""
    for task in tasks:
        bounds = (getattr(task, "domain_start", 0), getattr(task, "domain", 1), getattr(task, "step", 1))
        if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds) or bounds[2] == 0:
            continue  # a runtime bound: TS takes it as one trip (runtime_domains)
        trips = len(range(*bounds))
        if trips > MAX_CHECK_TRIPS:
            return Issue("input", f"task '{task.name}'",
                         f"its loop runs {trips:,} trips, over the {MAX_CHECK_TRIPS:,} a check steps through (the "
                         "checker unrolls every trip of every loop)",
                         "check the design with fewer trips (its trip param, e.g. 4 to 16): a pipeline's phases "
                         "repeat every 2 x stages trips, so a few times that reaches every phase")
    return None


def _empty_verdict(design: Any, issue: Issue, started: float) -> Verdict:
    return Verdict(design=design, errors=[issue], layout=pd.DataFrame(columns=LAYOUT_COLUMNS),
                   schedule=pd.DataFrame(columns=SCHEDULE_COLUMNS), checker=CheckerResult(verdict="not-run"),
                   smem_capacity=DEFAULT_SMEM_CAPACITY, tmem_capacity=DEFAULT_TMEM_CAPACITY,
                   seconds=time.perf_counter() - started)


def check(design: Any, *, max_states: int = 1_000_000, smem_capacity: int | None = None, strategy: str = "auto",
          trips: dict[str, Any] | None = None, n: Any = None, progress: Any = None) -> Verdict:
    """Verify ``design`` with TS (structure, capacity, exhaustive interleavings) and return a Verdict.

    ``strategy`` picks the search over interleavings: ``"auto"`` (the reduced search decides; TS's own search
    runs beside it while it is small), ``"reduced"`` or ``"ts"`` (TS's breadth-first search exactly as
    TaskManager runs it). ``trips={"LoadTask": "n", "MmaTask": "n-1"}, n=range(1, 9)`` checks a kernel whose
    loop bounds are runtime values with those trip counts, one check per ``n``, instead of TS's one-trip
    assumption; the verdict is the first failing ``n``'s (or the last ``n``'s) and lists the ``n`` checked.
    ``progress(states, queued)`` hears from long reduced searches. Never raises for a bad design: every
    problem is an ``Issue`` in ``Verdict.errors``; bad arguments are a ``DesignError``.
    """
    started = time.perf_counter()
    if not isinstance(max_states, int) or isinstance(max_states, bool) or max_states <= 0:
        raise DesignError("input", "check", f"max_states={max_states!r} is not a positive int",
                          "pass max_states=1_000_000 or another positive bound")
    if strategy not in STRATEGIES:
        raise DesignError("input", "check", f"strategy={strategy!r} is not a checker strategy",
                          "use strategy='auto' (default), 'reduced' or 'ts'")
    try:
        lowered = design.lower()
    except DesignError as exc:
        return _empty_verdict(design, exc.issue, started)
    except (AssertionError, ValueError, TypeError, KeyError, ZeroDivisionError, RuntimeError) as exc:
        return _empty_verdict(design, Issue("input", "design", one_line(exc),
                                            "check the design's parameters and overrides"), started)
    options = {"max_states": max_states, "smem_capacity": smem_capacity, "strategy": strategy, "progress": progress}
    plan = trip_counts.plan(trips, n, [t.name for t in lowered.tasks])
    if plan is None:
        verdict = verify(design, lowered, started=started, **options)
    else:
        verdict = _check_trips(design, lowered, plan, started, options)
    consistency = getattr(design, "consistency_issues", None)
    if consistency is not None:
        try:
            verdict.errors.extend(consistency())
        except DesignError as exc:
            verdict.errors.append(exc.issue)
    return verdict


def _check_trips(design: Any, lowered: Lowered, plan: trip_counts.TripPlan, started: float,
                 options: dict[str, Any]) -> Verdict:
    """One check per ``n`` of ``plan`` on fresh TS objects with the tasks' loop bounds set; the first failing
    ``n``'s verdict (the last ``n``'s when all are safe), its errors marked with that ``n``."""
    verdict = None
    checked = []
    strategy = options["strategy"]
    for value in plan.values:
        if verdict is not None:
            lowered = design.lower()
        plan.apply(lowered.tasks, value)
        verdict = verify(design, lowered, started=started, **options)
        if options["strategy"] == "auto" and verdict.checker.ts_states is None:
            options = {**options, "strategy": "reduced"}  # TS outgrew its budget: the reduced search alone goes on
        checked.append({"n": value, "status": verdict.status, "states": verdict.checker.states_explored})
        if not verdict.ok:
            verdict.errors = [Issue(e.kind, e.where, f"{e.message} [n={value}]", e.hint) for e in verdict.errors]
            break
    assert verdict is not None
    verdict.checker.strategy = strategy  # auto, also where TS's search was left out for the larger n
    verdict.trips = {"formulas": dict(plan.formulas), "n": [c["n"] for c in checked], "checked": checked,
                     "failed_at": None if verdict.ok else checked[-1]["n"], "text": plan.describe()}
    return verdict


def verify(design: Any, lowered: Lowered, *, max_states: int, smem_capacity: int | None = None,
           started: float | None = None, strategy: str = "auto", progress: Any = None) -> Verdict:
    """Run TS's verification on already-lowered objects."""
    started = time.perf_counter() if started is None else started
    bp = lowered.blueprint
    too_many = _too_many_trips(bp.tasks)
    if too_many is not None:
        return _empty_verdict(design, too_many, started)
    capacity = smem_capacity or bp.smem_capacity_bytes or DEFAULT_SMEM_CAPACITY
    tmem_capacity = bp.tmem_capacity_columns or DEFAULT_TMEM_CAPACITY
    names = [("task", t.name) for t in bp.tasks] + [("resource", n) for n in bp.resources()]
    errors: list[Issue] = []
    # One check at a time: TS's warnings are collected with the process-wide warnings machinery.
    with _CHECK_LOCK, warnings.catch_warnings(record=True) as caught, captured_stdout() as out:
        warnings.simplefilter("always")
        try:
            TaskManager(tasks=bp.tasks, resource_dependency_graph=bp.graph, smem_allocator=lowered.smem_allocator,
                        tmem_allocator=lowered.tmem_allocator, smem_capacity_bytes=capacity,
                        tmem_capacity_columns=tmem_capacity, skip_validation=True, verbose=True,
                        exhaustive_deadlock_race_check=False,
                        dma_consumer_release_labels=bp.dma_consumer_release_labels,
                        assume_pdl_wait_completed=bp.assume_pdl_wait_completed)
        except Exception as exc:  # TS raised outside its own checks: report it, keep the kernel alive
            errors.append(Issue("schedule", "TaskManager", one_line(exc),
                                _HINTS["schedule"]))
        try:
            result = run_checker(bp.tasks, max_states=max_states, record=True, strategy=strategy,
                                 progress=progress, assume_pdl_wait_completed=bp.assume_pdl_wait_completed,
                                 conditions=bp.conditions())
        except Exception as exc:
            result = CheckerResult(verdict="not-run", max_states=max_states, strategy=strategy)
            errors.append(Issue("schedule", "exhaustive checker", one_line(exc),
                                "fix the structural errors above first"))
    other, failed = [], []
    for w in caught:
        text = str(w.message)
        if text.startswith("TS validation"):
            errors.append(_issue_from_warning(text, names))
            failed.extend(m["check"] for m in [_WARNING.match(text)] if m)
        else:
            other.append(text)
    checker_issues = _checker_issues(result, lingering_notes(bp.tasks, result))
    if any(i.kind == "deadlock" for i in checker_issues):  # the exhaustive record supersedes TS's simulation
        errors = [e for e in errors if e.kind != "deadlock"]
    errors.extend(checker_issues)
    errors = under_assumption(errors, bp.tasks)
    smem, tmem = lowered.smem_allocator, lowered.tmem_allocator
    counterexample = trace_from_result(bp.tasks, result, getattr(design, "kernel", "design"),
                                       conditions=bp.conditions())
    layout = layout_table(smem, tmem)
    schedule = schedule_table(bp.tasks, bp.conditions())
    cautions = [*unworked_waits(schedule), *differing_skip_predicates(bp.tasks)]
    return Verdict(
        design=design, errors=errors, layout=layout, schedule=schedule, cautions=cautions,
        tasks=task_rows(bp.tasks),
        checker=result, report=out.getvalue(), smem_total=smem.total if smem else 0, smem_capacity=capacity,
        tmem_total=tmem.total if tmem else 0, tmem_capacity=tmem_capacity,
        barrier_bytes=smem.barrier_smem_bytes if smem else 0, alias_savings=alias_savings(layout, smem),
        tmem_alias_savings=alias_savings(layout, tmem, "tmem"),
        seconds=time.perf_counter() - started, warnings=other, trace=counterexample,
        failed_checks=sorted(set(failed)))
