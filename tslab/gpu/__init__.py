"""The GPU path: find the device, compile designs, run and check them, time them, export them."""

from .bench import BenchResult, bench
from .compile import CompiledKernel, compile
from .device import DeviceInfo, device, smem_capacity
from .errors import (
    CheckFailedError,
    CompileError,
    GpuError,
    GpuOutOfMemoryError,
    KernelHungError,
    NoGpuError,
    UnsafeDesignError,
    UnsupportedArchError,
    UnsupportedKernelError,
    WorkerCrashedError,
    WorkerTimeoutError,
)
from .export import export

__all__ = [
    "BenchResult",
    "CheckFailedError",
    "CompileError",
    "CompiledKernel",
    "DeviceInfo",
    "GpuError",
    "GpuOutOfMemoryError",
    "KernelHungError",
    "NoGpuError",
    "UnsafeDesignError",
    "UnsupportedArchError",
    "UnsupportedKernelError",
    "WorkerCrashedError",
    "WorkerTimeoutError",
    "bench",
    "compile",
    "device",
    "export",
    "smem_capacity",
]
