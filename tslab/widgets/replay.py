"""``ReplayPlayer``: step through a checker trace, or play the scheduler, in a notebook.

The player itself is a :class:`~tslab.widgets.trace_view.TraceView`: the JupyterLab extension's replay player
(a lane per task, a column per step, the fault marked; step buttons, slider, arrow keys, autoplay; credits,
held slots and next ops per step), the same drawing code as a saved trace's output. The model computes, the view
draws: every step's state comes from the :class:`~tslab.core.trace_model.Trace` (precomputed) or the
:class:`~tslab.core.explorer.Explorer` (one checker transition per click); stepping never re-runs the checker.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w

from ..core import mime
from ..core.explorer import Explorer
from ..core.trace_model import Trace
from ..errors import TslabError
from .bundles import plain
from .saved_output import SavedOutput
from .trace_view import TraceView

_FAULT_COLOUR = "#cf222e"


class ReplayPlayer(SavedOutput, w.VBox):
    """Replay a :class:`Trace`, or drive an :class:`Explorer` with one button per task."""

    def __init__(self, source: Trace | Explorer, **kwargs: Any) -> None:
        if isinstance(source, Explorer):
            self.explorer: Explorer | None = source
            self.trace = source.trace()
        elif isinstance(source, Trace):
            self.explorer, self.trace = None, source
        else:
            raise TslabError(f"ReplayPlayer: got a {type(source).__name__}; pass a tslab.Trace "
                             "(tslab.trace(design), verdict.trace) or a tslab.Explorer(design)")
        self.tasks = list(self.trace.tasks)
        self.view = TraceView(self.trace.to_dict())
        self.moves = w.HBox()
        self.message = w.HTML()
        super().__init__([self.view, self.moves, self.message], **kwargs)
        self.add_class("tslab-replay")
        if self.explorer is not None:
            self.view.observe(lambda change: self._refresh_moves(change["new"] == self.last), names="index")
            self.show(self.last)
            self._refresh_moves(True)

    def __repr__(self) -> str:
        mode = "Explorer" if self.explorer is not None else "Trace"
        return f"ReplayPlayer({mode}: {self.trace.headline()})"

    def saved_bundle(self) -> dict[str, Any]:
        """The trace for a saved notebook's replay player, and as an HTML table for viewers without tslab."""
        return {mime.TRACE: self.trace.to_dict(), "text/html": self.trace._repr_html_()}

    # -- model -> view -------------------------------------------------------------------------------
    @property
    def index(self) -> int:
        return self.view.index

    @property
    def last(self) -> int:
        return len(self.trace.steps) - 1

    def show(self, index: int) -> None:
        """Show step ``index`` (clamped to the trace)."""
        self.view.index = max(0, min(int(index), self.last))

    # -- explorer mode -------------------------------------------------------------------------------
    def _refresh_moves(self, at_end: bool) -> None:
        assert self.explorer is not None
        enabled = {m.task: m for m in self.explorer.enabled()} if at_end else {}
        buttons = []
        for task in self.tasks:
            nxt = self.explorer.state.next_ops[task]
            move = enabled.get(task)
            button = w.Button(description=f"{task}: {move.op}" if move else task, disabled=move is None,
                              tooltip=nxt.waits_for or nxt.status, layout=w.Layout(width="auto"),
                              button_style="primary" if move else "")
            button.on_click(lambda _b, t=task: self.step(t))
            buttons.append(button)
        undo = w.Button(description="undo", disabled=len(self.explorer.history) == 1 or not at_end,
                        layout=w.Layout(width="auto"))
        undo.on_click(lambda _b: self.undo())
        reset = w.Button(description="reset", disabled=len(self.explorer.history) == 1, layout=w.Layout(width="auto"))
        reset.on_click(lambda _b: self.reset())
        self.moves.children = [*buttons, undo, reset]
        status = self.explorer.status
        if status.kind != "running" and at_end:  # the player's last step already says COMPLETE, DEADLOCK, ...
            self.message.value = ('<span style="color:#57606a">the play is over: undo a move, or reset, to play '
                                  "another interleaving</span>")
            return
        colour = {"running": "#57606a", "complete": "#1a7f37"}.get(status.kind, _FAULT_COLOUR)
        self.message.value = (f'<span style="color:{colour}"><b>{html.escape(status.kind.upper())}</b>: '
                              f"{html.escape(status.message)}</span>")

    def step(self, task: str) -> None:
        """Explorer mode: move ``task`` (refused moves leave everything as it was and say why)."""
        if self.explorer is None:
            raise TslabError("ReplayPlayer: step(task) plays the scheduler; build the player from a "
                             "tslab.Explorer(design), or use show(index) to move along a trace")
        try:
            self.explorer.step(task)
        except TslabError as exc:
            self.message.value = f'<span style="color:{_FAULT_COLOUR}">{html.escape(str(exc))}</span>'
            return
        self._reload()

    def undo(self) -> None:
        if self.explorer is not None and len(self.explorer.history) > 1:
            self.explorer.undo()
            self._reload()

    def reset(self) -> None:
        if self.explorer is not None:
            self.explorer.reset()
            self._reload()

    def _reload(self) -> None:
        assert self.explorer is not None
        self.trace = self.explorer.trace()
        with self.view.hold_sync():
            self.view.trace = plain(self.trace.to_dict())
            self.view.index = self.last
        self._refresh_moves(True)
