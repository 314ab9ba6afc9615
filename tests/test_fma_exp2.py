"""The FMA-pipe exp2's constants (``tslab.kernels.fma_exp2``) hold the error the softmax relies on.

The kernel's arithmetic is replayed step by step in float32 (round to nearest, the FMAs fused): the cubic must stay
within 7.5e-5 relative of 2^x wherever the softmax's exponents fall (x <= 0 after the row max is subtracted), below
a sixteenth of fp16's rounding. The GPU tests check the kernel's outputs; this one catches a wrong coefficient or
clamp on the CPU.
"""

from __future__ import annotations

import numpy as np

from tslab.kernels import fma_exp2


def _replayed(x: np.ndarray) -> np.ndarray:
    x = np.maximum(x.astype(np.float32), np.float32(fma_exp2._LOWEST))
    rounded = x + np.float32(fma_exp2._ROUND)
    f = x - (rounded - np.float32(fma_exp2._ROUND))
    coef = [np.float32(c) for c in fma_exp2.EXP2_CUBIC]
    p = np.full_like(f, coef[3])
    for c in coef[2::-1]:
        p = (p.astype(np.float64) * f + c).astype(np.float32)  # one rounding, as FFMA
    bits = (rounded.view(np.int32).astype(np.int64) << 23) + p.view(np.int32).astype(np.int64)
    return (bits & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


def test_the_cubic_is_within_its_bound_over_the_softmax_range():
    x = np.concatenate([np.linspace(-125.0, 0.0, 1_000_001), -np.random.default_rng(0).exponential(4.0, 200_000)])
    x = x[x >= -125.0].astype(np.float32)
    got, want = _replayed(x).astype(np.float64), np.exp2(x.astype(np.float64))
    assert (np.abs(got - want) / want).max() < 7.6e-5


def test_below_the_clamp_the_result_is_tiny_and_positive():
    got = _replayed(np.array([-125.5, -200.0, -1e30], dtype=np.float32))
    assert ((got > 0) & (got < 2.4e-38)).all()
