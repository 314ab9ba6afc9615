"""What the editors share: the current valid design, listeners, an optional re-check after each edit, and how a
field's name is labelled."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
from ipywidgets.widgets.widget_string import HTMLStyle

from ..core import mime
from ..core.check import check
from ..core.design import Design
from ..core.verdict import Verdict
from .badge import badge_html
from .history import changes_nothing
from .saved_output import SavedOutput


class DesignHolder(SavedOutput):
    """Keeps the last valid design (set up by ``_hold``); ``accept`` makes an edit current, re-checks, notifies.

    ``last_label``: the newest edit in words, where the editor knows it;
    ``shown_note()`` names the design on show for the note beside a refused field (a Studio gives its history
    entry, e.g. ``" (#3)"``).
    """

    #: What the newest edit did, in words, where the editor knows better than a diff (a schedule move); else None.
    last_label: str | None = None
    shown_note: Callable[[], str] = staticmethod(lambda: "")

    def _hold(self, design: Design, *, auto_check: bool) -> None:
        self._design = design
        self._auto_check = auto_check
        self._listeners: list[Callable[[Design], None]] = []
        self._refusal_listeners: list[Callable[[dict], None]] = []
        self.verdict: Verdict | None = check(design) if auto_check else None
        self.status = widgets.HTML(badge_html(self.verdict) if self.verdict else "")

    @property
    def design(self) -> Design:
        """The last valid design."""
        return self._design

    def on_design(self, callback: Callable[[Design], None]) -> None:
        """Call ``callback(new_design)`` after every accepted edit."""
        self._listeners.append(callback)

    def on_refused(self, callback: Callable[[dict], None]) -> None:
        """Call ``callback(errors)`` whenever the set of refused fields changes (``{}``: none is refused now)."""
        self._refusal_listeners.append(callback)

    def accept(self, design: Design) -> None:
        """Make ``design`` current, re-check it (``auto_check``) and tell the listeners; an edit that changes
        nothing (the value already there, typed again) is no edit: nobody is told, no history entry is made."""
        if changes_nothing(self._design, design):
            return
        self._design = design
        if self._auto_check:
            self.verdict = check(design)
            self.status.value = badge_html(self.verdict)
        for callback in self._listeners:
            callback(design)
        self.refresh_saved()

    def saved_bundle(self) -> dict[str, Any]:
        """The design on show, with its verdict where this editor checks: for a saved notebook."""
        payload = {**self._design.to_dict(), "widget": type(self).__name__}
        if self.verdict is not None and self.verdict.design is self._design:
            payload["verdict"] = self.verdict.to_mime()
        return {mime.DESIGN: payload}


class SharedLooks:
    """Layout and style models shared by the many small widgets of one view: one Layout per set of values, one style
    per style class. Every widget is a comm; sharing them makes a field 5 comms instead of 13. Made with the view,
    never at import (a model made before the page's widget manager is lost to every view)."""

    def __init__(self) -> None:
        self._layouts: dict[tuple, widgets.Layout] = {}
        self._styles: dict[type, widgets.Widget] = {}

    def layout(self, **values: str) -> widgets.Layout:
        key = tuple(sorted(values.items()))
        if key not in self._layouts:
            self._layouts[key] = widgets.Layout(**values)
        return self._layouts[key]

    def style(self, kind: type) -> widgets.Widget:
        if kind not in self._styles:
            self._styles[kind] = kind()
        return self._styles[kind]


def field_label(name: str, looks: SharedLooks | None = None) -> widgets.HTML:
    """A field's name that wraps only after an underscore (``consumer_wait_signaling_`` / ``threads``), never
    inside a word, and is never cut short."""
    wrapped = "_<wbr>".join(html.escape(part) for part in name.split("_"))
    looks = looks or SharedLooks()  # a label of its own: its own layout and style
    label = widgets.HTML(f'<span title="{html.escape(name)}">{wrapped}</span>',
                         layout=looks.layout(width="190px", min_width="0"), style=looks.style(HTMLStyle))
    label.add_class("tslab-field-label")
    return label
