"""Source text of the files an exported package holds (filled in by :mod:`tslab.gpu.export`)."""

INIT = '''"""{kernel} compiled for {arch}: copies a {dtype} tensor of shape {shape} (exported by tslab).

    import torch, {name}
    src = torch.randn({shape}, device="cuda").to(torch.{dtype}); dst = torch.empty_like(src)
    {name}.run(src, dst)

Needs only nvidia-cutlass-dsl (its runtime library) and a GPU of arch {arch}; nothing is recompiled.
design.json holds the design, VERDICT.txt the checker's verdict it was built from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
META = json.loads((HERE / "design.json").read_text())
ARCH: str = META["arch"]
SHAPE: tuple[int, ...] = tuple(META["shape"])
DTYPE: str = META["dtype"]
_module: Any = None


class ExportedKernelError(RuntimeError):
    """A launch this exported kernel cannot do (wrong GPU, shape, dtype or device)."""


def gpu_arch(index: int = 0) -> str | None:
    """Arch string of GPU ``index`` (e.g. 'sm_90a'), or None without a driver or GPU."""
    try:
        from cuda.bindings import driver as cu

        (err,) = cu.cuInit(0)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        err, dev = cu.cuDeviceGet(index)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        attr = cu.CUdevice_attribute
        major = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)[1]
        minor = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)[1]
    except Exception:
        return None
    suffix = "a" if (major, minor) in {{(9, 0), (10, 0), (10, 3)}} else ""
    return f"sm_{{major}}{{minor}}{{suffix}}"


def load() -> Any:
    """The exported function (loaded once, without compiling)."""
    global _module
    if _module is None:
        import ctypes
        import os

        from cutlass.cute.runtime import find_runtime_libraries, load_module

        for path in find_runtime_libraries(enable_tvm_ffi=False):  # global symbols for the object file
            if os.path.exists(path):
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        _module = load_module(str(HERE / "kernel.o"))
    return _module.kernel


def _check(name: str, t: Any) -> None:
    if tuple(t.shape) != SHAPE:
        raise ExportedKernelError(f"{{name}}: shape {{tuple(t.shape)}} != {{SHAPE}}; this kernel was "
                                  f"exported for {{SHAPE}} only, export again with shape=...")
    if str(t.dtype).removeprefix("torch.") != DTYPE:
        raise ExportedKernelError(f"{{name}}: dtype {{t.dtype}} != {{DTYPE}}; convert it or export again "
                                  "with dtype=...")
    if not t.is_cuda or not t.is_contiguous() or t.data_ptr() % 16:
        raise ExportedKernelError(f"{{name}}: must be a contiguous CUDA tensor aligned to 16 bytes")


def run(src: "torch.Tensor", dst: "torch.Tensor", stream: Any = None) -> None:  # noqa: F821
    """Copy ``src`` into ``dst`` on ``stream`` (default: torch's current stream); both of SHAPE and DTYPE."""
    arch = gpu_arch(src.device.index or 0)
    if arch is None:
        raise ExportedKernelError(f"module '{name}': no NVIDIA GPU or driver is present; this module needs a GPU "
                                  f"of arch {{ARCH}} to run (load() works without one)")
    if arch != ARCH:
        raise ExportedKernelError(f"module '{name}': compiled for {{ARCH}} but this GPU is {{arch}}; "
                                  f"export it again with arch={{arch!r}}")
    _check("src", src)
    _check("dst", dst)
    import torch
    from cuda.bindings import driver as cu
    from cutlass.cute.runtime import from_dlpack

    if stream is None:
        stream = cu.CUstream(torch.cuda.current_stream(src.device).cuda_stream)
    load()(from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16), stream)
'''

TEST = '''"""Checks of the exported package: loads without compiling; on a matching GPU, copies exactly."""

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
kernel = importlib.import_module("{name}")


def test_loads_without_compiling():
    assert callable(kernel.load())


@pytest.mark.skipif(kernel.gpu_arch() != kernel.ARCH, reason="needs a GPU of the exported arch")
def test_copies_exactly():
    import torch

    src = (torch.randn(kernel.SHAPE, device="cuda") * 100).to(getattr(torch, kernel.DTYPE))
    dst = torch.full_like(src, -7)
    kernel.run(src, dst)
    torch.cuda.synchronize()
    assert torch.equal(src, dst)


def test_rejects_wrong_shape():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or kernel.gpu_arch() != kernel.ARCH:
        pytest.skip("needs a GPU of the exported arch")
    bad = torch.empty(16, device="cuda", dtype=getattr(torch, kernel.DTYPE))
    with pytest.raises(kernel.ExportedKernelError, match="shape"):
        kernel.run(bad, bad)
'''
