"""What the catalog's GEMMs (``gemm_sm90``, ``gemm_sm100``) share: their dtypes, A and B in GMEM as the load task
sees them (the K index of the next A/B tile pair), and the compile-only stand-ins of ``(a, b, c, stream)``.

C = A @ B^T with A M x K, B N x K and C M x N, all row-major.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cutlass
from cutlass import cute
from cutlass.experimental.task_scheduling.resources import MemoryResource, StageInfo, TaskLocalVariable, consumer_work

from .rules import cutlass_dtype

#: The design's ``dtype`` param -> the torch dtype of A, B and C.
TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}
#: What a dynamic compile promises of each tensor's extents (a: M x K, b: N x K, c: M x N): N and K multiples of
#: 8, as TMA needs 16-byte row strides. Tensors passed to a dynamic kernel must be marked the same way
#: (:func:`tslab.compiling.args.dynamic_tensor`).
DYNAMIC_DIVISIBILITY = ((1, 8), (8, 8), (1, 8))


@dataclass(kw_only=True)
class GmemAB(MemoryResource):
    """GMEM A and B, seen by the load task as the K index of the next A/B tile pair."""

    k: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.k = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0), docs="K tile index of the pair")

    @consumer_work(returns=k)
    @cute.jit
    def k_coords(self, stage_info: StageInfo) -> cutlass.Int32:
        return stage_info.loop_offset


def fake_args(shape: tuple[int, ...], dtype: str, *, dynamic: bool = False) -> tuple:
    """Compile-only stand-ins for ``(a, b, c, stream)`` of problem ``shape = (M, N, K)``, row-major.

    ``dynamic=True``: M, N and K are runtime extents (N and K promised multiples of 8), so one compiled kernel
    serves every problem the kernel's ``RULES`` accept.
    """
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    m, n, k = shape
    dt = cutlass_dtype(dtype)

    def make(rows: Any, cols: Any, divisibility: tuple[int, int]) -> Any:
        if dynamic:
            rows, cols = (cute.sym_int(divisibility=d) for d in divisibility)
        return make_fake_compact_tensor(dt, (rows, cols), stride_order=(1, 0), assumed_align=16)

    a, b, c = DYNAMIC_DIVISIBILITY
    return make(m, k, a), make(n, k, b), make(m, n, c), make_fake_stream()


def torch_dtype_name(params: dict[str, Any]) -> str:
    """The torch dtype name of the design's ``dtype`` param."""
    return TORCH_DTYPES[params["dtype"]]
