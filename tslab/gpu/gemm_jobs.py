"""GEMM work inside the worker: inputs, the fp32 reference check, and TFLOP/s against ``torch.mm``.

A GEMM target's shape is ``(M, N, K)``: ``a`` is M x K row-major, ``b`` is N x K (K-major), ``c = a @ b.T`` is
M x N row-major. The copies' jobs (:mod:`tslab.gpu.jobs`) hand GEMM targets to this module.
"""

from __future__ import annotations

import time
from typing import Any

from ..compiling.compile import compiled, tensor_marks
from ..compiling.targets import Target

#: H200 (SXM) dense fp16/bf16 tensor-core peak, TFLOP/s (datasheet).
H200_DENSE_PEAK_TFLOPS = 989.0


def flops(shape: tuple[int, ...]) -> int:
    m, n, k = shape
    return 2 * m * n * k


def operands(shape: tuple[int, ...], dtype: str, seed: int) -> tuple[Any, Any, Any]:
    """Fresh random ``a``, ``b`` and a NaN-poisoned ``c`` on the GPU."""
    import torch

    m, n, k = shape
    gen = torch.Generator(device="cuda").manual_seed(seed)
    tdt = getattr(torch, dtype)
    a = torch.randn((m, k), device="cuda", dtype=tdt, generator=gen)
    b = torch.randn((n, k), device="cuda", dtype=tdt, generator=gen)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
    return a, b, c


def check(a: Any, b: Any, c: Any) -> dict[str, float]:
    """Relative error of ``c`` against the fp32 product, torch.mm's own error, and elements left unwritten."""
    import torch

    ref = a.float() @ b.float().T
    norm = ref.norm().clamp_min(1e-30)
    theirs = float((torch.mm(a, b.T).float() - ref).norm() / norm)
    return {"rel_error": float((c.float() - ref).norm() / norm), "torch_rel_error": theirs,
            "unwritten": int(c.isnan().sum().item())}


#: Unit roundoff of the output dtype: rounding C to it alone costs up to this relative error.
UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8}


def tolerance(result: dict[str, float], dtype: str) -> float:
    """At most twice torch.mm's own error on the same inputs plus one rounding of C (small K can be exact)."""
    return 2.0 * result["torch_rel_error"] + UNIT_ROUNDOFF[dtype]


def _args(marks: Any, a: Any, b: Any, c: Any, stream: Any) -> tuple:
    """Kernel arguments for ``(a, b, c)``, marked as :func:`tslab.compiling.compile.tensor_marks` says."""
    from ..compiling.args import tensor_args

    return (*tensor_args((a, b, c), marks), stream)


def run(t: Target, *, seed: int, sms: int, arch: str, stream: Any) -> dict[str, Any]:
    """Compile, run once on fresh inputs into a poisoned output, compare with the fp32 reference."""
    import torch

    from .errors import CheckFailedError

    a, b, c = operands(t.shape, t.dtype, seed)
    started = time.perf_counter()
    fn = compiled(t, sms, arch)
    compile_s = time.perf_counter() - started
    fn(*_args(tensor_marks(t), a, b, c, stream))
    torch.cuda.synchronize()
    result = {**check(a, b, c), "compile_seconds": compile_s, "shape": list(t.shape), "dtype": t.dtype}
    if result["unwritten"] or not result["rel_error"] <= tolerance(result, t.dtype):
        raise CheckFailedError(
            f"kernel '{t.kernel}' {t.shape} {t.dtype}: relative error {result['rel_error']:.3g} "
            f"(torch.mm {result['torch_rel_error']:.3g}), {result['unwritten']} elements unwritten; the GEMM is wrong"
        )
    return result


def time_target(t: Target, *, sms: int, arch: str, stream: Any, repeats: int, iterations: int, warmup: int,
                baseline: str | None, peers: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check once, then time the kernel and ``torch.mm`` in turn, ``repeats`` times, rotating workspaces.

    ``peers``: other GEMMs ``fn(a, b, c)`` (``c = a @ b.T``) timed in the same rounds on the same workspaces,
    each checked first (``peer_us`` and ``peer_errors`` by name; a wrong one raises)."""
    import torch

    from .timing import Contestant, time_interleaved, workspace_count

    m, n, k = t.shape
    nbytes = 2 * (m * k + n * k + m * n)
    count = workspace_count(nbytes, warmup, iterations)
    sets = [operands(t.shape, t.dtype, 1000 + w) for w in range(count)]
    fn = compiled(t, sms, arch)
    marks = tensor_marks(t)
    kernel_ws = [_args(marks, a, b, c, stream) for a, b, c in sets]
    fn(*kernel_ws[0])
    torch.cuda.synchronize()
    result = check(*sets[0])
    contestants = [Contestant("kernel", fn, kernel_ws)]
    if baseline == "torch":
        contestants.append(Contestant("torch", lambda a, b, c: torch.mm(a, b.T, out=c), sets))
    peer_errors = {}
    for name, peer in (peers or {}).items():
        a, b, c = sets[0]
        c.fill_(float("nan"))
        peer(a, b, c)
        torch.cuda.synchronize()
        error = peer_errors[name] = check(a, b, c)
        if error["unwritten"] or not error["rel_error"] <= tolerance(error, t.dtype):
            raise ValueError(f"peer {name} on {t.shape} {t.dtype}: relative error {error['rel_error']:.3g}, "
                             f"{error['unwritten']} elements unwritten")
        contestants.append(Contestant(f"peer:{name}", peer, sets))
    times = time_interleaved(contestants, repeats=repeats, iterations=iterations, warmup=warmup, stream=stream)
    return {**t.to_dict(), "flops": flops(t.shape), "bytes": nbytes, "workspaces": count,
            "kernel_us": times["kernel"], "torch_us": times.get("torch", []), "graphs": False, **result,
            "mismatches": result["unwritten"],
            "peer_us": {name: times[f"peer:{name}"] for name in peer_errors}, "peer_errors": peer_errors}
