"""On a GPU: the tuned GEMM package exported with ``pdl=True`` (programmatic dependent launch) reads what the kernel
before it wrote and writes nothing that kernel still reads, whatever design each M picks: a chain of GEMMs, each one's
A the one before's C, matches the reference step by step, equals the same chain through two buffers in turn (each
call overwriting the A of the call before it) bit for bit, and a CUDA graph of the chain replays it bit for bit."""

from __future__ import annotations

import pytest
from package_calls import graph_replay_equals_eager, imported

from tslab.gpu import device

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]

#: (M, N = K): an M in each of the tuned dispatch's ranges (M <= 64 ... 512, then N and K <= 4096, then the default),
#: N = K so that each C is the next call's A.
CHAINS = [(64, 2048), (128, 2048), (192, 2048), (256, 2048), (320, 2048), (384, 2048), (512, 2048), (2048, 2048),
          (1024, 4104)]
STEPS = 6
TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


@pytest.fixture(scope="module", params=["fp16", "bf16"])
def package(request, tmp_path_factory):
    """The exported package of ``tuned(dtype, pdl=True)``, imported, with its dtype."""
    from tslab.gpu.export import export
    from tslab.kernels.gemm_sm90_dispatch import tuned

    out = export(tuned(request.param, pdl=True), tmp_path_factory.mktemp("exports") / f"tslab_gemm_pdl_{request.param}")
    with imported(out) as module:
        yield request.param, module


def _chain_inputs(m: int, n: int, dtype: str, seed: int):
    import torch

    torch.manual_seed(seed)
    tdt = getattr(torch, TORCH_DTYPES[dtype])
    x = torch.randn((m, n), device="cuda", dtype=tdt)
    w = (torch.randn((n, n), device="cuda") / n**0.5).to(tdt)  # keeps each step's values near unit scale
    return x, w


@pytest.mark.parametrize(("m", "n"), CHAINS, ids=str)
def test_a_chain_reads_each_previous_output_and_overwrites_nothing_still_read(package, m, n):
    import torch

    from tslab.gpu.gemm_jobs import check, tolerance

    dtype, pkg = package
    assert pkg.design_for(m, n, n)["design"]["params"]["pdl"] is True
    x, w = _chain_inputs(m, n, dtype, seed=m + n)
    # every step's output in a buffer of its own, poisoned first: a call that read its A before the call before it
    # wrote it would read NaN
    outs = [x] + [torch.full_like(x, float("nan")) for _ in range(STEPS)]
    for i in range(STEPS):
        pkg.run(outs[i], w, outs[i + 1])
    # the same chain through two buffers in turn: each call overwrites the A of the call before it
    ping, pong = x.clone(), torch.empty_like(x)
    for _ in range(STEPS):
        pkg.run(ping, w, pong)
        ping, pong = pong, ping
    torch.cuda.synchronize()
    for i in range(STEPS):
        result = check(outs[i], w, outs[i + 1])
        assert result["unwritten"] == 0 and result["rel_error"] <= tolerance(result, TORCH_DTYPES[dtype]), (i, result)
    assert torch.equal(ping, outs[STEPS])


def test_a_cuda_graph_of_a_chain_replays_it_bit_for_bit(package):
    import torch

    dtype, pkg = package
    chains = [_chain_inputs(m, n, dtype, seed=m) for m, n in CHAINS[::2]]
    outs = [[x] + [torch.empty_like(x) for _ in range(STEPS)] for x, _ in chains]

    def step():
        for (_, w), buffers in zip(chains, outs, strict=True):
            for i in range(STEPS):
                pkg.run(buffers[i], w, buffers[i + 1])

    assert graph_replay_equals_eager(step, [b for buffers in outs for b in buffers[1:]])
