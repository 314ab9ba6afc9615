"""Hopper GEMM: a TMA load warp fills a TmaAsync A/B ring, warpgroups issue wgmma, an epilogue stores C by TMA.

C (M x N) = A (M x K, row-major) @ B^T, with B given as N x K (K-major) and C row-major; fp16 or bf16 in and
out, fp32 accumulators in registers. A block computes ``tile_m x tile_n`` tiles of C: one per block, or with
``persistent=True`` one block per SM walks the tiles TS's ``WorkQueue`` (static persistent scheduler) hands it,
every task ending each tile with ``get_and_advance_work_tile``. Tiles past the matrix edge and K past its end
are clipped by TMA (zero-filled loads, dropped stores), so any M >= 2 (M = 1 with runtime extents), N a
multiple of 8 and K a multiple of 8 work. The same resources and tasks are checked on the CPU (``design()``)
and run on the GPU (:mod:`tslab.kernels.gemm_sm90_launch`).

Resource/task flow (W = 4 * mma_warpgroups; warps in brackets)::

    gmem_ab  --LoadTask [warp W]: k -> acquire -> TMA A,B -> commit-----------------> smem_ab (TmaAsync, S stages)
    smem_ab  --MmaTask [warps 0..W-1]: head: wait 0 -> wgmma 0; loop k >= 1: wait k -> wgmma k (last k: wait for
               all) -> release k-1 (advance_on_wait); tail: release last; acquire -> accumulators -> SMEM -> commit
               --> smem_epi
    smem_epi --EpilogueTask [warp W+1]: wait -> TMA store C -> release--------------> gmem_c
    (warps W+1..W+3 with the register split: a cooperative tile of more than 128 accumulators a thread, e.g.
    256 x 192, takes ping-pong's setmaxnreg budget, ``REGISTER_SPLIT``; one of the three warps stores)
    persistent=True: each task's body above sits in ``work_tile_loop(work_queue)`` and ends with
    work_queue: wait -> get_and_advance_work_tile -> release

Resources:
    GmemAB       the K coordinate of the next A/B tile pair (consumer work ``k_coords``)
    SmemAB       ``stages`` x (A tile + B tile) in SMEM, allocations ``a_buf`` and ``b_buf`` (TmaAsync); the
                 MMA task keeps one stage's wgmma in flight: it waits on stage k, issues its MMAs, waits
                 for stage k-1's MMAs to finish and releases k-1, so the release cursor lags the wait cursor
                 (``advance_on_wait=True``)
    SmemEpilogue the C tile staged for the TMA store, allocation ``epi_buf`` (AsyncAsync, 1 stage); with
                 ``epilogue='aliased'`` it shares bytes with ``a_buf``/``b_buf`` through an alias group (the
                 A/B stages are dead once the MMA task has released its last stage), with ``'dedicated'`` it
                 has its own bytes; with ``'subtiles'`` it is a ring of ``EPILOGUE_RING`` stages of a group of
                 sub-tiles each: the MMA task's tail stages the groups one by one (``stage_group(group=g)``),
                 the store task's loop stores one a trip, and the A/B ring gets the bytes the whole tile took
    GmemC        the output matrix (producer work ``tma_store``)
    WorkQueue    (persistent only) TS's static persistent tile scheduler, in plain order; ``raster='grouped'``
                 re-orders the tiles it hands out into groups of ``raster_group`` rows of tiles for L2 reuse
                 (``gemm_sm90_resources.grouped_tile``: the scheduler's own swizzle pads the tile columns)

Ping-pong (``schedule='pingpong'``, two warpgroups, persistent): each warpgroup is a TS task of its own
(``MmaTask0``, ``MmaTask1``) that multiplies whole ``tile_m x tile_n`` tiles into accumulators of its own, and the
two take the tiles the WorkQueue hands the block in turns (warpgroup 0 the block's 1st, 3rd, ... tile, warpgroup 1
its 2nd, 4th, ...), counted by the WorkQueue's own scheduler. Both tasks wait on and release every stage of the one
A/B ring and acquire and commit every staged C tile; the one whose turn it is not multiplies nothing and writes
nothing. So the ring orders the warpgroups: neither runs more than ``stages`` K tiles ahead of the other, and the
tiles are multiplied in the order the load warp fills them, while one warpgroup drains its last wgmmas and stages
its C tile the other already multiplies the next tile. TS checks every interleaving of the two tasks; which of them
multiplies a tile is decided inside the work (``SmemAB.multiplies_this_tile``). Each warpgroup holds a whole tile's
accumulators (up to 192 fp32 registers per thread), so setmaxnreg gives the MMA warpgroups 232 registers and the
warpgroup of the load and epilogue warps (three epilogue warps here, one of which stores) 40. A warpgroup that
skips a tile commits no wgmma group: an empty group committed after the branch made ptxas add a dummy wgmma per K
tile and wait for the real one each time (benchmarks/NOTES.md #26).

Swapped A and B (``swap_ab=True``, for small M): the kernel computes C^T = B A^T, B's N rows along the wgmma's M
in 64-row blocks and A's M rows along its N, so a tile can be as narrow as M (``tile_n`` up to 256 of A's rows);
the C tile is staged M-major (transposing stmatrix) and stored by TMA into row-major C. With ``cluster_m=2`` the
pair along N shares each A tile. The TS resources and tasks are the same; only the operands change places.

Clusters (``cluster_m=2``): blocks run in pairs on M-adjacent tiles of one column. Each loads half of the shared
B tile by a multicast TMA copy into both blocks' SMEM, so a stage is refilled only when both have released it:
``smem_ab`` takes the cluster layout (1, 2, 1, 1) and one release lane per MMA warp per block. TS checks one
block; :func:`consistency_issues` states the pair's rule, which ``tslab.check`` and ``gpu.compile`` enforce.
With ``per_warp_release=True`` one lane per MMA warp releases a stage (CUTLASS's release) also in a block alone,
instead of every MMA thread; clusters always release per warp.
Tasks:
    MmaTask      warps 0..W-1: ``mma_warpgroups`` warpgroups, each owning ``tile_m / mma_warpgroups`` rows
                 (cooperative); in ping-pong ``MmaTask0`` (warps 0..3) and ``MmaTask1`` (warps 4..7) take whole
                 tiles in turns (232 registers each)
    LoadTask     warp W: one elected thread issues the TMA loads of A and B (ping-pong: 40 registers)
    EpilogueTask warp W+1 (ping-pong: warps W+1..W+3, 40 registers): issues the TMA stores of the staged C tile
"""


from typing import Any

from cutlass import pipeline
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    PdlLaunchBarrier,
    PdlWaitBarrier,
    PipelineConfig,
    WorkQueue,
)
from cutlass.experimental.task_scheduling.schedule_builder import domain_loop, schedule, work_tile_loop
from cutlass.experimental.task_scheduling.task import Task

from ..core.blueprint import Blueprint
from ..errors import DesignError, Issue, did_you_mean
from .gemm_common import TORCH_DTYPES, GmemAB
from .gemm_sm90_resources import Geometry, GmemC, MmaTask, SmemAB, SmemEpilogue
from .rules import KernelRules, ShapeRule, SingleBuffer

NAME = "gemm_sm90"
SUMMARY = "Hopper GEMM: TMA -> TmaAsync A/B ring -> wgmma warpgroups -> stmatrix epilogue -> TMA store, persistent"
#: Defaults: the fastest configuration measured on the H200 (benchmarks/NOTES.md, "GEMM").
PARAMS: dict[str, Any] = {
    "tile_m": 128, "tile_n": 256, "tile_k": 64, "stages": 3, "mma_warpgroups": 2, "schedule": "cooperative",
    "persistent": True, "cluster_m": 1, "raster": "grouped", "raster_group": 8, "epilogue": "dedicated",
    "dtype": "fp16", "k_tiles": 4, "swap_ab": False, "per_warp_release": False, "pdl": False,
}
#: The one-tile-per-block variant whose C tile aliases the A/B ring (the tutorials' memory and aliasing design).
ALIASED: dict[str, Any] = {"tile_n": 128, "mma_warpgroups": 1, "stages": 4, "persistent": False, "epilogue": "aliased"}
#: Few rows of A (decode-like, e.g. M = 128): 64 x 128 tiles give the SMs enough blocks, 8 stages keep B streaming,
#: and pairs along M multicast each B tile so it is read from memory once (benchmarks/NOTES.md, "GEMM").
DECODE: dict[str, Any] = {"tile_m": 64, "tile_n": 128, "mma_warpgroups": 1, "stages": 8, "cluster_m": 2}
#: Ping-pong: two warpgroups take the tiles in turns, each multiplying a whole 128 x 192 tile, so one stages its
#: tile's C while the other multiplies (the tile quack-kernels finds best on the large shapes).
PINGPONG: dict[str, Any] = {"tile_m": 128, "tile_n": 192, "stages": 4, "schedule": "pingpong"}
DTYPE_BYTES = {"fp16": 2, "bf16": 2}
RASTERS = ("grouped", "row")
#: Rows of tiles ``raster='grouped'`` walks down a column before moving right (L2 reuse of B): a power of two (a
#: group's rows are walked by mask and shift), at least ``cluster_m`` (a cluster's tiles share one group).
RASTER_GROUPS = (1, 2, 4, 8, 16, 32, 64)
#: Consumer warpgroups: one, or two that split tile_m between them.
MMA_WARPGROUPS = (1, 2)
#: Tile widths: a wgmma takes any N that is a multiple of 8 up to 256; the epilogue's sub-tiles are 32 columns wide.
TILE_N = tuple(range(64, 257, 32))
#: Blocks per cluster along M: a pair of blocks computes two M-adjacent tiles and multicasts each B tile to both.
CLUSTERS = (1, 2)
#: How the C tile is staged for its TMA store: over the A/B ring (``aliased``, one tile a block), in bytes of its own
#: (``dedicated``: the whole tile), or in a ring of ``EPILOGUE_RING`` groups of sub-tiles (``subtiles``: the MMA
#: warpgroups stage a group while the store warp stores the one before, so the C tile's SMEM is a fraction of the
#: whole tile's and the A/B ring can take another stage, as CUTLASS's and quack's epilogues do).
EPILOGUES = ("aliased", "dedicated", "subtiles")
#: Stages of the ``subtiles`` epilogue's ring, each a group of ``epilogue_groups(params)[1]`` sub-tiles.
EPILOGUE_RING = 2
#: How the MMA warpgroups share the work: ``cooperative`` splits each tile's rows between them; ``pingpong`` gives
#: each warpgroup whole tiles in turns, so one's epilogue overlaps the other's mainloop.
MMA_SCHEDULES = ("cooperative", "pingpong")
#: fp32 accumulator registers per MMA thread: up to ``UNSPLIT_ACC_REGISTERS`` in an even register budget (the rest
#: hold addresses, loop state and the epilogue's conversions), up to ``MAX_ACC_REGISTERS`` with the register split.
UNSPLIT_ACC_REGISTERS = 128
MAX_ACC_REGISTERS = 192
#: The register split (setmaxnreg, per thread), which ping-pong always takes and a cooperative tile takes when its
#: accumulators need more than ``UNSPLIT_ACC_REGISTERS`` (256 x 192: 192 a thread, as quack's 256 x 208 takes 208):
#: the MMA warpgroups take what the warpgroup of the load and epilogue warps gives up; 2 x 128 x 232 + 128 x 40 =
#: 64,512 of the SM's 65,536.
REGISTER_SPLIT = {"mma": 232, "other": 40}


def epilogue_subtile(params: dict[str, Any]) -> tuple[int, int]:
    """Rows and columns of C one TMA store writes (CuTe's Hopper default for 16-bit C): 128 x 32 when two
    cooperative warpgroups split the tile's rows, else 64 x 32 (never more than the tile)."""
    cooperative = params["mma_warpgroups"] == 2 and params["schedule"] != "pingpong"
    return (min(128 if cooperative else 64, params["tile_m"]), min(32, params["tile_n"]))


def epilogue_groups(params: dict[str, Any]) -> tuple[int, int]:
    """How the C tile is staged: (groups, sub-tiles per group). One group of every sub-tile, except with
    ``epilogue='subtiles'``: groups of two sub-tiles (one where the count is odd or under four, so there are always
    two groups or more), one ring stage each."""
    rows, cols = epilogue_subtile(params)
    subtiles = (params["tile_m"] // rows) * (params["tile_n"] // cols)
    if params["epilogue"] != "subtiles":
        return 1, subtiles
    per_group = 2 if subtiles % 2 == 0 and subtiles >= 4 else 1
    return subtiles // per_group, per_group


def warpgroups_per_tile(params: dict[str, Any]) -> int:
    """MMA warpgroups that share one tile's rows: all of them when cooperative, one in ping-pong."""
    return 1 if params["schedule"] == "pingpong" else params["mma_warpgroups"]


def accumulator_registers(params: dict[str, Any]) -> int:
    """fp32 accumulator registers per MMA thread: a tile's rows are split between cooperative warpgroups, while a
    ping-pong warpgroup holds a whole tile."""
    return params["tile_m"] * params["tile_n"] // (128 * warpgroups_per_tile(params))


def register_split(params: dict[str, Any]) -> bool:
    """Whether the block moves registers to its MMA warpgroups with setmaxnreg (``REGISTER_SPLIT``): always in
    ping-pong, and for a cooperative tile whose accumulators would not fit an even budget."""
    return params["schedule"] == "pingpong" or accumulator_registers(params) > UNSPLIT_ACC_REGISTERS


def epilogue_warps(params: dict[str, Any]) -> int:
    """Warps of the epilogue task: one, or three with the register split, where the load warp and the epilogue warps
    form the warpgroup whose registers setmaxnreg lowers (one of the three issues the stores)."""
    return 3 if register_split(params) else 1


def block_warps(params: dict[str, Any]) -> int:
    """Warps per block: the MMA warpgroups, the load warp and the epilogue warps."""
    return 4 * params["mma_warpgroups"] + 1 + epilogue_warps(params)


def validate(params: dict[str, Any]) -> None:
    """Raise :class:`DesignError` naming the param and what is allowed for any invalid combination."""

    def bad(name: str, message: str, hint: str) -> DesignError:
        return DesignError("invalid-config", f"kernel 'gemm_sm90' param '{name}'", message, hint)

    p = params
    if p["dtype"] not in DTYPE_BYTES:
        raise DesignError("input", "kernel 'gemm_sm90' param 'dtype'", f"dtype={p['dtype']!r} is not supported",
                          did_you_mean(str(p["dtype"]), list(DTYPE_BYTES)))
    for name, allowed in (("raster", RASTERS), ("epilogue", EPILOGUES), ("schedule", MMA_SCHEDULES)):
        if p[name] not in allowed:
            raise DesignError("input", f"kernel 'gemm_sm90' param '{name}'", f"{name}={p[name]!r} is not supported",
                              did_you_mean(str(p[name]), list(allowed)))
    if p["mma_warpgroups"] not in MMA_WARPGROUPS:
        raise bad("mma_warpgroups", f"mma_warpgroups={p['mma_warpgroups']!r} is not 1 or 2",
                  "use 1 warpgroup, or 2 that split tile_m between them")
    pingpong = p["schedule"] == "pingpong"
    if pingpong and p["mma_warpgroups"] != 2:
        raise bad("mma_warpgroups", f"mma_warpgroups={p['mma_warpgroups']!r} with schedule='pingpong': ping-pong "
                  "needs two warpgroups to take turns", "use mma_warpgroups=2, or schedule='cooperative'")
    if pingpong and p["persistent"] is not True:
        raise bad("persistent", f"persistent={p['persistent']!r} with schedule='pingpong': the warpgroups take "
                  "turns over the tiles the WorkQueue hands a block", "use persistent=True with schedule='pingpong'")
    # Cooperative warpgroups split the tile's rows; a ping-pong warpgroup multiplies all of them.
    rows = 64 if pingpong else 64 * p["mma_warpgroups"]
    if p["tile_m"] not in (64, 128, 192, 256) or p["tile_m"] % rows:
        split = "" if pingpong else f" (64 rows per warpgroup x {p['mma_warpgroups']})"
        raise bad("tile_m", f"tile_m={p['tile_m']!r} is not a multiple of {rows}{split} in 64..256",
                  "each warpgroup's wgmma covers 64 rows: use tile_m=128 with 1 or 2 warpgroups, or 64 with 1")
    if p["tile_n"] not in TILE_N:
        raise bad("tile_n", f"tile_n={p['tile_n']!r} is not a multiple of 32 in 64..256",
                  "use one of " + ", ".join(map(str, TILE_N)) + ": the epilogue stores C in 32-column sub-tiles")
    if p["tile_k"] not in (64, 128):
        raise bad("tile_k", f"tile_k={p['tile_k']!r} is not 64 or 128",
                  "a K tile is one or two 128-byte swizzle rows of 16-bit elements")
    acc = accumulator_registers(p)
    if acc > MAX_ACC_REGISTERS:
        raise bad("tile_n", f"tile_m x tile_n = {p['tile_m']} x {p['tile_n']} needs {acc} fp32 accumulator registers "
                  f"per thread with {warpgroups_per_tile(p)} warpgroup(s) per tile in schedule={p['schedule']!r}, "
                  f"over {MAX_ACC_REGISTERS}",
                  _accumulator_hint(p, pingpong))
    if not isinstance(p["stages"], int) or p["stages"] < 2:
        raise bad("stages", f"stages={p['stages']!r} is below 2", "use 2 or more stages to overlap TMA and wgmma")
    for flag in ("persistent", "swap_ab", "per_warp_release", "pdl"):
        if not isinstance(p[flag], bool):
            raise bad(flag, f"{flag}={p[flag]!r} is not a bool", "use True or False")
    if p["persistent"] and p["epilogue"] == "aliased":
        raise bad("epilogue", "epilogue='aliased' with persistent=True: the load task fills the next tile's A/B "
                  "stages while the store still reads the C tile staged over them",
                  "use epilogue='dedicated' with persistent=True (or persistent=False to alias)")
    if p["cluster_m"] not in CLUSTERS:
        raise bad("cluster_m", f"cluster_m={p['cluster_m']!r} is not 1 or 2",
                  "use cluster_m=2 for pairs of blocks along M that share each B tile by TMA multicast, else 1")
    group = p["raster_group"]
    if isinstance(group, bool) or not isinstance(group, int) or group not in RASTER_GROUPS:
        raise bad("raster_group", f"raster_group={group!r} is not a power of two in 1..64",
                  "use one of " + ", ".join(map(str, RASTER_GROUPS)) + " (8 by default): a group's rows of tiles are "
                  "walked by mask and shift")
    if group < p["cluster_m"]:
        raise bad("raster_group", f"raster_group={group} with cluster_m={p['cluster_m']}: a cluster's "
                  f"{p['cluster_m']} rows of tiles must fit one group", f"use raster_group={p['cluster_m']} or more")


def _accumulator_hint(p: dict[str, Any], pingpong: bool) -> str:
    """What would fit the accumulators: a smaller tile, and two cooperative warpgroups where they would."""
    options = ["a smaller tile" + (", e.g. gemm_sm90.PINGPONG's 128 x 192" if pingpong else "")]
    halves = p["tile_m"] % 128 == 0 and accumulator_registers({**p, "mma_warpgroups": 2}) <= MAX_ACC_REGISTERS
    if not pingpong and p["mma_warpgroups"] == 1 and halves:
        options.append("mma_warpgroups=2 (each warpgroup holds half the rows)")
    return "use " + ", or ".join(options)


def consistency_issues(params: dict[str, Any], pipelines: dict[str, dict[str, Any]]) -> list[Issue]:
    """What TS's checks, which see one block, cannot: the A/B ring's barriers must match the cluster launched.

    With ``cluster_m`` = 2 each B tile is multicast into both blocks, so a stage may be refilled only when both
    have released it: ``smem_ab`` needs ``cta_layout_vmnk`` (1, 2, 1, 1) and one release lane per MMA warp per
    block (``consumer_group.size`` = 2 x MMA warps). TS also accepts an all-thread release (every MMA thread
    releases its own block's stage only), which would let one block's loads overwrite a stage its peer is
    still reading. Alone (``cluster_m`` = 1), a cluster layout would release stages in blocks that do not exist.
    """
    cfg = pipelines.get("smem_ab")
    if cfg is None:
        return []
    issues: list[Issue] = []
    cm = params["cluster_m"]
    want_layout = None if cm == 1 else [1, cm, 1, 1]
    layout = cfg.get("cta_layout_vmnk")
    layout = None if layout is None or list(layout) == [1, 1, 1, 1] else list(layout)  # no cluster
    if layout != want_layout:
        issues.append(Issue("invalid-config", "resource 'smem_ab'",
                            f"cta_layout_vmnk={cfg.get('cta_layout_vmnk')!r} does not match the cluster the kernel "
                            f"launches (cluster_m={cm}: {want_layout!r})",
                            "change the kernel's cluster_m param instead of the ring's cluster layout"))
    warps = 4 * params["mma_warpgroups"]
    size = cfg.get("consumer_group", {}).get("size")
    if cm > 1 and size != cm * warps:
        issues.append(Issue("invalid-config", "resource 'smem_ab'",
                            f"consumer_group.size={size} in a cluster of {cm}: each stage's B tile is multicast "
                            f"into all {cm} blocks, so each of the {warps} MMA warps must release it in every block "
                            f"({cm} x {warps} = {cm * warps} arrivals); an all-thread release frees only its own "
                            "block's stage and the peer's next load would overwrite data still being read",
                            f"set consumer_group.size={cm * warps}, or cluster_m=1"))
    return issues


def _single_buffers(params: dict[str, Any]) -> tuple[SingleBuffer, ...]:
    """The whole-tile epilogues stage C in one buffer; the sub-tiled one's ring stages are buffers of their own."""
    if epilogue_groups(params)[0] > 1:
        return ()
    return (SingleBuffer("smem_epi", f"the whole C tile (epilogue={params['epilogue']!r})",
                         "use epilogue='subtiles', whose ring stages are buffers of their own"),)


def checked_beyond_ts(params: dict[str, Any]) -> list[str]:
    """What a verdict of this design covers beside TS's one-block checks, in sentences (an export's VERDICT.txt)."""
    cm = params["cluster_m"]
    if cm == 1:
        return []
    warps = 4 * params["mma_warpgroups"]
    return [f"Clusters of {cm}: TS's checks model one block. The pair's rule, that a stage whose B tile is "
            f"multicast into all {cm} blocks is refilled only after each block has released it (smem_ab "
            f"cta_layout_vmnk (1, {cm}, 1, 1), consumer_group.size {cm * warps}: one lane per MMA warp per block), "
            "was checked by gemm_sm90.consistency_issues. Every block of a cluster runs the same schedule over the "
            "same number of tiles and K tiles."]


def _shape_rule(params: dict[str, Any], dtype: str) -> ShapeRule:
    # Runtime extents take M = 1 too (a static 1-row A faults; see _static_refusal).
    return ShapeRule(("M", "N", "K"), (1, 8, 8), (1, 8, 8),
                     "any M, N and K multiples of 8 (TMA needs 16-byte row strides)",
                     ("", "pad N (C's rows are stored by TMA)", "pad K with zeros"))


def _static_refusal(params: dict[str, Any], shape: tuple[int, ...], dtype: str) -> str | None:
    if shape[0] == 1:
        return ("M=1; the kernel's static TMA layouts need M >= 2 (a 1-row A faults on the GPU); use a "
                "matrix-vector product or pad M to 2")
    return None


#: The GPU kernel's rules: C = A @ B^T of the design's dtype, the problems it takes (4096^3 when none is given),
#: the menus of the params that are not numbers, the cluster's rule TS cannot see; its launch code lives in
#: :mod:`tslab.kernels.gemm_sm90_launch`.
RULES = KernelRules(
    dtypes=tuple(TORCH_DTYPES.values()), default_shape=(4096, 4096, 4096), default_dtype="float16",
    shape=_shape_rule, trip_param="k_tiles", package="gemm", refuse=_static_refusal,
    dtype_of=lambda params: TORCH_DTYPES[params["dtype"]],
    choices={"mma_warpgroups": MMA_WARPGROUPS, "schedule": MMA_SCHEDULES, "cluster_m": CLUSTERS, "raster": RASTERS,
             "raster_group": RASTER_GROUPS, "epilogue": EPILOGUES, "dtype": tuple(DTYPE_BYTES)},
    consistency=consistency_issues, beyond_ts=checked_beyond_ts, launch_module="tslab.kernels.gemm_sm90_launch",
    single_buffers=_single_buffers,
)


def _threads(n: int) -> pipeline.CooperativeGroup:
    return pipeline.CooperativeGroup(pipeline.Agent.Thread, n)


def _ab_pipeline(p: dict[str, Any], nbytes: int, mma_threads: int) -> PipelineConfig:
    """The A/B ring's TmaAsync config. Alone, every MMA thread releases a stage, or with ``per_warp_release=True``
    one lane per MMA warp (CUTLASS's per-warp release); in a cluster of ``cluster_m`` blocks along M, a stage's B
    tile comes from all of them, so one lane per MMA warp per block in the cluster always releases it in each
    block, and each block's barrier counts them all."""
    stage_bytes = (p["tile_m"] + p["tile_n"]) * p["tile_k"] * nbytes
    cm = p["cluster_m"]
    consumers = cm * mma_threads // 32 if (cm > 1 or p["per_warp_release"]) else mma_threads
    return PipelineConfig.create_tma_async_pipeline_cfg(
        num_stages=p["stages"], num_bytes=stage_bytes, producer_group=_threads(1), consumer_group=_threads(consumers),
        cta_layout_vmnk=None if cm == 1 else (1, cm, 1, 1), advance_on_wait=True)


def make_tasks(params: dict[str, Any], *, k_tiles: int, geo: "Geometry | None" = None,
               gpu: "dict[str, Any] | None" = None) -> Blueprint:
    """Resources and tasks of the GEMM over ``k_tiles`` K tiles. Shared by :func:`build` and the GPU kernel."""
    validate(params)
    p = params
    nbytes = DTYPE_BYTES[p["dtype"]]
    mma_threads = 128 * p["mma_warpgroups"]
    load_warp = 4 * p["mma_warpgroups"]
    gpu = gpu or {}
    wq = WorkQueue(tile_scheduler_config=gpu.get("scheduler"), name="work_queue") if p["persistent"] else None
    gmem_ab = GmemAB(name="gmem_ab")
    smem_ab = SmemAB(name="smem_ab", tile_m=p["tile_m"], tile_n=p["tile_n"], tile_k=p["tile_k"], element_bytes=nbytes,
                     geo=geo, tma_atom_a=gpu.get("tma_atom_a"), tma_atom_b=gpu.get("tma_atom_b"), mA=gpu.get("mA"),
                     mB=gpu.get("mB"), tiled_mma=gpu.get("tiled_mma"), work_queue=wq,
                     pipeline_config=_ab_pipeline(p, nbytes, mma_threads))
    groups, per_group = epilogue_groups(p)
    smem_epi = SmemEpilogue(name="smem_epi", tile_m=p["tile_m"], tile_n=p["tile_n"], element_bytes=nbytes,
                            mma_threads=mma_threads, aliased=p["epilogue"] == "aliased", ab=smem_ab,
                            subtile=epilogue_subtile(p), groups=groups, per_group=per_group,
                            pipeline_config=PipelineConfig.create_async_async_pipeline_cfg(
                                num_stages=EPILOGUE_RING if groups > 1 else 1, producer_group=_threads(mma_threads),
                                consumer_group=_threads(32 * epilogue_warps(p)), cta_layout_vmnk=None))
    gmem_c = GmemC(name="gmem_c", epi=smem_epi, store_warp=load_warp + 1, tma_atom_c=gpu.get("tma_atom_c"),
                   mC=gpu.get("mC"))
    pdl = (PdlWaitBarrier(name="pdl_wait"), PdlLaunchBarrier(name="pdl_launch")) if p["pdl"] else ()
    schedules = _schedules(gmem_ab, smem_ab, smem_epi, gmem_c, wq, k_tiles, groups, pdl)
    queue = [wq] if wq is not None else []
    pingpong = p["schedule"] == "pingpong"
    split = register_split(p)
    other_registers = REGISTER_SPLIT["other"] if split else None
    accumulators = gpu.get("accumulators") or (None, None)
    if pingpong:  # one task per warpgroup, each with accumulators of its own
        mma_tasks = [MmaTask(name=f"MmaTask{wg}", src_resources=[smem_ab, *queue], dst_resources=[smem_epi],
                             warp_idx=4 * wg, num_warps=4, num_registers=REGISTER_SPLIT["mma"],
                             schedule=schedules["mma"](), accumulators=accumulators[wg]) for wg in (0, 1)]
    else:
        mma_tasks = [MmaTask(name="MmaTask", src_resources=[smem_ab, *queue], dst_resources=[smem_epi], warp_idx=0,
                             num_warps=load_warp, num_registers=REGISTER_SPLIT["mma"] if split else None,
                             schedule=schedules["mma"](), accumulators=accumulators[0])]
    tasks = [
        Task(name="LoadTask", src_resources=[gmem_ab, *pdl[:1], *queue], dst_resources=[smem_ab, *pdl[1:]],
             warp_idx=load_warp,
             num_warps=1, num_registers=other_registers, schedule=schedules["load"]()),
        *mma_tasks,
        Task(name="EpilogueTask", src_resources=[smem_epi, *queue], dst_resources=[gmem_c], warp_idx=load_warp + 1,
             num_warps=epilogue_warps(p), num_registers=other_registers, schedule=schedules["store"]()),
    ]
    graph = {smem_ab: [gmem_ab, *pdl[:1], *queue], smem_epi: [smem_ab, *queue], gmem_c: [smem_epi, *queue],
             **{launch: [] for launch in pdl[1:]}}  # the launch side carries no data: a node with no upstream
    aliases = [[["a_buf", "b_buf"], ["epi_buf"]]] if p["epilogue"] == "aliased" else []
    return Blueprint(tasks=tasks, graph=graph, smem_resources=[smem_ab, smem_epi], alias_groups=aliases)


def _schedules(gmem_ab: GmemAB, smem_ab: SmemAB, smem_epi: SmemEpilogue, gmem_c: GmemC, wq: "WorkQueue | None",
               k_tiles: int, groups: int, pdl: tuple = ()) -> dict[str, Any]:
    """Each task's schedule (a fresh one per call): one tile's body, inside the WorkQueue's tile loop when
    persistent. The C tile is staged and stored in ``groups`` groups of sub-tiles: the MMA task's tail stages
    them one after another (a TS task has one loop, the K loop), the store task's loop stores them in turn."""

    def next_tile(wq: Any) -> None:
        wq.wait()
        wq.get_and_advance_work_tile()
        wq.release()

    def mma_tile(smem_ab: Any, smem_epi: Any) -> None:
        smem_ab.wait()
        smem_ab.wgmma_first()
        with domain_loop(1, k_tiles, 1) as k:
            smem_ab.wait()
            smem_ab.wgmma()
            with k.last_iter():
                smem_ab.wgmma_drain()
            smem_ab.release()
        smem_ab.release()
        if groups == 1:
            smem_epi.acquire()
            smem_epi.stage_accumulators()
            smem_epi.commit()
        else:
            for group in range(groups):
                smem_epi.acquire()
                smem_epi.stage_group(group=group)
                smem_epi.commit()

    def store_tile(smem_epi: Any, gmem_c: Any) -> None:
        with domain_loop(0, groups, 1):
            smem_epi.wait()
            if groups == 1:
                smem_epi.read_tile()
                gmem_c.tma_store()
            else:
                slot = smem_epi.read_group()
                gmem_c.tma_store_group(slot=slot)
            smem_epi.release()

    def load_tile(gmem_ab: Any, smem_ab: Any) -> None:
        with domain_loop(0, k_tiles, 1):
            k = gmem_ab.k_coords()
            smem_ab.acquire()
            smem_ab.tma_load(k=k)
            smem_ab.commit()

    if wq is None:
        load, mma, store = schedule(load_tile), schedule(mma_tile), schedule(store_tile)
        if pdl:
            load = _with_pdl(load_tile, None)
        return {"load": lambda: load(gmem_ab, smem_ab, *pdl), "mma": lambda: mma(smem_ab, smem_epi),
                "store": lambda: store(smem_epi, gmem_c)}

    def per_tile(body: Any) -> Any:
        @schedule
        def tiles(first: MemoryResource, second: MemoryResource, wq: WorkQueue) -> None:
            with work_tile_loop(wq):
                body(first, second)
                next_tile(wq)

        return tiles

    load, mma, store = per_tile(load_tile), per_tile(mma_tile), per_tile(store_tile)
    if pdl:
        load = _with_pdl(load_tile, next_tile)
    return {"load": lambda: load(gmem_ab, smem_ab, *pdl, wq), "mma": lambda: mma(smem_ab, smem_epi, wq),
            "store": lambda: store(smem_epi, gmem_c, wq)}


def _with_pdl(load_tile: Any, next_tile: Any) -> Any:
    """The load task's schedule under programmatic dependent launch: wait for the grid before this one (its
    writes of A and B) before the first TMA load, and let the next grid launch once the last one is issued (its
    blocks start as this grid's leave the SMs, instead of after this grid ends and the launch that follows)."""
    if next_tile is None:
        @schedule
        def load(gmem_ab: Any, smem_ab: Any, pdl_wait: Any, pdl_launch: Any) -> None:
            pdl_wait.wait_griddep()
            load_tile(gmem_ab, smem_ab)
            pdl_launch.launch_griddep()

        return load

    @schedule
    def load_tiles(gmem_ab: Any, smem_ab: Any, pdl_wait: Any, pdl_launch: Any, wq: Any) -> None:
        pdl_wait.wait_griddep()
        with work_tile_loop(wq):
            load_tile(gmem_ab, smem_ab)
            next_tile(wq)
        pdl_launch.launch_griddep()

    return load_tiles


def build(tile_m: int = 128, tile_n: int = 256, tile_k: int = 64, stages: int = 3, mma_warpgroups: int = 2,
          schedule: str = "cooperative", persistent: bool = True, cluster_m: int = 1, raster: str = "grouped",
          raster_group: int = 8, epilogue: str = "dedicated", dtype: str = "fp16", k_tiles: int = 4,
          swap_ab: bool = False, per_warp_release: bool = False, pdl: bool = False) -> Blueprint:
    """Fresh TS objects of one output tile's GEMM over ``k_tiles`` K tiles (CPU check)."""
    params = {"tile_m": tile_m, "tile_n": tile_n, "tile_k": tile_k, "stages": stages,
              "mma_warpgroups": mma_warpgroups, "schedule": schedule, "persistent": persistent,
              "cluster_m": cluster_m, "raster": raster, "raster_group": raster_group, "epilogue": epilogue,
              "dtype": dtype, "swap_ab": swap_ab, "per_warp_release": per_warp_release, "pdl": pdl}
    return make_tasks(params, k_tiles=k_tiles)


def design(**params: Any):
    """The Hopper GEMM design (see the module docstring for the flow)."""
    from ..core.design import Design

    return Design(NAME, params)
