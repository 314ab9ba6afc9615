"""``Studio``: the verdict on top with the one history (undo, redo, the newest edits) beside it; both editors and a
GPU tab in a column of their own; the memory map and the resource/task flow (click a ring to edit that pipeline)
beside them; the schedule swimlane (drag to reorder) across the bottom, headed by the verdict's status. Where the
output is narrower than 860 px, one of the map, the flow and the swimlane shows under the editors (``view_switch``).

Every accepted edit becomes the current design at once and is re-checked in the background (debounced;
a newer edit supersedes a running check). ``wait()`` blocks until the newest design's verdict is shown. The GPU
tab (a :class:`BenchPanel`) compiles, runs, times and profiles the current design, never an earlier one. The
schedules tab's step rows are made when that tab is first opened (``ScheduleEditor.show_rows``): each widget is a
comm the page must receive, and the rows are half of a large kernel's.
"""

from __future__ import annotations

import functools
import html
import threading
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ..core import mime
from ..core.check import check
from ..core.design import Design
from ..core.verdict import Verdict
from ..errors import DesignError
from ..gpu.device import smem_capacity
from .badge import badge_html, status_pill
from .bench_panel import BenchPanel
from .flow_view import FlowView
from .history import History, changes_nothing
from .history_view import HistoryView
from .layout_chart import LayoutChart
from .pipeline_editor import PipelineEditor
from .rechecker import Rechecker
from .replay import ReplayPlayer
from .saved_output import SavedOutput, current_request
from .schedule_editor import ScheduleEditor
from .swimlane import ScheduleView
from .view_writer import ViewWriter

CHART_WIDTH = 640  # px at most: the map takes the width its column gives (one map, or two side by side)
WAIT_STEP = 0.2  # seconds between redraws while wait() blocks
UNSAFE = frozenset({"DEADLOCK", "RACE", "PDL-ORDER"})
#: The views a narrow Studio switches between under its editors (all three side by side from 860 px).
VIEWS = ("memory", "flow", "schedule")


def counterexample_view(verdict: Verdict) -> widgets.Widget | None:
    """What a Studio shows under an unsafe verdict: a ReplayPlayer of ``verdict.trace``, or the checker's own
    text of the counterexample when no trace could be rebuilt.

    This is the extension point for counterexamples: assign another function of a Verdict to
    ``Studio.counterexample_view`` to show something else.
    """
    if verdict.status not in UNSAFE:
        return None
    if verdict.trace is not None:
        return ReplayPlayer(verdict.trace)
    c = verdict.checker
    lines = [line for d in c.deadlocks for line in d.get("lines", [])]
    lines += [f"{r['writer_task']} writes {r['writer_resource']} while {r['victim_task']} {r['victim_access']} "
              f"{r['victim_resource']} ({r['overlap']})" for r in c.races]
    text = "\n".join(lines) or "\n".join(str(e) for e in verdict.errors)
    return widgets.HTML(f'<pre class="tslab-counterexample">{html.escape(text)}</pre>')


def states_line(verdict: Verdict) -> str:
    """The line under the badge: what the schedule checker found and searched, and how long the check took.

    When the badge shows an error the schedule checker did not find (SMEM capacity, an invalid field), the line
    says so, so that "CAPACITY" above "checker: safe" does not read as a contradiction."""
    c = verdict.checker
    limit = f" (state limit {c.max_states:,} hit)" if c.hit_state_limit else ""
    searched = f"{c.states_text()} in {c.runs} run(s){limit}; checked in {verdict.seconds * 1000:.0f} ms"
    if c.verdict == "safe" and verdict.status != "SAFE":
        return (f"schedule checker: no deadlock or race ({searched}); the {verdict.status} above comes from "
                "the memory and field checks")
    return f"schedule checker: {c.verdict}, {searched}"


class Studio(SavedOutput, widgets.HBox):
    """Edit a design and watch TS's verdict, memory map and schedule follow.

    ``max_states`` bounds each exhaustive check (a verdict that hits it is NOT PROVEN, never wrong);
    ``strategy``, ``trips`` and ``n`` go to every check as :func:`tslab.check` takes them (a kernel with runtime
    loop bounds is then checked with real trip counts on every edit). ``inputs``, ``reference``, ``outputs`` and
    ``baseline`` are what the GPU tab runs a captured kernel with (see :class:`BenchPanel`).
    """

    counterexample_view: Callable[[Verdict], widgets.Widget | None] = staticmethod(counterexample_view)

    def __init__(self, design: Design, *, debounce: float = 0.15, max_states: int = 1_000_000,
                 chart_width: int | None = CHART_WIDTH, strategy: str = "auto", trips: dict[str, Any] | None = None,
                 n: Any = None, inputs: Any = None, reference: Any = None, outputs: Any = None,
                 baseline: Any = None) -> None:
        super().__init__()
        self._design = design
        self._check = functools.partial(check, max_states=max_states, smem_capacity=smem_capacity(),
                                        strategy=strategy, trips=trips, n=n)
        self._verdict = self._check(design)
        self._lock = threading.Lock()
        self.history = History()
        self.history.add(design)
        self.pipeline_editor = PipelineEditor(design, auto_check=False)
        self.schedule_editor = ScheduleEditor(design, auto_check=False, rows_when_shown=True)
        self.schedule_editor.use_history(self.undo, self.redo)  # one history: the Studio's
        self.pipeline_editor.shown_note = lambda: f" (#{self.history.current})"
        self._refusals: dict = {}  # the fields whose typed value was refused: the badge shows the last valid design
        self.pipeline_editor.on_design(lambda d: self._edited(d, source=self.pipeline_editor))
        self.pipeline_editor.on_refused(self._refused)
        self.schedule_editor.on_design(lambda d: self._edited(d, source=self.schedule_editor))
        self.layout_chart = LayoutChart(self._verdict, width=chart_width)
        self.flow = FlowView()
        self.flow.on_select(self._flow_selected)
        self._badge = widgets.HTML()
        self._states = widgets.HTML()
        self._swimlane = ScheduleView()
        self._swimlane.on_move(self._lane_moved)
        self._lane_note = widgets.HTML()
        self._lane_note.add_class("tslab-lane-note")
        self._counterexample = widgets.VBox()
        self.history_view = HistoryView()
        self.history_view.on_action(self._history_action)
        self._badge.add_class("tslab-studio-badge")
        self._states.add_class("tslab-studio-states")
        self.history_view.add_class("tslab-studio-history")
        self.bench_panel = BenchPanel(design, fields=False, inputs=inputs, reference=reference, outputs=outputs,
                                      baseline=baseline)
        self.editors = widgets.Tab(children=[self.pipeline_editor, self.schedule_editor, self.bench_panel])
        self.editors.titles = ("pipelines", "schedules", "GPU")
        self.editors.observe(self._editors_tab, "selected_index")
        self._lanes_title = widgets.HTML("<b>schedule</b>")
        self.view_switch = widgets.ToggleButtons(
            options=[("memory map", "memory"), ("flow", "flow"), ("schedule", "schedule")], value="memory",
            tooltips=["what TS's allocators laid out", "the tasks and the pipelines between them",
                      "each task's steps as TS expanded them, and a counterexample"],
            style={"button_width": "auto"})
        self.view_switch.add_class("tslab-studio-switch")
        self.view_switch.observe(lambda change: self._show_view(change["new"]), "value")
        self._grid = self._arrange()
        self._show_view(self.view_switch.value)
        self.children = [self._grid]
        self.add_class("tslab-studio")
        self._rechecker = Rechecker(self._checked, on_progress=self._progress, debounce=debounce,
                                    check_fn=self._check)
        self._checking = ""
        self._edit_origin = None  # the request (cell, front end) that made the newest edit: see refresh_saved
        self._drawn: Verdict | None = None  # the verdict the views show (the chart starts with it)
        self._views = ViewWriter(self._draw)
        self._views.request()
        self._render_history()

    # -- public API ----------------------------------------------------------------------------------
    @property
    def design(self) -> Design:
        """The current design (the newest accepted edit)."""
        return self._design

    @property
    def verdict(self) -> Verdict:
        """The verdict of the current design (waits for a running re-check first)."""
        if not self._rechecker.in_worker():
            self.wait()
        return self._verdict

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the running re-check has finished and its verdict is shown; False on timeout.

        The views are drawn from here while waiting (progress included): a blocked kernel thread cannot run
        the redraws the checking thread asks for.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done = self._rechecker.wait(WAIT_STEP if left is None else min(WAIT_STEP, left))
            self._views.flush()
            if done or (left is not None and left <= WAIT_STEP):
                return done

    def revert(self, index: int) -> None:
        """Make history entry ``index`` the current design again (recorded as a new history entry)."""
        if not isinstance(index, int) or not -len(self.history) <= index < len(self.history):
            raise DesignError("input", f"studio history entry {index!r}", "does not exist",
                              f"pick an entry from 0 to {len(self.history) - 1}")
        self._edited(self.history[index], source=None, label=f"revert to #{index % len(self.history)}")

    def undo(self) -> bool:
        """Undo the last edit, whichever editor made it (the history's current entry becomes its parent)."""
        return self._step(self.history.undo)

    def redo(self) -> bool:
        """Redo the last undone edit."""
        return self._step(self.history.redo)

    def saved_bundle(self) -> dict[str, Any]:
        """The design the views show with its verdict: what a saved notebook draws in place of the Studio."""
        verdict = self._drawn or self._verdict
        design = verdict.design if verdict.design is not None else self._design
        return {mime.DESIGN: {**design.to_dict(), "verdict": verdict.to_mime(), "widget": "Studio"}}

    def __repr__(self) -> str:
        return f"Studio({self._design.kernel}: {self._verdict.status}, {len(self.history)} design(s) in history)"

    def close(self) -> None:
        """Close the widget and stop its background re-checking."""
        rechecker = getattr(self, "_rechecker", None)  # None when __init__ stopped before making it
        if rechecker is not None:
            rechecker.close()
        super().close()

    # -- internals -----------------------------------------------------------------------------------
    def _arrange(self) -> widgets.Box:
        """The Studio's parts in one grid (``tslab.css``).

        The verdict heads it with the history beside it (narrower than 600 px: below), so undo is next to what it
        changes. At 860 px and more the editors sit in a column on the left beside the memory map and the flow, and
        the swimlane spans the width below (a schedule's lanes need it). Narrower, the editors come first and one of
        the memory map, the flow and the schedule below them, picked by ``view_switch`` (which follows the editors'
        tab and an unsafe verdict's counterexample), so an edit and what it changes are on one screen. The editors
        scroll inside their own box, so the verdict and the field being typed in are in sight together.
        """
        header = widgets.VBox([self._badge, self._states], layout=widgets.Layout(min_width="0"))
        header.add_class("tslab-studio-header")
        left = widgets.VBox([self.editors], layout=widgets.Layout(min_width="0"))
        left.add_class("tslab-studio-editors")
        memory = widgets.VBox([self.layout_chart], layout=widgets.Layout(min_width="0"))
        memory.add_class("tslab-studio-memory")
        flow = widgets.VBox([widgets.HTML("<b>flow</b>"), self.flow], layout=widgets.Layout(min_width="0"))
        flow.add_class("tslab-studio-flow")
        lanes = widgets.VBox([self._lanes_title, self._swimlane, self._lane_note, self._counterexample],
                             layout=widgets.Layout(min_width="0"))
        lanes.add_class("tslab-studio-lanes")
        grid = widgets.Box([header, self.history_view, memory, left, self.view_switch, flow, lanes],
                           layout=widgets.Layout(width="100%", min_width="0"))
        grid.add_class("tslab-studio-grid")
        return grid

    def _show_view(self, view: str) -> None:
        """Which of the memory map, the flow and the schedule a narrow Studio shows under its editors (``tslab.css``:
        from 860 px all three are shown and the switch is not)."""
        for other in VIEWS:
            self._grid.remove_class(f"tslab-view-{other}")
        self._grid.add_class(f"tslab-view-{view}")

    def _editors_tab(self, change: dict[str, Any]) -> None:
        """The schedules tab brings the schedule into view, the pipelines tab the memory map (unless the flow is on
        show: a ring clicked there opens the pipelines tab)."""
        if change["new"] == 1:
            self.schedule_editor.show_rows()
            self.view_switch.value = "schedule"
        elif change["new"] == 0 and self.view_switch.value == "schedule":
            self.view_switch.value = "memory"

    def _edited(self, design: Design, *, source: Any, label: str | None = None) -> None:
        if changes_nothing(self._design, design):  # the value already there, or a revert to the design on show
            return
        with self._lock:
            said = getattr(source, "last_label", None) if source is not None else None
            self.history.add(design, label or said)
        self._make_current(design, source=source)

    def _step(self, walk: Callable[[], int | None]) -> bool:
        with self._lock:
            index = walk()
        if index is None:
            return False
        self._make_current(self.history[index], source=None)
        return True

    def _make_current(self, design: Design, *, source: Any) -> None:
        """Show ``design`` in every editor and the GPU tab, and re-check it."""
        with self._lock:
            self._design = design
            self._checking = "re-checking…"
            # who made the edit: its drawing replaces the saved output only if that cell or the Studio itself did
            self._edit_origin = current_request()
        for editor in (self.pipeline_editor, self.schedule_editor):
            if editor is not source:
                editor.load(design)
        self.bench_panel.load(design)
        self._render_history()
        self._views.request()
        self._rechecker.submit(design)

    def _history_action(self, action: str, index: int | None) -> None:
        if action == "revert" and index is not None and 0 <= index < len(self.history):
            self.revert(index)
        elif action == "undo":
            self.undo()
        elif action == "redo":
            self.redo()

    def _lane_moved(self, move: dict[str, Any], shown: Verdict | None) -> None:
        """A step dragged in the swimlane: applied to the current design only if the lanes showed it."""
        task, index = move.get("task"), move.get("index")
        steps = self._design.schedule(task) if shown is not None and task in self._design.tasks() else []
        step = steps[index] if isinstance(index, int) and 0 <= index < len(steps) else None
        same = step is not None and (step[0], step[1], step[3]) == (move.get("resource"), move.get("stage"),
                                                                     move.get("label"))
        if shown is None or shown.design is not self._design or not same:
            self._lane_note.value = ('<span class="tslab-field-error">the swimlane showed an earlier design, so '
                                     "the step was not moved; it shows the current one once its check is done: "
                                     "move it again there</span>")
            return
        moved = self.schedule_editor.move(task, index, str(move.get("section", "")).capitalize(),
                                          move.get("to_index", 0))
        issue = self.schedule_editor.error
        self._lane_note.value = "" if moved or issue is None else (
            f'<span class="tslab-field-error"><b>{html.escape(issue.where)}</b>: {html.escape(issue.message)}; '
            f"<i>{html.escape(issue.hint)}</i></span>")

    def _flow_selected(self, resource: str) -> None:
        """A ring clicked in the flow diagram: the pipelines tab, with that pipeline's panel marked."""
        self.editors.selected_index = 0
        try:
            self.pipeline_editor.select(resource)
        except DesignError:  # a resource the editor has no panel for (a fixed pipeline): nothing to mark
            return
        # a group's member is edited in its group's panel: the flow marks the group (and so its members)
        self.flow.selected = self._design.pipelines().get(resource, {}).get("group") or resource

    def _refused(self, errors: dict) -> None:
        with self._lock:
            self._refusals = errors
        self._views.request()

    def _progress(self, seconds: float) -> None:  # on the ticking thread
        with self._lock:
            self._checking = f"re-checking… {seconds:.1f} s"
        self._views.request()

    def _checked(self, design: Design, verdict: Verdict) -> None:  # on the checking thread
        with self._lock:
            self._verdict = verdict
            if design is self._design:
                self._checking = ""
        self._views.request()

    def _draw(self) -> None:
        """Draw the newest state (only ever on the kernel's thread, see ``ViewWriter``)."""
        with self._lock:
            verdict, checking, refusals = self._verdict, self._checking, dict(self._refusals)
        badge = badge_html(verdict, checking=checking)
        if refusals:  # the badge is the last valid design's, not what the refused field holds
            (resource, field), issue = next(iter(refusals.items()))
            badge += (f'<div class="tslab-stale">showing #{self.history.current}, the last valid design; the value '
                      f"typed into {html.escape(resource)}.{html.escape(field)} was refused: "
                      f"{html.escape(issue.message)}</div>")
        self._badge.value = badge
        # the status again above the lanes: the verdict header is out of sight while a step is dragged down there
        pill = status_pill(verdict, checking=checking)
        self._lanes_title.value = f'<b>schedule</b> <span class="tslab-lanes-status">{pill}</span>'
        if verdict is self._drawn:
            return
        self._states.value = f'<span class="tslab-states">{html.escape(states_line(verdict))}</span>'
        if self._drawn is not None:
            self.layout_chart.update(verdict)
        self._swimlane.show(verdict)
        self.flow.show(verdict)
        self.schedule_editor.show_cautions(verdict)
        view = type(self).counterexample_view(verdict)
        self._counterexample.children = [view] if view is not None else []
        if verdict.status in UNSAFE and (self._drawn is None or self._drawn.status not in UNSAFE):
            self.view_switch.value = "schedule"  # the counterexample is drawn under the lanes
        self._drawn = verdict
        self.refresh_saved(origin=self._edit_origin)

    def _render_history(self) -> None:
        self.history_view.show(self.history)
