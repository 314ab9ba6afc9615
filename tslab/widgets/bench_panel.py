"""``BenchPanel``: pick a GPU kernel and its parameters (or open a design, catalog or captured), then compile, run
and check, time, profile and export it.

Every button calls a method of the same name (``compile()``, ``run()``, ``bench()``, ``profile()``,
``export(path)``), which tests and notebooks may call directly. Errors are shown in the panel and kept in
``last_error``; nothing raises out of a button. Without a GPU the panel says so, keeps Run, Bench and Profile
disabled, and still compiles for the chosen arch. A captured kernel runs on the ``inputs`` function the panel was
given (with ``reference``, ``outputs`` and ``baseline``, as :meth:`tslab.gpu.CompiledKernel.run` takes them);
its fields are its knobs.
"""

from __future__ import annotations

import html
import re
import threading
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

from ..compiling.captured_export import export_captured
from ..core import mime
from ..core.design import Design
from ..errors import TslabError
from ..gpu import BenchResult, CompiledKernel, device
from ..gpu import bench as gpu_bench
from ..gpu import compile as gpu_compile
from ..gpu import export as gpu_export
from ..gpu import profile as gpu_profile
from ..gpu.timeline import Timeline
from ..kernels import NAMES, gpu_kernels, kernel_module, kernel_rules
from .saved_output import SavedOutput

ARCHES = ("sm_90a", "sm_100a")
PTX_EXCERPT_LINES = 24


def ptx_excerpt(ptx: str, lines: int = PTX_EXCERPT_LINES) -> str:
    """The PTX lines around the first bulk tensor copy (or the kernel's entry), for a quick look."""
    text = ptx.splitlines()
    for needle in ("cp.async.bulk.tensor", ".entry"):
        hits = [i for i, line in enumerate(text) if needle in line]
        if hits:
            start = max(0, hits[0] - 4)
            return "\n".join(text[start:start + lines])
    return "\n".join(text[:lines])


def check_choice(name: str, value: Any, choices: tuple | list) -> None:
    """Refuse ``value`` unless it is one of ``choices``, naming them."""
    if value not in choices:
        raise TslabError(f"BenchPanel: {name}={value!r} is not one of {', '.join(map(repr, choices))}")


def _field_kind(value: Any, choices: tuple | list | None) -> type:
    """The field a kernel parameter's value takes: a checkbox (bool), a menu of ``choices``, or a number or text box."""
    if isinstance(value, bool):
        return widgets.Checkbox
    if choices is not None:
        return widgets.Dropdown
    if isinstance(value, int):
        return widgets.IntText
    return widgets.FloatText if isinstance(value, float) else widgets.Text


def param_input(name: str, value: Any, choices: tuple | list | None = None) -> widgets.Widget:
    """The field for one kernel parameter, typed by its value: bool, one of ``choices``, or int."""
    look = {"description": name, "style": {"description_width": "130px"}, "layout": widgets.Layout(width="320px")}
    kind = _field_kind(value, choices)
    if kind is widgets.Checkbox:
        return widgets.Checkbox(value=value, indent=True, **look)
    if kind is widgets.Dropdown:
        check_choice(name, value, choices)
        return widgets.Dropdown(options=list(choices), value=value, **look)
    return kind(value=str(value) if kind is widgets.Text else value, **look)


def shown_again(field: widgets.Widget | None, name: str, value: Any, choices: tuple | list | None) -> widgets.Widget:
    """``field`` set to ``value`` when it is the field ``param_input`` would make for it (same kind, same menu),
    else a new field: a design shown again sends the values that changed, not new widgets."""
    kind = _field_kind(value, choices)
    if type(field) is not kind or (choices is not None and tuple(field.options) != tuple(choices)):
        return param_input(name, value, choices)
    if choices is not None:
        check_choice(name, value, choices)
    field.value = str(value) if kind is widgets.Text else value
    return field


class BenchPanel(SavedOutput, widgets.VBox):
    """Compile, run, time and export a GPU kernel; bench results accumulate for comparison.

    ``kernel``: a catalog kernel's name (its parameters become fields, ``params`` their first values), or a
    :class:`~tslab.Design`, catalog or captured, whose edits are kept and whose parameters (knobs for a captured
    kernel) become fields. ``inputs``, ``reference``, ``outputs`` and ``baseline`` are what a captured kernel runs
    and is timed with (module-level functions in a file). ``fields=False`` shows no fields: the design comes from
    :meth:`load` (the Studio's GPU tab follows its edits so).
    """

    def __init__(self, kernel: str | Design = "tma_copy", *, arch: str | None = None,
                 shape: tuple[int, ...] | None = None, inputs: Any = None, reference: Any = None,
                 outputs: Any = None, baseline: Any = None, fields: bool = True, **params: Any) -> None:
        super().__init__()
        self.device = device()
        self.compiled: CompiledKernel | None = None
        self._compiled_for: tuple | None = None  # (design JSON, shape, arch) that self.compiled was built from
        self.results: list[BenchResult] = []
        self.timeline: Timeline | None = None
        self.last_error = ""
        self._busy = threading.Lock()
        self._io = {"inputs": inputs, "reference": reference, "outputs": outputs}
        self._baseline = baseline
        self._base: Design | None = kernel if isinstance(kernel, Design) else None
        if self._base is not None and params:
            raise TslabError(f"BenchPanel: design '{self._base.kernel}' was given, so its parameters come from it; "
                             "edit them with design.with_params(...) (knobs: with_knobs) or in the fields")
        name = self._base.kernel if self._base is not None else kernel
        # Teaching designs that fail on purpose compile with force=True in code; they are nothing to time.
        timed = [k for k in gpu_kernels() if not k.startswith("demo_")] if self._base is None else [name]
        self._kernel = widgets.Dropdown(options=timed, value=name, description="kernel",
                                        disabled=self._base is not None)
        self._arch = widgets.Dropdown(options=list(ARCHES), description="arch", value=arch or self._arch_for(name))
        self._shape = widgets.Text(value="x".join(map(str, shape)) if shape else "", description="shape",
                                   placeholder="kernel default, e.g. 4096x4096")
        self._params = widgets.VBox()
        package = re.sub(r"\W", "_", name)  # a captured kernel's label may hold brackets
        self._export_path = widgets.Text(value=f"{package}_pkg", description="export to")
        self._buttons = {name: widgets.Button(description=label) for name, label in
                         (("compile", "Compile"), ("run", "Run + check"), ("bench", "Bench"), ("profile", "Profile"),
                          ("export", "Export"))}
        for button_name, button in self._buttons.items():
            button.on_click(lambda _b, n=button_name: self._in_background(n))
            if self.device is None and button_name in ("run", "bench", "profile"):
                button.disabled = True
                button.tooltip = "needs an NVIDIA GPU: Compile and Export work without one"
        self._status = widgets.HTML()
        self._compile_view = widgets.HTML()
        self._table = widgets.HTML()
        self._timeline = widgets.Output()
        self._figure: go.FigureWidget | None = None
        self._chart = widgets.VBox([widgets.HTML(
            '<i class="tslab-bench-no-gpu">no GPU here: compile results only</i>' if self.device is None else "")])
        self._fields = fields
        self._kernel.observe(lambda _c: self._show_params({}), names="value")
        self._kernel.observe(lambda c: setattr(self._arch, "value", self._arch_for(c["new"], self._arch.value)),
                             names="value")
        self._show_params(params if self._base is None else self._field_values(self._base))
        wrap = widgets.Layout(flex_flow="row wrap")
        top = [self._kernel, self._arch] + ([] if self._captured else [self._shape])
        self.children = [
            widgets.HBox(top, layout=wrap), self._params,
            widgets.HBox([*self._buttons.values(), self._export_path], layout=wrap), self._status,
            self._compile_view, self._table, self._chart, self._timeline,
        ]
        self.add_class("tslab-bench-panel")
        self._say(self._device_line())

    def _arch_for(self, kernel: str, current: str | None = None) -> str:
        """The arch to compile ``kernel`` for: ``current`` (else this GPU's, else sm_90a) unless the kernel is for
        other archs only (a Blackwell kernel: sm_100a)."""
        here = current or (self.device.arch if self.device else "sm_90a")
        archs = kernel_rules(kernel).archs if kernel in NAMES and kernel_rules(kernel) is not None else None
        return archs[0] if archs and here not in archs and archs[0] in ARCHES else here

    # -- the design ------------------------------------------------------------------------------------
    @property
    def _captured(self) -> bool:
        return self._base is not None and self._base.is_captured

    @staticmethod
    def _field_values(design: Design) -> dict[str, Any]:
        return design.knobs() if design.is_captured else dict(design.params)

    def load(self, design: Design) -> None:
        """Show ``design`` (the same kernel, e.g. after an edit elsewhere): what the buttons compile and run next."""
        if design.kernel != self._kernel.value:
            raise TslabError(f"BenchPanel: shows kernel '{self._kernel.value}', not '{design.kernel}'; open another "
                             "BenchPanel for it")
        self._base = design
        self._show_params(self._field_values(design))

    def _show_params(self, values: dict[str, Any]) -> None:
        """One field per kernel parameter (knob): a checkbox, a menu of the kernel's ``RULES.choices``, or a number."""
        if self._base is not None:
            defaults = self._field_values(self._base)
        else:
            defaults = kernel_module(self._kernel.value).PARAMS
        rules = None if self._captured else kernel_rules(self._kernel.value)
        choices = rules.choices if rules is not None else {}
        unknown = sorted(set(values) - set(defaults))
        if unknown:
            raise self._no_such_param(unknown[0], defaults)
        before = getattr(self, "_param_inputs", {})
        self._param_inputs = {name: shown_again(before.get(name), name, values.get(name, default), choices.get(name))
                              for name, default in defaults.items()}
        if before and list(before.values()) == list(self._param_inputs.values()):
            return  # the same fields, their values set: nothing new to draw
        shown = list(self._param_inputs.values()) if self._fields else []
        self._params.children = [widgets.HBox(shown, layout=widgets.Layout(flex_flow="row wrap"))] if shown else []

    def set_param(self, name: str, value: Any) -> None:
        """Set one kernel parameter (as the field beside it would)."""
        if name not in self._param_inputs:
            raise self._no_such_param(name, self._param_inputs)
        box = self._param_inputs[name]
        if isinstance(box, widgets.Dropdown):
            check_choice(name, value, box.options)
        box.value = value

    def _no_such_param(self, name: str, names: Any) -> TslabError:
        return TslabError(f"BenchPanel: kernel '{self._kernel.value}' has no parameter {name!r}; "
                          f"parameters: {', '.join(names)}")

    @property
    def figure(self) -> go.FigureWidget:
        """The chart of the bench results (made with the first result: without a GPU there is none)."""
        if self._figure is None:
            self._figure = go.FigureWidget()
            self._chart.children = [self._figure]
        return self._figure

    @property
    def design(self) -> Design:
        """The design the buttons act on: the fields' values on the design given (its edits kept)."""
        values = {n: w.value for n, w in self._param_inputs.items()}
        if self._base is None:
            return Design(self._kernel.value, values)
        old = self._field_values(self._base)
        changed = {n: v for n, v in values.items() if v != old[n]}
        if not changed:
            return self._base
        return self._base.with_knobs(**changed) if self._captured else self._base.with_params(**changed)

    def _shape_value(self) -> tuple[int, ...] | None:
        text = self._shape.value.strip()
        if not text or self._captured:  # a captured kernel's shape is its fake tensors'

            return None
        try:
            return tuple(int(part) for part in text.lower().split("x"))
        except ValueError:
            raise TslabError(f"BenchPanel shape={text!r}: write it as numbers joined by 'x', e.g. 4096x4096") \
                from None

    # -- actions ---------------------------------------------------------------------------------------
    def compile(self) -> CompiledKernel | None:
        """Compile the design for the chosen arch (works without a GPU); shows registers, SMEM, spills, PTX."""
        def work() -> CompiledKernel:
            key = self._compile_key()
            self.compiled = gpu_compile(self.design, arch=self._arch.value, shape=self._shape_value())
            self._compiled_for = key
            s = self.compiled.summary()
            rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in
                           (("registers / thread", s["registers"]), ("spills (B)", s["spills"]),
                            ("SMEM / block (B)", s["smem_bytes"]), ("verdict", s["verdict"]),
                            ("shape", s["shape"]), ("compile (s)", s["compile_seconds"])))
            self._compile_view.value = (f"<table class='tslab-compile'>{rows}</table><pre class='tslab-ptx'>"
                                        f"{html.escape(ptx_excerpt(self.compiled.ptx))}</pre>")
            return self.compiled
        return self._act("compile", work)

    def run(self) -> dict[str, Any] | None:
        """Run once on this GPU and check it: a catalog kernel on fresh random input with a poisoned output, a
        captured one on ``inputs()`` against ``reference``."""
        return self._act("run", lambda: self._compiled().run(**self._captured_io()))

    def bench(self, sizes: list[tuple[int, ...]] | None = None, **options: Any) -> BenchResult | None:
        """Time the kernel against its baseline (torch's copy or GEMM; a captured kernel's ``baseline``); each
        result is added to the table and chart."""
        def work() -> BenchResult:
            if self._captured:
                result = self._compiled().bench(**self._captured_io(), baseline=self._baseline, **options)
            else:
                result = gpu_bench(self._compiled(), sizes=sizes, progress=False, **options)
            self.results.append(result)
            self._show_results()
            return result
        return self._act("bench", work)

    def profile(self, **options: Any) -> Timeline | None:
        """Profile one launch of the fields' design on this GPU (IKET, TS's per-step markers) and draw the
        timeline below; ``options`` go to :func:`tslab.gpu.profile` (``stages=``, ``resources=``, ...)."""
        def work() -> Timeline:
            if self._captured:
                self._captured_io()
                timeline = gpu_profile(self.design, **self._io, **options)
            else:
                timeline = gpu_profile(self.design, shape=self._shape_value(), **options)
            self.timeline = timeline
            self._timeline.clear_output()
            self._timeline.append_display_data(timeline)
            return timeline
        return self._act("profile", work)

    def export(self, path: str | Path | None = None) -> Path | None:
        """Write the compiled design as an importable package at ``path``."""
        target = Path(path or self._export_path.value)
        if self._captured:
            return self._act("export", lambda: export_captured(self.design, target, arch=self._arch.value,
                                                                overwrite=True))
        return self._act("export", lambda: gpu_export(self.design, target, arch=self._arch.value,
                                                         shape=self._shape_value(), overwrite=True))

    def _captured_io(self) -> dict[str, Any]:
        """What a captured kernel's run takes (nothing for a catalog kernel); refuses a missing ``inputs``."""
        if not self._captured:
            return {}
        if self._io["inputs"] is None:
            raise TslabError(f"BenchPanel: captured kernel '{self._kernel.value}' runs on the GPU on inputs you give: "
                             "BenchPanel(design, inputs=make_inputs, outputs=[...], reference=expected, "
                             "baseline=torch_version), module-level functions in a .py file")
        return dict(self._io)

    # -- plumbing --------------------------------------------------------------------------------------
    def _compile_key(self) -> tuple:
        return (self.design.to_json(), self._shape_value(), self._arch.value)

    def _compiled(self) -> CompiledKernel:
        """The kernel of the fields as they are now: compiled again after any edit, never a stale one."""
        if self.compiled is None or self._compiled_for != self._compile_key():
            self.compile()
        if self.compiled is None or self._compiled_for != self._compile_key():
            raise TslabError(self.last_error or "compile the design first")
        return self.compiled

    def _act(self, name: str, work: Any) -> Any:
        self._say(f"{name}: working...")
        try:
            result = work()
        except (TslabError, ValueError, OSError) as exc:
            self.last_error = str(exc)
            self._say(f"{name}: {exc}", error=True)
            return None
        self.last_error = ""
        self._say(f"{name}: done" + (f" ({result})" if name in ("run", "export") else ""))
        return result

    def _in_background(self, name: str) -> None:
        if not self._busy.acquire(blocking=False):
            self._say("busy: wait for the running action to finish")
            return

        def go_() -> None:
            try:
                getattr(self, name)()
            finally:
                self._busy.release()
        threading.Thread(target=go_, daemon=True).start()

    def _show_results(self) -> None:
        rows = [r for result in self.results for r in result.raw]
        combined = BenchResult(rows)
        self._table.value = combined._repr_html_()
        fig = combined.plot()
        with self.figure.batch_update():
            self.figure.data = []
            for trace in fig.data:
                self.figure.add_trace(trace)
            self.figure.layout = fig.layout

    def _device_line(self) -> str:
        if self.device is None:
            return ("No GPU here: Compile works for the chosen arch; Run + check, Bench and Profile need an NVIDIA "
                    "GPU (export writes a package that runs on one).")
        return f"GPU: {self.device}"

    def _say(self, text: str, *, error: bool = False) -> None:
        colour = "#cf222e" if error else "inherit"
        self._status.value = f'<pre class="tslab-bench-status" style="color:{colour}">{html.escape(text)}</pre>'

    def saved_bundle(self) -> dict[str, Any]:
        """The design the buttons act on, for a saved notebook (nothing while a field holds an invalid value)."""
        try:
            return {mime.DESIGN: {**self.design.to_dict(), "widget": "BenchPanel"}}
        except TslabError:
            return {}

    def __repr__(self) -> str:
        return f"BenchPanel({self._kernel.value}, arch={self._arch.value}, {len(self.results)} bench result(s))"
