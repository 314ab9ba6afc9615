"""States and seconds of TS's breadth-first search and of tslab's reduced search, design by design.

Run: ``python benchmarks/checker.py`` (``--ts-max-states N`` bounds TS's search, default its own 1,000,000).
Each row checks one design with ``tslab.check(design, strategy=...)`` both ways, in alternation, on fresh TS
objects: the catalog, the attention schedule of our own (``notebooks/kernels/attention_schedule.py``, with its
real trip counts), and, when their sources are named, FlashInfer's TS attention kernels
(``TSLAB_FLASHINFER_SRC``) and NVIDIA's cluster GEMM tutorial (``TSLAB_CUTLASS_SRC``, a checkout of
NVIDIA/cutlass). Timings are wall seconds of the whole check (lowering, TS's structural checks and the search);
``ratio`` is TS's states over the reduced search's (a lower bound, ``>=``, when TS stopped at its limit).
Targets: every design decided by the reduced search (its search ends in safe, deadlock or race, whatever the
capacity check says) in under 10 s (1 s for the catalog), and at least 10x fewer states than TS's search on every
design over 10,000 states.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import tslab
from tslab.kernels import catalog, design

ROOT = Path(__file__).resolve().parents[1]
ATTENTION = ROOT / "notebooks" / "kernels" / "attention_schedule.py"
ATTENTION_TRIPS = {"LoadTask": "n", "SoftmaxTask": "n", "MmaTask": "n-1", "CorrectionTask": "n-1"}
CLUSTER_GEMM = "examples/python/CuTeDSL/experimental/task_scheduling/blackwell/tutorial/04_gemm_bf16_advanced_ts/" \
               "01_fp16_bf16_gemm_3_cluster.py"
DECIDED = {"safe", "deadlock", "race", "pdl-order"}  # what the search concluded (a capacity error is separate)


def designs(tmp: Path) -> Iterator[tuple[str, str, Callable[[], Any], dict[str, Any]]]:
    """``(group, label, design factory, check keywords)`` for every row."""
    for info in catalog():
        yield "catalog", info.name, lambda name=info.name: design(name), {}
    yield "catalog", "gemm_sm90 stages=5", lambda: design("gemm_sm90", stages=5), {}
    attention = tslab.capture_file(ATTENTION, "attention", tslab.fake.tensor("f16", (1024, 128)), 8)
    yield "own", "attention (one trip)", lambda: attention, {}
    for store in ("gmem_o", "smem_o"):
        variant = attention.with_knobs(store_via=store)
        for n in (1, 4, 8):
            yield "own", f"attention store_via={store} n={n}", lambda v=variant: v, {"trips": ATTENTION_TRIPS, "n": n}
    yield from _flashinfer(tmp)
    yield from _cluster_gemm()


def _flashinfer(tmp: Path) -> Iterator[tuple[str, str, Callable[[], Any], dict[str, Any]]]:
    if not os.environ.get("TSLAB_FLASHINFER_SRC"):
        return
    sys.path.insert(0, str(ROOT / "tests"))  # the capture recipe the FlashInfer tests use
    import flashinfer_kernels as fi

    decode = fi.capture_decode(tmp).managers[0].design
    yield "flashinfer", "paged decode", lambda: decode, {}
    context = fi.capture_context(tmp).managers[0].design
    yield "flashinfer", "context FMHA (one trip)", lambda: context, {}
    for n in (1, 4, 16):
        yield "flashinfer", f"context FMHA n={n}", lambda: context, {"trips": fi.CONTEXT_TRIPS, "n": n}


def _cluster_gemm() -> Iterator[tuple[str, str, Callable[[], Any], dict[str, Any]]]:
    src = os.environ.get("TSLAB_CUTLASS_SRC")
    if not src:
        return
    from tslab.capture import CaptureError
    from tslab.capture.cli import capture_target_all

    specs = ["f16[512,256]", "f16[512,256]", "f16[512,512]", "(512,512,256)", "148", "stream"]
    try:
        result = capture_target_all(f"{Path(src) / CLUSTER_GEMM}::host_function", specs, arch="sm_100a")
    except CaptureError as exc:  # written for CuTe DSL 4.7: its trace stops after the TaskManager is built
        result = exc.result
    gemm = result.managers[0].design
    yield "nvidia", "cluster GEMM tutorial", lambda: gemm, {}


def timed(make: Callable[[], Any], strategy: str, max_states: int, kw: dict[str, Any]) -> tuple[Any, float]:
    d = make()
    start = time.perf_counter()
    verdict = tslab.check(d, strategy=strategy, max_states=max_states, **kw)
    return verdict, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ts-max-states", type=int, default=1_000_000, help="bound of TS's search")
    parser.add_argument("--skip-ts", action="store_true", help="time the reduced search only")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for group, label, make, kw in designs(Path(tmp)):
            reduced, rs = timed(make, "reduced", 1_000_000, kw)
            ts, ts_s = (None, 0.0) if args.skip_ts else timed(make, "ts", args.ts_max_states, kw)
            rows.append((group, label, reduced, rs, ts, ts_s))
            print(_row(*rows[-1]), flush=True)
    print("\n" + _table(rows))


def _row(group: str, label: str, reduced: Any, rs: float, ts: Any, ts_s: float) -> str:
    rc = reduced.checker
    text = f"{group:10s} {label:38s} reduced {reduced.status:17s} {rc.states_explored:>9,} {rs:7.2f} s"
    if ts is not None:
        tc = ts.checker
        text += f" | ts {ts.status:17s} {tc.states_explored:>10,} {ts_s:7.2f} s"
    return text


def _table(rows: list[tuple]) -> str:
    head = ("| group | design | reduced: verdict | states | s | TS: verdict | states | s | states ratio | target |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for group, label, reduced, rs, ts, ts_s in rows:
        rc = reduced.checker
        limit = 1.0 if group == "catalog" else 10.0
        ok = rc.verdict in DECIDED and rs < limit
        if ts is None:
            lines.append(f"| {group} | {label} | {reduced.status} | {rc.states_explored:,} | {rs:.2f} | | | | | "
                         f"{'met' if ok else 'MISSED'} |")
            continue
        tc = ts.checker
        ratio = tc.states_explored / max(rc.states_explored, 1)
        bound = ">= " if tc.hit_state_limit else ""
        if tc.states_explored > 10_000:
            ok = ok and ratio >= 10
        lines.append(f"| {group} | {label} | {reduced.status} | {rc.states_explored:,} | {rs:.2f} | {ts.status} | "
                     f"{tc.states_explored:,} | {ts_s:.2f} | {bound}{ratio:,.0f}x | {'met' if ok else 'MISSED'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
