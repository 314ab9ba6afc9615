"""``Dispatch``: several designs of one kernel, and which one serves a problem, by one of its extents.

An ordered list of rules ``(bound, design)``: a problem whose key extent is at most ``bound`` uses that rule's
design (the first rule that fits); the last rule's bound is None, "every larger". The key is part of the data: a
GEMM's ``M`` (its problem (M, N, K)) or an attention's ``seqlen_k`` (its problem (batch, seqlen_q, seqlen_k, heads,
heads_kv)). A GEMM's rule may bound N and K too: its bound is then a dict, ``{"M": 4096, "K": 4096}`` (M up to 4096
and K up to 4096); the rules stay in ascending M. A kernel whose package picks a design param per call
(``RULES.variants``: attention's ``causal``) lists its rules per value of that param, each group in ascending bounds
ending in None; a call with ``causal=False`` is served by the rules whose designs were built with ``causal=False``.
Like ``Design`` it is plain and serialisable (``to_dict``/``from_dict``, shape in
``tslab/schemas/dispatch.v1.json``); ``tslab.gpu.export`` compiles each design into one package that picks per
launch.
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
#: The extents of each package kind's problem, in order.
DIMS: dict[str, tuple[str, ...]] = {"gemm": ("M", "N", "K"),
                                    "attention": ("batch", "seqlen_q", "seqlen_k", "heads", "heads_kv")}
#: The extents a rule may bound beside its key (a dict bound: ``{"M": 4096, "K": 4096}``).
ALSO: dict[str, tuple[str, ...]] = {"M": ("N", "K"), "seqlen_k": ()}
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


def picked_by(names: Sequence[str]) -> str:
    """What a dispatch picks by, in words: ``M``, ``causal and seqlen_k``, ``M, N and K``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def bounds_of(bound: Any, key: str) -> dict[str, Any]:
    """A rule's bound as ``{extent: largest served or None}``, its key first: ``128`` -> ``{"M": 128}``,
    ``{"K": 4096}`` -> ``{"M": None, "K": 4096}``; extents a dict leaves out or sets to None are not bounded."""
    if isinstance(bound, dict):
        return {key: bound.get(key), **{k: v for k, v in bound.items() if k != key and v is not None}}
    return {key: bound}


def bound_fields(bound: Any, key: str) -> dict[str, Any]:
    """A rule's bound as plain data writes it: ``{"max_m": 4096, "max_k": 4096}`` (the inverse of
    :func:`rule_bound`)."""
    return {bound_field(name): limit for name, limit in bounds_of(bound, key).items()}


def bounded_keys(key: str, bounds: Sequence[Any]) -> tuple[str, ...]:
    """The extents rules with ``bounds`` compare: ``key``, then any other one of them bounds, in the problem's
    order (``("M", "N", "K")``)."""
    others = {name for bound in bounds for name in bounds_of(bound, key)} - {key}
    return (key, *(name for name in DIMS[KEYS[key][0]] if name in others))


def joined_spans(ranges: Sequence[str], rule_designs: Sequence[int], designs: int) -> list[str]:
    """For each of ``designs`` designs, the ``ranges`` of the rules that use it (``rule_designs``), joined by
    "or"."""
    return [" or ".join(span for span, j in zip(ranges, rule_designs, strict=True) if j == i) for i in range(designs)]


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def rule_bound(rule: dict[str, Any], key: str) -> Any:
    """The bound of a rule as plain data writes it (``{"max_m": 4096, "max_k": 4096, ...}``): an int or None, or a
    dict where it bounds more than the key."""
    others = {k: rule[bound_field(k)] for k in ALSO[key] if rule.get(bound_field(k)) is not None}
    return {key: rule[bound_field(key)], **others} if others else rule[bound_field(key)]


def ranges_in_words(key: str, variant: str | None, rules: Sequence[tuple[Any, Any]]) -> list[str]:
    """Each rule's range in words, from its ``(bound, variant value)``: ``129 <= M <= 384``, ``every M``,
    ``513 <= M <= 4096, K <= 4096``, then ``M >= 513, otherwise``; prefixed with the variant's value where there is one
    (``causal=False: seqlen_k <= 2048``), whose rules each start again from 1. :meth:`Dispatch.ranges` and an
    exported package's design.json say them alike."""
    out, low, group, bounded = [], 1, object(), False
    for bound, value in rules:
        if value != group:
            low, group, bounded = 1, value, False
        prefix = f"{variant}={value!r}: " if variant else ""
        limits = bounds_of(bound, key)
        top, others = limits.pop(key), limits
        if top is not None:
            words = [f"{key} <= {top}" if low == 1 else f"{low} <= {key} <= {top}"]
        elif low > 1:
            words = [f"{key} >= {low}"]
        else:
            words = [] if others else [f"every {key}"]
        words += [f"{name} <= {limit}" for name, limit in others.items()]
        if not others and bounded:  # an earlier rule of this range bounded more than the key: read in order
            words.append("otherwise")
        out.append(prefix + ", ".join(words))
        if others:
            bounded = True
        elif top is not None:
            low = top + 1
    return out


@dataclass(frozen=True, repr=False)
class Dispatch:
    """Rules ``(bound, design)`` in ascending bounds, the last ``(None, design)``: a problem whose ``key`` extent
    is at most ``bound`` uses ``design`` (``key`` "M" for a GEMM, "seqlen_k" for an attention).

    Every design is of one catalog kernel and one ``dtype``; a kernel with a per-call variant (attention's
    ``causal``) has one such list per value, in its designs' params. Validated on construction (``DesignError``).
    """

    rules: tuple[tuple[Any, Design], ...]
    key: str = "M"

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", _validated(self.rules, self.key))

    @property
    def designs(self) -> tuple[Design, ...]:
        """Each design once, in the order the rules first use them (two rules may share one: an exported package
        compiles it once)."""
        unique: list[Design] = []
        for _, design in self.rules:
            if design not in unique:
                unique.append(design)
        return tuple(unique)

    @property
    def rule_designs(self) -> tuple[int, ...]:
        """For each rule, the index of its design in :attr:`designs`."""
        designs = self.designs
        return tuple(designs.index(design) for _, design in self.rules)

    def spans(self) -> list[str]:
        """For each design in :attr:`designs`, the ranges of the rules that use it in words, joined by "or"."""
        return joined_spans(self.ranges(), self.rule_designs, len(self.designs))

    @property
    def kernel(self) -> str:
        """The one kernel every design is of."""
        return self.rules[0][1].kernel

    @property
    def keys(self) -> tuple[str, ...]:
        """The extents the rules compare: the key, then any other a rule bounds (``("M", "K")``)."""
        return bounded_keys(self.key, [bound for bound, _ in self.rules])

    @property
    def variant(self) -> str | None:
        """The design param a call picks by before the key (attention's ``causal``), or None."""
        return _variant_param(self.rules[0][1])

    def pick(self, shape: Sequence[int], **variant: Any) -> tuple[int, Design]:
        """``(index, design)`` of the design that serves problem ``shape`` (``index`` into :attr:`designs`, as an
        exported package numbers them): the first rule whose bounds its extents do not exceed, among the rules of
        the call's variant value where the kernel has one (``causal=False``)."""
        dims = DIMS[KEYS[self.key][0]]
        name = self.variant
        where = f"dispatch '{self.kernel}'"
        missing = next((key for key in self.keys if len(shape) <= dims.index(key)), None)
        if missing is not None:
            raise DesignError("input", where, f"shape={tuple(shape)!r} has no {missing}",
                              f"pass the problem's shape, e.g. {_KINDS[KEYS[self.key][0]][2]}")
        if name is None and variant:
            raise DesignError("input", where, f"pick(shape, {', '.join(f'{k}=...' for k in variant)}) names a "
                              f"variant, but a dispatch of '{self.kernel}' picks by {self.key} alone",
                              "pass the shape alone, e.g. pick((256, 8192, 8192))")
        if name is not None and set(variant) != {name}:
            given = ", ".join(f"{k}=..." for k in variant) or "no keyword"
            raise DesignError("input", where, f"pick(shape, {given}) does not say the call's {name}",
                              f"a dispatch of '{self.kernel}' picks by {name} first: pick(shape, {name}=False)")
        for i, (bound, design) in enumerate(self.rules):
            if name and design.params.get(name) != variant[name]:
                continue
            if all(limit is None or shape[dims.index(key)] <= limit
                   for key, limit in bounds_of(bound, self.key).items()):
                return self.rule_designs[i], design
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
                "rules": [{**bound_fields(bound, self.key), "design": design.to_dict()}
                          for bound, design in self.rules]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> Dispatch:
        """Read a dispatch from plain data; its shape is checked against ``tslab/schemas/dispatch.v1.json``."""
        validate_dispatch_document(data)
        key = data["key"]
        field = bound_field(key)
        allowed = {field, "design", *(bound_field(k) for k in ALSO[key])}
        for number, rule in enumerate(data["rules"]):
            others = sorted(set(rule) - allowed)
            if others or field not in rule:
                what = (f"rules[{number}].{others[0]} is not the bound of a dispatch by {key}" if others
                        else f"rules[{number}] has no {field}")
                raise DesignError("input", "dispatch JSON", what,
                                  f"give each rule {field} (the largest {key} it serves, null on the last)")
        return cls(tuple((rule_bound(rule, key), Design.from_dict(rule["design"])) for rule in data["rules"]), key)

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
                for span, (_, design) in zip(self.ranges(), self.rules, strict=True)]

    def text(self) -> str:
        """The rule table as plain text."""
        dtype = self.rules[0][1].params.get("dtype")
        rows = self.table()
        width = max(len(span) for span, _ in rows)
        designs = len(self.designs)
        count = f"{designs} design" + ("s" if designs > 1 else "") + (f" in {len(rows)} rules" if len(rows) > designs
                                                                      else "")
        by = picked_by([*([self.variant] if self.variant else []), *self.keys])
        head = f"{self.kernel} by {by}, {count}" + (f", dtype {dtype}" if dtype else "") + ":"
        return "\n".join([head, *(f"  {span:<{width}}  {what}" for span, what in rows)])

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        head = html.escape(self.text().splitlines()[0].rstrip(":"))
        # each bound of a range stays on one line (a range of several wraps between them); the designs, the long
        # column, wrap left-aligned under their own start
        span_style, what_style = "white-space:nowrap;text-align:left", "text-align:left"
        rows = "".join(f"<tr><td style='{what_style}'>{_unbroken(span)}</td>"
                       f"<td style='{what_style}'>{html.escape(what)}</td></tr>" for span, what in self.table())
        return (f"<table class='tslab-dispatch'><caption>{head}</caption><tr><th style='{span_style}'>"
                f"{html.escape(picked_by(self.keys))}</th><th style='{what_style}'>design</th></tr>{rows}</table>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self._repr_html_()}


def _unbroken(span: str) -> str:
    """A range in HTML whose parts (``513 <= M <= 4096``, ``K <= 4096``) each stay on one line."""
    return ", ".join(f"<span style='white-space:nowrap'>{html.escape(part)}</span>" for part in span.split(", "))


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
    pairs = tuple((_canonical(bound, key, pairs[0][1].kernel, number), design)
                  for number, (bound, design) in enumerate(pairs, 1))
    for value, numbers in _variant_groups(pairs, key).items():
        _check_bounds(pairs, numbers, key, value)
    return pairs


def _canonical(bound: Any, key: str, kernel: str, number: int) -> Any:
    """A dict bound checked (extents the key allows, each a positive int or None) and written as the rules keep it:
    its extents in the problem's order, None left out, a plain int or None where it bounds the key alone."""
    if not isinstance(bound, dict):
        return bound
    where = f"dispatch '{kernel}' rule {number}"
    allowed = (key, *ALSO[key])
    unknown = [name for name in bound if name not in allowed]
    if unknown:
        also = f" (and {', '.join(ALSO[key])})" if ALSO[key] else ""
        raise DesignError("input", where, f"bound {_short(bound)} names {unknown[0]!r}, which a dispatch by {key} "
                                          f"does not compare", f"bound {key}{also} only, e.g. {{{key!r}: 128}}")
    for name, limit in bound.items():
        if limit is not None and not _positive_int(limit):
            raise DesignError("input", where, f"{bound_field(name)}={_short(limit)} is not a positive int",
                              f"give the largest {name} this rule's design serves, or None for every {name}")
    limits = bounds_of(bound, key)
    if len(limits) == 1:
        return limits[key]
    return {name: limits[name] for name in allowed if name in limits}


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
    """The bounds of rules ``numbers`` (one variant value's): the key's ascending positive ints, a rule that bounds
    other extents too (a dict) may repeat the key's bound before it; the last rule bounds nothing (None); no rule
    serves only problems an earlier one does."""
    field = bound_field(key)
    variant = _variant_param(pairs[0][1])
    scope = f" among the rules of {variant}={value!r}" if variant else ""
    previous: tuple[int, Any, bool] | None = None  # the previous rule's number, key bound, and whether it bounds more
    for number in numbers:
        limits = bounds_of(pairs[number - 1][0], key)
        bound, others = limits[key], {k: v for k, v in limits.items() if k != key}
        where = f"dispatch '{pairs[0][1].kernel}' rule {number}"
        if number == numbers[-1]:
            if bound is not None:
                raise DesignError("input", where, f"{field}={bound!r} is the last rule's bound{scope}",
                                  f"make it None, so every larger {key} has a design: (None, design)")
            if others:
                name, limit = next(iter(others.items()))
                raise DesignError("input", where, f"{bound_field(name)}={limit} bounds the last rule{scope}",
                                  "the last rule serves every problem the others do not: give it the bound None")
        elif bound is None and not others:
            raise DesignError("input", where, f"{field}=None is not the last rule's bound{scope}",
                              f"only the last rule serves every larger {key}: give this one the largest {key} "
                              "it serves")
        if bound is not None and not _positive_int(bound):
            raise DesignError("input", where, f"{field}={_short(bound)} is not a positive int",
                              f"give the largest {key} this rule's design serves, e.g. 128")
        if previous is not None:
            before, top, more = previous
            repeat = bound == top and (others or more)
            if (top is None and bound is not None) or (bound is not None and bound <= top and not repeat):
                raise DesignError("input", where, f"{field}={bound} is not above rule {before}'s {top}",
                                  f"list the rules by ascending {field}")
        cover = next((n for n in numbers[:numbers.index(number)] if _covers(bounds_of(pairs[n - 1][0], key), limits)),
                     None)
        if cover is not None:
            raise DesignError("input", where, f"serves no problem{scope}: rule {cover} comes first and serves every "
                                              "problem this one would", f"put it before rule {cover}, or drop it")
        previous = (number, bound, bool(others))


def _covers(outer: dict[str, Any], inner: dict[str, Any]) -> bool:
    """Whether every problem within bounds ``inner`` is within ``outer`` (None: unbounded)."""
    return all(limit is None or (inner.get(name) is not None and inner[name] <= limit)
               for name, limit in outer.items())
