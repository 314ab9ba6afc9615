"""Carrying TS objects built inside a DSL trace out of the tracing process.

Inside a trace, resources and tasks hold DSL values (pointers, tensors, MLIR values) that cannot be pickled
and mean nothing outside the trace. :func:`dump` copies what a ``TaskManager`` was given, replacing every
such value by a :class:`Traced` placeholder (its type and text); the user's own resource classes travel by
reference, so their work methods, labels and pipeline configs are the real ones. :func:`load` rebuilds the
objects and re-keys what TS keys by ``id(resource)`` (slot routing, slot sets) to the new objects.
"""

from __future__ import annotations

import copy
import pickle
import types
from dataclasses import dataclass
from typing import Any

from ..errors import TslabError

_PLAIN = (type(None), bool, int, float, str, bytes)
_TS_MODULES = ("cutlass.experimental.task_scheduling", "cutlass.pipeline")


@dataclass(frozen=True)
class Traced:
    """Stands for a DSL value that only existed inside the trace (a pointer, tensor or MLIR value)."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return f"<traced {self.type_name}: {self.text}>"


def rekey(value: Any, ids: dict[int, int]) -> Any:
    """``value`` with each int that is a key of ``ids`` (an old resource id) replaced by the new id."""
    if isinstance(value, int) and not isinstance(value, bool):
        return ids.get(value, value)
    if isinstance(value, tuple):
        return type(value)(*[rekey(v, ids) for v in value]) if hasattr(value, "_fields") \
            else tuple(rekey(v, ids) for v in value)
    if isinstance(value, list):
        return [rekey(v, ids) for v in value]
    if isinstance(value, (set, frozenset)):
        return type(value)(rekey(v, ids) for v in value)
    if isinstance(value, dict):
        return {rekey(k, ids): rekey(v, ids) for k, v in value.items()}
    return value


class _Scrubber:
    """Copies an object graph, keeping what pickles and replacing what does not by ``Traced``."""

    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.replaced: list[str] = []

    def _pickles(self, value: Any) -> bool:
        try:
            pickle.dumps(value)
        except Exception:
            return False
        return True

    def clean(self, value: Any, where: str = "") -> Any:
        if isinstance(value, _PLAIN):
            return value
        key = id(value)
        if key in self.memo:
            return self.memo[key]
        if self._pickles(value):
            self.memo[key] = value
            return value
        if isinstance(value, (list, tuple, set, frozenset, dict)):
            out = self._clean_container(value, where)
        elif _descend(value) and self._pickles(type(value)):
            out = copy.copy(value)
            self.memo[key] = out
            for name, item in vars(value).items():
                object.__setattr__(out, name, self.clean(item, f"{where}.{name}"))
        else:
            out = Traced(type(value).__name__, _text(value))
            self.replaced.append(where or type(value).__name__)
        self.memo[key] = out
        return out

    def _clean_container(self, value: Any, where: str) -> Any:
        if isinstance(value, dict):
            return {self.clean(k, where): self.clean(v, f"{where}[{k!r}]") for k, v in value.items()}
        items = [self.clean(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*items)
        return type(value)(items)


def _descend(value: Any) -> bool:
    """Whether to copy ``value`` field by field: TS objects and the user's, not DSL values or functions."""
    if isinstance(value, (type, types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        return False
    if not hasattr(value, "__dict__"):
        return False
    module = type(value).__module__ or ""
    return not module.startswith("cutlass") or module.startswith(_TS_MODULES)


def _text(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = type(value).__name__
    return " ".join(text.split())[:120]


def dump(bundle: dict[str, Any]) -> tuple[bytes, list[str]]:
    """Pickle a capture bundle (tasks, graph, allocators, ...) made safe to leave the trace.

    Returns the bytes and the attribute paths that were replaced by :class:`Traced` placeholders.
    """
    resources = _resources(bundle["tasks"], bundle["graph"])
    scrub = _Scrubber()
    bundle = dict(bundle, resource_ids={id(r): r for r in resources})
    clean = scrub.clean(bundle, "capture")
    local = [type(r).__qualname__ for r in resources if "<locals>" in type(r).__qualname__]
    if local:
        raise TslabError(f"resource class '{local[0]}' is defined inside a function, so it cannot be "
                         "re-created outside the trace; define resource classes at module level (or in a "
                         "notebook cell)")
    return pickle.dumps(clean), sorted(set(scrub.replaced))


def load(data: bytes) -> dict[str, Any]:
    """Rebuild a bundle written by :func:`dump`, with the tasks' ``id(resource)`` keys pointing at the new
    resources."""
    try:
        bundle = pickle.loads(data)
    except (AttributeError, ImportError, pickle.UnpicklingError) as exc:
        raise TslabError(f"capture: the traced objects could not be re-created here ({exc}); define the "
                         "kernel's resource classes at module level of an importable file or a notebook "
                         "cell") from None
    ids = {old: id(res) for old, res in bundle.pop("resource_ids").items()}
    for task in bundle["tasks"]:
        task.__dict__.update(rekey(dict(task.__dict__), ids))
    return bundle


def _resources(tasks: list[Any], graph: dict[Any, list[Any]]) -> list[Any]:
    found: dict[int, Any] = {}
    for task in tasks:
        for res in (*task.src_resources, *task.dst_resources):
            found.setdefault(id(res), res)
    for down, ups in graph.items():
        for res in (down, *ups):
            found.setdefault(id(res), res)
    return list(found.values())
