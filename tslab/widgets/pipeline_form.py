"""Which PipelineConfig fields an editor shows and which it lets the user change, per pipeline type.

Applicability is read from TS itself: a field is editable for a pipeline type when that type's
``PipelineConfig.create_<type>_pipeline_cfg`` factory takes it as a parameter. Nothing here validates a
value; TS does that when the edited design is lowered.
"""

from __future__ import annotations

import inspect
import re
from functools import cache
from typing import Any

from cutlass.experimental.task_scheduling.enums import PipelineType, SignalingThreads
from cutlass.experimental.task_scheduling.resources import PipelineConfig

from ..errors import DesignError

#: The fields a PipelineEditor panel shows, in display order (all are PipelineConfig fields).
SHOWN_FIELDS: tuple[str, ...] = (
    "num_stages", "num_bytes", "producer_group", "consumer_group", "interleave_stride",
    "advance_on_wait", "advance_on_acquire", "producer_signaling_threads", "consumer_signaling_threads",
    "consumer_wait_signaling_threads",
)
SIGNALING_CHOICES: tuple[str, ...] = tuple(m.name for m in SignalingThreads)
ROLES: tuple[str, ...] = ("producer_acquire", "producer_commit", "consumer_wait", "consumer_release")


def _type_of_factory(name: str) -> str | None:
    """``create_tma_async_pipeline_cfg`` -> ``TmaAsync`` (None if no PipelineType has that name)."""
    match = re.fullmatch(r"create_(\w+)_pipeline_cfg", name)
    if not match:
        return None
    camel = "".join(part.capitalize() for part in match[1].split("_"))
    return camel if camel in PipelineType.__members__ else None


@cache
def factories() -> dict[str, frozenset[str]]:
    """``{pipeline type name: parameter names of its TS factory}``."""
    out = {}
    for name, fn in inspect.getmembers(PipelineConfig, callable):
        kind = _type_of_factory(name)
        if kind is not None:
            out[kind] = frozenset(inspect.signature(fn).parameters)
    return out


def editable_fields(pipeline_type: str) -> tuple[str, ...]:
    """The shown fields the TS factory of ``pipeline_type`` accepts, in display order."""
    accepted = factories().get(pipeline_type)
    if accepted is None:
        raise DesignError("input", f"pipeline type '{pipeline_type}'", "has no create_*_pipeline_cfg factory in TS",
                          "use one of: " + ", ".join(sorted(factories())))
    return tuple(f for f in SHOWN_FIELDS if f in accepted)


def parse_interleave(text: str, *, where: str) -> int | list[int]:
    """``"2"`` -> 2, ``"1, 1, 2, 2"`` -> [1, 1, 2, 2] (acquire, commit, wait, release)."""
    parts = [p for p in re.split(r"[,\s]+", str(text).strip().strip("()[]")) if p]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    if len(values) not in (1, 4):
        raise DesignError("invalid-config", where, f"interleave_stride={text!r} is neither a number nor 4 numbers",
                          "write one stride, e.g. 2, or four role strides: acquire, commit, wait, release")
    return values[0] if len(values) == 1 else values


def parse_whole(value: Any, *, field: str, where: str) -> Any:
    """Typed text (or a float) -> an int; anything that is not a whole number is refused, never rounded.

    Ints (negative ones, 0) pass through unchanged for TS to judge.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    if not isinstance(value, int):  # text, a fraction, a list, None: TS's field is an int
        raise DesignError("input", where, f"{field}={value!r} is not a whole number; nothing was applied",
                          f"type an integer, e.g. {field}=2 or 3")
    return value


def format_interleave(value: Any) -> str:
    """The editor's text for an interleave_stride value."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


INT_FIELDS = frozenset({"num_stages", "num_bytes"})
GROUP_FIELDS = frozenset({"producer_group", "consumer_group"})
SIGNALING_FIELDS = frozenset({"producer_signaling_threads", "consumer_signaling_threads",
                              "consumer_wait_signaling_threads"})
