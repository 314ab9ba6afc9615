"""Runtime arguments of a compiled kernel: torch tensors as CuTe tensors, marked as the compile expected.

A kernel compiled with runtime extents reads each tensor's shape and strides from its argument, so every
tensor passed to it must be marked dynamic exactly as its compile-only stand-in was (extents and their
promised divisibility); a static tensor passed to a dynamic kernel launches with garbage extents.
"""

from __future__ import annotations

from typing import Any


def dynamic_tensor(t: Any, divisibility: tuple[int, ...]) -> Any:
    """``t`` (row-major, 16-byte aligned) as a CuTe tensor whose extents are runtime values, mode ``i``
    promised a multiple of ``divisibility[i]``."""
    from cutlass.cute.runtime import from_dlpack

    out = from_dlpack(t, assumed_align=16)
    for mode, multiple in enumerate(divisibility):
        out = out.mark_compact_shape_dynamic(mode=mode, divisibility=multiple)
    return out


def tensor_args(tensors: tuple, divisibility: tuple[tuple[int, ...], ...] | None) -> tuple:
    """CuTe tensors of ``tensors``: static layouts, or dynamic ones when ``divisibility`` gives each's marks."""
    from cutlass.cute.runtime import from_dlpack

    if divisibility is None:
        return tuple(from_dlpack(t, assumed_align=16) for t in tensors)
    return tuple(dynamic_tensor(t, d) for t, d in zip(tensors, divisibility, strict=True))


def divisibility_of(fakes: tuple) -> tuple[tuple[int, ...], ...]:
    """The marks :func:`tensor_args` needs for tensors passed where a compile saw ``fakes``: each mode's
    promised divisibility, read from the compile-only stand-ins themselves (every extent symbolic)."""
    from cutlass.cute.typing import SymInt

    marks = []
    for fake in fakes:
        if not all(isinstance(s, SymInt) for s in fake.shape):
            raise ValueError(f"{fake}: not every extent is symbolic; a static mode cannot be marked dynamic")
        marks.append(tuple(s.divisibility for s in fake.shape))
    return tuple(marks)
