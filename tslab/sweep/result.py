"""``SweepResult``: one row per point as a pandas DataFrame, with the best point, the Pareto front and the
pruned counts; saved as CSV or parquet."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import SweepError

#: Figure columns of the table, after the point's own columns (a column appears only when some row has it).
FIGURES: tuple[str, ...] = ("status", "reason", "error_kind", "error", "verdict", "smem_bytes", "tmem_cols",
                            "states", "check_s", "registers", "spills", "compile_s", "device", "median_us",
                            "p10_us", "p90_us", "gbps", "tflops", "ratio")
#: Columns that count something (integers, missing where a stage did not run).
COUNTS: tuple[str, ...] = ("smem_bytes", "tmem_cols", "states", "registers", "spills")
#: Metrics where lower is better (``best`` and ``pareto`` minimise these, maximise the rest).
LOWER_IS_BETTER: frozenset[str] = frozenset({"median_us", "p10_us", "p90_us", "smem_bytes", "tmem_cols",
                                             "registers", "spills", "compile_s", "check_s", "states"})


class SweepResult:
    """What a sweep found: ``table`` (one row per finished point), ``pruned`` (counts by reason), ``skipped``
    (points found finished in the store), ``not_started`` (points a budget left out)."""

    def __init__(self, design: Any, names: list[str], rows: list[dict[str, Any]], *, measure: str,
                 skipped: int = 0, not_started: int = 0, seconds: float = 0.0) -> None:
        self.design = design
        self.names = names
        self.measure = measure
        self.skipped = skipped
        self.not_started = not_started
        self.seconds = seconds
        columns = list(dict.fromkeys([*names, *FIGURES, *(k for r in rows for k in r)]))
        table = pd.DataFrame(rows, columns=columns)
        for column in COUNTS:
            if column in table:
                table[column] = table[column].astype("Int64")  # counts stay integers beside missing values
        self.table = table[[c for c in columns if c in names or c == "status" or table[c].notna().any()]]

    @property
    def pruned(self) -> dict[str, int]:
        """How many points TS's checks pruned, by reason (deadlock, race, capacity, invalid, not-proven, ...)."""
        t = self.table
        if "reason" not in t:
            return {}
        return dict(Counter(t.loc[t["status"] == "pruned", "reason"]).most_common())

    @property
    def counts(self) -> dict[str, int]:
        """Points by status (ok, pruned, compile-failed, run-failed, bench-failed)."""
        return dict(Counter(self.table["status"]).most_common()) if len(self.table) else {}

    def ok(self) -> pd.DataFrame:
        """The rows of points that passed every stage the sweep ran."""
        return self.table[self.table["status"] == "ok"]

    def _metric(self, metric: str) -> pd.DataFrame:
        if metric not in self.table:
            raise SweepError(f"sweep result: no column '{metric}'; columns are {', '.join(self.table.columns)}")
        return self.ok().dropna(subset=[metric])

    def best(self, metric: str = "median_us", mode: str | None = None) -> pd.Series | None:
        """The ok row with the best ``metric`` (``mode`` "min" or "max"; default by the metric), or None."""
        rows = self._metric(metric)
        if rows.empty:
            return None
        mode = mode or ("min" if metric in LOWER_IS_BETTER else "max")
        return rows.loc[rows[metric].idxmin() if mode == "min" else rows[metric].idxmax()]

    def pareto(self, x: str, y: str) -> pd.DataFrame:
        """The ok rows no other ok row beats on both ``x`` and ``y`` (directions by metric), sorted by ``x``."""
        rows = self._metric(x).dropna(subset=[y]) if y in self.table else self._metric(y)
        sx = 1 if x in LOWER_IS_BETTER else -1
        sy = 1 if y in LOWER_IS_BETTER else -1
        keep = []
        for i, row in rows.iterrows():
            a, b = sx * row[x], sy * row[y]
            beaten = ((sx * rows[x] <= a) & (sy * rows[y] <= b) & ((sx * rows[x] < a) | (sy * rows[y] < b))).any()
            if not beaten:
                keep.append(i)
        return rows.loc[keep].sort_values(x)

    @classmethod
    def load(cls, path: str | Path) -> SweepResult:
        """The points a sweep store holds (its header names the design and the measure)."""
        from ..core.design import Design
        from .store import read

        header, records = read(path)
        if header is None:
            raise SweepError(f"sweep store '{path}' is empty; run a sweep with store='{path}' first")
        names = list(dict.fromkeys(k for r in records for k in r["point"]))
        return cls(Design.from_dict(header["design"]), names, [{**r["point"], **r["row"]} for r in records],
                   measure=header["measure"])

    def to_csv(self, path: str | Path) -> None:
        self.table.to_csv(path, index=False)

    def to_parquet(self, path: str | Path) -> None:
        try:
            self.table.to_parquet(path, index=False)
        except ImportError:
            raise SweepError('sweep result: writing parquet needs pyarrow; run: pip install pyarrow') from None

    def summary(self) -> str:
        """One line: how many points, by status, pruned by reason, skipped from the store, left by the budget."""
        parts = [f"{len(self.table)} points"] + [f"{n} {s}" for s, n in self.counts.items()]
        if self.pruned:
            parts.append("pruned: " + ", ".join(f"{n} {r}" for r, n in self.pruned.items()))
        if self.skipped:
            parts.append(f"{self.skipped} already in the store")
        if self.not_started:
            parts.append(f"{self.not_started} not started (budget)")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"<SweepResult {self.design.kernel} measure={self.measure}: {self.summary()}>"

    def _repr_html_(self) -> str:
        return f"<p><b>sweep of <code>{self.design.kernel}</code></b>: {self.summary()}</p>" + self.table.to_html(
            index=False, max_rows=40, float_format="%.3f")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": repr(self), "text/html": self._repr_html_()}
