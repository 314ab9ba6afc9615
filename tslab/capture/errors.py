"""Turning a failed capture into one clear message: where it failed, why, and what to do."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

from ..errors import TslabError
from .worker import ChildOutcome

BLACKWELL_PIPELINES = ("TmaUmma", "UmmaAsync", "AsyncUmma", "UmmaUmma", "ClcFetchAsync")
_BLACKWELL_TEXT = re.compile(r"tcgen05|sm_?10\d|blackwell|\bumma\b|\btmem\b|cluster launch control", re.I)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LIBRARY_DIRS = (str(Path(__file__).resolve().parent), os.sep + "cutlass" + os.sep,
                 os.sep + "nvidia_cutlass_dsl" + os.sep, "<frozen ", os.sep + "importlib" + os.sep)


def blackwell_reason(entries: list[dict[str, Any]], text: str, arch: str) -> str | None:
    """Why a kernel that failed to trace for a Hopper ``arch`` looks Blackwell-only, or None."""
    if not arch.startswith("sm_9"):
        return None
    kinds = [k for e in entries for k in e.get("pipelines", ()) if k in BLACKWELL_PIPELINES]
    if kinds:
        return f"it uses the Blackwell-only pipeline type {kinds[0]}"
    if any(e.get("has_tmem") for e in entries):
        return "it allocates tensor memory (TMEM)"
    match = _BLACKWELL_TEXT.search(text)
    return f"the trace failed on a Blackwell-only feature ({match.group(0)!r})" if match else None


def arch_error(label: str, arch: str, reason: str, detail: str) -> TslabError:
    """A Blackwell-only kernel traced for Hopper: say so, and which arch to capture it for."""
    return TslabError(f"capture of '{label}': the kernel is Blackwell-only and cannot be traced for {arch}: "
                      f"{reason}; capture it with arch=\"sm_100a\" (checking needs no GPU). "
                      f"Trace error: {detail}")


#: DSL trace errors that a kernel written for another frontend (or other compile options) raises.
FRONTEND_CODES = ("TYPE_DYNAMIC_EXPR_UNSUPPORTED", "TYPE_UNSTABLE_JOIN", "CONTAINER_STRUCTURE_CHANGED")


def trace_error(error: dict[str, Any], entries: list[dict[str, Any]], label: str, arch: str,
                stderr: str, frontend_hint: str = "") -> TslabError:
    """The error for a trace that raised: the kernel's own file and line, or the arch it cannot run on."""
    detail = f"{error['type']}: {_first_lines(error['message'])}"
    where = user_frame(error["frames"]) or _message_location(error["message"])
    reason = blackwell_reason(entries, error["message"] + stderr, arch)
    if reason:
        return arch_error(label, arch, reason, f"{detail} (raised{where})" if where else detail)
    if frontend_hint and any(code in error["message"] for code in FRONTEND_CODES):
        return TslabError(f"capture of '{label}': the kernel's trace failed{where}: {detail}; this is what a kernel "
                          f"written for another DSL frontend raises: {frontend_hint}")
    more = f" ({frontend_hint})" if frontend_hint else ""
    return TslabError(f"capture of '{label}': the kernel's trace failed{where}: {detail}; check the arguments "
                      f"passed to capture, then the kernel there{more}")


def crash_error(outcome: ChildOutcome, entries: list[dict[str, Any]], label: str, arch: str) -> TslabError:
    """The error for a worker that died (a signal or an exit without a result) or ran out of time."""
    if outcome.timed_out:
        how = "did not finish within the timeout (pass a larger timeout=)"
    elif outcome.signal is not None:
        valid = outcome.signal in signal.valid_signals()
        sig = signal.Signals(outcome.signal).name if valid else str(outcome.signal)
        how = f"ended the worker process with {sig}" + (" (an MLIR/LLVM abort)" if sig == "SIGABRT" else "")
    else:
        how = f"ended the worker process with exit code {outcome.exit_code}"
    tail = _last_lines(outcome.stderr or outcome.stdout)
    reason = blackwell_reason(entries, outcome.stderr, arch)
    if reason:
        return arch_error(label, arch, reason, f"the compile {how}")
    return TslabError(f"capture of '{label}': the compile {how}; this Python process is unaffected. "
                      f"Last output: {tail or '(none)'}")


def user_frame(frames: list[tuple[str, int, str]], prefer: str | None = None) -> str:
    """`` at FILE:LINE in FUNCTION`` of the innermost frame outside tslab and CuTe DSL ("" if none)."""
    for filename, line, func in reversed(frames):
        if prefer and filename == prefer:
            return f" at {filename}:{line} in {func}"
    for filename, line, func in reversed(frames):
        if not any(part in filename for part in _LIBRARY_DIRS):
            return f" at {filename}:{line} in {func}"
    return ""


def _message_location(message: str) -> str:
    match = re.search(r"([^\s\"'()]+\.py):(\d+)", message)
    return f" at {match.group(1)}:{match.group(2)}" if match else ""


def _first_lines(text: str, n: int = 4) -> str:
    lines = [ln for ln in _ANSI.sub("", text).strip().splitlines() if ln.strip()]
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


def _last_lines(text: str, n: int = 5) -> str:
    lines = [ln for ln in _ANSI.sub("", text).strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])
