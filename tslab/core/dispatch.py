"""``Dispatch``: several designs of one GEMM, and which one serves a problem, by its M.

An ordered list of rules ``(max_m, design)``: a problem whose M is at most ``max_m`` uses that rule's design (the
first rule that fits); the last rule's bound is None, "every larger M". The key the bounds compare is part of the
data (``key="M"``), so rules on N or K can come later. Like ``Design`` it is plain and serialisable
(``to_dict``/``from_dict``, shape in ``tslab/schemas/dispatch.v1.json``); ``tslab.gpu.export`` compiles each
design into one package that picks per launch.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import DesignError
from .design import Design
from .registry import kernel_module
from .schema import validate_dispatch_document

FORMAT_VERSION = 1
#: The extents a dispatch may be keyed on, each with its place in the problem shape (M, N, K).
KEYS: dict[str, int] = {"M": 0}
_SHOWN = 60


@dataclass(frozen=True, repr=False)
class Dispatch:
    """Rules ``(max_m, design)`` in ascending ``max_m``, the last ``(None, design)``: M <= max_m uses ``design``.

    Every design is of one catalog GEMM kernel and one ``dtype``; validated on construction (``DesignError``).
    """

    rules: tuple[tuple[int | None, Design], ...]
    key: str = "M"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", _validated(self.rules, self.key))

    @property
    def designs(self) -> tuple[Design, ...]:
        return tuple(design for _, design in self.rules)

    @property
    def kernel(self) -> str:
        """The one kernel every design is of."""
        return self.rules[0][1].kernel

    def pick(self, shape: Sequence[int]) -> tuple[int, Design]:
        """``(index, design)`` of the rule that serves problem ``shape`` (M, N, K): the first whose bound its M
        does not exceed."""
        place = KEYS[self.key]
        if len(shape) <= place:
            raise DesignError("input", f"dispatch '{self.kernel}'", f"shape={tuple(shape)!r} has no {self.key}",
                              "pass the problem's shape, e.g. (M, N, K) = (256, 8192, 8192)")
        extent = shape[place]
        return next((i, d) for i, (bound, d) in enumerate(self.rules) if bound is None or extent <= bound)

    def ranges(self) -> list[str]:
        """Each rule's range of the key in words: ``M <= 128``, ``129 <= M <= 384``, ``M >= 385`` (``every M``
        for a dispatch of one rule)."""
        out, low = [], 1
        for bound, _ in self.rules:
            if bound is None:
                out.append(f"{self.key} >= {low}" if low > 1 else f"every {self.key}")
            else:
                out.append(f"{self.key} <= {bound}" if low == 1 else f"{low} <= {self.key} <= {bound}")
                low = bound + 1
        return out

    def with_params(self, **params: Any) -> Dispatch:
        """The same rules with ``params`` set on every design (e.g. ``dtype='bf16'``)."""
        return Dispatch(tuple((bound, design.with_params(**params)) for bound, design in self.rules), self.key)

    # -- plain data -----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data :meth:`from_dict` reads back; each design as its own ``to_dict``."""
        return {"tslab_dispatch": FORMAT_VERSION, "key": self.key,
                "rules": [{"max_m": bound, "design": design.to_dict()} for bound, design in self.rules]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Dispatch:
        """Read a dispatch from plain data; its shape is checked against ``tslab/schemas/dispatch.v1.json``."""
        validate_dispatch_document(data)
        return cls(tuple((rule["max_m"], Design.from_dict(rule["design"])) for rule in data["rules"]), data["key"])

    @classmethod
    def from_json(cls, text: str) -> Dispatch:
        """Read a dispatch written by :meth:`to_json`."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise DesignError("input", "dispatch JSON", f"not valid JSON ({exc})",
                              "pass the text written by Dispatch.to_json()") from None
        return cls.from_dict(data)

    # -- views ----------------------------------------------------------------------------------------
    def table(self) -> list[tuple[str, str]]:
        """One row per rule: its range of the key and what its design changes from the kernel's defaults."""
        defaults = kernel_module(self.kernel).PARAMS
        return [(span, _describe(design, defaults)) for span, design in zip(self.ranges(), self.designs, strict=True)]

    def text(self) -> str:
        """The rule table as plain text."""
        dtype = self.rules[0][1].params.get("dtype")
        rows = self.table()
        width = max(len(span) for span, _ in rows)
        count = f"{len(rows)} design" + ("s" if len(rows) > 1 else "")
        head = f"{self.kernel} by {self.key}, {count}" + (f", dtype {dtype}" if dtype else "") + ":"
        return "\n".join([head, *(f"  {span:<{width}}  {what}" for span, what in rows)])

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        head = html.escape(self.text().splitlines()[0].rstrip(":"))
        rows = "".join(f"<tr><td>{html.escape(span)}</td><td>{html.escape(what)}</td></tr>"
                       for span, what in self.table())
        return (f"<table class='tslab-dispatch'><caption>{head}</caption>"
                f"<tr><th>{html.escape(self.key)}</th><th>design</th></tr>{rows}</table>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self._repr_html_()}


def _describe(design: Design, defaults: dict[str, Any]) -> str:
    """The design's params that differ from the kernel's defaults (dtype aside: one for all), and its edits."""
    params = ", ".join(f"{k}={v!r}" for k, v in design.params.items() if k != "dtype" and defaults.get(k) != v)
    over = design.overrides
    edits = [*over["pipelines"], *over["schedules"], *(["alias groups"] if over["alias_groups"] is not None else [])]
    return (params or "the kernel's defaults") + (f"; edited: {', '.join(edits)}" if edits else "")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _package(design: Design) -> str | None:
    """The exported package kind of the design's catalog kernel ('gemm', 'copy'), None if it has no GPU kernel."""
    if design.is_captured:
        return None
    try:
        rules = getattr(kernel_module(design.kernel), "RULES", None)
    except DesignError:  # a design built from the user's own tasks: not a catalog kernel
        return None
    return None if rules is None else rules.package


def _validated(rules: Any, key: str) -> tuple[tuple[int | None, Design], ...]:
    """``rules`` as a tuple of pairs, or the first DesignError naming the rule, the field and the fix."""
    if key not in KEYS:
        raise DesignError("input", "dispatch", f"key={key!r} is not supported",
                          f"use one of {', '.join(map(repr, KEYS))}")
    try:
        pairs = tuple((bound, design) for bound, design in rules)
    except (TypeError, ValueError):
        raise DesignError("input", "dispatch", f"rules={_short(rules)} is not a list of (max_m, design) pairs",
                          "pass e.g. [(128, a_design), (None, another_design)]") from None
    if not pairs:
        raise DesignError("input", "dispatch", f"rules={_short(rules)} is empty",
                          "give at least one rule; the last one, (None, design), serves every M")
    first = pairs[0][1]
    previous = 0
    for number, (bound, design) in enumerate(pairs, 1):
        name = first.kernel if isinstance(first, Design) else None
        where = f"dispatch '{name}' rule {number}" if name else f"dispatch rule {number}"
        if not isinstance(design, Design):
            raise DesignError("input", where, f"design={_short(design)} is not a Design",
                              "build one with tslab.kernels.gemm_sm90.design(...)")
        package = _package(design)
        if package != "gemm":
            what = f"its package is {package!r}" if package else "it has no GPU kernel in the catalog"
            raise DesignError("input", where, f"kernel={design.kernel!r} is not a GEMM ({what})",
                              "a dispatch by M picks among designs of a catalog GEMM, e.g. tslab.kernels.gemm_sm90")
        if design.kernel != first.kernel:
            raise DesignError("input", where, f"kernel={design.kernel!r} differs from rule 1's {first.kernel!r}",
                              "every design of a dispatch is of one kernel; export the others separately")
        dtype, want = design.params.get("dtype"), first.params.get("dtype")
        if dtype != want:
            raise DesignError("input", where, f"dtype={dtype!r} differs from rule 1's {want!r}",
                              f"one package takes one dtype: give every design dtype={want!r}")
        last = number == len(pairs)
        if bound is None:
            if not last:
                raise DesignError("input", where, "max_m=None is not the last rule's bound",
                                  "only the last rule serves every larger M: give this one the largest M it serves")
            continue
        if last:
            raise DesignError("input", where, f"max_m={bound!r} is the last rule's bound",
                              "make it None, so every larger M has a design: (None, design)")
        if not isinstance(bound, int) or isinstance(bound, bool) or bound < 1:
            raise DesignError("input", where, f"max_m={_short(bound)} is not a positive int",
                              "give the largest M this rule's design serves, e.g. 128")
        if bound <= previous:
            raise DesignError("input", where, f"max_m={bound} is not above rule {number - 1}'s {previous}",
                              "list the rules by ascending max_m")
        previous = bound
    return pairs

