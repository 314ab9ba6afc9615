"""``bench``: time kernels against torch's copy of the same tensors, cold L2, in a worker process."""

from __future__ import annotations

import json
import statistics
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd

from ..compiling.targets import Target, resolve
from .guards import require_gpu, require_gpu_for
from .worker import run_job


def _quantile(values: list[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[round(q * 10) - 1]


def _edits_label(r: dict[str, Any]) -> str:
    """What the design edits on top of its kernel's own schedule and aliasing ('' when nothing)."""
    parts = [f"schedule {task}" for task in r.get("schedules") or {}]
    if r.get("alias_groups") is not None:
        parts.append(f"alias groups {r['alias_groups']}")
    return "; ".join(parts)


class BenchResult:
    """One row per kernel and size: median and p10/p90 of the repeats, GB/s, the ratio to torch.

    GEMM rows also carry ``tflops``, ``torch_tflops`` (``torch.mm`` in the same worker) and ``pct_peak`` (of the
    H200's dense fp16/bf16 peak); their ``ratio`` is torch.mm's time over the kernel's.
    """

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.raw = rows
        self.table = pd.DataFrame([self._row(r) for r in rows])
        if not self.table.empty and self.table["torch_gbps"].notna().any():
            self.table["frac_peak"] = self.table["gbps"] / self.table["torch_gbps"].max()

    @staticmethod
    def _row(r: dict[str, Any]) -> dict[str, Any]:
        k = r["kernel_us"]
        med = statistics.median(k)
        row = {
            "kernel": r["kernel"],
            "shape": "x".join(map(str, r["shape"])),
            "dtype": r["dtype"],
            "params": ",".join(f"{a}={b}" for a, b in {**r["params"], **r["launch"]}.items()),
            "edits": _edits_label(r),
            "bytes": r["bytes"],
            "graphs": r["graphs"],
            "median_us": med,
            "p10_us": _quantile(k, 0.1),
            "p90_us": _quantile(k, 0.9),
            "gbps": r["bytes"] / med / 1e3,
            "torch_us": None,
            "torch_gbps": None,
            "ratio": None,
            "rel_error": r["rel_error"],
            "repeats": len(k),
            "workspaces": r["workspaces"],
        }
        if r["torch_us"]:
            t = statistics.median(r["torch_us"])
            row.update(torch_us=t, torch_gbps=r["bytes"] / t / 1e3, ratio=t / med)
        if r.get("flops"):  # a GEMM: rates in TFLOP/s, against torch.mm and the H200's dense peak
            from .gemm_jobs import H200_DENSE_PEAK_TFLOPS

            row.update(tflops=r["flops"] / med / 1e6, pct_peak=100 * r["flops"] / med / 1e6 / H200_DENSE_PEAK_TFLOPS)
            if r["torch_us"]:
                row["torch_tflops"] = r["flops"] / statistics.median(r["torch_us"]) / 1e6
        return row

    @classmethod
    def load(cls, path: str | Path) -> BenchResult:
        """A result saved with :meth:`save` (or written by ``benchmarks/copy_bandwidth.py --out``)."""
        return cls(json.loads(Path(path).read_text()))

    def save(self, path: str | Path) -> None:
        """Write the raw timings as JSON (every repeat, both kernel and torch)."""
        Path(path).write_text(json.dumps(self.raw, indent=1))

    def __len__(self) -> int:
        return len(self.table)

    def __repr__(self) -> str:
        cols = ["kernel", "shape", "params", "median_us", "p10_us", "p90_us", "gbps", "torch_gbps", "tflops",
                "torch_tflops", "pct_peak", "ratio"]
        return self.table[[c for c in cols if c in self.table]].to_string(index=False, float_format="%.3f")

    def _repr_html_(self) -> str:
        return self.table.to_html(index=False, float_format="%.3f")

    def plot(self) -> Any:
        """GB/s of each row next to torch's copy, as a plotly figure (imported only here).

        One horizontal bar per row, never merged: each row is labelled with its kernel and the shape and
        parameters that differ between rows, and rows that would still read the same are numbered.
        """
        import plotly.graph_objects as go

        t = self.table
        # The kernel on one line, what varies between rows on lines of their own: the labels leave the bars the width.
        labels = ["<br>".join([kernel, *textwrap.wrap(rest, 36)]) for kernel, _, rest in
                  (label.partition(" ") for label in row_labels(t))]
        hover = t["kernel"] + " " + t["shape"] + "<br>" + t["params"].str.replace(",", " ")
        fig = go.Figure()
        fig.add_bar(name="kernel", y=labels, x=t["gbps"], orientation="h", hovertext=hover,
                    text=t["ratio"].map(lambda r: f"{r:.3f}x torch" if r else ""), textposition="inside",
                    insidetextanchor="end")
        if t["torch_gbps"].notna().any():
            fig.add_scatter(name="torch copy (same run)", y=labels, x=t["torch_gbps"], mode="markers")
        fig.update_layout(xaxis_title="GB/s (read + write)", height=160 + 40 * len(t),
                          yaxis={"autorange": "reversed", "automargin": True, "type": "category"},
                          legend={"orientation": "h", "yanchor": "top", "y": -80 / (40 * len(t) + 60),
                                  "x": 0},
                          margin={"l": 10, "r": 10, "t": 30, "b": 90})
        return fig


def row_labels(table: pd.DataFrame) -> list[str]:
    """A distinct, short label per row: the kernel, then the shape and parameters that vary among its rows."""
    params = [dict(p.split("=", 1) for p in row.split(",") if "=" in p) for row in table["params"]]
    rows = list(zip(table["kernel"], table["shape"], params, strict=True))
    labels = []
    for kernel, shape, p in rows:
        same = [(s, q) for k, s, q in rows if k == kernel]
        varying = [key for key in p if len({q.get(key) for _, q in same}) > 1]
        shape_varies = len({s for s, _ in same}) > 1
        labels.append(" ".join([kernel, *([shape] if shape_varies else []), *(f"{k}={p[k]}" for k in varying)]))
    counts = {label: labels.count(label) for label in labels}
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        if counts[label] > 1:
            seen[label] = seen.get(label, 0) + 1
            labels[i] = f"{label} (run {seen[label]})"
    return labels


def bench(kernels: Any, *, sizes: list[tuple[int, ...]] | None = None, dtype: str | None = None,
          baseline: str | None = "torch", repeats: int = 5, iterations: int = 20, warmup: int = 5,
          use_cuda_graphs: bool = False, timeout: float = 600.0, progress: bool = True) -> BenchResult:
    """Time kernels at each size against torch's copy, in one worker process.

    ``kernels``: a design, a :class:`CompiledKernel`, a ``(design, launch_options)`` pair, or a list of those.
    Cold L2: each timing rotates over enough input/output pairs to exceed the L2 three times.
    """
    items = kernels if isinstance(kernels, list) else [kernels]
    targets: list[Target] = []
    for item in items:
        target = getattr(item, "target", None)
        for size in sizes or [None]:
            if target is not None:
                targets.append(target if size is None else target.with_shape(size))
            elif isinstance(item, tuple):
                targets.append(resolve(item[0], size, dtype, item[1]))
            else:
                targets.append(resolve(item, size, dtype))
    for t in targets:
        require_gpu_for(t, f"bench of '{t.kernel}'")
    if not targets:
        require_gpu("bench")
    rows = run_job("tslab.gpu.jobs:bench_job",
                   {"targets": [t.to_dict() for t in targets], "repeats": repeats, "iterations": iterations,
                    "warmup": warmup, "use_cuda_graphs": use_cuda_graphs, "baseline": baseline,
                    "progress": progress},
                   timeout=timeout, what="benchmark")
    return BenchResult(rows)
