"""Attention work inside the worker: inputs, the fp32 reference check, and TFLOP/s against torch's SDPA.

An attention target's shape is ``(batch, seqlen_q, seqlen_k, heads, heads_kv)``; head_dim and causal are the
design's. q, o are ``(batch, seqlen_q, heads, head_dim)`` and k, v ``(batch, seqlen_k, heads_kv, head_dim)``
(flash-attn's layout), lse ``(batch, heads, seqlen_q)`` fp32. The reference is computed in fp32 on a few
(batch, head) slices, so a check costs one head's scores, not the whole problem's.
"""

from __future__ import annotations

import math
import time
from typing import Any

from ..compiling.compile import compiled, tensor_marks
from ..compiling.targets import Target

#: Unit roundoff of the output dtype; O may differ from the fp32 reference by a few of these (relative).
UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8}
#: O's relative error limit in roundings of its dtype, and the LSE's (relative to 1 + |lse|).
O_ROUNDINGS, LSE_TOLERANCE = 4, 1e-3


def flops(shape: tuple[int, ...], head_dim: int, causal: bool) -> float:
    """4 * b * h * s_q * s_k * d (the two GEMMs), halved when causal (as flash-attn counts)."""
    b, s_q, s_k, h, _ = shape
    return 4.0 * b * h * s_q * s_k * head_dim / (2 if causal else 1)


def operands(shape: tuple[int, ...], dtype: str, head_dim: int, seed: int) -> tuple[Any, ...]:
    """Fresh random q, k, v and NaN-poisoned o, lse on the GPU."""
    import torch

    b, s_q, s_k, h, h_kv = shape
    gen = torch.Generator(device="cuda").manual_seed(seed)
    tdt = getattr(torch, dtype)
    q = torch.randn((b, s_q, h, head_dim), device="cuda", dtype=tdt, generator=gen)
    k = torch.randn((b, s_k, h_kv, head_dim), device="cuda", dtype=tdt, generator=gen)
    v = torch.randn((b, s_k, h_kv, head_dim), device="cuda", dtype=tdt, generator=gen)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, s_q), float("nan"), device="cuda", dtype=torch.float32)
    return q, k, v, o, lse


def reference_slice(q: Any, k: Any, v: Any, causal: bool, scale: float, b: int, h: int) -> tuple[Any, Any]:
    """fp32 O ``(s_q, d)`` and LSE ``(s_q)`` of batch ``b``, head ``h``: K/V head ``h // (heads / heads_kv)``,
    the causal mask aligned bottom-right; a row that sees no key has O = 0 and LSE = -inf."""
    import torch

    h_kv = h // (q.shape[2] // k.shape[2])
    qf, kf, vf = q[b, :, h].float(), k[b, :, h_kv].float(), v[b, :, h_kv].float()
    scores = qf @ kf.T * scale
    if causal:
        s_q, s_k = qf.shape[0], kf.shape[0]
        rows = torch.arange(s_q, device=q.device)[:, None]
        cols = torch.arange(s_k, device=q.device)[None, :]
        scores = scores.masked_fill(cols > rows + s_k - s_q, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    return torch.exp(scores - lse[:, None]).nan_to_num(0.0) @ vf, lse


def check(q: Any, k: Any, v: Any, o: Any, lse: Any | None, causal: bool, scale: float) -> dict[str, Any]:
    """O's worst relative error (Frobenius, per slice) and LSE's worst offset over the first and last (batch,
    head), and the elements of O left unwritten (NaN) anywhere. ``lse`` None: a peer that returns none."""
    worst, lse_off = 0.0, 0.0
    for b, h in {(0, 0), (q.shape[0] - 1, q.shape[2] - 1)}:
        ref_o, ref_lse = reference_slice(q, k, v, causal, scale, b, h)
        got = o[b, :, h].float().nan_to_num(0.0)
        worst = max(worst, float((got - ref_o).norm() / ref_o.norm().clamp_min(1e-30)))
        if lse is not None:
            finite = ref_lse.isfinite()
            got_lse = lse[b, h].float()
            if not (got_lse[~finite] == float("-inf")).all():
                lse_off = math.inf
            if finite.any():
                off = ((got_lse[finite] - ref_lse[finite]).abs() / (1 + ref_lse[finite].abs())).max()
                lse_off = max(lse_off, float(off))
    return {"rel_error": worst, "lse_error": lse_off, "unwritten": int(o.isnan().sum().item())}


def wrong(result: dict[str, Any], dtype: str) -> str | None:
    """What is wrong with a checked result, in words, or None."""
    limit = O_ROUNDINGS * UNIT_ROUNDOFF[dtype]
    if result["unwritten"]:
        return f"{result['unwritten']} elements of O unwritten"
    if not result["rel_error"] <= limit:
        return f"O's relative error {result['rel_error']:.3g} is over {limit:.3g}"
    if not result["lse_error"] <= LSE_TOLERANCE:
        return f"the LSE is off by {result['lse_error']:.3g} (relative), over {LSE_TOLERANCE:g}"
    return None


def scale_of(t: Target) -> float:
    return 1.0 / math.sqrt(t.params["head_dim"])


def kernel_args(t: Target, tensors: tuple, stream: Any) -> tuple:
    """The compiled kernel's arguments for ``(q, k, v, o, lse)``: marked as its compile expects, the scale, the
    stream."""
    import cutlass

    from ..compiling.args import tensor_args

    return (*tensor_args((*tensors, cutlass.Float32(scale_of(t))), tensor_marks(t)), stream)


def run(t: Target, *, seed: int, sms: int, arch: str, stream: Any) -> dict[str, Any]:
    """Compile, run once on fresh inputs into poisoned outputs, compare with the fp32 reference."""
    import torch

    from .errors import CheckFailedError

    tensors = operands(t.shape, t.dtype, t.params["head_dim"], seed)
    started = time.perf_counter()
    fn = compiled(t, sms, arch)
    compile_s = time.perf_counter() - started
    fn(*kernel_args(t, tensors, stream))
    torch.cuda.synchronize()
    result = {**check(*tensors, t.params["causal"], scale_of(t)), "compile_seconds": compile_s,
              "shape": list(t.shape), "dtype": t.dtype}
    problem = wrong(result, t.dtype)
    if problem:
        raise CheckFailedError(f"kernel '{t.kernel}' {t.shape} {t.dtype}: {problem}; the attention is wrong")
    return result


def sdpa(q: Any, k: Any, v: Any, causal: bool, scale: float) -> Any:
    """torch's ``scaled_dot_product_attention`` (its own backend choice) on ``(batch, heads, seqlen, d)`` inputs,
    K/V heads repeated for grouped-query attention."""
    from torch.nn.functional import scaled_dot_product_attention

    return scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                        enable_gqa=k.shape[1] != q.shape[1])


def time_target(t: Target, *, sms: int, arch: str, stream: Any, repeats: int, iterations: int, warmup: int,
                baseline: str | None) -> dict[str, Any]:
    """Check once, then time the kernel and (``baseline='torch'``) torch's SDPA in turn, ``repeats`` rounds,
    rotating workspaces (cold L2). SDPA reads its own ``(batch, heads, seqlen, d)`` copies of the inputs."""
    import torch

    from .errors import CheckFailedError
    from .timing import Contestant, time_interleaved, workspace_count

    b, s_q, s_k, h, h_kv = t.shape
    d = t.params["head_dim"]
    nbytes = 2 * d * b * (2 * s_q * h + 2 * s_k * h_kv)
    count = workspace_count(nbytes, warmup, iterations)
    sets = [operands(t.shape, t.dtype, d, 1000 + w) for w in range(count)]
    fn = compiled(t, sms, arch)
    kernel_ws = [kernel_args(t, s, stream) for s in sets]
    fn(*kernel_ws[0])
    torch.cuda.synchronize()
    result = check(*sets[0], t.params["causal"], scale_of(t))
    problem = wrong(result, t.dtype)
    if problem:
        raise CheckFailedError(f"kernel '{t.kernel}' {t.shape} {t.dtype}: {problem}; not timed")
    contestants = [Contestant("kernel", fn, kernel_ws)]
    if baseline == "torch":
        causal, scale = t.params["causal"], scale_of(t)
        torch_sets = [tuple(x.transpose(1, 2).contiguous() for x in s[:3]) for s in sets]
        contestants.append(Contestant("torch", lambda q, k, v: sdpa(q, k, v, causal, scale), torch_sets))
    times = time_interleaved(contestants, repeats=repeats, iterations=iterations, warmup=warmup, stream=stream)
    return {**t.to_dict(), "flops": flops(t.shape, d, t.params["causal"]), "bytes": nbytes, "workspaces": count,
            "kernel_us": times["kernel"], "torch_us": times.get("torch", []), "graphs": False, **result,
            "mismatches": result["unwritten"]}


def workload(t: Target, seed: int, stream: Any) -> tuple[tuple, Any]:
    """A profile's arguments on fresh inputs with poisoned outputs, and the check run after the trace."""
    from .errors import CheckFailedError

    tensors = operands(t.shape, t.dtype, t.params["head_dim"], seed)

    def attention_check() -> dict[str, Any]:
        result = check(*tensors, t.params["causal"], scale_of(t))
        problem = wrong(result, t.dtype)
        if problem:
            raise CheckFailedError(f"kernel '{t.kernel}' with markers: {problem}; the profiled attention is wrong")
        return result

    return kernel_args(t, tensors, stream), attention_check
