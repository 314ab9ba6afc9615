"""``Explorer``: play the scheduler. Pick which task moves next; the checker's own rules say what may move.

Enabledness, the transition, deadlock and race detection all come from TS's exhaustive checker (through
:mod:`tslab.core.trace`), over the same context the checker builds for the design's first planned run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DesignError, TslabError, did_you_mean
from . import trace as hook
from .checker import planned_runs
from .replay import checker_call, complete_fault, deadlock_fault, make_step, pdl_fault, race_fault, views_of
from .trace_model import Entry, Fault, Op, State, Step, Trace


class MoveError(TslabError, ValueError):
    """A move the checker would not make (the task is blocked or finished); the state is unchanged."""


@dataclass(frozen=True)
class Move:
    """A task that may move now, and the op it would run."""

    task: str
    op: Op

    def __str__(self) -> str:
        return f"{self.task}: {self.op}"


@dataclass(frozen=True)
class Status:
    """Where the play stands: ``running``, ``complete``, ``deadlock``, ``race`` or ``pdl-order``."""

    kind: str
    message: str
    fault: Fault | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class Explorer:
    """Step a design's tasks by hand: ``enabled()``, ``step(task)``, ``undo()``, ``reset()``, ``status``."""

    def __init__(self, design: Any, *, run: int = 0) -> None:
        lowered = design.lower()
        tasks, conditions = lowered.tasks, lowered.blueprint.conditions()
        runs = planned_runs(tasks, assume_pdl_wait_completed=lowered.blueprint.assume_pdl_wait_completed,
                            conditions=conditions)
        #: What each planned run of the checker assumes (the runtime conditions' values, a skipped tile), by index.
        self.runs: list[str] = [r.context for r in runs]
        if not isinstance(run, int) or isinstance(run, bool) or not 0 <= run < len(runs):
            listed = "; ".join(f"{n}: {c}" for n, c in enumerate(self.runs) if c)
            raise DesignError("input", "Explorer", f"run={run!r} is not one of the {len(runs)} planned runs",
                              f"pass run=0..{len(runs) - 1}" + (f" ({listed})" if listed else ""))
        self.run = runs[run]
        with hook.recording(parents=False) as rec:  # the checker builds its context; one state is enough
            checker_call(tasks, self.run, max_states=1, early_exit=True)
        self.design = getattr(design, "kernel", "design")
        self._machine = hook.Machine(tasks, rec, skipped_tile=self.run.skipped_tile,
                                     num_tiles=self.run.num_tiles,
                                     opaque_assignment=self.run.opaque_assignment, conditions=conditions)
        self.tasks: list[str] = list(self._machine.task_names)
        self.reset()

    # -- moves ---------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the initial state."""
        self._raw = [self._machine.initial]
        self._steps = [make_step(self._machine, 0, None, None, self._machine.initial)]

    def enabled(self) -> list[Move]:
        """The tasks the checker would let move now."""
        m, state = self._machine, self._raw[-1]
        return [Move(m.task_names[t], Op(*m.op(t, state.cursors[t]))) for t in m.enabled(state)[0]]

    def step(self, task: str | int) -> Step:
        """Move ``task`` one op; raises :class:`MoveError` (state unchanged) if the checker would not."""
        ti = self._task_index(task)
        m, state = self._machine, self._raw[-1]
        name = m.task_names[ti]
        if m.done(state, ti):
            raise MoveError(f"task '{name}': has finished its schedule; move one of: {self._choices()}")
        if ti not in m.enabled(state)[0]:
            reason = self._steps[-1].state.next_ops[name].waits_for
            raise MoveError(f"task '{name}': {reason}; move one of: {self._choices()}")
        cursor = state.cursors[ti]
        new = m.advance(state, ti)
        self._raw.append(new)
        self._steps.append(make_step(m, len(self._steps), ti, cursor, new))
        return self._steps[-1]

    def undo(self) -> Step:
        """Take back the last move; returns the step now current."""
        if len(self._raw) == 1:
            raise MoveError("Explorer: nothing to undo; this is the initial state")
        self._raw.pop()
        self._steps.pop()
        return self._steps[-1]

    # -- reading -------------------------------------------------------------------------------------
    def next_entry(self, task: str | int) -> Entry | None:
        """Where in its schedule ``task``'s next op comes from (section, index, trip, tile, part); None when
        the task has finished."""
        ti = self._task_index(task)
        m, state = self._machine, self._raw[-1]
        return None if m.done(state, ti) else views_of(m).entries[ti][state.cursors[ti]]

    @property
    def state(self) -> State:
        return self._steps[-1].state

    @property
    def history(self) -> list[Step]:
        return list(self._steps)

    @property
    def status(self) -> Status:
        """What the checker would report at this state (races first, as it checks them first)."""
        m, state = self._machine, self._raw[-1]
        races = m.races(state)
        if races:
            fault = race_fault(races[0])
            return Status("race", fault.message, fault)
        enabled, all_done = m.enabled(state)
        if all_done:
            fault = complete_fault(state.cursors)
            return Status("complete", fault.message, fault)
        if not enabled:
            fault = deadlock_fault(m.deadlock(state))
            return Status("deadlock", fault.message, fault)
        early = m.pdl_order(state, enabled)
        if early is not None:
            fault = pdl_fault(early)
            return Status("pdl-order", fault.message, fault)
        return Status("running", "move one of: " + self._choices())

    def trace(self) -> Trace:
        """The moves so far as a :class:`Trace` (its fault is the current status, ``running`` included)."""
        st = self.status
        fault = st.fault or Fault("running", self.state.cursors, st.message)
        return Trace(design=self.design, tasks=list(self.tasks), steps=self.history, fault=fault,
                     run=self.run.context)

    def _choices(self) -> str:
        return ", ".join(mv.task for mv in self.enabled()) or "(none)"

    def _task_index(self, task: str | int) -> int:
        if isinstance(task, int) and not isinstance(task, bool) and 0 <= task < len(self.tasks):
            return task
        if isinstance(task, str) and task in self.tasks:
            return self.tasks.index(task)
        raise DesignError("input", f"task {task!r}", "is not a task of this design",
                          did_you_mean(str(task), self.tasks))

    def __repr__(self) -> str:
        return f"Explorer({self.design}, step {len(self._steps) - 1}, {self.status})"

