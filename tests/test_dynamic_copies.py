"""The copy kernels compiled once with symbolic extents: one compiled function serves every shape.

On the CPU: the compile-only stand-ins carry the kernels' real divisibility, and the compiled function (its
exported C interface and its kernel) takes the extents at run time. On a GPU: one compile copies shapes
that are and are not whole tiles, exactly.
"""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
from cutlass import cute
from cutlass.cute.typing import SymInt

from tslab.compiling.args import divisibility_of, tensor_args
from tslab.compiling.compile import compile_target, fake_args, parse_ptxas, preload_runtime, tensor_marks
from tslab.compiling.targets import resolve
from tslab.gpu import device
from tslab.kernels import grid_stride_copy, tma_copy


def dynamic_target(design, shape, dtype, launch=None, *, dynamic=True):
    return dataclasses.replace(resolve(design, shape, dtype, launch), dynamic=dynamic)


@pytest.mark.parametrize(("design", "shape", "dtype", "divisibility"), [
    (tma_copy.design(), (64, 128), "float16", [1, 8]),  # columns: 16-byte rows for TMA
    (grid_stride_copy.design(), (4096,), "int16", [8]),  # whole 16-byte vectors
    (grid_stride_copy.design(vector_bytes=8), (4096,), "float32", [2]),  # the design's vector_bytes
], ids=["tma_copy", "grid_stride_int16", "grid_stride_8B_float32"])
def test_dynamic_stand_ins_promise_what_the_kernel_needs(design, shape, dtype, divisibility):
    src, dst, _ = fake_args(dynamic_target(design, shape, dtype))
    for fake in (src, dst):
        assert all(isinstance(s, SymInt) for s in fake.shape)
        assert [s.divisibility for s in fake.shape] == divisibility
    # What the run and bench jobs mark a dynamic target's tensors with: the same promises.
    assert tensor_marks(dynamic_target(design, shape, dtype)) == (tuple(divisibility),) * 2
    static = dynamic_target(design, shape, dtype, dynamic=False)
    assert tensor_marks(static) is None
    row_major = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
    for mine in fake_args(static)[:2]:  # static stand-ins: the shape itself, row-major
        assert (tuple(mine.shape), tuple(mine.stride)) == (shape, row_major)


def test_a_tensor_is_refused_when_its_extent_breaks_the_promise():
    np = pytest.importorskip("numpy")
    marks = divisibility_of(fake_args(dynamic_target(grid_stride_copy.design(), (4096,), "int16"))[:2])
    src, _ = tensor_args((np.zeros(24, np.int16), np.zeros(24, np.int16)), marks)
    assert "?{div=8}" in str(src)
    with pytest.raises(RuntimeError, match="not divisible by the divisibility"):
        tensor_args((np.zeros(20, np.int16), np.zeros(20, np.int16)), marks)  # 40 bytes: not whole vectors


def compile_dynamic(t, scratch, capfd):
    fn = compile_target(t, 132, f"--gpu-arch sm_90a --keep-ptx remarks{{ptx}} --dump-dir {scratch}")
    return fn, parse_ptxas("".join(capfd.readouterr()))


@pytest.mark.parametrize(("design", "shape", "dtype", "rank", "instructions"), [
    (tma_copy.design(), (4096, 4096), "float16", 2,
     ["cp.async.bulk.tensor.2d.shared::cta.global", "cp.async.bulk.tensor.2d.global.shared::cta"]),
    (grid_stride_copy.design(), (1 << 20,), "int16", 1, ["ld.global.v4.b32", "st.global.v4.b32"]),
], ids=["tma_copy", "grid_stride_copy"])
def test_one_dynamic_compile_takes_its_extents_at_run_time(tmp_path, capfd, design, shape, dtype, rank,
                                                          instructions):
    fn, report = compile_dynamic(dynamic_target(design, shape, dtype), tmp_path, capfd)
    # The exported C interface: each tensor argument carries its extents, one int32 per mode.
    preload_runtime()
    fn.export_to_c(file_path=str(tmp_path), file_name="copy", function_prefix="copy")
    header = (tmp_path / "copy.h").read_text()
    for name in ("src", "dst"):
        struct = re.search(r"typedef struct \{([^}]*)\} copy_Tensor_" + name + "_t;", header)
        assert struct and f"int32_t dynamic_shapes[{rank}];" in struct.group(1)
    # The kernel: the runtime-derived counts (trips, and tiles per row or the grid's stride) are two
    # 32-bit kernel parameters, where the static kernel has them as constants.
    ptx = fn.artifacts.PTX
    entry = re.search(r"\.entry (\w+)\(([^)]*)\)", ptx)
    assert "_copy_kernel_dynamic" in entry.group(1)
    assert entry.group(2).count(".param .u32") == 2
    for instruction in instructions:
        assert instruction in ptx
    assert report["registers"] and report["spill_stores"] == 0 and report["spill_loads"] == 0


# -- on a GPU ----------------------------------------------------------------------------------------------

GPU_CASES = [
    # tma_copy tiles are 64 x 128: whole tiles, ragged ones, one smaller than a tile, ragged both ways. One
    # block per multiprocessor, so the runtime trip count varies too (16 tiles per block at 4096 x 4096).
    (tma_copy.design(), {"ctas_per_sm": 1}, "float16", [(4096, 4096), (1000, 264), (3, 8), (777, 1032)]),
    # grid-stride: 16-byte vectors of int16, from one vector to 30 trips of a 132-block grid.
    (grid_stride_copy.design(), {"ctas_per_sm": 1, "unroll": 2}, "int16",
     [(1 << 20,), (8,), (123456,), (8 * 1_000_003,)]),
]


@pytest.mark.gpu
@pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")
@pytest.mark.parametrize(("design", "launch", "dtype", "shapes"), GPU_CASES, ids=["tma_copy", "grid_stride_copy"])
def test_one_dynamic_compile_copies_every_shape_exactly(design, launch, dtype, shapes):
    import torch
    from cuda.bindings import driver as cu

    info = device()
    t = dynamic_target(design, shapes[0], dtype, launch)
    fn = cute.compile(t.launcher.launch, *fake_args(t), *t.launch_constants(info.sm_count),
                      options=f"--gpu-arch {info.arch}")
    stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
    marks = tensor_marks(t)  # dynamic layouts: the compiled function reads each call's extents from its tensors

    for shape in shapes:
        resolve(design, shape, dtype)  # a shape the library accepts for this kernel
        bits = torch.randint(-2**15, 2**15 - 1, shape, dtype=torch.int16, device="cuda")  # any 16-bit pattern
        src = bits.view(getattr(torch, dtype))
        dst = torch.full_like(bits, -7).view(getattr(torch, dtype))  # poisoned
        fn(*tensor_args((src, dst), marks), stream)
        torch.cuda.synchronize()
        assert torch.equal(dst.view(torch.int16), bits), f"{shape}: the copy differs from its input"
