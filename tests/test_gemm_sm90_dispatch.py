"""The measured gemm_sm90 dispatch by M: the table as data, each design SAFE, one dtype, no GPU imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tslab import check
from tslab.kernels import gemm_sm90
from tslab.kernels.gemm_sm90_dispatch import BY_M, PAIRS_128, tuned


def test_the_table_is_decode_then_pairs_then_the_defaults():
    assert [bound for bound, _ in BY_M] == [128, 256, None]
    assert BY_M[0][1] == gemm_sm90.DECODE and BY_M[1][1] == PAIRS_128 and BY_M[2][1] == {}
    assert PAIRS_128 == {"tile_m": 128, "tile_n": 128, "mma_warpgroups": 2, "stages": 5, "cluster_m": 2}


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_tuned_builds_each_design_for_the_dtype(dtype):
    dispatch = tuned(dtype)
    assert dispatch.designs == (gemm_sm90.design(**gemm_sm90.DECODE, dtype=dtype),
                                gemm_sm90.design(**PAIRS_128, dtype=dtype), gemm_sm90.design(dtype=dtype))
    assert [dispatch.pick((m, 8192, 8192))[0] for m in (128, 129, 256, 257)] == [0, 1, 1, 2]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_every_design_is_safe(index):
    verdict = check(tuned().designs[index])
    assert verdict.ok, verdict.text()


def test_the_catalog_data_imports_nothing_of_the_gpu_path():
    code = ("import sys, tslab.kernels.gemm_sm90_dispatch\n"
            "print(sorted(m for m in sys.modules if m.startswith('tslab.gpu')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"
