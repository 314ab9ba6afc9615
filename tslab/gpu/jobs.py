"""The work done inside the worker process for catalog kernels: run and check against torch, time. Plain data in and out
(compiling and exporting are :mod:`tslab.compiling.compile`'s jobs)."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

from ..compiling.compile import compiled, tensor_marks
from ..compiling.targets import Target
from .job_channel import enter_phase, report_partial
from .worker import KERNEL_PHASE


def _target(data: dict[str, Any]) -> Target:
    return Target.from_dict(data)


# -- on the GPU -------------------------------------------------------------------------------------------


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def _random(shape: tuple[int, ...], dtype: str, seed: int) -> Any:
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    tdt = _torch_dtype(dtype)
    if tdt.is_floating_point:
        return torch.randn(shape, device="cuda", dtype=tdt, generator=gen)
    info = torch.iinfo(tdt)
    return torch.randint(info.min, info.max, shape, device="cuda", dtype=tdt, generator=gen)


def _poison(t: Any) -> None:
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    else:
        t.fill_(-7)


def _sms() -> int:
    from .device import device

    info = device()
    if info is None:
        from .errors import NoGpuError

        raise NoGpuError(
            "no NVIDIA GPU or driver on this machine; compile(design, arch='sm_90a') works without one"
        )
    return info.sm_count


def _compiled(t: Target) -> Any:
    from .device import device

    info = device()
    return compiled(t, info.sm_count, info.arch)


def _stream() -> Any:
    import torch
    from cuda.bindings import driver as cu

    return cu.CUstream(torch.cuda.current_stream().cuda_stream)


def check_output(src: Any, dst: Any) -> dict[str, float]:
    """Relative error of a copy against its input (float64), and the count of elements left unwritten."""
    ref = src.double()
    out = dst.double()
    bad = (
        int((~(out == ref)).sum().item())
        if not dst.dtype.is_floating_point
        else int(out.isnan().sum().item())
    )
    err = float((out - ref).norm() / ref.norm().clamp_min(1e-30))
    return {"rel_error": err, "mismatches": bad}


def run_job(target: dict[str, Any], seed: int = 0, timeout: float | None = None) -> dict[str, Any]:
    """Compile on the GPU, copy fresh random data into a poisoned output, compare with the input.

    ``timeout``: seconds the kernel may run once launched (the worker's parent stops it after that).
    """
    import torch

    from ..compiling.args import tensor_args
    from .errors import CheckFailedError

    _sms()
    t = _target(target)
    if t.rules.package == "gemm":
        return _gemm_run(t, seed)
    if t.rules.package == "attention":
        return _attention_run(t, seed)
    src = _random(t.shape, t.dtype, seed)
    dst = torch.empty_like(src)
    _poison(dst)
    stream = _stream()
    started = time.perf_counter()
    fn = _compiled(t)
    compile_s = time.perf_counter() - started
    if timeout is not None:
        enter_phase(KERNEL_PHASE, timeout)
    fn(*tensor_args((src, dst), tensor_marks(t)), stream)
    torch.cuda.synchronize()
    result = {
        **check_output(src, dst),
        "compile_seconds": compile_s,
        "shape": list(t.shape),
        "dtype": t.dtype,
    }
    if result["rel_error"] > 0 or result["mismatches"]:
        raise CheckFailedError(
            f"kernel '{t.kernel}' {t.shape} {t.dtype}: relative error {result['rel_error']:.3g}, "
            f"{result['mismatches']} elements differ from the input; the copy is wrong "
            "(run tslab.check first)"
        )
    return result


def _time_target(
    t: Target, *, repeats: int, iterations: int, warmup: int, use_cuda_graphs: bool, baseline: str | None
) -> dict[str, Any]:
    """Check once, then time the kernel and torch's copy in turn, ``repeats`` times, rotating workspaces."""
    import torch

    from ..compiling.args import tensor_args
    from .timing import Contestant, time_interleaved, workspace_count

    count = workspace_count(t.nbytes, warmup, iterations)
    pairs = []
    for w in range(count):
        src = _random(t.shape, t.dtype, 1000 + w)
        dst = torch.empty_like(src)
        _poison(dst)
        pairs.append((src, dst))
    stream = _stream()
    fn = _compiled(t)
    marks = tensor_marks(t)
    kernel_ws = [(*tensor_args((s, d), marks), stream) for s, d in pairs]
    fn(*kernel_ws[0])
    torch.cuda.synchronize()
    check = check_output(*pairs[0])
    contestants = [Contestant("kernel", fn, kernel_ws, use_cuda_graphs=use_cuda_graphs)]
    if baseline == "torch":
        contestants.append(Contestant("torch", lambda s, d: d.copy_(s), pairs))
    times = time_interleaved(contestants, repeats=repeats, iterations=iterations, warmup=warmup, stream=stream)
    return {
        **t.to_dict(),
        "bytes": t.nbytes,
        "workspaces": count,
        "kernel_us": times["kernel"],
        "torch_us": times.get("torch", []), "graphs": use_cuda_graphs,
        **check,
    }


def bench_job(
    targets: list[dict[str, Any]],
    *,
    repeats: int = 5,
    iterations: int = 20,
    warmup: int = 5,
    use_cuda_graphs: bool = False,
    baseline: str | None = "torch",
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Time each target and torch's copy of the same tensors, interleaved, ``repeats`` times each."""
    import torch

    _sms()
    rows = []
    for i, data in enumerate(targets):
        t = _target(data)
        if t.rules.package in ("gemm", "attention"):
            timer = _gemm_time if t.rules.package == "gemm" else _attention_time
            rows.append(timer(t, repeats=repeats, iterations=iterations, warmup=warmup, baseline=baseline))
            report_partial(rows[-1])
            continue
        # CUDA graphs capture only on a stream other than the legacy default one.
        side = torch.cuda.stream(torch.cuda.Stream()) if use_cuda_graphs else contextlib.nullcontext()
        with side:
            rows.append(
                _time_target(
                    t,
                    repeats=repeats,
                    iterations=iterations,
                    warmup=warmup,
                    use_cuda_graphs=use_cuda_graphs,
                    baseline=baseline,
                )
            )
        report_partial(rows[-1])  # kept by the parent if a later target kills the worker
        torch.cuda.empty_cache()
        if progress:
            best = t.nbytes / min(rows[-1]["kernel_us"]) / 1e3
            print(
                f"[{i + 1}/{len(targets)}] {t.kernel} {t.shape} {t.dtype}: {best:.0f} GB/s best",
                file=sys.__stdout__,
                flush=True,
            )
    return rows


def _gemm_run(t: Target, seed: int) -> dict[str, Any]:
    from . import gemm_jobs
    from .device import device

    info = device()
    return gemm_jobs.run(t, seed=seed, sms=info.sm_count, arch=info.arch, stream=_stream())


def _gemm_time(t: Target, **kwargs: Any) -> dict[str, Any]:
    from . import gemm_jobs
    from .device import device

    info = device()
    return gemm_jobs.time_target(t, sms=info.sm_count, arch=info.arch, stream=_stream(), **kwargs)


def _attention_run(t: Target, seed: int) -> dict[str, Any]:
    from . import attention_jobs
    from .device import device

    info = device()
    return attention_jobs.run(t, seed=seed, sms=info.sm_count, arch=info.arch, stream=_stream())


def _attention_time(t: Target, **kwargs: Any) -> dict[str, Any]:
    from . import attention_jobs
    from .device import device

    info = device()
    return attention_jobs.time_target(t, sms=info.sm_count, arch=info.arch, stream=_stream(), **kwargs)
