"""Fake kernel arguments for capturing (compiling) a kernel without a GPU, and without torch.

A compile trace needs only the types, shapes and strides of a host function's arguments, never their data::

    import tslab
    from tslab import fake

    design = tslab.capture(copy_host, fake.tensor("f16", (1024, 1024)), fake.tensor("f16", (1024, 1024)),
                           fake.stream())

Host functions that take torch tensors. A ``@cute.jit`` host function receives ``cute.Tensor`` values (a
torch tensor is converted at the call), so capture it with a fake tensor of the same dtype and shape in
place of each torch tensor: ``fake.tensor(torch.float16, a.shape)`` or, when torch and the tensor are at
hand, ``fake.like(a)``. Kernel files that ``import torch`` at the top import on a machine without torch:
:func:`torch_stand_in` (used by ``tslab.capture_file``) registers a tiny ``torch`` module offering
dtypes and ``torch.cuda.is_available() == False``; anything that needs real tensors raises a clear error.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

from .errors import TslabError, did_you_mean

#: dtype spellings accepted by :func:`tensor`, mapped to ``cutlass`` numeric type names.
DTYPES: dict[str, str] = {
    "f16": "Float16", "float16": "Float16", "half": "Float16",
    "bf16": "BFloat16", "bfloat16": "BFloat16",
    "f32": "Float32", "float32": "Float32", "float": "Float32",
    "f64": "Float64", "float64": "Float64", "double": "Float64",
    "tf32": "TFloat32",
    "f8e4m3": "Float8E4M3FN", "float8_e4m3fn": "Float8E4M3FN",
    "f8e5m2": "Float8E5M2", "float8_e5m2": "Float8E5M2",
    "i8": "Int8", "int8": "Int8", "u8": "Uint8", "uint8": "Uint8",
    "i16": "Int16", "int16": "Int16", "u16": "Uint16", "uint16": "Uint16",
    "i32": "Int32", "int32": "Int32", "int": "Int32", "u32": "Uint32", "uint32": "Uint32",
    "i64": "Int64", "int64": "Int64", "long": "Int64", "u64": "Uint64", "uint64": "Uint64",
    "bool": "Boolean",
}


def dtype(spec: Any) -> Any:
    """The cutlass numeric type for ``spec``: a cutlass type, a name like ``"f16"``, or a torch dtype."""
    import cutlass

    if isinstance(spec, type):
        return spec
    text = str(getattr(spec, "tslab_name", spec)).removeprefix("torch.")
    name = DTYPES.get(text.lower()) or (text if hasattr(cutlass, text) else None)
    if name is None or not hasattr(cutlass, name):
        raise TslabError(f"fake tensor: dtype={spec!r} is not a known element type; "
                         f"{did_you_mean(text.lower(), sorted(DTYPES))}")
    return getattr(cutlass, name)


def tensor(dtype_spec: Any, shape: Any, *, stride: tuple[Any, ...] | None = None,
           stride_order: tuple[int, ...] | None = None, align: int = 16) -> Any:
    """A fake global-memory tensor for ``cute.compile``: element type, shape, and optionally strides.

    Without ``stride`` the layout is compact and row-major (the last mode is contiguous), like a fresh
    torch tensor; ``stride_order`` picks another compact order (``0`` marks the contiguous mode).

    A size or stride of ``None`` is a runtime value, as when the kernel is compiled once for every batch size
    (``cute.sym_int()``; kernels whose schedulers carry such extents as DSL values need them); one
    :func:`extent` passed in several places is one runtime value.
    """
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_tensor

    element = dtype(dtype_spec)
    dims = tuple(_extent(d, 32) for d in (shape if isinstance(shape, (tuple, list)) else tuple(shape)))
    if not dims or any(isinstance(d, int) and d <= 0 for d in dims):
        raise TslabError(f"fake tensor: shape={shape!r} must be a non-empty list of positive sizes (None: a "
                         "runtime size)")
    if stride is not None:
        if len(stride) != len(dims):
            raise TslabError(f"fake tensor: stride={stride!r} has {len(stride)} modes but shape has "
                             f"{len(dims)}; give one stride per mode")
        return make_fake_tensor(element, dims, tuple(_extent(s, 64) for s in stride), assumed_align=align)
    order = stride_order if stride_order is not None else tuple(reversed(range(len(dims))))
    return make_fake_compact_tensor(element, dims, stride_order=tuple(order), assumed_align=align)


def extent(divisibility: int = 1) -> Any:
    """A runtime size to use in several modes or strides of fake tensors (the same value everywhere)."""
    from cutlass import cute

    return cute.sym_int(divisibility=divisibility)


def _extent(value: Any, width: int) -> Any:
    if value is None:
        from cutlass import cute

        return cute.sym_int64() if width == 64 else cute.sym_int()
    if type(value).__name__ == "SymInt":
        return value
    return int(value)


def like(torch_tensor: Any, *, align: int = 16) -> Any:
    """A fake tensor with the dtype, shape and strides of a real torch tensor (no data is touched)."""
    shape, stride = tuple(torch_tensor.shape), tuple(torch_tensor.stride())
    return tensor(torch_tensor.dtype, shape, stride=stride, align=align)


def stream() -> Any:
    """A fake CUDA stream argument."""
    from cutlass.cute.runtime import make_fake_stream

    return make_fake_stream()


# -- a torch stand-in for CPU-only machines ---------------------------------------------------------

class _StandInDtype:
    def __init__(self, name: str) -> None:
        self.tslab_name = name

    def __repr__(self) -> str:
        return f"torch.{self.tslab_name}"


class _Unavailable:
    """Anything of torch beyond dtypes: importable, but using it says what to do instead."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> _Unavailable:
        return _Unavailable(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TslabError(f"torch stand-in: {self._name}() needs the real torch, which is not installed; "
                         "to capture a kernel, pass tslab.fake.tensor(...) where it takes a tensor")


def _stand_in() -> types.ModuleType:
    module = types.ModuleType("torch", "A stand-in for torch, from tslab.fake (torch is not installed).")
    torch_names = ("float16", "half", "bfloat16", "float32", "float", "float64", "double", "int8", "uint8",
                   "int16", "int32", "int", "int64", "long", "bool", "float8_e4m3fn", "float8_e5m2")
    for name in torch_names:
        setattr(module, name, _StandInDtype(name))
    module.Tensor = type("Tensor", (), {"__doc__": "torch stand-in: no tensors without torch"})
    module.dtype = _StandInDtype
    cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)
    module.cuda = cuda
    module.tslab_stand_in = True
    module.__getattr__ = lambda attr: _Unavailable(f"torch.{attr}")  # type: ignore[attr-defined]
    return module


@contextlib.contextmanager
def torch_stand_in() -> Iterator[bool]:
    """While active, ``import torch`` gives the stand-in when torch is not installed (yields whether it does).

    Modules imported meanwhile keep the stand-in; nothing else sees it afterwards.
    """
    if "torch" in sys.modules:
        yield False
        return
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.modules["torch"] = _stand_in()
        try:
            yield True
        finally:
            sys.modules.pop("torch", None)
    else:
        yield False
