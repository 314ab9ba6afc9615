"""``KnobPanel``: a captured kernel's knobs as editable fields; each edit re-traces the kernel.

Knobs are the kernel file's module constants and its host function's constexpr arguments
(:meth:`tslab.Design.knobs`). A value is typed as Python (``5``, ``(128, 128, 64)``, ``cutlass.Float16``);
what does not read as a value of the knob's kind is refused at the field and nothing is applied.
"""

from __future__ import annotations

import ast
import html
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ..core.design import Design
from ..errors import DesignError
from .editing import field_label


def parse_knob(text: str, current: Any) -> Any:
    """The value typed for a knob whose current value is ``current``; a DesignError for text that is not one."""
    raw = text.strip()
    if isinstance(current, str) and current.startswith("cutlass."):
        return raw
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        if isinstance(current, str):
            return raw
        raise DesignError("input", "knob", f"{raw!r} is not a value", f"type a value like {current!r}") from None
    return list(value) if isinstance(value, tuple) else value


class KnobPanel(widgets.VBox):
    """One field per knob of a captured design; ``on_edit(design)`` gets each re-traced design."""

    def __init__(self, design: Design, on_edit: Callable[[Design], None]) -> None:
        super().__init__()
        self._design = design
        self._on_edit = on_edit
        self._loading = False
        self.fields: dict[str, widgets.Text] = {}
        self.messages: dict[str, widgets.HTML] = {}
        self.progress = widgets.HTML("")
        self.add_class("tslab-knob-panel")
        self._build()

    def set(self, name: str, value: Any) -> bool:
        """Set one knob (re-traces the kernel); True if the kernel traced with it."""
        if name in self.fields:
            self._loading = True
            self.fields[name].value = repr(value) if not isinstance(value, str) else value
            self._loading = False
        return self._apply(name, value)

    def load(self, design: Design) -> None:
        self._design = design
        self._build()

    def _apply(self, name: str, value: Any) -> bool:
        self.progress.value = "<i>re-tracing the kernel...</i>"
        try:
            new = self._design.with_knobs(**{name: value})
        except DesignError as exc:
            self.messages[name].value = (f'<span class="tslab-field-error" style="color:#cf222e">'
                                         f'{html.escape(exc.message)}<br><i>hint: {html.escape(exc.hint)}</i></span>')
            return False
        finally:
            self.progress.value = ""
        self.messages[name].value = ""
        self._design = new
        self._on_edit(new)
        return True

    def _typed(self, name: str, text: str) -> None:
        if self._loading:
            return
        try:
            value = parse_knob(text, self._design.knobs()[name])
        except DesignError as exc:
            self.messages[name].value = (f'<span class="tslab-field-error" style="color:#cf222e">'
                                         f'{html.escape(exc.message)}; {html.escape(exc.hint)}</span>')
            return
        self._apply(name, value)

    def _build(self) -> None:
        knobs = self._design.knobs()
        rows: list[widgets.Widget] = [widgets.HTML(
            "<b>Kernel knobs</b> &middot; module constants and constexpr arguments; an edit re-traces the kernel")]
        self.fields.clear()
        self.messages.clear()
        for name, value in knobs.items():
            field = widgets.Text(value=value if isinstance(value, str) else repr(value), continuous_update=False,
                                 layout=widgets.Layout(width="190px"))
            field.add_class(f"tslab-knob-{name}")
            field.observe(lambda change, n=name: self._typed(n, change["new"]), "value")
            message = widgets.HTML("")
            self.fields[name], self.messages[name] = field, message
            rows.append(widgets.HBox([field_label(name), field, message],
                                    layout=widgets.Layout(flex_flow="row wrap", align_items="center")))
        self.children = [*rows, self.progress]
