"""Resource classes from modules that cannot be imported by name, made to travel by reference all the same.

A kernel file loaded with ``importlib.util.spec_from_file_location`` (or ``exec``) defines its resource classes
in a module that ``sys.modules`` does not list, so pickle cannot name them and the traced objects could not
leave the trace. Before a capture runs, :func:`unlisted_modules` finds every TS resource class whose module
is unlisted and takes that module's namespace from one of the class's own functions; :func:`listed` lists those
namespaces under their module names while objects are pickled (in the trace) and unpickled (in the caller).
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import types
from collections.abc import Iterator
from typing import Any


def _resolves(cls: type) -> bool:
    """Whether pickle finds ``cls`` by its module and qualified name."""
    obj: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is cls


def _namespace(cls: type) -> dict[str, Any] | None:
    """The globals of the module that defined ``cls``, read from one of its own functions."""
    for value in vars(cls).values():
        fn = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
        fn = inspect.unwrap(fn) if callable(fn) else fn
        spaces = getattr(fn, "__globals__", None)
        if isinstance(spaces, dict) and spaces.get("__name__") == cls.__module__:
            return spaces
    return None


def _subclasses(base: type) -> Iterator[type]:
    seen: set[type] = set()
    stack = [base]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
                yield sub


def unlisted_modules() -> dict[str, dict[str, Any]]:
    """``module name -> namespace`` for each module defining a TS resource class that pickle cannot name."""
    from cutlass.experimental.task_scheduling.resources import MemoryResource

    found: dict[str, dict[str, Any]] = {}
    for cls in _subclasses(MemoryResource):
        if cls.__module__ in found or cls.__module__ == "__main__" or "<locals>" in cls.__qualname__ \
                or _resolves(cls):  # __main__'s (a notebook's) are copied with the job, never listed
            continue
        space = _namespace(cls)
        if space is not None:
            found[cls.__module__] = space
    return found


@contextlib.contextmanager
def listed(modules: dict[str, dict[str, Any]]) -> Iterator[None]:
    """While active, each unlisted module's namespace is importable under its name (names already taken are
    left alone); removed again afterwards."""
    added = []
    for name, space in modules.items():
        if name in sys.modules:
            continue
        module = types.ModuleType(name)
        module.__dict__.update(space)
        sys.modules[name] = module
        added.append(name)
    try:
        yield
    finally:
        for name in added:
            sys.modules.pop(name, None)
