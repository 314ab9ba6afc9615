"""A job as bytes that another process turns back into the same call.

Functions and classes travel by reference, as pickle sends them; those of a kernel file imported by path
(:func:`tslab.capture.kernel_files.import_kernel_file`) travel as "that file's object", and those of a kernel file
executed with edited knobs (:func:`tslab.capture.knobs.module_with_knobs`) as "that file with those knobs", so
the receiving process imports the file itself. What only this process holds (a function or class typed into a
notebook cell or defined in ``__main__``, a lambda, a function defined inside another) travels by value, with the
text of the cells it was written in (:mod:`tslab.capture.by_value`), so that CuTe DSL compiles it there as here.
What cannot be copied at all (a lock, an open file, a CUDA tensor) raises :class:`NotPortable`, which names the
object and the path to it.
"""

from __future__ import annotations

import io
import pickle
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import by_value
from .knobs import KNOBS_ATTRIBUTE


class NotPortable(Exception):
    """The job holds something that cannot be copied to another process; ``detail`` says what and where, ``fix``
    what to do about it."""

    def __init__(self, message: str, detail: str = "", fix: str = "create that inside the function instead") -> None:
        super().__init__(message)
        self.detail, self.fix = detail or message, fix


class ArrivalError(Exception):
    """The job could not be re-created in the fresh process (raised there, reported back by name)."""


class _OnlyHere(NotPortable):
    """Pickled by reference, the job would name something only this process has: it is copied by value instead."""


def _by_file(obj: Any) -> Any:
    """The reduction of a kernel file's function or class (``None`` for anything else)."""
    name, qualname = getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", "")
    module = sys.modules.get(name)
    knobs = getattr(module, KNOBS_ATTRIBUTE, None)
    if knobs is not None:
        return _from_knob_module, (*knobs, qualname)
    spec = getattr(module, "__spec__", None)
    if name.startswith("tslab_kernel_") and spec is not None and spec.origin:
        from .kernel_files import kernel_module_name

        if not Path(spec.origin).is_file() or kernel_module_name(Path(spec.origin)) != name:
            raise NotPortable(f"kernel file '{spec.origin}' changed since it was imported")
        return _from_kernel_file, (spec.origin, qualname)
    return None


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        by_value.refuse_device_tensor(obj)
        if not isinstance(obj, (type, types.FunctionType)):
            return NotImplemented
        found = _by_file(obj)
        if found is not None:
            return found
        if by_value.only_here(obj):
            raise _OnlyHere(f"{obj.__module__}.{obj.__qualname__} exists only in this process")
        return NotImplemented


@dataclass(frozen=True)
class _Copied:
    """A job copied by value: the text of the cells its code was written in, and the pickled ``(main, job)``."""

    sources: dict[str, str]
    payload: bytes


def dumps(obj: Any, name: str = "the job") -> bytes:
    """``obj`` as bytes for a fresh process: by reference where it can be, else by value; raises
    :class:`NotPortable` (naming ``name`` and the object in it that cannot be copied) when neither works."""
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
        return buffer.getvalue()
    except NotPortable as exc:
        if not isinstance(exc, _OnlyHere):
            raise
    except Exception:  # e.g. a class of a module that sys.modules does not list: try a copy
        pass
    return _by_value(obj, name)


def _copy(obj: Any) -> tuple[bytes, Any]:
    buffer = io.BytesIO()
    pickler = by_value.value_pickler(buffer, _by_file)
    pickler.dump(obj)
    return buffer.getvalue(), pickler


def _by_value(obj: Any, name: str) -> bytes:
    try:
        _, first = _copy(obj)
        payload, pickler = _copy((first.main, obj))  # the cell objects the job uses, named, with the same copies
    except ModuleNotFoundError as exc:
        detail = f"copying it needs {exc.name}, which is not installed here"
        raise NotPortable(f"{name} exists only in this process, and {detail}", detail, f"pip install {exc.name}") \
            from None
    except Exception as exc:
        detail = by_value.culprit(obj, name, _copy) or f"{type(exc).__name__}: {exc}"
        raise NotPortable(f"{name} cannot be copied to another process: {detail}", detail) from None
    return pickle.dumps(_Copied(by_value.cell_sources(pickler.files), payload), protocol=pickle.HIGHEST_PROTOCOL)


def loads(data: bytes, *, as_main: bool = False) -> Any:
    """Inside the fresh process: the object :func:`dumps` sent; :class:`ArrivalError` when it cannot be rebuilt.

    A copy's cell sources are registered in ``linecache`` first. ``as_main``: the cell objects it holds become this
    process's ``__main__`` (a process that ends after the job), so that what it pickles back names them and arrives
    in the caller as the caller's own.
    """
    try:
        obj = pickle.loads(data)
        if not isinstance(obj, _Copied):
            return obj
        by_value.register_sources(obj.sources)
        main, job = pickle.loads(obj.payload)
    except Exception as exc:
        raise ArrivalError(f"{type(exc).__name__}: {exc}") from None
    if as_main:
        module = types.ModuleType("__main__")
        module.__dict__.update(main)
        sys.modules["__main__"] = module
    return job


def _attribute(module: Any, qualname: str) -> Any:
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _from_kernel_file(path: str, qualname: str) -> Any:
    from .kernel_files import import_kernel_file

    return _attribute(import_kernel_file(path), qualname)


def _from_knob_module(path: str, source: str, knobs: dict[str, Any], qualname: str) -> Any:
    from .knobs import module_with_knobs

    return _attribute(module_with_knobs(Path(path), source, knobs), qualname)
