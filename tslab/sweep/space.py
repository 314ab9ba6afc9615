"""The space of a sweep: ``{name: [values]}`` over kernel params, ``"resource.field"`` pipeline fields and the
knobs of captured kernels; its cartesian product, filtered by ``where``; and how one point edits a design."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.design import Design
from ..errors import did_you_mean
from ..kernels import NAMES, kernel_module
from .errors import SweepError

Point = dict[str, Any]


def point_key(point: Mapping[str, Any]) -> str:
    """The canonical JSON of a point: what the store and a resume match points by."""
    return json.dumps(dict(point), sort_keys=True, separators=(",", ":"))


def _names(design: Design) -> tuple[list[str], list[str]]:
    """(params or knobs, "resource.field" names) a space over ``design`` may use."""
    if design.is_captured:
        direct = list(design.knobs())
    elif design.kernel in NAMES:
        direct = list(kernel_module(design.kernel).PARAMS)
    else:
        direct = []
    fields = [f"{r}.{f}" for r, fs in design.pipelines().items() for f in fs]
    return direct, fields


def validate(design: Design, space: Mapping[str, Sequence[Any]]) -> None:
    """Refuse a space naming something the design does not have, or a dimension with no values."""
    if not isinstance(space, Mapping) or not space:
        raise SweepError("sweep: space is empty; give {name: [values]}, e.g. {'stages': [2, 3, 4]}")
    direct, fields = _names(design)
    for name, values in space.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
            raise SweepError(f"sweep space '{name}': {values!r} is not a non-empty list of values; "
                             f"give a list, e.g. '{name}': [2, 3]")
        if name not in direct and name not in fields:
            what = "knob" if design.is_captured else "parameter"
            hint = did_you_mean(name, direct + fields)
            raise SweepError(f"sweep space '{name}': not a {what} or 'resource.field' of design "
                             f"'{design.kernel}'; {hint}")


def points(space: Mapping[str, Sequence[Any]], where: Callable[[Point], bool] | None = None) -> list[Point]:
    """The cartesian product of ``space`` in its order, keeping the points ``where`` accepts."""
    names = list(space)
    out = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(space[n] for n in names))]
    return [p for p in out if where is None or where(dict(p))]


def apply(design: Design, point: Mapping[str, Any]) -> Design:
    """``design`` with the point's params (or knobs) and pipeline fields set; TS validates every edit."""
    direct = {k: v for k, v in point.items() if "." not in k}
    fields: dict[str, dict[str, Any]] = {}
    for name, value in point.items():
        if "." in name:
            resource, field = name.split(".", 1)
            fields.setdefault(resource, {})[field] = value
    if direct:
        design = design.with_knobs(**direct) if design.is_captured else design.with_params(**direct)
    for resource, values in fields.items():
        design = design.with_pipeline(resource, **values)
    return design
