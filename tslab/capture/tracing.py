"""One compile trace: run it in a child process with each TaskManager recorded, and make designs of what it built.

:func:`trace_call` is the trace both a first capture (:mod:`tslab.capture.api`) and a re-trace after an edit
(:class:`tslab.capture.source.KernelSource`) run; :class:`CaptureResult` holds a design per TaskManager and what
TS printed while it built each.
"""

from __future__ import annotations

import html
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.check import check
from ..core.construction import Edits
from ..core.design import Design
from ..core.verdict import Verdict
from ..errors import TslabError
from . import snapshot as _snapshot
from .errors import crash_error, trace_error
from .namespaces import listed, unlisted_modules
from .outcome import ChildOutcome
from .recorder import CompileCall, read_spill, record_trace
from .ts_report import SECTIONS, checker_outcome, sections, warned_checks
from .worker import run_in_child


class CaptureError(TslabError):
    """A capture that failed; ``result`` holds the TaskManagers built before the failure, if any."""

    def __init__(self, message: str, result: CaptureResult | None = None) -> None:
        super().__init__(message)
        self.result = result


@dataclass
class CapturedManager:
    """One TaskManager built during the trace: its design and what TS printed while building it."""

    design: Design
    report: str
    options: dict[str, Any]
    traced_values: list[str]
    ts_error: str | None = None
    traced: Design | None = None  # the objects this trace built, as they are (``design`` re-traces on edits)
    ts_warnings: list[str] = field(default_factory=list)  # what TS warned while building it

    @property
    def silent(self) -> bool:
        """TS printed none of its analysis during the trace (the kernel built its TaskManager ``verbose=False``)."""
        return not any(sections(self.report).values())

    def agreement(self, verdict: Verdict | None = None) -> dict[str, bool]:
        """Per section TS printed during the trace (schedule, smem, checker): does a re-check print the same?

        A TaskManager built ``verbose=False`` prints nothing; TS's warnings then stand for what it found: with
        ``skip_validation=True``, "warned checks" compares the checks that failed in the trace and in the
        re-check, and "checker outcome" what the exhaustive checker concluded (also from a state-limit warning).
        The checker's part is compared with TS's own search (``strategy="ts"``), re-checking if ``verdict`` came
        from the reduced one.
        """
        verdict = verdict if verdict is not None else check(self.design, strategy="ts")
        traced = sections(self.report)
        checker_compared = bool(traced["checker"]) or (self.silent and self.ts_error is None and self.options.get(
            "exhaustive_deadlock_race_check", True))
        if checker_compared and verdict.checker.prover != "ts":  # what TS printed is what TS's own search finds
            verdict = check(self.design, strategy="ts")
        ours = sections(verdict.report)
        out = {name: ours[name] == traced[name] for name in SECTIONS if traced[name]}
        if self.silent and self.ts_error is None:
            if self.options.get("skip_validation"):
                out["warned checks"] = warned_checks(self.ts_warnings) == verdict.failed_checks
            if self.options.get("exhaustive_deadlock_race_check", True):
                out["checker outcome"] = checker_outcome(self.ts_warnings) == verdict.checker.verdict
        return out


@dataclass
class CaptureResult:
    """Everything a capture found: a design per TaskManager, in construction order, and the trace's output."""

    managers: list[CapturedManager]
    report: str
    arch: str
    stderr: str = ""

    @property
    def designs(self) -> list[Design]:
        return [m.design for m in self.managers]

    @property
    def design(self) -> Design:
        """The design of the first TaskManager built during the trace."""
        return self.managers[0].design

    def __repr__(self) -> str:
        names = ", ".join(d.kernel for d in self.designs)
        return f"CaptureResult(arch={self.arch!r}, designs=[{names}])"

    def text(self) -> str:
        """One line per captured TaskManager: its tasks, and whether TS rejected it."""
        lines = [f"captured for {self.arch}: {len(self.managers)} TaskManager(s)"]
        for m in self.managers:
            rejected = f"; TS rejected it: {m.ts_error.splitlines()[0]}" if m.ts_error else ""
            if m.silent and not m.ts_error:
                rejected = "; TS printed no result (verbose=False)"
                if m.options.get("skip_validation"):
                    rejected += f"; checks that failed: {', '.join(warned_checks(m.ts_warnings)) or 'none'}"
                if m.options.get("exhaustive_deadlock_race_check", True):
                    rejected += f"; exhaustive checker: {checker_outcome(m.ts_warnings)}"
            lines.append(f"  {m.design.kernel}: tasks {', '.join(m.design.tasks())}{rejected}")
        return "\n".join(lines)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in self.text().splitlines()[1:])
        head = html.escape(self.text().splitlines()[0])
        return {"text/plain": self.text(), "text/html": f"<div class='tslab-capture'>{head}<ul>{items}</ul></div>"}


def trace_call(host_fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any], *, arch: str, timeout: float,
               label: str, frontend: Any = None, options: str = "", edits: Edits | None = None) -> CaptureResult:
    """Every TaskManager built while ``cute.compile`` traces ``host_fn(*args, **kwargs)`` for ``arch``, with
    ``edits`` applied at each TaskManager's construction."""
    _check_arch(arch)
    call = CompileCall(host_fn, args, kwargs, arch, frontend=frontend, options=options)
    return _traced(call, label, arch, timeout, edits, hint=_frontend_hint(frontend, options), options=options)


def _trace_listed(call: Callable[[], Any], spill: str, edits: Edits | None,
                  modules: dict[str, dict[str, Any]]) -> dict[str, Any]:
    with listed(modules):
        return record_trace(call, spill, edits)


def _traced(call: Callable[[], Any], label: str, arch: str, timeout: float, edits: Edits | None,
            hint: str, options: str = "") -> CaptureResult:
    # Resource classes of a file imported by path travel by reference too (only a fork of this process has them:
    # with any, the trace runs there).
    modules = unlisted_modules()
    with tempfile.TemporaryDirectory(prefix="tslab-trace-") as spill:
        outcome = run_in_child(_trace_listed, call, spill, edits, modules, timeout=timeout)
        spilled = read_spill(spill)
    with listed(modules):
        return _result(outcome, spilled, label, arch, hint, options)


def _frontend_hint(frontend: Any, options: str) -> str:
    """What to try when a trace fails: the frontend and options are likelier culprits than the kernel."""
    if frontend is None:
        return ("if the kernel's authors compile it with another frontend or options (for example "
                "cute.compile[cute.FrontendNext]), pass frontend=cute.FrontendNext and options=... to capture "
                "(command line: --frontend FrontendNext --options '...')")
    return f"the trace used frontend={getattr(frontend, '__name__', frontend)} options={options!r}; check both"


def _check_arch(arch: str) -> None:
    if not isinstance(arch, str) or not re.fullmatch(r"sm_\d{2,3}[a-z]?", arch):
        raise TslabError(f"capture: arch={arch!r} is not a GPU architecture name; use 'sm_90a' (Hopper) or "
                         "'sm_100a' (Blackwell)")


def _result(outcome: ChildOutcome, entries: list[dict[str, Any]], label: str, arch: str,
            hint: str = "", options: str = "") -> CaptureResult:
    error = outcome.error or (outcome.value or {}).get("error")
    ts_failed = any("ts_error" in e for e in entries)
    if outcome.crashed or (error is not None and not ts_failed):
        try:
            partial = _build(outcome, entries, label, arch) if entries else None
        except TslabError:
            partial = None
        failure = crash_error(outcome, entries, label, arch) if outcome.crashed else \
            trace_error(error, entries, label, arch, outcome.stderr, hint, options)
        raise CaptureError(str(failure), partial)
    if not entries:
        raise CaptureError(f"capture of '{label}': no TaskManager was built during the trace; capture opens "
                           "TS kernels: the host function must launch a kernel that constructs a TaskManager")
    return _build(outcome, entries, label, arch)


def _build(outcome: ChildOutcome, entries: list[dict[str, Any]], label: str, arch: str) -> CaptureResult:
    out_bytes = outcome.stdout.encode()
    managers = []
    for i, entry in enumerate(entries):
        if "dump_error" in entry:
            raise CaptureError(f"capture of '{label}': TaskManager {i}: {entry['dump_error']}")
        bundle = _snapshot.load(entry["bundle"])
        _refuse_traced_resources(bundle, label, i)
        report = out_bytes[entry["start"]:entry.get("end", len(out_bytes))].decode(errors="replace")
        design_name = label if len(entries) == 1 else f"{label}[{i}]"
        design = Design.from_tasks(bundle["tasks"], bundle["graph"],
                                   smem_allocations=bundle["smem_allocator"],
                                   tmem_allocations=bundle["tmem_allocator"],
                                   smem_capacity_bytes=bundle["smem_capacity_bytes"],
                                   tmem_capacity_columns=bundle["tmem_capacity_columns"],
                                   dma_consumer_release_labels=bundle["dma_consumer_release_labels"],
                                   assume_pdl_wait_completed=bundle["assume_pdl_wait_completed"],
                                   name=design_name)
        managers.append(CapturedManager(design, report, entry["options"], entry.get("traced_values", []),
                                        entry.get("ts_error"), ts_warnings=entry.get("ts_warnings", [])))
    return CaptureResult(managers, outcome.stdout, arch, stderr=outcome.stderr)


def _refuse_traced_resources(bundle: dict[str, Any], label: str, index: int) -> None:
    """A resource that could not leave the trace (its class cannot be named outside it) is a clear error."""
    allocator = bundle["smem_allocator"]
    found = [r for t in bundle["tasks"] for r in (*t.src_resources, *t.dst_resources)]
    found += list(getattr(allocator, "_barrier_resources", None) or [])
    lost = next((r for r in found if isinstance(r, _snapshot.Traced)), None)
    if lost is not None:
        raise CaptureError(f"capture of '{label}': TaskManager {index}: a resource ({lost.type_name}: {lost.text}) "
                           "could not be copied out of the trace, because its class cannot be found by name "
                           "outside it; define the kernel's resource classes at module level of a file and capture "
                           "it with tslab.capture_file(path, host_function, ...)")
