"""The GPU path: find the device, compile designs, run and check them, time them, profile them, export them."""

from .bench import BenchResult, bench
from .compile import CompiledKernel, compile
from .device import DeviceInfo, device, smem_capacity
from .errors import (
    CheckFailedError,
    CompileError,
    GpuError,
    GpuOutOfMemoryError,
    InputsError,
    KernelHungError,
    NoGpuError,
    UnsafeDesignError,
    UnsupportedArchError,
    UnsupportedKernelError,
    WorkerCrashedError,
    WorkerTimeoutError,
)
from .export import export
from .iket_session import ProfileError
from .profiled_tasks import TimelineError
from .profiling import profile
from .timeline import Timeline

__all__ = [
    "BenchResult",
    "CheckFailedError",
    "CompileError",
    "CompiledKernel",
    "DeviceInfo",
    "GpuError",
    "GpuOutOfMemoryError",
    "InputsError",
    "KernelHungError",
    "NoGpuError",
    "ProfileError",
    "Timeline",
    "TimelineError",
    "UnsafeDesignError",
    "UnsupportedArchError",
    "UnsupportedKernelError",
    "WorkerCrashedError",
    "WorkerTimeoutError",
    "bench",
    "compile",
    "device",
    "export",
    "profile",
    "smem_capacity",
]
