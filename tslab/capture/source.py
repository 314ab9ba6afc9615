"""Where a captured design comes from, so that every edit of it is traced again by the kernel's own code.

A captured design is not a fixed set of objects: the kernel computed its buffers while it was traced, from
its knobs (module constants, constexpr arguments). :class:`KernelSource` remembers how to trace it (file or
callable, host function, arguments, arch, frontend, options, knob values) and re-traces it with knobs
edited or with the design's edits applied at TaskManager construction. Traces are cached by (file content,
knobs, arguments, arch, edits). After an edit, :meth:`KernelSource.faithfulness` compares what the kernel
built with what was asked, so a pipeline edit the kernel does not follow is never a silent SAFE.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.blueprint import Blueprint, lower
from ..core.construction import Edits
from ..errors import DesignError, Issue, TslabError, one_line
from . import knobs as _knobs

_CACHE: OrderedDict[tuple, Any] = OrderedDict()
_CACHE_SIZE = 64


def constexpr_params(host_fn: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, Any]:
    """The host function's ``cutlass.Constexpr`` parameters with the values this capture passes (or defaults)."""
    try:
        signature = inspect.signature(host_fn)
    except (TypeError, ValueError):
        return {}
    out = {}
    names = list(signature.parameters)
    for i, (name, param) in enumerate(signature.parameters.items()):
        note = param.annotation
        text = note if isinstance(note, str) else f"{getattr(note, '__module__', '')}.{getattr(note, '__name__', '')}"
        text += repr(getattr(note, "__origin__", ""))
        if "Constexpr" not in text:
            continue
        if name in kwargs:
            value = kwargs[name]
        elif i < len(args) and names[i] == name:
            value = args[i]
        elif param.default is not inspect.Parameter.empty:
            value = param.default
        else:
            continue
        plain = _knobs.to_plain(value)
        if isinstance(plain, (bool, int, float, str, list)) or plain is None:
            out[name] = plain
    return out


def arg_spec(value: Any) -> Any:
    """A plain description of one capture argument: fake tensors and streams, numbers, strings, tuples and lists
    of them, CuTe DSL element types."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return {type(value).__name__: [arg_spec(v) for v in value]}
    if isinstance(value, type) and _is_dsl_dtype(value):
        return {"dtype": value.__name__}
    name = type(value).__name__
    if name == "_FakeTensor":
        return {"tensor": str(value.element_type.__name__), "shape": [_plain_extent(d) for d in value.shape],
                "stride": [_plain_extent(s) for s in value.stride]}
    if name == "FakeStream" or "Stream" in name:
        return {"stream": True}
    return {"object": " ".join(repr(value).split())[:200]}


def _plain_extent(value: Any) -> int | None:
    """A size or stride as JSON: an int, or None for a runtime value (re-created as a fresh one)."""
    return value if isinstance(value, int) else None


def _is_dsl_dtype(value: type) -> bool:
    """Whether ``value`` is a CuTe DSL element type (``cutlass.Float16``, ``cutlass.Int32``, ...)."""
    import cutlass

    return (value.__module__ or "").startswith("cutlass") and getattr(cutlass, value.__name__, None) is value


def arg_from_spec(spec: Any, where: str = "argument") -> Any:
    """The capture argument a spec written by :func:`arg_spec` stands for (``where`` names it in errors)."""
    from .. import fake

    if isinstance(spec, dict):
        if "tensor" in spec:
            return fake.tensor(spec["tensor"], tuple(spec["shape"]), stride=tuple(spec["stride"]))
        if spec.get("stream"):
            return fake.stream()
        for kind in ("tuple", "list"):
            if isinstance(spec.get(kind), list):
                items = [arg_from_spec(v, f"{where}[{i}]") for i, v in enumerate(spec[kind])]
                return tuple(items) if kind == "tuple" else items
        if isinstance(spec.get("dtype"), str):
            import cutlass

            dtype = getattr(cutlass, spec["dtype"], None)
            if isinstance(dtype, type):
                return dtype
        raise TslabError(f"captured design JSON: {where} {spec!r} cannot be re-created (tslab saves fake tensors "
                         "and streams, numbers, strings, tuples and lists of them and CuTe DSL dtypes); pass that "
                         "value as one of those, or capture the kernel again with tslab.capture_file(...)")
    return spec


@dataclass(frozen=True, eq=False)
class KernelSource:
    """How to trace a captured kernel again: its host function, arguments, arch and knob values."""

    label: str
    host_fn: Callable[..., Any] = field(repr=False)
    args: tuple = field(repr=False)
    kwargs: dict[str, Any] = field(repr=False)
    arch: str
    index: int = 0
    file: Path | None = None
    file_text: str | None = field(default=None, repr=False)
    function: str = ""
    knob_edits: dict[str, Any] = field(default_factory=dict)
    frontend: Any = None
    options: str = ""
    timeout: float = 600.0

    # -- knobs --------------------------------------------------------------------------------------
    def module_knobs(self) -> dict[str, Any]:
        """The kernel file's module-level constants, with this source's knob edits (empty for a callable)."""
        base = _knobs.module_knobs(self.file_text) if self.file_text is not None else {}
        return {k: _knobs.shown(self.knob_edits.get(k, v)) for k, v in base.items()}

    def constexpr_knobs(self) -> dict[str, Any]:
        """The host function's constexpr arguments as this source passes them."""
        base = constexpr_params(self.host_fn, self.args, self.kwargs)
        return {k: _knobs.shown(self.knob_edits.get(k, v)) for k, v in base.items()}

    def knobs(self) -> dict[str, Any]:
        """Every knob with its current value: constexpr arguments win over module constants of the same name."""
        return {**self.module_knobs(), **self.constexpr_knobs()}

    def with_knobs(self, **values: Any) -> KernelSource:
        owner = f"captured kernel '{self.label}'"
        current = self.knobs()
        _knobs.check_knob_names(values, current, owner)
        plain = _knobs.check_knob_values(values, current, owner)
        return replace(self, knob_edits={**self.knob_edits, **plain})

    # -- tracing ------------------------------------------------------------------------------------
    def _traced_callable(self) -> tuple[Callable[..., Any], dict[str, Any]]:
        constexpr = self.constexpr_knobs()
        kwargs = dict(self.kwargs)
        kwargs.update({k: _knobs.to_value(v) for k, v in self.knob_edits.items() if k in constexpr})
        module_edits = {k: v for k, v in self.knob_edits.items() if k not in constexpr}
        if not module_edits or self.file is None:
            return self.host_fn, kwargs
        module = _knobs.module_with_knobs(self.file, self.file_text or "", module_edits)
        return getattr(module, self.function), kwargs

    def _args_for(self, kwargs: dict[str, Any]) -> tuple:
        """Positional arguments, with a constexpr knob passed positionally replaced by its edited value."""
        try:
            names = list(inspect.signature(self.host_fn).parameters)
        except (TypeError, ValueError):
            return self.args
        args = list(self.args)
        for i, name in enumerate(names[:len(args)]):
            if name in kwargs:
                args[i] = kwargs.pop(name)
        return tuple(args)

    def cache_key(self, edits: Edits) -> tuple:
        if self.file_text is not None:
            identity = hashlib.sha1(self.file_text.encode()).hexdigest()
        else:
            fn = self.host_fn
            identity = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}:{id(fn)}"
        args = json.dumps([arg_spec(a) for a in self.args], sort_keys=True, default=str)
        kwargs = json.dumps({k: arg_spec(v) for k, v in self.kwargs.items()}, sort_keys=True, default=str)
        return (identity, self.function, args, kwargs, self.arch, str(self.frontend), self.options,
                json.dumps(self.knob_edits, sort_keys=True), json.dumps(edits.to_dict(), sort_keys=True))

    def trace(self, edits: Edits | None = None) -> Any:
        """The :class:`~tslab.capture.api.CaptureResult` of tracing the kernel with these knobs and ``edits``."""
        from .tracing import CaptureError, trace_call

        edits = edits or Edits()
        key = self.cache_key(edits)
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
        if edits:  # refuse a bad edit with TS's own message on the objects already traced, before re-tracing
            base = self.trace(Edits()).managers[self.index]
            lower((base.traced if base.traced is not None else base.design).blueprint(), pipelines=edits.pipelines,
                  schedules=edits.schedules, alias_groups=edits.alias_groups)
        host_fn, kwargs = self._traced_callable()
        args = self._args_for(kwargs)
        try:
            result = trace_call(host_fn, args, kwargs, arch=self.arch, timeout=self.timeout, label=self.label,
                                frontend=self.frontend, options=self.options, edits=edits)
        except (CaptureError, TslabError) as exc:
            knobs = f" with knobs {self.knob_edits}" if self.knob_edits else ""
            raise DesignError("invalid-config", f"captured kernel '{self.label}'",
                              f"re-tracing the kernel{knobs} failed: {one_line(exc)}",
                              "undo the last edit, or change the kernel's knobs to values its code accepts") from None
        if len(result.managers) <= self.index:
            raise DesignError("invalid-config", f"captured kernel '{self.label}'",
                              f"the re-trace built {len(result.managers)} TaskManager(s), not {self.index + 1}",
                              "undo the last knob edit: it changed which TaskManagers the kernel builds")
        remember(key, result)
        return result

    def blueprint(self, edits: Edits) -> Blueprint:
        """Fresh TS objects of what the kernel builds with these knobs and ``edits`` applied inside its trace."""
        manager = self.trace(edits).managers[self.index]
        return (manager.traced if manager.traced is not None else manager.design).blueprint()

    # -- faithfulness -------------------------------------------------------------------------------
    def faithfulness(self, edits: Edits) -> list[Issue]:
        """``unfaithful-edit`` issues: pipeline edits whose resource's buffers the kernel did not resize."""
        asked = {r: f for r, f in edits.pipelines.items() if {"num_stages", "num_bytes"} & set(f)}
        if not asked:
            return []
        base = self.blueprint(Edits())
        edited = self.blueprint(edits)
        issues = []
        for name, fields in asked.items():
            old_res, new_res = _pipelined(base, name), _pipelined(edited, name)
            if old_res is None or new_res is None:
                continue
            changed = {f: (getattr(old_res.pipeline_config, f), v) for f, v in fields.items()
                       if f in ("num_stages", "num_bytes") and getattr(old_res.pipeline_config, f) != v}
            if not changed or _sizes_changed(base, edited, _members(old_res), _members(new_res)):
                continue
            issues.append(self._unfaithful(name, changed))
        return issues

    def _unfaithful(self, resource: str, changed: dict[str, tuple[Any, Any]]) -> Issue:
        what = ", ".join(f"{f} {old} -> {new}" for f, (old, new) in changed.items())
        message = (f"the edit ({what}) changed the pipeline but none of the buffers the kernel allocates for "
                   f"{resource}: the kernel sizes them elsewhere, so this design is not the kernel that would run")
        knob = self.sizing_knob(changed.get("num_stages", (None, None))[0])
        if knob is not None:
            name, value = knob
            new = changed["num_stages"][1]
            hint = (f"{resource}'s buffers are sized by knob `{name}` ({value}): edit that knob instead, "
                    f"design.with_knobs({name}={new})")
        else:
            hint = "edit the kernel knob that sizes these buffers (design.knobs() lists them), not the pipeline"
        return Issue("unfaithful-edit", f"resource '{resource}'", message, hint)

    def sizing_knob(self, stages: Any) -> tuple[str, Any] | None:
        """The knob that most likely sizes a resource of ``stages`` stages: an int knob of that value."""
        if not isinstance(stages, int):
            return None
        candidates = [(n, v) for n, v in self.knobs().items()
                      if isinstance(v, int) and not isinstance(v, bool) and v == stages]
        candidates.sort(key=lambda nv: ("stage" not in nv[0].lower(), len(nv[0])))
        return candidates[0] if candidates else None

    # -- serialisation ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"arch": self.arch, "index": self.index,
                               "args": [arg_spec(a) for a in self.args],
                               "kwargs": {k: arg_spec(v) for k, v in self.kwargs.items()}}
        if self.file is not None:
            try:
                shown = str(self.file.relative_to(Path.cwd()))
            except ValueError:
                shown = str(self.file)
            out.update(file=shown, sha1=hashlib.sha1((self.file_text or "").encode()).hexdigest(),
                       function=self.function)
        else:
            out["callable"] = f"{getattr(self.host_fn, '__module__', '?')}:{getattr(self.host_fn, '__qualname__', '?')}"
        if self.frontend is not None:
            out["frontend"] = getattr(self.frontend, "__name__", str(self.frontend))
        if self.options:
            out["options"] = self.options
        return out


def remember(key: tuple, result: Any) -> None:
    _CACHE[key] = result
    _CACHE.move_to_end(key)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)


def _pipelined(bp: Blueprint, name: str) -> Any:
    """The resource or PipelineGroup called ``name`` when it has a pipeline, else None."""
    found = bp.resources().get(name) or bp.groups().get(name)
    return found if getattr(found, "pipeline_config", None) is not None else None


def _members(found: Any) -> list[Any]:
    """The resources whose buffers an edit of ``found`` should resize: a group's members, or itself."""
    return list(getattr(found, "members", None) or [found])


def _declared(resources: list[Any]) -> dict[str, int] | None:
    out: dict[str, int] = {}
    for res in resources:
        try:
            out.update({a.name: a.size_bytes for a in res.get_smem_requirements()})
            if hasattr(res, "get_tmem_requirements"):
                out.update({a.name: a.num_columns for a in res.get_tmem_requirements()})
        except Exception:
            return None
    return out or None


def _sizes_changed(base: Blueprint, edited: Blueprint, old: list[Any], new: list[Any]) -> bool:
    """Did the allocations these resources declare change size (all SMEM allocations, when they declare none)?"""
    before, after = _declared(old), _declared(new)
    if before is None or after is None:
        before = {a.name: a.size_bytes for a in base.smem_allocations()}
        after = {a.name: a.size_bytes for a in edited.smem_allocations()}
    return before != after


def _frontend(name: str | None, where: str) -> Any:
    """The DSL frontend a design was captured with (``cute.FrontendNext``), from its saved name."""
    if name is None:
        return None
    from cutlass import cute

    frontend = getattr(cute, name, None)
    if frontend is None:
        raise DesignError("input", f"{where} frontend '{name}'", "is not a frontend of this CuTe DSL version",
                          "capture the kernel again with the frontend its authors compile it with")
    return frontend


def _import_callable(text: str, where: str) -> Callable[..., Any]:
    import importlib

    module_name, _, qualname = text.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:
        raise DesignError("input", f"{where} callable '{text}'", "cannot be imported here",
                          "capture the kernel from its file (tslab.capture_file) so it can be re-opened") from None
    return obj
