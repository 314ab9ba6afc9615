"""Checks of an exported attention package (its test_kernel.py): loads every design without compiling and picks
them by causal (and seqlen_k, for a dispatch); on a GPU of its arch with torch, matches an fp32 torch reference (O
and LSE), causal and not, and refuses what it cannot take by name."""

import importlib
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
kernel = importlib.import_module(Path(__file__).resolve().parent.name)
#: (batch, seqlen_q, seqlen_k, heads, heads_kv): tails of both sequences, one query row, GQA 1, 4 and 8, more
#: queries than keys (causal rows that see no key).
EXAMPLES = [tuple(problem) for problem in kernel.META["self_test"]["examples"]]
on_gpu = pytest.mark.skipif(kernel.gpu_arch() != kernel.ARCH, reason="needs a GPU of the exported arch")


def test_loads_every_design_without_compiling():
    assert [callable(kernel.load(i)) for i in range(len(kernel.DESIGNS))] == [True] * len(kernel.DESIGNS)


def test_design_for_follows_the_causal_argument_and_seqlen_k():
    picks = kernel.META["self_test"].get("picks") or [[c, 1, i] for i, c in enumerate(kernel.VARIANTS["values"])]
    for causal, seqlen_k, index in picks:
        assert kernel.design_for(causal, seqlen_k) is kernel.DESIGNS[index]
        assert kernel.DESIGNS[index]["design"]["params"][kernel.VARIANTS["param"]] is causal


def reference(q, k, v, causal, scale):
    """fp32 attention: O (b, s_q, h, d) and LSE (b, h, s_q); K/V heads repeated for GQA; the causal mask aligned
    bottom-right; a row that sees no key gives O = 0 and LSE = -inf."""
    import torch

    s_q, h, s_k, h_kv = q.shape[1], q.shape[2], k.shape[1], k.shape[2]
    qf, kf, vf = (t.float().transpose(1, 2) for t in (q, k, v))
    kf, vf = (t.repeat_interleave(h // h_kv, dim=1) for t in (kf, vf))
    scores = qf @ kf.transpose(-1, -2) * scale
    if causal:
        rows = torch.arange(s_q, device=q.device)[:, None]
        cols = torch.arange(s_k, device=q.device)[None, :]
        scores = scores.masked_fill(cols > rows + s_k - s_q, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    return (torch.exp(scores - lse[..., None]).nan_to_num(0.0) @ vf).transpose(1, 2), lse


@on_gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", EXAMPLES, ids=str)
def test_matches_an_fp32_reference(shape, causal):
    torch = pytest.importorskip("torch")
    b, s_q, s_k, h, h_kv = shape
    dtype = getattr(torch, kernel.DTYPE)
    q = torch.randn((b, s_q, h, kernel.HEAD_DIM), device="cuda", dtype=dtype)
    k = torch.randn((b, s_k, h_kv, kernel.HEAD_DIM), device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    o, lse = kernel.attention(q, k, v, causal=causal)
    ref_o, ref_lse = reference(q, k, v, causal, 1 / math.sqrt(kernel.HEAD_DIM))
    unit = {"float16": 2.0**-11, "bfloat16": 2.0**-8}[kernel.DTYPE]
    assert not o.isnan().any()
    assert ((o.float() - ref_o).norm() / ref_o.norm().clamp_min(1e-30)).item() <= 4 * unit
    seen = ref_lse.isfinite()
    assert (lse[~seen] == float("-inf")).all()
    assert ((lse[seen] - ref_lse[seen]).abs() <= 1e-3 * (1 + ref_lse[seen].abs())).all()


@on_gpu
def test_refuses_what_it_cannot_take_by_name():
    torch = pytest.importorskip("torch")
    q = torch.randn((1, 64, 4, kernel.HEAD_DIM), device="cuda", dtype=getattr(torch, kernel.DTYPE))
    with pytest.raises(kernel.ExportedInputError, match="not a multiple of heads_kv=3"):
        kernel.attention(q, q[:, :, :3].contiguous(), q[:, :, :3].contiguous())
    with pytest.raises(kernel.ExportedInputError, match=r"not the compact row-major strides .*contiguous\(\)"):
        kernel.attention(q.transpose(1, 2), q, q)
