"""The profile job, inside a fresh worker: a design's kernel compiled with TS's markers, run under IKET.

The IKET session starts before anything in the worker initialises CUDA. The kernel is compiled three ways:
plain, with TS's per-step markers (``iket`` in the compile options, the markers switched on at TaskManager
construction), and with one marker only. The marked kernel runs once on fresh inputs into a poisoned output;
the output is checked after the session (torch's cuBLAS must not run under IKET). Then, when one block is traced
(IKET records every launch), the one-marker and marked kernels run in turn ``repeats`` times: the traced block's
lifetime on IKET's clock with every step marked over its lifetime with one marker is the markers' cost, the
comparison IKET's guide recommends (CUDA events around a launch under IKET also time its host-side work). The
plain kernel is timed with CUDA events beside them. What comes back is plain data: each range of the first
launch as ``(block, warp, sm, name, start, end)`` and each warp's lifetime, for the first ``blocks`` blocks.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from ..compiling.compile import compile_target
from ..compiling.targets import Target
from .job_channel import enter_phase
from .worker import KERNEL_PHASE


def profile_job(target: dict[str, Any], *, blocks: int, stages: list[str] | None, resources: list[str] | None,
                minimal: list[str], max_ts_per_warp: int, repeats: int, seed: int, timeout: float) -> dict[str, Any]:
    """``minimal``: ``[resource, stage]`` of the one step the one-marker kernel marks."""
    t = Target.from_dict(target)

    def prepare(rounds: int) -> tuple[dict[str, Any], tuple, Any]:
        return (_catalog_kernels(t, stages, resources, minimal, rounds), *_workload(t, seed))

    return profiled(prepare, blocks=blocks, max_ts_per_warp=max_ts_per_warp, repeats=repeats, timeout=timeout)


def profiled(prepare: Any, *, blocks: int, max_ts_per_warp: int, repeats: int, timeout: float) -> dict[str, Any]:
    """One profile under IKET: ``prepare(rounds)`` returns the kernels (``plain``, ``marked`` and, when ``rounds``,
    ``minimal``), their arguments and the check of the result, run after the session."""
    from .iket_session import Session

    session = Session(max_ts_per_warp=max_ts_per_warp, one_block=blocks == 1)
    rounds = repeats if blocks == 1 else 0
    try:
        with tempfile.TemporaryDirectory() as scratch:
            with session:
                kernels, args, check = prepare(rounds)
                out = _launches(kernels, args, rounds, timeout)
            out["check"] = check()  # after the session: torch's cuBLAS must not run under IKET (it aborts)
            data = session.save(Path(scratch) / "trace.json")
    finally:
        session.close()
    out.update(_decoded(data, blocks))
    spans = _block_spans(data)
    out["marked_spans_us"] = [s for s, kind in zip(spans, out["launched"], strict=False) if kind == "marked"]
    out["minimal_spans_us"] = [s for s, kind in zip(spans, out["launched"], strict=False) if kind == "minimal"]
    out["buffer_bytes"] = session.buffer_bytes
    out["raw_sample"] = _sample(data)
    return out


def _sample(data: dict[str, Any]) -> dict[str, Any]:
    """The shape of IKET's decoded trace, for a report that it changed: its keys and a few entries."""
    launch = (data.get("launches") or [{}])[0]
    return {"keys": sorted(data), "launch_keys": sorted(launch), "launches": len(data.get("launches") or []),
            "ranges_per_launch": [len(x.get("ranges") or []) for x in data.get("launches") or []][:20],
            "locations": (data.get("locationTable") or [])[:12], "ranges": (launch.get("ranges") or [])[:12],
            "lifetimes": (launch.get("warpLifetimes") or [])[:12],
            "launch": {k: v for k, v in launch.items() if not isinstance(v, list)}}


def _catalog_kernels(t: Target, stages: list[str] | None, resources: list[str] | None, minimal: list[str],
                     rounds: int) -> dict[str, Any]:
    """The target compiled plain, with every step (of ``stages``/``resources``) marked and, for ``rounds``, with
    the ``minimal`` step alone marked."""
    from ..core.construction import markers_at_construction
    from .device import device

    info = device()

    def build(options: str, stages: Any = None, resources: Any = None, marked: bool = True) -> Any:
        if not marked:
            return compile_target(t, info.sm_count, options)
        with markers_at_construction(None if stages is None else frozenset(stages),
                                     None if resources is None else frozenset(resources)):
            return compile_target(t, info.sm_count, f"{options} iket")

    base = f"--gpu-arch {info.arch}"
    kernels = {"plain": build(base, marked=False), "marked": build(base, stages, resources)}
    if rounds:
        kernels["minimal"] = build(base, [minimal[1]], [minimal[0]])
    return kernels


def _launches(kernels: dict[str, Any], args: tuple, rounds: int, timeout: float) -> dict[str, Any]:
    """The marked kernel once, then ``rounds`` of one-marker, marked and plain launches (the plain one timed with
    CUDA events; IKET records nothing of it)."""
    import torch

    from .device import device

    info = device()
    enter_phase(KERNEL_PHASE, timeout)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def launch(kind: str) -> float:
        start.record()
        kernels[kind](*args)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1e3

    launched, plain_us = ["marked"], []
    launch("marked")
    for _ in range(rounds):
        for kind in ("minimal", "marked"):
            launch(kind)
            launched.append(kind)
        plain_us.append(launch("plain"))
    return {"launched": launched, "plain_us": plain_us,
            "plain_median_us": statistics.median(plain_us) if plain_us else None,
            "arch": info.arch, "sms": info.sm_count}


def _workload(t: Target, seed: int) -> tuple[tuple, Any]:
    """The kernel's arguments on fresh inputs with a poisoned output, and the check of its result."""
    from .errors import CheckFailedError
    from .jobs import _poison, _random, _stream, check_output, tensor_marks

    stream = _stream()
    if t.kernel == "gemm_sm90":
        from . import gemm_jobs

        a, b, c = gemm_jobs.operands(t.shape, t.dtype, seed)

        def gemm_check() -> dict[str, Any]:
            result = gemm_jobs.check(a, b, c)
            if result["unwritten"] or not result["rel_error"] <= gemm_jobs.tolerance(result, t.dtype):
                raise CheckFailedError(f"kernel '{t.kernel}' with markers: relative error {result['rel_error']:.3g}, "
                                       f"{result['unwritten']} elements unwritten; the profiled GEMM is wrong")
            return result

        return gemm_jobs._args(tensor_marks(t), a, b, c, stream), gemm_check
    if t.rules.package == "attention":
        from . import attention_jobs

        return attention_jobs.workload(t, seed, stream)
    import torch

    from ..compiling.args import tensor_args

    src = _random(t.shape, t.dtype, seed)
    dst = torch.empty_like(src)
    _poison(dst)

    def copy_check() -> dict[str, Any]:
        result = check_output(src, dst)
        if result["rel_error"] > 0 or result["mismatches"]:
            raise CheckFailedError(f"kernel '{t.kernel}' with markers: {result['mismatches']} elements differ from "
                                   "the input; the profiled copy is wrong")
        return result

    return (*tensor_args((src, dst), tensor_marks(t)), stream), copy_check


def _block_spans(data: dict[str, Any]) -> list[float]:
    """Per launch in the trace, the traced block's lifetime (first warp start to last warp end), microseconds."""
    out = []
    for launch in data.get("launches") or []:
        lifetimes = launch.get("warpLifetimes") or []
        if lifetimes:
            out.append((max(int(x["endTs"]) for x in lifetimes) - min(int(x["startTs"]) for x in lifetimes)) / 1e3)
    return out


def _decoded(data: dict[str, Any], blocks: int) -> dict[str, Any]:
    """The first launch of IKET's decoded trace as rows, for the first ``blocks`` blocks (by block index)."""
    strings = data.get("stringTable") or []
    locations = data.get("locationTable") or []
    launches = list(data.get("launches") or [])
    if not launches:
        return {"ranges": [], "lifetimes": [], "launch": {}, "names": []}
    launch = launches[0]

    def where(index: int) -> tuple[tuple[int, ...], int, int]:
        loc = locations[index]
        return tuple(loc.get("ctaId") or (0, 0, 0)), int(loc.get("warpId", -1)), int(loc.get("smId", -1))

    lifetimes = []
    for lt in launch.get("warpLifetimes") or []:
        cta, warp, sm = where(lt["locIdx"])
        lifetimes.append((cta, warp, sm, int(lt["startTs"]), int(lt["endTs"])))
    kept = sorted({cta for cta, *_ in lifetimes})[:blocks]
    keep = set(kept)
    ranges = []
    for r in launch.get("ranges") or []:
        cta, warp, sm = where((r.get("warpLocIdxs") or [0])[0])  # the warp at the range's start (and end)
        if cta in keep:
            ranges.append((kept.index(cta), warp, sm, strings[r["rangeNameIdx"]], int(r["startTs"]),
                           int(r["endTs"])))
    return {"ranges": ranges,
            "lifetimes": [(kept.index(cta), warp, sm, s, e) for cta, warp, sm, s, e in lifetimes if cta in keep],
            "blocks": [list(c) for c in kept], "names": sorted({r[3] for r in ranges}),
            "launch": {k: launch.get(k) for k in ("kernelName", "gridDimX", "gridDimY", "gridDimZ", "blockDimX",
                                                  "blockDimY", "blockDimZ") if k in launch}}
