"""What a model pays to call an exported package: host microseconds per call, loop throughput, CUDA graphs.

tslab's packages (a tma_copy, a gemm_sm90 design, the tuned gemm_sm90 dispatch by M, attention_sm90) are exported
into a temporary folder (or read from ``--packages DIR``) and imported as a model imports them; each is timed
beside its peers in one process:

1. Host us per call on a tiny problem: the time until the last of a burst of 200 back-to-back calls returns (few
   enough that the launch queue never fills, so the GPU's pace is not timed), the median over ``calls`` calls x
   ``repeats``: the package's ``run()`` into the caller's tensors, its allocating call (``copy()``, ``gemm()``,
   ``attention()``), ``torch.ops.<package>.<op>`` and the bare compiled function (``load(i)``, the TVM FFI call
   with no checks), beside torch's ``copy_`` / ``torch.mm``, quack's ``gemm`` (default config) and
   flash-attn-4 and SDPA cuDNN.
2. Loop throughput on model-sized problems: ``loop`` calls in a loop on one set of tensors (warm L2), TFLOP/s
   from CUDA events around the loop, the contestants interleaved round by round; and the same kernel timed as the
   project's benchmarks time kernels (``tslab.gpu.timing``: each call alone, cold L2, ``cutlass.testing.benchmark``),
   the package's ``run()`` and the bare function side by side. ``run / bare`` is what the package's Python costs.
3. CUDA graphs: each package's call captured and replayed; replay equal to eager, bit for bit.

    python benchmarks/call_overhead.py [--peer quack --peer fa4 --peer cudnn] [--packages DIR] [--json out.json]

Peers are never dependencies of tslab (local wheels on the GPU machine, see benchmarks/NOTES.md).
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PACKAGES = ("tslab_copy", "tslab_gemm", "tslab_gemm_tuned", "tslab_attention", "tslab_row_copy")
PEERS = ("quack", "fa4", "cudnn")
#: The issue's targets: host us per call of run(), of the allocating call; the torch op within this factor of the
#: plain call; the loop within this fraction of the kernel timed as the benchmarks time it.
TARGETS = {"run_us": 10.0, "alloc_us": 15.0, "op_factor": 2.0, "loop_gap": 0.03}


#: The captured kernel whose package is timed too: tutorial 06's row copy, for 128 x 256 fp16 tensors.
ROW_COPY = Path(__file__).resolve().parent.parent / "notebooks" / "kernels" / "row_copy.py"


def export_packages(folder: Path) -> dict[str, Any]:
    """The packages, exported into ``folder`` unless already there, imported."""
    import tslab
    from tslab import fake
    from tslab.compiling.captured_export import export_captured
    from tslab.gpu.export import export
    from tslab.kernels import attention_sm90, gemm_sm90, tma_copy
    from tslab.kernels.gemm_sm90_dispatch import tuned

    designs = {"tslab_copy": tma_copy.design(), "tslab_gemm": gemm_sm90.design(), "tslab_gemm_tuned": tuned("fp16"),
               "tslab_attention": attention_sm90.design()}
    sys.path.insert(0, str(folder))
    out = {}
    for name in PACKAGES:
        if not (folder / name / "design.json").exists():
            started = time.perf_counter()
            if name == "tslab_row_copy":
                fakes = [fake.tensor("f16", (128, 256)) for _ in range(2)]
                export_captured(tslab.capture_file(ROW_COPY, "copy_rows", *fakes), folder / name)
            else:
                export(designs[name], folder / name)
            print(f"exported {name} in {time.perf_counter() - started:.1f} s", flush=True)
        out[name] = importlib.import_module(name)
    return out


#: Calls per timed burst: few enough that the GPU's launch queue never fills and blocks the host.
BURST = 200


def host_us(call: Callable[[], Any], *, calls: int, repeats: int) -> float:
    """Median host microseconds per call over bursts of ``BURST`` back-to-back calls (``calls`` per repeat), each
    timed until its last call returns, the GPU drained between bursts."""
    import torch

    for _ in range(20):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats * max(1, calls // BURST)):
        started = time.perf_counter()
        for _ in range(BURST):
            call()
        times.append((time.perf_counter() - started) / BURST * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def loop_tflops(calls: dict[str, Callable[[], Any]], flops: float, *, loop: int, repeats: int) -> dict[str, float]:
    """Median TFLOP/s of each of ``calls`` run ``loop`` times in a loop, from CUDA events around it; the
    contestants take turns, one loop each per round."""
    import torch

    for call in calls.values():
        for _ in range(3):
            call()
    torch.cuda.synchronize()
    rates: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(loop):
                call()
            end.record()
            end.synchronize()
            rates[name].append(loop * flops / (start.elapsed_time(end) * 1e-3) / 1e12)
    return {name: statistics.median(values) for name, values in rates.items()}


def tiny_calls(pkgs: dict[str, Any], peers: list[str]) -> list[dict[str, Any]]:
    """Section 1's callables on their tiny problems: (kind, name, call)."""
    import torch

    copy, gemm, tuned, attn, row_copy = (pkgs[name] for name in PACKAGES)
    src = torch.randn(128, 128, device="cuda", dtype=torch.float16)
    dst = torch.empty_like(src)
    a, b = (torch.randn(128, 128, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty(128, 128, device="cuda", dtype=torch.float16)
    q, k, v = (torch.randn(1, 128, 1, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o, lse = torch.empty_like(q), torch.empty(1, 1, 128, device="cuda", dtype=torch.float32)
    bare_copy, bare_attn = copy.load(), attn.load(0)
    rows = [
        ("copy 128x128 fp16", "tslab run(src, dst)", lambda: copy.run(src, dst)),
        ("copy 128x128 fp16", "tslab copy(src)", lambda: copy.copy(src)),
        ("copy 128x128 fp16", "tslab torch.ops", lambda: torch.ops.tslab_copy.copy(src)),
        ("copy 128x128 fp16", "bare TVM FFI call", lambda: bare_copy(src, dst)),
        ("copy 128x128 fp16", "torch dst.copy_(src)", lambda: dst.copy_(src)),
    ]
    rows_src = torch.randn(128, 256, device="cuda", dtype=torch.float16)
    rows_dst, bare_rows = torch.empty_like(rows_src), row_copy.load()
    rows += [("captured row_copy 128x256 fp16", "tslab run(src, dst)", lambda: row_copy.run(rows_src, rows_dst)),
             ("captured row_copy 128x256 fp16", "bare TVM FFI call", lambda: bare_rows(rows_src, rows_dst))]
    for name, pkg in (("gemm", gemm), ("gemm dispatch", tuned)):
        op, bare = getattr(torch.ops, pkg.__name__).gemm, pkg.load(pkg.DESIGNS.index(pkg.design_for(128)))
        rows += [
            (f"{name} 128^3 fp16", "tslab run(a, b, c)", lambda pkg=pkg: pkg.run(a, b, c)),
            (f"{name} 128^3 fp16", "tslab gemm(a, b)", lambda pkg=pkg: pkg.gemm(a, b)),
            (f"{name} 128^3 fp16", "tslab torch.ops", lambda op=op: op(a, b)),
            (f"{name} 128^3 fp16", "bare TVM FFI call", lambda bare=bare: bare(a, b, c)),
        ]
    rows += [("gemm 128^3 fp16", "torch.mm(a, b.T, out=c)", lambda: torch.mm(a, b.T, out=c)),
             ("gemm 128^3 fp16", "torch.mm(a, b.T)", lambda: torch.mm(a, b.T))]
    if "quack" in peers:
        from quack.gemm_interface import gemm as quack_gemm

        rows.append(("gemm 128^3 fp16", "quack gemm(a, b.T, out=c)", lambda: quack_gemm(a, b.T, out=c, tuned=False)))
    rows += [
        ("attention b1 s128 h1 d128 bf16", "tslab run(q, k, v, o, lse)", lambda: attn.run(q, k, v, o, lse)),
        ("attention b1 s128 h1 d128 bf16", "tslab attention(q, k, v)", lambda: attn.attention(q, k, v)),
        ("attention b1 s128 h1 d128 bf16", "tslab torch.ops", lambda: torch.ops.tslab_attention.attention(q, k, v)),
        ("attention b1 s128 h1 d128 bf16", "bare TVM FFI call", lambda: bare_attn(q, k, v, o, lse, 128 ** -0.5)),
    ]
    if "fa4" in peers:
        from flash_attn.cute import flash_attn_func

        rows.append(("attention b1 s128 h1 d128 bf16", "flash-attn-4", lambda: flash_attn_func(q, k, v)))
    if "cudnn" in peers:
        rows.append(("attention b1 s128 h1 d128 bf16", "SDPA cuDNN", _sdpa(*(t.transpose(1, 2) for t in (q, k, v)))))
    return [{"problem": problem, "call": name, "fn": fn} for problem, name, fn in rows]


def _sdpa(q: Any, k: Any, v: Any, causal: bool = False) -> Callable[[], Any]:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    def call() -> Any:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return scaled_dot_product_attention(q, k, v, is_causal=causal)

    return call


def loops(pkgs: dict[str, Any], peers: list[str], *, loop: int, repeats: int) -> list[dict[str, Any]]:
    """Section 2: each model-sized problem's loop TFLOP/s, and the benchmarks' timing of run() and the bare call."""
    import torch

    from tslab.gpu.jobs import _stream
    from tslab.gpu.timing import Contestant, time_interleaved, workspace_count

    tuned, attn = pkgs["tslab_gemm_tuned"], pkgs["tslab_attention"]
    out = []
    for m, n, k in ((4096, 4096, 4096), (128, 8192, 8192)):
        flops = 2 * m * n * k
        a, b = torch.randn(m, k, device="cuda", dtype=torch.float16), torch.randn(n, k, device="cuda",
                                                                                   dtype=torch.float16)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        bare = tuned.load(tuned.DESIGNS.index(tuned.design_for(m)))
        calls = {"tslab run()": lambda a=a, b=b, c=c: tuned.run(a, b, c),
                 "tslab gemm()": lambda a=a, b=b: tuned.gemm(a, b),
                 "bare TVM FFI call": lambda a=a, b=b, c=c, f=bare: f(a, b, c),
                 "torch.mm": lambda a=a, b=b, c=c: torch.mm(a, b.T, out=c)}
        if "quack" in peers:
            from quack.gemm_interface import gemm as quack_gemm

            calls["quack (default config)"] = lambda a=a, b=b, c=c: quack_gemm(a, b.T, out=c, tuned=False)
        count = workspace_count(2 * (m * k + n * k + m * n), 3, 10)
        sets = [(torch.randn(m, k, device="cuda", dtype=torch.float16),
                 torch.randn(n, k, device="cuda", dtype=torch.float16),
                 torch.empty(m, n, device="cuda", dtype=torch.float16)) for _ in range(count)]
        timed = _benchmarks_timing([Contestant("run", tuned.run, sets), Contestant("bare", bare, sets)],
                                   time_interleaved, _stream(), repeats)
        out.append(_loop_row(f"gemm {m}x{n}x{k} fp16 (tuned dispatch)", flops, calls, timed, loop, repeats))
        del sets
    b_, s, h, d = 4, 2048, 32, 128
    flops = 4 * b_ * h * s * s * d
    q, k_, v = (torch.randn(b_, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o, lse = torch.empty_like(q), torch.empty(b_, h, s, device="cuda", dtype=torch.float32)
    bare = attn.load(0)
    calls = {"tslab run()": lambda: attn.run(q, k_, v, o, lse), "tslab attention()": lambda: attn.attention(q, k_, v),
             "bare TVM FFI call": lambda: bare(q, k_, v, o, lse, d ** -0.5)}
    if "fa4" in peers:
        from flash_attn.cute import flash_attn_func

        calls["flash-attn-4"] = lambda: flash_attn_func(q, k_, v)
    if "cudnn" in peers:
        calls["SDPA cuDNN"] = _sdpa(*(t.transpose(1, 2).contiguous() for t in (q, k_, v)))
    count = workspace_count(4 * b_ * s * h * d * 2, 3, 10)
    sets = [(*(torch.randn(b_, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3)),
             torch.empty_like(q), torch.empty_like(lse)) for _ in range(count)]
    timed = _benchmarks_timing([Contestant("run", attn.run, sets),
                                Contestant("bare", lambda *t: bare(*t, d ** -0.5), sets)],
                               time_interleaved, _stream(), repeats)
    out.append(_loop_row(f"attention b{b_} s{s} h{h} d{d} bf16", flops, calls, timed, loop, repeats))
    return out


def _benchmarks_timing(contestants: list[Any], time_interleaved: Any, stream: Any, repeats: int) -> dict[str, float]:
    times = time_interleaved(contestants, repeats=repeats, iterations=10, warmup=3, stream=stream)
    return {name: statistics.median(us) for name, us in times.items()}


def _loop_row(problem: str, flops: float, calls: dict[str, Callable[[], Any]], timed: dict[str, float], loop: int,
              repeats: int) -> dict[str, Any]:
    rates = loop_tflops(calls, flops, loop=loop, repeats=repeats)
    bench = {name: flops / us / 1e6 for name, us in timed.items()}
    row = {"problem": problem, "loop_tflops": rates, "benchmark_tflops": bench,
           "loop_run_vs_bare": rates["tslab run()"] / rates["bare TVM FFI call"],
           "benchmark_run_vs_bare": bench["run"] / bench["bare"]}
    print(json.dumps(row), flush=True)
    return row


def graphs(pkgs: dict[str, Any]) -> dict[str, bool]:
    """Section 3: each package's call captured and replayed, equal to eager bit for bit."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from package_calls import graph_replay_equals_eager

    copy, gemm, tuned, attn, _ = (pkgs[name] for name in PACKAGES)
    src = torch.randn(1000, 264, device="cuda", dtype=torch.float16)
    dst = torch.empty_like(src)
    problems = [(torch.randn(m, 520, device="cuda", dtype=torch.float16),
                 torch.randn(1000, 520, device="cuda", dtype=torch.float16),
                 torch.empty(m, 1000, device="cuda", dtype=torch.float16)) for m in (64, 129, 193, 257, 321, 1000)]
    q, k, v = (torch.randn(2, 513, 8, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o, lse = torch.empty_like(q), torch.empty(2, 8, 513, device="cuda", dtype=torch.float32)
    return {
        "copy": graph_replay_equals_eager(lambda: copy.run(src, dst), [dst]),
        "gemm": graph_replay_equals_eager(lambda: gemm.run(*problems[-1]), [problems[-1][2]]),
        "gemm dispatch (6 launches, one per design)": graph_replay_equals_eager(
            lambda: [tuned.run(*p) for p in problems], [p[2] for p in problems]),
        "attention causal=False": graph_replay_equals_eager(lambda: attn.run(q, k, v, o, lse), [o, lse]),
        "attention causal=True": graph_replay_equals_eager(lambda: attn.run(q, k, v, o, lse, causal=True), [o, lse]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", action="append", default=[], choices=PEERS)
    parser.add_argument("--packages", help="a folder holding (or to hold) the exported packages")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--loop", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args(argv)

    from tslab.gpu.device import device

    print(f"device: {device()}", flush=True)
    folder = Path(args.packages or tempfile.mkdtemp(prefix="tslab-call-overhead-"))
    folder.mkdir(parents=True, exist_ok=True)
    pkgs = export_packages(folder)
    tiny = tiny_calls(pkgs, args.peer)
    for row in tiny:
        row["us"] = host_us(row.pop("fn"), calls=args.calls, repeats=args.repeats)
        print(json.dumps(row), flush=True)
    loop_rows = loops(pkgs, args.peer, loop=args.loop, repeats=args.repeats)
    graph = graphs(pkgs)
    print(json.dumps({"graphs": graph}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"tiny": tiny, "loops": loop_rows, "graphs": graph}, indent=1) + "\n")
    print_tables(tiny, loop_rows, graph)
    return 0


def print_tables(tiny: list[dict[str, Any]], loop_rows: list[dict[str, Any]], graph: dict[str, bool]) -> None:
    """The three sections as tables, each target beside its figure."""
    print(f"\n{'problem':32} {'call':28} {'host us/call':>12}  target")
    allocating: dict[str, float] = {}
    for row in tiny:
        us, name = row["us"], row["call"]
        if name.startswith("tslab") and "run(" not in name and "ops" not in name:
            allocating[row["problem"]] = us
        if "run(" in name:
            target = f"<= {TARGETS['run_us']:.0f}"
        elif "ops" in name:
            target = f"<= {TARGETS['op_factor']:.0f}x the plain call: {us / allocating[row['problem']]:.2f}x"
        else:
            target = f"<= {TARGETS['alloc_us']:.0f}" if name.startswith("tslab") else ""
        if row["problem"].startswith("captured"):
            target = ""
        print(f"{row['problem']:32} {name:28} {us:12.1f}  {target}")
    print(f"\n{'problem':40} {'call':24} {'loop TFLOP/s':>12}")
    for row in loop_rows:
        for name, rate in row["loop_tflops"].items():
            print(f"{row['problem']:40} {name:24} {rate:12.0f}")
        bench = row["benchmark_tflops"]
        print(f"{row['problem']:40} {'benchmarks: run / bare':24} {bench['run']:5.0f} / {bench['bare']:4.0f}  "
              f"run/bare {row['benchmark_run_vs_bare']:.3f}; loop run/bare {row['loop_run_vs_bare']:.3f} "
              f"(target >= {1 - TARGETS['loop_gap']:.2f})")
    print("\nCUDA graph replay equal to eager: " + ", ".join(f"{k} {v}" for k, v in graph.items()))


if __name__ == "__main__":
    sys.exit(main())
