"""A captured kernel on the GPU, inside the worker: the checked text of its file (or its host function), compiled
with its knobs and edits, called with the user's inputs, compared with the user's reference, timed against the
user's baseline.

The kernel is re-created from plain data (:func:`tslab.gpu.captured.captured_spec`): the file's text as it was
captured and checked (never the file as it is on disk now), or the host function as it was captured (a copy, with
the text of the notebook cells it was typed into, which CuTe DSL reads to compile it), its knob values, the
design's edits and the fake arguments it was traced with. It is compiled with those fakes, so the compiled kernel
is the one the verdict describes, and every input is held to them (dtype, static extents and strides, plain
values) before it runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import time
from pathlib import Path
from typing import Any

from .errors import InputsError
from .job_channel import enter_phase, report_partial
from .timing import Contestant, time_interleaved, workspace_count
from .worker import KERNEL_PHASE

_COMPILED: dict[str, Any] = {}
#: Element types a fake tensor names, as torch spells them.
_TORCH_NAMES = {"Float16": "float16", "BFloat16": "bfloat16", "Float32": "float32", "Float64": "float64",
                "Int8": "int8", "Uint8": "uint8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
                "Boolean": "bool", "Float8E4M3FN": "float8_e4m3fn", "Float8E5M2": "float8_e5m2"}


def _source(spec: dict[str, Any]) -> Any:
    """The :class:`~tslab.capture.source.KernelSource` of ``spec``, its host function from the checked text."""
    from ..capture import knobs as _knobs
    from ..capture.source import KernelSource, _frontend, arg_from_spec

    path = Path(spec["file"]) if spec["file"] is not None else None
    if path is not None:
        host_fn = getattr(_knobs.module_with_knobs(path, spec["text"], {}), spec["function"])
    else:
        host_fn = _arrived(spec["host"], f"captured kernel '{spec['label']}': its host function")
    return KernelSource(label=spec["label"], host_fn=host_fn,
                        args=tuple(arg_from_spec(a) for a in spec["args"]),
                        kwargs={k: arg_from_spec(v) for k, v in spec["kwargs"].items()}, arch=spec["arch"],
                        index=spec["index"], file=path, file_text=spec["text"], function=spec["function"],
                        knob_edits=spec["knob_edits"], frontend=_frontend(spec["frontend"], "captured kernel"),
                        options=spec["options"])


def compiled(spec: dict[str, Any], *, markers: tuple[Any, Any] | None = None) -> tuple[Any, float]:
    """The kernel compiled for the spec's arch with its knobs and edits (once per worker), and seconds it took.

    ``markers``: ``(stages, resources)`` to compile it with TS's IKET markers on (``None`` in either: all).
    """
    from ..capture.recorder import compile_call
    from ..core.construction import Edits, edits_at_construction, markers_at_construction

    key = json.dumps([spec, None if markers is None else [sorted(m) if m else None for m in markers]],
                     sort_keys=True, default=_digest)
    if key in _COMPILED:
        return _COMPILED[key], 0.0
    started = time.perf_counter()
    source = _source(spec)
    host_fn, kwargs = source._traced_callable()
    args = source._args_for(kwargs)
    options = source.options if markers is None else f"{source.options} iket".strip()
    marking = contextlib.nullcontext() if markers is None else markers_at_construction(
        *(None if m is None else frozenset(m) for m in markers))
    with edits_at_construction(Edits(**spec["edits"]), validate=spec.get("validate", True)), marking:
        fn = compile_call(host_fn, args, kwargs, spec["arch"], frontend=source.frontend, options=options)()
    _COMPILED[key] = fn
    return fn, time.perf_counter() - started


def _digest(value: Any) -> str:
    """A copied host function in a cache key: its digest."""
    return hashlib.sha1(value).hexdigest() if isinstance(value, bytes) else str(value)


def _arrived(data: bytes, what: str) -> Any:
    """A function copied by value (:func:`tslab.capture.portable.dumps`), its cells' text registered here."""
    from ..capture.portable import ArrivalError, loads

    try:
        return loads(data)
    except ArrivalError as exc:
        raise InputsError(f"{what} could not be re-created in the GPU worker: {exc}") from None


def load_callable(ref: Any) -> Any:
    """``"module:qualname"``, ``"path/to/file.py:function"`` or a function copied by value
    (:class:`~tslab.gpu.captured.SentFunction`) as the function it stands for."""
    from .captured import SentFunction

    if isinstance(ref, SentFunction):
        return _arrived(ref.data, ref.name)
    where, _, name = ref.rpartition(":")
    if where.endswith(".py"):
        from ..capture.api import import_kernel_file

        obj: Any = import_kernel_file(where)
    else:
        obj = importlib.import_module(where)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _loaded(ref: Any, what: str) -> Any:
    """The function ``ref`` stands for, or an :class:`InputsError` saying why the worker has none."""
    try:
        return load_callable(ref)
    except InputsError:
        raise
    except Exception as exc:
        raise InputsError(f"{what}={ref}: could not be loaded in the GPU worker: {type(exc).__name__}: {exc}") \
            from exc


def _call(ref: Any, what: str, *args: Any) -> Any:
    fn = _loaded(ref, what)
    try:
        return fn(*args)
    except Exception as exc:
        raise InputsError(f"{what}={ref}: raised {type(exc).__name__}: {exc}") from exc


def checked_inputs(spec: dict[str, Any], values: Any, ref: str) -> tuple:
    """``values`` (what ``inputs()`` returned) held to the arguments the kernel was captured and checked with."""
    captured = spec["args"]
    if not isinstance(values, (tuple, list)) or len(values) != len(captured):
        count = len(values) if isinstance(values, (tuple, list)) else type(values).__name__
        raise InputsError(f"inputs={ref}: returned {count} value(s); the host function was captured with "
                          f"{len(captured)} argument(s): return them in the same order (a tensor for each fake "
                          "tensor, None for a stream)")
    return tuple(_checked(i, want, got, ref) for i, (want, got) in enumerate(zip(captured, values, strict=True)))


def _checked(i: int, want: Any, got: Any, ref: str) -> Any:
    import torch

    where = f"inputs={ref}: argument {i}"
    if isinstance(want, dict) and "tensor" in want:
        if not isinstance(got, torch.Tensor) or not got.is_cuda:
            raise InputsError(f"{where} is {type(got).__name__}; the kernel was captured with a fake "
                              f"{want['tensor']} tensor here: return a CUDA torch tensor")
        dtype = _TORCH_NAMES.get(want["tensor"], want["tensor"].lower())
        shape = [s if w is None else w for s, w in zip(got.shape, want["shape"], strict=False)]
        stride = [s if w is None else w for s, w in zip(got.stride(), want["stride"], strict=False)]
        if str(got.dtype).removeprefix("torch.") != dtype or list(got.shape) != shape or \
                list(got.stride()) != stride:
            raise InputsError(f"{where} is {got.dtype} {tuple(got.shape)} strides {got.stride()}; the design was "
                              f"captured and checked with {want['tensor']} {tuple(want['shape'])} strides "
                              f"{tuple(want['stride'])} (None: any): capture it with fakes of these tensors, or "
                              "return tensors like the fakes")
        return got
    if isinstance(want, dict) and want.get("stream"):
        return got
    from ..capture.source import arg_from_spec

    if got != arg_from_spec(want):
        raise InputsError(f"{where} is {got!r}; the design was captured and checked with {arg_from_spec(want)!r}, "
                          "which the compiled kernel bakes in: capture it again with this value")
    return got


def kernel_args(spec: dict[str, Any], values: tuple) -> tuple:
    """CuTe DSL arguments for ``values``: tensors through DLPack (runtime extents marked), the current stream for a
    stream."""
    import torch
    from cuda.bindings import driver as cu
    from cutlass.cute.runtime import from_dlpack

    out = []
    for want, got in zip(spec["args"], values, strict=True):
        if isinstance(want, dict) and "tensor" in want:
            t = from_dlpack(got, assumed_align=16)
            for mode, extent in enumerate(want["shape"]):
                if extent is None:
                    t = t.mark_compact_shape_dynamic(mode=mode, stride_order=got.dim_order(), divisibility=1)
            out.append(t)
        elif isinstance(want, dict) and want.get("stream"):
            out.append(cu.CUstream(torch.cuda.current_stream().cuda_stream) if got is None else got)
        else:
            out.append(got)
    return tuple(out)


def _poison(t: Any) -> None:
    t.fill_(float("nan") if t.dtype.is_floating_point else -7)


def _unwritten(t: Any) -> int:
    return int((t.isnan() if t.dtype.is_floating_point else t == -7).sum().item())


def _compare(name: str, got: Any, want: Any, rtol: float | None, atol: float | None) -> dict[str, Any]:
    import torch

    want = want.to(device=got.device, dtype=got.dtype).reshape(got.shape)
    if got.dtype.is_floating_point:
        default_rtol, default_atol = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}.get(
            got.dtype, (1.3e-6, 1e-5))
        close = torch.isclose(got.double(), want.double(), rtol=rtol if rtol is not None else default_rtol,
                              atol=atol if atol is not None else default_atol)
        gap = (got.double() - want.double()).abs().nan_to_num(float("inf"))
        error = float(gap.max().item()) if got.numel() else 0.0
    else:
        close = got == want
        error = float((got.long() - want.long()).abs().max().item()) if got.numel() else 0.0
    return {"output": name, "elements": got.numel(), "mismatches": int((~close).sum().item()),
            "max_abs_error": error}


def _expected(reference: str, args: tuple, outputs: list[int], names: list[str]) -> list[Any]:
    """What ``reference(*args)`` says the outputs must hold, one tensor per output, copied before the run."""
    import torch

    got = _call(reference, "reference", *args)
    values = list(got) if isinstance(got, (tuple, list)) else [got]
    if len(values) != len(outputs) or not all(isinstance(v, torch.Tensor) for v in values):
        raise InputsError(f"reference={reference}: returned {len(values)} value(s) for {len(outputs)} output(s) "
                          f"({', '.join(names[i] for i in outputs)}): return one tensor per output, in that order")
    return [v.detach().clone() for v in values]


def _run_once(spec: dict[str, Any], fn: Any, args: tuple, *, reference: str | None, outputs: list[int],
              names: list[str], rtol: float | None, atol: float | None, timeout: float | None) -> dict[str, Any]:
    import torch

    expected = _expected(reference, args, outputs, names) if reference else None
    for i in outputs:
        _poison(args[i])
    if timeout is not None:
        enter_phase(KERNEL_PHASE, timeout)
    fn(*kernel_args(spec, args))
    torch.cuda.synchronize()
    return _report(args, outputs, names, expected, rtol, atol)


def _report(args: tuple, outputs: list[int], names: list[str], expected: list[Any] | None, rtol: float | None,
            atol: float | None) -> dict[str, Any]:
    """Per output: its elements, how many the kernel left unwritten and, against ``expected``, how many differ."""
    rows = []
    for k, i in enumerate(outputs):
        row = {"output": names[i], "elements": args[i].numel(), "unwritten": _unwritten(args[i])}
        if expected is not None:
            row.update(_compare(names[i], args[i], expected[k], rtol, atol))
        rows.append(row)
    return {"outputs": rows}


def _verdict_of(label: str, result: dict[str, Any], checked: bool) -> None:
    from .errors import CheckFailedError

    bad = [r for r in result["outputs"] if r.get("mismatches") or (checked and r["unwritten"])]
    if bad:
        parts = [f"{r['output']}: {r.get('mismatches', 0)} of {r['elements']} elements differ from the reference "
                 f"(max |error| {r.get('max_abs_error', 0):.3g}), {r['unwritten']} left unwritten" for r in bad]
        raise CheckFailedError(f"captured kernel '{label}': wrong result; " + "; ".join(parts)
                               + " (check the reference, then the kernel: tslab.check says what the design is)")


def _sms(label: str, arch: str) -> None:
    from .device import device
    from .errors import NoGpuError

    if device() is None:
        raise NoGpuError(f"captured kernel '{label}': compiled for {arch} and its functions arrived, but there is no "
                         "NVIDIA GPU or driver on this machine to run it")


def _checked_run(spec: dict[str, Any], inputs: str, reference: str | None, outputs: list[int], names: list[str],
                 rtol: float | None, atol: float | None, timeout: float | None) -> tuple[Any, float, tuple, dict]:
    """Compile (or reuse) the kernel, run it once on fresh ``inputs()`` and hold its outputs to ``reference``:
    the compiled function, its compile seconds, the inputs it ran on and the per-output report."""
    fn, compile_s = compiled(spec)  # what needs no GPU first: a machine without one gets as far as that
    for ref, what in ((inputs, "inputs"), (reference, "reference")):
        if ref is not None:
            _loaded(ref, what)
    _sms(spec["label"], spec["arch"])
    args = checked_inputs(spec, _call(inputs, "inputs"), inputs)
    result = _run_once(spec, fn, args, reference=reference, outputs=outputs, names=names, rtol=rtol, atol=atol,
                       timeout=timeout)
    _verdict_of(spec["label"], result, reference is not None)
    return fn, compile_s, args, result


def run_job(spec: dict[str, Any], inputs: str, reference: str | None, outputs: list[int], names: list[str],
            rtol: float | None = None, atol: float | None = None, timeout: float | None = None) -> dict[str, Any]:
    """Run the captured kernel once on ``inputs()``; compare its outputs with ``reference`` when given."""
    _, compile_s, _, result = _checked_run(spec, inputs, reference, outputs, names, rtol, atol, timeout)
    return {**result, "compile_seconds": compile_s, "checked": reference is not None}


def bench_job(spec: dict[str, Any], inputs: str, reference: str | None, baseline: str | None, outputs: list[int],
              names: list[str], repeats: int = 5, iterations: int = 20, warmup: int = 5, rtol: float | None = None,
              atol: float | None = None) -> dict[str, Any]:
    """Check once, then time the kernel (and ``baseline``) on fresh ``inputs()`` per workspace, interleaved."""
    import torch

    fn, compile_s, first, check = _checked_run(spec, inputs, reference, outputs, names, rtol, atol, None)
    nbytes = sum(a.numel() * a.element_size() for a in first if isinstance(a, torch.Tensor))
    count = workspace_count(max(nbytes, 1), warmup, iterations)
    sets = [first] + [checked_inputs(spec, _call(inputs, "inputs"), inputs) for _ in range(count - 1)]
    contestants = [Contestant("kernel", fn, [kernel_args(spec, s) for s in sets])]
    if baseline is not None:
        contestants.append(Contestant("baseline", _loaded(baseline, "baseline"), [tuple(s) for s in sets]))
    from cuda.bindings import driver as cu

    times = time_interleaved(contestants, repeats=repeats, iterations=iterations, warmup=warmup,
                             stream=cu.CUstream(torch.cuda.current_stream().cuda_stream))
    row = {"kernel": spec["label"], "shape": _shape(first), "dtype": _dtype(first), "params": spec["knobs"],
           "launch": {}, "bytes": nbytes, "workspaces": count, "kernel_us": times["kernel"],
           "torch_us": times.get("baseline", []), "graphs": False,
           "baseline": None if baseline is None else str(baseline),
           "rel_error": max((r.get("max_abs_error", 0.0) for r in check["outputs"]), default=0.0),
           "mismatches": sum(r.get("mismatches", 0) for r in check["outputs"]), "checked": reference is not None,
           "compile_seconds": compile_s}
    report_partial(row)
    return row


def _shape(values: tuple) -> list[int]:
    import torch

    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    return list(max(tensors, key=lambda t: t.numel()).shape) if tensors else []


def _dtype(values: tuple) -> str:
    import torch

    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    return str(tensors[0].dtype).removeprefix("torch.") if tensors else "-"


def profile_job(spec: dict[str, Any], inputs: str, reference: str | None, outputs: list[int], names: list[str], *,
                blocks: int, stages: list[str] | None, resources: list[str] | None, minimal: list[str],
                max_ts_per_warp: int, repeats: int, timeout: float, rtol: float | None = None,
                atol: float | None = None) -> dict[str, Any]:
    """The captured kernel under IKET (see :mod:`tslab.gpu.profile_jobs`): compiled plain, marked and with one
    marker, run on ``inputs()``; its outputs are held to ``reference`` after the session."""
    from .profile_jobs import profiled

    def prepare(rounds: int) -> tuple[dict[str, Any], tuple, Any]:
        kernels = {"plain": compiled(spec)[0], "marked": compiled(spec, markers=(stages, resources))[0]}
        if rounds:
            kernels["minimal"] = compiled(spec, markers=([minimal[1]], [minimal[0]]))[0]
        args = checked_inputs(spec, _call(inputs, "inputs"), inputs)
        before = [a.detach().clone() if hasattr(a, "detach") else a for a in args]  # the reference's inputs
        for i in outputs:
            _poison(args[i])

        def check() -> dict[str, Any]:
            expected = _expected(reference, tuple(before), outputs, names) if reference else None
            result = _report(args, outputs, names, expected, rtol, atol)
            _verdict_of(spec["label"], result, reference is not None)
            return result

        return kernels, kernel_args(spec, args), check

    return profiled(prepare, blocks=blocks, max_ts_per_warp=max_ts_per_warp, repeats=repeats, timeout=timeout)
