"""The resources of :mod:`tslab.kernels.gemm_sm90`: the SMEM A/B ring, the staged C tile, C (and
:class:`tslab.kernels.gemm_common.GmemAB`, A and B in GMEM, shared with the Blackwell GEMM).

Each resource owns its SMEM allocations and its work (TMA loads, wgmma, the stmatrix epilogue, TMA stores); the
kernel module builds the pipelines and the tasks' schedules over them, and the same objects are checked on the
CPU and traced into the GPU kernel (:mod:`tslab.kernels.gemm_sm90_launch`). ``Geometry`` carries what only the
GPU path knows (tile counts, CuTe layouts); on the CPU it is None.
"""

from dataclasses import dataclass, field
from typing import Any

import cutlass
import cutlass.utils.hopper_helpers as sm90
from cutlass import cute, tensor_utils
from cutlass.experimental.task_scheduling.memory import SmemAllocation
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    StageInfo,
    TaskLocalVariable,
    consumer_work,
    producer_work,
)
from cutlass.experimental.task_scheduling.task import Task


@cute.jit
def tile_coords(geo: cutlass.Constexpr, stage_info: StageInfo) -> tuple:
    """(m, n) tile of this block now: the WorkQueue's tile when persistent, else one tile per block.

    The WorkQueue's scheduler hands out tiles in plain order (M fastest, no swizzle: its swizzle rounds the tile
    columns up to whole groups, and the padded, empty tiles push real ones into another wave); ``raster='grouped'``
    re-orders that sequence here, a permutation of the real tiles only."""
    if cutlass.const_expr(geo.persistent):
        m, n, _ = stage_info.work_tile.tile_idx
        if cutlass.const_expr(geo.raster == "row"):
            return m, n
        cluster_rows = (geo.tiles_m + geo.cluster_m - 1) // geo.cluster_m
        pm = m // geo.cluster_m
        # Up to one group of rows, the grouped order is the scheduler's own: nothing to re-order.
        if cluster_rows > geo.raster_group // geo.cluster_m:
            pm, n = grouped_tile(pm + n * cluster_rows, cluster_rows, geo.raster_group // geo.cluster_m,
                                 geo.tiles_per_group)
        return pm * geo.cluster_m + m % geo.cluster_m, n
    if cutlass.const_expr(geo.cluster_m == 1):
        bid, _, _ = cute.arch.block_idx()
        return block_tile(bid, geo.tiles_m, geo.tiles_n, geo.raster, geo.raster_group)
    # Clusters: cluster_m consecutive blocks (one cluster) take cluster_m M-adjacent tiles of one column.
    bid, _, _ = cute.arch.block_idx()
    pm, n = block_tile(bid // geo.cluster_m, (geo.tiles_m + geo.cluster_m - 1) // geo.cluster_m, geo.tiles_n,
                       geo.raster, geo.raster_group // geo.cluster_m)
    return pm * geo.cluster_m + bid % geo.cluster_m, n


@cute.jit
def block_tile(bid: cutlass.Int32, tiles_m: cutlass.Constexpr, tiles_n: cutlass.Constexpr,
               raster: cutlass.Constexpr, group: cutlass.Constexpr) -> tuple:
    """(m, n) tile of block ``bid``: ``row`` walks N fastest; ``grouped`` walks ``group`` M-tiles per column."""
    m = bid // tiles_n
    n = bid % tiles_n
    if cutlass.const_expr(raster == "grouped"):
        per_group = group * tiles_n
        first_m = bid // per_group * group
        rows = cutlass.min(tiles_m - first_m, group)
        m = first_m + bid % per_group % rows
        n = bid % per_group // rows
    return m, n


@cute.jit
def grouped_tile(linear: cutlass.Int32, rows: Any, group: cutlass.Constexpr, per_group: Any) -> tuple:
    """(m, n) of the ``linear``-th tile walked ``group`` rows at a time, column by column: ``per_group`` is
    ``group`` x the tile columns (an int, or a fast divisor the kernel makes once for runtime extents), so every
    tile but those of the last, partial group costs no runtime division (the load warp asks for each K tile)."""
    first_m = linear // per_group * group
    rest = linear % per_group
    m = first_m + (rest & (group - 1))  # group is a power of two: no division, and none the compiler can merge
    n = rest >> (group.bit_length() - 1)  # with the last group's
    last_rows = rows - first_m
    if last_rows < group:
        m = first_m + rest % last_rows
        n = rest // last_rows
    return m, n


@cute.jit
def _smem_tensor(stage_info: StageInfo, offset: cutlass.Constexpr, dtype: cutlass.Constexpr, layout: Any) -> Any:
    ptr = cute.make_ptr(dtype, stage_info.context.smem_base.data_ptr() + offset, cute.AddressSpace.smem,
                        assumed_align=1024)
    return cute.make_tensor(cute.recast_ptr(ptr, layout.inner), layout.outer)


@dataclass(frozen=True)
class Geometry:
    """Shape of one launch: tile counts and K tiles (Python ints for a static problem, runtime values for a
    dynamic one), dtype, and the CuTe SMEM layouts (GPU path only)."""

    tiles_m: int
    tiles_n: int
    k_tiles: int
    raster: str
    dtype: Any
    raster_group: int
    persistent: bool = False
    cluster_m: int = 1
    pingpong: bool = False
    c_m_major: bool = False
    tiles_per_group: Any = None
    a_layout: Any = None
    b_layout: Any = None
    epi_layout: Any = None
    epi_tile: Any = None


class MmaTask(Task):
    """A task of MMA warpgroups that owns its fp32 accumulators (a register tensor, GPU path only): TS hands them
    to its resources' work as ``stage_info.task_cache``, so each ping-pong warpgroup's task multiplies into and
    stages from accumulators of its own."""

    def __init__(self, *args: Any, accumulators: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.accumulators = accumulators

    @cute.jit
    def make_task_cache(self) -> Any:
        return self.accumulators


@dataclass(kw_only=True)
class SmemAB(MemoryResource):
    """``stages`` A tiles (tile_m x tile_k) and B tiles (tile_n x tile_k) in SMEM, filled by TMA, read by wgmma."""

    tile_m: cutlass.Constexpr[int] = 128
    tile_n: cutlass.Constexpr[int] = 128
    tile_k: cutlass.Constexpr[int] = 64
    element_bytes: cutlass.Constexpr[int] = 2
    geo: cutlass.Constexpr[Any] = None
    tma_atom_a: Any = None
    tma_atom_b: Any = None
    mA: Any = None
    mB: Any = None
    tiled_mma: Any = None
    work_queue: cutlass.Constexpr[Any] = None
    _a: cutlass.Constexpr[Any] = field(init=False, default=None)
    _b: cutlass.Constexpr[Any] = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._a = SmemAllocation("a_buf", size_bytes=0, alignment=1024)
        self._b = SmemAllocation("b_buf", size_bytes=0, alignment=1024)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        stages = self.pipeline_config.num_stages
        self._a.size_bytes = stages * self.tile_m * self.tile_k * self.element_bytes
        self._b.size_bytes = stages * self.tile_n * self.tile_k * self.element_bytes
        return [self._a, self._b]

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: StageInfo, *, k: cutlass.Int32) -> None:
        geo = self.geo
        m, n = tile_coords(geo, stage_info)
        sA = _smem_tensor(stage_info, self._a.offset, geo.dtype, geo.a_layout)
        sB = _smem_tensor(stage_info, self._b.offset, geo.dtype, geo.b_layout)
        # (bM, bK, RestK) and (bN, bK, RestK): this block's row of A tiles and column of B tiles
        gA = cute.local_tile(self.mA, (self.tile_m, self.tile_k), (m, None))
        gB = cute.local_tile(self.mB, (self.tile_n, self.tile_k), (n, None))
        tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(self.tma_atom_a, 0, cute.make_layout(1),
                                                      cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        bar = cute.make_ptr(cutlass.Int64, stage_info.barrier.data_ptr().toint(), cute.AddressSpace.smem)
        cute.copy(self.tma_atom_a, tAgA[(None, k)], tAsA[(None, stage_info.stage_idx)], tma_bar_ptr=bar)
        if cutlass.const_expr(geo.cluster_m == 1):
            tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(self.tma_atom_b, 0, cute.make_layout(1),
                                                          cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
            cute.copy(self.tma_atom_b, tBgB[(None, k)], tBsB[(None, stage_info.stage_idx)], tma_bar_ptr=bar)
        else:
            # The cluster's blocks share this B tile: each loads its 1/cluster_m slice and multicasts it to all.
            rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
            tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(self.tma_atom_b, rank, cute.make_layout(geo.cluster_m),
                                                          cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
            cute.copy(self.tma_atom_b, tBgB[(None, k)], tBsB[(None, stage_info.stage_idx)], tma_bar_ptr=bar,
                      mcast_mask=cutlass.Int16((1 << geo.cluster_m) - 1))

    @cute.jit
    def multiplies_this_tile(self) -> Any:
        """Whether this thread's warpgroup multiplies the current work tile: always in the cooperative schedule;
        in ping-pong the two warpgroups take the block's tiles in turns (warpgroup 0 the 1st, 3rd, ... tile the
        WorkQueue hands the block, warpgroup 1 the 2nd, 4th, ...), counted by the WorkQueue's own scheduler."""
        if cutlass.const_expr(not self.geo.pingpong):
            return True
        tidx, _, _ = cute.arch.thread_idx()
        warpgroup = cute.arch.make_warp_uniform(tidx // 128)
        return warpgroup == self.work_queue.tile_scheduler.num_tiles_executed % 2

    @cute.jit
    def _mma_stage(self, stage_info: StageInfo, first: cutlass.Constexpr[bool]) -> None:
        geo = self.geo
        sA = _smem_tensor(stage_info, self._a.offset, geo.dtype, geo.a_layout)
        sB = _smem_tensor(stage_info, self._b.offset, geo.dtype, geo.b_layout)
        # A fresh handle on the same MMA: the ACCUMULATE flag set below stays inside this call (ping-pong calls it
        # under a runtime branch, which would not carry a change made to the shared one).
        tiled_mma = self.tiled_mma.__new_from_mlir_values__(self.tiled_mma.__extract_mlir_values__())
        if cutlass.const_expr(geo.pingpong):
            thr_mma = tiled_mma.get_slice(0)  # one warpgroup covers the whole tile
        else:
            tidx, _, _ = cute.arch.thread_idx()
            thr_mma = tiled_mma.get_slice(cute.arch.make_warp_uniform(tidx // 128) * 128)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, not first)
        acc = stage_info.task_cache
        cute.nvgpu.warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
            coord = (None, None, kb, stage_info.stage_idx)
            cute.gemm(tiled_mma, acc, tCrA[coord], tCrB[coord], acc)
            tiled_mma.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)

    @consumer_work
    @cute.jit
    def wgmma_first(self, stage_info: StageInfo) -> None:
        """The first K tile's MMAs (accumulators overwritten); waited for here only when it is the last."""
        if self.multiplies_this_tile():
            self._mma_stage(stage_info, True)
            cute.nvgpu.warpgroup.commit_group()
            if self.geo.k_tiles == 1:
                cute.nvgpu.warpgroup.wait_group(0)

    @consumer_work
    @cute.jit
    def wgmma(self, stage_info: StageInfo) -> None:
        """This K tile's MMAs; then wait until only they are in flight (the previous K tile's are done)."""
        if self.multiplies_this_tile():
            self._mma_stage(stage_info, False)
            cute.nvgpu.warpgroup.commit_group()
            cute.nvgpu.warpgroup.wait_group(1)

    @consumer_work
    @cute.jit
    def wgmma_drain(self, stage_info: StageInfo) -> None:
        """After the last K tile's MMAs (a ``last_iter`` step, so TS peels it off the steady loop): wait for all,
        before the last stage is released and the accumulators are read. In the loop itself no branch decides how
        many groups to wait for, which made ptxas drain the wgmma pipeline every other K tile."""
        cute.nvgpu.warpgroup.wait_group(0)


@dataclass(kw_only=True)
class SmemEpilogue(MemoryResource):
    """The C tile (tile_m x tile_n) staged in SMEM between the MMA task and the TMA store: whole (one stage), or
    with ``groups`` > 1 a group of ``per_group`` sub-tiles (``subtile`` rows x columns) a stage, the stages a ring
    the MMA task fills group by group while the store task empties it."""

    tile_m: cutlass.Constexpr[int] = 128
    tile_n: cutlass.Constexpr[int] = 128
    element_bytes: cutlass.Constexpr[int] = 2
    mma_threads: cutlass.Constexpr[int] = 128
    aliased: cutlass.Constexpr[bool] = True
    ab: cutlass.Constexpr[Any] = None
    subtile: cutlass.Constexpr[tuple] = (64, 32)
    groups: cutlass.Constexpr[int] = 1
    per_group: cutlass.Constexpr[int] = 1
    slot: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()
    _c: cutlass.Constexpr[Any] = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._c = SmemAllocation("epi_buf", size_bytes=0, alignment=1024)
        self.slot = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0),
                                      docs="the ring stage whose group of C sub-tiles the store reads")

    def get_smem_requirements(self) -> list[SmemAllocation]:
        if self.groups == 1:
            self._c.size_bytes = self.tile_m * self.tile_n * self.element_bytes
        else:
            rows, cols = self.subtile
            self._c.size_bytes = self.pipeline_config.num_stages * self.per_group * rows * cols * self.element_bytes
        return [self._c]

    @producer_work
    @cute.jit
    def stage_accumulators(self, stage_info: StageInfo) -> None:
        """fp32 accumulators -> C dtype -> SMEM (stmatrix, swizzled), every epilogue sub-tile of the block tile.

        In ping-pong both warpgroups acquire and commit the staged tile every round (the barrier counts both); only
        the one that multiplied the tile writes it."""
        # Nothing is in flight here (the last K tile's step waited), but with a runtime K ptxas cannot tell that
        # branch from the one that skips the K loop; a wait on every path keeps its wgmmas pipelined (without it
        # ptxas injects waits, C7517, and in ping-pong serialises every wgmma, C7511).
        cute.nvgpu.warpgroup.wait_group(0)
        if self.ab.multiplies_this_tile():
            self._stage(stage_info, None)

    @producer_work
    @cute.jit
    def stage_group(self, stage_info: StageInfo, *, group: cutlass.Constexpr[int]) -> None:
        """Sub-tiles ``group * per_group`` .. of the accumulators -> C dtype -> this ring stage (stmatrix).

        The group is a compile-time number (each step of the MMA task's tail stages its own), so the accumulators
        it reads are registers named at compile time, never an indexed array in local memory."""
        if cutlass.const_expr(group == 0):  # as stage_accumulators: no wgmma in flight on any path
            cute.nvgpu.warpgroup.wait_group(0)
        if self.ab.multiplies_this_tile():
            self._stage(stage_info, group)

    @cute.jit
    def _stage(self, stage_info: StageInfo, group: cutlass.Constexpr[Any]) -> None:
        ab = self.ab
        geo = ab.geo
        if cutlass.const_expr(self.aliased):
            # Every warpgroup's last wgmma has read the A/B stages before any writes over them.
            cute.arch.barrier(barrier_id=1, number_of_threads=self.mma_threads)
        sC = _smem_tensor(stage_info, self._c.offset, geo.dtype, geo.epi_layout)
        tidx, _, _ = cute.arch.thread_idx()
        if cutlass.const_expr(geo.pingpong):
            tidx = tidx % 128  # each warpgroup stages a whole tile of its own
        c_layout = tensor_utils.LayoutEnum.COL_MAJOR if geo.c_m_major else tensor_utils.LayoutEnum.ROW_MAJOR
        store_op = sm90.sm90_get_smem_store_op(c_layout, elem_ty_d=geo.dtype, elem_ty_acc=cutlass.Float32)
        atom_c = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(geo.c_m_major, 4), geo.dtype)
        r2s = cute.make_tiled_copy_S(store_op, cute.make_tiled_copy_C_atom(atom_c, ab.tiled_mma))
        thr = r2s.get_slice(tidx)
        tRS_sC = thr.partition_D(sC)  # (R2S, R2S_M, R2S_N, EPI)
        tRS_acc = r2s.retile(stage_info.task_cache)
        part = cute.make_layout(cute.shape(thr.partition_S(sC))[:3])
        vals = cute.size(part)
        # Sub-tile ``epi`` of the accumulators goes to SMEM slot ``epi`` (the whole tile), or, one group a ring
        # stage, to its place in this stage's slots.
        first, count = (0, cute.size(tRS_sC, mode=[3])) if cutlass.const_expr(group is None) else (
            group * self.per_group, self.per_group)
        for i in cutlass.range_constexpr(count):
            epi = first + i
            slot = i if cutlass.const_expr(group is None) else stage_info.stage_idx * self.per_group + i
            frag = cute.make_rmem_tensor(part, cutlass.Float32)
            for v in cutlass.range_constexpr(vals):
                frag[v] = tRS_acc[epi * vals + v]
            out = cute.make_rmem_tensor(part, geo.dtype)
            out.store(frag.load().to(geo.dtype))
            cute.copy(r2s, out, tRS_sC[(None, None, None, slot)])
        # The TMA engine (async proxy) reads what these generic stores wrote.
        cute.arch.fence_proxy("async.shared", space="cta")

    @consumer_work
    @cute.jit
    def read_tile(self, stage_info: StageInfo) -> None:
        # The wait made the staged tile visible; GmemC.tma_store copies it out in the same iteration.
        pass

    @consumer_work(returns=slot)
    @cute.jit
    def read_group(self, stage_info: StageInfo) -> cutlass.Int32:
        """The wait made this ring stage's group visible: its stage, for ``GmemC.tma_store_group``."""
        return stage_info.stage_idx


@dataclass(kw_only=True)
class GmemC(MemoryResource):
    """The output matrix C, written by TMA stores of the staged tile."""

    epi: cutlass.Constexpr[Any] = None
    store_warp: cutlass.Constexpr[int] = 0
    tma_atom_c: Any = None
    mC: Any = None

    @producer_work
    @cute.jit
    def tma_store(self, stage_info: StageInfo) -> None:
        """The whole staged C tile -> C."""
        self._store(stage_info, None)

    @producer_work
    @cute.jit
    def tma_store_group(self, stage_info: StageInfo, *, slot: cutlass.Int32) -> None:
        """This loop trip's group of C sub-tiles, from ring stage ``slot`` -> C."""
        self._store(stage_info, slot)

    @cute.jit
    def _store(self, stage_info: StageInfo, slot: Any) -> None:
        epi = self.epi
        ab = epi.ab
        geo = ab.geo
        m, n = tile_coords(geo, stage_info)
        sC = _smem_tensor(stage_info, epi._c.offset, geo.dtype, geo.epi_layout)
        gC = cute.local_tile(self.mC, (epi.tile_m, epi.tile_n), (m, n))
        gC_epi = cute.zipped_divide(gC, geo.epi_tile)  # ((EpiM, EpiN), (RestM, RestN))
        tSsC, tSgC = cute.nvgpu.cpasync.tma_partition(self.tma_atom_c, 0, cute.make_layout(1),
                                                      cute.group_modes(sC, 0, 2), gC_epi)
        rest = gC_epi.shape[1]
        order = cute.make_layout(rest, stride=(rest[1], 1))
        # One warp issues the stores and waits for them (the epilogue task's other warps, if any, release at once:
        # the stage frees at the last arrival, this warp's, after the wait).
        if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == self.store_warp:
            if cutlass.const_expr(slot is None):
                for epi_idx in cutlass.range_constexpr(cute.size(tSgC, mode=[1])):
                    cute.copy(self.tma_atom_c, tSsC[(None, epi_idx)], tSgC[(None, order.get_hier_coord(epi_idx))])
            else:  # the loop trip's group: sub-tiles trip * per_group .. of C, from the ring stage's slots
                for i in cutlass.range_constexpr(epi.per_group):
                    epi_idx = stage_info.loop_offset * epi.per_group + i
                    cute.copy(self.tma_atom_c, tSsC[(None, slot * epi.per_group + i)],
                              tSgC[(None, order.get_hier_coord(epi_idx))])
            cute.arch.cp_async_bulk_commit_group()
            cute.arch.cp_async_bulk_wait_group(0, read=True)  # the staged tile may be overwritten after this
