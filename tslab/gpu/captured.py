"""A captured design on the GPU: run, check and time it with the user's own callables.

``run`` and ``bench`` send the GPU worker plain data (:func:`captured_spec`: the file's text as checked, knobs, edits,
fake arguments) and the names of the user's ``inputs``, ``reference`` and ``baseline`` functions, which the worker
imports: they must live in a file or an importable module, not in a notebook cell.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import inspect
import sys
from typing import Any

from .errors import InputsError, UnsupportedKernelError
from .guards import SETUP_TIMEOUT, require_gpu


def require_file(design: Any) -> Any:
    """The design's source, when the kernel was captured from a file (the GPU worker builds it from the text)."""
    source = design.source
    if source is None or source.file is None or source.file_text is None:
        raise UnsupportedKernelError(
            f"captured kernel '{design.kernel}': run, bench and profile need the kernel captured from its file, so "
            "that the GPU worker builds the very code that was checked: tslab.capture_file(path, host_function, "
            "...) (a host function defined in a notebook cell: move it into a .py file beside the notebook)")
    return source


def captured_spec(design: Any, arch: str, *, validate: bool = True) -> dict[str, Any]:
    """Everything the GPU worker needs to build exactly the checked kernel, as plain data."""
    from ..capture.source import arg_spec

    source = require_file(design)
    if source.arch != arch:
        raise UnsupportedKernelError(
            f"captured kernel '{design.kernel}': captured and checked for {source.arch}, but this GPU is {arch}; "
            f"capture it with arch={arch!r} to run it here")
    kwargs = {k: arg_spec(v) for k, v in source.kwargs.items()}
    if any(isinstance(v, dict) and ("tensor" in v or "stream" in v) for v in kwargs.values()):
        raise UnsupportedKernelError(f"captured kernel '{design.kernel}': pass its tensors and stream positionally "
                                     "to tslab.capture_file, so inputs() can return them in that order")
    return {"label": design.kernel, "file": str(source.file), "text": source.file_text, "function": source.function,
            "knob_edits": dict(source.knob_edits), "knobs": design.knobs(), "args": [arg_spec(a) for a in source.args],
            "kwargs": kwargs, "arch": arch, "index": source.index,
            "frontend": getattr(source.frontend, "__name__", None) if source.frontend is not None else None,
            "options": source.options, "edits": design._edits().to_dict(), "validate": validate}


def callable_ref(fn: Any, what: str) -> str:
    """``fn`` as ``"module:qualname"`` (or a ``"file.py:function"`` string as given), refusing what the GPU
    worker cannot import: lambdas, functions defined inside functions or in a notebook cell."""
    if isinstance(fn, str):
        if ":" not in fn:
            raise InputsError(f"{what}={fn!r}: name a function as 'module:function' or 'path/to/file.py:function'")
        return fn
    if not callable(fn):
        raise InputsError(f"{what}={fn!r} is not callable; pass a function (or 'file.py:function')")
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    name = getattr(fn, "__name__", repr(fn))
    if module in (None, "__main__") or "<" in qualname:
        where = "a lambda" if name == "<lambda>" else "defined inside a function" if "<locals>" in qualname \
            else "defined in this notebook (or script)"
        raise InputsError(
            f"{what}={name} is {where}; the GPU worker runs in its own process and imports the function by name, "
            f"so define it at module level in a .py file beside the notebook (e.g. kernels/my_inputs.py) and import "
            f"it from there, or pass {what}='kernels/my_inputs.py:{name if name != '<lambda>' else 'make_inputs'}'")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:
        obj = None
    if obj is not fn:
        raise InputsError(f"{what}={name}: '{module}:{qualname}' does not import as this function; define it at "
                          "module level of an importable file")
    if _findable(module):
        return f"{module}:{qualname}"
    file = getattr(sys.modules[module], "__file__", None)  # a file imported by path (tslab.import_kernel_file)
    if file is None or "." in qualname:
        raise InputsError(f"{what}={name}: its module '{module}' cannot be imported by name in another process; "
                          f"pass {what}='path/to/file.py:{name}'")
    return f"{file}:{qualname}"


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
    """The worker job's arguments for ``what`` (run, bench, profile) of a checked captured ``design``: its spec,
    the functions by name and the outputs by position, everything refused here before anything runs."""
    if inputs is None:
        raise InputsError(
            f"captured kernel '{design.kernel}': {what} needs inputs=, a function returning the host function's "
            "arguments as CUDA tensors (e.g. inputs=make_inputs, defined in a .py file); add reference= to check "
            "the result and outputs= to name the arguments it writes")
    if reference is not None and not outputs:
        raise InputsError(f"captured kernel '{design.kernel}': reference= needs outputs=, the arguments the "
                          "kernel writes (their expected values are what reference returns, in that order)")
    require_file(design)
    picked, names = output_indices(design, outputs)
    refs = {"inputs": callable_ref(inputs, "inputs"),
            "reference": callable_ref(reference, "reference") if reference is not None else None}
    info = require_gpu(f"{what} of captured kernel '{design.kernel}'")
    return {"spec": captured_spec(design, info.arch, validate=validate), **refs,
            "outputs": picked, "names": names}


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

    job = prepared(kernel.verdict.design, kernel.target.validate, inputs, reference, outputs, "bench")
    job["baseline"] = callable_ref(baseline, "baseline") if baseline is not None else None
    row = run_job("tslab.gpu.captured_jobs:bench_job",
                  {**job, "repeats": repeats, "iterations": iterations, "warmup": warmup, "rtol": rtol, "atol": atol},
                  timeout=timeout, what=f"benchmark of captured kernel '{job['spec']['label']}'",
                  error=CheckFailedError)
    return BenchResult([row])
