"""The attention check the GPU jobs and the benchmark share, on CPU tensors: it passes the fp32 reference itself,
and catches an O off by more than a few roundings, unwritten elements, a wrong LSE, and a row that sees no key
without LSE = -inf."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from tslab.gpu.attention_jobs import check, flops, reference_slice, wrong  # noqa: E402


def _problem(b=2, s_q=40, s_k=56, h=4, h_kv=2, d=16, dtype=torch.bfloat16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn((b, s_q, h, d), generator=gen).to(dtype)
    k = torch.randn((b, s_k, h_kv, d), generator=gen).to(dtype)
    v = torch.randn((b, s_k, h_kv, d), generator=gen).to(dtype)
    return q, k, v


def _exact(q, k, v, causal, scale):
    """O and LSE computed slice by slice with the reference itself, O rounded to the inputs' dtype."""
    b, s_q, h, _ = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((b, h, s_q))
    for bi in range(b):
        for hi in range(h):
            ref_o, ref_lse = reference_slice(q, k, v, causal, scale, bi, hi)
            o[bi, :, hi], lse[bi, hi] = ref_o.to(q.dtype), ref_lse
    return o, lse


@pytest.mark.parametrize("causal", [False, True])
def test_the_reference_itself_passes(causal):
    q, k, v = _problem()
    o, lse = _exact(q, k, v, causal, 0.25)
    result = check(q, k, v, o, lse, causal, 0.25)
    assert wrong(result, "bfloat16") is None, result


def test_grouped_query_heads_read_their_own_kv_head():
    q, k, v = _problem(h=8, h_kv=2)
    o, lse = _exact(q, k, v, False, 0.3)
    # heads 0-3 read K/V head 0 and heads 4-7 head 1: O of head 7 computed from K/V head 0 is wrong
    o[:, :, 7] = _exact(q, k[:, :, [0, 0]], v[:, :, [0, 0]], False, 0.3)[0][:, :, 7]
    assert "relative error" in wrong(check(q, k, v, o, lse, False, 0.3), "bfloat16")


def test_an_o_off_by_a_few_roundings_and_an_unwritten_element_are_caught():
    """The limit is four roundings of O's dtype: 1.6% in bf16, 0.2% in fp16."""
    q, k, v = _problem()
    o, lse = _exact(q, k, v, False, 0.25)
    assert wrong(check(q, k, v, o * 1.01, lse, False, 0.25), "bfloat16") is None
    assert "relative error" in wrong(check(q, k, v, o * 1.03, lse, False, 0.25), "bfloat16")
    q16, k16, v16 = _problem(dtype=torch.float16)
    o16, lse16 = _exact(q16, k16, v16, False, 0.25)
    assert wrong(check(q16, k16, v16, o16, lse16, False, 0.25), "float16") is None
    assert "relative error" in wrong(check(q16, k16, v16, o16 * 1.01, lse16, False, 0.25), "float16")
    o[1, 3, 2, 5] = float("nan")
    assert wrong(check(q, k, v, o, lse, False, 0.25), "bfloat16") == "1 elements of O unwritten"


def test_a_wrong_lse_and_a_row_that_sees_no_key_are_caught():
    q, k, v = _problem(s_q=70, s_k=20)  # causal, bottom-right: the first 50 query rows see no key
    o, lse = _exact(q, k, v, True, 0.25)
    assert math.isinf(lse[0, 0, 0]) and wrong(check(q, k, v, o, lse, True, 0.25), "bfloat16") is None
    off = lse.clone()
    off[0, 0, 60] += 0.01
    assert "LSE" in wrong(check(q, k, v, o, off, True, 0.25), "bfloat16")
    unmasked = lse.clone()
    unmasked[0, 0, 0] = 0.0
    assert "LSE" in wrong(check(q, k, v, o, unmasked, True, 0.25), "bfloat16")


def test_flops_count_both_gemms_and_halve_when_causal():
    assert flops((4, 4096, 4096, 32, 32), 128, False) == 4 * 4 * 32 * 4096 * 4096 * 128
    assert flops((4, 4096, 4096, 32, 8), 128, True) == 2 * 4 * 32 * 4096 * 4096 * 128
