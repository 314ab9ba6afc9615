"""On a GPU: every GPU kernel runs, matches its input exactly, and times against torch."""

from __future__ import annotations

import pytest

import tslab
from tslab.compiling.targets import resolve
from tslab.gpu import bench, device
from tslab.gpu.compile import run_on_gpu
from tslab.kernels import grid_stride_copy, tma_copy

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]

CASES = [
    (grid_stride_copy.design(), {}, (8 * 1_000_003,), "int16"),
    (grid_stride_copy.design(warps=8, vector_bytes=8), {"unroll": 2}, (4 * 2**20,), "float32"),
    (grid_stride_copy.design(), {"unroll": 1, "ctas_per_sm": 4}, (8 * 12_345,), "float16"),
    (tma_copy.design(), {}, (1000, 1000), "float16"),
    (tma_copy.design(stages=2, tile_rows=128, store_warps=1), {"ctas_per_sm": 3}, (4096, 4096), "bfloat16"),
    (tma_copy.design(stages=3, tile_rows=128, tile_cols=256), {"ctas_per_sm": 1}, (3000, 1000), "int16"),
]


@pytest.mark.parametrize(("design", "launch", "shape", "dtype"), CASES, ids=lambda v: str(v)[:40])
def test_run_matches_input(design, launch, shape, dtype):
    out = run_on_gpu(resolve(design, shape, dtype, launch), seed=3, timeout=180)
    assert out["rel_error"] == 0 and out["mismatches"] == 0


def test_bench_reports_ratio_to_torch():
    result = bench([tma_copy.design(), grid_stride_copy.design()], sizes=None, repeats=3, iterations=5)
    assert len(result) == 2
    assert (result.table["ratio"] > 0).all() and (result.table["gbps"] > 0).all()
    assert (result.table["p10_us"] <= result.table["p90_us"]).all()
    print(result)


def test_bench_with_cuda_graphs_on_a_small_tensor():
    design = grid_stride_copy.design()
    result = bench(design, sizes=[(1 << 22,)], repeats=3, iterations=20, use_cuda_graphs=True)
    assert result.table["rel_error"].iloc[0] == 0 and result.table["ratio"].iloc[0] > 0
    assert result.table["workspaces"].iloc[0] > 1  # 16 MiB per pair: rotated to keep L2 cold
    print(result)


def test_module_run_on_torch_tensors():
    import torch

    src = torch.randn(2048, 4096, device="cuda").half()
    dst = torch.full_like(src, float("nan"))
    tma_copy.run(src, dst)
    grid = torch.empty_like(src)
    grid_stride_copy.run(src, grid, unroll=2)
    torch.cuda.synchronize()
    assert torch.equal(src, dst) and torch.equal(src, grid)
    with pytest.raises(tslab.DesignError, match="differ"):
        tma_copy.run(src, dst[:16])
