"""On a GPU: exported copy packages (compiled once with runtime shapes) copy every shape their rules allow,
bit for bit, refuse the rest by name, and work as torch custom ops inside ``torch.compile``."""

from __future__ import annotations

import pytest
from package_calls import imported

from tslab.gpu import device

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]

CASES = {
    "tma_copy": [(4096, 4096), (1000, 264), (3, 8), (777, 1032)],
    "grid_stride_copy": [(1 << 20,), (8,), (123456,), (3 * 2**20 + 8,)],
}


@pytest.fixture(scope="module", params=sorted(CASES))
def package(request, tmp_path_factory):
    from tslab.gpu.export import export
    from tslab.kernels import kernel_module

    out = export(kernel_module(request.param).design(), tmp_path_factory.mktemp("exports") / f"{request.param}_pkg")
    with imported(out) as module:
        yield request.param, module


def test_copies_every_shape_exactly(package):
    import torch

    kernel, module = package
    dtype = getattr(torch, module.DTYPE)
    for shape in CASES[kernel]:
        src = (torch.randn(shape, device="cuda") * 100).to(dtype)
        dst = torch.full_like(src, -7)
        module.run(src, dst)
        torch.cuda.synchronize()
        assert torch.equal(src, dst), shape


def test_refuses_a_shape_by_name(package):
    import torch

    kernel, module = package
    bad = torch.empty((5, 12) if kernel == "tma_copy" else (12,), device="cuda", dtype=getattr(torch, module.DTYPE))
    with pytest.raises(module.ExportedKernelError, match="is not a multiple of"):
        module.copy(bad)


def test_custom_op_inside_torch_compile(package):
    import torch

    kernel, module = package
    op = getattr(torch.ops, module.__name__).copy
    shape = CASES[kernel][1]
    x = (torch.randn(shape, device="cuda") * 10).to(getattr(torch, module.DTYPE))
    out = torch.compile(lambda t: op(t) + 1, fullgraph=True)(x)
    assert torch.equal(out, x + 1)


def test_a_cuda_graph_replays_the_call_as_eager(package):
    import torch
    from package_calls import graph_replay_equals_eager

    kernel, module = package
    src = (torch.randn(CASES[kernel][1], device="cuda") * 100).to(getattr(torch, module.DTYPE))
    dst = torch.empty_like(src)
    assert graph_replay_equals_eager(lambda: module.run(src, dst), [dst])
    assert torch.equal(dst, src)


@pytest.mark.parametrize("how", ["stream=", "current stream"])
def test_the_call_launches_on_the_callers_stream(package, how):
    import torch
    from package_calls import launches_on

    kernel, module = package
    src = (torch.randn(CASES[kernel][0], device="cuda") * 100).to(getattr(torch, module.DTYPE))
    dst = torch.empty_like(src)

    def call(stream):
        if how == "stream=":
            module.run(src, dst, stream=stream)
        else:
            with torch.cuda.stream(stream):
                module.run(src, dst)

    assert launches_on(call, dst) == {"waited_for_its_stream": True, "written_after": True}
    assert torch.equal(dst, src)


def test_two_threads_on_two_streams_each_get_their_copies(package):
    import torch
    from package_calls import two_threads_on_two_streams

    kernel, module = package
    dtype = getattr(torch, module.DTYPE)
    srcs = [(torch.randn(CASES[kernel][3], device="cuda") * 100).to(dtype) for _ in range(2)]
    dsts = [torch.empty_like(s) for s in srcs]
    torch.cuda.synchronize()

    def call(thread):
        dsts[thread].fill_(-7)
        module.run(srcs[thread], dsts[thread])
        return dsts[thread], srcs[thread]

    assert two_threads_on_two_streams(call) == [True, True]
