"""``ReplayPlayer``: step through a checker trace, or play the scheduler, in a notebook.

A swimlane chart (one lane per task, one column per step, the fault marked in red), step buttons, a slider,
arrow keys (:class:`KeyNav`, once focused), autoplay, and a state panel: full/empty credits per stage as small
bars, held sets, and each task's next op. The model computes, the view draws: every step's state comes from
the :class:`~tslab.core.trace_model.Trace` (precomputed) or the :class:`~tslab.core.explorer.Explorer`
(one checker transition per click); stepping never re-runs the checker.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as w
import plotly.graph_objects as go

from ..core.explorer import Explorer
from ..core.trace_model import State, Step, Trace
from ..errors import TslabError
from .figure_slot import FigureSlot, fit_to_column

_STAGE_COLOURS = {"Acquire": "#bf8700", "Wait": "#bf8700", "Commit": "#1a7f37", "Release": "#1a7f37"}
_WORK_COLOUR = "#0969da"
_FAULT_COLOUR = "#cf222e"


def _colour(stage: str) -> str:
    return next((c for key, c in _STAGE_COLOURS.items() if stage.endswith(key)), _WORK_COLOUR)


class KeyNav(anywidget.AnyWidget):
    """A focusable strip that sends one ``{"delta": n}`` message per Left/Right/Home/End key press."""

    _esm = Path(__file__).parent / "static" / "keynav.js"

    def on_step(self, callback: Any) -> None:
        """Call ``callback(delta)`` for each key press."""
        self.on_msg(lambda _w, content, _b: callback(int(content.get("delta", 0))))


class ReplayPlayer(w.VBox):
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
        self._scale = max([1, *(v for s in self.trace.steps for v in (*s.state.prod_credits.values(),
                                                                      *s.state.cons_credits.values()))])
        self._slot = FigureSlot(note="drawing the trace…", make=self._make_figure)
        last = len(self.trace.steps) - 1
        self.slider = w.IntSlider(value=0, min=0, max=last, description="step", continuous_update=True,
                                  layout=w.Layout(flex="1 1 260px", min_width="0", max_width="420px"))
        self.play = w.Play(value=0, min=0, max=last, interval=600, description="autoplay")
        w.jslink((self.play, "value"), (self.slider, "value"))
        buttons = [("fast-backward", "first step", lambda _: self.show(0)),
                   ("step-backward", "previous step", lambda _: self.show(self.index - 1)),
                   ("step-forward", "next step", lambda _: self.show(self.index + 1)),
                   ("fast-forward", "last step", lambda _: self.show(self.slider.max))]
        self.nav = [w.Button(icon=icon, tooltip=tip, layout=w.Layout(width="40px", flex="0 0 40px"))
                    for icon, tip, _ in buttons]
        for button, (_, _, fn) in zip(self.nav, buttons, strict=True):
            button.on_click(fn)
        self.caption = w.HTML()
        self.panel = w.HTML()
        self.moves = w.HBox(layout=w.Layout(flex_flow="row wrap"))
        self.message = w.HTML()
        self.slider.observe(lambda change: self._render(change["new"]), names="value")
        self.arrow_keys = KeyNav()
        self.arrow_keys.on_step(lambda delta: self.show(self.index + delta))
        controls = w.HBox([*self.nav, self.play, self.slider, self.arrow_keys],
                          layout=w.Layout(flex_flow="row wrap", align_items="center"))
        parts = [self._slot, controls, self.caption, self.moves, self.message, self.panel]
        super().__init__(parts, **kwargs)
        self.add_class("tslab-replay")
        self._render(0)
        if self.explorer is not None:
            self.show(last)

    @property
    def figure(self) -> go.FigureWidget:
        """The lanes chart (built now if the first plotly figure of the kernel is still on its way)."""
        return self._slot.figure

    def __repr__(self) -> str:
        mode = "Explorer" if self.explorer is not None else "Trace"
        return f"ReplayPlayer({mode}: {self.trace.headline()})"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live widget, plus the trace as an HTML table for viewers that cannot run widgets."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/plain"] = repr(self)
        bundle.setdefault("text/html", self.trace._repr_html_())
        return bundle

    # -- model -> view -------------------------------------------------------------------------------
    @property
    def index(self) -> int:
        return self.slider.value

    def show(self, index: int) -> None:
        """Show step ``index`` (clamped to the trace)."""
        self.slider.value = max(0, min(int(index), self.slider.max))

    def _render(self, index: int) -> None:
        steps = self.trace.steps
        step = steps[index]
        def mark(figure: go.FigureWidget) -> None:
            with figure.batch_update():
                figure.layout.shapes[0].update(x0=index - 0.5, x1=index + 0.5)
        self._slot.draw(mark)
        at_end = index == len(steps) - 1 and self.explorer is None  # an Explorer shows its status below
        self.caption.value = _caption(step, self.trace, at_end)
        self.panel.value = _panel(step.state, self._scale)
        if self.explorer is not None:
            self._refresh_moves(index == len(steps) - 1)

    def _lanes(self) -> list[dict[str, Any]]:
        """Per task lane and for the fault marks: x, y, text, hover text and marker colours."""
        lanes: dict[str, dict[str, list]] = {t: {"x": [], "hovertext": [], "color": []} for t in self.tasks}
        for s in self.trace.steps[1:]:
            lane = lanes[s.task]
            lane["x"].append(s.index)
            lane["hovertext"].append(f"{s.index}. {s.op} {s.entry}")
            lane["color"].append(_colour(s.op.stage))
        out = [{"x": lane["x"], "y": [self._lane(task)] * len(lane["x"]), "hovertext": lane["hovertext"],
                "marker": {"color": lane["color"]}} for task, lane in lanes.items()]
        fault, x = self.trace.fault, len(self.trace.steps)
        who: list[tuple[str, str]] = []
        if fault.kind == "deadlock":
            who = [(b["task"], f"blocked: {b['stage']}") for b in fault.blocked]
        elif fault.kind == "race" and fault.writer and fault.victim:
            who = [(fault.writer["task"], f"writes {fault.writer['resource']}"),
                   (fault.victim["task"], f"{fault.victim['access']} {fault.victim['resource']}")]
        out.append({"x": [x] * len(who), "y": [self._lane(t) for t, _ in who], "text": [m for _, m in who],
                    "hovertext": [fault.message] * len(who)})
        return out

    def _lane(self, task: str) -> int:
        """Lanes are numbered top to bottom in task order (a numeric axis keeps idle tasks' lanes)."""
        return len(self.tasks) - 1 - self.tasks.index(task)

    def _layout(self) -> dict[str, Any]:
        n = len(self.trace.steps)
        key = " ".join(f'<span style="color:{c}">&#9632;</span> {name}' for name, c in
                       (("acquire/wait", _STAGE_COLOURS["Wait"]), ("work", _WORK_COLOUR),
                        ("commit/release", _STAGE_COLOURS["Commit"])))
        labels = self._lanes()[-1]["text"]  # fault labels sit right of the last step, in the right margin
        right = 10 + 7 * max((len(t) for t in labels), default=0)
        return {"title": {"text": f"{html.escape(self.trace.headline())} &nbsp; {key}", "font": {"size": 13}},
                "xaxis": {"title": "step", "dtick": 1 if n <= 40 else None, "range": [-0.5, n + 0.7]},
                "margin": {"l": 10, "r": right, "t": 30, "b": 30}}

    def _make_figure(self) -> go.FigureWidget:
        lanes = self._lanes()
        data = [go.Scatter(x=lane["x"], y=lane["y"], hovertext=lane["hovertext"], name=task, mode="markers",
                           hoverinfo="text", showlegend=False,
                           marker={"symbol": "square", "size": 13, **lane["marker"]})
                for task, lane in zip(self.tasks, lanes, strict=False)]
        data.append(go.Scatter(**lanes[-1], name="fault", mode="markers+text", textposition="middle right",
                               textfont={"size": 10, "color": _FAULT_COLOUR}, cliponaxis=False,
                               marker={"symbol": "x", "size": 15, "color": _FAULT_COLOUR}, hoverinfo="text",
                               showlegend=False))
        fig = go.FigureWidget(data=data)
        fit_to_column(fig)
        fig.update_layout(self._layout(), height=110 + 40 * len(self.tasks),
                          yaxis={"tickvals": list(range(len(self.tasks))), "ticktext": self.tasks[::-1],
                                 "range": [-0.7, len(self.tasks) - 0.4], "zeroline": False},
                          shapes=[{"type": "rect", "xref": "x", "yref": "paper", "x0": -0.5, "x1": 0.5,
                                   "y0": 0, "y1": 1, "fillcolor": "#8c959f", "opacity": 0.2,
                                   "line": {"width": 0}}])
        return fig

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
        self._scale = max(self._scale, *(v for v in self.trace.final.cons_credits.values()), 1)
        last = len(self.trace.steps) - 1
        def redraw(figure: go.FigureWidget) -> None:  # a figure built later reads the new trace itself
            with figure.batch_update():
                for trace, lane in zip(figure.data, self._lanes(), strict=True):
                    trace.update(lane)
                figure.update_layout(self._layout())
        self._slot.draw(redraw)
        self.play.max = self.slider.max = last
        if self.slider.value == last:
            self._render(last)
        else:
            self.slider.value = last


def _caption(step: Step, trace: Trace, last: bool) -> str:
    if step.task is None:
        text = f"<b>step 0</b>: initial state of <code>{html.escape(trace.design)}</code>"
    else:
        text = (f"<b>step {step.index}</b>: <b>{html.escape(step.task)}</b> ran "
                f"<code>{html.escape(str(step.op))}</code> ({html.escape(str(step.entry))})")
    if last and trace.fault.kind in ("deadlock", "race", "pdl-order", "complete"):
        colour = "#1a7f37" if trace.fault.kind == "complete" else _FAULT_COLOUR
        text += (f'<br><span style="color:{colour}"><b>{html.escape(trace.fault.kind.upper())}</b>: '
                 f"{html.escape(trace.fault.message)}</span>")
    return text


def _bar(value: int, scale: int, colour: str) -> str:
    width = int(60 * value / scale)
    return (f'<span style="display:inline-block;width:{width}px;height:9px;background:{colour}"></span>'
            f'<span style="display:inline-block;width:{60 - width}px"></span> {value}')


def _panel(state: State, scale: int) -> str:
    """The state panel: credits per stage as bars, held sets, next op per task."""
    rows = "".join(f"<tr><td><code>{html.escape(k)}</code></td>"
                   f"<td>{_bar(state.prod_credits[k], scale, '#0969da')}</td>"
                   f"<td>{_bar(state.cons_credits.get(k, 0), scale, '#8c959f')}</td></tr>"
                   for k in state.prod_credits)
    credits = (f"<table><tr><th>stage</th><th>full</th><th>empty</th></tr>{rows}</table>" if rows
               else "<i>no pipelined resource</i>")
    held = "".join(f"<li><code>{html.escape(res)}</code>: " + ", ".join(
        f"{html.escape(a)} by {html.escape(t)} (slot {slot})" for a, t, slot, _g in ents) + "</li>"
        for res, ents in state.held.items())
    colours = {"runnable": "#1a7f37", "blocked": _FAULT_COLOUR, "done": "#57606a"}
    nexts = "".join(
        f"<tr><td style='white-space:nowrap'>{html.escape(t)}</td>"
        f"<td style='color:{colours[n.status]};white-space:nowrap'>{n.status}</td>"
        f"<td style='overflow-wrap:anywhere'><code>{html.escape(str(n.op) if n.op else '')}</code></td>"
        f"<td style='font-size:11px;max-width:320px;overflow-wrap:anywhere'>{html.escape(n.waits_for)}</td></tr>"
        for t, n in state.next_ops.items())
    return ('<div style="display:flex;flex-wrap:wrap;gap:8px 24px;font-size:12px">'
            f"<div><b>credits</b>{credits}</div>"
            f"<div><b>held</b><ul>{held or '<li><i>none</i></li>'}</ul>"
            f"<b>PDL wait done</b>: {'yes' if state.pdl_wait else 'no'}<br>cursors {state.cursors}</div>"
            f"<div><b>next op</b><table>{nexts}</table></div></div>")
