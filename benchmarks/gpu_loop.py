"""The GPU loop's latency: edit -> check -> compile -> run checked, warm worker against a fresh worker per step.

Each step is what a notebook user does after an edit: ``tslab.check`` (inside ``gpu.compile``), ``gpu.compile``
for this GPU, ``kernel.run()`` (the output compared with the reference). "cold" runs every job in a freshly
spawned worker (``TSLAB_FRESH_WORKERS=1``: imports CuTe DSL and torch and creates a CUDA context each time, as
before the warm worker); "warm" reuses this process's worker, started and warmed once before the clock runs;
"cached re-run" runs the same compiled kernel again (the worker keeps it). Targets (H200): warm tma_copy < 2 s,
warm gemm_sm90 4096^3 < 3 s, cached re-run < 0.5 s. Called by ``interactivity.py --gpu``.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

TARGETS_S = {"tma_copy": 2.0, "gemm_sm90": 3.0, "cached": 0.5}


def _edits(kernel: str) -> list[Any]:
    from tslab.kernels import gemm_sm90, tma_copy

    if kernel == "tma_copy":
        return [tma_copy.design(stages=s) for s in (2, 3, 4, 5, 6)]
    return [gemm_sm90.design(stages=2), gemm_sm90.design(stages=3), gemm_sm90.design(stages=4, tile_n=128),
            gemm_sm90.design(stages=5, tile_n=128)]  # each one new to the worker: no compiled kernel kept


def _shape(kernel: str) -> tuple[int, ...]:
    return (4096, 4096, 4096) if kernel == "gemm_sm90" else (16384, 16384)


def _step(design: Any, shape: tuple[int, ...]) -> tuple[float, Any]:
    from tslab import gpu

    started = time.perf_counter()
    kernel = gpu.compile(design, shape=shape)
    kernel.run()
    return time.perf_counter() - started, kernel


def _timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def measure(kernels: tuple[str, ...] = ("tma_copy", "gemm_sm90"), cold_steps: int = 2) -> list[dict[str, Any]]:
    """One row per kernel: median seconds of cold steps, warm steps and cached re-runs."""
    from tslab.gpu import warm
    from tslab.gpu.worker import FRESH_ENV, run_job

    rows = []
    for name in kernels:
        edits, shape = _edits(name), _shape(name)
        os.environ[FRESH_ENV] = "1"
        cold = [_step(d, shape)[0] for d in edits[:cold_steps]]  # none: the warm loop alone (a shorter run)
        del os.environ[FRESH_ENV]
        warm.shutdown()
        warm_up = _timed(lambda: run_job("tslab.gpu.warm:warm_up", {}))
        steps = [_step(d, shape) for d in edits]
        kernel = steps[-1][1]
        cached = [_timed(kernel.run) for _ in range(5)]
        rows.append({"kernel": name, "shape": "x".join(map(str, shape)),
                     "cold_s": statistics.median(cold) if cold else None,
                     "warm_up_s": warm_up, "warm_s": statistics.median(s for s, _ in steps[1:]),
                     "first_warm_s": steps[0][0], "cached_s": statistics.median(cached),
                     "workers_started": warm.worker().started})
    return rows


def report(rows: list[dict[str, Any]]) -> int:
    """Print the table; 1 when a target is missed."""
    print(f"{'kernel':<11}{'shape':<16}{'cold s':>8}{'warm s':>8}{'cold/warm':>10}{'cached s':>9}  targets")
    missed = 0
    for r in rows:
        ok_warm = r["warm_s"] < TARGETS_S[r["kernel"]]
        ok_cached = r["cached_s"] < TARGETS_S["cached"]
        missed += not (ok_warm and ok_cached)
        cold = f"{r['cold_s']:>8.2f}" if r["cold_s"] is not None else f"{'-':>8}"
        ratio = f"{r['cold_s'] / r['warm_s']:>9.1f}x" if r["cold_s"] is not None else f"{'-':>10}"
        print(f"{r['kernel']:<11}{r['shape']:<16}{cold}{r['warm_s']:>8.2f}"
              f"{ratio}{r['cached_s']:>9.3f}  warm < {TARGETS_S[r['kernel']]:.0f} s "
              f"{'ok' if ok_warm else 'MISSED'}, cached < {TARGETS_S['cached']} s {'ok' if ok_cached else 'MISSED'}")
    first = rows[0]
    print(f"(the worker's start and warm-up, paid once per session: {first['warm_up_s']:.1f} s; the first warm "
          f"step of each kernel includes its first compile in that worker)")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(report(measure()))
