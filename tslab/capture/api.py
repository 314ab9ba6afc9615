"""Open an existing TS kernel in tslab: capture its design from a compile trace on the CPU.

``capture(host_fn, *args)`` runs ``cute.compile(host_fn, *args, options="--gpu-arch <arch>")`` in a forked
worker process with its output captured. While the trace runs, ``TaskManager.__init__`` is wrapped (in the
worker only, and restored afterwards) to copy what each TaskManager is given: tasks, dependency graph,
allocators and capacities. The copies come back without their DSL values (see :mod:`tslab.capture.snapshot`) and
become a :class:`~tslab.core.design.Design` that :func:`tslab.check` verifies with TS's own TaskManager
and checker. A crash of the trace (an MLIR abort) ends the worker, never the caller.
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.check import check
from ..core.construction import Edits
from ..core.design import Design
from ..core.verdict import Verdict
from ..errors import TslabError
from . import snapshot as _snapshot
from .errors import crash_error, trace_error, user_frame
from .namespaces import listed, unlisted_modules
from .recorder import compile_call, read_spill, record_trace
from .source import KernelSource, remember
from .ts_report import SECTIONS, checker_outcome, sections, warned_checks
from .worker import ChildOutcome, error_record, run_in_child


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


def capture(host_fn: Callable[..., Any], *args: Any, arch: str = "sm_90a", timeout: float = 600.0,
            name: str | None = None, frontend: Any = None, options: str = "", **kwargs: Any) -> Design:
    """The design of the first TaskManager that tracing ``host_fn(*args, **kwargs)`` for ``arch`` builds.

    ``args`` are what ``cute.compile`` takes: fake tensors and streams from :mod:`tslab.fake` work without
    a GPU. ``frontend`` and ``options`` are passed on as ``cute.compile[frontend](..., options=...)``, as the
    kernel's authors compile it (e.g. ``frontend=cute.FrontendNext``). Raises :class:`CaptureError` when the
    trace fails or builds no TaskManager; when TS itself rejects a TaskManager during the trace, the design is
    still returned so that ``tslab.check`` can show why. Edits of the design re-trace the kernel.
    """
    return capture_all(host_fn, *args, arch=arch, timeout=timeout, name=name, frontend=frontend, options=options,
                       **kwargs).design


def capture_all(host_fn: Callable[..., Any], *args: Any, arch: str = "sm_90a", timeout: float = 600.0,
                name: str | None = None, frontend: Any = None, options: str = "", _edits: Edits | None = None,
                _retrace: bool = False, _file: tuple[Path, str, str] | None = None, **kwargs: Any) -> CaptureResult:
    """Every TaskManager built while tracing ``host_fn(*args, **kwargs)`` for ``arch``, as designs."""
    if not callable(host_fn):
        raise TslabError(f"capture: host_fn={host_fn!r} is not callable; pass the @cute.jit host function")
    _check_arch(arch)
    label = name or _label(host_fn)
    call = compile_call(host_fn, args, kwargs, arch, frontend=frontend, options=options)
    result = _traced(call, label, arch, timeout, _edits, hint=_frontend_hint(frontend, options), options=options)
    if _retrace:
        return result
    file, text, function = _file if _file is not None else (None, None, "")
    source = KernelSource(label=label, host_fn=host_fn, args=args, kwargs=kwargs, arch=arch, file=file,
                          file_text=text, function=function, frontend=frontend, options=options, timeout=timeout)
    remember(source.cache_key(Edits()), result)
    return _with_sources(result, source)


def capture_call(fn: Callable[..., Any], *args: Any, arch: str = "sm_90a", timeout: float = 600.0,
                 name: str | None = None, **kwargs: Any) -> CaptureResult:
    """Every TaskManager built while ``fn(*args, **kwargs)`` runs: a library's own "compile this kernel"
    function, an autotuner, a test. ``fn`` runs in the worker process with ``CUTE_DSL_ARCH=arch`` set.

    The designs check and replay like any other; edits of them are checked on the captured objects (a
    callable cannot be re-traced with knobs: capture its host function for that).
    """
    if not callable(fn):
        raise TslabError(f"capture_call: fn={fn!r} is not callable; pass the function that compiles the kernel")
    _check_arch(arch)
    label = name or _label(fn)

    def call() -> Any:
        os.environ["CUTE_DSL_ARCH"] = arch
        return fn(*args, **kwargs)

    return _traced(call, label, arch, timeout, None, hint="")


def _label(fn: Any) -> str:
    """A function's name, or the class name of a kernel object whose ``__call__`` is the host function."""
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__


def _traced(call: Callable[[], Any], label: str, arch: str, timeout: float, edits: Edits | None,
            hint: str, options: str = "") -> CaptureResult:
    modules = unlisted_modules()  # resource classes of a file imported by path travel by reference too

    def trace_listed() -> dict[str, Any]:
        with listed(modules):
            return record_trace(call, spill, edits)

    with tempfile.TemporaryDirectory(prefix="tslab-trace-") as spill:
        outcome = run_in_child(trace_listed, timeout=timeout)
        spilled = read_spill(spill)
    with listed(modules):
        return _result(outcome, spilled, label, arch, hint, options)


def _frontend_hint(frontend: Any, options: str) -> str:
    """What to try when a trace fails: the frontend and options are likelier culprits than the kernel."""
    if frontend is None:
        return ("if the kernel's authors compile it with another frontend or options (for example "
                "cute.compile[cute.FrontendNext]), pass frontend=cute.FrontendNext and options=... to capture")
    return f"the trace used frontend={getattr(frontend, '__name__', frontend)} options={options!r}; check both"


def _with_sources(result: CaptureResult, source: KernelSource) -> CaptureResult:
    """The result with each manager's public design re-traceable through ``source``."""
    for i, manager in enumerate(result.managers):
        manager.traced = manager.design
        manager.design = Design.captured(replace(source, index=i, label=manager.design.kernel))
    return result


def capture_file(path: str | os.PathLike[str], function: str, *args: Any, arch: str = "sm_90a",
                 timeout: float = 600.0, **kwargs: Any) -> Design:
    """Import the kernel file at ``path`` and capture the design of its host function ``function``."""
    return capture_file_all(path, function, *args, arch=arch, timeout=timeout, **kwargs).design


def capture_file_all(path: str | os.PathLike[str], function: str, *args: Any, arch: str = "sm_90a",
                     timeout: float = 600.0, **kwargs: Any) -> CaptureResult:
    """Like :func:`capture_file`, returning every TaskManager's design (:class:`CaptureResult`)."""
    module = import_kernel_file(path)
    host_fn = getattr(module, function, None)
    if host_fn is None:
        found = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                       and getattr(v, "__module__", None) == module.__name__)
        from ..errors import did_you_mean

        hint = did_you_mean(function, found)
        raise TslabError(f"kernel file '{path}': has no function '{function}'; {hint}")
    file = Path(path).expanduser().resolve()
    return capture_all(host_fn, *args, arch=arch, timeout=timeout, name=function,
                       _file=(file, file.read_text(), function), **kwargs)


def import_kernel_file(path: str | os.PathLike[str]) -> Any:
    """Import a kernel file by path (once per file content), with ``torch`` stood in for when absent."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise TslabError(f"kernel file '{path}': does not exist; pass the path of a .py file")
    digest = hashlib.sha1(file.read_bytes()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", file.stem)
    mod_name = f"tslab_kernel_{stem}_{digest}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    from ..fake import torch_stand_in

    spec = importlib.util.spec_from_file_location(mod_name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        with torch_stand_in():
            spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[mod_name]
        where = user_frame(error_record(exc)["frames"], str(file))
        raise TslabError(f"kernel file '{path}': importing it failed{where}: "
                         f"{type(exc).__name__}: {exc}") from None
    return module


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
