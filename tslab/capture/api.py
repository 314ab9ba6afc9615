"""Open an existing TS kernel in tslab: capture its design from a compile trace on the CPU.

``capture(host_fn, *args)`` runs ``cute.compile(host_fn, *args, options="--gpu-arch <arch>")`` in a worker
process with its output captured (:mod:`tslab.capture.worker`). While the trace runs, ``TaskManager.__init__``
is wrapped (in the worker only, and restored afterwards) to copy what each TaskManager is given: tasks,
dependency graph, allocators and capacities. The copies come back without their DSL values (see
:mod:`tslab.capture.snapshot`) and become a :class:`~tslab.core.design.Design` that :func:`tslab.check` verifies
with TS's own TaskManager and checker. A crash of the trace (an MLIR abort) ends the worker, never the caller.
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.construction import Edits
from ..core.design import Design
from ..errors import DesignError, TslabError
from .kernel_files import import_kernel_file, kernel_module_name  # noqa: F401  (named here too)
from .source import KernelSource, _frontend, _import_callable, arg_from_spec, remember
from .tracing import (  # noqa: F401  (the capture's public result types live in tracing; named here too)
    CapturedManager,
    CaptureError,
    CaptureResult,
    _check_arch,
    _refuse_traced_resources,
    _traced,
    trace_call,
)


def capture(host_fn: Callable[..., Any], *args: Any, arch: str = "sm_90a", timeout: float = 600.0,
            name: str | None = None, frontend: Any = None, options: str = "", **kwargs: Any) -> Design:
    """The design of the first TaskManager that tracing ``host_fn(*args, **kwargs)`` for ``arch`` builds.

    ``args`` are what ``cute.compile`` takes: fake tensors and streams from :mod:`tslab.fake` work without
    a GPU. ``frontend`` and ``options`` are passed on as ``cute.compile[frontend](..., options=...)``, as the
    kernel's authors compile it (e.g. ``frontend=cute.FrontendNext``). Raises :class:`CaptureError` when the
    trace fails or builds no TaskManager; when TS itself rejects a TaskManager during the trace, the design is
    still returned so that ``tslab.check`` can show why. Edits of the design re-trace the kernel.
    """
    return capture_all(host_fn, *args, arch=arch, timeout=timeout, name=name, frontend=frontend, options=options,
                       **kwargs).design


def capture_all(host_fn: Callable[..., Any], *args: Any, arch: str = "sm_90a", timeout: float = 600.0,
                name: str | None = None, frontend: Any = None, options: str = "", _edits: Edits | None = None,
                _retrace: bool = False, _file: tuple[Path, str, str] | None = None, **kwargs: Any) -> CaptureResult:
    """Every TaskManager built while tracing ``host_fn(*args, **kwargs)`` for ``arch``, as designs."""
    if not callable(host_fn):
        raise TslabError(f"capture: host_fn={host_fn!r} is not callable; pass the @cute.jit host function")
    label = name or _label(host_fn)
    _check_arguments(host_fn, label, args, kwargs)
    result = trace_call(host_fn, args, kwargs, arch=arch, timeout=timeout, label=label, frontend=frontend,
                        options=options, edits=_edits)
    if _retrace:
        return result
    file, text, function = _file if _file is not None else (None, None, "")
    source = KernelSource(label=label, host_fn=host_fn, args=args, kwargs=kwargs, arch=arch, file=file,
                          file_text=text, function=function, frontend=frontend, options=options, timeout=timeout)
    remember(source.cache_key(Edits()), result)
    return _with_sources(result, source)


def _check_arguments(host_fn: Callable[..., Any], label: str, args: tuple, kwargs: dict) -> None:
    """Refuse arguments the host function's signature cannot take, before tracing (the DSL's own message then
    points into tslab's tracing code, not at the call)."""
    try:
        signature = inspect.signature(host_fn)
    except (TypeError, ValueError):  # no Python signature to hold the call to: the trace will say
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        given = ", ".join([*(_short(a) for a in args), *(f"{k}={_short(v)}" for k, v in kwargs.items())]) or "nothing"
        raise TslabError(f"capture of '{label}': the arguments do not fit {label}{signature}: {exc} (given: "
                         f"{given}); pass one value per parameter, e.g. fake.tensor('float16', (rows, cols)) for a "
                         "cute.Tensor") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def capture_call(fn: Callable[..., Any], *args: Any, arch: str = "sm_90a", timeout: float = 600.0,
                 name: str | None = None, **kwargs: Any) -> CaptureResult:
    """Every TaskManager built while ``fn(*args, **kwargs)`` runs: a library's own "compile this kernel"
    function, an autotuner, a test. ``fn`` runs in the worker process with ``CUTE_DSL_ARCH=arch`` set.

    The designs check and replay like any other; edits of them are checked on the captured objects (a
    callable cannot be re-traced with knobs: capture its host function for that).
    """
    if not callable(fn):
        raise TslabError(f"capture_call: fn={fn!r} is not callable; pass the function that compiles the kernel")
    _check_arch(arch)
    label = name or _label(fn)
    return _traced(_ArchCall(fn, args, kwargs, arch), label, arch, timeout, None, hint="")


@dataclass(frozen=True)
class _ArchCall:
    """``fn(*args, **kwargs)`` with ``CUTE_DSL_ARCH=arch`` set (in the worker process it runs in)."""

    fn: Callable[..., Any]
    args: tuple
    kwargs: dict
    arch: str

    def __call__(self) -> Any:
        os.environ["CUTE_DSL_ARCH"] = self.arch
        return self.fn(*self.args, **self.kwargs)


def _label(fn: Any) -> str:
    """A function's name, or the class name of a kernel object whose ``__call__`` is the host function."""
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__


def _with_sources(result: CaptureResult, source: KernelSource) -> CaptureResult:
    """The result with each manager's public design re-traceable through ``source``."""
    for i, manager in enumerate(result.managers):
        manager.traced = manager.design
        manager.design = Design.captured(replace(source, index=i, label=manager.design.kernel))
    return result


def capture_file(path: str | os.PathLike[str], function: str, *args: Any, arch: str = "sm_90a",
                 timeout: float = 600.0, **kwargs: Any) -> Design:
    """Import the kernel file at ``path`` and capture the design of its host function ``function``."""
    return capture_file_all(path, function, *args, arch=arch, timeout=timeout, **kwargs).design


def capture_file_all(path: str | os.PathLike[str], function: str, *args: Any, arch: str = "sm_90a",
                     timeout: float = 600.0, **kwargs: Any) -> CaptureResult:
    """Like :func:`capture_file`, returning every TaskManager's design (:class:`CaptureResult`)."""
    module = import_kernel_file(path)
    host_fn = getattr(module, function, None)
    if host_fn is None:
        found = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                       and getattr(v, "__module__", None) == module.__name__)
        from ..errors import did_you_mean

        hint = did_you_mean(function, found)
        raise TslabError(f"kernel file '{path}': has no function '{function}'; {hint}")
    file = Path(path).expanduser().resolve()
    return capture_all(host_fn, *args, arch=arch, timeout=timeout, name=function,
                       _file=(file, file.read_text(), function), **kwargs)


def load_captured(data: dict[str, Any]) -> Any:
    """Re-open a captured design from its JSON: capture the recorded file again, then re-apply knobs and edits.

    Refuses a file whose content changed since the design was saved (its knobs and edits may no longer mean
    the same thing).
    """
    src = data.get("source")
    where = "captured design JSON"
    if not isinstance(src, dict) or "arch" not in src:
        raise DesignError("input", where, "'source' does not say how the kernel was captured",
                          "save the design with Design.to_json() after tslab.capture_file(...)")
    args = tuple(arg_from_spec(a, f"argument {i}") for i, a in enumerate(src.get("args", [])))
    kwargs = {k: arg_from_spec(v, f"argument {k!r}") for k, v in (src.get("kwargs") or {}).items()}
    index = int(src.get("index", 0))
    kwargs.update(frontend=_frontend(src.get("frontend"), where), options=src.get("options", ""))
    if "file" in src:
        path = Path(src["file"]).expanduser()
        if not path.is_file():
            raise DesignError("input", f"{where} source file '{src['file']}'", "does not exist here",
                              "run from the folder the design was saved in, or fix the path in the JSON")
        digest = hashlib.sha1(path.read_text().encode()).hexdigest()
        if digest != src.get("sha1"):
            raise DesignError("input", f"{where} source file '{src['file']}'",
                              "changed since the design was saved (its content hash differs)",
                              "capture the kernel again with tslab.capture_file(...) and redo the edits")
        result = capture_file_all(path, src["function"], *args, arch=src["arch"], **kwargs)
    else:
        host_fn = _import_callable(src.get("callable", ""), where)
        result = capture_all(host_fn, *args, arch=src["arch"], **kwargs)
    if index >= len(result.managers):
        raise DesignError("input", where, f"index={index} but the kernel builds {len(result.managers)} TaskManager(s)",
                          "capture the kernel again")
    design = result.managers[index].design
    if data.get("knobs"):
        design = design.with_knobs(**data["knobs"])
    for resource, fields in (data.get("pipelines") or {}).items():
        design = design.with_pipeline(resource, **fields)
    for task, steps in (data.get("schedules") or {}).items():
        design = design.with_schedule(task, steps)
    if data.get("alias_groups") is not None:
        design = design.with_alias_groups(data["alias_groups"])
    return design
