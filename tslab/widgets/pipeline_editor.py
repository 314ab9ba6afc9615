"""``PipelineEditor``: one panel per pipelined resource showing its PipelineConfig as TS holds it.

A PipelineGroup is one panel (titled with the group and its members) in place of its members' panels: its
edits go to the group and every member at once. Only the fields the pipeline type's TS factory accepts are
editable; in a group panel the fields TS merges from the members (e.g. the summed producer group) are shown,
not edited. Every edit builds a new Design (TS
validates it); an invalid value is shown at its field with TS's reason and a hint, and the last valid design
is kept.
"""

from __future__ import annotations

import html
import re
from typing import Any

import ipywidgets as widgets
from ipywidgets.widgets.widget_bool import CheckboxStyle
from ipywidgets.widgets.widget_description import DescriptionStyle
from ipywidgets.widgets.widget_string import HTMLStyle, TextStyle
from traitlets import TraitError

from ..core.design import Design
from ..core.pipeline_fields import BOOL_FIELDS
from ..core.pipeline_groups import MERGED_FIELDS
from ..errors import DesignError, Issue
from . import pipeline_form as form
from .editing import DesignHolder, SharedLooks, field_label
from .knob_panel import KnobPanel

AGENTS = ("Thread", "Warp", "ThreadBlock", "ThreadBlockCluster")
_ROW = {"flex_flow": "row wrap", "align_items": "center"}
_CONTROL = "190px"  # a label and its control side by side in the Studio's editors column


class PipelineEditor(DesignHolder, widgets.VBox):
    """Edit the PipelineConfig of every pipelined resource of a design.

    ``auto_check=True`` re-checks after each accepted edit and keeps the result in ``verdict``; a Studio
    passes ``False`` and checks in the background itself.
    """

    def __init__(self, design: Design, *, auto_check: bool = True) -> None:
        widgets.VBox.__init__(self)
        self._hold(design, auto_check=auto_check)
        self._controls: dict[tuple[str, str], widgets.Widget] = {}
        self._messages: dict[tuple[str, str], widgets.HTML] = {}
        self._notes: dict[tuple[str, str], str] = {}  # what each message box says, as plain text
        self._loading = False
        self.errors: dict[tuple[str, str], Issue] = {}
        self.knobs: KnobPanel | None = None
        self._panels: dict[str, widgets.Widget] = {}
        self._selected: str | None = None
        self._looks = SharedLooks()
        self._build()

    def select(self, resource: str) -> None:
        """Mark the panel of ``resource`` (the one picked in a flow diagram); a resource in a PipelineGroup marks
        the group's panel."""
        resource = self._design.pipelines().get(resource, {}).get("group") or resource
        if resource not in self._panels:
            raise DesignError("input", f"resource '{resource}'", "has no panel in this editor",
                              "pick one of: " + ", ".join(self._panels))
        self._selected = resource
        for name, panel in self._panels.items():
            (panel.add_class if name == resource else panel.remove_class)("tslab-selected")

    def set(self, resource: str, field: str, value: Any) -> bool:
        """Set one field; True if TS accepted it, else the error is in ``errors[(resource, field)]``."""
        key = (resource, field)
        if key in self._controls:
            self._show(key, value)
        return self._apply(resource, field, value)

    def control(self, resource: str, field: str) -> widgets.Widget:
        """The control of one field (a group field's control holds an agent dropdown and a size box)."""
        group = self._design.pipelines().get(resource, {}).get("group")
        if group is not None:
            raise DesignError("input", f"resource '{resource}' field '{field}'",
                              f"has no control: {resource} belongs to PipelineGroup '{group}'",
                              f"use the group's panel: control({group!r}, {field!r})")
        if (resource, field) not in self._controls:
            raise DesignError("input", f"resource '{resource}' field '{field}'", "has no control in this editor",
                              "pick a pipelined resource and one of: " + ", ".join(form.SHOWN_FIELDS))
        return self._controls[(resource, field)]

    def message(self, resource: str, field: str) -> str:
        """What is shown at a field, as plain text: TS's reason, the hint and the design on show for a refused
        value, a captured kernel's sizing note ('' when there is nothing to say)."""
        return self._notes.get((resource, field), "")

    def load(self, design: Design) -> None:
        """Show ``design`` (e.g. after a revert) without re-checking or notifying listeners."""
        same = design.pipelines() == self._design.pipelines() and design.knobs() == self._design.knobs()
        self._design = design
        if same and not self.errors:
            return
        refused = list(self.errors)
        self.errors.clear()
        if self._shown_in_place():
            for key in refused:
                self._message(key, None)
        else:
            self._build()

    def __repr__(self) -> str:
        status = f", {self.verdict.status}" if self.verdict is not None else ""
        return f"PipelineEditor({self._design.kernel}: {', '.join(self._design.pipelines()) or 'no pipelines'}{status})"

    # -- internals -----------------------------------------------------------------------------------
    def _apply(self, resource: str, field: str, value: Any) -> bool:
        key = (resource, field)
        try:
            self._require_editable(resource, field)
            where = f"resource '{resource}' field '{field}'"
            if field == "interleave_stride" and isinstance(value, str):
                value = form.parse_interleave(value, where=where)
            elif field in form.INT_FIELDS:
                value = form.parse_whole(value, field=field, where=where)
            elif field in form.GROUP_FIELDS and isinstance(value, dict) and "size" in value:
                value = {**value, "size": form.parse_whole(value["size"], field=f"{field}.size", where=where)}
            new = self._design.with_pipeline(resource, **{field: value})
        except DesignError as exc:
            self.errors[key] = exc.issue
            self._message(key, exc.issue)
            return False
        for stale in [k for k in self.errors if k[0] == resource]:
            self.errors.pop(stale)
            self._message(stale, None)
        self.accept(new)
        return True

    def _require_editable(self, resource: str, field: str) -> None:
        pipelines = self._design.pipelines()
        if resource not in pipelines:
            raise DesignError("input", f"resource '{resource}'", "is not a pipelined resource of this design",
                              "edit one of: " + ", ".join(pipelines))
        kind = pipelines[resource]["pipeline_type"]
        allowed = _editable(pipelines[resource])
        if "members" in pipelines[resource] and field in MERGED_FIELDS:
            raise DesignError("input", f"PipelineGroup '{resource}' field '{field}'",
                              "is merged by TS from the members' values, not edited in the group's panel",
                              f"set every member's value with design.with_pipeline({resource!r}, {field}=...)")
        if field not in allowed:
            raise DesignError("input", f"resource '{resource}' field '{field}'",
                              f"does not apply to a {kind} pipeline (its TS factory does not take it)",
                              "edit one of: " + ", ".join(allowed))

    def _message(self, key: tuple[str, str], issue: Issue | None) -> None:
        control = self._controls.get(key)
        if control is not None:  # a red border on the refused field, gone once it holds a valid value again
            (control.add_class if issue is not None else control.remove_class)("tslab-invalid")
        for callback in self._refusal_listeners:
            callback(dict(self.errors))
        box = self._messages.get(key)
        if box is None:
            return
        if issue is None:
            box.value = ""
            self._notes.pop(key, None)
            return
        shown = f"showing the last valid design{self.shown_note()}"
        self._notes[key] = "\n".join([issue.message, *([f"hint: {issue.hint}"] if issue.hint else []), shown])
        box.value = (f'<div class="tslab-field-error" style="color:#cf222e">{_esc(issue.message)}'
                     + (f"<br><i>hint: {_esc(issue.hint)}</i>" if issue.hint else "")
                     + f'<br><span class="tslab-last-valid">{_esc(shown)}</span></div>')

    def _shown_in_place(self) -> bool:
        """Show the design's values in the panels on the page when it has the panels shown (the same pipelines,
        types and groups; not a captured kernel, whose knobs may resize them); False if it needs new ones."""
        if self._design.is_captured or _panel_key(self._design) != self._panels_of:
            return False
        pipelines = self._design.pipelines()
        return all(self._show(key, pipelines[key[0]].get(key[1])) for key in list(self._controls))

    def _show(self, key: tuple[str, str], value: Any) -> bool:
        """Put ``value`` in the field's control as ``_control`` would show it; False if the control cannot."""
        control, shown = self._controls[key], _shown(key[1], value)
        self._loading = True
        try:
            if key[1] in form.GROUP_FIELDS and isinstance(value, (int, str)):  # a size alone keeps the agent
                control.children[1].value = shown[1]
            elif key[1] in form.GROUP_FIELDS:
                control.children[0].value, control.children[1].value = shown
            else:
                control.value = shown
        except (TraitError, TypeError, ValueError):  # a value the control cannot show still goes to TS
            return False
        finally:
            self._loading = False
        return True

    def set_knob(self, name: str, value: Any) -> bool:
        """Set a captured kernel's knob (re-traces it); True if the kernel traced with the value."""
        if self.knobs is None:
            raise DesignError("input", f"design '{self._design.kernel}'", "has no knobs: it is not a captured kernel",
                              "edit its pipelines, or capture a kernel with tslab.capture_file(...)")
        return self.knobs.set(name, value)

    def _build(self) -> None:
        self._controls.clear()
        self._panels.clear()
        self._messages.clear()
        self._notes.clear()
        panels = [self._panel(name, cfg) for name, cfg in self._design.pipelines().items() if "group" not in cfg]
        if not panels:
            panels = [widgets.HTML("<i>This design has no pipelined resource.</i>")]
        if self._design.is_captured:
            self.knobs = KnobPanel(self._design, self._knob_edited)
            panels.insert(0, self.knobs)
        self.children = [*panels, self.status]
        self._panels_of = _panel_key(self._design)

    def _knob_edited(self, design: Design) -> None:
        self.accept(design)
        self.errors.clear()
        self._build()  # the re-traced kernel may declare other pipelines and sizes

    def _sized_by(self, resource: str, cfg: dict[str, Any]) -> str:
        """For a captured kernel: the knob that likely sizes this resource's buffers, as a note at num_stages."""
        if not self._design.is_captured:
            return ""
        knob = self._design.source.sizing_knob(cfg.get("num_stages"))
        return "" if knob is None else f"sized by knob {knob[0]} ({knob[1]}): edit the knob"

    def _panel(self, resource: str, cfg: dict[str, Any]) -> widgets.Widget:
        kind = cfg["pipeline_type"]
        editable = _editable(cfg)
        title = f'<b class="tslab-resource">{_esc(resource)}</b>'
        if "members" in cfg:
            title += (f' &middot; PipelineGroup ({_esc(cfg["mode"])}) of '
                      + ", ".join(f'<b class="tslab-member">{_esc(m)}</b>' for m in cfg["members"]))
        rows: list[widgets.Widget] = [widgets.HTML(f"{title} &middot; <code>{_esc(kind)}</code> pipeline")]
        sized_by = self._sized_by(resource, cfg)
        for field in form.SHOWN_FIELDS:
            control = self._control(resource, field, cfg.get(field), field in editable)
            message = widgets.HTML("", layout=self._looks.layout(), style=self._looks.style(HTMLStyle))
            if field == "num_stages" and sized_by:
                message.value = f'<span class="tslab-sized-by" style="color:#57606a">{_esc(sized_by)}</span>'
                self._notes[(resource, field)] = sized_by
            self._controls[(resource, field)] = control
            self._messages[(resource, field)] = message
            label = field_label(field, self._looks)
            rows.append(widgets.VBox([widgets.HBox([label, control], layout=self._looks.layout(**_ROW)), message],
                                     layout=self._looks.layout()))
        box = widgets.VBox(rows, layout=widgets.Layout(border="1px solid #d0d7de", padding="4px", margin="2px"))
        box.add_class("tslab-pipeline-panel")
        box.add_class(f"tslab-panel-{re.sub(r'[^A-Za-z0-9_-]', '_', resource)}")  # found by the flow diagram
        if resource == self._selected:
            box.add_class("tslab-selected")
        self._panels[resource] = box
        if "members" in cfg:
            box.add_class("tslab-pipeline-group")
        return box

    def _control(self, resource: str, field: str, value: Any, editable: bool) -> widgets.Widget:
        looks = self._looks
        if field in form.GROUP_FIELDS:
            agent_shown, size_shown = _shown(field, value)
            agent = widgets.Dropdown(options=AGENTS, value=agent_shown, layout=looks.layout(width="124px"),
                                     style=looks.style(DescriptionStyle), disabled=not editable)
            size = widgets.Text(value=size_shown, layout=looks.layout(width="62px"), style=looks.style(TextStyle),
                                continuous_update=False, disabled=not editable)

            def group_changed(_: Any) -> None:
                self._edited(resource, field, {"agent": agent.value, "size": size.value})

            agent.observe(group_changed, "value")
            size.observe(group_changed, "value")
            return widgets.HBox([agent, size], layout=looks.layout(width="auto"))
        if field in form.SIGNALING_FIELDS:
            options = form.SIGNALING_CHOICES + (("None",) if field == "consumer_wait_signaling_threads" else ())
            shown = _shown(field, value)
            control: widgets.Widget = widgets.Dropdown(options=tuple(dict.fromkeys((*options, shown))), value=shown,
                                                       disabled=not editable, layout=looks.layout(width=_CONTROL),
                                                       style=looks.style(DescriptionStyle))
        elif field == "interleave_stride":
            control = widgets.Text(value=_shown(field, value), continuous_update=False,
                                   placeholder="2 or acquire, commit, wait, release", disabled=not editable,
                                   layout=looks.layout(width=_CONTROL), style=looks.style(TextStyle))
        elif field in BOOL_FIELDS:
            control = widgets.Checkbox(value=_shown(field, value), disabled=not editable, indent=False,
                                       layout=looks.layout(width="auto"), style=looks.style(CheckboxStyle))
        else:  # a whole number, typed as text: the editor parses it and refuses "2.5" or "x" with a message
            control = widgets.Text(value=_shown(field, value), continuous_update=False, disabled=not editable,
                                   layout=looks.layout(width=_CONTROL), style=looks.style(TextStyle))
        control.add_class(f"tslab-field-{field}")
        control.observe(lambda change: self._edited(resource, field, _from_control(field, change["new"])), "value")
        return control

    def _edited(self, resource: str, field: str, value: Any) -> None:
        if not self._loading:
            self._apply(resource, field, value)


def _shown(field: str, value: Any) -> Any:
    """What a field's control shows for ``value``: a group's (agent, size text), a menu's entry, a checkbox's state,
    or the text of a number or interleave."""
    if field in form.GROUP_FIELDS:
        group = value if isinstance(value, dict) else {"size": value} if isinstance(value, (int, str)) else {}
        return group.get("agent", "Thread"), str(group.get("size", 1))
    if field in form.SIGNALING_FIELDS:
        return "None" if value is None else str(value)
    if field == "interleave_stride":
        return form.format_interleave(value)
    if field in BOOL_FIELDS:
        return value is True
    return str(int(value)) if isinstance(value, int) else ("0" if value is None else str(value))


def _panel_key(design: Design) -> tuple:
    """What the panels are made from, values aside: each pipeline's name, type, group and members."""
    return tuple((name, cfg["pipeline_type"], cfg.get("group"), tuple(cfg.get("members", ())), cfg.get("mode"))
                 for name, cfg in design.pipelines().items())


def _editable(cfg: dict[str, Any]) -> tuple[str, ...]:
    """The fields a panel edits: those of the pipeline type's TS factory, less those a group merges."""
    fields = form.editable_fields(cfg["pipeline_type"])
    return tuple(f for f in fields if f not in MERGED_FIELDS) if "members" in cfg else fields


def _from_control(field: str, value: Any) -> Any:
    return None if field in form.SIGNALING_FIELDS and value == "None" else value


def _esc(text: str) -> str:
    return html.escape(str(text))
