"""BenchResult from recorded rows (no GPU): bandwidth for copies, TFLOP/s and % of peak for GEMMs."""

from __future__ import annotations

import pytest

from tslab.gpu.bench import BenchResult


def _row(**extra):
    return {"kernel": "gemm_sm90", "shape": [4096, 4096, 4096], "dtype": "float16", "params": {}, "launch": {},
            "bytes": 3 * 2 * 4096 * 4096, "graphs": False, "kernel_us": [200.0, 190.0, 210.0],
            "torch_us": [220.0, 220.0, 220.0], "rel_error": 2e-4, "workspaces": 2, **extra}


def test_gemm_rows_report_tflops_ratio_to_torch_and_percent_of_peak():
    flops = 2 * 4096**3
    t = BenchResult([_row(flops=flops)]).table.iloc[0]
    assert t.tflops == pytest.approx(flops / 200.0 / 1e6)
    assert t.torch_tflops == pytest.approx(flops / 220.0 / 1e6)
    assert t.ratio == pytest.approx(1.1)
    assert t.pct_peak == pytest.approx(100 * t.tflops / 989.0)


def test_copy_rows_have_no_tflops():
    assert "tflops" not in BenchResult([_row()]).table
