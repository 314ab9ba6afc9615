"""Open an existing TS kernel: capture the TaskManagers its compile trace builds, on the CPU, as Designs.

``api`` runs the trace in a worker process (``worker``), where ``recorder`` intercepts each TaskManager and
``snapshot`` carries its tasks, graph and allocators back without their DSL values; ``errors`` turns failures
into messages naming the kernel's own file and line; ``cli`` is the ``tslab check PATH.py::FUNCTION`` side.
"""

from ..core.design import register_source_loader
from .api import (
    CapturedManager,
    CaptureError,
    CaptureResult,
    capture,
    capture_all,
    capture_call,
    capture_file,
    capture_file_all,
    load_captured,
)
from .source import KernelSource

register_source_loader(load_captured)

__all__ = ["CaptureError", "CaptureResult", "CapturedManager", "KernelSource", "capture", "capture_all",
           "capture_call", "capture_file", "capture_file_all"]
