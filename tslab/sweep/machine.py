"""The machine a sweep ran on, as its store's header records it: GPU name (or "cpu"), driver, versions."""

from __future__ import annotations

from importlib import metadata
from typing import Any


def _driver() -> str | None:
    try:
        from cuda.bindings import driver as cu

        err, version = cu.cuDriverGetVersion()
    except Exception:  # no driver library: a CPU-only machine
        return None
    return f"{version // 1000}.{version % 1000 // 10}" if err == cu.CUresult.CUDA_SUCCESS else None


def machine() -> dict[str, Any]:
    """``{"gpu", "driver", "tslab", "cutlass_dsl"}``: what a stored timing or compile depends on."""
    from .. import __version__
    from ..gpu.device import device

    info = device()
    try:
        dsl = metadata.version("nvidia-cutlass-dsl")
    except metadata.PackageNotFoundError:
        dsl = None
    return {"gpu": info.name if info is not None else "cpu", "driver": _driver() if info is not None else None,
            "tslab": __version__, "cutlass_dsl": dsl}
