"""Checks of an exported copy package (its test_kernel.py): loads without compiling; on a GPU of its arch,
copies exactly and refuses a shape it cannot take."""

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
kernel = importlib.import_module(Path(__file__).resolve().parent.name)
EXAMPLES = [tuple(shape) for shape in kernel.META["self_test"]["examples"]]
on_gpu = pytest.mark.skipif(kernel.gpu_arch() != kernel.ARCH, reason="needs a GPU of the exported arch")


def test_loads_without_compiling():
    assert callable(kernel.load())


@on_gpu
@pytest.mark.parametrize("shape", EXAMPLES, ids=str)
def test_copies_exactly(shape):
    import torch

    src = (torch.randn(shape, device="cuda") * 100).to(getattr(torch, kernel.DTYPE))
    dst = torch.full_like(src, -7)
    kernel.run(src, dst)
    torch.cuda.synchronize()
    assert torch.equal(src, dst)


@on_gpu
def test_refuses_a_shape_it_cannot_take():
    import torch

    bad = torch.empty(3, 3, 3, device="cuda", dtype=getattr(torch, kernel.DTYPE))
    with pytest.raises(kernel.ExportedInputError, match=r"shape|dimensions"):
        kernel.run(bad, bad)
