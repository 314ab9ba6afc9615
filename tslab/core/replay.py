"""Building a :class:`~tslab.core.trace_model.Trace` from a recorded checker run, and ``tslab.trace(design)``.

The path is the search's path to the state the checker reported (TS's BFS tree, or the reduced search's path,
walked again and shortened to TS's depth); every state on it comes from re-applying the checker's own
transition function (:class:`tslab.core.trace.Machine`), so it is a shortest counterexample.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from cutlass.experimental.task_scheduling import exhaustive_checker as ec

from ..errors import DesignError, TslabError, one_line
from . import search
from . import trace as hook
from .checker import STRATEGIES, CheckerResult, CheckerRun, planned_runs
from .guards import Conditions
from .trace_model import Entry, Fault, NextOp, Op, State, Step, Trace

ENDINGS = ("deadlock", "race", "pdl-order", "complete")


def snapshot(machine: hook.Machine, state: Any) -> State:
    """The public view of one checker state, with each task's next op and why it may not run."""
    enabled, _ = machine.enabled(state)
    cache = views_of(machine)
    next_ops, blocked = {}, False
    for ti, name in enumerate(machine.task_names):
        cursor = state.cursors[ti]
        if machine.done(state, ti):
            next_ops[name] = _DONE
        elif ti in enabled:
            next_ops[name] = cache.runnable[ti][cursor]
        else:
            blocked = True
    if blocked:
        waits = {b.task_name: b.format() for b in machine.blocked(state)}
        for ti, name in enumerate(machine.task_names):
            if name not in next_ops:
                op = cache.ops[ti][state.cursors[ti]]
                next_ops[name] = NextOp(op, "blocked", waits.get(name, "blocked"))
        next_ops = {name: next_ops[name] for name in machine.task_names}
    return State(cursors=tuple(state.cursors), prod_credits=machine.credits(state.prod_credits),
                 cons_credits=machine.credits(state.cons_credits), held=machine.held(state),
                 next_ops=next_ops, pdl_wait=bool(state.has_executed_pdl_wait))


def make_step(machine: hook.Machine, index: int, task_idx: int | None, cursor: int | None,
              state: Any) -> Step:
    """Step ``index``: ``task_idx`` ran its op at ``cursor`` and left ``state`` (``None``: the start)."""
    if task_idx is None or cursor is None:
        return Step(index, None, None, None, snapshot(machine, state))
    cache = views_of(machine)
    return Step(index, machine.task_names[task_idx], cache.ops[task_idx][cursor],
                cache.entries[task_idx][cursor], snapshot(machine, state))


_DONE = NextOp(None, "done")


class _Views:
    """Op, Entry and runnable NextOp of every checker step, built once per machine."""

    def __init__(self, machine: hook.Machine) -> None:
        self.ops = [[Op(*op) for op in ops] for ops in machine.ops]
        self.runnable = [[NextOp(op, "runnable") for op in ops] for ops in self.ops]
        self.entries = [[Entry(e["task"], e["section"], e["index"], e["iteration"], e["tile"], e["part"], e["guard"])
                         for e in entries] for entries in machine.entries]


def views_of(machine: hook.Machine) -> _Views:
    """The public Op, Entry and NextOp views of a machine's steps, built on first use."""
    views = machine.views
    if views is None:
        views = machine.views = _Views(machine)
    return views


def walk(machine: hook.Machine, path: list[int]) -> list[tuple[int | None, int | None, Any]]:
    """Re-apply the checker's transition along ``path`` (task indices) from the initial state:
    ``(task, cursor it ran at, state after)`` per step, the start first."""
    state = machine.initial
    raw: list[tuple[int | None, int | None, Any]] = [(None, None, state)]
    for ti in path:
        cursor = state.cursors[ti]
        state = machine.advance(state, ti)
        raw.append((ti, cursor, state))
    return raw


def views(machine: hook.Machine, raw: list[tuple[int | None, int | None, Any]]) -> list[Step]:
    """The public :class:`Step` of each walked state."""
    return [make_step(machine, n, ti, cursor, state) for n, (ti, cursor, state) in enumerate(raw)]


def deadlock_fault(info: Any) -> Fault:
    blocked = [{"task": b.task_name, "resource": b.resource_name, "stage": b.stage_name,
                "waits_for": b.credit_kind, "reason": b.format()} for b in info.blocked_details]
    message = "; ".join(b["reason"] for b in blocked) or ", ".join(
        f"{t} blocked on {r}.{s}" for t, r, s in info.blocked_tasks)
    return Fault("deadlock", tuple(info.cursors), message, blocked=blocked)


def race_fault(info: Any) -> Fault:
    message = (f"{info.writer_task} writes {info.writer_resource} vs {info.victim_task} {info.victim_access} "
               f"{info.victim_resource} ({info.overlap_desc})")
    return Fault("race", tuple(info.cursors), message,
                 writer={"task": info.writer_task, "resource": info.writer_resource},
                 victim={"task": info.victim_task, "resource": info.victim_resource,
                         "access": info.victim_access},
                 overlap=info.overlap_desc)


def pdl_fault(info: Any) -> Fault:
    return Fault("pdl-order", tuple(info.cursors),
                 f"{info.launch_task} {info.launch_resource}: "
                 "launch_griddep can execute before any wait_griddep")


def complete_fault(cursors: tuple[int, ...]) -> Fault:
    return Fault("complete", tuple(cursors), "every task ran to the end of its schedule")


def first_fault(res: Any, kind: str | None = None) -> Fault | None:
    """The checker's first reported fault of ``kind`` (any kind, in the checker's order, when ``None``)."""
    found = {"deadlock": [deadlock_fault(d) for d in res.deadlock_states[:1]],
             "race": [race_fault(r) for r in res.race_states[:1]],
             "pdl-order": [pdl_fault(p) for p in res.pdl_order_states[:1]]}
    for name in ("deadlock", "race", "pdl-order") if kind is None else (kind,):
        if found[name]:
            return found[name][0]
    return None


def build(tasks: list[Any], run: CheckerRun, rec: hook.Recording, fault: Fault, design: str,
          conditions: Conditions | None = None) -> Trace:
    """The trace of one recorded run, ending in ``fault``'s state (``conditions`` names the guards' conditions)."""
    machine = hook.Machine(tasks, rec, skipped_tile=run.skipped_tile, num_tiles=run.num_tiles,
                           opaque_assignment=run.opaque_assignment, conditions=conditions)
    raw = walk(machine, hook.path_to(rec, fault.cursors))
    return Trace(design=design, tasks=list(machine.task_names), steps=lambda: views(machine, raw),
                 fault=fault, run=run.context)


def lingering_notes(tasks: list[Any], result: CheckerResult) -> dict[int, str]:
    """Per race of an unsafe recorded result, a note when one side of it is the entry TS leaves behind a
    non-pipelined ProducerWork after the work returned (see :meth:`tslab.core.trace.Machine.lingering_write`):
    then the race is real only if that work still touches the bytes asynchronously."""
    rec, run = result.recording, result.failed_run
    if rec is None or run is None or not result.races:
        return {}
    machine = hook.Machine(tasks, rec, skipped_tile=run.skipped_tile, num_tiles=run.num_tiles,
                           opaque_assignment=run.opaque_assignment)
    notes = {}
    for n, race in enumerate(result.races):
        try:
            state = walk(machine, hook.path_to(rec, tuple(race["cursors"])))[-1][2]
        except TslabError:
            continue
        for task, resource, other in ((race["writer_task"], race["writer_resource"], race["victim_task"]),
                                      (race["victim_task"], race["victim_resource"], race["writer_task"])):
            if machine.lingering_write(state, task, resource):
                notes[n] = (f"{task}'s ProducerWork on the non-pipelined {resource} has returned, but TS keeps "
                            f"{resource} written from then on (it doubles that step and the second half leaves one "
                            "'prod' entry nothing clears): the race is real only if that work still touches the "
                            f"bytes when {other} does, e.g. a TMA store from SMEM released before "
                            "cp.async.bulk.wait_group.read; if the work has finished with them, it is a false "
                            "positive of TS's model")
                break
    return notes


def trace_from_result(tasks: list[Any], result: CheckerResult, design: str, *,
                      complete: bool = False, conditions: Conditions | None = None) -> Trace | None:
    """The counterexample of an unsafe ``run_checker(..., record=True)`` result; for a safe one, ``None``, or
    with ``complete=True`` a shortest run to completion (from the same recording, no second search)."""
    rec = result.recording
    if rec is None:
        return None
    if result.failed_run is not None and result.raw is not None:
        fault = first_fault(result.raw)
        return None if fault is None else build(tasks, result.failed_run, rec, fault, design, conditions)
    if not complete or result.verdict != "safe" or rec.context is None:
        return None
    run = result.first_run or planned_runs(tasks)[0]
    return build(tasks, run, rec, complete_fault(hook.complete_cursors(rec)), design, conditions)


@contextlib.contextmanager
def _as_design_error() -> Iterator[None]:
    """A failure of the checker itself (not tslab's) as the DesignError ``trace`` promises."""
    try:
        yield
    except TslabError:
        raise
    except Exception as exc:
        raise DesignError("schedule", "exhaustive checker", one_line(exc),
                          "run tslab.check(design) and fix the structural errors it reports first") from None


def checker_call(tasks: list[Any], run: CheckerRun, *, max_states: int, early_exit: bool) -> Any:
    """``check_all_interleavings`` for one planned run; its own failures become a ``DesignError``."""
    with _as_design_error():
        return ec.check_all_interleavings(tasks, verbose=False, early_exit=early_exit, **run.kwargs(max_states))


def _searched(tasks: list[Any], run: CheckerRun, max_states: int, strategy: str,
              early_exit: bool) -> tuple[Any, hook.Recording]:
    """One run searched by TS's BFS (recorded) or by the reduced search (to the end: every fault kind)."""
    if strategy == "ts":
        with hook.recording() as rec:
            res = checker_call(tasks, run, max_states=max_states, early_exit=early_exit)
        return res, rec
    with _as_design_error():
        found = search.explore(tasks, max_states=max_states, stop="end", **run.kwargs())
    return found.result, found.recording


def trace(design: Any, to: str | None = None, *, max_states: int = 1_000_000, strategy: str = "auto") -> Trace:
    """A shortest interleaving of ``design`` ending in ``to``: ``"deadlock"``, ``"race"``, ``"pdl-order"``
    or ``"complete"``; ``None`` takes the first fault (a deadlock before a race before a PDL-order fault under
    the reduced search; TS's first under ``strategy="ts"``), or a run to completion when there is none.

    Raises ``DesignError`` when no interleaving ends that way.
    """
    if to is not None and to not in ENDINGS:
        raise DesignError("input", "trace", f"to={to!r} is not a trace ending",
                          "use to='deadlock', 'race', 'pdl-order', 'complete' or None")
    if strategy not in STRATEGIES:
        raise DesignError("input", "trace", f"strategy={strategy!r} is not a checker strategy",
                          "use strategy='auto' (default), 'reduced' or 'ts'")
    lowered = design.lower()
    tasks, name, conditions = lowered.tasks, design.kernel, lowered.blueprint.conditions()
    runs = planned_runs(tasks, assume_pdl_wait_completed=lowered.blueprint.assume_pdl_wait_completed,
                        conditions=conditions)
    limit_hit = False
    safe_first: tuple[Any, hook.Recording] | None = None
    for n, run in enumerate(runs):
        if to == "complete":
            break
        res, rec = _searched(tasks, run, max_states, strategy, early_exit=True)
        limit_hit |= bool(res.hit_state_limit)
        fault = first_fault(res)
        if fault is None:
            safe_first = (res, rec) if n == 0 else safe_first
            continue
        if to is None or fault.kind == to:
            return build(tasks, run, rec, fault, name, conditions)
        if strategy == "ts":  # another fault stopped TS's search: search the whole run
            res, rec = _searched(tasks, run, max_states, strategy, early_exit=False)
        fault = first_fault(res, to)
        if fault is not None:
            return build(tasks, run, rec, fault, name, conditions)
    if to in (None, "complete") and runs:
        res, rec = safe_first or _searched(tasks, runs[0], max_states, strategy, early_exit=False)
        limit_hit |= bool(res.hit_state_limit)
        if rec.context is not None:
            cursors = hook.complete_cursors(rec)
            key = hook.cursor_key(rec, cursors)
            if key in rec.parent or key == 0:
                return build(tasks, runs[0], rec, complete_fault(cursors), name, conditions)
    what = {"complete": "no interleaving runs to completion",
            None: "the checker found neither a fault nor a run to completion"}.get(to, f"the checker finds no {to}")
    limit = f" within max_states={max_states}" if limit_hit else ""
    hint = ("raise max_states or shorten the loop domain" if limit_hit else
            "call tslab.check(design) to see what it reports, or ask for another ending, e.g. to='complete'")
    raise DesignError("input", f"design '{name}'", f"{what}{limit}", hint)
