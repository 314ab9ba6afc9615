"""A copy kernel exported by tslab: ``run(src, dst)`` copies a tensor into another on the GPU.

    import torch, my_copy                  # this package, by its folder's name
    src = torch.randn(4096, 4096, device="cuda").to(getattr(torch, my_copy.DTYPE))
    dst = my_copy.copy(src)                # or my_copy.run(src, dst) into a tensor of your own
    dst = torch.ops.my_copy.copy(src)      # the same as a torch custom op (works inside torch.compile)

A call launches on torch's current stream (``stream=`` to pick another) and can be captured in a CUDA graph once
it has run eagerly. Needs nvidia-cutlass-dsl's runtime, apache-tvm-ffi and a GPU of the package's arch; nothing
is recompiled. design.json holds the design, VERDICT.txt the checker's verdict it was built from.
"""

# No ``from __future__ import annotations``: torch.library.custom_op reads the op's schema from real annotations.
from operator import ge
from typing import Any

from . import _runtime
from ._runtime import ExportedInputError, ExportedKernelError, gpu_arch

__all__ = ["ARCH", "DESIGNS", "DTYPE", "META", "SHAPE", "ExportedInputError", "ExportedKernelError", "copy",
           "gpu_arch", "load", "run", "torch_op"]

NAME = __name__.rpartition(".")[2]
_PACKAGE = _runtime.Package(__file__, NAME)
META, DESIGNS, ARCH, DTYPE, SHAPE = _PACKAGE.meta, _PACKAGE.designs, _PACKAGE.arch, _PACKAGE.dtype, _PACKAGE.shape
load = _PACKAGE.load
if __doc__ is not None:
    __doc__ += _PACKAGE.describe()
_FUNCTIONS, _DEVICES, _MIN = _PACKAGE.functions, _PACKAGE.devices, _PACKAGE.minimum(0)
try:
    from torch import empty_like as _empty_like
except ImportError:  # the kernel itself needs no torch; copy() allocates with it
    def _empty_like(src: Any) -> Any:
        return src.new_empty(src.shape)


def _check(src: Any, dst: Any) -> None:
    """Every rule of a call, by name: raises naming the first one broken and its fix."""
    _PACKAGE.require_gpu(src)
    _PACKAGE.check_tensor("src", src)
    _PACKAGE.check_tensor("dst", dst)
    _PACKAGE.check_shape("src", tuple(src.shape))
    if tuple(dst.shape) != tuple(src.shape):
        raise ExportedInputError(f"dst: shape {tuple(dst.shape)} != src's {tuple(src.shape)}")


def run(src: Any, dst: Any, stream: Any = None) -> None:
    """Copy ``src`` into ``dst`` (same shape and dtype) on ``stream`` (default: torch's current stream)."""
    try:  # what the compiled function cannot see: the two shapes agree, no extent is below the rule's
        shape = src.shape
        fast = (shape == dst.shape and all(map(ge, shape, _MIN)) and src.is_contiguous() and dst.is_contiguous()
                and src.get_device() in _DEVICES)
    except _runtime.PROBE_ERRORS:
        fast = False
    if not fast:
        _check(src, dst)
    fn = _FUNCTIONS.get(0) or load(0)
    try:
        if stream is None:
            fn(src, dst)
        else:
            with _runtime.on_stream(stream, src):
                fn(src, dst)
    except _runtime.ABI_ERRORS as exc:
        _check(src, dst)
        raise _PACKAGE.refused(f"{NAME}.run", exc) from exc


def copy(src: Any) -> Any:
    """A new tensor equal to ``src``, written by the kernel."""
    try:
        dst = _empty_like(src)
    except _runtime.PROBE_ERRORS:
        _check(src, src)  # names what src is not
        raise ExportedInputError("src: copy() allocates its result with torch: pass a torch.Tensor, or call "
                                 "run(src, dst) with a tensor of your own") from None
    run(src, dst)
    return dst


def _fake(src: Any) -> Any:
    return _empty_like(src)


#: ``torch.ops.<package>.copy(src)``, the same as copy() (works inside torch.compile); None without torch.
torch_op = _runtime.register_op(f"{NAME}::copy", "(Tensor src) -> Tensor", copy, _fake)
