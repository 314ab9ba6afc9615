"""Errors of the GPU path: compiling, running, timing and exporting kernels."""

from __future__ import annotations

# Raised by tslab.compiling too, so they live in tslab.errors; shown here with the rest of the GPU path's errors.
from ..errors import GpuError, UnsupportedArchError, UnsupportedKernelError


class NoGpuError(GpuError):
    """No usable NVIDIA GPU or driver where one is needed."""


class UnsafeDesignError(GpuError, ValueError):
    """``tslab.check`` did not prove the design safe; carries the verdict."""

    def __init__(self, message: str, verdict: object) -> None:
        super().__init__(message)
        self.verdict = verdict


class CompileError(GpuError):
    """CuTe DSL failed to compile the kernel (a Python exception in the worker)."""


class WorkerCrashedError(GpuError):
    """The worker process died (an MLIR abort, a signal); the parent lives on.

    ``partial``: what the job finished before it died (a benchmark's timed rows), in order.
    """

    def __init__(self, message: str, *, partial: list | None = None) -> None:
        super().__init__(message)
        self.partial = list(partial or [])


class WorkerTimeoutError(GpuError):
    """The worker process ran past its time limit and was stopped.

    ``phase`` names what the job was doing (e.g. ``"running the kernel"``), ``None`` while it was starting.
    """

    def __init__(self, message: str, *, phase: str | None = None, seconds: float | None = None,
                 partial: list | None = None) -> None:
        super().__init__(message)
        self.phase = phase
        self.seconds = seconds
        self.partial = list(partial or [])


class KernelHungError(WorkerTimeoutError):
    """A launched kernel did not finish in time; its worker was stopped, which frees the GPU.

    Built by :meth:`from_verdict`, which says whether ``tslab.check`` predicted the hang.
    """

    @classmethod
    def from_verdict(cls, kernel: str, verdict: object, seconds: float) -> KernelHungError:
        stopped = f"the worker was stopped after {seconds:g} s, which frees the GPU"
        deadlocks = [e for e in getattr(verdict, "errors", []) if e.kind == "deadlock"]
        if deadlocks:
            blocked = deadlocks[0].message
            hint = deadlocks[0].hint or "fix the schedule"
            message = (f"kernel '{kernel}': hung on the GPU as tslab.check() predicted ({blocked}); {stopped}; "
                       f"{hint}, check it again and compile it without force=True.")
        else:
            status = getattr(verdict, "status", "unknown")
            message = (f"kernel '{kernel}': did not finish within {seconds:g} s although tslab.check() says "
                       f"{status}; {stopped}; raise timeout= for a large problem, or report it: the checker "
                       "and the kernel disagree.")
        return cls(message, phase="running the kernel", seconds=seconds)


class GpuOutOfMemoryError(GpuError, MemoryError):
    """The GPU had too little free memory for an allocation; the bytes asked and free when torch said them."""

    def __init__(self, message: str, requested_bytes: int | None = None, free_bytes: int | None = None) -> None:
        super().__init__(message)
        self.requested_bytes = requested_bytes
        self.free_bytes = free_bytes


class CheckFailedError(GpuError):
    """A kernel's output did not match the torch reference."""


class InputsError(GpuError, ValueError):
    """A captured kernel's ``inputs``, ``reference`` or ``baseline``: not importable by the GPU worker, failed there,
    or returned what the kernel was not checked with."""


__all__ = ["CheckFailedError", "CompileError", "GpuError", "GpuOutOfMemoryError", "InputsError", "KernelHungError",
           "NoGpuError", "UnsafeDesignError", "UnsupportedArchError", "UnsupportedKernelError", "WorkerCrashedError",
           "WorkerTimeoutError"]
