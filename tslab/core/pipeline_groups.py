"""Editing PipelineConfigs through TS's constructors: one resource's, or a PipelineGroup's and its members'.

TS requires a ``PipelineGroup`` and its members to agree (``num_stages``, pipeline type, and for a Merge
group the sum of the members' ``num_bytes``), so a group is edited as one: the same fields go to every
member's config and to the group's own, each replaced with ``dataclasses.replace`` (which re-validates).
The fields a group merges from its members (:data:`MERGED_FIELDS`) are taken, once the members are edited,
from the config TS derives for the group (``PipelineGroup._derive_merged_config``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import DesignError, one_line
from . import pipeline_fields

#: Fields whose group value TS derives from the members' (a sum or a shared value), not copies.
MERGED_FIELDS = frozenset({"num_bytes", "producer_group", "consumer_group"})


def replaced(cfg: Any, fields: dict[str, Any], *, where: str) -> Any:
    """``cfg`` with plain ``fields`` replaced (TS types, TS validation); errors name ``where``."""
    values = {name: pipeline_fields.from_plain(name, value, where=f"{where} field '{name}'")
              for name, value in fields.items()}
    stages = values.get("num_stages", cfg.num_stages)
    if not isinstance(stages, int) or isinstance(stages, bool) or stages <= 0:
        raise DesignError("invalid-config", f"{where} field 'num_stages'",
                          f"num_stages={stages!r} must be a positive int",
                          "use at least 1 stage (2 or more to overlap producer and consumer)")
    try:
        return dataclasses.replace(cfg, **values)
    except (ValueError, TypeError, AssertionError) as exc:
        first = next(iter(values)) if len(values) == 1 else ", ".join(values)
        raise DesignError("invalid-config", f"{where} field '{first}'", one_line(exc),
                          _hint(values, cfg)) from None


def _hint(values: dict[str, Any], cfg: Any) -> str:
    if "interleave_stride" in values:
        return f"pick an interleave_stride that divides num_stages={values.get('num_stages', cfg.num_stages)}"
    return "use a value TS accepts for this pipeline type (see the message)"


def apply_group(group: Any, fields: dict[str, Any]) -> None:
    """Replace ``fields`` in every member's PipelineConfig and in the group's own, consistently."""
    where = f"PipelineGroup '{group.name}'"
    cfg = replaced(group.pipeline_config, {k: v for k, v in fields.items() if k not in MERGED_FIELDS}, where=where)
    edited = [replaced(m.pipeline_config, fields, where=f"{where} member '{m.name}'") for m in group.members]
    for member, member_cfg in zip(group.members, edited, strict=True):
        member.pipeline_config = member_cfg
    merged = sorted(MERGED_FIELDS & set(fields))
    if merged:
        try:
            derived = group._derive_merged_config()
        except (ValueError, TypeError, AssertionError) as exc:
            raise DesignError("invalid-config", f"{where} field '{merged[0]}'", one_line(exc),
                              "give every member a value TS can merge (see the message)") from None
        cfg = dataclasses.replace(cfg, **{k: getattr(derived, k) for k in merged})
    group.pipeline_config = cfg


def member_error(name: str, group: Any, fields: dict[str, Any]) -> DesignError:
    """The error for editing one member of a group alone: it names the group and the edit to make instead."""
    edit = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    first = next(iter(fields.items()), None)
    what = f"{first[0]}={first[1]!r} cannot be set on one member: " if first else ""
    return DesignError("input", f"resource '{name}'",
                       f"{what}{name} belongs to PipelineGroup '{group.name}', whose members share its barriers",
                       f"edit the group: with_pipeline({group.name!r}, {edit})")


def describe_group(group: Any) -> dict[str, Any]:
    """A group's PipelineConfig as plain values, with its mode and member names."""
    cfg = group.pipeline_config
    return {"pipeline_type": cfg.pipeline_type.name, **pipeline_fields.describe(cfg),
            "mode": group.mode.name, "members": [m.name for m in group.members]}
