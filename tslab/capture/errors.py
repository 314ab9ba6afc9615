"""Turning a failed capture into one clear message: where it failed, why, and what to do."""

from __future__ import annotations

import os
import re
import signal
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..errors import TslabError
from .outcome import ChildOutcome

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


#: DSL errors about the compile options or the installation, not the kernel: what to do about each.
OPTION_CODES = {
    "CONFIG_MISSING_TVM_FFI": "options='--enable-tvm-ffi' needs the apache-tvm-ffi package: install it, or leave "
                              "--enable-tvm-ffi out of options= for the capture (it changes how Python calls the "
                              "compiled kernel, not the TaskManagers its trace builds)",
    "CONFIG_MISSING_NVDISASM": "the options ask for SASS disassembly, which needs nvdisasm (the CUDA toolkit): "
                               "install it, or drop that option for the capture",
    "CONFIG_UNKNOWN_COMPILE_OPTION": "this CuTe DSL version does not know one of the options: drop it",
    "CONFIG_MALFORMED_COMPILE_OPTIONS": "fix the options= string (flags and values separated by spaces)",
    "CONFIG_OPTION_REQUIRES_VALUE": "give the option its value in options=",
    "CONFIG_INVALID_OPT_LEVEL": "use an --opt-level this CuTe DSL version accepts",
    "CONFIG_INCOMPATIBLE_FLAGS": "drop one of the conflicting options",
}


def option_error(error: dict[str, Any], entries: list[dict[str, Any]], label: str, options: str) -> TslabError | None:
    """The error for a compile that failed on its options or the installation (the kernel is not at fault)."""
    code = next((c for c in OPTION_CODES if c in error["message"]), None)
    if code is None:
        return None
    given = f" (options={options!r})" if options else ""
    return TslabError(f"capture of '{label}': the compile stopped on its options{given}, not on the "
                      f"kernel: {error['type']}: {_first_lines(error['message'], 1).splitlines()[0]}; "
                      f"{OPTION_CODES[code]}{_built(entries)}")


_API_CALL = re.compile(r"\b(\w+)\.(\w+)\(\) (?:got an unexpected keyword argument|got multiple values for|"
                       r"takes \d+ positional|missing \d+ required)")
_API_ATTR = re.compile(r"(type object|module) '([\w.]+)' has no attribute '(\w+)'")


def library_api(message: str) -> str | None:
    """The CuTe DSL function or attribute a failed call named (``Task._run_task_body_impl``), or None.

    A kernel that calls the library with an argument or a name the installed version lacks was written for
    another version: its code is right for its own library; the installation is what differs.
    """
    call, attr = _API_CALL.search(message), _API_ATTR.search(message)
    if attr is not None and attr.group(1) == "module":
        return f"{attr.group(2)}.{attr.group(3)}" if attr.group(2).startswith("cutlass") else None
    owner_name, name = call.groups() if call is not None else attr.groups()[1:] if attr is not None else (None, None)
    if owner_name is None:
        return None
    for module_name, module in list(sys.modules.items()):
        owner = getattr(module, owner_name, None) if module_name.startswith("cutlass") and module else None
        if isinstance(owner, type) and (owner.__module__ or "").startswith("cutlass"):
            return f"{owner_name}.{name}"
    return None


#: The DSL rebuilding a value it carried (a kernel argument, a loop variable) where the trace had a constant.
_CONSTANT_CARRIED = re.compile(r"(\S+) expects 0 values, but got")


def _dsl_version() -> str:
    try:
        return version("nvidia-cutlass-dsl")
    except PackageNotFoundError:
        return "(unknown version)"


def _built(entries: list[dict[str, Any]]) -> str:
    return (f"; the {len(entries)} TaskManager(s) built before it are in the error's .result (tslab.check works "
            "on them)") if entries else ""


def trace_error(error: dict[str, Any], entries: list[dict[str, Any]], label: str, arch: str,
                stderr: str, frontend_hint: str = "", options: str = "") -> TslabError:
    """The error for a trace that raised: the kernel's own file and line, its options, or the arch it cannot
    run on."""
    detail = f"{error['type']}: {_first_lines(error['message'])}"
    where = user_frame(error["frames"]) or _message_location(error["message"])
    by_options = option_error(error, entries, label, options)
    if by_options is not None:
        return by_options
    reason = blackwell_reason(entries, error["message"] + stderr, arch)
    if reason:
        return arch_error(label, arch, reason, f"{detail} (raised{where})" if where else detail)
    api = library_api(error["message"]) if error["type"] in ("TypeError", "AttributeError") else None
    if api is not None:
        return TslabError(f"capture of '{label}': the kernel's trace failed{where}: {detail}; the kernel uses "
                          f"{api} in a way nvidia-cutlass-dsl {_dsl_version()} does not accept: it was written for "
                          f"another CuTe DSL version; capture it with the version its authors use{_built(entries)}")
    constant = _CONSTANT_CARRIED.search(error["message"]) if error["type"] == "AssertionError" else None
    if constant is not None:
        return TslabError(f"capture of '{label}': the kernel's trace failed{where}: {detail}; the kernel carries a "
                          f"value it expects at run time, but this capture made it the constant {constant.group(1)}: "
                          "give the sizes its authors leave to run time (a batch, a page count) as None in the fake "
                          "tensors' shapes (or one tslab.fake.extent() shared between modes), and runtime scalars "
                          f"as cutlass.Int32(...), not Python ints{_built(entries)}")
    if frontend_hint and any(code in error["message"] for code in FRONTEND_CODES):
        return TslabError(f"capture of '{label}': the kernel's trace failed{where}: {detail}; this is what a kernel "
                          f"written for another DSL frontend raises: {frontend_hint}{_built(entries)}")
    more = f" ({frontend_hint})" if frontend_hint else ""
    return TslabError(f"capture of '{label}': the kernel's trace failed{where}: {detail}; check the arguments "
                      f"passed to capture, then the kernel there{more}{_built(entries)}")


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
    """`` at FILE:LINE`` of the first place the DSL's message points at outside tslab and CuTe DSL ("" if none)."""
    for match in re.finditer(r"([^\s\"'()]+\.py):(\d+)", message):
        if not any(part in match.group(1) for part in _LIBRARY_DIRS):
            return f" at {match.group(1)}:{match.group(2)}"
    return ""


def _first_lines(text: str, n: int = 4) -> str:
    lines = [ln for ln in _ANSI.sub("", text).strip().splitlines() if ln.strip()]
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


def _last_lines(text: str, n: int = 5) -> str:
    lines = [ln for ln in _ANSI.sub("", text).strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])
