"""NVIDIA's in-kernel event tracing (IKET, in nvidia-cutlass-dsl) from inside a worker process.

IKET records the ranges a kernel compiled with markers emits (TS names one per schedule step,
``<resource>_<ScheduleStage>``) into a device buffer, with each warp's start and end. :class:`Session` drives it
in-process through the stable C ABI of ``libiket_injection.so`` (``iket/include/iket/iket_profiling_session.h``):
one session per process, started before the process initialises CUDA; ``save`` writes IKET's decoded JSON.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path
from typing import Any

from .errors import GpuError

#: ``IketProfilingSessionOptions.flags``: trace one logical cluster (one block without clusters).
ENABLE_CLUSTER = 1 << 0
#: Distinct range names (TS: one per distinct step) a kernel may carry in IKET's narrow event encoding; above
#: it IKET switches to a wider one that costs more per event (IKET's profiling guide).
MARKER_SLOTS = 30
_RESULTS = {0: "success", 1: "invalid argument", 2: "feature not supported", 3: "not implemented",
            4: "not instrumented", 5: "unknown error", 6: "invalid event record", 7: "no instrument config",
            8: "invalid state", 9: "duplicate operation", 13: "I/O error", 14: "internal error"}


class ProfileError(GpuError):
    """IKET could not profile the kernel (its session refused a call, or its buffer overflowed)."""


class _ClusterIndex(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint32), ("y", ctypes.c_uint16), ("z", ctypes.c_uint16)]


class _Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("max_ts_per_warp", ctypes.c_uint64),
                ("device_buffer_size", ctypes.c_uint64), ("profiled_cuda_contexts", ctypes.POINTER(ctypes.c_void_p)),
                ("num_profiled_cuda_contexts", ctypes.c_uint64), ("enabled_cluster", _ClusterIndex),
                ("log_level", ctypes.c_uint32)]


class Session:
    """One in-process IKET profiling session: ``with Session(...) as s: <run>; s.save(path)``."""

    def __init__(self, *, max_ts_per_warp: int, one_block: bool, device_buffer_bytes: int | None = None) -> None:
        from iket.profiler import default_injection_lib

        if ctypes.sizeof(_Options) != 56:
            raise ProfileError("IKET's session options changed size; update tslab/gpu/iket_session.py")
        self._lib = ctypes.CDLL(str(default_injection_lib))
        for name in ("OptionsInit", "Create", "Destroy", "SetOptions", "Start", "Stop", "SaveTrace"):
            getattr(self._lib, "IketProfilingSession" + name).restype = ctypes.c_uint32
        self._handle = ctypes.c_void_p()
        options = _Options()
        options.struct_size = ctypes.sizeof(_Options)
        self._call("OptionsInit", ctypes.byref(options))
        options.max_ts_per_warp = max_ts_per_warp
        if device_buffer_bytes is not None:
            options.device_buffer_size = device_buffer_bytes
        if one_block:
            options.flags |= ENABLE_CLUSTER
        self.buffer_bytes = int(options.device_buffer_size)
        self._call("Create", ctypes.byref(self._handle))
        self._call("SetOptions", self._handle, ctypes.byref(options))
        self._active = False

    def _call(self, name: str, *args: Any) -> None:
        code = getattr(self._lib, "IketProfilingSession" + name)(*args)
        if code != 0:
            raise ProfileError(f"IKET: IketProfilingSession{name} failed: {_RESULTS.get(code, code)}")

    def __enter__(self) -> Session:
        self._call("Start", self._handle)
        self._active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._active:
            self._active = False
            self._call("Stop", self._handle)

    def save(self, path: str | Path) -> dict[str, Any]:
        """Write IKET's decoded trace to ``path`` (after the session stopped) and return it parsed."""
        self._call("SaveTrace", self._handle, str(path).encode())
        return json.loads(Path(path).read_text())

    def close(self) -> None:
        if self._handle:
            self._lib.IketProfilingSessionDestroy(self._handle)
            self._handle = ctypes.c_void_p()
