"""Blackwell GEMM: a TMA load warp fills a TmaUmma A/B ring, one warp issues tcgen05 MMAs into TMEM accumulators,
epilogue warps drain them, and the CLC work queue hands every block its next tile.

C (M x N) = A (M x K, row-major) @ B^T, with B given as N x K (K-major) and C row-major; fp16 or bf16 in and out,
fp32 accumulators in tensor memory (TMEM, 128 lanes x 512 columns per SM). A block computes 128-row output tiles
(with ``cluster_m=2``, a pair of blocks computes one 256-row tile with 2-CTA MMAs, each holding half of A, half
of B and its own 128 rows of accumulators). The accumulators of ``acc_stages`` tiles live in TMEM at once, so
the epilogue drains one tile while the MMA warp accumulates the next: ``acc_stages x tile_n`` columns, which TS's
TMEM allocator lays out and its capacity check holds to 512. The same resources and tasks are checked on the CPU
(``design()``) and compiled for sm_100a (:mod:`tslab.kernels.gemm_sm100_launch`); running needs a Blackwell GPU.

Resource/task flow (warps in brackets; the scheduler warp only with ``scheduler='clc'``)::

    gmem_ab    --LoadTask [warp 5]: k -> acquire -> TMA A, B -> commit-------------------> smem_ab (TmaUmma, S stages)
    smem_ab    --MmaTask [warp 4]: acquire acc; per k: wait -> stage -> tcgen05 MMAs -> release; commit acc
                 --> tmem_acc (UmmaAsync, acc_stages x tile_n TMEM columns)
    tmem_acc   --EpilogueTask [warps 0-3]: wait -> stage -> tcgen05.ld -> fp16 -> SMEM + TMA store (or st.global)
                 -> release--> gmem_c
    work_queue --SchedulerTask [warp 6]: acquire -> CLC try_cancel (fetch_work_tile) -> commit--> work_queue
                 (ClcFetchAsync); every task ends each tile with wait -> get_and_advance_work_tile -> release

Resources:
    GmemAB      the K coordinate of the next A/B tile pair (consumer work ``k_coords``, task-local ``k``)
    SmemAB      ``stages`` x (an A tile of 128 x tile_k + this block's B share of tile_n / cluster_m x tile_k) in
                SMEM, allocations ``a_buf`` and ``b_buf``, guarded by a TmaUmma pipeline: the MMA warp's release
                is a tcgen05 commit, so a stage is refilled only once the MMAs that read it are done; its consumer
                work ``stage`` routes the stage index to the MMAs (task-local ``ab_stage``)
    TmemAcc     ``acc_stages`` fp32 accumulator tiles in TMEM (allocation ``acc``, tile_n columns each), guarded
                by a UmmaAsync pipeline (MMA commit -> epilogue wait); in SMEM it owns ``tmem_ptr``, where
                tcgen05.alloc writes the TMEM base address (and with pairs ``tmem_dealloc_mbar``); its consumer
                work ``stage`` routes the accumulator stage to the epilogue (task-local ``acc_stage``)
    GmemC       the output matrix: producer work ``store`` loads each sub-tile from TMEM (tcgen05.ld), converts
                it and stores it by TMA from ``epi_buf`` (``epilogue='tma'``, ``EPI_STAGES`` sub-tiles of SMEM)
                or from registers (``'direct'``)
    WorkQueue   TS's work queue: ``scheduler='clc'`` the CLC dynamic persistent scheduler (a ClcFetchAsync
                pipeline whose producer, the scheduler warp, asks the hardware for a not yet launched block's
                tile; every thread of every task releases each fetched tile), ``'static'`` the static persistent
                one (each block walks a fixed stride of tiles; no pipeline, no scheduler warp)
Tasks:
    EpilogueTask  warps 0-3 (TMEM lanes 0-127: warp w reads lanes 32w..32w+31)
    MmaTask       warp 4: issues the tcgen05 MMAs (with pairs, only the pair's first block does)
    LoadTask      warp 5: issues the TMA loads of A and B
    SchedulerTask warp 6: fetches the next tile with CLC (``scheduler='clc'`` only)

Pairs (``cluster_m=2``): TS checks one block. The rings take the pair's cluster layout (2, 1, 1, 1): the A/B
ring's full barrier in the first block counts both blocks' TMA bytes, its MMA release and the accumulators'
commit signal from the first block only (``CtaLeader``), and the accumulators' release counts both blocks'
epilogue threads; :func:`consistency_issues` holds edits to that.
"""


from dataclasses import dataclass, field
from typing import Any

import cutlass
from cutlass import cute, pipeline
from cutlass.experimental.task_scheduling.enums import SignalingThreads, TileSchedulerType
from cutlass.experimental.task_scheduling.memory import SmemAllocation, TmemAllocation
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    StageInfo,
    TaskLocalVariable,
    TileSchedulerConfig,
    WorkQueue,
    consumer_work,
    producer_work,
)
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule, work_tile_loop
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint
from ..errors import DesignError, Issue, did_you_mean
from .rules import KernelRules, ShapeRule

NAME = "gemm_sm100"
SUMMARY = ("Blackwell GEMM: TMA -> TmaUmma A/B ring -> tcgen05 MMA into TMEM -> UmmaAsync -> epilogue warps, "
           "CLC work queue")
PARAMS: dict[str, Any] = {
    "tile_n": 256, "tile_k": 64, "stages": 4, "acc_stages": 2, "cluster_m": 1, "scheduler": "clc",
    "epilogue": "tma", "dtype": "fp16", "k_tiles": 4,
}
#: Rows of an output tile per block: one tcgen05 MMA covers 128 TMEM lanes (256 rows with 2-CTA pairs).
BLOCK_M = 128
DTYPE_BYTES = {"fp16": 2, "bf16": 2}
TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}
TILE_N = (64, 128, 192, 256)
TILE_K = (64, 128)
#: Blocks per cluster along M: 2 makes each pair of blocks one 2-CTA MMA (cta_group::2) of 256 rows.
CLUSTERS = (1, 2)
SCHEDULERS = ("clc", "static")
EPILOGUES = ("tma", "direct")
#: SMEM sub-tiles the TMA epilogue rotates through (one is stored while the next is written).
EPI_STAGES = 2
#: Warps of each task: epilogue first (TMEM lanes follow warp index modulo 4), then MMA, load, scheduler.
EPILOGUE_WARPS, MMA_WARP, LOAD_WARP, SCHEDULER_WARP = 4, 4, 5, 6
#: Bytes of one CLC response (the hardware writes the cancelled block's coordinates there).
CLC_RESPONSE_BYTES = 16


def validate(params: dict[str, Any]) -> None:
    """Raise :class:`DesignError` naming the param and what is allowed for any invalid combination.

    TMEM capacity is not checked here: TS's TMEM allocator lays out ``acc_stages x tile_n`` columns and its
    capacity check refuses more than 512 (a CAPACITY verdict, which sweeps prune on)."""
    p = params

    def menu(name: str, allowed: tuple) -> None:
        if p[name] not in allowed:
            raise DesignError("input", f"kernel 'gemm_sm100' param '{name}'", f"{name}={p[name]!r} is not supported",
                              did_you_mean(str(p[name]), [str(a) for a in allowed]))

    for name, allowed in (("dtype", tuple(DTYPE_BYTES)), ("scheduler", SCHEDULERS), ("epilogue", EPILOGUES)):
        menu(name, allowed)

    def bad(name: str, message: str, hint: str) -> DesignError:
        return DesignError("invalid-config", f"kernel 'gemm_sm100' param '{name}'", message, hint)

    if p["cluster_m"] not in CLUSTERS:
        raise bad("cluster_m", f"cluster_m={p['cluster_m']!r} is not 1 or 2",
                  "use 1 (one block per 128-row tile) or 2 (pairs of blocks run 2-CTA MMAs on 256-row tiles)")
    if p["tile_n"] not in TILE_N:
        raise bad("tile_n", f"tile_n={p['tile_n']!r} is not one of {', '.join(map(str, TILE_N))}",
                  "a tcgen05 MMA is at most 256 wide; the epilogue drains 32 columns at a time")
    if p["tile_k"] not in TILE_K:
        raise bad("tile_k", f"tile_k={p['tile_k']!r} is not 64 or 128",
                  "a K tile is one or two 128-byte swizzle rows of 16-bit elements")
    for name, low in (("stages", 2), ("acc_stages", 1)):
        if not isinstance(p[name], int) or isinstance(p[name], bool) or p[name] < low:
            raise bad(name, f"{name}={p[name]!r} is below {low}",
                      "use 2 or more A/B stages to overlap TMA and MMA" if name == "stages"
                      else "use 1 accumulator stage, or 2 to overlap the epilogue with the next tile's MMAs")


def consistency_issues(params: dict[str, Any], pipelines: dict[str, dict[str, Any]]) -> list[Issue]:
    """What TS's one-block checks cannot see: every ring's cluster layout must be the pair the kernel launches.

    With ``cluster_m=2`` the MMAs of a pair are issued from its first block into both blocks' TMEM, so
    ``smem_ab``, ``tmem_acc`` (and the CLC ``work_queue``) need ``cta_layout_vmnk`` (2, 1, 1, 1); alone, (1, 1, 1, 1).
    """
    want = [params["cluster_m"], 1, 1, 1]
    issues = []
    for name, cfg in pipelines.items():
        layout = cfg.get("cta_layout_vmnk")
        if layout is not None and list(layout) != want:
            issues.append(Issue("invalid-config", f"resource '{name}'",
                                f"cta_layout_vmnk={layout!r} does not match the cluster the kernel launches "
                                f"(cluster_m={params['cluster_m']}: {want!r})",
                                "change the kernel's cluster_m param instead of the ring's cluster layout"))
    return issues


def checked_beyond_ts(params: dict[str, Any]) -> list[str]:
    """What a verdict of this design covers beside TS's one-block checks, in sentences."""
    if params["cluster_m"] == 1:
        return []
    return ["Pairs of blocks: TS's checks model one block. Every ring's cluster layout (2, 1, 1, 1), the pair the "
            "kernel launches with 2-CTA MMAs, was checked by gemm_sm100.consistency_issues."]


def _shape_rule(params: dict[str, Any], dtype: str) -> ShapeRule:
    if params["epilogue"] == "tma":  # TMA clips loads and stores at the matrix edge
        return ShapeRule(("M", "N", "K"), (1, 8, 8), (1, 8, 8),
                         "any M, N and K multiples of 8 (TMA needs 16-byte row strides)",
                         ("", "pad N (C's rows are stored by TMA)", "pad K with zeros"))
    rows = BLOCK_M * params["cluster_m"]
    return ShapeRule(("M", "N", "K"), (rows, params["tile_n"], 8), (rows, params["tile_n"], 8),
                     f"M a multiple of {rows}, N of tile_n={params['tile_n']} and K of 8 (epilogue='direct' "
                     "stores whole tiles from registers)",
                     ("pad M, or use epilogue='tma'", "pad N, or use epilogue='tma'", "pad K with zeros"))


#: The GPU kernel's rules: C = A @ B^T of the design's dtype on a Blackwell GPU (sm_100a), 4096^3 when no problem
#: is given, the menus of the params that are not numbers, the pair's cluster rule; launch code in
#: :mod:`tslab.kernels.gemm_sm100_launch`.
RULES = KernelRules(
    dtypes=tuple(TORCH_DTYPES.values()), default_shape=(4096, 4096, 4096), default_dtype="float16",
    shape=_shape_rule, trip_param="k_tiles", package="gemm", dtype_of=lambda params: TORCH_DTYPES[params["dtype"]],
    choices={"tile_n": TILE_N, "tile_k": TILE_K, "cluster_m": CLUSTERS, "scheduler": SCHEDULERS,
             "epilogue": EPILOGUES, "dtype": tuple(DTYPE_BYTES)},
    consistency=consistency_issues, beyond_ts=checked_beyond_ts, launch_module="tslab.kernels.gemm_sm100_launch",
    archs=("sm_100a",), gpu_name="Blackwell: B200, GB200",
)


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
def _mma_tile(geo: cutlass.Constexpr, stage_info: StageInfo) -> tuple:
    """(m, n) of this block's MMA tile: the work queue's block tile, with pairs counted once along M."""
    m, n, _ = stage_info.work_tile.tile_idx
    return m // geo.cluster_m, n


@cute.jit
def _rank_in_pair(geo: cutlass.Constexpr) -> Any:
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
class GmemAB(MemoryResource):
    """GMEM A and B, seen by the load task as the K index of the next A/B tile pair."""

    k: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self) -> None:
        self.k = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0), docs="K tile index of the pair")

    @consumer_work(returns=k)
    @cute.jit
    def k_coords(self, stage_info: StageInfo) -> cutlass.Int32:
        return stage_info.loop_offset


@dataclass(kw_only=True)
class SmemAB(MemoryResource):
    """``stages`` A tiles and this block's share of the B tiles in SMEM, filled by TMA, read by tcgen05 MMAs."""

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

    def get_smem_requirements(self) -> list[SmemAllocation]:
        stages = self.pipeline_config.num_stages
        self._a.size_bytes = stages * BLOCK_M * self.tile_k * self.element_bytes
        self._b.size_bytes = stages * (self.tile_n // self.cluster_m) * self.tile_k * self.element_bytes
        return [self._a, self._b]

    @cute.jit
    def operands(self, stage_info: StageInfo) -> tuple:
        """The staged A and B tiles as the MMA partitions them: (MMA, MMA_M, MMA_K, STAGE), (MMA, MMA_N, ...)."""
        geo = self.geo
        return (_smem_tensor(stage_info, self._a.offset, geo.dtype, geo.a_layout),
                _smem_tensor(stage_info, self._b.offset, geo.dtype, geo.b_layout))

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: StageInfo, *, k: cutlass.Int32) -> None:
        geo = self.geo
        m, n = _mma_tile(geo, stage_info)
        sA, sB = self.operands(stage_info)
        thr_mma = geo.tiled_mma().get_slice(_rank_in_pair(geo))
        # (MMA, MMA_M, MMA_K, RestM, RestK) and (MMA, MMA_N, MMA_K, RestN, RestK): this block's share of the tiles
        tCgA = thr_mma.partition_A(cute.local_tile(self.mA, cute.slice_(geo.mma_tiler, (None, 0, None)), (None, None)))
        tCgB = thr_mma.partition_B(cute.local_tile(self.mB, cute.slice_(geo.mma_tiler, (0, None, None)), (None, None)))
        one = cute.make_layout(1)
        tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(self.tma_atom_a, 0, one, cute.group_modes(sA, 0, 3),
                                                      cute.group_modes(tCgA, 0, 3))
        tBsB, tBgB = cute.nvgpu.cpasync.tma_partition(self.tma_atom_b, 0, one, cute.group_modes(sB, 0, 3),
                                                      cute.group_modes(tCgB, 0, 3))
        # A pair's loads arrive on its first block's barrier (the 2-CTA TMA atoms route them there).
        bar = cute.make_ptr(cutlass.Int64, stage_info.barrier.data_ptr().toint(), cute.AddressSpace.smem)
        stage = stage_info.stage_idx
        cute.copy(self.tma_atom_a, tAgA[(None, m, k)], tAsA[(None, stage)], tma_bar_ptr=bar)
        cute.copy(self.tma_atom_b, tBgB[(None, n, k)], tBsB[(None, stage)], tma_bar_ptr=bar)

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
    ab: cutlass.Constexpr[Any] = None
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
        sA, sB = self.ab.operands(stage_info)
        tCrA = tiled_mma.make_fragment_A(sA)  # (MMA, MMA_M, MMA_K, STAGE): SMEM descriptors
        tCrB = tiled_mma.make_fragment_B(sB)
        acc = self.accumulators(stage_info)[(None, None, None, stage_info.stage_idx)]
        if _rank_in_pair(self.geo) == 0:  # a pair's MMAs are issued by its first block, into both blocks' TMEM
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
        m, n = _mma_tile(geo, stage_info)
        thr_mma = tiled_mma.get_slice(_rank_in_pair(geo))
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


def _threads(n: int) -> pipeline.CooperativeGroup:
    return pipeline.CooperativeGroup(pipeline.Agent.Thread, n)


def task_warps(scheduler: str) -> int:
    """Warps per block: four epilogue warps, the MMA warp, the load warp and (CLC only) the scheduler warp."""
    return EPILOGUE_WARPS + 2 + (1 if scheduler == "clc" else 0)


def pipelines_for(p: dict[str, Any]) -> dict[str, PipelineConfig]:
    """The rings' TS PipelineConfigs for params ``p`` (the work queue's only with the CLC scheduler)."""
    cm, nbytes = p["cluster_m"], DTYPE_BYTES[p["dtype"]]
    layout = (cm, 1, 1, 1)
    leader = SignalingThreads.CtaLeader if cm > 1 else SignalingThreads.All
    per_block = (BLOCK_M + p["tile_n"] // cm) * p["tile_k"] * nbytes
    out = {
        # One thread's tcgen05 commit releases a stage; a pair's full barrier counts both blocks' bytes.
        "smem_ab": PipelineConfig.create_tma_umma_pipeline_cfg(
            num_stages=p["stages"], num_bytes=per_block * cm, producer_group=_threads(1), consumer_group=_threads(1),
            cta_layout_vmnk=layout, consumer_signaling_threads=leader,
            num_bytes_per_warp_per_cta=per_block if cm > 1 else None),
        # The MMA commit fills a stage; every epilogue thread of the pair releases it.
        "tmem_acc": PipelineConfig.create_umma_async_pipeline_cfg(
            num_stages=p["acc_stages"], producer_group=_threads(1), consumer_group=_threads(32 * EPILOGUE_WARPS * cm),
            cta_layout_vmnk=layout, producer_signaling_threads=leader),
    }
    if p["scheduler"] == "clc":
        # The scheduler warp fetches; every thread of every task in the cluster releases each fetched tile.
        out["work_queue"] = PipelineConfig.create_clc_fetch_async_pipeline_cfg(
            num_stages=1, num_bytes=CLC_RESPONSE_BYTES, producer_group=_threads(1),
            consumer_group=_threads(32 * task_warps("clc") * cm), cta_layout_vmnk=layout)
    return out


def make_tasks(params: dict[str, Any], *, k_tiles: Any, geo: Geometry | None = None,
               gpu: dict[str, Any] | None = None) -> Blueprint:
    """Resources and tasks of the GEMM over ``k_tiles`` K tiles. Shared by :func:`build` and the GPU kernel."""
    validate(params)
    p, gpu = params, gpu or {}
    cm, nbytes = p["cluster_m"], DTYPE_BYTES[p["dtype"]]
    rings = pipelines_for(p)
    gmem_ab = GmemAB(name="gmem_ab")
    smem_ab = SmemAB(name="smem_ab", tile_n=p["tile_n"], tile_k=p["tile_k"], cluster_m=cm, element_bytes=nbytes,
                     geo=geo, tma_atom_a=gpu.get("tma_atom_a"),
                     tma_atom_b=gpu.get("tma_atom_b"), mA=gpu.get("mA"), mB=gpu.get("mB"),
                     pipeline_config=rings["smem_ab"])
    tmem_acc = TmemAcc(name="tmem_acc", tile_n=p["tile_n"], cluster_m=cm, geo=geo, ab=smem_ab,
                       pipeline_config=rings["tmem_acc"])
    gmem_c = GmemC(name="gmem_c", tile_n=p["tile_n"], cluster_m=cm, epilogue=p["epilogue"], element_bytes=nbytes,
                   geo=geo, acc=tmem_acc, tma_atom_c=gpu.get("tma_atom_c"), mC=gpu.get("mC"))
    clc = p["scheduler"] == "clc"
    kind = TileSchedulerType.ClcDynamicPersistent if clc else TileSchedulerType.StaticPersistent
    # On the CPU the scheduler's params need a trace: TS's config then says only which scheduler it is.
    scheduler = gpu.get("scheduler") or TileSchedulerConfig(tile_scheduler_type=kind, tile_scheduler_params=None)
    wq = WorkQueue(tile_scheduler_config=scheduler, name="work_queue", pipeline_config=rings.get("work_queue"))

    def next_tile(wq: Any) -> None:
        wq.wait()
        wq.get_and_advance_work_tile()
        wq.release()

    @schedule
    def load(gmem_ab: MemoryResource, smem_ab: MemoryResource, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            with domain_loop(0, k_tiles, 1):
                k = gmem_ab.k_coords()
                smem_ab.acquire()
                smem_ab.tma_load(k=k)
                smem_ab.commit()
            next_tile(wq)

    @schedule
    def mma(smem_ab: MemoryResource, tmem_acc: MemoryResource, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            tmem_acc.acquire()
            smem_ab.wait()
            ab_stage = smem_ab.stage()
            tmem_acc.mma_first(ab_stage=ab_stage)
            smem_ab.release()
            with domain_loop(1, k_tiles, 1):
                smem_ab.wait()
                ab_stage = smem_ab.stage()
                tmem_acc.mma(ab_stage=ab_stage)
                smem_ab.release()
            tmem_acc.commit()
            next_tile(wq)

    @schedule
    def epilogue(tmem_acc: MemoryResource, gmem_c: MemoryResource, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            with domain_loop(0, 1, 1):
                tmem_acc.wait()
                acc_stage = tmem_acc.stage()
                gmem_c.store(acc_stage=acc_stage)
                tmem_acc.release()
            next_tile(wq)

    @schedule
    def fetch(wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            with domain_loop(0, 0, 1):
                pass
            wq.acquire()
            wq.fetch_work_tile()
            wq.commit()
            next_tile(wq)

    tasks = [
        Task(name="EpilogueTask", src_resources=[tmem_acc, wq], dst_resources=[gmem_c], warp_idx=0,
             num_warps=EPILOGUE_WARPS, schedule=epilogue(tmem_acc, gmem_c, wq)),
        Task(name="MmaTask", src_resources=[smem_ab, wq], dst_resources=[tmem_acc], warp_idx=MMA_WARP, num_warps=1,
             schedule=mma(smem_ab, tmem_acc, wq)),
        Task(name="LoadTask", src_resources=[gmem_ab, wq], dst_resources=[smem_ab], warp_idx=LOAD_WARP, num_warps=1,
             schedule=load(gmem_ab, smem_ab, wq)),
    ]
    graph = {smem_ab: [gmem_ab, wq], tmem_acc: [smem_ab, wq], gmem_c: [tmem_acc, wq]}
    if clc:
        tasks.append(Task(name="SchedulerTask", src_resources=[wq], dst_resources=[wq], warp_idx=SCHEDULER_WARP,
                          num_warps=1, schedule=fetch(wq)))
        graph[wq] = [wq]
    smem = [smem_ab, tmem_acc, gmem_c] + ([wq] if clc else [])
    return Blueprint(tasks=tasks, graph=graph, smem_resources=smem, tmem_resources=[tmem_acc])


def build(tile_n: int = 256, tile_k: int = 64, stages: int = 4, acc_stages: int = 2, cluster_m: int = 1,
          scheduler: str = "clc", epilogue: str = "tma", dtype: str = "fp16", k_tiles: int = 4) -> Blueprint:
    """Fresh TS objects of the GEMM over ``k_tiles`` K tiles per output tile (CPU check)."""
    params = {"tile_n": tile_n, "tile_k": tile_k, "stages": stages, "acc_stages": acc_stages, "cluster_m": cluster_m,
              "scheduler": scheduler, "epilogue": epilogue, "dtype": dtype}
    return make_tasks(params, k_tiles=k_tiles)


def design(**params: Any):
    """The Blackwell GEMM design (see the module docstring for the flow)."""
    from ..core.design import Design

    return Design(NAME, params)
