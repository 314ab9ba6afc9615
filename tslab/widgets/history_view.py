"""``HistoryView``: a Studio's one history as a compact list, with undo and redo (buttons and keys).

Drawn by the lab extension's ``widgets/history`` module. The model holds the entries' labels and which is
current; the front end sends ``undo``, ``redo`` and ``revert`` messages, which the Studio applies. Ctrl+Z
(Cmd+Z) undoes and Ctrl+Shift+Z or Ctrl+Y redoes while the keyboard is anywhere in the Studio but a text field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from .bundles import bundle
from .history import History

SHOWN = 12  # the newest entries listed; older ones are summarised in one line


class HistoryView(anywidget.AnyWidget):
    """The entries of a :class:`History` for the front end to list; actions go to the ``on_action`` handler."""

    _esm = bundle("history.js")
    _css = bundle("tslab.css", "")
    entries = traitlets.List().tag(sync=True)
    hidden_before = traitlets.Int(0).tag(sync=True)
    can_undo = traitlets.Bool(False).tag(sync=True)
    can_redo = traitlets.Bool(False).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._handlers: list[Callable[[str, int | None], None]] = []
        self.on_msg(self._message)

    def show(self, history: History) -> None:
        """List ``history``'s newest entries, the current one marked."""
        start = max(0, len(history) - SHOWN)
        labels = history.labels()
        with self.hold_sync():
            self.entries = [{"index": i, "label": labels[i], "current": i == history.current}
                            for i in range(start, len(history))]
            self.hidden_before = start
            self.can_undo, self.can_redo = history.can_undo, history.can_redo

    def on_action(self, handler: Callable[[str, int | None], None]) -> None:
        """Call ``handler(action, index)`` for each ``"undo"``, ``"redo"`` or ``"revert"`` (with its entry)."""
        self._handlers.append(handler)

    def _message(self, _: Any, content: dict[str, Any], buffers: Any = None) -> None:
        action = content.get("kind") if isinstance(content, dict) else None
        if action not in ("undo", "redo", "revert"):
            return
        index = content.get("index")
        for handler in self._handlers:
            handler(action, index if isinstance(index, int) else None)
