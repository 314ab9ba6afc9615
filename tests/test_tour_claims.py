"""What the tour tells a newcomer to try in the Studio does what the tour says it does."""

from __future__ import annotations

import tslab
from tslab.kernels import tma_copy


def test_one_stage_on_smem_ring_stays_safe_and_draws_a_quarter_of_the_ring():
    """The tour: "Try num_stages = 1 on smem_ring: still SAFE, and in the memory map ... the ring shrinks to a
    quarter"."""
    before = tslab.check(tma_copy.design())
    after = tslab.check(tma_copy.design().with_pipeline("smem_ring", num_stages=1))
    assert before.status == after.status == "SAFE"

    def ring_bytes(verdict):
        return next(r["size"] for r in verdict.layout_rows() if r["name"] == "ring_buf")

    assert ring_bytes(after) * 4 == ring_bytes(before)
