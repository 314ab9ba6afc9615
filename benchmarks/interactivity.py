"""Interactivity: median time from a model-side edit to the updated Verdict and chart data, per catalog design.

For each design a Studio (no debounce) gets alternating ``num_stages`` edits on its first pipelined resource
(a schedule move-and-back for a design without pipelines); the clock stops when ``Studio.wait()`` returns,
that is when the background check finished and the badge, memory map (chart data and figure) and swimlane
were redrawn. Targets: < 100 ms for the copies and teaching designs, < 300 ms for gemm_sm90.

Captured kernels: a knob edit re-traces the kernel in a worker process. The rows ``captured ...`` time
``design.with_knobs(...)`` plus ``check`` cold (a value not traced before) and cached (a value traced before:
the re-trace cache answers), on the ring copy of ``tests/fixtures/ring_copy.py``; the ratio is cold / cached.

First render: in a fresh interpreter, the seconds from importing ``tslab.widgets`` until a Studio is shown (its
memory map as a placeholder; target < 3 s) and until its first plotly figure replaces the placeholder.

GPU loop (``--gpu``, on a machine with a GPU): edit -> check -> compile -> run checked of tma_copy and gemm_sm90
4096^3 with the warm worker against a fresh worker per step, and a cached re-run (see ``gpu_loop.py``).

    python benchmarks/interactivity.py [--repeat 15] [--gpu [--cold-steps 2]]
"""

from __future__ import annotations

import argparse
import statistics
import time

from tslab.kernels import NAMES, design

TARGET_MS = {"gemm_sm90": 300.0}
DEFAULT_TARGET_MS = 100.0


def edits(studio):
    """An endless cycle of two edits that undo each other."""
    pipelines = studio.design.pipelines()
    if pipelines:
        resource, config = next(iter(pipelines.items()))
        stages = config["num_stages"]
        while True:
            yield lambda s=stages + 1: studio.pipeline_editor.set(resource, "num_stages", s)
            yield lambda s=stages: studio.pipeline_editor.set(resource, "num_stages", s)
    task = studio.design.tasks()[0]
    last = len(studio.design.schedule(task)) - 1
    while True:
        yield lambda: studio.schedule_editor.move(task, last, "Tail", 0)
        yield studio.schedule_editor.undo


def measure(name: str, repeat: int) -> list[float]:
    from tslab.widgets import Studio

    studio = Studio(design(name), debounce=0.0)
    cycle = edits(studio)
    next(cycle)()  # warm up caches and the figure widgets once
    studio.wait()
    times = []
    for _ in range(repeat):
        edit = next(cycle)
        started = time.perf_counter()
        edit()
        studio.wait()
        times.append((time.perf_counter() - started) * 1000)
    return times


def measure_captured(repeat: int) -> tuple[list[float], list[float]]:
    """Milliseconds of knob edit + check: cold re-traces (new values), then cached ones (values seen before)."""
    from pathlib import Path

    import tslab
    from tslab import fake

    kernel = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ring_copy.py"
    base = tslab.capture_file(kernel, "ring_copy", fake.tensor("f16", (6, 256)), fake.tensor("f16", (6, 256)))
    cold, cached = [], []
    values = [2 + i for i in range(repeat)]
    for timings in (cold, cached):
        for stages in values:
            started = time.perf_counter()
            tslab.check(base.with_knobs(stages=stages))
            timings.append((time.perf_counter() - started) * 1000)
    return cold, cached


FIRST_RENDER = """
import time
started = time.perf_counter()
from tslab.kernels import design
from tslab.widgets import Studio
imported = time.perf_counter()
studio = Studio(design("tma_copy"))
assert studio.layout_chart.map.allocations  # the memory map's data is on its view: the browser draws it
print(imported - started, time.perf_counter() - imported)
"""
FIRST_RENDER_TARGET_S = 3.0


def measure_first_render() -> tuple[float, float]:
    """Seconds, in a fresh interpreter: importing tslab's widgets, then from there until a Studio exists with its
    memory map, swimlane and badge filled in (their views are drawn by the front end, no plotly figure)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", FIRST_RENDER], capture_output=True, text=True, check=True)
    imported, shown = map(float, out.stdout.split())
    return imported, shown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--gpu", action="store_true", help="time the GPU loop only (needs a GPU)")
    parser.add_argument("--cold-steps", type=int, default=2,
                        help="GPU loop: steps timed with a fresh worker each (0: the warm loop alone)")
    args = parser.parse_args()
    if args.gpu:
        import gpu_loop

        return gpu_loop.report(gpu_loop.measure(cold_steps=args.cold_steps))
    print(f"{'design':<18}{'median ms':>10}{'max ms':>9}{'target':>8}  verdict")
    missed = 0
    for name in NAMES:
        times = measure(name, args.repeat)
        median, target = statistics.median(times), TARGET_MS.get(name, DEFAULT_TARGET_MS)
        missed += median > target
        print(f"{name:<18}{median:>10.1f}{max(times):>9.1f}{target:>8.0f}  {'ok' if median <= target else 'SLOW'}")
    cold, cached = measure_captured(min(args.repeat, 6))
    print(f"{'captured cold':<18}{statistics.median(cold):>10.1f}{max(cold):>9.1f}{'-':>8}  re-trace in a worker")
    print(f"{'captured cached':<18}{statistics.median(cached):>10.1f}{max(cached):>9.1f}{'-':>8}  "
          f"cold/cached = {statistics.median(cold) / statistics.median(cached):.0f}x")
    imported, shown = measure_first_render()
    missed += shown > FIRST_RENDER_TARGET_S
    print(f"first render: import {imported:.1f} s, then Studio shown in {shown:.2f} s (target < "
          f"{FIRST_RENDER_TARGET_S:.0f} s: {'ok' if shown <= FIRST_RENDER_TARGET_S else 'SLOW'})")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
