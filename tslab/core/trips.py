"""Real trip counts: checking a kernel whose loop bounds are runtime values for the trip counts a user names.

TS expands a task's loop only when its bounds are compile-time ints; a runtime bound is checked as one trip
for every task, which can deadlock a schedule whose tasks run different trip counts (N loads, N-1 MMAs) or hide
what happens on the second trip. ``tslab.check(design, trips={"LoadTask": "n", "MmaTask": "n-1"},
n=range(1, 9))`` gives each named task an int loop bound per value of ``n`` on fresh copies of its TS objects
and lets TS expand and check each: a proof for those ``n``, not for every ``n``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import DesignError, did_you_mean

_HINT = "write a formula in n with +, -, * and //, e.g. 'n', 'n-1' or '2*n+1', or give an int"
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b}


@dataclass(frozen=True)
class TripPlan:
    """Validated trip-count formulas per task and the values of ``n`` to check them at."""

    formulas: dict[str, str]
    values: tuple[int, ...]

    def counts(self, n: int) -> dict[str, int]:
        """``{task: trips}`` at ``n``; a negative count is a DesignError naming the task."""
        out = {}
        for task, formula in self.formulas.items():
            count = _evaluate(ast.parse(formula, mode="eval").body, n)
            if count < 0:
                raise DesignError("input", f"trips['{task}']", f"{formula!r} gives {count} trips at n={n}",
                                  "start n where every formula is >= 0, e.g. n=range(1, 9)")
            out[task] = count
        return out

    def apply(self, tasks: list[Any], n: int) -> None:
        """Give each named task of ``tasks`` (fresh TS objects of one lowering) its int loop bound at ``n``."""
        counts = self.counts(n)
        for task in tasks:
            if task.name in counts:
                start = task.domain_start if isinstance(task.domain_start, int) else 0
                step = task.step if isinstance(task.step, int) and task.step > 0 else 1
                task.domain_start, task.step, task.domain_getter = start, step, None
                task.domain = start + counts[task.name] * step

    def describe(self) -> str:
        """``n = 1..8 (LoadTask: n, MmaTask: n-1)``, or the values listed when they are not a range."""
        vals = self.values
        span = f"{vals[0]}..{vals[-1]}" if len(vals) > 2 and list(vals) == list(range(vals[0], vals[-1] + 1)) \
            else ", ".join(map(str, vals))
        return f"n = {span} (" + ", ".join(f"{t}: {f}" for t, f in self.formulas.items()) + ")"


def plan(trips: dict[str, Any] | None, n: Any, task_names: list[str]) -> TripPlan | None:
    """Check ``trips`` and ``n`` against the design's tasks; None when no trip counts are asked for."""
    if trips is None:
        if n is not None:
            raise DesignError("input", "check", f"n={n!r} without trips",
                              "name the trip count of each task: trips={'LoadTask': 'n', 'MmaTask': 'n-1'}")
        return None
    if not isinstance(trips, dict) or not trips:
        raise DesignError("input", "check", f"trips={trips!r} is not a non-empty dict",
                          "pass trips={'LoadTask': 'n', 'MmaTask': 'n-1'}")
    formulas = {}
    for task, formula in trips.items():
        if task not in task_names:
            raise DesignError("input", f"trips['{task}']", "names no task of this design",
                              did_you_mean(str(task), task_names))
        formulas[task] = _formula(task, formula)
    values = _values(n)
    result = TripPlan(formulas, values)
    for value in values:
        result.counts(value)  # a negative count is refused before any check runs
    return result


def _formula(task: str, formula: Any) -> str:
    if isinstance(formula, int) and not isinstance(formula, bool):
        return str(formula)
    if not isinstance(formula, str):
        raise DesignError("input", f"trips['{task}']", f"{formula!r} is not a formula", _HINT)
    try:
        tree = ast.parse(formula.strip(), mode="eval")
        _evaluate(tree.body, 1)
    except (SyntaxError, ValueError) as exc:
        raise DesignError("input", f"trips['{task}']", f"{formula!r} does not parse as a formula in n "
                          f"({exc.msg if isinstance(exc, SyntaxError) else exc})", _HINT) from None
    return formula.strip()


def _evaluate(node: ast.AST, n: int) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id == "n":
        return n
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand, n)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        right = _evaluate(node.right, n)
        if isinstance(node.op, ast.FloorDiv) and right == 0:
            raise ValueError("division by zero")
        return _OPS[type(node.op)](_evaluate(node.left, n), right)
    raise ValueError(f"'{ast.unparse(node)}' is not n, an int or +, -, *, // of them")


def _values(n: Any) -> tuple[int, ...]:
    if n is None:
        raise DesignError("input", "check", "trips without n",
                          "say which n to check: n=range(1, 9) (or one int, n=4)")
    values: Iterable[Any] = [n] if isinstance(n, int) else n
    try:
        out = tuple(values)
    except TypeError:
        raise DesignError("input", "check", f"n={n!r} is neither an int nor a sequence of ints",
                          "pass n=range(1, 9) or n=4") from None
    if not out or any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in out):
        raise DesignError("input", "check", f"n={n!r} is not a non-empty sequence of ints >= 0",
                          "pass n=range(1, 9) or n=4")
    return out
