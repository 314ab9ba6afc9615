"""``FigureSlot``: a plotly FigureWidget that shows a placeholder at once and draws itself when it is ready.

The first FigureWidget in a kernel imports plotly's widget machinery (several seconds on a busy machine), and a
cell that builds one shows nothing until then. In a kernel the slot shows an HTML placeholder with a progress
bar, returns, and builds the figure on the kernel's loop right after the cell has displayed it; drawings asked
for meanwhile are kept (the newest one) and applied when the figure exists. Without a running loop (plain
Python, tests) or once plotly's widgets are loaded, the figure is built at once.
"""

from __future__ import annotations

import asyncio
import html
import sys
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

WIDGET_MODULE = "plotly.basewidget"  # what the first FigureWidget imports (the slow part)


def placeholder_html(note: str) -> str:
    return (f'<div class="tslab-figure-placeholder" style="color:#57606a;padding:8px">'
            f'<progress style="width:160px;vertical-align:middle"></progress> {html.escape(note)}</div>')


def fit_to_column(figure: Any) -> None:
    """Let a FigureWidget without a set width follow its column's width when the window resizes."""
    figure._config = {**figure._config, "responsive": True}


class FigureSlot(widgets.VBox):
    """Holds one ``go.FigureWidget`` (``figure``); ``draw(fn)`` calls ``fn(figure)`` now or once it is built."""

    def __init__(self, *, note: str = "drawing…", layout: dict[str, Any] | None = None,
                 make: Callable[[], Any] | None = None) -> None:
        """``make()`` builds the figure (from the owner's state when it runs); else an empty one with ``layout``."""
        super().__init__([widgets.HTML(placeholder_html(note))])
        self.add_class("tslab-figure-slot")
        self._figure_layout = layout or {}
        self._make = make
        self._figure: Any = None
        self._drawing: Callable[[Any], None] | None = None
        self.build_seconds: float | None = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or WIDGET_MODULE in sys.modules:
            self._build()
        else:
            loop.call_soon(self._build)

    @property
    def ready(self) -> bool:
        return self._figure is not None

    @property
    def figure(self) -> Any:
        """The FigureWidget (built now if it was still pending)."""
        self._build()
        return self._figure

    def draw(self, drawing: Callable[[Any], None]) -> None:
        """Apply ``drawing(figure)`` now, or when the figure is built (a newer drawing replaces a waiting one)."""
        if self._figure is None:
            self._drawing = drawing
        else:
            drawing(self._figure)

    def _build(self) -> None:
        if self._figure is not None:
            return
        import plotly.graph_objects as go

        started = time.perf_counter()
        self._figure = self._make() if self._make is not None else go.FigureWidget(layout=self._figure_layout)
        fit_to_column(self._figure)
        drawing, self._drawing = self._drawing, None
        if drawing is not None:
            drawing(self._figure)
        self.children = [self._figure]
        self.build_seconds = time.perf_counter() - started
