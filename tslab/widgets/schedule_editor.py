"""``ScheduleEditor``: one column per task, its steps grouped Head / Loop / Tail, with undo and redo.

Steps move up and down (across section borders), are deleted or inserted from the choices each resource
offers (``Design.stage_choices``); every edit builds a new Design, and a rejected edit keeps the last valid
one. Each task's steps are one ``StepList`` widget, however many there are. The "code" tab shows each task's
schedule as the ``@schedule`` function to paste.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets
from ipywidgets.widgets.widget_description import DescriptionStyle
from ipywidgets.widgets.widget_string import HTMLStyle

from ..core.design import Design
from ..core.stage_binding import caution_steps
from ..core.steps import CONSUMER_STAGES, PRODUCER_STAGES, SECTIONS, Step, make_step
from ..core.verdict import Verdict
from ..errors import DesignError, Issue
from . import schedule_ops as ops
from .editing import DesignHolder, SharedLooks
from .history import describe_steps
from .schedule_code import schedule_code
from .step_list import StepList


class ScheduleEditor(DesignHolder, widgets.VBox):
    """Edit the schedules of a design's tasks; ``move``, ``delete``, ``insert``, ``undo``, ``redo``."""

    def __init__(self, design: Design, *, auto_check: bool = True, rows_when_shown: bool = False) -> None:
        """``rows_when_shown``: make the step rows (a few widgets a step, several hundred in a large kernel) only
        when ``show_rows()`` is called or ``marked_steps`` is read; edits before then change the design, and the
        rows show the design on show when they are made. A Studio calls it when its schedules tab is first opened,
        so a notebook of Studios does not send the page every row it may never look at."""
        widgets.VBox.__init__(self)
        self._rows_wanted = not rows_when_shown
        self._hold(design, auto_check=auto_check)
        self._looks = SharedLooks()  # the columns' inserters share their layouts and styles
        self.error: Issue | None = None
        self._undo: list[tuple[str, list[Step], list[Step], bool]] = []
        self._redo: list[tuple[str, list[Step], list[Step], bool]] = []
        self._shared_history: tuple[Callable[[], bool], Callable[[], bool]] | None = None
        self._message = widgets.HTML("")
        self._undo_button = widgets.Button(description="undo", icon="undo", layout=widgets.Layout(width="80px"))
        self._redo_button = widgets.Button(description="redo", icon="repeat", layout=widgets.Layout(width="80px"))
        self._undo_button.on_click(lambda _: self.undo())
        self._redo_button.on_click(lambda _: self.redo())
        self._columns = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        if not self._rows_wanted:
            self._columns.children = [widgets.HTML('<i class="tslab-steps-later">the steps are drawn when this tab '
                                                   "is opened</i>")]
        self._cautions_of: Verdict | None = None  # the verdict whose cautions the steps show
        self._code = widgets.VBox()
        self._task_columns: dict[str, _TaskColumn] = {}  # made once per task, shown again after each edit
        self._task_code: dict[str, widgets.HTML] = {}
        self._tabs = widgets.Tab(children=[self._columns, self._code])
        self._tabs.titles = ("steps", "code")
        self.children = [widgets.HBox([self._undo_button, self._redo_button, self._message]), self._tabs,
                         self.status]
        self._render()

    # -- programmatic edits --------------------------------------------------------------------------
    def move(self, task: str, index: int, to_section: str, to_index: int) -> bool:
        """Move step ``index`` of ``task`` to position ``to_index`` of ``to_section``."""
        return self._edit(task, lambda steps: ops.move(task, steps, index, to_section, to_index), moved=index)

    def delete(self, task: str, index: int) -> bool:
        """Delete step ``index`` of ``task``."""
        return self._edit(task, lambda steps: ops.delete(task, steps, index))

    def insert(self, task: str, index: int, step: Sequence[Any]) -> bool:
        """Insert ``step`` (resource, stage, section, label) before step ``index`` of ``task``."""
        return self._edit(task, lambda steps: ops.insert(task, steps, index, step))

    def undo(self) -> bool:
        """Undo the last schedule edit (on top of whatever else changed since); in a Studio, its last edit."""
        if self._shared_history is not None:
            return self._shared_history[0]()
        return self._history(self._undo, self._redo, before=True)

    def redo(self) -> bool:
        """Redo the last undone schedule edit; in a Studio, its last undone edit."""
        if self._shared_history is not None:
            return self._shared_history[1]()
        return self._history(self._redo, self._undo, before=False)

    def use_history(self, undo: Callable[[], bool], redo: Callable[[], bool]) -> None:
        """Hand undo and redo to a host's history (a Studio's): the editor keeps none of its own."""
        self._shared_history = (undo, redo)
        self._undo.clear()
        self._redo.clear()
        self._undo_button.layout.display = self._redo_button.layout.display = "none"

    def code(self, task: str) -> str:
        """The ``@schedule`` function of ``task`` as the editor shows it."""
        return schedule_code(task, self._design.schedule(task), self._loops().get(task, (0, 1, 1)),
                             self._design.work_kwargs(task), self._design.tile_loop(task))

    def load(self, design: Design) -> None:
        """Show ``design`` (e.g. after a revert) without re-checking or notifying listeners."""
        same = _schedule_key(design) == _schedule_key(self._design)
        self._design = design
        if not same:
            self._render()
        else:  # the marks follow the design on show: none until its own verdict arrives
            self.show_cautions(self._cautions_of)

    def show_cautions(self, verdict: Verdict | None) -> None:
        """Mark the steps ``verdict``'s stage-binding cautions name (amber, the reason as a tooltip), when it is the
        verdict of the design on show; otherwise, and for a verdict with errors, mark none."""
        self._cautions_of = verdict
        marked = caution_steps(verdict.schedule) if verdict is not None and verdict.shown_cautions and \
            verdict.design is self._design else {}
        for task, column in self._task_columns.items():
            if task in self._design.tasks():
                column.show(self._design.schedule(task), {(section, position): caution for (named, section, position),
                                                          caution in marked.items() if named == task},
                            self._design.work_kwargs(task), self._design.tile_loop(task))

    def show_rows(self) -> None:
        """Make and show the step rows now, if they were left for later (``rows_when_shown``)."""
        if not self._rows_wanted:
            self._rows_wanted = True
            self._render()

    @property
    def marked_steps(self) -> list[tuple[str, str, int]]:
        """``(task, section, position)`` of the steps marked with a caution now."""
        self.show_rows()
        return [(task, section, position) for task in self._design.tasks()
                for section, position, _ in self._task_columns[task].steps.marked()]

    def step_caution(self, task: str, section: str, position: int) -> str | None:
        """The caution shown on step ``position`` of ``section`` in ``task``'s column, or None."""
        self.show_rows()
        return next((caution for named, at, caution in self._task_columns[task].steps.marked()
                     if (named, at) == (section, position)), None)

    def __repr__(self) -> str:
        status = f", {self.verdict.status}" if self.verdict is not None else ""
        return f"ScheduleEditor({self._design.kernel}: {', '.join(self._design.tasks())}{status})"

    # -- internals -----------------------------------------------------------------------------------
    def _act(self, task: str, action: str, index: int, target: tuple[str, int] | None, current: bool) -> None:
        """A step's button, pressed in the front end: move it up or down, or delete it."""
        if not current:
            self._message.value = ('<span class="tslab-stale">That button was on steps drawn before the last edit; '
                                   "nothing changed: press it again on the steps shown now.</span>")
        elif action == "delete":
            self.delete(task, index)
        elif target is not None:
            self.move(task, index, *target)

    def _edit(self, task: str, change: Any, moved: int | None = None) -> bool:
        try:
            before = self._design.schedule(task)
            overridden = task in self._design.overrides["schedules"]
            after = change(before)
            new = self._design.with_schedule(task, after)
        except DesignError as exc:
            self._fail(exc.issue)
            return False
        if self._shared_history is None:
            self._undo.append((task, before, new.schedule(task), overridden))
            self._redo.clear()
        self.last_label = describe_steps(task, before, new.schedule(task), moved=moved)
        self._done(new)
        return True

    def _history(self, source: list, target: list, *, before: bool) -> bool:
        if not source:
            return False
        task, old, new_steps, overridden = source[-1]
        try:
            if before and not overridden:
                new = _kernel_schedule(self._design, task, old)
            else:
                new = self._design.with_schedule(task, old if before else new_steps)
        except DesignError as exc:
            self._fail(exc.issue)
            return False
        target.append(source.pop())
        self._done(new)
        return True

    def _fail(self, issue: Issue) -> None:
        self.error = issue
        self._message.value = (f'<span class="tslab-field-error" style="color:#cf222e"><b>{_esc(issue.where)}</b>: '
                               f"{_esc(issue.message)}; <i>{_esc(issue.hint)}</i></span>")

    def _done(self, design: Design) -> None:
        self.error = None
        self._message.value = ""
        self.accept(design)  # makes it current (unless it changes nothing)
        self._render()

    def _loops(self) -> dict[str, tuple[Any, Any, Any]]:
        """Each task's domain loop (start, end, step), read from the lowered TS tasks."""
        return self._task_info()[0]

    def _task_resources(self, task: str) -> dict[str, str | None]:
        """The resources ``task`` touches and its role on each: consumer (src), producer (dst), or None (both)."""
        return self._task_info()[1].get(task, {})

    def _task_info(self) -> tuple[dict[str, tuple[Any, Any, Any]], dict[str, dict[str, str | None]]]:
        if getattr(self, "_info_for", None) is not self._design:
            tasks = self._design.lower().blueprint.tasks
            roles: dict[str, dict[str, str | None]] = {}
            for t in tasks:
                src, dst = {r.name for r in t.src_resources}, {r.name for r in t.dst_resources}
                names = dict.fromkeys(r.name for r in (*t.src_resources, *t.dst_resources))
                roles[t.name] = {n: None if n in src and n in dst else "consumer" if n in src else "producer"
                                 for n in names}
            self._info = ({t.name: (t.domain_start, t.domain, t.step) for t in tasks}, roles)
            self._info_for = self._design
        return self._info

    def _render(self) -> None:
        """Show the design's schedules in the widgets already on the page: a column per task (made the first time the
        task is shown), its steps one ``StepList`` whose rows change with the design (an edit sends the lists that
        changed, not a new page of widgets)."""
        self._undo_button.disabled = not self._undo
        self._redo_button.disabled = not self._redo
        if not self._rows_wanted:
            return
        tasks = self._design.tasks()
        for task in tasks:
            if task not in self._task_columns:
                self._task_columns[task] = _TaskColumn(self, task)
                self._task_code[task] = widgets.HTML()
            self._task_code[task].value = f'<pre class="tslab-code">{_esc(self.code(task))}</pre>'
        _set_children(self._columns, [self._task_columns[t] for t in tasks])
        _set_children(self._code, [self._task_code[t] for t in tasks])
        self.show_cautions(self.verdict if self._auto_check else self._cautions_of)


def _set_children(box: widgets.Box, children: list[widgets.Widget]) -> None:
    """``box.children = children`` unless it holds them already (no message for an unchanged list)."""
    if list(box.children) != children:
        box.children = children


class _TaskColumn(widgets.VBox):
    """One task's column: its name, its steps (one ``StepList``), and the controls that insert a step."""

    def __init__(self, editor: ScheduleEditor, task: str) -> None:
        self._editor, self._task = editor, task
        self.steps = StepList()
        self.steps.on_action(lambda action, index, target, current: editor._act(task, action, index, target,
                                                                                current))
        self._inserter = _Inserter(editor, task)
        super().__init__([widgets.HTML(f'<b class="tslab-task">{_esc(task)}</b>'), self.steps, self._inserter],
                         layout=widgets.Layout(border="1px solid #d0d7de", padding="4px", margin="2px",
                                               flex="1 1 320px", min_width="0"))
        self.add_class("tslab-task-column")

    def show(self, steps: list[Step], cautions: dict[tuple[str, int], str],
             work_kwargs: dict[int, dict[str, Any]], tile_loop: dict[str, Any] | None = None) -> None:
        """List ``steps``, those at ``(section, position)`` in ``cautions`` marked, each work call with its
        compile-time arguments, each step that runs once around the work-tile loop saying so; offer the inserts
        possible now."""
        self.steps.show(steps, cautions, work_kwargs, tile_loop)
        self._inserter.refresh()


class _Inserter(widgets.VBox):
    """Pick a resource, a stage, a label and a section, and insert that step at the end of the section."""

    def __init__(self, editor: ScheduleEditor, task: str) -> None:
        self._editor, self._task = editor, task
        self._roles: dict[str, str | None] = {}
        self._pipelined: set[str] = set()
        looks = editor._looks  # every column's inserter shares its layouts and styles (each model is a comm)

        def dropdown(width: str, **kwargs: Any) -> widgets.Dropdown:
            return widgets.Dropdown(layout=looks.layout(width=width), style=looks.style(DescriptionStyle), **kwargs)

        self.resource, self.stage, self.label = dropdown("120px"), dropdown("160px"), dropdown("120px")
        self.section = dropdown("70px", options=SECTIONS, value="Loop")
        add = widgets.Button(description="insert", icon="plus", layout=looks.layout(width="80px"),
                             style=looks.style(widgets.ButtonStyle))
        self.resource.observe(lambda _: self._resource_changed(), "value")
        self.stage.observe(lambda _: self._stage_changed(), "value")
        add.on_click(lambda _: self._insert())
        wrap = looks.layout(flex_flow="row wrap")
        html_style = looks.style(HTMLStyle)
        title = widgets.HTML(f'<span style="color:#57606a">insert a step into {_esc(task)}:</span>',
                             layout=looks.layout(), style=html_style)
        super().__init__([title, widgets.HBox([self.resource, self.stage, self.label], layout=wrap),
                          widgets.HBox([widgets.HTML("in section", layout=looks.layout(width="auto"),
                                                     style=html_style), self.section, add], layout=wrap)],
                         layout=looks.layout(border_top="1px dashed #d0d7de", margin="8px 0 0 0",
                                             padding="4px 0 0 0"))
        self.add_class("tslab-step-inserter")

    def refresh(self) -> None:
        """Offer the resources the task touches now (the choices made stay while they are still offered)."""
        design = self._editor.design
        roles = self._editor._task_resources(self._task) or dict.fromkeys(design.resources())
        pipelined = set(design.pipelines())
        if (roles, pipelined) != (self._roles, self._pipelined):
            self._roles, self._pipelined = roles, pipelined
            _offer(self.resource, list(roles))
            self._resource_changed()

    def _resource_changed(self) -> None:
        if self.resource.value:
            _offer(self.stage, offered_stages(self._editor.design.stage_choices(self.resource.value),
                                              self.resource.value in self._pipelined,
                                              self._roles.get(self.resource.value)))
        self._stage_changed()

    def _stage_changed(self) -> None:
        resource, stage = self.resource.value, self.stage.value
        choices = self._editor.design.stage_choices(resource) if resource else {}
        _offer(self.label, _labels(stage, choices) if stage else [None])

    def _insert(self) -> None:
        if self.resource.value and self.stage.value:
            step = make_step(self.resource.value, self.stage.value, self.section.value, self.label.value or None)
            self._editor._edit(self._task, lambda steps: ops.insert_in_section(steps, step, 10**6))


def _schedule_key(design: Design) -> tuple:
    """What the columns show: the kernel, its parameters and the schedule overrides."""
    return design.kernel, design.params, design.overrides["schedules"]


def _kernel_schedule(design: Design, task: str, steps: list[Step]) -> Design:
    """``design`` with ``task`` back on the kernel's own schedule (no override), so undo restores equality."""
    data = design.to_dict()
    data["schedules"].pop(task, None)
    try:
        return Design.from_dict(data)
    except DesignError:  # a custom design cannot be rebuilt from data: keep the steps as an override
        return design.with_schedule(task, steps)


def offered_stages(choices: dict[str, list[str]], pipelined: bool, role: str | None = None) -> list[str]:
    """Stages a step on a resource may use: its pipeline ops if it has a pipeline, work stages it offers.

    ``role`` ("producer" for a task's dst resource, "consumer" for a src resource) keeps that side only.
    """
    out = []
    for side, stages, labels in (("producer", PRODUCER_STAGES, choices.get("producer_work")),
                                 ("consumer", CONSUMER_STAGES, choices.get("consumer_work"))):
        if role not in (None, side):
            continue
        out += [stage for stage in stages if (labels if stage.endswith("Work") else pipelined)]
    return out


#: The value of the label choice "no label": a Dropdown shows an option whose value is None as no selection at all.
NO_LABEL = ""


def _offer(dropdown: widgets.Dropdown, options: list[Any]) -> None:
    """New options with the first one selected (a Dropdown otherwise keeps no selection); a lone ``None`` (a stage
    that takes no label) shows as "no label", greyed out."""
    dropdown.options = [("no label", NO_LABEL) if o is None else (str(o), o) for o in options]
    dropdown.value = dropdown.options[0][1] if options else None
    dropdown.disabled = options == [None]


def _labels(stage: str, choices: dict[str, list[str]]) -> list[str | None]:
    if not stage.endswith("Work"):
        return [None]
    return list(choices.get("producer_work" if stage.startswith("Producer") else "consumer_work", [])) or [None]


def _esc(text: str) -> str:
    return html.escape(str(text))
