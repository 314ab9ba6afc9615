"""The worker side of a capture: compile a host function while recording each TaskManager it builds.

For every ``TaskManager(...)`` the trace constructs, the arguments are copied out (see
:mod:`tslab.capture.snapshot`) before TS sees them, then TS runs as usual and prints its analysis; the warnings
it raises meanwhile are kept (a kernel built with ``skip_validation=True`` gets its failed checks as warnings).
Each record is written to its own file at once, so that what was built before a crash survives it.
"""

from __future__ import annotations

import os
import pickle
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..child import error_record
from ..core.construction import Edits, bind_arguments, edited_arguments
from . import snapshot as _snapshot


def record_trace(call: Callable[[], Any], spill: str, edits: Edits | None = None) -> dict[str, Any]:
    """Run ``call()`` (a compile) with every TaskManager construction recorded into ``spill`` (one file each).

    With ``edits``, each TaskManager's arguments get the design's edits applied first (the same lowering
    ``tslab.check`` uses), so the record is what the kernel builds under those edits. Runs in the worker: the
    wrapper on ``TaskManager.__init__`` lives only for this call and only in this process, and is removed in
    ``finally``. Returns the trace's error record, if it failed.
    """
    from cutlass.experimental.task_scheduling.task_manager import TaskManager

    original = TaskManager.__init__
    count = [0]

    def recording_init(self: Any, *a: Any, **kw: Any) -> None:
        p = bind_arguments(original, self, a, kw)
        if edits:
            p = edited_arguments(p, edits)
        sys.stdout.flush()
        entry: dict[str, Any] = {"start": os.lseek(1, 0, os.SEEK_CUR), "options": _options(p)}
        bundle = {"tasks": list(p["tasks"]), "graph": dict(p["resource_dependency_graph"] or {}),
                  "smem_allocator": p["smem_allocator"], "tmem_allocator": p["tmem_allocator"],
                  "smem_capacity_bytes": p["smem_capacity_bytes"],
                  "tmem_capacity_columns": p["tmem_capacity_columns"],
                  "dma_consumer_release_labels": p["dma_consumer_release_labels"],
                  "assume_pdl_wait_completed": bool(p["assume_pdl_wait_completed"])}
        try:
            entry["bundle"], entry["traced_values"] = _snapshot.dump(bundle)
        except Exception as exc:
            entry["dump_error"] = str(exc) or type(exc).__name__
        entry["pipelines"] = _pipeline_types(bundle["tasks"])
        entry["has_tmem"] = bundle["tmem_allocator"] is not None
        entry["options"]["pipeline_groups"] = len(getattr(bundle["smem_allocator"], "_barrier_groups", ()) or ())
        _spill(spill, count[0], entry)
        caught: list[warnings.WarningMessage] = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                original(self, **p)
        except Exception as exc:
            entry["ts_error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            entry["ts_warnings"] = [str(w.message) for w in caught]
            for w in caught:  # then shown as the kernel's own warning filters say
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            sys.stdout.flush()
            entry["end"] = os.lseek(1, 0, os.SEEK_CUR)
            _spill(spill, count[0], entry)
            count[0] += 1

    TaskManager.__init__ = recording_init
    try:
        call()
        error = None
    except BaseException as exc:
        error = error_record(exc)
    finally:
        TaskManager.__init__ = original
    return {"error": error}


@dataclass(frozen=True)
class CompileCall:
    """The compile a capture traces: ``cute.compile[frontend](host_fn, *args, options=..., **kwargs)`` (plain
    data, so a fresh process can be sent it)."""

    host_fn: Callable[..., Any]
    args: tuple
    kwargs: dict
    arch: str
    frontend: Any = None
    options: str = ""

    def __call__(self) -> Any:
        from cutlass import cute

        compile_fn = cute.compile if self.frontend is None else cute.compile[self.frontend]
        return compile_fn(self.host_fn, *self.args, options=f"--gpu-arch {self.arch} {self.options}".strip(),
                          **self.kwargs)


def compile_call(host_fn: Callable[..., Any], args: tuple, kwargs: dict, arch: str, *,
                 frontend: Any = None, options: str = "") -> Callable[[], Any]:
    """The compile a capture traces, as a call (see :class:`CompileCall`)."""
    return CompileCall(host_fn, args, kwargs, arch, frontend, options)


def _options(p: dict[str, Any]) -> dict[str, Any]:
    keep = ("verbose", "skip_validation", "exhaustive_deadlock_race_check", "assume_pdl_wait_completed")
    out = {k: p[k] for k in keep if k in p}
    out["dma_consumer_release_labels"] = bool(p.get("dma_consumer_release_labels"))
    return out


def _pipeline_types(tasks: list[Any]) -> list[str]:
    names = []
    for task in tasks:
        for res in (*task.src_resources, *task.dst_resources):
            cfg = getattr(res, "pipeline_config", None)
            kind = getattr(getattr(cfg, "pipeline_type", None), "name", None)
            if kind and kind not in names:
                names.append(kind)
    return names


def _spill(directory: str, index: int, entry: dict[str, Any]) -> None:
    path = os.path.join(directory, f"{index:04d}.pkl")
    with open(path + ".tmp", "wb") as f:
        pickle.dump(entry, f)
    os.replace(path + ".tmp", path)


def read_spill(directory: str) -> list[dict[str, Any]]:
    entries = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".pkl"):
            with open(os.path.join(directory, name), "rb") as f:
                entries.append(pickle.load(f))
    return entries
