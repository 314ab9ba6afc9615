"""On a GPU: a bench sweep runs, checks and times every surviving point, one GPU process at a time."""

from __future__ import annotations

import pytest

import tslab
from tslab.gpu import device

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]


def test_bench_sweep_times_the_survivors_and_records_the_device(tmp_path):
    store = tmp_path / "sweep.jsonl"
    r = tslab.sweep("tma_copy", {"stages": [2, 16]}, measure="bench", executor=1, store=store, quiet=True)
    assert r.table["status"].tolist() == ["ok", "pruned"]
    ok = r.table.iloc[0]
    assert ok["median_us"] > 0 and ok["p10_us"] <= ok["median_us"] <= ok["p90_us"]
    assert ok["gbps"] > 0 and ok["ratio"] > 0 and ok["registers"] > 0
    assert ok["device"].startswith("0: ") and device().name in ok["device"]
    again = tslab.sweep("tma_copy", {"stages": [2, 16]}, measure="bench", executor=1, store=store, quiet=True)
    assert again.skipped == 2
