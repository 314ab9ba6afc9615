"""Checks of an exported GEMM package (its test_kernel.py): loads every design without compiling, picks them by
M (and K) as its dispatch says; on a GPU of its arch, computes what torch does and refuses a shape it cannot take."""

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
kernel = importlib.import_module(Path(__file__).resolve().parent.name)
EXAMPLES = [tuple(shape) for shape in kernel.META["self_test"]["examples"]]
#: ((M, N, K), the design tslab's Dispatch picked for it), on both sides of each bound.
PICKS = [(tuple(shape), index) for shape, index in kernel.META["self_test"].get("picks", [])]
on_gpu = pytest.mark.skipif(kernel.gpu_arch() != kernel.ARCH, reason="needs a GPU of the exported arch")


def test_loads_every_design_without_compiling():
    assert all(callable(kernel.load(i)) for i in range(len(kernel.DESIGNS)))


@pytest.mark.parametrize(("shape", "index"), PICKS, ids=str)
def test_design_for_follows_the_dispatch(shape, index):
    assert kernel.design_for(*shape) is kernel.DESIGNS[index]


@on_gpu
@pytest.mark.parametrize("shape", EXAMPLES, ids=str)
def test_matches_torch(shape):
    import torch

    dtype = getattr(torch, kernel.DTYPE)
    m, n, k = shape
    a = torch.randn((m, k), device="cuda", dtype=dtype)
    b = torch.randn((n, k), device="cuda", dtype=dtype)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    kernel.run(a, b, c)
    ref = a.float() @ b.float().T
    assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-2


@on_gpu
def test_refuses_a_shape_it_cannot_take():
    import torch

    bad = torch.empty(3, device="cuda", dtype=getattr(torch, kernel.DTYPE))
    with pytest.raises(kernel.ExportedInputError, match="matrices"):
        kernel.run(bad, bad, bad)
