"""The measured gemm_sm90 dispatch by M (and K): the table as data, each design SAFE, one dtype, no GPU imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tslab import check
from tslab.kernels import gemm_sm90
from tslab.kernels.gemm_sm90_dispatch import (
    BY_M,
    CANDIDATES,
    ONE_TILE,
    PAIRS_128,
    SWAP_64x64,
    SWAP_64x192,
    SWAP_128x160,
    tuned,
)


def test_the_table_is_the_sweeps_winner_for_each_range_of_m():
    assert [bound for bound, _ in BY_M] == [64, 128, 192, 256, 320, 384, 512, {"M": 4096, "N": 4096, "K": 4096},
                                       None]
    alone = {"cluster_m": 1}
    assert [params for _, params in BY_M] == [
        {**SWAP_64x64, **ONE_TILE, "stages": 14, **alone}, {**gemm_sm90.DECODE, **ONE_TILE, "stages": 9, **alone},
        {**SWAP_64x192, **ONE_TILE, "stages": 7, **alone}, {**PAIRS_128, **ONE_TILE, "stages": 7, **alone},
        {**SWAP_128x160, **ONE_TILE, "stages": 5, **alone, "raster": "row"}, {"tile_n": 192, "stages": 5, **ONE_TILE},
        {"epilogue": "subtiles", "stages": 4}, {"epilogue": "subtiles", "stages": 4}, {}]
    # no rule runs a cluster (NOTES #39)
    assert all(gemm_sm90.design(**params).params["cluster_m"] == 1 for _, params in BY_M)
    assert ONE_TILE == {"persistent": False, "epilogue": "aliased"}
    assert PAIRS_128 == {"tile_m": 128, "tile_n": 128, "mma_warpgroups": 2, "stages": 5, "cluster_m": 2}
    assert SWAP_64x192["swap_ab"] and SWAP_128x160["swap_ab"] and SWAP_128x160["tile_n"] == 160


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_tuned_builds_each_design_for_the_dtype(dtype):
    dispatch = tuned(dtype)
    assert [design for _, design in dispatch.rules] == [gemm_sm90.design(**params, dtype=dtype) for _, params in BY_M]
    assert len(dispatch.designs) == 8 and dispatch.rule_designs == (0, 1, 2, 3, 4, 5, 6, 6, 7)  # SUBTILES once
    ms = (1, 64, 65, 128, 129, 192, 193, 256, 257, 320, 321, 384, 385, 512, 513)
    assert [dispatch.pick((m, 8192, 8192))[0] for m in ms] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7]
    # N and K up to 4096 keep the sub-tiled epilogue up to M = 4096
    assert [dispatch.pick(shape)[0] for shape in ((513, 4096, 4096), (4096, 4096, 4096), (4096, 4096, 4104),
                                                  (4096, 4104, 4096), (4097, 4096, 4096), (8192, 28672, 4096))] == [
        6, 6, 7, 7, 7, 7]


@pytest.mark.parametrize("index", range(len(tuned().designs)))
def test_every_design_is_safe(index):
    verdict = check(tuned().designs[index])
    assert verdict.ok, verdict.text()


@pytest.mark.parametrize("index", range(len(tuned().designs)))
def test_every_design_is_safe_under_ts_own_search(index):
    """TS's breadth-first search to the end, not only the reduced search: the ping-pong's two MMA tasks take TS
    ~10^5 states, past the cap at which ``check``'s default stops running it beside the reduced one."""
    verdict = check(tuned().designs[index], strategy="ts")
    assert verdict.status == "SAFE", verdict.text()


def test_every_candidate_of_the_sweep_is_safe():
    for name, params in CANDIDATES.items():
        verdict = check(gemm_sm90.design(**params))
        assert verdict.ok, (name, verdict.text())


def test_the_catalog_data_imports_nothing_of_the_gpu_path():
    code = ("import sys, tslab.kernels.gemm_sm90_dispatch\n"
            "print(sorted(m for m in sys.modules if m.startswith('tslab.gpu')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"
