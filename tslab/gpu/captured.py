"""``compile`` of a captured design: the kernel's own host code with its knobs, edits applied inside the trace."""

from __future__ import annotations

from typing import Any

from .compile import CompiledKernel, verified
from .jobs import parse_ptxas
from .targets import Target


def compile_captured_design(design: Any, arch: str | None, *, force: bool, timeout: float) -> CompiledKernel:
    """Check ``design`` (refused unless ok or ``force``), then compile its kernel as edited for ``arch``."""
    from ..capture.compiled import compile_captured

    verdict = verified(design, force)
    out = compile_captured(design, arch, timeout=timeout)
    stats = parse_ptxas(out["log"])
    target = Target(kernel=design.kernel, params=design.knobs(), shape=(), dtype="captured")
    return CompiledKernel(target=target, arch=out["arch"], sms=0, verdict=verdict, ptx=out["ptx"], cubin=out["cubin"],
                          compile_seconds=out["seconds"], registers=stats["registers"],
                          spill_stores=stats["spill_stores"], spill_loads=stats["spill_loads"],
                          stack_frame=stats["stack_frame"], log=out["log"][-20000:], captured=True)
