"""What every GPU step checks first: that there is a GPU, and that the design is one the checker accepts."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..compiling.targets import Target, require_kernel_arch
from ..core.check import check
from .errors import NoGpuError, UnsafeDesignError

#: Seconds a run's worker may take to start, build its inputs and compile, before its kernel's own limit starts.
SETUP_TIMEOUT = 600.0
#: Multiprocessors assumed when compiling for an arch without its GPU (the H100/H200 SXM count).
DEFAULT_SMS = {"sm_90a": 132, "sm_90": 132, "sm_100a": 148}


def require_gpu(what: str) -> Any:
    """This machine's GPU, or a ``NoGpuError`` that says what works without one."""
    from .device import device

    info = device()
    if info is None:
        raise NoGpuError(f"{what}: no NVIDIA GPU or driver on this machine; compile(design, arch='sm_90a') works "
                         "without one (kernel.ptx, kernel.cubin), run, bench and profile need a GPU")
    return info


def require_gpu_for(target: Target, what: str) -> Any:
    """This machine's GPU when ``target``'s kernel runs on it: a ``NoGpuError`` without one, an
    ``UnsupportedArchError`` naming the arch the kernel needs when this GPU is another (a Blackwell kernel on an
    H200), never a crash in the worker."""
    archs = target.rules.archs
    if archs is None:
        return require_gpu(what)
    from .device import device

    info = device()
    if info is None:
        raise NoGpuError(f"{what}: no NVIDIA GPU or driver on this machine, and this kernel runs on "
                         f"{' or '.join(archs)} ({target.rules.gpu_name}) only; compile(design, arch={archs[0]!r}) "
                         "works without one (kernel.ptx, kernel.cubin, registers, spills)")
    require_kernel_arch(target.kernel, info.arch, f"{what} on this {info.name}")
    return info


def checked_target(target: Target, verdict: Any) -> Target:
    """``target`` for a design with this verdict: one the checker refused is compiled with TS warning, not raising."""
    return target if verdict.ok else dataclasses.replace(target, validate=False)


def verified(design: Any, force: bool) -> Any:
    """The design's verdict (against this GPU's SMEM limit when there is one); refuses it unless safe or ``force``."""
    from .device import smem_capacity

    verdict = check(design, smem_capacity=smem_capacity())
    if not verdict.ok and not force:
        errors = "\n".join(str(e) for e in verdict.errors) or verdict.status
        raise UnsafeDesignError(
            f"design '{design.kernel}': tslab.check() says {verdict.status}; fix the errors below or pass "
            f"force=True to compile anyway.\n{errors}",
            verdict,
        )
    return verdict
