"""Runtime arguments of a compiled kernel: torch tensors as CuTe tensors, marked as the compile expected.

A kernel compiled with runtime extents reads each tensor's shape and strides from its argument, so every
tensor passed to it must be marked dynamic exactly as its compile-only stand-in was (extents and their
promised divisibility); a static tensor passed to a dynamic kernel launches with garbage extents.
"""

from __future__ import annotations

from typing import Any


def dynamic_tensor(t: Any, divisibility: tuple[int | None, ...]) -> Any:
    """``t`` (row-major, 16-byte aligned) as a CuTe tensor whose extents are runtime values, mode ``i``
    promised a multiple of ``divisibility[i]`` (None: a mode the kernel was compiled for, left static)."""
    from cutlass.cute.runtime import from_dlpack

    out = from_dlpack(t, assumed_align=16)
    # The modes' order given, not deduced: a mode of extent 1 has the stride of its neighbour (a batch or a head
    # count of 1, a sequence of one row) and CuTe cannot tell which of the two is outer.
    order = _outer_to_inner(t)
    for mode, multiple in enumerate(divisibility):
        if multiple is not None:
            out = out.mark_compact_shape_dynamic(mode=mode, stride_order=order, divisibility=multiple)
    return out


def _outer_to_inner(t: Any) -> tuple[int, ...]:
    """``t``'s modes from the outermost (largest stride) to the innermost, ties in row-major order (torch's
    ``dim_order``; numpy arrays have strides only)."""
    if hasattr(t, "dim_order"):
        return tuple(t.dim_order())
    return tuple(sorted(range(t.ndim), key=lambda mode: -t.strides[mode]))


def tensor_args(tensors: tuple, divisibility: tuple[tuple[int | None, ...] | None, ...] | None) -> tuple:
    """CuTe tensors of ``tensors``: static layouts, or dynamic ones when ``divisibility`` gives each's marks
    (a None mark: an argument that is not a tensor, such as a scale, passed as it is)."""
    from cutlass.cute.runtime import from_dlpack

    if divisibility is None:
        return tuple(from_dlpack(t, assumed_align=16) if hasattr(t, "__dlpack__") else t for t in tensors)
    return tuple(t if d is None else dynamic_tensor(t, d) for t, d in zip(tensors, divisibility, strict=True))


def divisibility_of(fakes: tuple) -> tuple[tuple[int | None, ...] | None, ...]:
    """The marks :func:`tensor_args` needs for arguments passed where a compile saw ``fakes``: each tensor mode's
    promised divisibility, read from the compile-only stand-ins themselves (None for a mode the compile fixed, such
    as attention's head_dim, and for an argument that is not a tensor)."""
    from cutlass.cute.typing import SymInt

    marks: list[tuple[int | None, ...] | None] = []
    for fake in fakes:
        shape = getattr(fake, "shape", None)
        if shape is None:
            marks.append(None)
            continue
        if not any(isinstance(s, SymInt) for s in shape):
            raise ValueError(f"{fake}: no extent is symbolic; a static tensor cannot be marked dynamic")
        marks.append(tuple(s.divisibility if isinstance(s, SymInt) else None for s in shape))
    return tuple(marks)
