"""A capture's job as bytes that a fresh process can turn back into the same call.

Functions and classes travel by reference, as pickle sends them; those of a kernel file imported by path
(:func:`tslab.capture.api.import_kernel_file`) travel as "that file's object", and those of a kernel file
executed with edited knobs (:func:`tslab.capture.knobs.module_with_knobs`) as "that file with those knobs", so
the receiving process imports the file itself. What only this process holds (a function typed into a notebook
cell or defined in ``__main__``, a lambda, a function defined inside another) raises :class:`NotPortable`.
"""

from __future__ import annotations

import io
import pickle
import sys
import types
from pathlib import Path
from typing import Any

from .knobs import KNOBS_ATTRIBUTE


class NotPortable(Exception):
    """The job holds something only this process has: it runs in a fork of this process instead."""


class ArrivalError(Exception):
    """The job could not be re-created in the fresh process (raised there, reported back by name)."""


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if not isinstance(obj, (type, types.FunctionType)):
            return NotImplemented
        name, qualname = getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", "")
        if name == "__main__" or "<locals>" in qualname or "<lambda>" in qualname:
            raise NotPortable(f"{name}.{qualname} exists only in this process")
        module = sys.modules.get(name)
        knobs = getattr(module, KNOBS_ATTRIBUTE, None)
        if knobs is not None:
            return _from_knob_module, (*knobs, qualname)
        spec = getattr(module, "__spec__", None)
        if name.startswith("tslab_kernel_") and spec is not None and spec.origin:
            from .api import kernel_module_name

            if not Path(spec.origin).is_file() or kernel_module_name(Path(spec.origin)) != name:
                raise NotPortable(f"kernel file '{spec.origin}' changed since it was imported")
            return _from_kernel_file, (spec.origin, qualname)
        return NotImplemented


def dumps(obj: Any) -> bytes:
    """``obj`` as bytes for a fresh process; raises :class:`NotPortable` when it cannot be sent."""
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    except NotPortable:
        raise
    except Exception as exc:  # an object pickle cannot send at all
        raise NotPortable(f"{type(exc).__name__}: {exc}") from None
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    """Inside the fresh process: the object :func:`dumps` sent; :class:`ArrivalError` when it cannot be rebuilt."""
    try:
        return pickle.loads(data)
    except Exception as exc:
        raise ArrivalError(f"{type(exc).__name__}: {exc}") from None


def _attribute(module: Any, qualname: str) -> Any:
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _from_kernel_file(path: str, qualname: str) -> Any:
    from .api import import_kernel_file

    return _attribute(import_kernel_file(path), qualname)


def _from_knob_module(path: str, source: str, knobs: dict[str, Any], qualname: str) -> Any:
    from .knobs import module_with_knobs

    return _attribute(module_with_knobs(Path(path), source, knobs), qualname)
