"""The Hopper GEMM design on the CPU: defaults, the aliased variant, and invalid parameters refused by name."""

from __future__ import annotations

import pytest

import tslab
from tslab.errors import DesignError
from tslab.kernels import gemm_sm90


def test_default_is_persistent_with_a_dedicated_c_tile_and_safe():
    d = gemm_sm90.design()
    v = tslab.check(d)
    assert v.status == "SAFE" and d.alias_groups() == []
    assert {"work_queue"} <= set(d.resources())
    assert v.smem_total == 3 * (128 + 256) * 64 * 2 + 128 * 256 * 2


def test_aliased_variant_saves_the_c_tile_and_is_safe():
    v = tslab.check(gemm_sm90.design(**gemm_sm90.ALIASED))
    assert v.status == "SAFE" and v.alias_savings == 128 * 128 * 2


@pytest.mark.parametrize(("params", "match"), [
    ({"persistent": True, "epilogue": "aliased"}, "param 'epilogue'.*persistent=True"),
    ({"tile_k": 32}, "param 'tile_k'"),
    ({"mma_warpgroups": 3}, "param 'mma_warpgroups'"),
    ({"tile_m": 64, "mma_warpgroups": 2}, "param 'tile_m'"),
    ({"tile_n": 96}, "param 'tile_n'"),
    ({"tile_m": 128, "tile_n": 256, "mma_warpgroups": 1}, "256 fp32 accumulator registers"),
    ({"stages": 1}, "param 'stages'"),
    ({"cluster_m": 2}, "param 'cluster_m'.*not built yet"),
    ({"dtype": "fp32"}, "param 'dtype'"),
    ({"raster": "rows"}, "did you mean 'row'"),
])
def test_invalid_combinations_name_the_param(params, match):
    with pytest.raises(DesignError, match=match):
        gemm_sm90.build(**params)
