"""The resources of :mod:`tslab.kernels.gemm_sm100`, shared by its CPU check and its GPU kernel.

Each is a TS ``MemoryResource``: its allocations (SMEM bytes, TMEM columns) are what TS's allocators lay out,
and its work methods are the kernel's code (traced only on the GPU path; the CPU check never runs them). The
layouts and MMA atoms they use are built where they are used, from :class:`Geometry`, because TS carries each
resource's fields through its loops and a CuTe layout or MMA atom must not travel that way.
"""

from dataclasses import dataclass, field
from typing import Any

import cutlass
from cutlass import cute
from cutlass.experimental.task_scheduling.memory import SmemAllocation, TmemAllocation
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    StageInfo,
    TaskLocalVariable,
    consumer_work,
    producer_work,
)

#: Rows of an output tile per block: one tcgen05 MMA covers 128 TMEM lanes (256 rows with 2-CTA pairs).
BLOCK_M = 128
#: SMEM sub-tiles the TMA epilogue rotates through (one is stored while the next is written).
EPI_STAGES = 2
#: Warps of the epilogue task (TMEM lanes follow warp index modulo 4).
EPILOGUE_WARPS = 4


def epilogue_tile(tile_n: int, cluster_m: int) -> tuple[int, int]:
    """The (rows, columns) of C the epilogue converts and stores at a time, as CuTe's SM100 heuristic picks it
    (a pure function: the CPU sizes ``epi_buf`` with the same numbers the kernel's layouts use)."""
    from cutlass.utils.blackwell_helpers import compute_epilogue_tile_size

    return tuple(compute_epilogue_tile_size(BLOCK_M, tile_n, cluster_m == 2, 16, None, False, True))


@dataclass(frozen=True)
class Geometry:
    """Shape of one launch (GPU path only): dtype, cluster, tile, and the CuTe layouts the kernel built (only
    Python values and layouts: a runtime value here would be carried through TS's loops)."""

    dtype: Any
    cluster_m: int
    tile_n: int
    tile_k: int
    a_layout: Any = None
    b_layout: Any = None
    epi_layout: Any = None

    @property
    def mma_tiler(self) -> tuple[int, int, int]:
        return (BLOCK_M * self.cluster_m, self.tile_n, self.tile_k)

    def tiled_mma(self) -> Any:
        """The tcgen05 tiled MMA (cta_group 2 for pairs), built where it is used: TS's loops carry no MMA atoms."""
        from cutlass.utils.blackwell_helpers import make_trivial_tiled_mma

        k = cute.nvgpu.OperandMajorMode.K  # A (M x K) and B (N x K) are both K-major
        group = cute.nvgpu.tcgen05.CtaGroup.TWO if self.cluster_m == 2 else cute.nvgpu.tcgen05.CtaGroup.ONE
        return make_trivial_tiled_mma(self.dtype, self.dtype, k, k, cutlass.Float32, group, self.mma_tiler[:2])

    def epi_tile(self) -> Any:
        """The epilogue's sub-tile as a CuTe tiler (built where it is used: TS's loops carry no layouts)."""
        from cutlass.utils.blackwell_helpers import compute_epilogue_tile_shape

        return compute_epilogue_tile_shape((BLOCK_M, self.tile_n, self.tile_k), self.cluster_m == 2,
                                           cutlass.tensor_utils.LayoutEnum.ROW_MAJOR, self.dtype)


@cute.jit
def mma_tile(geo: cutlass.Constexpr, stage_info: StageInfo) -> tuple:
    """(m, n) of this block's MMA tile: the work queue's block tile, with pairs counted once along M."""
    m, n, _ = stage_info.work_tile.tile_idx
    return m // geo.cluster_m, n


@cute.jit
def rank_in_pair(geo: cutlass.Constexpr) -> Any:
    """0 for a single block or a pair's first block, 1 for its second."""
    if cutlass.const_expr(geo.cluster_m == 1):
        return 0
    return cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())


@cute.jit
def _smem_tensor(stage_info: StageInfo, offset: cutlass.Constexpr, dtype: cutlass.Constexpr, layout: Any) -> Any:
    ptr = cute.make_ptr(dtype, stage_info.context.smem_base.data_ptr() + offset, cute.AddressSpace.smem,
                        assumed_align=1024)
    return cute.make_tensor(cute.recast_ptr(ptr, layout.inner), layout.outer)


@dataclass(kw_only=True)
class SmemAB(MemoryResource):
    """``stages`` A tiles and this block's share of the B tiles in SMEM, filled by TMA, read by tcgen05 MMAs.

    ``operands`` is ``"ab"`` for one ring holding both, or ``"a"`` / ``"b"`` for one of two rings (members of a
    PipelineGroup, each filled by its own load warp)."""

    operands: cutlass.Constexpr[str] = "ab"
    tile_n: cutlass.Constexpr[int] = 256
    tile_k: cutlass.Constexpr[int] = 64
    cluster_m: cutlass.Constexpr[int] = 1
    element_bytes: cutlass.Constexpr[int] = 2
    geo: cutlass.Constexpr[Any] = None
    tma_atom_a: Any = None
    tma_atom_b: Any = None
    mA: Any = None
    mB: Any = None
    ab_stage: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()
    _a: cutlass.Constexpr[Any] = field(init=False, default=None)
    _b: cutlass.Constexpr[Any] = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.ab_stage = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0),
                                          docs="the A/B stage the MMAs read")
        self._a = SmemAllocation("a_buf", size_bytes=0, alignment=1024)
        self._b = SmemAllocation("b_buf", size_bytes=0, alignment=1024)

    def stage_bytes(self, operand: str) -> int:
        """Bytes of one stage of ``operand`` in this block: 128 rows of A, tile_n / cluster_m rows of B."""
        rows = BLOCK_M if operand == "a" else self.tile_n // self.cluster_m
        return rows * self.tile_k * self.element_bytes

    def get_smem_requirements(self) -> list[SmemAllocation]:
        stages = self.pipeline_config.num_stages
        self._a.size_bytes = stages * self.stage_bytes("a")
        self._b.size_bytes = stages * self.stage_bytes("b")
        return [{"a": self._a, "b": self._b}[o] for o in self.operands]

    @cute.jit
    def tile(self, stage_info: StageInfo, operand: cutlass.Constexpr[str]) -> Any:
        """The staged tiles of ``operand`` as the MMA partitions them: (MMA, MMA_M or MMA_N, MMA_K, STAGE)."""
        geo = self.geo
        if cutlass.const_expr(operand == "a"):
            return _smem_tensor(stage_info, self._a.offset, geo.dtype, geo.a_layout)
        return _smem_tensor(stage_info, self._b.offset, geo.dtype, geo.b_layout)

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: StageInfo, *, k: cutlass.Int32) -> None:
        geo = self.geo
        m, n = mma_tile(geo, stage_info)
        thr_mma = geo.tiled_mma().get_slice(rank_in_pair(geo))
        # A pair's loads arrive on its first block's barrier (the 2-CTA TMA atoms route them there).
        bar = cute.make_ptr(cutlass.Int64, stage_info.barrier.data_ptr().toint(), cute.AddressSpace.smem)
        one = cute.make_layout(1)
        if cutlass.const_expr("a" in self.operands):
            # (MMA, MMA_M, MMA_K, RestM, RestK): this block's share of the A tiles
            tCgA = thr_mma.partition_A(cute.local_tile(self.mA, cute.slice_(geo.mma_tiler, (None, 0, None)),
                                                       (None, None)))
            tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(self.tma_atom_a, 0, one,
                                                          cute.group_modes(self.tile(stage_info, "a"), 0, 3),
                                                          cute.group_modes(tCgA, 0, 3))
            cute.copy(self.tma_atom_a, tAgA[(None, m, k)], tAsA[(None, stage_info.stage_idx)], tma_bar_ptr=bar)
        if cutlass.const_expr("b" in self.operands):
            tCgB = thr_mma.partition_B(cute.local_tile(self.mB, cute.slice_(geo.mma_tiler, (0, None, None)),
                                                       (None, None)))
            tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(self.tma_atom_b, 0, one,
                                                          cute.group_modes(self.tile(stage_info, "b"), 0, 3),
                                                          cute.group_modes(tCgB, 0, 3))
            cute.copy(self.tma_atom_b, tBgB[(None, n, k)], tBsB[(None, stage_info.stage_idx)], tma_bar_ptr=bar)

    @consumer_work(returns=ab_stage)
    @cute.jit
    def stage(self, stage_info: StageInfo) -> cutlass.Int32:
        """The stage the MMA task waited for (routed to ``TmemAcc.mma``)."""
        return stage_info.stage_idx


@dataclass(kw_only=True)
class TmemAcc(MemoryResource):
    """``acc_stages`` fp32 accumulator tiles in TMEM (tile_n columns each), written by tcgen05 MMAs, read by the
    epilogue; in SMEM, the slot tcgen05.alloc writes the TMEM base address into."""

    tile_n: cutlass.Constexpr[int] = 256
    cluster_m: cutlass.Constexpr[int] = 1
    geo: cutlass.Constexpr[Any] = None
    a_ring: cutlass.Constexpr[Any] = None
    b_ring: cutlass.Constexpr[Any] = None
    acc_stage: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()
    _acc: cutlass.Constexpr[Any] = field(init=False, default=None)
    _slot: cutlass.Constexpr[Any] = field(init=False, default=None)
    _dealloc: cutlass.Constexpr[Any] = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.acc_stage = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0),
                                           docs="the accumulator stage the epilogue drains")
        self._acc = TmemAllocation("acc", num_columns=0)
        self._slot = SmemAllocation("tmem_ptr", size_bytes=4, alignment=16)
        self._dealloc = SmemAllocation("tmem_dealloc_mbar", size_bytes=8, alignment=8)

    def get_tmem_requirements(self) -> list[TmemAllocation]:
        self._acc.num_columns = self.pipeline_config.num_stages * self.tile_n  # fp32: one column per N
        return [self._acc]

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self._slot] if self.cluster_m == 1 else [self._slot, self._dealloc]

    @cute.jit
    def slot_ptr(self, smem_base: Any) -> Any:
        """The SMEM word holding the TMEM base address."""
        return cute.make_ptr(cutlass.Int32, smem_base.data_ptr() + self._slot.offset, cute.AddressSpace.smem,
                             assumed_align=4)

    @cute.jit
    def accumulators(self, stage_info: StageInfo) -> Any:
        """Every accumulator stage in TMEM: (MMA, MMA_M, MMA_N, STAGE), at TS's column offset of ``acc``."""
        tiled_mma = self.geo.tiled_mma()
        shape = tiled_mma.partition_shape_C(self.geo.mma_tiler[:2])
        layout = tiled_mma.make_fragment_C(cute.append(shape, self.pipeline_config.num_stages)).layout
        base = cute.arch.retrieve_tmem_ptr(cutlass.Float32, alignment=16,
                                           ptr_to_buffer_holding_addr=self.slot_ptr(stage_info.context.smem_base))
        return cute.make_tensor(base + self._acc.offset, layout)

    @cute.jit
    def _mma(self, stage_info: StageInfo, ab_stage: cutlass.Int32, first: cutlass.Constexpr[bool]) -> None:
        tiled_mma = self.geo.tiled_mma()
        tCrA = tiled_mma.make_fragment_A(self.a_ring.tile(stage_info, "a"))  # (MMA, MMA_M, MMA_K, STAGE)
        tCrB = tiled_mma.make_fragment_B(self.b_ring.tile(stage_info, "b"))  # SMEM descriptors
        acc = self.accumulators(stage_info)[(None, None, None, stage_info.stage_idx)]
        if rank_in_pair(self.geo) == 0:  # a pair's MMAs are issued by its first block, into both blocks' TMEM
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                # The first MMA of a tile overwrites the accumulators; every later one adds to them.
                tiled_mma.set(cute.nvgpu.tcgen05.Field.ACCUMULATE, not (first and kb == 0))
                cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, ab_stage)], tCrB[(None, None, kb, ab_stage)], acc)

    @producer_work
    @cute.jit
    def mma_first(self, stage_info: StageInfo, *, ab_stage: cutlass.Int32) -> None:
        """The first K tile's MMAs (accumulators overwritten)."""
        self._mma(stage_info, ab_stage, True)

    @producer_work
    @cute.jit
    def mma(self, stage_info: StageInfo, *, ab_stage: cutlass.Int32) -> None:
        """This K tile's MMAs, added to the accumulators."""
        self._mma(stage_info, ab_stage, False)

    @consumer_work(returns=acc_stage)
    @cute.jit
    def stage(self, stage_info: StageInfo) -> cutlass.Int32:
        """The accumulator stage the epilogue waited for (routed to ``GmemC.store``)."""
        return stage_info.stage_idx


@dataclass(kw_only=True)
class GmemC(MemoryResource):
    """The output matrix C; with ``epilogue='tma'`` also the SMEM sub-tiles it is stored from."""

    tile_n: cutlass.Constexpr[int] = 256
    cluster_m: cutlass.Constexpr[int] = 1
    epilogue: cutlass.Constexpr[str] = "tma"
    element_bytes: cutlass.Constexpr[int] = 2
    geo: cutlass.Constexpr[Any] = None
    acc: cutlass.Constexpr[Any] = None
    tma_atom_c: Any = None
    mC: Any = None
    _epi: cutlass.Constexpr[Any] = field(init=False, default=None)

    def __post_init__(self) -> None:
        rows, cols = epilogue_tile(self.tile_n, self.cluster_m)
        self._epi = SmemAllocation("epi_buf", size_bytes=EPI_STAGES * rows * cols * self.element_bytes,
                                   alignment=1024)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self._epi] if self.epilogue == "tma" else []

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo, *, acc_stage: cutlass.Int32) -> None:
        """Every sub-tile of this block's accumulators: TMEM -> registers (tcgen05.ld) -> C's dtype -> C."""
        from cutlass.utils import blackwell_helpers as sm100
        from cutlass.utils.gemm.sm100 import transform_partitioned_tensor_layout as by_mode

        geo = self.geo
        tiled_mma = geo.tiled_mma()
        tidx, _, _ = cute.arch.thread_idx()
        m, n = mma_tile(geo, stage_info)
        thr_mma = tiled_mma.get_slice(rank_in_pair(geo))
        gC = cute.local_tile(self.mC, cute.slice_(geo.mma_tiler, (None, None, 0)), (None, None))
        tCgC = by_mode(thr_mma.partition_C(gC))  # ((ATOM_M, MMA_M), (ATOM_N, MMA_N), RestM, RestN)
        tAcc = by_mode(self.acc.accumulators(stage_info))  # ((ATOM_M, MMA_M), (ATOM_N, MMA_N), STAGE)
        c_layout = cutlass.tensor_utils.LayoutEnum.ROW_MAJOR
        cta_tile = (BLOCK_M, geo.tile_n, geo.tile_k)
        epi_tile = geo.epi_tile()
        t2r_atom = sm100.get_tmem_load_op(cta_tile, c_layout, geo.dtype, cutlass.Float32, epi_tile,
                                          geo.cluster_m == 2)
        tAcc_epi = cute.flat_divide(tAcc, epi_tile)  # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, STAGE)
        t2r = cute.nvgpu.tcgen05.make_tmem_copy(t2r_atom, tAcc_epi[(None, None, 0, 0, 0)])
        thr_t2r = t2r.get_slice(tidx)
        tTR_tAcc = thr_t2r.partition_S(tAcc_epi)[(None, None, None, None, None, acc_stage)]
        tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))  # (T2R, T2R_M, T2R_N, EPI)
        gC_epi = cute.flat_divide(tCgC, epi_tile)  # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, RestM, RestN)
        tTR_gC = thr_t2r.partition_D(gC_epi)
        tTR_rAcc = cute.make_rmem_tensor(tTR_gC[(None, None, None, 0, 0, 0, 0)].shape, cutlass.Float32)
        tTR_rC = cute.make_rmem_tensor(tTR_rAcc.shape, geo.dtype)
        subtiles = cute.size(tTR_tAcc, mode=[3])
        if cutlass.const_expr(self.epilogue == "tma"):
            sC = _smem_tensor(stage_info, self._epi.offset, geo.dtype, geo.epi_layout)  # (EPI_M, EPI_N, EPI_STAGE)
            r2s = cute.make_tiled_copy_D(sm100.get_smem_store_op(c_layout, geo.dtype, cutlass.Float32, t2r), t2r)
            thr_r2s = r2s.get_slice(tidx)
            tRS_sC = thr_r2s.partition_D(sC)
            tRS_rC = r2s.retile(tTR_rC)
            bSG_sC, bSG_gC = cute.nvgpu.cpasync.tma_partition(self.tma_atom_c, 0, cute.make_layout(1),
                                                              cute.group_modes(sC, 0, 2),
                                                              cute.group_modes(gC_epi, 0, 2))
            bSG_gC = bSG_gC[(None, None, None, m, n)]
            bSG_gC = cute.group_modes(bSG_gC, 1, cute.rank(bSG_gC))  # ((ATOM_V, REST_V), EPI)
            warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
            threads = 32 * EPILOGUE_WARPS
            for s in cutlass.range_constexpr(subtiles):
                cute.copy(t2r, tTR_tAcc[(None, None, None, s)], tTR_rAcc)
                tRS_rC.store(r2s.retile(tTR_rAcc).load().to(geo.dtype))
                buf = s % EPI_STAGES
                cute.copy(r2s, tRS_rC, tRS_sC[(None, None, None, buf)])
                cute.arch.fence_proxy("async.shared", space="cta")  # the TMA engine reads what threads wrote
                cute.arch.barrier(barrier_id=1, number_of_threads=threads)
                if warp == 0:
                    cute.copy(self.tma_atom_c, bSG_sC[(None, buf)], bSG_gC[(None, s)])
                    cute.arch.cp_async_bulk_commit_group()
                    cute.arch.cp_async_bulk_wait_group(EPI_STAGES - 1, read=True)  # the next buffer is free
                cute.arch.barrier(barrier_id=1, number_of_threads=threads)
            if warp == 0:
                cute.arch.cp_async_bulk_wait_group(0, read=True)  # the next tile may write every buffer
        else:
            tTR_gC = tTR_gC[(None, None, None, None, None, m, n)]
            tTR_gC = cute.group_modes(tTR_gC, 3, cute.rank(tTR_gC))  # (T2R, T2R_M, T2R_N, EPI)
            r2g = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), geo.dtype)
            for s in cutlass.range_constexpr(subtiles):
                cute.copy(t2r, tTR_tAcc[(None, None, None, s)], tTR_rAcc)
                tTR_rC.store(tTR_rAcc.load().to(geo.dtype))
                cute.copy(r2g, tTR_rC, tTR_gC[(None, None, None, s)])
        cute.arch.fence_view_async_tmem_load()  # every TMEM load is done before the stage is released
