"""Widgets whose notebook output also keeps a tslab payload, so that a saved notebook draws them without a kernel.

A widget's output normally holds only a model id: reopened without the kernel, it reads "model not found", and
other viewers show its plain text. :class:`SavedOutput` adds a tslab MIME payload (a design with its verdict, a
trace) to the output. In JupyterLab, tslab's extension draws the live widget while its model exists and the
payload otherwise.

The payload saved under a cell is what that cell produced: a redraw replaces it (``refresh_saved``) for edits made
by the cell that displayed the widget or in the widget itself (its front end), never for edits made by code in a
later cell, which show under that cell (what it prints or displays). The live widget follows every edit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: A request the kernel serves: ``(msg_type, msg_id)`` of a cell's execute_request, a widget's comm_msg, ...
Request = tuple[str, str]


def current_request() -> Request | None:
    """The request the kernel is serving on this thread, or None outside a kernel (plain Python, a script)."""
    try:
        from IPython import get_ipython
    except ImportError:  # no IPython: nothing is ever displayed
        return None
    kernel = getattr(get_ipython(), "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    header = (get_parent() or {}).get("header", {}) if callable(get_parent) else {}
    return (header["msg_type"], header["msg_id"]) if header.get("msg_type") and header.get("msg_id") else None


@dataclass
class _Shown:
    """One display of the widget: its handle, the cell that displayed it (None: not a cell), the payload shown."""

    handle: Any
    cell: str | None
    payload: dict[str, Any]

    def follows(self, origin: Request | None) -> bool:
        """Whether an edit made while serving ``origin`` belongs in this output: not when another cell made it."""
        return origin is None or origin[0] != "execute_request" or origin[1] == self.cell


class SavedOutput:
    """Mixin for an ipywidgets widget: ``saved_bundle()`` gives the payload; ``refresh_saved()`` rewrites it."""

    _saved_shown: tuple[_Shown, ...] = ()

    def saved_bundle(self) -> dict[str, Any]:
        """``{mime type: payload}`` that a saved notebook draws in place of the live widget."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if bundle is None:  # closed: nothing to show
            return None
        bundle.update(self.saved_bundle())
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display

        bundle = self._repr_mimebundle_()
        if bundle is not None:
            request = current_request()
            cell = request[1] if request is not None and request[0] == "execute_request" else None
            handle = display(bundle, raw=True, display_id=True)
            self._saved_shown = (*self._saved_shown, _Shown(handle, cell, _payload(bundle)))

    def refresh_saved(self, origin: Request | None = None) -> None:
        """Replace the payload in this widget's own outputs if it changed, for an edit made while the kernel served
        ``origin`` (default: the request it serves now). An edit made by another cell leaves them as they are."""
        origin = origin if origin is not None else current_request()
        shown = [s for s in self._saved_shown if s.follows(origin)]
        if not shown:
            return
        bundle = self._repr_mimebundle_()
        payload = None if bundle is None else _payload(bundle)
        for s in shown:
            if payload is not None and payload != s.payload:
                s.payload = payload
                s.handle.update(bundle, raw=True)


def _payload(bundle: dict[str, Any]) -> dict[str, Any]:
    """What an output shows, less its text (a repr that counts history entries changes with no new drawing)."""
    return {k: v for k, v in bundle.items() if k != "text/plain"}
