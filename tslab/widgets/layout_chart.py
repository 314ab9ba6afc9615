"""``LayoutChart``: the SMEM/TMEM map of a Verdict beside the same design laid out without aliasing.

Each map sits in a ``FigureSlot``: in a kernel that has not drawn a plotly figure yet, a placeholder shows at
once and the map replaces it when plotly is ready.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

from ..core.check import check
from ..core.verdict import Verdict
from .figure_slot import FigureSlot
from .layout_data import TEMPLATE, layout_chart_data, layout_spec, summary_text


def without_aliasing(verdict: Verdict) -> Verdict | None:
    """The verdict of the same design with no alias groups (TS's allocator lays it out), or None.

    None when the design has no alias group (the map would be the same) or cannot be lowered.
    """
    design = verdict.design
    if design is None or verdict.layout.empty or verdict.layout["alias_group"].isna().all():
        return None
    return check(design.with_alias_groups([]))


def chart_data(verdict: Verdict) -> dict[str, Any]:
    """What a LayoutChart shows: ``{"layout": ..., "without_aliasing": ... or None}`` as plain data."""
    other = without_aliasing(verdict)
    return {"layout": layout_chart_data(verdict),
            "without_aliasing": layout_chart_data(other) if other is not None else None}


class LayoutChart(widgets.VBox):
    """Memory map of a verdict with a summary line; ``update(verdict)`` redraws in place.

    ``width`` (pixels) is shared by the two maps when the what-if without aliasing is shown; None (the
    default) lets each map take the width of its column.
    """

    def __init__(self, verdict: Verdict, *, width: int | None = None) -> None:
        super().__init__()
        self.width = width
        self._summary = widgets.HTML()
        self._summary.add_class("tslab-layout-summary")
        self._main = FigureSlot(note="drawing the memory map…", layout={"template": TEMPLATE})
        self._other = FigureSlot(note="drawing the map without aliasing…", layout={"template": TEMPLATE})
        self._what_if_box = widgets.VBox([self._other])
        self._what_if_box.layout = widgets.Layout(flex="1 1 300px", min_width="0")
        main = widgets.VBox([self._main], layout=widgets.Layout(flex="1 1 300px", min_width="0"))
        self.children = [self._summary, widgets.HBox([main, self._what_if_box],
                                                     layout=widgets.Layout(flex_flow="row wrap"))]
        self.data: dict[str, Any] = {}
        self.update(verdict)

    @property
    def figure(self) -> go.FigureWidget:
        """The memory map's FigureWidget."""
        return self._main.figure

    @property
    def what_if(self) -> go.FigureWidget:
        """The map of the same design without aliasing (hidden when the design has no alias group)."""
        return self._other.figure

    def __repr__(self) -> str:
        return f"LayoutChart({summary_text(self.data['layout'])})" if self.data else "LayoutChart()"

    def update(self, verdict: Verdict) -> None:
        """Show ``verdict``'s layout (and the what-if without aliasing)."""
        self.verdict = verdict
        self.data = chart_data(verdict)
        main, other = self.data["layout"], self.data["without_aliasing"]
        text = summary_text(main)
        if other is not None:
            s = other["summary"]
            text += f"; without aliasing {s['smem_used']:,} B" + ("" if s["fits"] else " (does not fit)")
        self._summary.value = f'<span class="tslab-layout-text">{html.escape(text)}</span>'
        width = self.width // 2 if other is not None and self.width else self.width
        spec = layout_spec(main, "with aliasing" if other is not None else "layout", width)
        self._main.draw(lambda figure: _redraw(figure, spec))
        self._what_if_box.layout.display = None if other is not None else "none"
        if other is not None:
            other_spec = layout_spec(other, "without aliasing", width)
            self._other.draw(lambda figure: _redraw(figure, other_spec))


def _redraw(target: go.FigureWidget, spec: dict[str, Any]) -> None:
    """Replace traces and layout; the template is set once (copying it costs more than the rest)."""
    layout = {k: v for k, v in spec["layout"].items() if k != "template"}
    with target.batch_update():
        target.data = ()
        target.add_traces(spec["data"])
        target.layout.update(layout, overwrite=True)
