"""The stages one point goes through: check (TS's checker prunes), compile (registers, spills), run and time.

These functions run in worker processes (a pool, Ray tasks) and in this process alike: they take plain data
(the design's JSON and the point) and return a plain row. A point that fails is a row with its status and
error; only errors tslab raises on purpose become rows, so a programming error still surfaces.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

from ..core.design import Design
from ..errors import DesignError, TslabError, one_line
from .space import apply, point_shape

#: The order of the stages; ``measure`` names the last one a sweep runs.
STAGES: tuple[str, ...] = ("check", "compile", "bench")

#: What a verdict's status says about a pruned point, as the reason counted in ``SweepResult.pruned``.
REASONS: dict[str, str] = {"DEADLOCK": "deadlock", "RACE": "race", "PDL-ORDER": "pdl-order",
                           "BLOCKED (ASSUMED)": "blocked-assumed", "CAPACITY": "capacity", "INVALID": "invalid",
                           "NOT PROVEN": "not-proven"}


@functools.lru_cache(maxsize=8)
def _design(design_json: str) -> Design:
    """The sweep's base design, read once per worker process."""
    return Design.from_json(design_json)


def _failed(status: str, exc: BaseException) -> dict[str, Any]:
    kind = exc.kind if isinstance(exc, DesignError) else type(exc).__name__
    return {"status": status, "error_kind": kind, "error": one_line(exc)[:2000]}


def check_stage(design: Design, point: dict[str, Any], *, smem_capacity: int | None,
                max_states: int) -> tuple[Design | None, dict[str, Any]]:
    """Build the point's design and check it; pruned points come back with their reason and no design."""
    from ..core.check import check

    started = time.perf_counter()
    try:
        edited = apply(design, point)
    except DesignError as exc:
        return None, {**_failed("pruned", exc), "reason": "invalid", "check_s": time.perf_counter() - started}
    verdict = check(edited, max_states=max_states, smem_capacity=smem_capacity)
    row: dict[str, Any] = {"smem_bytes": verdict.smem_used, "tmem_cols": verdict.tmem_total,
                           "states": verdict.checker.states_explored, "verdict": verdict.status,
                           "check_s": round(verdict.seconds, 4)}
    if verdict.ok:
        return edited, {**row, "status": "ok"}
    first = verdict.errors[0] if verdict.errors else None
    row.update(status="pruned", reason=REASONS.get(verdict.status, verdict.status.lower()),
               error_kind=first.kind if first else "not-proven",
               error=one_line(Exception(f"{first.where}: {first.message}")) if first
               else "the checker hit its state limit before it finished; raise max_states")
    return None, row


def compile_stage(design: Design, *, arch: str, shape: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Compile a checked design for ``arch`` (on ``shape``, else its kernel's default problem): registers, spills
    and compile time (the GPU is not needed)."""
    from ..gpu.compile import compile as compile_design

    try:
        kernel = compile_design(design, arch, shape=shape)
    except TslabError as exc:
        return _failed("compile-failed", exc)
    return {"status": "ok", "registers": kernel.registers, "spills": kernel.spills,
            "compile_s": round(kernel.compile_seconds, 3)}


def check_and_compile(design_json: str, point: dict[str, Any], measure: str, arch: str,
                      smem_capacity: int | None, max_states: int) -> dict[str, Any]:
    """The CPU stages of one point (check, then compile when ``measure`` asks for it)."""
    design, row = check_stage(_design(design_json), point, smem_capacity=smem_capacity, max_states=max_states)
    if design is not None and measure != "check":
        row.update(compile_stage(design, arch=arch, shape=point_shape(point)))
    return row


def bench_stage(design_json: str, point: dict[str, Any], repeats: int = 5,
                io: dict[str, Any] | None = None) -> dict[str, Any]:
    """Compile for this process's GPU, run once against the reference, then time against torch (a captured
    kernel: on ``io``'s inputs, against its reference and baseline)."""
    from ..gpu.compile import compile as compile_design
    from ..gpu.device import device
    from ..gpu.errors import CheckFailedError

    info = device()
    where = {"device": f"{os.environ.get('CUDA_VISIBLE_DEVICES', '0')}: {info.name if info else '?'}"}
    try:
        kernel = compile_design(apply(_design(design_json), point), shape=point_shape(point))
        run_io = {k: v for k, v in (io or {}).items() if k != "baseline"}
        kernel.run(**run_io)
    except CheckFailedError as exc:
        return {**where, **_failed("run-failed", exc)}
    except TslabError as exc:
        return {**where, **_failed("compile-failed", exc)}
    try:
        table = (kernel.bench(repeats=repeats, **io) if io else kernel.bench(repeats=repeats, progress=False)).table
    except TslabError as exc:
        return {**where, **_failed("bench-failed", exc)}
    first = table.iloc[0]
    figures = {c: (None if first[c] is None or first[c] != first[c] else float(first[c]))  # NaN -> None
               for c in ("median_us", "p10_us", "p90_us", "gbps", "tflops", "ratio") if c in table}
    return {**where, "status": "ok", **figures}
