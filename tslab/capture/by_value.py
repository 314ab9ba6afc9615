"""What only this process holds, copied by value: functions and classes typed into a notebook cell, lambdas,
closures, with the text of the cells they were written in.

cloudpickle (as Ray and Dask use it) copies such functions and classes with their code, their closures and the
globals they read. Two things it leaves out matter to CuTe DSL, which reads a ``@cute.jit`` function's source when
it compiles it (``inspect.getsource``): the file name of the code (cloudpickle writes ``<dynamic-code>``) and the
source itself, which for a notebook cell exists only in this process's ``linecache``. :class:`ValuePickler` keeps
every code object as it is (``marshal``: file name and line numbers included) and notes the files, so that
:func:`cell_sources` can send the text of those that exist nowhere on disk; the receiver registers them under the
same names (:func:`register_sources`) before it unpickles anything.

TS's ``@consumer_work(returns=...)`` keeps a ``functools.lru_cache`` of a local function on each method, which
pickle refuses; it is re-created around the copied function. A CUDA tensor is never copied: it stays on its GPU
(:func:`refuse_device_tensor`). When something cannot be copied, :func:`culprit` names it and the path to it.
"""

from __future__ import annotations

import functools
import io
import linecache
import marshal
import os
import pickle
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any


class CannotCopy(Exception):
    """An object that cannot be sent to another process, said in words."""


def refuse_device_tensor(obj: Any) -> None:
    """Raise :class:`CannotCopy` for a tensor on a GPU: copying it out would be slow and surprising."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor) and getattr(obj, "is_cuda", False):
        raise CannotCopy(f"a CUDA tensor, {str(obj.dtype).removeprefix('torch.')} {tuple(obj.shape)} on "
                         f"{obj.device}, which stays on its GPU")


def only_here(obj: Any) -> bool:
    """Whether ``obj`` (a function or class) exists only in this process: typed into a notebook cell or a script,
    a lambda, or defined inside a function."""
    qualname = getattr(obj, "__qualname__", "")
    return getattr(obj, "__module__", None) == "__main__" or "<locals>" in qualname or "<lambda>" in qualname


def _code_files(code: types.CodeType) -> Iterator[str]:
    yield code.co_filename
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_files(const)


def _lru_cached(fn: Callable[..., Any], maxsize: int | None, typed: bool) -> Any:
    return functools.lru_cache(maxsize=maxsize, typed=typed)(fn)


def value_pickler(file: io.BytesIO, by_file: Callable[[Any], Any]) -> Any:
    """A cloudpickle pickler into ``file`` that keeps code objects whole and notes their files (``.files``) and the
    top-level ``__main__`` objects it copies (``.main``); ``by_file(obj)`` is a reduction that sends a kernel file's
    function or class as "that file's object" (None: not one)."""
    import cloudpickle

    class ValuePickler(cloudpickle.Pickler):
        def __init__(self) -> None:
            super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
            self.files: set[str] = set()
            self.main: dict[str, Any] = {}

        def reducer_override(self, obj: Any) -> Any:
            refuse_device_tensor(obj)
            if isinstance(obj, types.CodeType):
                self.files.update(_code_files(obj))
                return marshal.loads, (marshal.dumps(obj),)
            if isinstance(obj, functools._lru_cache_wrapper) and only_here(obj):
                params = obj.cache_parameters()
                return _lru_cached, (obj.__wrapped__, params["maxsize"], params["typed"])
            if isinstance(obj, (type, types.FunctionType)):
                found = by_file(obj)
                if found is not None:
                    return found
                name = getattr(obj, "__qualname__", "")
                if obj.__module__ == "__main__" and getattr(sys.modules.get("__main__"), name, None) is obj:
                    self.main[name] = obj
            return super().reducer_override(obj)

    return ValuePickler()


def cell_sources(files: set[str]) -> dict[str, str]:
    """The text of each of ``files`` that is not on disk but in this process's ``linecache`` (notebook cells)."""
    out = {}
    for name in sorted(files):
        if not os.path.isfile(name):
            lines = linecache.getlines(name)
            if lines:
                out[name] = "".join(lines)
    return out


def register_sources(sources: dict[str, str]) -> None:
    """Make each text findable under its file name, as IPython registers a cell (never checked against a disk)."""
    for name, text in sources.items():
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)


# -- naming what cannot be copied ----------------------------------------------------------------------------


def _names_read(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names_read(const)


def _parts(obj: Any, path: str) -> list[tuple[Any, str]]:
    """What copying ``obj`` by value copies too, each with its path: a function's globals, closure and defaults,
    a class's attributes; nothing for anything else (it is copied as a whole). A decorator's wrapper
    (``@cute.jit``) is looked through: the function it wraps comes first, under the same path."""
    if isinstance(obj, types.FunctionType) and only_here(obj):
        code = obj.__code__
        wrapped = getattr(obj, "__wrapped__", None)
        out = [(wrapped, path)] if isinstance(wrapped, types.FunctionType) else []
        out += [(obj.__globals__[n], f"{path} -> global '{n}'") for n in dict.fromkeys(_names_read(code))
                if n in obj.__globals__]
        for var, cell in zip(code.co_freevars, obj.__closure__ or (), strict=False):
            try:
                out.append((cell.cell_contents, f"{path} -> '{var}' (from the enclosing function)"))
            except ValueError:  # an empty cell
                continue
        out += [(v, f"{path} -> default {i}") for i, v in enumerate(obj.__defaults__ or ())]
        return out + [(v, f"{path} -> default '{k}'") for k, v in (obj.__kwdefaults__ or {}).items()]
    if isinstance(obj, type) and only_here(obj):
        out = []
        for key, value in vars(obj).items():
            if key.startswith("__") and key.endswith("__"):
                continue
            inner = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
            out.append((inner, f"{path}.{key}"))
        return out
    return []


def _kind(obj: Any) -> str:
    return "module" if isinstance(obj, types.ModuleType) else type(obj).__name__


def culprit(root: Any, name: str, copy: Callable[[Any], Any]) -> str:
    """``"path (type: why)"`` of the first object under ``root`` (called ``name``) that ``copy`` refuses, e.g.
    ``"make_inputs -> global 'lock' (lock: cannot pickle '_thread.lock' object)"``; "" when none is found."""
    seen: set[int] = set()
    stack = [(root, name)]
    while stack:
        obj, path = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        parts = _parts(obj, path)
        if parts:
            stack.extend(reversed(parts))
            continue
        try:
            copy(obj)
        except Exception as exc:
            return f"{path} ({_kind(obj)}: {exc})"
    return ""
