"""Memory-map chart data from a Verdict (a pure function) and the plotly figure drawn from it.

SMEM: one bar per allocation at its byte offset, aliased phases on their own rows at the same offsets in
distinct colours, the pipeline barriers, and the capacity line. TMEM (when present): one bar per allocation
over its columns. The layout is the one TS's allocators computed; nothing is recomputed here.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

PLAIN, BARRIER, CAPACITY = "#4c78a8", "#9d755d", "#cf222e"
TEMPLATE = "plotly_white"
PHASE_COLOURS = ("#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#eeca3b")


def _colour(space: str, phase: Any) -> str:
    if space == "barrier":
        return BARRIER
    return PLAIN if phase is None else PHASE_COLOURS[int(phase) % len(PHASE_COLOURS)]


def _bars(layout: Any, spaces: tuple[str, ...]) -> list[dict[str, Any]]:
    bars = []
    for row in layout.itertuples(index=False):
        if row.space not in spaces:
            continue
        group = None if _missing(row.alias_group) else int(row.alias_group)
        phase = None if _missing(row.phase) else int(row.phase)
        bars.append({"name": row.name, "space": row.space, "offset": int(row.offset), "size": int(row.size),
                     "end": int(row.end), "alignment": int(row.alignment), "alias_group": group, "phase": phase,
                     "colour": _colour(row.space, phase),
                     "label": row.name if phase is None else f"{row.name} (group {group}, phase {phase})"})
    return bars


def _missing(value: Any) -> bool:
    return bool(pd.isna(value))


def layout_chart_data(verdict: Any) -> dict[str, Any]:
    """Everything the memory chart draws, as plain data: bars, capacity lines and the summary figures."""
    smem_bars = _bars(verdict.layout, ("smem", "barrier"))
    tmem_bars = _bars(verdict.layout, ("tmem",))
    unaliased = verdict.smem_total + verdict.alias_savings
    used = verdict.smem_used
    summary = {"smem_used": used, "smem_data": verdict.smem_total, "barrier_bytes": verdict.barrier_bytes,
               "smem_capacity": verdict.smem_capacity, "fits": used <= verdict.smem_capacity,
               "alias_savings": verdict.alias_savings,
               "alias_savings_pct": round(100.0 * verdict.alias_savings / unaliased, 1) if unaliased else 0.0,
               "tmem_used": verdict.tmem_total, "tmem_capacity": verdict.tmem_capacity}
    return {"status": verdict.status, "smem": smem_bars, "tmem": tmem_bars, "summary": summary}


def summary_text(data: dict[str, Any]) -> str:
    """One line: used / capacity and what aliasing saves."""
    s = data["summary"]
    text = (f"SMEM {s['smem_used']:,} / {s['smem_capacity']:,} B ({s['smem_data']:,} data + "
            f"{s['barrier_bytes']:,} barriers); alias savings {s['alias_savings']:,} B ({s['alias_savings_pct']}%)")
    if data["tmem"]:
        text += f"; TMEM {s['tmem_used']} / {s['tmem_capacity']} columns"
    return text


def _trace(bars: list[dict[str, Any]], unit: str, axis: str) -> dict[str, Any]:
    return {
        "type": "bar", "orientation": "h", "xaxis": f"x{axis}", "yaxis": f"y{axis}",
        "base": [b["offset"] for b in bars], "x": [b["size"] for b in bars], "y": [b["label"] for b in bars],
        "marker": {"color": [b["colour"] for b in bars], "line": {"width": 0}},
        "customdata": [[b["name"], b["size"], b["alignment"], b["offset"], b["end"],
                        "-" if b["phase"] is None else f"group {b['alias_group']}, phase {b['phase']}"] for b in bars],
        "hovertemplate": (f"<b>%{{customdata[0]}}</b><br>size %{{customdata[1]:,}} {unit}<br>alignment "
                          f"%{{customdata[2]}}<br>offset %{{customdata[3]:,}} .. %{{customdata[4]:,}}<br>"
                          "alias %{customdata[5]}<extra></extra>"),
        "showlegend": False}


def _capacity_line(x: int, axis: str) -> dict[str, Any]:
    return {"type": "line", "xref": f"x{axis}", "yref": f"y{axis} domain", "x0": x, "x1": x, "y0": 0, "y1": 1,
            "line": {"color": CAPACITY, "dash": "dash"},
            "label": {"text": f"capacity {x:,}", "textposition": "end", "font": {"size": 10, "color": CAPACITY}}}


def layout_spec(data: dict[str, Any], title: str = "", width: int | None = None) -> dict[str, Any]:
    """The memory map of ``data`` (from :func:`layout_chart_data`) as a plain plotly figure dict."""
    s = data["summary"]
    two = bool(data["tmem"])
    smem_domain = [0.45, 1.0] if two else [0.0, 1.0]
    layout: dict[str, Any] = {
        "title": {"text": f"{title + ': ' if title else ''}{s['smem_used']:,} / {s['smem_capacity']:,} B",
                  "font": {"size": 13}},
        "height": 160 + 28 * (len(data["smem"]) + len(data["tmem"])) + (80 if two else 0), "width": width,
        "margin": {"l": 10, "r": 10, "t": 60, "b": 30}, "bargap": 0.3, "template": TEMPLATE,
        "xaxis": {"range": [0, 1.05 * max(s["smem_capacity"], s["smem_used"], 1)], "anchor": "y",
                  "title": {"text": "SMEM bytes"}},
        "yaxis": {"domain": smem_domain, "autorange": "reversed", "automargin": True, "anchor": "x"},
        "shapes": [_capacity_line(s["smem_capacity"], "")], "annotations": []}
    traces = [_trace(data["smem"], "B", "")]
    if two:
        traces.append(_trace(data["tmem"], "columns", "2"))
        layout["xaxis2"] = {"range": [0, 1.05 * max(s["tmem_capacity"], s["tmem_used"], 1)], "anchor": "y2",
                            "title": {"text": "TMEM columns"}}
        layout["yaxis2"] = {"domain": [0.0, 0.3], "autorange": "reversed", "automargin": True, "anchor": "x2"}
        layout["shapes"].append(_capacity_line(s["tmem_capacity"], "2"))
    if not data["smem"]:
        layout["annotations"].append({"text": "no layout (the design could not be lowered)", "showarrow": False,
                                      "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5})
    return {"data": traces, "layout": layout}


def layout_figure(data: dict[str, Any], title: str = "", width: int | None = None) -> go.Figure:
    """The memory map of ``data`` as a plotly figure."""
    return go.Figure(layout_spec(data, title, width))
