"""``Dispatch``: several designs of one kernel, and which one serves a problem, by one of its extents.

An ordered list of rules ``(bound, design)``: a problem whose key extent is at most ``bound`` uses that rule's
design (the first rule that fits); the last rule's bound is None, "every larger". The key is part of the data: a
GEMM's ``M`` (its problem (M, N, K)) or an attention's ``seqlen_k`` (its problem (batch, seqlen_q, seqlen_k, heads,
heads_kv)). A kernel whose package picks a design param per call (``RULES.variants``: attention's ``causal``) lists
its rules per value of that param, each group in ascending bounds ending in None; a call with ``causal=False`` is
served by the rules whose designs were built with ``causal=False``. Like ``Design`` it is plain and serialisable
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
#: The extents a dispatch may be keyed on: the package kind whose problems have it, and its place in the problem.
KEYS: dict[str, tuple[str, int]] = {"M": ("gemm", 0), "seqlen_k": ("attention", 2)}
#: Each package kind in words, its catalog kernel and an example problem, for the messages.
_KINDS = {"gemm": ("a GEMM", "gemm_sm90", "(M, N, K) = (256, 8192, 8192)"),
          "attention": ("an attention", "attention_sm90",
                        "(batch, seqlen_q, seqlen_k, heads, heads_kv) = (4, 2048, 2048, 32, 32)")}
#: The params every design of one package shares: its tensors are of one dtype (and an attention's of one head_dim).
_SHARED = {"gemm": ("dtype",), "attention": ("dtype", "head_dim")}
_SHOWN = 60


def bound_field(key: str) -> str:
    """The name a rule's bound has in plain data: ``max_m`` for key M, ``max_seqlen_k`` for seqlen_k."""
    return f"max_{key.lower()}"


def ranges_in_words(key: str, variant: str | None, rules: Sequence[tuple[int | None, Any]]) -> list[str]:
    """Each rule's range of ``key`` in words, from its ``(bound, variant value)``: ``129 <= M <= 384``, ``every M``;
    prefixed with the variant's value where there is one (``causal=False: seqlen_k <= 2048``), whose rules each
    start again from 1. :meth:`Dispatch.ranges` and an exported package's design.json say them alike."""
    out, low, group = [], 1, object()
    for bound, value in rules:
        if value != group:
            low, group = 1, value
        prefix = f"{variant}={value!r}: " if variant else ""
        if bound is None:
            out.append(prefix + (f"{key} >= {low}" if low > 1 else f"every {key}"))
        else:
            out.append(prefix + (f"{key} <= {bound}" if low == 1 else f"{low} <= {key} <= {bound}"))
            low = bound + 1
    return out


@dataclass(frozen=True, repr=False)
class Dispatch:
    """Rules ``(bound, design)`` in ascending bounds, the last ``(None, design)``: a problem whose ``key`` extent
    is at most ``bound`` uses ``design`` (``key`` "M" for a GEMM, "seqlen_k" for an attention).

    Every design is of one catalog kernel and one ``dtype``; a kernel with a per-call variant (attention's
    ``causal``) has one such list per value, in its designs' params. Validated on construction (``DesignError``).
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

    @property
    def variant(self) -> str | None:
        """The design param a call picks by before the key (attention's ``causal``), or None."""
        return _variant_param(self.rules[0][1])

    def pick(self, shape: Sequence[int], **variant: Any) -> tuple[int, Design]:
        """``(index, design)`` of the rule that serves problem ``shape``: the first whose bound its key extent does
        not exceed, among the rules of the call's variant value where the kernel has one (``causal=False``)."""
        place = KEYS[self.key][1]
        name = self.variant
        where = f"dispatch '{self.kernel}'"
        if len(shape) <= place:
            raise DesignError("input", where, f"shape={tuple(shape)!r} has no {self.key}",
                              f"pass the problem's shape, e.g. {_KINDS[KEYS[self.key][0]][2]}")
        if name is None and variant:
            raise DesignError("input", where, f"pick(shape, {', '.join(f'{k}=...' for k in variant)}) names a "
                              f"variant, but a dispatch of '{self.kernel}' picks by {self.key} alone",
                              "pass the shape alone, e.g. pick((256, 8192, 8192))")
        if name is not None and set(variant) != {name}:
            given = ", ".join(f"{k}=..." for k in variant) or "no keyword"
            raise DesignError("input", where, f"pick(shape, {given}) does not say the call's {name}",
                              f"a dispatch of '{self.kernel}' picks by {name} first: pick(shape, {name}=False)")
        extent = shape[place]
        for i, (bound, design) in enumerate(self.rules):
            if name and design.params.get(name) != variant[name]:
                continue
            if bound is None or extent <= bound:
                return i, design
        values = sorted({repr(d.params.get(name)) for d in self.designs})
        raise DesignError("input", where, f"{name}={variant[name]!r} has no rules",
                          f"pass one of {', '.join(values)}")

    def ranges(self) -> list[str]:
        """Each rule's range of the key in words: ``M <= 128``, ``129 <= M <= 384``, ``M >= 385`` (``every M``
        for a dispatch of one rule); prefixed with the variant (``causal=False: seqlen_k <= 2048``) where the kernel
        has one."""
        name = self.variant
        return ranges_in_words(self.key, name, [(bound, design.params.get(name) if name else None)
                                                for bound, design in self.rules])

    def with_params(self, **params: Any) -> Dispatch:
        """The same rules with ``params`` set on every design (e.g. ``dtype='bf16'``)."""
        return Dispatch(tuple((bound, design.with_params(**params)) for bound, design in self.rules), self.key)

    # -- plain data -----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data :meth:`from_dict` reads back; each design as its own ``to_dict``."""
        return {"tslab_dispatch": FORMAT_VERSION, "key": self.key,
                "rules": [{bound_field(self.key): bound, "design": design.to_dict()} for bound, design in self.rules]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Dispatch:
        """Read a dispatch from plain data; its shape is checked against ``tslab/schemas/dispatch.v1.json``."""
        validate_dispatch_document(data)
        field = bound_field(data["key"])
        for number, rule in enumerate(data["rules"]):
            others = sorted(set(rule) - {field, "design"})
            if others or field not in rule:
                what = (f"rules[{number}].{others[0]} is not the bound of a dispatch by {data['key']}" if others
                        else f"rules[{number}] has no {field}")
                raise DesignError("input", "dispatch JSON", what,
                                  f"give each rule {field} (the largest {data['key']} it serves, null on the last)")
        return cls(tuple((rule[field], Design.from_dict(rule["design"])) for rule in data["rules"]), data["key"])

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
        shown_elsewhere = {"dtype", self.variant}
        return [(span, _describe(design, defaults, shown_elsewhere))
                for span, design in zip(self.ranges(), self.designs, strict=True)]

    def text(self) -> str:
        """The rule table as plain text."""
        dtype = self.rules[0][1].params.get("dtype")
        rows = self.table()
        width = max(len(span) for span, _ in rows)
        count = f"{len(rows)} design" + ("s" if len(rows) > 1 else "")
        by = f"{self.variant} and {self.key}" if self.variant else self.key
        head = f"{self.kernel} by {by}, {count}" + (f", dtype {dtype}" if dtype else "") + ":"
        return "\n".join([head, *(f"  {span:<{width}}  {what}" for span, what in rows)])

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        head = html.escape(self.text().splitlines()[0].rstrip(":"))
        # a range stays on one line; the designs, the long column, wrap left-aligned under their own start
        span_style, what_style = "white-space:nowrap;text-align:left", "text-align:left"
        rows = "".join(f"<tr><td style='{span_style}'>{html.escape(span)}</td>"
                       f"<td style='{what_style}'>{html.escape(what)}</td></tr>" for span, what in self.table())
        return (f"<table class='tslab-dispatch'><caption>{head}</caption><tr><th style='{span_style}'>"
                f"{html.escape(self.key)}</th><th style='{what_style}'>design</th></tr>{rows}</table>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self._repr_html_()}


def _describe(design: Design, defaults: dict[str, Any], skip: set[str | None]) -> str:
    """The design's params that differ from the kernel's defaults (those in ``skip`` aside: dtype is one for all,
    the variant shown in the range), and its edits."""
    params = ", ".join(f"{k}={v!r}" for k, v in design.params.items() if k not in skip and defaults.get(k) != v)
    over = design.overrides
    edits = [*over["pipelines"], *over["schedules"], *(["alias groups"] if over["alias_groups"] is not None else [])]
    return (params or "the kernel's defaults") + (f"; edited: {', '.join(edits)}" if edits else "")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _rules_of(design: Design) -> Any:
    """The catalog kernel's ``RULES`` (None for a design without a GPU kernel in the catalog)."""
    if design.is_captured:
        return None
    try:
        return getattr(kernel_module(design.kernel), "RULES", None)
    except DesignError:  # a design built from the user's own tasks: not a catalog kernel
        return None


def _package(design: Design) -> str | None:
    """The exported package kind of the design's catalog kernel ('gemm', 'copy'), None if it has no GPU kernel."""
    rules = _rules_of(design)
    return None if rules is None else rules.package


def _variant_param(design: Design) -> str | None:
    """The design param the kernel's package picks by per call (``RULES.variants``), or None."""
    rules = _rules_of(design)
    return None if rules is None or rules.variants is None else rules.variants[0]


def _validated(rules: Any, key: str) -> tuple[tuple[int | None, Design], ...]:
    """``rules`` as a tuple of pairs, or the first DesignError naming the rule, the field and the fix."""
    if key not in KEYS:
        raise DesignError("input", "dispatch", f"key={key!r} is not supported",
                          f"use one of {', '.join(map(repr, KEYS))}")
    try:
        pairs = tuple((bound, design) for bound, design in rules)
    except (TypeError, ValueError):
        raise DesignError("input", "dispatch",
                          f"rules={_short(rules)} is not a list of ({bound_field(key)}, design) pairs",
                          "pass e.g. [(128, a_design), (None, another_design)]") from None
    if not pairs:
        raise DesignError("input", "dispatch", f"rules={_short(rules)} is empty",
                          f"give at least one rule; the last one, (None, design), serves every {key}")
    _check_designs([design for _, design in pairs], key)
    for value, numbers in _variant_groups(pairs, key).items():
        _check_bounds(pairs, numbers, key, value)
    return pairs


def _check_designs(designs: list[Any], key: str) -> None:
    """Every design a Design of one catalog kernel of the key's package kind, and of one dtype."""
    kind = KEYS[key][0]
    noun, catalog, _ = _KINDS[kind]
    first = designs[0]
    for number, design in enumerate(designs, 1):
        where = f"dispatch '{first.kernel}' rule {number}" if isinstance(first, Design) else f"dispatch rule {number}"
        if not isinstance(design, Design):
            raise DesignError("input", where, f"design={_short(design)} is not a Design",
                              f"build one with tslab.kernels.{catalog}.design(...)")
        package = _package(design)
        if package != kind:
            what = f"its package is {package!r}" if package else "it has no GPU kernel in the catalog"
            fix = (f"a dispatch by {key} picks among designs of a catalog {noun.split()[1]}, e.g. "
                   f"tslab.kernels.{catalog}")
            other = next((k for k, (p, _) in KEYS.items() if p == package), None)
            if other is not None:
                fix += f"; a dispatch of '{design.kernel}' designs is keyed by {other} (key={other!r})"
            raise DesignError("input", where, f"kernel={design.kernel!r} is not {noun} ({what})", fix)
        if design.kernel != first.kernel:
            raise DesignError("input", where, f"kernel={design.kernel!r} differs from rule 1's {first.kernel!r}",
                              "every design of a dispatch is of one kernel; export the others separately")
        for param in _SHARED[kind]:
            got, want = design.params.get(param), first.params.get(param)
            if got != want:
                raise DesignError("input", where, f"{param}={got!r} differs from rule 1's {want!r}",
                                  f"one package takes one {param}: give every design {param}={want!r}")


def _variant_groups(pairs: tuple[tuple[Any, Design], ...], key: str) -> dict[Any, list[int]]:
    """The rule numbers (from 1) of each value of the kernel's variant param, listed together and covering every
    value a call may pass; ``{None: every rule}`` for a kernel without one."""
    first = pairs[0][1]
    variant = _variant_param(first)
    groups: dict[Any, list[int]] = {}
    for number, (_, design) in enumerate(pairs, 1):
        value = design.params.get(variant) if variant else None
        current = list(groups)[-1] if groups else value
        if value != current and value in groups:
            raise DesignError("input", f"dispatch '{first.kernel}' rule {number}",
                              f"{variant}={value!r} comes after the rules of {variant}={current!r}",
                              f"list the rules of each value of {variant} together, each group by ascending "
                              f"{bound_field(key)}")
        groups.setdefault(value, []).append(number)
    if variant:
        missing = [v for v in _rules_of(first).variants[1] if v not in groups]
        if missing:
            raise DesignError("input", f"dispatch '{first.kernel}'", f"no rule serves {variant}={missing[0]!r}",
                              f"a call may pass {variant}={missing[0]!r}: add a rule (None, a design with "
                              f"{variant}={missing[0]!r})")
    return groups


def _check_bounds(pairs: tuple[tuple[Any, Design], ...], numbers: list[int], key: str, value: Any) -> None:
    """The bounds of rules ``numbers`` (one variant value's) ascending positive ints, the last None."""
    field = bound_field(key)
    variant = _variant_param(pairs[0][1])
    scope = f" among the rules of {variant}={value!r}" if variant else ""
    previous = 0
    for number in numbers:
        bound = pairs[number - 1][0]
        where = f"dispatch '{pairs[0][1].kernel}' rule {number}"
        last = number == numbers[-1]
        if bound is None:
            if not last:
                raise DesignError("input", where, f"{field}=None is not the last rule's bound{scope}",
                                  f"only the last rule serves every larger {key}: give this one the largest {key} "
                                  "it serves")
            continue
        if last:
            raise DesignError("input", where, f"{field}={bound!r} is the last rule's bound{scope}",
                              f"make it None, so every larger {key} has a design: (None, design)")
        if not isinstance(bound, int) or isinstance(bound, bool) or bound < 1:
            raise DesignError("input", where, f"{field}={_short(bound)} is not a positive int",
                              f"give the largest {key} this rule's design serves, e.g. 128")
        if bound <= previous:
            raise DesignError("input", where, f"{field}={bound} is not above rule {number - 1}'s {previous}",
                              f"list the rules by ascending {field}")
        previous = bound
