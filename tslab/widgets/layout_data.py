"""Memory-map chart data from a Verdict, as plain data (the maps themselves are drawn by ``LayoutView``).

SMEM: one bar per allocation at its byte offset, aliased phases on their own rows at the same offsets in
distinct colours (the lab extension's ``views/layout`` uses the same ones), the pipeline barriers, and the
capacity. TMEM (when present): one bar per allocation over its columns, aliased phases the same way, and the
capacity of 512 columns. The layout is the one TS's allocators computed; nothing is recomputed here.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

PLAIN, BARRIER = "#4c78a8", "#9d755d"
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
               "tmem_used": verdict.tmem_total, "tmem_capacity": verdict.tmem_capacity,
               "tmem_fits": verdict.tmem_total <= verdict.tmem_capacity,
               "tmem_alias_savings": verdict.tmem_alias_savings}
    return {"status": verdict.status, "smem": smem_bars, "tmem": tmem_bars, "summary": summary}


def summary_text(data: dict[str, Any]) -> str:
    """One line: used / capacity and what aliasing saves."""
    s = data["summary"]
    text = (f"SMEM {s['smem_used']:,} / {s['smem_capacity']:,} B ({s['smem_data']:,} data + "
            f"{s['barrier_bytes']:,} barriers); alias savings {s['alias_savings']:,} B ({s['alias_savings_pct']}%)")
    if data["tmem"]:
        text += f"; TMEM {s['tmem_used']} / {s['tmem_capacity']} columns"
        if s["tmem_alias_savings"]:
            text += f" (alias savings {s['tmem_alias_savings']} columns)"
        if not s["tmem_fits"]:
            text += f", {s['tmem_used'] - s['tmem_capacity']} over"
    return text
