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
#: The space name whose values are problems, not edits: ``{"shape": [(M, N, K), ...]}`` compiles and times each
#: point's design on each problem (a GEMM over M, say); the design itself, and so its check, is the same.
SHAPE = "shape"


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
        if name == SHAPE:
            _validate_shapes(design, values)
            continue
        if name not in direct and name not in fields:
            what = "knob" if design.is_captured else "parameter"
            hint = did_you_mean(name, direct + fields)
            raise SweepError(f"sweep space '{name}': not a {what} or 'resource.field' of design "
                             f"'{design.kernel}'; {hint}")


def _validate_shapes(design: Design, values: Sequence[Any]) -> None:
    if design.is_captured:
        raise SweepError("sweep space 'shape': a captured kernel runs on the inputs you give it; sweep its knobs "
                         "instead (or capture it once per problem)")
    for value in values:
        if (not isinstance(value, (list, tuple)) or not value
                or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
            raise SweepError(f"sweep space 'shape': {value!r} is not a problem shape; give tuples of positive ints, "
                             "e.g. 'shape': [(128, 8192, 8192), (256, 8192, 8192)]")


def point_shape(point: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The problem a point is timed on, or None for the kernel's default problem."""
    shape = point.get(SHAPE)
    return None if shape is None else tuple(shape)


def points(space: Mapping[str, Sequence[Any]], where: Callable[[Point], bool] | None = None) -> list[Point]:
    """The cartesian product of ``space`` in its order, keeping the points ``where`` accepts."""
    names = list(space)
    out = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(space[n] for n in names))]
    return [p for p in out if where is None or where(dict(p))]


def apply(design: Design, point: Mapping[str, Any]) -> Design:
    """``design`` with the point's params (or knobs) and pipeline fields set; TS validates every edit."""
    direct = {k: v for k, v in point.items() if "." not in k and k != SHAPE}
    fields: dict[str, dict[str, Any]] = {}
    for name, value in point.items():
        if "." in name and name != SHAPE:
            resource, field = name.split(".", 1)
            fields.setdefault(resource, {})[field] = value
    if direct:
        design = design.with_knobs(**direct) if design.is_captured else design.with_params(**direct)
    for resource, values in fields.items():
        design = design.with_pipeline(resource, **values)
    return design
