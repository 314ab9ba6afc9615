"""On a GPU: an exported gemm_sm90 package serves every shape, refuses the rest by name, and works as a
torch custom op inside ``torch.compile``."""

from __future__ import annotations

import pytest
from package_calls import imported

from tslab.gpu import device

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]

SHAPES = [(4096, 4096, 4096), (1, 64, 64), (1, 8192, 8192), (2, 8, 8),
          (100, 200, 56), (777, 1024, 4104), (3000, 4200, 520), (128, 8192, 8192)]


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    from tslab.gpu.export import export
    from tslab.kernels import gemm_sm90

    out = export(gemm_sm90.design(), tmp_path_factory.mktemp("exports") / "tslab_gemm_pkg")
    with imported(out) as module:
        yield module


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_package_matches_fp32_reference(package, shape):
    import torch

    m, n, k = shape
    a = torch.randn((m, k), device="cuda", dtype=torch.float16)
    b = torch.randn((n, k), device="cuda", dtype=torch.float16)
    c = package.gemm(a, b)
    ref = a.float() @ b.float().T
    theirs = float((torch.mm(a, b.T).float() - ref).norm() / ref.norm())
    ours = float((c.float() - ref).norm() / ref.norm())
    assert not c.isnan().any() and ours <= 2 * theirs + 2.0**-11, (ours, theirs)


def test_package_refuses_a_shape_by_name(package):
    import torch

    a = torch.randn((64, 60), device="cuda", dtype=torch.float16)
    with pytest.raises(package.ExportedKernelError, match="K = 60 is not a multiple of 8"):
        package.gemm(a, a)


def test_custom_op_inside_torch_compile(package):
    import torch

    op = getattr(torch.ops, package.__name__).gemm
    w1 = torch.randn(512, 256, device="cuda", dtype=torch.float16) / 16
    w2 = torch.randn(128, 512, device="cuda", dtype=torch.float16) / 16

    def mlp(x: torch.Tensor) -> torch.Tensor:
        return op(torch.relu(op(x, w1)), w2)

    x = torch.randn(300, 256, device="cuda", dtype=torch.float16)
    out = torch.compile(mlp, fullgraph=True)(x)
    ref = torch.relu(x.float() @ w1.float().T) @ w2.float().T
    assert out.shape == (300, 128)
    assert float((out.float() - ref).norm() / ref.norm()) < 1e-2
    assert torch.allclose(out, mlp(x))


def test_custom_op_has_gradients(package):
    import torch

    op = getattr(torch.ops, package.__name__).gemm
    a = torch.randn(64, 128, device="cuda", dtype=torch.float16, requires_grad=True)
    b = torch.randn(256, 128, device="cuda", dtype=torch.float16, requires_grad=True)
    op(a, b).float().sum().backward()
    ones = torch.ones(64, 256, device="cuda", dtype=torch.float16)
    assert torch.allclose(a.grad, ones @ b.detach(), rtol=1e-2, atol=1e-2)
    assert torch.allclose(b.grad, ones.T @ a.detach(), rtol=1e-2, atol=1e-2)


def test_decode_preset_exports_with_its_cluster(tmp_path):
    """A package of ``gemm_sm90.DECODE`` launches pairs of blocks (cluster_m=2) and is correct on every shape."""
    import torch

    from tslab.gpu.export import export
    from tslab.kernels import gemm_sm90

    out = export(gemm_sm90.design(**gemm_sm90.DECODE), tmp_path / "tslab_gemm_decode")
    with imported(out) as decode:
        for m, n, k in SHAPES:
            a = torch.randn((m, k), device="cuda", dtype=torch.float16)
            b = torch.randn((n, k), device="cuda", dtype=torch.float16)
            ref = a.float() @ b.float().T
            theirs = float((torch.mm(a, b.T).float() - ref).norm() / ref.norm())
            ours = float((decode.gemm(a, b).float() - ref).norm() / ref.norm())
            assert ours <= 2 * theirs + 2.0**-11, ((m, n, k), ours, theirs)


def test_a_cuda_graph_replays_gemm_and_run_as_eager(package):
    import torch
    from package_calls import graph_replay_equals_eager

    a = torch.randn((300, 520), device="cuda", dtype=torch.float16)
    b = torch.randn((1024, 520), device="cuda", dtype=torch.float16)
    c = torch.empty((300, 1024), device="cuda", dtype=torch.float16)
    assert graph_replay_equals_eager(lambda: package.run(a, b, c), [c])
    held = {}

    def allocate():  # gemm() allocates its output from the graph's pool during capture
        held["c"] = package.gemm(a, b)

    allocate()
    torch.cuda.synchronize()
    eager = held["c"].clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        allocate()
    held["c"].fill_(-7)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(held["c"], eager) and torch.equal(eager, c)


@pytest.mark.parametrize("how", ["stream=", "current stream"])
def test_the_call_launches_on_the_callers_stream(package, how):
    import torch
    from package_calls import launches_on

    a = torch.randn((4096, 4096), device="cuda", dtype=torch.float16)
    b = torch.randn((4096, 4096), device="cuda", dtype=torch.float16)
    c = torch.empty((4096, 4096), device="cuda", dtype=torch.float16)

    def call(stream):
        if how == "stream=":
            package.run(a, b, c, stream=stream)
        else:
            with torch.cuda.stream(stream):
                package.run(a, b, c)

    assert launches_on(call, c) == {"waited_for_its_stream": True, "written_after": True}


def test_two_threads_on_two_streams_each_get_their_products(package):
    import torch
    from package_calls import two_threads_on_two_streams

    pairs = [(torch.randn((777, 1024), device="cuda", dtype=torch.float16),
              torch.randn((2048, 1024), device="cuda", dtype=torch.float16)) for _ in range(2)]
    wants = [package.gemm(a, b) for a, b in pairs]
    outs = [torch.empty_like(w) for w in wants]
    torch.cuda.synchronize()

    def call(thread):
        outs[thread].fill_(-7)
        package.run(*pairs[thread], outs[thread])
        return outs[thread], wants[thread]

    assert two_threads_on_two_streams(call) == [True, True]


def test_refusals_keep_their_names_and_fixes(package):
    import torch

    a = torch.randn((64, 128), device="cuda", dtype=torch.float16)
    cases = [
        ((a, a.float(), a.new_empty((64, 64))), "b: dtype torch.float32 != float16; convert it (.to(torch.float16))"),
        ((a, a[:, :64].contiguous(), a.new_empty((64, 64))),
         "b: shape (64, 64): b is N x K and must have a's K=128 columns"),
        ((a, a, a.new_empty((64, 32))), "c: shape (64, 32) != (M, N) = (64, 64)"),
        ((a.t(), a, a.new_empty((128, 64))), "a: must be a contiguous CUDA tensor aligned to 16 bytes"),
        ((a.cpu(), a, a.new_empty((64, 64))), "a: must be a contiguous CUDA tensor aligned to 16 bytes"),
        ((a[:, 1:121], a[:, :120].contiguous(), a.new_empty((64, 64))), "a: must be a contiguous CUDA tensor"),
        ((a[:0], a, a.new_empty((0, 64))), "(M, N, K): shape (0, 64, 128): M = 0 is below 1"),
    ]
    for args, message in cases:
        with pytest.raises(package.ExportedInputError) as caught:
            package.run(*args)
        assert str(caught.value).startswith(message), (str(caught.value), message)
