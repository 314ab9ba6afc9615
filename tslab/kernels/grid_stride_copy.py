"""Grid-stride copy: one task reads GMEM and writes GMEM, no SMEM and no pipeline.

Resource/task flow (warps in brackets)::

    GmemSource --CopyTask [warps 0..W-1]: load vector -> store vector--> GmemSink

Resources:
    GmemSource  the input tensor seen as 16-byte vectors (consumer work ``load``)
    GmemSink    the output tensor seen the same way (producer work ``store``)
Tasks:
    CopyTask    every thread copies ``unroll`` vectors of ``vector_bytes`` per trip (all loads issued
                before the first store), striding over the whole grid

The CPU design checks ``iterations`` loop trips; the GPU kernel runs as many trips as the tensor needs
(``ceil(vectors / (grid * threads * unroll))``), with ``ctas_per_sm`` blocks per multiprocessor (more than
fit at once: 128 gives 4 trips at 512 MiB, measured faster than a resident-only grid: benchmarks/NOTES.md).
Compiled for one length (``fake_args(shape, dtype)``) the trips and the grid's stride are compile-time
constants; compiled with ``fake_args(shape, dtype, dynamic=True, vector_bytes=...)``, :func:`launch` computes
them at run time and one compiled function copies any whole number of ``vector_bytes`` vectors.
"""

import sys
from dataclasses import dataclass, field
from typing import Any

import cutlass
from cuda.bindings import driver as cuda_driver
from cutlass import cute
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    StageInfo,
    TaskLocalVariable,
    consumer_work,
    producer_work,
)
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint
from .rules import ITEMSIZE, KernelRules, ShapeRule, cutlass_dtype, itemsize

NAME = "grid_stride_copy"
SUMMARY = "grid-stride GMEM -> GMEM copy, one task, vectorised accesses"
PARAMS: dict[str, Any] = {"warps": 4, "iterations": 4, "vector_bytes": 16}


def _shape_rule(params: dict[str, Any], dtype: str) -> ShapeRule:
    per_vector = max(1, params["vector_bytes"] // itemsize(dtype))
    return ShapeRule(("elements",), (per_vector,), (per_vector,),
                     f"1-D, a whole number of {params['vector_bytes']}-byte vectors ({per_vector} {dtype} elements)",
                     ("pad the tensor or lower vector_bytes",))


#: The problems the GPU kernel takes (flat, whole vectors; 512 MiB of int16 when none is given) and its launch
#: options (not part of the TS design): blocks per multiprocessor, vectors per thread per trip.
RULES = KernelRules(dtypes=tuple(ITEMSIZE), default_shape=(256 * 1024 * 1024,), default_dtype="int16",
                    shape=_shape_rule, trip_param="iterations", launch={"ctas_per_sm": 128, "unroll": 4})


@dataclass(kw_only=True)
class GmemSource(MemoryResource):
    """The input tensor as ``(vector, vectors)``; each ``load`` reads ``unroll`` vectors per thread."""

    src: Any = field(default=None)
    vec: cutlass.Constexpr[int] = 8
    unroll: cutlass.Constexpr[int] = 1
    dtype: cutlass.Constexpr[Any] = field(default=cutlass.Int16)
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        vec, unroll, dtype = self.vec, self.unroll, self.dtype
        self.value = TaskLocalVariable(
            dtype=cute.TensorSSA,
            default_factory=lambda: _zeros(vec, unroll, dtype),
            docs="the vectors this thread copies in this iteration",
        )

    @consumer_work(returns=value)
    @cute.jit
    def load(self, stage_info: StageInfo) -> cute.TensorSSA:
        last = cute.size(self.src, mode=[1]) - 1
        regs = cute.make_rmem_tensor((self.vec, self.unroll), self.dtype)
        for j in cutlass.range_constexpr(self.unroll):
            # Clamped at the tail: the store skips those vectors.
            index = cutlass.min(_vector_index(stage_info.loop_offset, j, self.unroll), last)
            regs[None, j].store(self.src[None, index].load())
        return regs.load()


@dataclass(kw_only=True)
class GmemSink(MemoryResource):
    """The output tensor as ``(vector, vectors)``; each ``store`` writes one vector per thread."""

    dst: Any = field(default=None)
    unroll: cutlass.Constexpr[int] = 1

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo, *, value: cute.TensorSSA) -> None:
        regs = cute.make_rmem_tensor(value.shape, value.dtype)
        regs.store(value)
        for j in cutlass.range_constexpr(self.unroll):
            index = _vector_index(stage_info.loop_offset, j, self.unroll)
            if index < cute.size(self.dst, mode=[1]):
                self.dst[None, index].store(regs[None, j].load())


@cute.jit
def _vector_index(offset: cutlass.Int32, j: cutlass.Constexpr, unroll: cutlass.Constexpr) -> cutlass.Int32:
    """Vector ``j`` of this thread in the trip starting at ``offset``: coalesced across the grid."""
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    grid, _, _ = cute.arch.grid_dim()
    return offset + (j * grid + bid) * bdim + tid


def _zeros(vec: int, unroll: int, dtype: Any) -> Any:
    return cute.full((vec, unroll), 0, dtype)


def make_tasks(
    warps: int,
    trips: int,
    stride: int,
    *,
    src: Any = None,
    dst: Any = None,
    vec: int = 8,
    unroll: int = 1,
    dtype: Any = cutlass.Int16,
) -> Blueprint:
    """Resources and the copy task: ``trips`` iterations, each advancing ``stride`` vectors.

    Shared by :func:`build` (CPU check, ``stride`` = one block) and the GPU kernel (``stride`` = the grid).
    """
    source = GmemSource(name="gmem_in", src=src, vec=vec, unroll=unroll, dtype=dtype)
    sink = GmemSink(name="gmem_out", dst=dst, unroll=unroll)

    @schedule
    def copy_schedule(source: MemoryResource, sink: MemoryResource) -> None:
        with domain_loop(0, trips * stride, stride):
            value = source.load()
            sink.store(value=value)

    task = Task(
        name="CopyTask",
        src_resources=[source],
        dst_resources=[sink],
        warp_idx=0,
        num_warps=warps,
        schedule=copy_schedule(source, sink),
    )
    return Blueprint(tasks=[task], graph={sink: [source]})


def build(warps: int = 4, iterations: int = 4, vector_bytes: int = 16) -> Blueprint:
    """Fresh TS objects of the grid-stride copy (``iterations`` loop trips checked)."""
    return make_tasks(warps, iterations, warps * 32, vec=max(1, vector_bytes // 2))


def design(**params: Any):
    """The grid-stride copy design."""
    from ..core.design import Design

    return Design(NAME, params)


# -- GPU ---------------------------------------------------------------------------------------------------


@cute.jit
def _copy_body(src: cute.Tensor, dst: cute.Tensor, warps: cutlass.Constexpr, trips: Any, stride: Any,
               vec: cutlass.Constexpr, unroll: cutlass.Constexpr, pipelines: cutlass.Constexpr) -> None:
    """The kernel's body: the TS task of :func:`make_tasks`, run.

    ``trips`` and ``stride`` are Python ints (static shape) or runtime ``Int32`` (dynamic shape).
    """
    from cutlass.experimental.task_scheduling.task_manager import TaskManager

    from ..core.blueprint import apply_pipeline

    bp = make_tasks(warps, trips, stride, src=src, dst=dst, vec=vec, unroll=unroll, dtype=src.element_type)
    for name, fields in pipelines:
        apply_pipeline(bp, name, dict(fields))
    manager = TaskManager(tasks=bp.tasks, resource_dependency_graph=bp.graph, verbose=False)
    manager.setup_resources_and_tasks()
    manager.run()


@cute.kernel
def _copy_kernel(
    src: cute.Tensor,
    dst: cute.Tensor,
    warps: cutlass.Constexpr,
    trips: cutlass.Constexpr,
    stride: cutlass.Constexpr,
    vec: cutlass.Constexpr,
    unroll: cutlass.Constexpr,
    pipelines: cutlass.Constexpr,
) -> None:
    """Static shape: loop trips and the grid's stride are compile-time constants."""
    _copy_body(src, dst, warps, trips, stride, vec, unroll, pipelines)


@cute.kernel
def _copy_kernel_dynamic(
    src: cute.Tensor,
    dst: cute.Tensor,
    warps: cutlass.Constexpr,
    trips: cutlass.Int32,
    stride: cutlass.Int32,
    vec: cutlass.Constexpr,
    unroll: cutlass.Constexpr,
    pipelines: cutlass.Constexpr,
) -> None:
    """Dynamic shape: loop trips and the grid's stride are kernel arguments, computed by :func:`launch`."""
    _copy_body(src, dst, warps, trips, stride, vec, unroll, pipelines)


@cute.jit
def launch(
    src: cute.Tensor,
    dst: cute.Tensor,
    stream: cuda_driver.CUstream,
    warps: cutlass.Constexpr,
    ctas_per_sm: cutlass.Constexpr,
    sms: cutlass.Constexpr,
    vector_bytes: cutlass.Constexpr,
    unroll: cutlass.Constexpr = 1,
    pipelines: cutlass.Constexpr = (),
) -> None:
    """Host entry: copy ``src`` into ``dst`` (same flat shape) with a grid of ``sms * ctas_per_sm`` blocks.

    With a static shape the trip count and stride are compile-time constants of the kernel; with a dynamic
    one (:func:`fake_args` ``dynamic=True``) they are computed here at run time and passed as kernel
    arguments, so one compiled function serves every length.
    """
    vec = vector_bytes * 8 // src.element_type.width
    src_v = cute.zipped_divide(src, (vec,))
    dst_v = cute.zipped_divide(dst, (vec,))
    vectors = cute.size(src_v, mode=[1])
    threads = warps * 32
    grid = cutlass.min(sms * ctas_per_sm, (vectors + threads * unroll - 1) // (threads * unroll))
    stride = grid * threads * unroll
    trips = (vectors + stride - 1) // stride
    if cutlass.const_expr(isinstance(trips, int) and isinstance(stride, int)):
        _copy_kernel(src_v, dst_v, warps, trips, stride, vec, unroll, pipelines).launch(
            grid=(grid, 1, 1), block=(threads, 1, 1), stream=stream
        )
    else:
        _copy_kernel_dynamic(src_v, dst_v, warps, trips, stride, vec, unroll, pipelines).launch(
            grid=(grid, 1, 1), block=(threads, 1, 1), stream=stream
        )


def fake_args(shape: tuple[int, ...], dtype: str, *, dynamic: bool = False,
              vector_bytes: int = PARAMS["vector_bytes"]) -> tuple:
    """Compile-only stand-ins for ``(src, dst, stream)``: flat ``dtype`` tensors, 16-byte aligned.

    ``dynamic=False``: length ``shape[0]`` (the compiled function serves that length only).
    ``dynamic=True``: a symbolic length, promised to be a whole number of the design's ``vector_bytes``
    vectors (the kernel copies whole vectors only); one compiled function serves every such length.
    """
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    dt = cutlass_dtype(dtype)
    extent = (cute.sym_int(divisibility=max(1, vector_bytes * 8 // dt.width)),) if dynamic else tuple(shape)

    def make() -> Any:
        return make_fake_compact_tensor(dt, extent, stride_order=(0,), assumed_align=16)

    return make(), make(), make_fake_stream()


def launch_constants(params: dict[str, Any], launch_options: dict[str, Any], sms: int, pipelines: tuple = ()) -> tuple:
    """The ``cutlass.Constexpr`` arguments of :func:`launch` after ``(src, dst, stream)``."""
    return (params["warps"], launch_options["ctas_per_sm"], sms, params["vector_bytes"], launch_options["unroll"],
            pipelines)


def run(src: Any, dst: Any, *, stream: Any = None, **options: Any) -> None:
    """Copy torch tensor ``src`` into ``dst`` (same shape and dtype, whole 16-byte vectors) on the GPU.

    ``options``: design parameters (``warps``, ``vector_bytes``) and launch options (``ctas_per_sm``,
    ``unroll``); compiled once per shape, dtype and options.
    """
    from ._torch_run import run_copy

    run_copy(sys.modules[__name__], src, dst, stream, options, flatten=True)
