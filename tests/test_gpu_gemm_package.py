"""On a GPU: an exported gemm_sm90 package serves every shape, refuses the rest by name, and works as a
torch custom op inside ``torch.compile``."""

from __future__ import annotations

import importlib
import sys

import pytest

from tslab.gpu import device

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]

SHAPES = [(4096, 4096, 4096), (1, 64, 64), (1, 8192, 8192), (2, 8, 8),
          (100, 200, 56), (777, 1024, 4104), (3000, 4200, 520), (128, 8192, 8192)]


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    from tslab.gpu.export import export
    from tslab.kernels import gemm_sm90

    out = export(gemm_sm90.design(), tmp_path_factory.mktemp("exports") / "tslab_gemm_pkg")
    sys.path.insert(0, str(out.parent))
    try:
        yield importlib.import_module(out.name)
    finally:
        sys.path.remove(str(out.parent))


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
    sys.path.insert(0, str(out.parent))
    try:
        decode = importlib.import_module(out.name)
        for m, n, k in SHAPES:
            a = torch.randn((m, k), device="cuda", dtype=torch.float16)
            b = torch.randn((n, k), device="cuda", dtype=torch.float16)
            ref = a.float() @ b.float().T
            theirs = float((torch.mm(a, b.T).float() - ref).norm() / ref.norm())
            ours = float((decode.gemm(a, b).float() - ref).norm() / ref.norm())
            assert ours <= 2 * theirs + 2.0**-11, ((m, n, k), ours, theirs)
    finally:
        sys.path.remove(str(out.parent))
