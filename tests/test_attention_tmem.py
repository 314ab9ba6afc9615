"""The attention-like TMEM chain: P over S's columns is safe only with the PV warp's UmmaUmma ring; O over S races."""

from __future__ import annotations

import pytest

import tslab
from tslab.errors import DesignError
from tslab.kernels import attention_tmem


def test_p_takes_s_columns_and_ts_proves_it_safe():
    d = attention_tmem.design()
    v = tslab.check(d)
    assert v.status == "SAFE", v.text()
    kinds = {name: cfg["pipeline_type"] for name, cfg in d.pipelines().items()}
    assert kinds == {"tmem_s": "UmmaAsync", "tmem_p": "AsyncUmma", "tmem_o": "UmmaAsync", "pv_done": "UmmaUmma"}
    tmem = v.tmem_layout.set_index("name")
    assert tmem.loc["s", "offset"] == tmem.loc["p", "offset"]
    assert (tmem.loc["s", "phase"], tmem.loc["p", "phase"]) == (0, 1) and tmem.loc["s", "alias_group"] == 0
    assert (v.tmem_total, v.tmem_alias_savings) == (128 + 128, 64)
    assert v.summary()["tmem_alias_savings"] == 64
    assert v.barrier_bytes == 4 * 16 and v.smem_total == 0  # the rings' barriers are SMEM all the same


def test_without_the_ring_the_next_s_overwrites_p_while_it_is_read():
    v = tslab.check(attention_tmem.design(pv_ring=False))
    assert v.status == "RACE"
    assert any("MmaSTask" in e.message and "tmem_p" in e.message and "tmem[" in e.message for e in v.errors), v.errors


def test_o_over_s_races_whatever_the_ring_does():
    v = tslab.check(attention_tmem.design(alias="s_o"))
    assert v.status == "RACE" and v.errors[0].where.startswith("resource 'tmem_")


def test_only_the_aliased_layout_fits_a_256_wide_kv_tile_with_d_256():
    wide = {"kv_tile": 256, "head_dim": 256}
    assert tslab.check(attention_tmem.design(**wide)).tmem_total == 512
    v = tslab.check(attention_tmem.design(**wide, alias="none"))
    assert v.status == "CAPACITY" and v.tmem_total == 256 + 128 + 256
    assert "TMEM usage (640 columns) exceeds hardware capacity (512 columns)" in v.errors[0].message


@pytest.mark.parametrize(("params", "match"), [({"alias": "s_pp"}, "did you mean 's_p'"),
                                               ({"kv_tile": 96}, "param 'kv_tile'.*64, 128 or 256"),
                                               ({"pv_ring": "yes"}, "param 'pv_ring'")])
def test_invalid_params_are_named(params, match):
    with pytest.raises(DesignError, match=match):
        attention_tmem.build(**params)
