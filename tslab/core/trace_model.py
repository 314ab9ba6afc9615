"""``Trace``: one interleaving the checker explored, every step with its full protocol state, as plain data.

A trace is what :func:`tslab.trace` and ``Verdict.trace`` give: step 0 is the initial state, each later step
names the task that moved, the op it ran (stage, resource, label), the entry of the user's schedule that op
comes from, and the state after it. ``fault`` says how the trace ends, in the checker's own words.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from ..errors import DesignError
from .mime import TRACE as MIME

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Op:
    """A schedule op: the pipeline stage on a resource, and the work method's label if it has one."""

    stage: str
    resource: str
    label: str | None = None

    def __str__(self) -> str:
        return f"{self.stage}({self.resource}{'.' + self.label if self.label else ''})"


@dataclass(frozen=True)
class Entry:
    """Where a checker step comes from: the task's head/loop/tail list and index (as in ``Verdict.schedule``).

    ``iteration`` is the loop trip, ``tile`` the work tile (persistent kernels are checked over 2), ``part``
    names the piece when the checker splits or doubles one work call (``"write phase"``, ``"1 of 2"``), ``guard``
    the loop guard that let the step run on this trip (``"every(2, start=1)"``, ``"when_true(ring.read.item)"``;
    ``None`` for a step that runs on every trip).
    """

    task: str
    section: str
    index: int
    iteration: int | None = None
    tile: int = 0
    part: str | None = None
    guard: str | None = None

    def __str__(self) -> str:
        text = f"{self.section}[{self.index}]"
        if self.iteration is not None:
            text += f" iter {self.iteration}"
        if self.guard:
            text += f" [{self.guard}]"
        if self.tile:
            text += f" tile {self.tile}"
        return text + (f" ({self.part})" if self.part else "")


@dataclass(frozen=True)
class NextOp:
    """A task's next op and whether the checker would let it run: ``runnable``, ``blocked`` or ``done``."""

    op: Op | None
    status: str
    waits_for: str = ""


@dataclass(frozen=True)
class State:
    """The checker's state: cursors, full/empty credits per ``resource[stage]``, held sets, next ops."""

    cursors: tuple[int, ...]
    prod_credits: dict[str, int]
    cons_credits: dict[str, int]
    held: dict[str, list[tuple[str, str, int, int]]]
    next_ops: dict[str, NextOp]
    pdl_wait: bool = False

    def runnable(self) -> list[str]:
        return [t for t, n in self.next_ops.items() if n.status == "runnable"]


@dataclass(frozen=True)
class Step:
    """One step of a trace; step 0 has ``task=None`` and holds the initial state."""

    index: int
    task: str | None
    op: Op | None
    entry: Entry | None
    state: State


@dataclass(frozen=True)
class Fault:
    """How a trace ends: ``deadlock``, ``race``, ``pdl-order`` (with the checker's message), ``complete``,
    or ``running`` for an :class:`~tslab.core.explorer.Explorer` play that has not ended."""

    kind: str
    cursors: tuple[int, ...]
    message: str
    blocked: list[dict[str, Any]] = field(default_factory=list)
    writer: dict[str, str] | None = None
    victim: dict[str, str] | None = None
    overlap: str = ""

    @property
    def is_fault(self) -> bool:
        return self.kind in ("deadlock", "race", "pdl-order")


class Trace:
    """A sequence of :class:`Step` from the initial state to ``fault`` (see the module docstring).

    ``steps`` may be given as a function returning them: the trace then builds its step views on first use,
    so recording a counterexample costs little until someone looks at it.
    """

    def __init__(self, design: str, tasks: list[str], steps: list[Step] | Callable[[], list[Step]],
                 fault: Fault, run: str = "") -> None:
        self.design, self.tasks, self.fault, self.run = design, list(tasks), fault, run
        self._steps = steps if isinstance(steps, list) else None
        self._make = None if isinstance(steps, list) else steps

    @property
    def steps(self) -> list[Step]:
        if self._steps is None:
            assert self._make is not None
            self._steps, self._make = self._make(), None
        return self._steps

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index: int) -> Step:
        return self.steps[index]

    @property
    def final(self) -> State:
        return self.steps[-1].state

    # -- data ----------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"tslab_trace": FORMAT_VERSION, "design": self.design, "tasks": list(self.tasks),
                "run": self.run, "fault": asdict(self.fault), "steps": [asdict(s) for s in self.steps]}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        """Read a trace written by :meth:`to_json`."""
        try:
            return cls.from_dict(json.loads(text))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise DesignError("input", "trace JSON", f"cannot be read ({type(exc).__name__}: {exc})",
                              "pass the text written by Trace.to_json()") from None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        fault = dict(data["fault"])
        fault["cursors"] = tuple(fault["cursors"])
        return cls(design=data["design"], tasks=list(data["tasks"]), run=data.get("run", ""),
                   fault=Fault(**fault), steps=[_step_from(s) for s in data["steps"]])

    def to_dataframe(self) -> pd.DataFrame:
        """One row per step: move, schedule entry, cursors, credits (``full:``/``empty:``), held sets."""
        rows = []
        for s in self.steps:
            row: dict[str, Any] = {"step": s.index, "task": s.task, "op": str(s.op) if s.op else None,
                                   "stage": s.op.stage if s.op else None,
                                   "resource": s.op.resource if s.op else None,
                                   "label": s.op.label if s.op else None,
                                   "section": s.entry.section if s.entry else None,
                                   "index": s.entry.index if s.entry else None,
                                   "iteration": s.entry.iteration if s.entry else None,
                                   "guard": s.entry.guard if s.entry else None,
                                   "part": s.entry.part if s.entry else None, "cursors": s.state.cursors}
            row.update({f"full:{k}": v for k, v in s.state.prod_credits.items()})
            row.update({f"empty:{k}": v for k, v in s.state.cons_credits.items()})
            row["held"] = _held_text(s.state.held)
            row["pdl_wait"] = s.state.pdl_wait
            rows.append(row)
        # Whole numbers stay whole and a step without one (the start) shows <NA>, not a float NaN.
        text = dict.fromkeys(("task", "op", "stage", "resource", "label", "section", "guard", "part"), "string")
        return pd.DataFrame(rows).astype({"index": "Int64", "iteration": "Int64", **text})

    # -- views ---------------------------------------------------------------------------------------
    def headline(self) -> str:
        moves = len(self.steps) - 1
        end = self.fault.kind.upper()
        run = f" [{self.run}]" if self.run else ""
        return f"{self.design}: {end} after {moves} step{'s' if moves != 1 else ''}{run}"

    def text(self) -> str:
        """The trace as numbered notebook lines: who moved, what ran, and what that changed."""
        first = self.steps[0].state
        lines = [self.headline(), f"  tasks: {', '.join(self.tasks)}",
                 f"    0. start: cursors {first.cursors}; {_credits_text(first) or 'no pipelined resource'}"]
        moves = self.steps[1:]
        who = max((len(s.task or "") for s in moves), default=0)
        op = max((len(str(s.op)) for s in moves), default=0)
        where = max((len(str(s.entry)) for s in moves), default=0)
        for before, s in zip(self.steps, moves, strict=False):
            change = _changes(before.state, s.state) or "-"
            lines.append(f"  {s.index:>3}. {s.task or '':<{who}}  {s.op!s:<{op}}  {s.entry!s:<{where}}  {change}")
        end = f"  => {self.fault.kind.upper()} at cursors {self.fault.cursors}"
        if self.fault.blocked:
            lines += [end + ":"] + [f"       {b['reason']}" for b in self.fault.blocked]
        else:
            lines.append(f"{end}: {self.fault.message}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        last = len(self.steps) - 1
        rows = []
        for s in self.steps:
            style = ' style="background:#ffebe9"' if s.index == last and self.fault.is_fault else ""
            rows.append(f"<tr{style}><td>{s.index}</td><td>{html.escape(s.task or 'start')}</td>"
                        f"<td><code>{html.escape(str(s.op) if s.op else '')}</code></td>"
                        f"<td>{html.escape(str(s.entry) if s.entry else '')}</td>"
                        f"<td>{s.state.cursors}</td><td>{html.escape(_credits_text(s.state))}</td>"
                        f"<td>{html.escape(_held_text(s.state.held))}</td></tr>")
        colour = "#1a7f37" if not self.fault.is_fault else "#cf222e"
        return (f'<div class="tslab-trace"><b style="color:{colour}">{html.escape(self.headline())}</b>'
                "<table><thead><tr><th>#</th><th>task</th><th>op</th><th>entry</th><th>cursors</th>"
                f"<th>credits</th><th>held</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
                f"<p><b>{html.escape(self.fault.kind.upper())}</b>: "
                f"{html.escape(self.fault.message)}</p></div>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {MIME: self.to_dict(), "text/html": self._repr_html_(), "text/plain": self.text()}


def _credits_text(state: State) -> str:
    full = " ".join(f"{k}={v}" for k, v in state.prod_credits.items())
    empty = " ".join(f"{k}={v}" for k, v in state.cons_credits.items())
    return f"full {full} | empty {empty}" if full or empty else ""


def _changes(before: State, after: State) -> str:
    """What one step changed: credits as ``full smem[0] 0->1``, held entries as ``+``/``-``."""
    out = []
    for kind, old, new in (("full", before.prod_credits, after.prod_credits),
                           ("empty", before.cons_credits, after.cons_credits)):
        out += [f"{kind} {k} {old.get(k, 0)}->{v}" for k, v in new.items() if old.get(k, 0) != v]
    held_before = {(r, tuple(e)) for r, ents in before.held.items() for e in ents}
    held_after = {(r, tuple(e)) for r, ents in after.held.items() for e in ents}
    out += [f"+held {r}: {e[0]} by {e[1]} slot {e[2]}" for r, e in sorted(held_after - held_before)]
    out += [f"-held {r}: {e[0]} by {e[1]} slot {e[2]}" for r, e in sorted(held_before - held_after)]
    return "; ".join(out)


def _held_text(held: dict[str, list]) -> str:
    return "; ".join(f"{res}: " + ", ".join(f"{a} by {t} slot {slot}" for a, t, slot, _gen in ents)
                     for res, ents in held.items() if ents)


def _step_from(data: dict[str, Any]) -> Step:
    st = data["state"]
    state = State(cursors=tuple(st["cursors"]), prod_credits=dict(st["prod_credits"]),
                  cons_credits=dict(st["cons_credits"]),
                  held={r: [tuple(e) for e in ents] for r, ents in st["held"].items()},
                  next_ops={t: NextOp(Op(**n["op"]) if n["op"] else None, n["status"], n["waits_for"])
                            for t, n in st["next_ops"].items()},
                  pdl_wait=st["pdl_wait"])
    return Step(index=data["index"], task=data["task"], op=Op(**data["op"]) if data["op"] else None,
                entry=Entry(**data["entry"]) if data["entry"] else None, state=state)
