"""TMA copy: a load task fills a multi-stage ``TmaAsync`` SMEM ring, a store task drains it with TMA stores.

Static tile schedule: the grid has ``ctas_per_sm`` blocks per multiprocessor (launch option) and block ``b``
of ``G`` copies tiles ``b, b + G, b + 2G, ...`` (row-major over the tile grid): persistent when every block
fits at once. Tiles past the tensor's edge are clipped by TMA itself (zero-filled loads, dropped stores).

Resource/task flow (warps in brackets)::

    GmemTileSource --LoadTask [warp W]: coords -> acquire -> TMA load -> commit--> SmemTileRing (TmaAsync)
    SmemTileRing   --StoreTask [warps 0..W-1]: wait -> TMA store -> drain read -> release--> GmemTileSink

Resources:
    GmemTileSource  the index of the next tile of this block (consumer work ``coords``)
    SmemTileRing    ``stages`` SMEM tiles guarded by a TmaAsync pipeline (producer ``tma_load``,
                    consumer ``read_tile``)
    GmemTileSink    the output tensor (producer work ``store``: one elected thread issues a TMA store)
Tasks:
    LoadTask  warp W (= store_warps), one elected thread issues the TMA loads
    StoreTask warps 0..W-1, one elected thread issues the TMA stores; all wait before releasing the stage

GPU: compiled for one shape (``fake_args(shape, dtype)``), the tiles per block and per row are compile-time
constants; compiled with ``fake_args(shape, dtype, dynamic=True)``, :func:`launch` computes them at run time
and one compiled function copies any rows x cols with cols a multiple of 8 (16-byte rows, as TMA needs).
"""

import sys
from dataclasses import dataclass, field
from typing import Any

import cutlass
import cutlass.experimental.cuda as tma_cuda
from cuda.bindings import driver as cuda_driver
from cutlass import cute, pipeline
from cutlass.experimental.task_scheduling.memory import SmemAllocation
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    StageInfo,
    TaskLocalVariable,
    WorkAttr,
    consumer_work,
    producer_work,
)
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint
from .rules import KernelRules, ShapeRule, cutlass_dtype, itemsize

NAME = "tma_copy"
SUMMARY = "pipelined TMA copy: load task -> TmaAsync SMEM ring -> store task"
PARAMS: dict[str, Any] = {"stages": 4, "tile_rows": 64, "tile_cols": 128, "tiles": 4, "store_warps": 4}
ELEMENT_BYTES = 2  # fp16


def _shape_rule(params: dict[str, Any], dtype: str) -> ShapeRule:
    per_16 = 16 // itemsize(dtype)
    return ShapeRule(("rows", "cols"), (1, per_16), (1, per_16),
                     f"2-D, rows a multiple of 16 bytes ({per_16} {dtype} elements) for TMA", ("", "pad the rows"))


#: The problems the GPU kernel takes (2-D 16-bit, 16-byte rows; 16384 x 16384 fp16 when none is given) and its
#: launch option: blocks per multiprocessor. Up to what fits in SMEM (2-3 for the default ring) the grid is
#: persistent; 64 (about 4 tiles per block at 16384^2) measured fastest.
RULES = KernelRules(dtypes=("float16", "bfloat16", "int16"), default_shape=(16384, 16384), default_dtype="float16",
                    shape=_shape_rule, trip_param="tiles", launch={"ctas_per_sm": 64})


@cute.jit
def _tile_origin(row: cutlass.Int32, tiles_across: Any, tile_rows: cutlass.Constexpr,
                 tile_cols: cutlass.Constexpr) -> tuple:
    """TMA coordinates (innermost first: column, row) of the tile at ``row`` of this block's tile stream.

    Block ``b`` of ``G`` owns tiles ``b, b + G, ...``; its stream is ``tile_rows`` rows per tile.
    ``tiles_across``: a Python int (CPU) or an ``Int32`` (kernel: a constant, or a kernel argument).
    """
    bid, _, _ = cute.arch.block_idx()
    grid, _, _ = cute.arch.grid_dim()
    tile = row // tile_rows * grid + bid
    return ((tile % tiles_across) * tile_cols, (tile // tiles_across) * tile_rows)


@dataclass(kw_only=True)
class GmemTileSource(MemoryResource):
    """GMEM input seen as this block's stream of tiles, ``tile_rows`` rows each; owns no memory, no pipeline."""

    tile_rows: cutlass.Constexpr[int] = 64
    row: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.row = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0),
                                     docs="first row of the tile the load task fetches next, in this block's stream")

    @consumer_work(returns=row)
    @cute.jit
    def coords(self, stage_info: StageInfo) -> cutlass.Int32:
        return stage_info.loop_offset


@dataclass(kw_only=True)
class SmemTileRing(MemoryResource):
    """``stages`` SMEM tiles of ``tile_rows x tile_cols`` fp16, guarded by a TmaAsync pipeline."""

    tile_rows: cutlass.Constexpr[int] = 64
    tile_cols: cutlass.Constexpr[int] = 128
    stages: cutlass.Constexpr[int] = 4
    tiles_across: Any = 1  # tiles per row of the tensor: a Python int on the CPU, an Int32 in the kernel
    buffer: cutlass.Constexpr[str] = "ring_buf"
    tma_desc: Any = field(default=None)
    tile: Any = field(init=False, default=None)
    _alloc: cutlass.Constexpr[Any] = field(init=False, default=None)
    reading: Any = field(init=False, default=None)  # the stage the store task is copying out
    def __post_init__(self) -> None:
        self._alloc = SmemAllocation(self.buffer, size_bytes=self.tile_bytes * self.stages, alignment=1024)

    @property
    def tile_bytes(self) -> int:
        return self.tile_rows * self.tile_cols * ELEMENT_BYTES

    @property
    def tile_elems(self) -> int:
        return self.tile_rows * self.tile_cols

    def get_smem_requirements(self) -> list[SmemAllocation]:
        # One tile per pipeline stage: an edited num_stages resizes the ring.
        self._alloc.size_bytes = self.tile_bytes * self.pipeline_config.num_stages
        return [self._alloc]

    def trace_placeholders(self) -> None:
        """Give runtime fields values of their final types before TS traces the schedules (GPU path only)."""
        null = cutlass.inttoptr(0, mem_space=3, dtype=cutlass.Float16)
        self.tile = cutlass.Array(null, dtype=cutlass.Float16, shape=(self._ring_elems(),), addrspace=3)
        self.reading = cutlass.Int32(0)

    def _ring_elems(self) -> int:
        return self.pipeline_config.num_stages * self.tile_elems

    @cute.jit
    def _bind_smem(self, stage_info: StageInfo) -> None:
        self.tile = cutlass.Array(
            stage_info.context.smem_base.data_ptr() + self._alloc.offset,
            dtype=cutlass.Float16,
            shape=(self._ring_elems(),),
            addrspace=3,
        )

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    @cute.jit
    def bind_load(self, stage_info: StageInfo) -> None:
        self._bind_smem(stage_info)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    @cute.jit
    def bind_read(self, stage_info: StageInfo) -> None:
        self._bind_smem(stage_info)

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: StageInfo, *, row: cutlass.Int32) -> None:
        from cutlass.experimental import primitives as prims

        if prims.elect_sync():
            prims.cp_async_bulk_tensor_shared_cta_global(
                self.tile.subview(stage_info.stage_idx * self.tile_elems),
                self.tma_desc,
                _tile_origin(row, self.tiles_across, self.tile_rows, self.tile_cols),
                stage_info.barrier,
            )

    @consumer_work
    @cute.jit
    def read_tile(self, stage_info: StageInfo) -> None:
        # The wait made the loaded tile visible; the TMA engine reads it in GmemTileSink.store, which
        # follows in the same iteration of the same task and reads the stage index from here.
        self.reading = stage_info.stage_idx


@dataclass(kw_only=True)
class GmemTileSink(MemoryResource):
    """GMEM output tensor; ``store`` copies the current stage of the ring to it with one TMA store."""

    ring: cutlass.Constexpr[Any] = field(default=None)
    tma_desc: Any = field(default=None)
    store_threads: cutlass.Constexpr[int] = 32

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo) -> None:
        from cutlass.experimental import primitives as prims

        ring = self.ring
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            if prims.elect_sync():
                prims.cp_async_bulk_tensor_global_shared_cta(
                    self.tma_desc,
                    ring.tile.subview(ring.reading * ring.tile_elems),
                    _tile_origin(
                        stage_info.loop_offset, ring.tiles_across, ring.tile_rows, ring.tile_cols
                    ),
                )
                cute.arch.cp_async_bulk_commit_group()
                cute.arch.cp_async_bulk_wait_group(0, read=True)  # the stage may be refilled after this
            cute.arch.sync_warp()
        if self.store_threads > 32:
            cute.arch.barrier(barrier_id=1, number_of_threads=self.store_threads)


def tma_pipeline(stages: int, tile_bytes: int, consumer_threads: int) -> PipelineConfig:
    """The ring's TmaAsync pipeline: one elected producer thread, ``consumer_threads`` consumers."""
    return PipelineConfig.create_tma_async_pipeline_cfg(
        num_stages=stages,
        num_bytes=tile_bytes,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_threads),
    )


def make_tasks(
    stages: int,
    tile_rows: int,
    tile_cols: int,
    trips: int,
    store_warps: int,
    *,
    tiles_across: int = 1,
    desc_in: Any = None,
    desc_out: Any = None,
) -> Blueprint:
    """Resources and tasks of the copy: ``trips`` tiles per block. Shared by :func:`build` and the kernel."""
    src = GmemTileSource(name="gmem_in", tile_rows=tile_rows)
    ring = SmemTileRing(
        name="smem_ring",
        tile_rows=tile_rows,
        tile_cols=tile_cols,
        stages=stages,
        tiles_across=tiles_across,
        tma_desc=desc_in,
        pipeline_config=tma_pipeline(stages, tile_rows * tile_cols * ELEMENT_BYTES, store_warps * 32),
    )
    sink = GmemTileSink(name="gmem_out", ring=ring, tma_desc=desc_out, store_threads=store_warps * 32)

    @schedule
    def load_schedule(src: MemoryResource, ring: MemoryResource) -> None:
        ring.bind_load()
        with domain_loop(0, trips * tile_rows, tile_rows):
            row = src.coords()
            ring.acquire()
            ring.tma_load(row=row)
            ring.commit()

    @schedule
    def store_schedule(ring: MemoryResource, sink: MemoryResource) -> None:
        ring.bind_read()
        with domain_loop(0, trips * tile_rows, tile_rows):
            ring.wait()
            ring.read_tile()
            sink.store()
            ring.release()

    load = Task(
        name="LoadTask",
        src_resources=[src],
        dst_resources=[ring],
        warp_idx=store_warps,
        num_warps=1,
        schedule=load_schedule(src, ring),
    )
    store = Task(
        name="StoreTask",
        src_resources=[ring],
        dst_resources=[sink],
        warp_idx=0,
        num_warps=store_warps,
        schedule=store_schedule(ring, sink),
    )
    return Blueprint(tasks=[load, store], graph={ring: [src], sink: [ring]}, smem_resources=[ring])


def build(stages: int = 4, tile_rows: int = 64, tile_cols: int = 128, tiles: int = 4,
          store_warps: int = 4) -> Blueprint:
    """Fresh TS objects of the TMA copy, ``tiles`` tiles per block checked."""
    return make_tasks(stages, tile_rows, tile_cols, tiles, store_warps)


def design(**params: Any):
    """The TMA copy design (see the module docstring for the flow)."""
    from ..core.design import Design

    return Design(NAME, params)


# -- GPU ---------------------------------------------------------------------------------------------------


@cute.jit
def _copy_body(desc_in: Any, desc_out: Any, stages: cutlass.Constexpr, tile_rows: cutlass.Constexpr,
               tile_cols: cutlass.Constexpr, trips: Any, store_warps: cutlass.Constexpr, tiles_across: Any,
               pipelines: cutlass.Constexpr) -> None:
    """The kernel's body: TS resources and tasks of :func:`make_tasks`, laid out in SMEM and run.

    ``trips`` and ``tiles_across`` are Python ints (static shape) or runtime ``Int32`` (dynamic shape).
    """
    from cutlass.experimental import primitives as prims
    from cutlass.experimental.task_scheduling.memory import SmemAllocator
    from cutlass.experimental.task_scheduling.task_manager import TaskManager

    from ..core.blueprint import apply_pipeline

    if prims.elect_sync():
        prims.prefetch_tensormap(desc_in.get_ptr())
        prims.prefetch_tensormap(desc_out.get_ptr())
    bp = make_tasks(
        stages,
        tile_rows,
        tile_cols,
        trips,
        store_warps,
        # A resource field TS traces keeps one type: Int32 always (constant-folded when the shape is static).
        tiles_across=cutlass.Int32(tiles_across),
        desc_in=desc_in.get_ptr(),
        desc_out=desc_out.get_ptr(),
    )
    for name, fields in pipelines:
        apply_pipeline(bp, name, dict(fields))
    ring = bp.smem_resources[0]
    ring.trace_placeholders()
    allocator = SmemAllocator()
    allocator.add_resource(ring)
    allocator.compute_layout()
    manager = TaskManager(
        tasks=bp.tasks, resource_dependency_graph=bp.graph, smem_allocator=allocator, verbose=False
    )
    manager.setup_resources_and_tasks()
    prims.fence_mbarrier_init()
    prims.barrier_cta_sync(0)
    manager.run()


@cute.kernel
def _copy_kernel(
    desc_in: cutlass.GridConstant[tma_cuda.TensorMap],
    desc_out: cutlass.GridConstant[tma_cuda.TensorMap],
    stages: cutlass.Constexpr,
    tile_rows: cutlass.Constexpr,
    tile_cols: cutlass.Constexpr,
    trips: cutlass.Constexpr,
    store_warps: cutlass.Constexpr,
    tiles_across: cutlass.Constexpr,
    pipelines: cutlass.Constexpr,
) -> None:
    """Static shape: tiles per block and tiles per row are compile-time constants."""
    _copy_body(desc_in, desc_out, stages, tile_rows, tile_cols, trips, store_warps, tiles_across, pipelines)


@cute.kernel
def _copy_kernel_dynamic(
    desc_in: cutlass.GridConstant[tma_cuda.TensorMap],
    desc_out: cutlass.GridConstant[tma_cuda.TensorMap],
    stages: cutlass.Constexpr,
    tile_rows: cutlass.Constexpr,
    tile_cols: cutlass.Constexpr,
    trips: cutlass.Int32,
    store_warps: cutlass.Constexpr,
    tiles_across: cutlass.Int32,
    pipelines: cutlass.Constexpr,
) -> None:
    """Dynamic shape: tiles per block and tiles per row are kernel arguments, computed by :func:`launch`."""
    _copy_body(desc_in, desc_out, stages, tile_rows, tile_cols, trips, store_warps, tiles_across, pipelines)


@cute.jit
def launch(
    src: cute.Tensor,
    dst: cute.Tensor,
    stream: cuda_driver.CUstream,
    stages: cutlass.Constexpr,
    tile_rows: cutlass.Constexpr,
    tile_cols: cutlass.Constexpr,
    store_warps: cutlass.Constexpr,
    ctas_per_sm: cutlass.Constexpr,
    sms: cutlass.Constexpr,
    pipelines: cutlass.Constexpr = (),
) -> None:
    """Host entry: copy row-major 2-D 16-bit ``src`` into ``dst`` by tiles, ``sms * ctas_per_sm`` blocks.

    With a static shape (Python ints) the tile counts are compile-time constants of the kernel; with a
    dynamic one (:func:`fake_args` ``dynamic=True``) they are computed here at run time and passed as
    kernel arguments, so one compiled function serves every shape.
    """
    # Row-major: columns innermost (spelled out, a dynamic row stride hides the order from TMA).
    desc_in = tma_cuda.create_tensor_map_tiled_from_view(
        src, box_dims=(tile_rows, tile_cols), swizzle=tma_cuda.TensorMapSwizzle.none, stride_order=(1, 0)
    )
    desc_out = tma_cuda.create_tensor_map_tiled_from_view(
        dst, box_dims=(tile_rows, tile_cols), swizzle=tma_cuda.TensorMapSwizzle.none, stride_order=(1, 0)
    )
    rows, cols = src.shape
    tiles_across = (cols + tile_cols - 1) // tile_cols
    tiles = tiles_across * ((rows + tile_rows - 1) // tile_rows)
    grid = cutlass.min(sms * ctas_per_sm, tiles)
    trips = (tiles + grid - 1) // grid
    block = ((store_warps + 1) * 32, 1, 1)
    if cutlass.const_expr(isinstance(trips, int) and isinstance(tiles_across, int)):
        _copy_kernel(
            desc_in, desc_out, stages, tile_rows, tile_cols, trips, store_warps, tiles_across, pipelines
        ).launch(grid=(grid, 1, 1), block=block, stream=stream)
    else:
        _copy_kernel_dynamic(
            desc_in, desc_out, stages, tile_rows, tile_cols, trips, store_warps, tiles_across, pipelines
        ).launch(grid=(grid, 1, 1), block=block, stream=stream)


#: What a dynamic compile promises of each tensor's extents (src, dst: rows x cols): cols a multiple of 8, the
#: 16-byte row stride TMA needs. Tensors passed to a dynamic kernel are marked the same way
#: (:func:`tslab.compiling.args.tensor_args`).
DYNAMIC_DIVISIBILITY = ((1, 16 // ELEMENT_BYTES), (1, 16 // ELEMENT_BYTES))


def fake_args(shape: tuple[int, ...], dtype: str, *, dynamic: bool = False) -> tuple:
    """Compile-only stand-ins for ``(src, dst, stream)``: row-major 2-D ``dtype`` tensors, 16-byte aligned.

    ``dynamic=False``: extents ``shape`` (the compiled function serves that shape only). ``dynamic=True``:
    symbolic extents (``shape`` only names the rank), rows any count and columns a multiple of 8, the
    16-byte row stride TMA needs for 16-bit elements; one compiled function serves every such shape.
    """
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    dt = cutlass_dtype(dtype)

    def make(divisibility: tuple[int, int]) -> Any:
        extents = tuple(cute.sym_int(divisibility=d) for d in divisibility) if dynamic else tuple(shape)
        return make_fake_compact_tensor(dt, extents, stride_order=(1, 0), assumed_align=16)

    src, dst = DYNAMIC_DIVISIBILITY
    return make(src), make(dst), make_fake_stream()


def launch_constants(params: dict[str, Any], launch_options: dict[str, Any], sms: int, pipelines: tuple = ()) -> tuple:
    """The ``cutlass.Constexpr`` arguments of :func:`launch` after ``(src, dst, stream)``."""
    return (params["stages"], params["tile_rows"], params["tile_cols"], params["store_warps"],
            launch_options["ctas_per_sm"], sms, pipelines)


def run(src: Any, dst: Any, *, stream: Any = None, **options: Any) -> None:
    """Copy the 2-D 16-bit torch tensor ``src`` into ``dst`` on the GPU with TMA.

    ``options``: design parameters (``stages``, ``tile_rows``, ``tile_cols``, ``store_warps``) and launch
    options (``ctas_per_sm``); compiled once per shape, dtype and options.
    """
    from ._torch_run import run_copy

    run_copy(sys.modules[__name__], src, dst, stream, options)
