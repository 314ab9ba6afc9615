"""A captured design on the GPU: run, check and time it with the user's own callables.

``run`` and ``bench`` send the GPU worker plain data (:func:`captured_spec`: the file's text as checked, or the host
function itself, knobs, edits, fake arguments) and the user's ``inputs``, ``reference`` and ``baseline`` functions:
by name when the worker can import them (a module, a file), else copied by value with the text of the notebook
cells they were typed into (:mod:`tslab.capture.portable`), so lambdas and functions written in a cell work too.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import inspect
import sys
from dataclasses import dataclass, field
from typing import Any

from .errors import InputsError, UnsupportedKernelError
from .guards import SETUP_TIMEOUT, require_gpu


@dataclass(frozen=True)
class SentFunction:
    """A function the GPU worker cannot import, copied by value (:func:`tslab.capture.portable.dumps`);
    ``name`` says which in messages."""

    name: str
    data: bytes = field(repr=False)

    def __str__(self) -> str:
        return self.name


def require_source(design: Any) -> Any:
    """The design's source: how the GPU worker builds the very kernel that was checked."""
    source = design.source
    if source is None:
        raise UnsupportedKernelError(
            f"captured kernel '{design.kernel}': run, bench and profile need the kernel captured from its host "
            "function, so that the GPU worker builds the very code that was checked: tslab.capture(host_function, "
            "...) or tslab.capture_file(path, host_function, ...) (tslab.capture_call records the TaskManagers "
            "built, not how to build the kernel again)")
    return source


def captured_spec(design: Any, arch: str, *, validate: bool = True) -> dict[str, Any]:
    """Everything the GPU worker needs to build exactly the checked kernel, as plain data: the file's text, or the
    host function (by name, or copied by value when it was typed into a notebook cell)."""
    from ..capture.source import arg_spec

    source = require_source(design)
    if source.arch != arch:
        raise UnsupportedKernelError(
            f"captured kernel '{design.kernel}': captured and checked for {source.arch}, but this GPU is {arch}; "
            f"capture it with arch={arch!r} to run it here")
    kwargs = {k: arg_spec(v) for k, v in source.kwargs.items()}
    if any(isinstance(v, dict) and ("tensor" in v or "stream" in v) for v in kwargs.values()):
        raise UnsupportedKernelError(f"captured kernel '{design.kernel}': pass its tensors and stream positionally "
                                     "to tslab.capture_file, so inputs() can return them in that order")
    where = {"file": str(source.file), "text": source.file_text} if source.file is not None else \
        {"file": None, "text": None, "host": _host(design.kernel, source.host_fn)}
    return {"label": design.kernel, **where, "function": source.function,
            "knob_edits": dict(source.knob_edits), "knobs": design.knobs(), "args": [arg_spec(a) for a in source.args],
            "kwargs": kwargs, "arch": arch, "index": source.index,
            "frontend": getattr(source.frontend, "__name__", None) if source.frontend is not None else None,
            "options": source.options, "edits": design._edits().to_dict(), "validate": validate}


def _host(label: str, host_fn: Any) -> bytes:
    """The host function of a kernel captured from a callable, as bytes the worker turns back into it."""
    from ..capture.portable import NotPortable, dumps

    try:
        return dumps(host_fn, f"host function {getattr(host_fn, '__qualname__', label)}")
    except NotPortable as exc:
        raise UnsupportedKernelError(f"captured kernel '{label}': its code cannot be sent to the GPU worker (a "
                                     f"process of its own): {exc.detail}; {exc.fix}, or capture the kernel from a "
                                     "file with tslab.capture_file(path, host_function, ...)") from None


def _what_it_is(fn: Any) -> str:
    name, qualname = getattr(fn, "__name__", ""), getattr(fn, "__qualname__", "")
    if name == "<lambda>":
        return "a lambda"
    if "<locals>" in qualname:
        return "a function defined inside another"
    module = getattr(fn, "__module__", None)
    return "a function of this notebook or script" if module == "__main__" else f"a function of module '{module}'"


def callable_ref(fn: Any, what: str) -> str | SentFunction:
    """``fn`` as the GPU worker finds it: ``"module:qualname"`` (or a ``"file.py:function"`` string as given) when
    it can import it, else a :class:`SentFunction` copied by value (a lambda, a function typed into a notebook
    cell or defined inside another); an :class:`InputsError` naming what it holds when it cannot be copied."""
    if isinstance(fn, (str, SentFunction)):
        if isinstance(fn, str) and ":" not in fn:
            raise InputsError(f"{what}={fn!r}: name a function as 'module:function' or 'path/to/file.py:function'")
        return fn
    if not callable(fn):
        raise InputsError(f"{what}={fn!r} is not callable; pass a function (or 'file.py:function')")
    named = _by_name(fn)
    if named is not None:
        return named
    from ..capture.portable import NotPortable, dumps

    name = getattr(fn, "__name__", None) or type(fn).__name__
    try:
        return SentFunction(name, dumps(fn, name))
    except NotPortable as exc:
        named = name if name.isidentifier() else "make_inputs"
        raise InputsError(f"{what}={name}, {_what_it_is(fn)}, cannot be sent to the GPU worker (a process of its "
                          f"own): {exc.detail}; {exc.fix}, or put the function in a .py file and pass "
                          f"{what}='file.py:{named}'") from None


def _by_name(fn: Any) -> str | None:
    """``"module:qualname"`` or ``"file.py:qualname"`` when a fresh process imports ``fn`` by that name."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if module in (None, "__main__") or "<" in qualname:
        return None
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:
        return None
    if obj is not fn:
        return None
    if _findable(module):
        return f"{module}:{qualname}"
    file = getattr(sys.modules[module], "__file__", None)  # a file imported by path (tslab.import_kernel_file)
    return f"{file}:{qualname}" if file is not None and "." not in qualname else None


def _findable(module: str) -> bool:
    """Whether a fresh process finds ``module`` by name (not only this process, which may have made it)."""
    top = module.partition(".")[0]
    if top in sys.builtin_module_names:
        return True
    try:
        return importlib.machinery.PathFinder.find_spec(top, sys.path) is not None
    except (ImportError, ValueError):
        return False


def output_indices(design: Any, outputs: Any) -> tuple[list[int], list[str]]:
    """The positions of the arguments named by ``outputs`` (names of host parameters or positions), and every
    argument's name."""
    source = design.source
    try:
        names = list(inspect.signature(source.host_fn).parameters)[:len(source.args)]
    except (TypeError, ValueError):
        names = []
    names += [f"arg{i}" for i in range(len(names), len(source.args))]
    picked = []
    for item in [outputs] if isinstance(outputs, (str, int)) else list(outputs or []):
        if isinstance(item, int) and not isinstance(item, bool) and 0 <= item < len(names):
            picked.append(item)
        elif item in names:
            picked.append(names.index(item))
        else:
            raise InputsError(f"outputs={outputs!r}: {item!r} is not an argument of '{design.kernel}' "
                              f"({', '.join(names)}); name the arguments the kernel writes")
    tensors = [i for i, a in enumerate(source.args) if type(a).__name__ == "_FakeTensor"]
    not_tensors = [names[i] for i in picked if i not in tensors]
    if not_tensors:
        raise InputsError(f"outputs={outputs!r}: {', '.join(not_tensors)} is not a tensor argument")
    return picked, names


def prepared(design: Any, validate: bool, inputs: Any, reference: Any, outputs: Any, what: str) -> dict[str, Any]:
    """The worker job's arguments for ``what`` (run, bench, profile) of a checked captured ``design`` on this
    machine's GPU (see :func:`job_for`)."""
    job = job_for(design, None, validate, inputs, reference, outputs, what)  # a wrong call, before a missing GPU
    info = require_gpu(f"{what} of captured kernel '{design.kernel}'")
    return {**job, "spec": captured_spec(design, info.arch, validate=validate)}


def job_for(design: Any, arch: str | None, validate: bool, inputs: Any, reference: Any, outputs: Any,
            what: str) -> dict[str, Any]:
    """The worker job's arguments for ``what`` of ``design`` compiled for ``arch``: its spec, the functions (by
    name or by value) and the outputs by position, everything refused here before anything runs (``arch=None``:
    no spec yet)."""
    if inputs is None:
        raise InputsError(
            f"captured kernel '{design.kernel}': {what} needs inputs=, a function returning the host function's "
            "arguments as CUDA tensors (e.g. inputs=make_inputs); add reference= to check the result and outputs= "
            "to name the arguments it writes")
    if reference is not None and not outputs:
        raise InputsError(f"captured kernel '{design.kernel}': reference= needs outputs=, the arguments the "
                          "kernel writes (their expected values are what reference returns, in that order)")
    require_source(design)
    picked, names = output_indices(design, outputs)
    refs = {"inputs": callable_ref(inputs, "inputs"),
            "reference": callable_ref(reference, "reference") if reference is not None else None}
    spec = captured_spec(design, arch, validate=validate) if arch is not None else None
    return {"spec": spec, **refs, "outputs": picked, "names": names}


def run_captured(kernel: Any, *, inputs: Any, reference: Any, outputs: Any, rtol: float | None,
                 atol: float | None, timeout: float) -> dict[str, Any]:
    """Run a captured kernel once in the GPU worker (see :meth:`CompiledKernel.run`)."""
    from .errors import CheckFailedError, KernelHungError, WorkerTimeoutError
    from .worker import KERNEL_PHASE, run_job

    job = prepared(kernel.verdict.design, kernel.target.validate, inputs, reference, outputs, "run")
    label = job["spec"]["label"]
    try:
        return run_job("tslab.gpu.captured_jobs:run_job", {**job, "rtol": rtol, "atol": atol, "timeout": timeout},
                       timeout=SETUP_TIMEOUT, what=f"run of captured kernel '{label}'", error=CheckFailedError)
    except WorkerTimeoutError as exc:
        if exc.phase != KERNEL_PHASE:
            raise
        raise KernelHungError.from_verdict(label, kernel.verdict, timeout) from None


def bench_captured(kernel: Any, *, inputs: Any = None, baseline: Any = None, reference: Any = None,
                   outputs: Any = None, repeats: int = 5, iterations: int = 20, warmup: int = 5,
                   rtol: float | None = None, atol: float | None = None, timeout: float = 600.0) -> Any:
    """Time a captured kernel against ``baseline`` on fresh ``inputs()`` per workspace (cold L2)."""
    from .bench import BenchResult
    from .errors import CheckFailedError
    from .worker import run_job

    sent = callable_ref(baseline, "baseline") if baseline is not None else None
    job = {**prepared(kernel.verdict.design, kernel.target.validate, inputs, reference, outputs, "bench"),
           "baseline": sent}
    row = run_job("tslab.gpu.captured_jobs:bench_job",
                  {**job, "repeats": repeats, "iterations": iterations, "warmup": warmup, "rtol": rtol, "atol": atol},
                  timeout=timeout, what=f"benchmark of captured kernel '{job['spec']['label']}'",
                  error=CheckFailedError)
    return BenchResult([row])
