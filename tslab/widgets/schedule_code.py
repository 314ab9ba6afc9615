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


#: The longest ``def`` line the code view writes on one line; past it, one parameter a line (a 1000 px lab shows about
#: 80 characters of the code pane without scrolling).
SIGNATURE_WIDTH = 80


def _identifier(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"_{out}"


def schedule_code(task: str, steps: Sequence[Step], loop: tuple[Any, Any, Any] = (0, 1, 1),
                  work_kwargs: dict[int, dict[str, Any]] | None = None,
                  tile_loop: dict[str, Any] | None = None) -> str:
    """Source of a ``@schedule`` function running ``steps``; ``loop`` is (start, end, step) of its domain loop,
    ``work_kwargs`` the compile-time arguments of the work call at each step index (``stage_group(group=1)``),
    ``tile_loop`` where a persistent task's steps sit around its work-tile loop (:meth:`tslab.Design.tile_loop`):
    the body then runs in ``with work_tile_loop(...)``, the steps that run once before or after it outside, and the
    steps a skipped tile skips in ``tile.skippable()`` blocks.

    Data-flow arguments of work calls (``tma_load(row=row)``) are not part of a step list: add them back
    where a work method takes inputs, and bind the output a ``when_true``/``when_false`` block tests
    (``item = ring.read()``). A ``skip_if`` predicate is named in a comment: pass the function itself.
    """
    resources = list(dict.fromkeys(_identifier(s[0]) for s in steps))
    fn = _identifier(task[:-4] if task.endswith("Task") and len(task) > 4 else task).lower() + "_schedule"
    args = [f"{r}: MemoryResource" for r in resources]
    signature = f"def {fn}({', '.join(args)}) -> None:"
    if len(signature) > SIGNATURE_WIDTH:  # one parameter a line, as a formatter writes it: the pane stays narrow
        signature = "\n".join([f"def {fn}(", *(f"    {arg}," for arg in args), ") -> None:"])
    lines = ["@schedule", signature]
    kwargs = work_kwargs or {}
    calls = [_call(s, kwargs.get(i)) for i, s in enumerate(steps)]
    placed = tile_loop or {}
    before, after = set(placed.get("before", ())), set(placed.get("after", ()))
    skippable, skip_if = set(placed.get("skippable", ())), placed.get("skip_if")
    lines += [f"    {calls[i]}" for i in sorted(before)]
    pad = "    "
    if tile_loop is not None:
        skips = f", skip_if={_identifier(skip_if.rsplit('.', 1)[-1])}" if skip_if else ""
        named = " as tile" if skip_if or skippable else ""
        comment = f"  # skip_if: {skip_if}" if skip_if else ""
        lines.append(f"    with work_tile_loop({_identifier(tile_loop['work_queue'] or 'work_queue')}{skips}){named}:"
                     f"{comment}")
        pad = "        "
    # the body in order: head steps, the domain loop as one element, tail steps; a run of skippable ones in a block
    body = [i for i, s in enumerate(steps) if s[2] == "Head" and i not in before]
    loop_steps = [i for i, s in enumerate(steps) if s[2] == "Loop"]
    elements: list[tuple[str, Any]] = [("step", i) for i in body]
    if loop_steps:
        elements.append(("loop", loop_steps))
    elements += [("step", i) for i, s in enumerate(steps) if s[2] == "Tail" and i not in after]
    in_block = False
    for kind, what in elements:
        skipped = (what in skippable) if kind == "step" else bool(skip_if)
        if skipped and not in_block:
            lines.append(f"{pad}with tile.skippable():")
            in_block = True
        elif not skipped and in_block:
            in_block = False
        indent = pad + ("    " if in_block else "")
        if kind == "step":
            lines.append(f"{indent}{calls[what]}")
            continue
        start, end, step = loop
        uses_loop = any(len(steps[i]) > 4 and not _WHEN.fullmatch(steps[i][4]) for i in what)
        lines.append(f"{indent}with domain_loop({start}, {end}, {step})" + (" as loop:" if uses_loop else ":"))
        for i in what:
            if len(steps[i]) > 4:
                lines.append(f"{indent}    with {_guard_block(steps[i][4])}")
                lines.append(f"{indent}        {calls[i]}")
            else:
                lines.append(f"{indent}    {calls[i]}")
    lines += [f"    {calls[i]}" for i in sorted(after)]
    if len(lines) == 2:
        lines.append("    pass")
    return "\n".join(lines) + "\n"
