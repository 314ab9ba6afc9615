"""Where a GEMM's time goes between calls: the exported package's own call beside ``torch.mm``, timed four ways.

One isolated launch under Nsight Compute puts the tuned package's pick ahead of cuBLAS at M = 256-320 while the
back-to-back loop of ``benchmarks/gemm.py`` puts it 0.3-2.6% behind at M = 320. The difference lies between the
calls: the CPU's launch cost, what one kernel's tail overlaps of the next (programmatic dependent launch), what L2
holds. Each contestant is timed in the same rounds on the same rotating workspaces (together over L2's size):

- ``loop``: CUDA events around ``--iterations`` back-to-back calls (what ``benchmarks/gemm.py`` times);
- ``graph``: the same calls captured once in a ``torch.cuda.CUDAGraph`` and replayed (no CPU between launches);
- ``isolated``: one call at a time after an L2 flush and a spin on the stream, events around that call alone (no
  overlap with a neighbour, no launch gap);
- ``trace``: ``torch.profiler``'s kernel records of a back-to-back loop: each kernel's own duration and the gap from
  one kernel's end to the next one's start (negative: the two overlapped), and the kernels' names;
- ``trace-alone``: the same records of the ``isolated`` sequence (flush, spin, call): the call's kernel's duration
  there, and the gap from the spin's end to its start (what a launch waiting in the queue costs before it runs).

    python benchmarks/gemm_between_calls.py [--shapes 320,8192,8192 ...] [--dtypes bf16 fp16] [--json out.json]
        [--variant pdl=True]   # also the package exported with this param over every rule's
        [--design swap_128x160_aliased]   # also a package of this one dispatch candidate, at every shape

``pdl=True`` launches each kernel with programmatic dependent launch: its load warp waits for the grid before it
(``griddepcontrol.wait``) before the first TMA load and lets the next grid launch after its last one, so back to back
the next kernel's launch overlaps this one's tail.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

SHAPES = [(256, 8192, 8192), (320, 8192, 8192), (384, 8192, 8192)]
MODES = ("loop", "graph", "isolated", "trace", "trace-alone")
#: Bytes written to evict L2 before an isolated call (over twice the H100's and H200's 50 MB).
FLUSH_BYTES = 256 << 20


def _workspaces(shape: tuple[int, int, int], dtype: Any, iterations: int) -> list[tuple[Any, Any, Any]]:
    import torch

    from tslab.gpu.timing import workspace_count

    m, n, k = shape
    count = max(2, workspace_count(2 * (m * k + n * k + m * n), 1, iterations))
    return [(torch.randn((m, k), device="cuda", dtype=dtype), torch.randn((n, k), device="cuda", dtype=dtype),
             torch.empty((m, n), device="cuda", dtype=dtype)) for _ in range(count)]


def _elapsed_us(run: Callable[[], Any]) -> float:
    """Microseconds between CUDA events recorded before and after what ``run`` enqueues."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return 1e3 * start.elapsed_time(end)


def _prelude(flush: Any) -> None:
    """What comes before an ``isolated`` call: an L2 flush (dirty lines), then a spin that lets the CPU run ahead."""
    import torch

    flush.zero_()
    torch.cuda._sleep(100_000)


def time_loop(fn: Callable[..., Any], sets: list[tuple], iterations: int) -> float:
    """Microseconds a call, events around ``iterations`` back-to-back calls."""
    def calls() -> None:
        for i in range(iterations):
            fn(*sets[i % len(sets)])

    return _elapsed_us(calls) / iterations


def captured(fn: Callable[..., Any], sets: list[tuple], iterations: int) -> Any:
    """``iterations`` calls captured in one CUDA graph (warmed on a side stream first, as torch asks)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for s in sets:
            fn(*s)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(iterations):
            fn(*sets[i % len(sets)])
    return graph


def time_graph(graph: Any, iterations: int) -> float:
    """Microseconds a call, events around one replay of a graph of ``iterations`` calls."""
    return _elapsed_us(graph.replay) / iterations


def time_isolated(fn: Callable[..., Any], sets: list[tuple], iterations: int, flush: Any) -> float:
    """Median microseconds of one call timed alone, after an L2 flush and a spin that lets the CPU run ahead."""
    times = []
    for i in range(iterations):
        _prelude(flush)
        times.append(_elapsed_us(lambda i=i: fn(*sets[i % len(sets)])))
    return statistics.median(times)


def trace(fn: Callable[..., Any], sets: list[tuple], iterations: int) -> dict[str, Any]:
    """The kernels of ``iterations`` back-to-back calls as the profiler saw them: median duration, median gap from
    one kernel's end to the next one's start (negative when they overlapped), the kernels' names."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(iterations):
            fn(*sets[i % len(sets)])
        torch.cuda.synchronize()
    kernels = _kernels(prof)
    spans = [(e.time_range.start, e.time_range.end) for e in kernels]
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(spans)]
    return {"kernels": len(spans), "names": sorted({e.name[:90] for e in kernels}),
            "duration_us": statistics.median(b - a for a, b in spans) if spans else None,
            "gap_us": statistics.median(gaps) if gaps else None, "min_gap_us": min(gaps) if gaps else None}


def _kernels(prof: Any) -> list[Any]:
    import torch

    return sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                  key=lambda e: e.time_range.start)


def trace_alone(fn: Callable[..., Any], sets: list[tuple], iterations: int, flush: Any) -> dict[str, Any]:
    """The ``isolated`` sequence (flush, spin, call) as the profiler saw it: the call's kernels' median duration and
    the median gap from the spin's end to the call's first kernel's start."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        _prelude(flush)
        torch.cuda.synchronize()
    theirs = {e.name for e in _kernels(prof)}  # the flush's and the spin's kernels
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(iterations):
            _prelude(flush)
            fn(*sets[i % len(sets)])
        torch.cuda.synchronize()
    records = [(e.name, e.time_range.start, e.time_range.end) for e in _kernels(prof)]
    durations, gaps = calls_after_prelude(records, theirs)
    return {"calls": len(durations), "duration_us": statistics.median(durations) if durations else None,
            "launch_gap_us": statistics.median(gaps) if gaps else None}


def calls_after_prelude(records: list[tuple[str, float, float]], prelude: set[str]) -> tuple[list[float], list[float]]:
    """From kernel records ``(name, start, end)`` in start order, where each call follows kernels named in
    ``prelude``: each call's span (its first kernel's start to its last one's end) and the gap from the prelude's
    last kernel's end to the call's start."""
    spans, gaps, last_end, call = [], [], None, []
    for record in [*records, None]:
        if record is None or record[0] in prelude:
            if call and last_end is not None:  # a call ends where the next prelude (or the records) begins
                spans.append(call[-1][2] - call[0][1])
                gaps.append(call[0][1] - last_end)
            call = []
            if record is not None:
                last_end = record[2]
        else:
            call.append(record)
    return spans, gaps


def contestants(packages: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """Each package's own call and torch.mm, each computing ``c = a @ b.T``."""
    import torch

    return {**{name: package.run for name, package in packages.items()},
            "torch.mm": lambda a, b, c: torch.mm(a, b.T, out=c)}


def measure(shape: tuple[int, int, int], short: str, packages: dict[str, Any], *, repeats: int, iterations: int,
            modes: tuple[str, ...]) -> dict[str, Any]:
    """Every mode's microseconds a call for each contestant, ``repeats`` interleaved rounds; each output checked."""
    import torch
    from gemm import SHORT_DTYPES

    sets = _workspaces(shape, getattr(torch, SHORT_DTYPES[short]), iterations)
    fns = contestants(packages)
    a, b, _ = sets[0]
    want = (a.float() @ b.float().T)
    for name, fn in fns.items():
        c = torch.empty_like(sets[0][2])
        fn(a, b, c)
        err = float((c.float() - want).norm() / want.norm())
        if err > 1e-2:
            raise SystemExit(f"{name} at {shape} {short}: relative error {err:.3g}; not timed")
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda") if "isolated" in modes else None
    graphs: dict[str, Any] = {}
    out: dict[str, Any] = {name: {} for name in fns}
    if "graph" in modes:
        for name, fn in fns.items():
            try:
                graphs[name] = captured(fn, sets, iterations)
            except Exception as exc:  # a call that cannot be captured is reported, the others still timed
                out[name]["graph_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    for fn in fns.values():  # warm every path once
        time_loop(fn, sets, iterations)
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeats):
        for name, fn in fns.items():
            if "loop" in modes:
                samples.setdefault((name, "loop"), []).append(time_loop(fn, sets, iterations))
            if name in graphs:
                samples.setdefault((name, "graph"), []).append(time_graph(graphs[name], iterations))
            if "isolated" in modes:
                samples.setdefault((name, "isolated"), []).append(time_isolated(fn, sets, iterations, flush))
    for (name, mode), values in samples.items():
        out[name][mode] = statistics.median(values)
    if "trace" in modes:
        for name, fn in fns.items():
            out[name]["trace"] = trace(fn, sets, iterations)
    if "trace-alone" in modes:
        flush = flush if flush is not None else torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        for name, fn in fns.items():
            out[name]["trace_alone"] = trace_alone(fn, sets, iterations, flush)
    # the graphs go before their workspaces and before the interpreter's exit (one run aborted in free() at exit)
    torch.cuda.synchronize()
    graphs.clear()
    return out


def _print_table(rows: list[dict[str, Any]]) -> None:
    print(f"\n{'dtype':5} {'M,N,K':>16} {'mode':>9} {'contestant':>24} {'us':>8} {'torch.mm us':>12} "
          f"{'x torch':>8} {'x package':>9}")
    for r in rows:
        ref, names = r["torch.mm"], [name for name in r if name.startswith("package")]
        for mode in ("loop", "graph", "isolated"):
            for name in names:
                us = r[name].get(mode)
                if us is None or mode not in ref:
                    continue
                base = r["package"].get(mode)
                print(f"{r['dtype']:5} {','.join(map(str, r['shape'])):>16} {mode:>9} {name:>24} {us:8.2f} "
                      f"{ref[mode]:12.2f} {ref[mode] / us:8.3f} {base / us if base else float('nan'):9.3f}")
        for name in [*names, "torch.mm"]:
            if "graph_error" in r[name]:
                print(f"{'':23} {name} not captured: {r[name]['graph_error']}")
            t = r[name].get("trace")
            if t:
                print(f"{'':23} {name} trace: kernel {t['duration_us']:.2f} us, gap {t['gap_us']:.2f} us "
                      f"(min {t['min_gap_us']:.2f}), {t['kernels']} kernels: {', '.join(t['names'])}")
            t = r[name].get("trace_alone")
            if t and t["calls"]:
                print(f"{'':23} {name} alone: kernel {t['duration_us']:.2f} us, "
                      f"{t['launch_gap_us']:.2f} us from the spin's end to its start ({t['calls']} calls)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", help="M,N,K problems (default: M = 256, 320, 384; N = K = 8192)")
    parser.add_argument("--dtypes", nargs="*", default=["bf16", "fp16"], choices=["bf16", "fp16"])
    parser.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--design", action="append", default=[],
                        help="also time a package of this one gemm_sm90_dispatch.CANDIDATES design (runtime extents)")
    parser.add_argument("--variant", action="append", default=[],
                        help="also time the package exported with these params over every rule's, e.g. pdl=True")
    parser.add_argument("--json", help="write every row here")
    args = parser.parse_args(argv)

    from gemm import _params, exported_package

    from tslab.gpu.device import device
    from tslab.kernels import gemm_sm90
    from tslab.kernels.gemm_sm90_dispatch import CANDIDATES

    unknown = [name for name in args.design if name not in CANDIDATES]
    if unknown:
        parser.error(f"--design {unknown[0]}: not a dispatch candidate; one of {', '.join(CANDIDATES)}")

    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shapes] if args.shapes else SHAPES
    print(f"device: {device()}", flush=True)
    rows = []
    for short in args.dtypes:
        design = gemm_sm90.design(dtype=short)
        packages = {"package": exported_package(design, tuned=True)}
        for label in args.variant:
            packages[f"package {label}"] = exported_package(design, tuned=True, overrides=_params(label.split(",")))
        for name in args.design:
            one = gemm_sm90.design(**{**CANDIDATES[name], "dtype": short})
            packages[f"package {name}"] = exported_package(one, tuned=False)
        for shape in shapes:
            row = {"dtype": short, "shape": shape, **measure(shape, short, packages, repeats=args.repeats,
                                                              iterations=args.iterations, modes=tuple(args.modes))}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    _print_table(rows)
    if {"trace", "trace-alone"} & set(args.modes):
        from profiler_exit import exit_without_teardown

        exit_without_teardown()  # torch.profiler ran: its CUPTI buffers abort the interpreter's teardown now and then
    return 0


if __name__ == "__main__":
    sys.exit(main())
