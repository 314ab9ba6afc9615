"""Widgets whose notebook output also keeps a tslab payload, so that a saved notebook draws them without a kernel.

A widget's output normally holds only a model id: reopened without the kernel, it reads "model not found", and
other viewers show its plain text. :class:`SavedOutput` adds a tslab MIME payload (a design with its verdict, a
trace) to the output. In JupyterLab, tslab's extension draws the live widget while its model exists and the
payload otherwise. Displayed on its own, the widget keeps its output current: every redraw replaces the
payload (``refresh_saved``), so a notebook saved after edits keeps what the widget showed last.
"""

from __future__ import annotations

from typing import Any


class SavedOutput:
    """Mixin for an ipywidgets widget: ``saved_bundle()`` gives the payload; ``refresh_saved()`` rewrites it."""

    _saved_display: Any = None
    _saved_last: Any = None

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
            self._saved_last = _payload(bundle)
            self._saved_display = display(bundle, raw=True, display_id=True)

    def refresh_saved(self) -> None:
        """Replace the payload in this widget's own output (where it was displayed on its own) if it changed."""
        if self._saved_display is None:
            return
        bundle = self._repr_mimebundle_()
        payload = None if bundle is None else _payload(bundle)
        if payload is not None and payload != self._saved_last:
            self._saved_last = payload
            self._saved_display.update(bundle, raw=True)


def _payload(bundle: dict[str, Any]) -> dict[str, Any]:
    """What an output shows, less its text (a repr that counts history entries changes with no new drawing)."""
    return {k: v for k, v in bundle.items() if k != "text/plain"}
