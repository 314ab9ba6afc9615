"""Capturing the catalog copies' own GPU entry points gives the designs tslab builds directly on the CPU.

The copies' ``launch`` functions build their TaskManager inside the kernel; traced for sm_90a with fake
tensors sized so that one block walks the design's number of tiles (or trips), the captured design must
check exactly like ``design()``: same verdict, SMEM layout, schedule table and checker state count.
"""

import pytest

import tslab
from tslab import fake
from tslab.capture import capture
from tslab.kernels import grid_stride_copy, tma_copy


def same_check(captured, direct):
    a, b = tslab.check(captured), tslab.check(direct)
    assert (a.status, b.status) == ("SAFE", "SAFE")
    assert a.layout.equals(b.layout)
    assert a.schedule.equals(b.schedule)
    assert a.checker.states_explored == b.checker.states_explored
    assert a.smem_used == b.smem_used


@pytest.mark.parametrize("stages", [4, 2])
def test_tma_copy_launch_captures_as_its_design(stages):
    # 4 row tiles of 64x128 and one block (sms=1, ctas_per_sm=1): the block walks the design's 4 tiles.
    src, dst = fake.tensor("f16", (256, 128)), fake.tensor("f16", (256, 128))
    captured = capture(tma_copy.launch, src, dst, fake.stream(), stages, 64, 128, 4, 1, 1, arch="sm_90a")
    same_check(captured, tma_copy.design(stages=stages))


def test_grid_stride_copy_launch_captures_as_its_design():
    # 4096 int16 = 512 vectors of 16 bytes; one block of 128 threads makes the design's 4 trips.
    src, dst = fake.tensor("i16", (4096,)), fake.tensor("i16", (4096,))
    captured = capture(grid_stride_copy.launch, src, dst, fake.stream(), 4, 1, 1, 16, 1, arch="sm_90a")
    same_check(captured, grid_stride_copy.design())


def test_a_captured_catalog_copy_edits_like_the_design():
    src, dst = fake.tensor("f16", (256, 128)), fake.tensor("f16", (256, 128))
    captured = capture(tma_copy.launch, src, dst, fake.stream(), 4, 64, 128, 4, 1, 1, arch="sm_90a")
    edited = captured.with_pipeline("smem_ring", num_stages=2)
    same_check(edited, tma_copy.design().with_pipeline("smem_ring", num_stages=2))
