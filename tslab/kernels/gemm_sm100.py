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
    ab_rings='merged': LoadATask [warp 5] fills smem_a, LoadBTask [warp 6] fills smem_b (the scheduler moves to
                 warp 7); both are members of the Merge PipelineGroup ab_sync (a full barrier each, one empty
                 barrier): the MMA warp waits for both and releases ab_sync once per stage

Resources:
    GmemAB      the K coordinate of the next A/B tile pair (consumer work ``k_coords``, task-local ``k``)
    SmemAB      ``stages`` x (an A tile of 128 x tile_k + this block's B share of tile_n / cluster_m x tile_k) in
                SMEM, allocations ``a_buf`` and ``b_buf``, guarded by a TmaUmma pipeline: the MMA warp's release
                is a tcgen05 commit, so a stage is refilled only once the MMAs that read it are done; its consumer
                work ``stage`` routes the stage index to the MMAs (task-local ``ab_stage``); with
                ``ab_rings='merged'`` two of them, ``smem_a`` (``a_buf``) and ``smem_b`` (``b_buf``)
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
    LoadTask      warp 5: issues the TMA loads of A and B (LoadATask warp 5 and LoadBTask warp 6 when merged)
    SchedulerTask warp 6 (7 when merged): fetches the next tile with CLC (``scheduler='clc'`` only)
The resource classes are in :mod:`tslab.kernels.gemm_sm100_resources`.

Pairs (``cluster_m=2``): TS checks one block. The rings take the pair's cluster layout (2, 1, 1, 1): the A/B
ring's full barrier in the first block counts both blocks' TMA bytes, its MMA release and the accumulators'
commit signal from the first block only (``CtaLeader``), and the accumulators' release counts both blocks'
epilogue threads; :func:`consistency_issues` holds edits to that.
"""


from typing import Any

from cutlass import pipeline
from cutlass.experimental.task_scheduling.enums import PipelineGroupMode, SignalingThreads, TileSchedulerType
from cutlass.experimental.task_scheduling.pipeline_group import PipelineGroup
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    PipelineConfig,
    TileSchedulerConfig,
    WorkQueue,
)
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule, work_tile_loop
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint
from ..errors import DesignError, Issue, did_you_mean
from .gemm_common import TORCH_DTYPES, GmemAB
from .gemm_sm100_resources import BLOCK_M, EPILOGUE_WARPS, Geometry, GmemC, SmemAB, TmemAcc
from .rules import KernelRules, ShapeRule

NAME = "gemm_sm100"
SUMMARY = ("Blackwell GEMM: TMA -> TmaUmma A/B ring -> tcgen05 MMA into TMEM -> UmmaAsync -> epilogue warps, "
           "CLC work queue")
PARAMS: dict[str, Any] = {
    "tile_n": 256, "tile_k": 64, "stages": 4, "acc_stages": 2, "cluster_m": 1, "scheduler": "clc",
    "epilogue": "tma", "ab_rings": "one", "dtype": "fp16", "k_tiles": 4,
}
DTYPE_BYTES = {"fp16": 2, "bf16": 2}
TILE_N = (64, 128, 192, 256)
TILE_K = (64, 128)
#: Blocks per cluster along M: 2 makes each pair of blocks one 2-CTA MMA (cta_group::2) of 256 rows.
CLUSTERS = (1, 2)
SCHEDULERS = ("clc", "static")
EPILOGUES = ("tma", "direct")
#: ``one``: one ring holds A and B; ``merged``: an A ring and a B ring, each filled by its own load warp, members of
#: one Merge PipelineGroup (a full barrier each, one shared empty barrier the MMA warp releases).
AB_RINGS = ("one", "merged")
#: The MMA warp and the first load warp follow the four epilogue warps (TMEM lanes follow warp index modulo 4).
MMA_WARP, LOAD_WARP = 4, 5
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

    for name, allowed in (("dtype", tuple(DTYPE_BYTES)), ("scheduler", SCHEDULERS), ("epilogue", EPILOGUES),
                          ("ab_rings", AB_RINGS)):
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

    With ``cluster_m=2`` the MMAs of a pair are issued from its first block into both blocks' TMEM, so every ring
    (``smem_ab`` or the ``ab_sync`` group, ``tmem_acc``, the CLC ``work_queue``) needs ``cta_layout_vmnk``
    (2, 1, 1, 1); alone, (1, 1, 1, 1).
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
             "epilogue": EPILOGUES, "ab_rings": AB_RINGS, "dtype": tuple(DTYPE_BYTES)},
    consistency=consistency_issues, beyond_ts=checked_beyond_ts, launch_module="tslab.kernels.gemm_sm100_launch",
    archs=("sm_100a",), gpu_name="Blackwell: B200, GB200",
)


def _threads(n: int) -> pipeline.CooperativeGroup:
    return pipeline.CooperativeGroup(pipeline.Agent.Thread, n)


def task_warps(p: dict[str, Any]) -> int:
    """Warps per block: four epilogue warps, the MMA warp, one or two load warps and (CLC) the scheduler warp."""
    return EPILOGUE_WARPS + 1 + (2 if p["ab_rings"] == "merged" else 1) + (1 if p["scheduler"] == "clc" else 0)


def pipelines_for(p: dict[str, Any]) -> dict[str, PipelineConfig]:
    """The rings' TS PipelineConfigs for params ``p``: ``smem_ab`` (or ``smem_a`` and ``smem_b``), ``tmem_acc``
    and, with the CLC scheduler, ``work_queue``."""
    cm, nbytes = p["cluster_m"], DTYPE_BYTES[p["dtype"]]
    layout = (cm, 1, 1, 1)
    leader = SignalingThreads.CtaLeader if cm > 1 else SignalingThreads.All
    rows = {"a": BLOCK_M, "b": p["tile_n"] // cm, "ab": BLOCK_M + p["tile_n"] // cm}

    def ab_ring(operands: str) -> PipelineConfig:
        # One thread's tcgen05 commit releases a stage; a pair's full barrier counts both blocks' bytes.
        per_block = rows[operands] * p["tile_k"] * nbytes
        return PipelineConfig.create_tma_umma_pipeline_cfg(
            num_stages=p["stages"], num_bytes=per_block * cm, producer_group=_threads(1), consumer_group=_threads(1),
            cta_layout_vmnk=layout, consumer_signaling_threads=leader,
            num_bytes_per_warp_per_cta=per_block if cm > 1 else None)

    out = ({"smem_ab": ab_ring("ab")} if p["ab_rings"] == "one" else
           {"smem_a": ab_ring("a"), "smem_b": ab_ring("b")})
    # The MMA commit fills a stage; every epilogue thread of the pair releases it.
    out["tmem_acc"] = PipelineConfig.create_umma_async_pipeline_cfg(
        num_stages=p["acc_stages"], producer_group=_threads(1), consumer_group=_threads(32 * EPILOGUE_WARPS * cm),
        cta_layout_vmnk=layout, producer_signaling_threads=leader)
    if p["scheduler"] == "clc":
        # The scheduler warp fetches; every thread of every task in the cluster releases each fetched tile.
        out["work_queue"] = PipelineConfig.create_clc_fetch_async_pipeline_cfg(
            num_stages=1, num_bytes=CLC_RESPONSE_BYTES, producer_group=_threads(1),
            consumer_group=_threads(32 * task_warps(p) * cm), cta_layout_vmnk=layout)
    return out


def make_tasks(params: dict[str, Any], *, k_tiles: Any, geo: Geometry | None = None,
               gpu: dict[str, Any] | None = None) -> Blueprint:
    """Resources and tasks of the GEMM over ``k_tiles`` K tiles. Shared by :func:`build` and the GPU kernel."""
    validate(params)
    p, gpu = params, gpu or {}
    cm, nbytes = p["cluster_m"], DTYPE_BYTES[p["dtype"]]
    rings = pipelines_for(p)
    gmem_ab = GmemAB(name="gmem_ab")

    def ring(name: str, operands: str) -> SmemAB:
        return SmemAB(name=name, operands=operands, tile_n=p["tile_n"], tile_k=p["tile_k"], cluster_m=cm,
                      element_bytes=nbytes, geo=geo, tma_atom_a=gpu.get("tma_atom_a"), tma_atom_b=gpu.get("tma_atom_b"),
                      mA=gpu.get("mA"), mB=gpu.get("mB"), pipeline_config=rings[name])

    merged = p["ab_rings"] == "merged"
    loads = [ring("smem_a", "a"), ring("smem_b", "b")] if merged else [ring("smem_ab", "ab")]
    group = PipelineGroup(name="ab_sync", members=loads, mode=PipelineGroupMode.Merge) if merged else None
    # Schedules name a group's members through the group (TS requires it): ab_sync.smem_a, ab_sync.smem_b.
    views = [getattr(group, r.name) for r in loads] if merged else loads
    tmem_acc = TmemAcc(name="tmem_acc", tile_n=p["tile_n"], cluster_m=cm, geo=geo, a_ring=loads[0],
                       b_ring=loads[-1], pipeline_config=rings["tmem_acc"])
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
    def load(gmem_ab: MemoryResource, ring: MemoryResource, wq: WorkQueue) -> None:
        with work_tile_loop(wq):
            with domain_loop(0, k_tiles, 1):
                k = gmem_ab.k_coords()
                ring.acquire()
                ring.tma_load(k=k)
                ring.commit()
            next_tile(wq)

    def mma_step(tmem_acc: Any, rings: list, releaser: Any, first: bool) -> None:
        """Wait for the A/B stage, route its index to the MMAs, issue them, release the stage."""
        for r in rings:
            r.wait()
        ab_stage = rings[0].stage()
        if first:
            tmem_acc.mma_first(ab_stage=ab_stage)
        else:
            tmem_acc.mma(ab_stage=ab_stage)
        releaser.release()  # a Merge group's stage is released once, for both members

    def mma_tile(tmem_acc: Any, wq: Any, rings: list, releaser: Any) -> None:
        with work_tile_loop(wq):
            tmem_acc.acquire()
            mma_step(tmem_acc, rings, releaser, True)
            with domain_loop(1, k_tiles, 1):
                mma_step(tmem_acc, rings, releaser, False)
            tmem_acc.commit()
            next_tile(wq)

    @schedule
    def mma_one(tmem_acc: MemoryResource, wq: WorkQueue, ab: MemoryResource) -> None:
        mma_tile(tmem_acc, wq, [ab], ab)

    @schedule
    def mma_merged(tmem_acc: MemoryResource, wq: WorkQueue, a: MemoryResource, b: MemoryResource,
                   group: MemoryResource) -> None:
        mma_tile(tmem_acc, wq, [a, b], group)

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
        Task(name="MmaTask", src_resources=[*loads, wq], dst_resources=[tmem_acc], warp_idx=MMA_WARP, num_warps=1,
             schedule=mma_merged(tmem_acc, wq, *views, group) if merged else mma_one(tmem_acc, wq, *views)),
    ]
    for i, (res, view) in enumerate(zip(loads, views, strict=True)):
        name = f"Load{res.operands.upper()}Task" if merged else "LoadTask"
        tasks.append(Task(name=name, src_resources=[gmem_ab, wq], dst_resources=[res], warp_idx=LOAD_WARP + i,
                          num_warps=1, schedule=load(gmem_ab, view, wq)))
    graph = {**{r: [gmem_ab, wq] for r in loads}, tmem_acc: [*loads, wq], gmem_c: [tmem_acc, wq]}
    if clc:
        tasks.append(Task(name="SchedulerTask", src_resources=[wq], dst_resources=[wq],
                          warp_idx=LOAD_WARP + len(loads), num_warps=1, schedule=fetch(wq)))
        graph[wq] = [wq]
    smem = [*loads, tmem_acc, gmem_c] + ([wq] if clc else [])
    return Blueprint(tasks=tasks, graph=graph, smem_resources=smem, tmem_resources=[tmem_acc],
                     pipeline_groups=[group] if merged else [])


def build(tile_n: int = 256, tile_k: int = 64, stages: int = 4, acc_stages: int = 2, cluster_m: int = 1,
          scheduler: str = "clc", epilogue: str = "tma", ab_rings: str = "one", dtype: str = "fp16",
          k_tiles: int = 4) -> Blueprint:
    """Fresh TS objects of the GEMM over ``k_tiles`` K tiles per output tile (CPU check)."""
    params = {"tile_n": tile_n, "tile_k": tile_k, "stages": stages, "acc_stages": acc_stages, "cluster_m": cluster_m,
              "scheduler": scheduler, "epilogue": epilogue, "ab_rings": ab_rings, "dtype": dtype}
    return make_tasks(params, k_tiles=k_tiles)


def design(**params: Any):
    """The Blackwell GEMM design (see the module docstring for the flow)."""
    from ..core.design import Design

    return Design(NAME, params)
