"""On a GPU: the export of ``gemm_sm90_dispatch.tuned()`` launches the design its rules give each M and K (both
sides of every bound) and each matches the fp32 reference within twice torch.mm's own error plus one rounding of C; the
torch custom op too, inside ``torch.compile``."""

from __future__ import annotations

import pytest
from package_calls import imported

from tslab.core.dispatch import bounds_of
from tslab.gpu import device
from tslab.kernels.gemm_sm90_dispatch import BY_M

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]

#: The largest M of each of tuned()'s rules (None for the last).
M_BOUNDS = [bounds_of(bound, "M")["M"] for bound, _ in BY_M]
#: M on both sides of each of tuned()'s M bounds, and well inside the first and the last range.
MS = sorted({1, 64, 8192} | {bound + side for bound in M_BOUNDS if bound for side in (0, 1)})
#: A problem (M, K) in each of tuned()'s ranges (N = 1024): its M bound at K = 520 (the N and K rule's at its K
#: bound), and twice the largest M bound for the open range.
ONE_MK_PER_RANGE = [(bound or 2 * M_BOUNDS[-2], 4096 if "K" in bounds_of(rule, "M") else 520)
                    for bound, (rule, _) in zip(M_BOUNDS, BY_M, strict=True)]
#: (N, K): a large decode-like pair, and K tails (520 = 8 K tiles of 64 + 8; 4104 = 64 x 64 + 8) with ragged N; K
#: on both sides of the N and K rule's bound (4096, 4104), and N just past it.
NKS = [(8192, 8192), (1000, 520), (264, 4104), (264, 4096), (4104, 520)]
TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


@pytest.fixture(scope="module", params=["fp16", "bf16"])
def package(request, tmp_path_factory):
    """The exported package of ``tuned(dtype)``, imported, with its dtype."""
    from tslab.gpu.export import export
    from tslab.kernels.gemm_sm90_dispatch import tuned

    out = export(tuned(request.param), tmp_path_factory.mktemp("exports") / f"tslab_gemm_tuned_{request.param}")
    with imported(out) as module:
        yield request.param, module


def _checked(a, b, c, dtype: str) -> None:
    from tslab.gpu.gemm_jobs import check, tolerance

    result = check(a, b, c)
    assert result["unwritten"] == 0 and result["rel_error"] <= tolerance(result, dtype), result


@pytest.mark.parametrize(("n", "k"), NKS, ids=str)
@pytest.mark.parametrize("m", MS)
def test_each_m_launches_its_design_and_matches_the_reference(package, monkeypatch, m, n, k):
    import torch

    from tslab.gpu.gemm_jobs import operands
    from tslab.kernels.gemm_sm90_dispatch import tuned

    dtype, pkg = package
    index, design = tuned(dtype).pick((m, n, k))
    assert pkg.design_for(m, n, k) is pkg.DESIGNS[index] and pkg.DESIGNS[index]["design"] == design.to_dict()
    launched = []

    def spy(i: int):
        fn = pkg.load(i)
        return lambda *args: launched.append(i) or fn(*args)

    # A call takes each design's function from _FUNCTIONS (loaded once); spies there see which one it launches.
    monkeypatch.setattr(pkg, "_FUNCTIONS", {i: spy(i) for i in range(len(pkg.DESIGNS))})
    a, b, c = operands((m, n, k), TORCH_DTYPES[dtype], seed=m * 7 + n + k)
    pkg.run(a, b, c)
    torch.cuda.synchronize()
    assert launched == [index]
    _checked(a, b, c, TORCH_DTYPES[dtype])


def test_the_torch_op_serves_every_range_inside_torch_compile(package):
    import torch

    from tslab.gpu.gemm_jobs import operands

    dtype, pkg = package
    op = getattr(torch.ops, pkg.__name__).gemm

    def product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return op(a, b)

    compiled = torch.compile(product, fullgraph=True)
    for m in (128, 129, 193, 321, 385):
        a, b, _ = operands((m, 1024, 520), TORCH_DTYPES[dtype], seed=m)
        for c in (op(a, b), compiled(a, b)):
            torch.cuda.synchronize()
            _checked(a, b, c, TORCH_DTYPES[dtype])


def test_one_cuda_graph_replays_a_launch_of_every_range_as_eager(package):

    from package_calls import graph_replay_equals_eager

    from tslab.gpu.gemm_jobs import operands
    from tslab.kernels.gemm_sm90_dispatch import tuned

    dtype, pkg = package
    problems = [operands((m, 1024, k), TORCH_DTYPES[dtype], seed=m) for m, k in ONE_MK_PER_RANGE]
    picked = [pkg.DESIGNS.index(pkg.design_for(a.shape[0], b.shape[0], a.shape[1])) for a, b, _ in problems]
    assert picked == list(tuned(dtype).rule_designs)

    def step():
        for a, b, c in problems:
            pkg.run(a, b, c)

    assert graph_replay_equals_eager(step, [c for _, _, c in problems])
    for a, b, c in problems:
        _checked(a, b, c, TORCH_DTYPES[dtype])
