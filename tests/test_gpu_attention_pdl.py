"""On a GPU: the tuned attention package exported with ``pdl=True`` (programmatic dependent launch) reads what the
kernel before it wrote and writes nothing that kernel still reads, whatever design each call picks: a chain of calls,
each one's Q the one before's O, matches the fp32 reference step by step, equals the same chain through two buffers in
turn bit for bit, and a CUDA graph of the chain replays it bit for bit."""

from __future__ import annotations

import math

import pytest
from package_calls import graph_replay_equals_eager, imported
from test_gpu_attention import _problems, reference

from tslab.gpu import device

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]

#: (batch, seqlen, heads, causal): both sides of the tuned dispatch's seqlen_k bounds, causal and not.
CHAINS = [(2, 1000, 4, False), (2, 1000, 4, True), (1, 4096, 8, False), (1, 4096, 8, True), (1, 9000, 2, True)]
STEPS = 4


@pytest.fixture(scope="module", params=["bf16", "fp16"])
def package(request, tmp_path_factory):
    """The exported package of ``tuned(dtype, pdl=True)``, imported, with its dtype."""
    from tslab.gpu.export import export
    from tslab.kernels.attention_sm90_dispatch import tuned

    out = export(tuned(request.param, pdl=True), tmp_path_factory.mktemp("exports") / f"tslab_attn_pdl_{request.param}")
    with imported(out) as module:
        yield request.param, module


def _inputs(b: int, s: int, h: int, dtype: str, seed: int):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    q, k, v = (torch.randn((b, s, h, 128), device="cuda", dtype=tdt, generator=gen) for _ in range(3))
    return q, k, v


@pytest.mark.parametrize(("b", "s", "h", "causal"), CHAINS, ids=str)
def test_a_chain_reads_each_previous_output_and_overwrites_nothing_still_read(package, b, s, h, causal):
    import torch

    dtype, pkg = package
    q, k, v = _inputs(b, s, h, dtype, seed=s + h)
    # every step's O in a buffer of its own, poisoned first: a call that read its Q before the call before it wrote
    # it would read NaN
    outs = [q] + [torch.full_like(q, float("nan")) for _ in range(STEPS)]
    lses = [torch.full((b, h, s), float("nan"), device="cuda") for _ in range(STEPS)]
    for i in range(STEPS):
        pkg.run(outs[i], k, v, outs[i + 1], lses[i], causal=causal)
    ping, pong, lse = q.clone(), torch.empty_like(q), torch.empty((b, h, s), device="cuda")
    for _ in range(STEPS):
        pkg.run(ping, k, v, pong, lse, causal=causal)
        ping, pong = pong, ping
    torch.cuda.synchronize()
    for i in range(STEPS):
        ref_o, ref_lse = reference(outs[i], k, v, causal, 1 / math.sqrt(128))
        assert not _problems(outs[i + 1], lses[i], ref_o, ref_lse, dtype), (i, _problems(outs[i + 1], lses[i], ref_o,
                                                                                         ref_lse, dtype))
    assert torch.equal(ping, outs[STEPS])


def test_a_cuda_graph_of_a_chain_replays_it_bit_for_bit(package):
    import torch

    dtype, pkg = package
    chains = [(_inputs(b, s, h, dtype, seed=s), causal) for b, s, h, causal in CHAINS[:4]]
    outs = [[q] + [torch.empty_like(q) for _ in range(STEPS)] for (q, _, _), _ in chains]
    lses = [torch.empty((q.shape[0], q.shape[2], q.shape[1]), device="cuda") for (q, _, _), _ in chains]

    def step():
        for ((_, k, v), causal), buffers, lse in zip(chains, outs, lses, strict=True):
            for i in range(STEPS):
                pkg.run(buffers[i], k, v, buffers[i + 1], lse, causal=causal)

    assert graph_replay_equals_eager(step, [b for buffers in outs for b in buffers[1:]])
