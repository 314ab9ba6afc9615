"""Errors of the GPU path: compiling, running, timing and exporting kernels."""

from __future__ import annotations

from ..errors import TslabError


class GpuError(TslabError):
    """Base class of errors raised by :mod:`tslab.gpu`."""


class NoGpuError(GpuError):
    """No usable NVIDIA GPU or driver where one is needed."""


class UnsupportedKernelError(GpuError, ValueError):
    """The design's kernel has no GPU kernel in this version of tslab."""


class UnsupportedArchError(GpuError, ValueError):
    """The arch asked for is not one tslab's kernels compile for."""


class UnsafeDesignError(GpuError, ValueError):
    """``tslab.check`` did not prove the design safe; carries the verdict."""

    def __init__(self, message: str, verdict: object) -> None:
        super().__init__(message)
        self.verdict = verdict


class CompileError(GpuError):
    """CuTe DSL failed to compile the kernel (a Python exception in the worker)."""


class WorkerCrashedError(GpuError):
    """The worker process died (an MLIR abort, a signal); the parent lives on."""


class WorkerTimeoutError(GpuError):
    """The worker process ran past its time limit and was stopped."""


class GpuOutOfMemoryError(GpuError, MemoryError):
    """The GPU had too little free memory for an allocation; the bytes asked and free when torch said them."""

    def __init__(self, message: str, requested_bytes: int | None = None, free_bytes: int | None = None) -> None:
        super().__init__(message)
        self.requested_bytes = requested_bytes
        self.free_bytes = free_bytes


class CheckFailedError(GpuError):
    """A kernel's output did not match the torch reference."""
