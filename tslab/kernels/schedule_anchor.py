"""A no-op that ptxas must schedule after a given value, and that the next ``wgmma.wait_group`` stays behind.

ptxas moves ``wgmma.wait_group`` (SASS ``WARPGROUP.DEPBAR``) up past register-only work as far as the last
shared-memory synchronisation before it: in attention_sm90's K/V loop, the wait for the P V wgmma, written after the
softmax, runs right after the first row's max (causal and at head_dim 64 right after the wait for S), and the
warpgroup waits for its own P V before its exponentials. A guard on the wait itself does not work (a predicated or
branched-around wait makes ptxas serialise every wgmma of the kernel). What does: an ``mbarrier.expect_tx`` of 0
bytes whose count is computed from ``value`` (``value * 0``, 0 for every float, NaN included once converted): it
changes nothing on the barrier, it cannot issue before ``value`` exists, and the wait is not moved above it.
"""

from __future__ import annotations

from typing import Any

from cutlass import Float32, Int32
from cutlass._mlir.dialects import llvm


def keep_after(value: Float32, barrier_address: Any) -> None:
    """Expect 0 more transaction bytes on the mbarrier at ``barrier_address`` (shared, 32-bit), once ``value``
    is computed."""
    llvm.inline_asm(
        None,
        [Int32(barrier_address).ir_value(), Float32(value).ir_value()],
        "{\n.reg .f32 zero;\n.reg .u32 bytes;\nmul.f32 zero, $1, 0f00000000;\ncvt.rzi.u32.f32 bytes, zero;\n"
        "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], bytes;\n}",
        "r,f",
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
    )
