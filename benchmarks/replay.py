"""How much recording a trace costs: trace build time / plain checker time, and widget time per step.

Run: ``python benchmarks/replay.py``. Each figure is the median of several runs on fresh TS objects. The plain
run is ``run_checker(..., record=False)``; the trace build is ``run_checker(..., record=True)`` plus
rebuilding the counterexample's states (for a safe design: its shortest run to completion, from the same
recording); the 'viewed' column also builds every step's public view, which a trace otherwise does on
first use.
Both run with ``verbose=False``, the checker's fastest mode, so the ratio is the least flattering one.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from tslab.core import replay
from tslab.core.checker import run_checker
from tslab.kernels import catalog, design

REPEATS = 11


def _medians(fns: list[Any], setup: Any) -> list[float]:
    """Median time of each of ``fns``, run in alternation so machine load hits them alike."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(REPEATS):
        for fn, out in zip(fns, times, strict=True):
            arg = setup()
            start = time.perf_counter()
            fn(arg)
            out.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def _plain(tasks: list[Any]) -> None:
    run_checker(tasks, max_states=1_000_000, verbose=False)


def _traced(tasks: list[Any]) -> None:
    result = run_checker(tasks, max_states=1_000_000, verbose=False, record=True)
    assert replay.trace_from_result(tasks, result, "bench", complete=True) is not None


def _traced_and_viewed(tasks: list[Any]) -> None:
    result = run_checker(tasks, max_states=1_000_000, verbose=False, record=True)
    trace = replay.trace_from_result(tasks, result, "bench", complete=True)
    assert trace is not None and trace.steps


def designs() -> dict[str, Any]:
    """Every catalog design, and two larger synthetic ones."""
    out = {info.name: design(info.name) for info in catalog()}
    out["tma_copy tiles=64 (synthetic)"] = design("tma_copy", tiles=64)
    out["3-task pipeline tiles=24 (synthetic)"] = design("demo_race", tiles=24, stages=2).with_alias_groups([])
    return out


def trace_ratios() -> list[tuple[str, int, int, float, float, float]]:
    rows = []
    for name, d in designs().items():
        plain, traced, viewed = _medians([_plain, _traced, _traced_and_viewed], lambda d=d: d.lower().tasks)
        tasks = d.lower().tasks
        result = run_checker(tasks, max_states=1_000_000, verbose=False, record=True)
        steps = len(replay.trace_from_result(tasks, result, "bench", complete=True))
        rows.append((name, result.states_explored, steps, plain, traced, viewed))
    return rows


def widget_ms_per_step() -> float | None:
    try:
        from tslab.widgets import ReplayPlayer
    except ImportError:
        return None
    trace = replay.trace(design("demo_race"))
    player = ReplayPlayer(trace)
    times = []
    for i in list(range(len(trace))) * 5:
        start = time.perf_counter()
        player.show(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    print("ratio: (checker run with recording + trace) / plain checker run; viewed: all step views built")
    head = ("design", "states", "steps", "checker ms", "trace ms", "ratio", "viewed")
    print("{:<38}{:>7}{:>6}{:>11}{:>9}{:>6}{:>7}".format(*head))
    for name, states, steps, plain, traced, viewed in trace_ratios():
        print(f"{name:<38}{states:>7}{steps:>6}{plain * 1000:>11.2f}{traced * 1000:>9.2f}"
              f"{traced / plain:>6.2f}{viewed / plain:>7.2f}")
    ms = widget_ms_per_step()
    if ms is not None:
        print(f"ReplayPlayer: {ms:.2f} ms per step (median over the demo_race trace, 5 passes)")


if __name__ == "__main__":
    main()
