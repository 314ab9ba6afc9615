"""``LayoutChart``: the SMEM/TMEM map of a Verdict beside the same design laid out without aliasing.

Each map is a :class:`LayoutView`, drawn by the lab extension's ``views/layout`` module
(``labextension/src/widgets/layout.ts``), the same code that draws a saved verdict's memory map.
"""

from __future__ import annotations

import html
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets

from ..core import mime
from ..core.check import check
from ..core.verdict import Verdict
from .bundles import bundle
from .layout_data import layout_chart_data, summary_text
from .saved_output import SavedOutput


class LayoutView(anywidget.AnyWidget):
    """One memory map: TS's layout rows, the memory figures, a heading and the width in pixels.

    (Not ``layout``, ``title`` or ``width``: ipywidgets' own traits for the widget's box have those names.)
    """

    _esm = bundle("layout.js")
    _css = bundle("tslab.css", "")
    allocations = traitlets.List().tag(sync=True)
    memory = traitlets.Dict().tag(sync=True)
    heading = traitlets.Unicode("").tag(sync=True)
    map_width = traitlets.Int(760).tag(sync=True)
    #: Whether the map prints its own summary line (a LayoutChart prints one line for both maps instead).
    summary = traitlets.Bool(True).tag(sync=True)

    def show(self, verdict: Verdict, heading: str = "") -> None:
        """Draw ``verdict``'s layout."""
        with self.hold_sync():
            self.allocations, self.memory, self.heading = verdict.layout_rows(), verdict.memory(), heading


def without_aliasing(verdict: Verdict) -> Verdict | None:
    """The verdict of the same design with no SMEM alias groups (TS's allocator lays it out), or None.

    None when the design has no SMEM alias group (the map would be the same; TMEM alias groups are the kernel's
    own and stay) or cannot be lowered.
    """
    design = verdict.design
    smem = verdict.layout[verdict.layout["space"] == "smem"]
    if design is None or smem.empty or smem["alias_group"].isna().all():
        return None
    return check(design.with_alias_groups([]))


def chart_data(verdict: Verdict) -> dict[str, Any]:
    """What a LayoutChart shows: ``{"layout": ..., "without_aliasing": ... or None}`` as plain data."""
    other = without_aliasing(verdict)
    return {"layout": layout_chart_data(verdict),
            "without_aliasing": layout_chart_data(other) if other is not None else None}


class LayoutChart(SavedOutput, widgets.VBox):
    """Memory map of a verdict with a summary line; ``update(verdict)`` redraws in place.

    ``width`` (pixels) is shared by the two maps when the what-if without aliasing is shown; in a page, each
    map takes at most its share of the width the output gives.
    """

    def __init__(self, verdict: Verdict, *, width: int = 760) -> None:
        super().__init__()
        self.width = width
        self._summary = widgets.HTML()
        self._summary.add_class("tslab-layout-summary")
        # each map takes its share of the width the output gives; under 2 x 280 px the what-if goes below
        half = {"flex": "1 1 280px", "min_width": "0"}
        self.map = LayoutView(summary=False, layout=widgets.Layout(**half))
        self.what_if = LayoutView(summary=False, layout=widgets.Layout(width="100%"))
        self._what_if_box = widgets.VBox([self.what_if], layout=widgets.Layout(**half))
        maps = widgets.HBox([self.map, self._what_if_box], layout=widgets.Layout(width="100%", flex_flow="row wrap"))
        self.children = [self._summary, maps]
        self.data: dict[str, Any] = {}
        self.update(verdict)

    def saved_bundle(self) -> dict[str, Any]:
        """The verdict whose memory map this is, for a saved notebook."""
        return {mime.VERDICT: self.verdict.to_mime()}

    def __repr__(self) -> str:
        return f"LayoutChart({summary_text(self.data['layout'])})" if self.data else "LayoutChart()"

    def update(self, verdict: Verdict) -> None:
        """Show ``verdict``'s layout (and the what-if without aliasing)."""
        self.verdict = verdict
        other = without_aliasing(verdict)
        self.data = {"layout": layout_chart_data(verdict),
                     "without_aliasing": layout_chart_data(other) if other is not None else None}
        text = summary_text(self.data["layout"])
        if other is not None:
            s = self.data["without_aliasing"]["summary"]
            text += f"; without aliasing {s['smem_used']:,} B" + ("" if s["fits"] else " (does not fit)")
        width = self.width // 2 if other is not None else self.width
        self.map.map_width = self.what_if.map_width = width
        self.map.show(verdict, "with aliasing" if other is not None else "")  # one map: the summary says it all
        self._what_if_box.layout.display = None if other is not None else "none"
        if other is not None:
            self.what_if.show(other, "without aliasing")
        self._summary.value = f'<span class="tslab-layout-text">{html.escape(text)}</span>'  # last: maps drawn
        self.refresh_saved()
