"""The ``@schedule`` Python function a user would paste for an edited step list."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from cutlass.experimental.task_scheduling.schedule_builder import _STANDARD_STAGE_METHODS

from ..core.steps import Step, kwargs_text

#: ScheduleStage name -> the resource proxy method that records it (TS's own table, inverted).
STAGE_METHODS: dict[str, str] = {stage.name: method for method, stage in _STANDARD_STAGE_METHODS.items()}
_GUARD_BLOCKS = {"FirstIter": "loop.first_iter()", "LastIter": "loop.last_iter()"}
_WHEN = re.compile(r"(when_(?:true|false))\((.+)\)")


def _call(step: Step, kwargs: dict[str, Any] | None = None) -> str:
    resource, stage, _, label = step[:4]
    method = label if label and stage.endswith("Work") else STAGE_METHODS[stage]
    return f"{resource}.{method}({kwargs_text(kwargs)})"


def _guard_block(guard: str) -> str:
    """The ``with`` block of a guard: ``loop.every(2, start=1)``; a runtime condition as the variable its work
    call returns, named in a comment (``when_true(item):  # ring.read.item``)."""
    if guard in _GUARD_BLOCKS:
        return _GUARD_BLOCKS[guard] + ":"
    when = _WHEN.fullmatch(guard)
    if when:
        return f"{when[1]}({_identifier(when[2].rsplit('.', 1)[-1])}):  # {when[2]}"
    return f"loop.{guard}:"


def _identifier(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"_{out}"


def schedule_code(task: str, steps: Sequence[Step], loop: tuple[Any, Any, Any] = (0, 1, 1),
                  work_kwargs: dict[int, dict[str, Any]] | None = None) -> str:
    """Source of a ``@schedule`` function running ``steps``; ``loop`` is (start, end, step) of its domain loop,
    ``work_kwargs`` the compile-time arguments of the work call at each step index (``stage_group(group=1)``).

    Data-flow arguments of work calls (``tma_load(row=row)``) are not part of a step list: add them back
    where a work method takes inputs, and bind the output a ``when_true``/``when_false`` block tests
    (``item = ring.read()``).
    """
    resources = list(dict.fromkeys(_identifier(s[0]) for s in steps))
    fn = _identifier(task[:-4] if task.endswith("Task") and len(task) > 4 else task).lower() + "_schedule"
    args = ", ".join(f"{r}: MemoryResource" for r in resources)
    lines = ["@schedule", f"def {fn}({args}) -> None:"]
    kwargs = work_kwargs or {}
    calls = [(s, _call(s, kwargs.get(i))) for i, s in enumerate(steps)]
    lines += [f"    {call}" for s, call in calls if s[2] == "Head"]
    body = [(s, call) for s, call in calls if s[2] == "Loop"]
    if body:
        start, end, step = loop
        uses_loop = any(len(s) > 4 and not _WHEN.fullmatch(s[4]) for s, _ in body)
        lines.append(f"    with domain_loop({start}, {end}, {step})" + (" as loop:" if uses_loop else ":"))
        for s, call in body:
            if len(s) > 4:
                lines.append(f"        with {_guard_block(s[4])}")
                lines.append(f"            {call}")
            else:
                lines.append(f"        {call}")
    lines += [f"    {call}" for s, call in calls if s[2] == "Tail"]
    if len(lines) == 2:
        lines.append("    pass")
    return "\n".join(lines) + "\n"
