"""PipelineConfig fields as plain JSON values, and back to the TS types ``dataclasses.replace`` expects.

TS validates every value (``PipelineConfig.__post_init__``); this module only translates names.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import cutlass.pipeline as pl
from cutlass.experimental.task_scheduling.enums import PipelineType, SignalingThreads
from cutlass.experimental.task_scheduling.resources import PipelineConfig

from ..errors import DesignError, did_you_mean

#: Fields that hold runtime objects (pointers, layouts), never edited from a design.
RUNTIME_FIELDS = frozenset({"barrier_ptr"})
FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(PipelineConfig) if f.name not in RUNTIME_FIELDS)
#: Fields whose TS default is None, so None is a meaningful value.
OPTIONAL_FIELDS = frozenset(f.name for f in dataclasses.fields(PipelineConfig)
                            if f.default is None and f.name not in RUNTIME_FIELDS)
GROUP_FIELDS = frozenset({"producer_group", "consumer_group"})
#: Fields TS declares ``bool``: TS stores any value given, so a non-boolean is refused here.
BOOL_FIELDS = frozenset(f.name for f in dataclasses.fields(PipelineConfig) if f.type in (bool, "bool"))
_ENUMS: dict[str, type[enum.Enum]] = {
    "pipeline_type": PipelineType,
    "producer_signaling_threads": SignalingThreads,
    "consumer_signaling_threads": SignalingThreads,
    "consumer_wait_signaling_threads": SignalingThreads,
    "umma_consumer_producer_op": pl.PipelineOp,
    "async_producer_op": pl.PipelineOp,
}


def to_plain(field: str, value: Any) -> Any:
    """A TS PipelineConfig value as a JSON-friendly value."""
    if value is None:
        return None
    if field in GROUP_FIELDS:
        return {"agent": value.agent.name, "size": int(value.size)}
    if isinstance(value, enum.Flag) and field in _ENUMS:
        return "|".join(m.name for m in type(value) if m in value and m.value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, tuple):
        return list(value)
    return value


def describe(cfg: PipelineConfig) -> dict[str, Any]:
    """All editable fields of a PipelineConfig as plain values."""
    return {name: to_plain(name, getattr(cfg, name)) for name in FIELDS}


def _enum_value(field: str, value: Any, where: str) -> Any:
    cls = _ENUMS[field]
    if isinstance(value, cls):
        return value
    names = [m.name for m in cls]
    parts = str(value).split("|")
    for part in parts:
        if part not in names:
            raise DesignError("invalid-config", where, f"{field}={value!r} is not a {cls.__name__}",
                              did_you_mean(part, names))
    result = cls[parts[0]]
    for part in parts[1:]:
        result = result | cls[part]
    return result


def from_plain(field: str, value: Any, *, where: str) -> Any:
    """A plain value for ``field`` as the TS type; raises ``DesignError`` naming the field."""
    if field not in FIELDS:
        raise DesignError("input", where, f"field={field!r} is not a PipelineConfig field", did_you_mean(field, FIELDS))
    if value is None:
        if field not in OPTIONAL_FIELDS:
            raise DesignError("invalid-config", where, f"{field}=None is not allowed",
                              f"give {field} a value; only {', '.join(sorted(OPTIONAL_FIELDS))} may be None")
        return None
    if field in GROUP_FIELDS:
        if isinstance(value, pl.CooperativeGroup):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            value = {"agent": "Thread", "size": value}
        if not isinstance(value, dict) or set(value) != {"agent", "size"}:
            raise DesignError("invalid-config", where, f"{field}={value!r} is not a cooperative group",
                              "write it as {'agent': 'Thread', 'size': 128} or as a thread count")
        agents = [a.name for a in pl.Agent]
        if value["agent"] not in agents:
            raise DesignError("invalid-config", where, f"{field} agent={value['agent']!r} is not a pipeline Agent",
                              did_you_mean(str(value["agent"]), agents))
        size = value["size"]
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise DesignError("invalid-config", where, f"{field} size={size!r} is not a positive int",
                              "give the number of threads (or warps) in the group")
        return pl.CooperativeGroup(pl.Agent[value["agent"]], size)
    if field in _ENUMS:
        return _enum_value(field, value, where)
    if field in BOOL_FIELDS and not isinstance(value, bool):
        raise DesignError("input", where, f"{field}={value!r} is not a boolean; nothing was applied",
                          f"give True or False, e.g. {field}=True")
    if isinstance(value, list):
        return tuple(value)
    return value
