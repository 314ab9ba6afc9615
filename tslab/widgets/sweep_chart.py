"""``SweepChart``: a sweep's points as a scatter of any two columns, coloured by status, with the Pareto front;
clicking a point opens its design in a Studio below; pruned points are tabled by reason. It fills in live when
passed to a running sweep as ``on_row=chart.add_row``."""

from __future__ import annotations

import html
import json
import threading
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd
import plotly.graph_objects as go

from ..core.design import Design
from ..sweep.errors import SweepError
from ..sweep.result import FIGURES, SweepResult
from ..sweep.space import apply
from .saved_output import SavedOutput

STATUS_COLOURS = {"ok": "#1a7f37", "pruned": "#cf222e", "compile-failed": "#9a6700", "run-failed": "#8250df",
                  "bench-failed": "#6e7781"}
#: A saved chart's payload: the figure as plotly's own renderer draws it.
PLOTLY = "application/vnd.plotly.v1+json"
#: Figure columns a chart may plot, listed in the axis menus after the point's own columns.
NUMERIC = ("smem_bytes", "tmem_cols", "states", "registers", "spills", "compile_s", "check_s", "median_us",
           "p10_us", "p90_us", "gbps", "tflops", "ratio")


def default_axes(table: pd.DataFrame) -> tuple[str, str]:
    """SMEM against time (or TFLOP/s) when the sweep timed points; else against registers, else states."""
    for y in ("tflops", "median_us", "registers", "states"):
        if y in table and table[y].notna().any():
            return "smem_bytes", y
    return "smem_bytes", "states"


def _label(row: pd.Series, names: list[str]) -> str:
    return ", ".join(f"{n}={row[n]}" for n in names)


def chart_data(result: SweepResult, x: str, y: str) -> dict[str, Any]:
    """What the chart draws, as plain data: points by status (with their params), the front, the pruned table."""
    t = result.table
    groups = {}
    for status, rows in t.groupby("status", sort=False) if x in t and y in t else ():
        shown = rows.dropna(subset=[x, y])
        if len(shown):
            groups[status] = {"x": shown[x].tolist(), "y": shown[y].tolist(), "index": shown.index.tolist(),
                              "text": [_label(r, result.names) for _, r in shown.iterrows()]}
    front = result.pareto(x, y) if x in t and y in t else t.iloc[:0]
    pruned = t[t["status"] == "pruned"].groupby("reason", sort=False) if "reason" in t else ()
    by_reason = [{"reason": reason, "count": len(rows), "points": [_label(r, result.names) for _, r in rows.iterrows()],
                  "example": str(rows["error"].iloc[0]) if "error" in rows else ""} for reason, rows in pruned]
    return {"x": x, "y": y, "groups": groups,
            "front": {"x": front[x].tolist() if len(front) else [], "y": front[y].tolist() if len(front) else []},
            "pruned": by_reason, "summary": result.summary()}


#: Pruned points listed by name per reason; the rest are counted (the table's ``points`` column has them all).
LISTED = 4


def _first(points: list[str]) -> str:
    more = len(points) - LISTED
    return "; ".join(points[:LISTED]) + (f"; and {more} more" if more > 0 else "")


class SweepChart(SavedOutput, widgets.VBox):
    """A sweep's points: a scatter (axis menus), the pruned table, and the Studio of the clicked point.

    ``source``: a :class:`SweepResult`, a sweep store file (re-read by :meth:`refresh`), or a base design to fill
    in live with ``tslab.sweep(design, space, on_row=chart.add_row)``.
    """

    def __init__(self, source: SweepResult | Design | str | Path, *, x: str | None = None, y: str | None = None,
                 width: int = 540) -> None:
        super().__init__()
        self.add_class("tslab-sweep-chart")
        self._path = Path(source) if isinstance(source, (str, Path)) else None
        if isinstance(source, Design):
            source = SweepResult(source, [], [], measure="live")
        self.result = SweepResult.load(self._path) if self._path is not None else source
        self._rows = self.result.table.to_dict("records")
        self._auto_axes = x is None and y is None  # follow the data (registers arrive after the first compile)
        self.x, self.y = x or default_axes(self.result.table)[0], y or default_axes(self.result.table)[1]
        # A fixed width: plotly draws an autosized FigureWidget 700 px wide, past a notebook at 1000 px.
        self.figure = go.FigureWidget(layout={"width": width, "height": 420, "margin": {"t": 30},
                                              "legend": {"title": {"text": "status"}}})
        self._x_menu = widgets.Dropdown(description="x", options=(), value=None)
        self._y_menu = widgets.Dropdown(description="y", options=(), value=None)
        self._syncing = False  # True while redraw sets the menus (their events are not the user's choice)
        self._x_menu.observe(lambda c: self._syncing or self.set_axes(x=c["new"]), names="value")
        self._y_menu.observe(lambda c: self._syncing or self.set_axes(y=c["new"]), names="value")
        self._summary = widgets.HTML()
        self._pruned = widgets.HTML()
        self.studio_box = widgets.VBox()
        self.studio: Any = None
        self.children = [self._summary, widgets.HBox([self._x_menu, self._y_menu]), self.figure,
                         widgets.HTML("<b>pruned by TS's checks</b>"), self._pruned, self.studio_box]
        self.data: dict[str, Any] = {}
        self._poller: threading.Thread | None = None
        self._stopped = threading.Event()
        self.redraw()

    def saved_bundle(self) -> dict[str, Any]:
        """The scatter as a plotly figure: what a saved notebook draws in place of the chart."""
        figure = json.loads(go.Figure(self.figure).to_json())
        figure.get("layout", {}).pop("template", None)  # plotly's default theme: 10 KB of a notebook per chart
        return {PLOTLY: figure}

    def __repr__(self) -> str:
        return f"SweepChart({self.x} vs {self.y}: {self.result.summary()})"

    def add_row(self, row: dict[str, Any]) -> None:
        """Add one finished point and redraw (pass as ``on_row`` to a running sweep)."""
        self._rows.append(row)
        names = self.result.names or [k for k in row if k not in FIGURES]
        self.result = SweepResult(self.result.design, names, self._rows, measure=self.result.measure)
        self.redraw()

    def refresh(self) -> None:
        """Re-read the store file this chart was opened on (a sweep writing it may have added points)."""
        if self._path is not None:
            self.result = SweepResult.load(self._path)
            self._rows = self.result.table.to_dict("records")
            self.redraw()

    def follow(self, every_s: float = 2.0) -> None:
        """Poll the store file in the background and redraw when it grew (a sweep running elsewhere: another
        process, the command line, a cluster); :meth:`stop` ends it."""
        if self._path is None:
            raise SweepError("SweepChart: follow() polls a store file; open the chart on one, e.g. "
                             "SweepChart('sweep.jsonl'), or pass on_row=chart.add_row to the sweep")
        self.stop()
        self._stopped = threading.Event()
        seen = [self._path.stat().st_size]

        def poll(stopped: threading.Event = self._stopped) -> None:
            while not stopped.wait(every_s):
                size = self._path.stat().st_size
                if size != seen[0]:
                    seen[0] = size
                    self.refresh()

        self._poller = threading.Thread(target=poll, name="tslab-sweep-chart", daemon=True)
        self._poller.start()

    def stop(self) -> None:
        """Stop following the store file."""
        if self._poller is not None:
            self._stopped.set()
            self._poller.join()
            self._poller = None

    def set_axes(self, x: str | None = None, y: str | None = None) -> None:
        """Plot ``x`` against ``y`` (the axis menus call this); the chart then keeps these axes."""
        self._auto_axes = False
        self.x, self.y = x or self.x, y or self.y
        self.redraw()

    def redraw(self) -> None:
        if self._auto_axes:
            self.x, self.y = default_axes(self.result.table)
        options = tuple(dict.fromkeys([*self.result.names, *NUMERIC, self.x, self.y]))
        self._syncing = True
        try:
            for menu, value in ((self._x_menu, self.x), (self._y_menu, self.y)):
                if menu.options != options:
                    menu.options = options
                menu.value = value
        finally:
            self._syncing = False
        self.data = data = chart_data(self.result, self.x, self.y)
        self._summary.value = f"<span class='tslab-sweep-summary'>{html.escape(data['summary'])}</span>"
        with self.figure.batch_update():
            self.figure.data = ()
            for status, g in data["groups"].items():
                self.figure.add_scatter(x=g["x"], y=g["y"], mode="markers", name=status, text=g["text"],
                                        customdata=g["index"], marker={"color": STATUS_COLOURS.get(status, "#000"),
                                                                       "size": 9},
                                        hovertemplate=f"%{{text}}<br>{self.x}=%{{x}}<br>{self.y}=%{{y}}"
                                                      f"<extra>{status}</extra>")
            if data["front"]["x"]:
                self.figure.add_scatter(x=data["front"]["x"], y=data["front"]["y"], mode="lines",
                                        name="Pareto front", line={"dash": "dot", "color": "#0969da"},
                                        hoverinfo="skip")
            self.figure.layout.xaxis.title = self.x
            self.figure.layout.yaxis.title = self.y
        for trace in self.figure.data:
            if trace.customdata is not None:
                trace.on_click(self._clicked)
        rows = "".join(f"<tr><td>{html.escape(p['reason'])}</td><td>{p['count']}</td>"
                       f"<td>{html.escape(_first(p['points']))}</td><td>{html.escape(p['example'])}</td></tr>"
                       for p in data["pruned"])
        self._pruned.value = ("<table class='tslab-sweep-pruned'><tr><th>reason</th><th>points</th><th>which</th>"
                              f"<th>TS says (first)</th></tr>{rows}</table>" if rows else "<i>none</i>")
        self.refresh_saved()

    def _clicked(self, trace: Any, points: Any, _state: Any) -> None:
        if points.point_inds:
            self.open_point(int(trace.customdata[points.point_inds[0]]))

    def open_point(self, index: int) -> Any:
        """Open the design of table row ``index`` in a Studio below the chart; returns the Studio."""
        from .studio import Studio

        row = self.result.table.loc[index]
        point = {n: _plain(row[n]) for n in self.result.names}
        self.studio = Studio(apply(self.result.design, point))
        self.studio_box.children = [widgets.HTML(f"<b>point</b> <code>{html.escape(json.dumps(point))}</code>"),
                                    self.studio]
        return self.studio


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
