"""``run(src, dst)`` of the copy kernels for torch tensors: compile once per problem, launch on torch's stream.

This runs in the calling process (fast, no isolation); :mod:`tslab.gpu` offers the same kernels compiled and
run in a worker process, checked against torch, timed and exported.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..errors import DesignError, did_you_mean
from .rules import cutlass_dtype

_CACHE: dict[tuple, Any] = {}


def split_options(module: ModuleType, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword options split into design parameters and launch options (unknown names refused)."""
    params, launch = dict(module.PARAMS), dict(module.RULES.launch)
    for key, value in options.items():
        if key in params:
            params[key] = value
        elif key in launch:
            launch[key] = value
        else:
            raise DesignError("input", f"{module.NAME}.run option '{key}'", "is neither a design parameter nor a "
                              "launch option", did_you_mean(key, [*params, *launch]))
    return params, launch


def _check_tensors(name: str, src: Any, dst: Any) -> None:
    import torch

    where = f"{name}.run"
    for label, t in (("src", src), ("dst", dst)):
        if not isinstance(t, torch.Tensor) or not t.is_cuda:
            raise DesignError("input", f"{where} {label}", "is not a CUDA torch tensor", "move it with .cuda()")
        if not t.is_contiguous() or t.data_ptr() % 16:
            raise DesignError("input", f"{where} {label}", "is not contiguous and 16-byte aligned",
                              "pass .contiguous() tensors allocated by torch")
    if src.shape != dst.shape or src.dtype != dst.dtype or src.device != dst.device:
        raise DesignError("input", where, f"src {tuple(src.shape)} {src.dtype} on {src.device} and dst "
                          f"{tuple(dst.shape)} {dst.dtype} on {dst.device} differ",
                          "allocate dst with torch.empty_like(src)")


def _compile(module: ModuleType, src: Any, params: dict[str, Any], launch: dict[str, Any], stream: Any) -> Any:
    import torch
    from cutlass import cute
    from cutlass.cute.runtime import make_fake_compact_tensor

    from ..core.check import check
    from ..core.design import Design

    verdict = check(Design(module.NAME, params))
    if not verdict.ok:
        raise DesignError("input", f"{module.NAME}.run", f"tslab.check() says {verdict.status}: "
                          + "; ".join(e.message for e in verdict.errors), "fix the design's parameters")
    dtype_name = str(src.dtype).removeprefix("torch.")
    problem = module.RULES.problem_error(params, tuple(src.shape), dtype_name)
    if problem is not None:
        raise DesignError("input", f"{module.NAME}.run", problem, "pass tensors the kernel takes")
    dtype = cutlass_dtype(dtype_name)
    order = tuple(reversed(range(src.dim())))
    fakes = [make_fake_compact_tensor(dtype, tuple(src.shape), stride_order=order, assumed_align=16)
             for _ in range(2)]
    props = torch.cuda.get_device_properties(src.device)
    suffix = "a" if (props.major, props.minor) in {(9, 0), (10, 0), (10, 3)} else ""
    consts = module.launch_constants(params, launch, props.multi_processor_count)
    return cute.compile(module.launch, *fakes, stream, *consts,
                        options=f"--gpu-arch sm_{props.major}{props.minor}{suffix}")


def run_copy(module: ModuleType, src: Any, dst: Any, stream: Any, options: dict[str, Any], *,
             flatten: bool = False) -> None:
    """Copy ``src`` into ``dst`` with ``module``'s kernel; compiled once per shape, dtype, options and GPU."""
    try:
        import torch
    except ImportError:
        raise DesignError("input", f"{module.NAME}.run", "needs torch and an NVIDIA GPU, and torch is not installed",
                          "install torch, or compile without a GPU: tslab.gpu.compile(design, arch='sm_90a')") from None
    from cuda.bindings import driver as cu
    from cutlass.cute.runtime import from_dlpack

    _check_tensors(module.NAME, src, dst)
    if flatten:
        src, dst = src.reshape(-1), dst.reshape(-1)
    params, launch = split_options(module, options)
    if stream is None:
        stream = cu.CUstream(torch.cuda.current_stream(src.device).cuda_stream)
    key = (module.NAME, tuple(src.shape), src.dtype, src.device, tuple(params.items()), tuple(launch.items()))
    if key not in _CACHE:
        _CACHE[key] = _compile(module, src, params, launch, stream)
    _CACHE[key](from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16), stream)
