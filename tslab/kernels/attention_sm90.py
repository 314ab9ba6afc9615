"""Hopper attention forward: a TMA load warp fills Q and a K/V ring, wgmma warpgroups run the online softmax in
registers (FlashAttention-3's ping-pong and intra-warpgroup overlap as TS resources), an epilogue stores O by TMA.

O = softmax(Q K^T * scale [causal mask]) V and the row log-sum-exp LSE = max * scale + log(sum), for fp16 or bf16
Q, K, V, O in flash-attn's ``(batch, seqlen, heads, head_dim)`` layout (LSE fp32 ``(batch, heads, seqlen_q)``),
head_dim 64 or 128, query heads a multiple of the K/V heads (grouped-query attention), any sequence lengths (the
last K/V tile is masked past seqlen_k, Q rows past seqlen_q are zero-filled by TMA and their O rows clipped). The
causal mask is aligned bottom-right, as flash-attn's. A block computes one Q tile of ``wg_rows x mma_warpgroups``
rows of one (batch, head): one tile per block (causal tiles longest first: ``causal_order``), or with
``persistent=True`` the tiles TS's ``WorkQueue`` (static persistent scheduler) hands it. The K/V loop of a tile
runs as many trips as it has K/V tiles (``AttentionTask.get_domain``: all of them, or those left of the causal
diagonal), from the last to the first, so the tiles that need a mask come first. The same resources and tasks are
checked on the CPU (``design()``, ``kv_tiles`` trips) and run on the GPU
(:mod:`tslab.kernels.attention_sm90_launch`).

Resource/task flow (W = 4 * mma_warpgroups; warps in brackets; overlap=True)::

    Q, K, V --LoadTask [warp W]: Q -> smem_q (TmaAsync, q_stages); K0; loop i >= 1: K_i, V_i-1; V_last
               -> smem_kv (TmaAsync, kv_stages; a stage holds a K or a V tile, in the order they are read)
    smem_q, smem_kv --MmaTask0 [warps 0-3], MmaTask1 [warps 4-7] (ping-pong; one MmaTask [warps 0..W-1]
               otherwise), each with registers of its own (S, P, O, row max and sums):
               head: wait Q; start; wait K0 -> [turn] S = Q K0^T [turn] -> wait S -> release K0 -> softmax
               loop i >= 1: wait K_i -> [turn] P = S (to 16 bits), S = Q K_i^T; wait V_i-1 -> O += P V_i-1 [turn]
               -> wait S -> release K_i -> softmax (under the PV wgmma) -> wait PV -> release V_i-1 -> rescale O
               then release Q (every Q K^T is done: a persistent block's next Q loads under the tail)
               tail: wait V_last -> [turn] P = S, O += P V_last [turn] -> wait PV -> release; acquire smem_o
               -> O / sum -> stmatrix -> commit; LSE -> gmem_lse
    smem_o  --EpilogueTask [warps W+1..W+3]: wait -> TMA store O -> release--> gmem_o
    [turn] = mma_turn (AsyncAsync, 1 stage, ping-pong only): MmaTask0 acquires and commits it around its GEMMs,
             MmaTask1 waits and releases it around its own, so the two issue their wgmmas in turns
    three ping-pong warpgroups (head_dim 64, 192-row tiles): a ring of turns mma_turn0..2, turn k from MmaTask k to
             MmaTask k + 1: each waits for the turn before it and gives its own after its GEMMs; MmaTask0 does not
             wait before its head's GEMM, MmaTask2 gives nothing after its tail's
    overlap=False: loop i: wait K_i -> [turn] S [turn] -> wait S -> release -> softmax, rescale -> wait V_i ->
             [turn] P = S, O += P V_i [turn] -> wait PV -> release (the ring is filled K0, V0, K1, V1, ...)
    P = S: the softmax leaves P in fp32 in S's registers; the step that issues the PV wgmma converts it just
             before (``convert``), so P has one 16-bit copy per use and none lives across the loop's back edge
    turn_after_v=True: loop i >= 1: wait K_i -> note its stage -> wait V_i-1 -> [turn] P = S, S = Q K_i^T (the
             noted stage), O += P V_i-1 [turn] -> ...: the turn is held for GEMMs whose tiles have landed only
    rescale_under_qk=True: loop i >= 1: ... S = Q K_i^T; rescale O; wait V_i-1 -> O += P V_i-1 [turn] -> ... ->
             wait PV -> release V_i-1; after the loop: rescale O, release Q: O is rescaled while the tensor cores
             run Q K^T, not after the wait for P V (FlashAttention-3's order)
    poly_exp2=k: in each softmax every k-th exp2 of a row is a cubic on the FMA pipe, the rest MUFU.EX2
    epilogue_warps=1: one warp waits for O and stores it; the other two of its warpgroup are parked
    late_pv_wait=True: the wait for the P V wgmma stays after the softmax's exponentials in the SASS (ptxas moves it
             up to just after the row max without it): a no-op on the Q stage's barrier computed from the last
             row's sum comes before it (:mod:`tslab.kernels.schedule_anchor`)
    skip_unseen=True: each MMA task skips the softmax of the leading trips whose K/V tile none of its rows
             sees (right of its causal diagonal, or every trip where its rows lie past seqlen_q, as a 192-row
             tile's last warpgroup at 2,048 queries) and multiplies P = 0 there; its steps, the ones TS checks,
             are the same. Timed 3-10% slower at head_dim 64 causal (benchmarks/NOTES.md A39): off
    convert_before_turn=True: the loop converts P to 16 bits at the trip's start, before the waits for K and for
             the turn (a step on Q), not inside the turn where it delays the Q K^T issue. Timed 1-12% slower
             (benchmarks/NOTES.md A40): off
    mask_prefix=True: the trips that need a mask (the loop's first: K/V tiles go last to first) are counted once a
             tile, so the loop's check is one compare of the trip's index (head_dim 64 causal: an unmasked trip
             451 -> 444 instructions). Timed level with the default, and below ``mask_bits`` alone: off
    mask_bits=True: the mask as bits of a register, one bit test a score, which ptxas turns into R2P (seven
             predicates from a register at once) and FSEL, flash-attn-4's way, not a compare and a select a score
             (head_dim 64 causal: a masked trip 588 -> 563 instructions; both flags 556). Timed +1-2% causal at
             2,048 keys, inside the +-2% of noise (benchmarks/NOTES.md A41): off
    snake_rounds=True (persistent, a ``longest_first`` order): every other round of tiles (one a block) in reverse,
             so the block that took a round's longest tile takes the next round's shortest
    persistent=True: each task's body sits in ``work_tile_loop(work_queue)`` and ends with
             work_queue: wait -> get_and_advance_work_tile -> release; with ``q_stages=2`` the load warp fills
             the next tile's Q while this tile's is still read

Resources:
    SmemQ     the Q tile (``q_stages`` of them), allocation ``q_buf``; the online softmax (``softmax``,
              ``rescale``) is its consumer work, as it runs over its rows while the tile is held
    SmemKV    the K/V ring, allocation ``kv_buf``; the wgmmas are its consumer work. With the overlap a warpgroup
              holds K_i and V_i-1 at once: one stage deadlocks, which TS's checker shows. Every MMA thread
              releases a Q or K/V stage, or with ``per_warp_release=True`` one lane per MMA warp
    MmaTurn   ``mma_turn`` (``mma_turn0..2`` for three): no memory, the warpgroups' turn to issue wgmmas (ping-pong)
    SmemO     the O tile staged for the TMA store, allocation ``o_buf`` (AsyncAsync, 1 stage); with
              ``epilogue='aliased'`` it shares Q's bytes through an alias group (one tile per block only)
    GmemLse   the LSE, stored from registers; GmemO the output, stored by TMA
    WorkQueue (persistent only) TS's static persistent tile scheduler over (m_blocks, heads, batch)
Tasks:
    MmaTask   warps 0..W-1: ping-pong: ``MmaTask0``, ``MmaTask1`` (and ``MmaTask2``), a warpgroup each (64 or 128
              rows each);
              cooperative: one task of both warpgroups, no turns; one warpgroup: one task (no setmaxnreg: 256
              threads have 255 registers each)
    LoadTask  warp W: one elected thread issues the TMA loads (setmaxnreg 24)
    EpilogueTask warps W+1..W+3: one issues the TMA store of O (setmaxnreg 24; the load warp and these three form
              the warpgroup whose registers go to the MMA warpgroups: 2 x 128 x 240 + 128 x 24 = 64,512; with three
              MMA warpgroups 3 x 128 x 160 + 128 x 24 = 64,512); ``epilogue_warps=1``: warp W+1 only, and
    ParkTask  warps W+2..W+3: no work (they set their registers with their warpgroup and are done)

What TS 4.8.1 cannot express, and how the kernel does it instead: a wgmma is asynchronous, but TS treats consumer
work as done when its step ends, so the waits for the wgmma groups are work steps of their own (``wgmma_wait``,
placed where the release that depends on them follows); TS checks the order of the steps, not that a wgmma group
is complete at the release. The mask and the number of K/V trips per tile are runtime values; the checker sees one
tile of ``kv_tiles`` trips (and an export checks every trip count from 1 to 2 x kv_stages + 1). FlashAttention-3
orders its warpgroups with named barriers (bar.sync / bar.arrive); TS has no named-barrier resource, so the turn is
an mbarrier ring (``mma_turn``), which TS sees and checks.
"""

from __future__ import annotations

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
from ..errors import DesignError, did_you_mean
from .attention_sm90_resources import (
    AttentionTask,
    GmemLse,
    GmemO,
    MmaTurn,
    SmemKV,
    SmemO,
    SmemQ,
)
from .rules import KernelRules, ShapeRule, SingleBuffer

NAME = "attention_sm90"
SUMMARY = ("Hopper attention: TMA -> Q + K/V ring -> ping-pong wgmma warpgroups, online softmax in registers, "
           "P as the PV wgmma's A operand -> TMA store of O, LSE")
#: Defaults: FlashAttention-3's configuration for head_dim 128: 128-row Q tiles as two ping-pong warpgroups of 64
#: rows, 128-wide K/V tiles, the intra-warpgroup overlap, four K/V stages (two K and two V tiles in flight).
PARAMS: dict[str, Any] = {
    "head_dim": 128, "dtype": "bf16", "causal": False, "wg_rows": 64, "tile_n": 128, "kv_stages": 4,
    "q_stages": 1, "mma_warpgroups": 2, "schedule": "pingpong", "overlap": True, "persistent": False,
    "causal_order": "by_pair", "epilogue": "dedicated", "turn_after_v": False, "per_warp_release": False,
    "rescale_under_qk": False, "poly_exp2": 0, "epilogue_warps": 3, "late_pv_wait": False, "pdl": False,
    "skip_unseen": False, "convert_before_turn": False, "mask_prefix": False, "mask_bits": False,
    "snake_rounds": False, "kv_tiles": 3,
}
#: head_dim 64 in 192-row tiles: three ping-pong warpgroups of 64 rows in a ring of turns (FlashAttention-3's head_dim
#: 64 configuration), 160 registers each, 128-wide K/V tiles (S 64 + P 32 + O 32 registers a thread).
THREE_WARPGROUPS: dict[str, Any] = {"head_dim": 64, "tile_n": 128, "kv_stages": 4, "mma_warpgroups": 3}
#: head_dim 64's preset: the three warpgroups, 1.03-1.15x the two on the H200 from s = 4096 (0.97-0.98x causal at
#: s = 2048; benchmarks/NOTES.md A20).
HEAD_DIM_64: dict[str, Any] = THREE_WARPGROUPS
#: The params over :data:`PARAMS` each head_dim starts from: the defaults at 128, :data:`HEAD_DIM_64` at 64.
HEAD_DIM_PRESETS: dict[int, dict[str, Any]] = {128: {}, 64: HEAD_DIM_64}
#: head_dim 64 in the head_dim 128 defaults' 128-row tiles (two ping-pong warpgroups): the preset until A20.
HEAD_DIM_64_TWO_WARPGROUPS: dict[str, Any] = {"head_dim": 64, "tile_n": 128, "kv_stages": 4}
#: One warpgroup of 64 rows, no partner to take turns with (the teaching baseline of the ping-pong).
ONE_WARPGROUP: dict[str, Any] = {"mma_warpgroups": 1, "schedule": "cooperative"}
#: O staged over Q's bytes (FlashAttention-3's SMEM saving): the MMA warpgroup releases Q before it writes O, and
#: with one tile per block nothing loads Q again; TS checks the alias group.
ALIASED: dict[str, Any] = {**ONE_WARPGROUP, "epilogue": "aliased"}
#: Q tiles in SMEM: one, or with ``persistent=True`` two, so that the load warp fills the next tile's Q while the
#: MMA warpgroups still multiply this one's (flash-attn-4's static persistent schedule for non-causal rows).
Q_STAGES = (1, 2)
#: The order of causal tiles (blocks start in launch order; a persistent block takes every SM-count-th tile of it):
#: ``by_pair`` takes each (head, batch) pair's tiles longest first, pair after pair; ``longest_first`` every pair's
#: longest tile before any pair's next longest, in sections of pairs whose K and V fit in L2 (flash-attn-4's LPT
#: order), so the tiles that start last are the shortest. Persistent, ``by_pair`` can hand every block tiles of one
#: length (132 SMs and 11 or 22 Q tiles a pair: each block always the same Q tile of its pairs), and
#: ``longest_first`` gives every block a tile of each length in turn. ``longest_first_all`` is that order over all
#: pairs as one section: a persistent block's share of each length then differs by at most one tile, where a
#: narrower last section starts the lengths over part-way through the blocks (head_dim 64, 2,048 keys: 80 + 48 pairs),
#: at the price of K and V no longer held in L2 a section at a time. ``longest_first_zigzag`` keeps the sections and
#: runs every other one shortest first, so the blocks that met one section's long tiles meet the next one's short.
CAUSAL_ORDERS = ("by_pair", "longest_first", "longest_first_all", "longest_first_zigzag")
#: ``snake_rounds=True`` (persistent, any of the ``longest_first`` orders): a persistent block takes every
#: SM-count-th tile of the order, so a launch runs in rounds of one tile a block, each round's lengths falling from
#: the first block to the last; every other round is handed out in reverse, so the block that took one round's
#: longest tile takes the next round's shortest. Aimed at launches of a few rounds (small batch x heads), where the
#: LPT order alone leaves the first blocks 12-32% above the mean (``benchmarks/causal_balance.py``).
#: ``poly_exp2``: 0, every exp2 of the softmax on MUFU (16 a clock an SM); k, every k-th exp2 of a row as a cubic
#: on the FMA pipe (:mod:`tslab.kernels.fma_exp2`), so the two units share the row; where a score may be masked
#: (the head, every causal trip) a select makes the cubic's 2^-125 for -inf a 0.
POLY_EXP2 = (0, 2, 3, 4, 5, 6, 8)
#: ``epilogue_warps``: the warps beside the load warp that wait for O and store it: three, or one, the other two of
#: the load warp's warpgroup parked (a task with no work: they set their registers with the warpgroup and exit, as
#: flash-attn-4's producer warpgroup does), so that fewer idle warps poll the O stage's barrier. Timed level or
#: slower on an H100 (benchmarks/NOTES.md, A36), so three stays the default.
EPILOGUE_WARP_COUNTS = (1, 3)
#: ``dedicated``: O has SMEM of its own; ``aliased``: O takes Q's bytes (alias group ``[["q_buf"], ["o_buf"]]``).
EPILOGUES = ("dedicated", "aliased")
DTYPES = {"fp16": "float16", "bf16": "bfloat16"}
HEAD_DIMS = (64, 128)
WG_ROWS = (64, 128)
MMA_WARPGROUPS = (1, 2, 3)
#: ``pingpong``: each warpgroup is a TS task of its own and the two issue their GEMMs in turns (``mma_turn``);
#: ``cooperative``: one task of both warpgroups, which issue whenever they are ready.
MMA_SCHEDULES = ("pingpong", "cooperative")
#: K/V tile widths: the QK^T wgmma's N (a multiple of 8 up to 256) and the PV wgmma's K (a multiple of 16).
TILE_N = tuple(range(64, 257, 16))
#: Registers per MMA thread (setmaxnreg) and per thread of the load/epilogue warpgroup, FlashAttention-3's split:
#: TS requires each task's change from the launch's even share to sum to <= 0: two MMA warpgroups (65,536 / 384
#: threads -> 168): 8 warps x (240 - 168) + 4 warps x (24 - 168) = 0; three (65,536 / 512 -> 128): 12 x (160 -
#: 128) + 4 x (24 - 128) = -32. One warpgroup needs none (256 threads have 255 registers each).
REGISTERS: dict[int, dict[str, int | None]] = {1: {"mma": None, "other": None}, 2: {"mma": 240, "other": 24},
                                                3: {"mma": 160, "other": 24}}
#: fp32 S + fp32 O + 16-bit P registers a thread may hold (what 240 leaves after addresses, loop state, row
#: statistics and the epilogue's conversion). With P converted where its wgmma reads it (no fp32 copy of P lives
#: across the K/V loop's back edge), FlashAttention-3's 64 x 176 tile at head_dim 128 (196) and 64 x 192 (208)
#: compile without spills or ptxas' injected waits, as does 64 x 224 at head_dim 64 (200); 64 x 256 at head_dim 64
#: (224) spills. Before that change 160 was the most that compiled clean.
MAX_TILE_REGISTERS = 208
#: With three MMA warpgroups a thread has 160 registers: the same 32 left for the rest, 128 for S, P and O (64 x 128
#: tiles at head_dim 64, FlashAttention-3's 192-row configuration).
MAX_TILE_REGISTERS_3WG = 128


def max_tile_registers(params: dict[str, Any]) -> int:
    """The S, P and O registers a thread of ``params``' MMA warpgroups may hold."""
    return MAX_TILE_REGISTERS_3WG if params["mma_warpgroups"] == 3 else MAX_TILE_REGISTERS
#: The warps beside the MMA warpgroups: the load warp and ``epilogue_warps`` that wait for O (one stores it), the
#: rest of that warpgroup parked.
OTHER_WARPS = 4


def _park() -> None:
    """A parked task's schedule: one trip with no step (its warps set their registers and are done)."""
    with domain_loop(0, 1, 1):
        pass


def mma_threads(params: dict[str, Any]) -> int:
    return 128 * params["mma_warpgroups"]


def block_warps(params: dict[str, Any]) -> int:
    """Warps per block: the MMA warpgroups and one warpgroup of the load warp and the epilogue (or parked) warps."""
    return 4 * params["mma_warpgroups"] + OTHER_WARPS


def tile_rows(params: dict[str, Any]) -> int:
    """Rows of Q per tile: every MMA warpgroup's."""
    return params["wg_rows"] * params["mma_warpgroups"]


def tile_registers(params: dict[str, Any]) -> int:
    """fp32 S, fp32 O and 16-bit P registers per MMA thread (each warpgroup holds its own rows)."""
    rows = params["wg_rows"]
    return rows * params["tile_n"] // 128 + rows * params["head_dim"] // 128 + rows * params["tile_n"] // 256


def validate(params: dict[str, Any]) -> None:
    """Raise :class:`DesignError` naming the param and what is allowed for any invalid combination. The K/V ring's
    depth is left to TS's checker (one stage deadlocks with the overlap, and the checker shows how)."""

    def bad(name: str, message: str, hint: str) -> DesignError:
        return DesignError("invalid-config", f"kernel '{NAME}' param '{name}'", message, hint)

    p = params
    for name, allowed in (("dtype", tuple(DTYPES)), ("schedule", MMA_SCHEDULES), ("epilogue", EPILOGUES),
                          ("causal_order", CAUSAL_ORDERS)):
        if p[name] not in allowed:
            raise DesignError("input", f"kernel '{NAME}' param '{name}'", f"{name}={p[name]!r} is not supported",
                              did_you_mean(str(p[name]), list(allowed)))
    for name in ("causal", "overlap", "persistent"):
        if not isinstance(p[name], bool):
            raise bad(name, f"{name}={p[name]!r} is not a bool", "use True or False")
    if p["head_dim"] not in HEAD_DIMS:
        raise bad("head_dim", f"head_dim={p['head_dim']!r} is not 64 or 128",
                  "use 64 or 128 (one or two 128-byte swizzle rows of 16-bit elements)")
    if p["mma_warpgroups"] not in MMA_WARPGROUPS:
        raise bad("mma_warpgroups", f"mma_warpgroups={p['mma_warpgroups']!r} is not 1, 2 or 3",
                  "use 2 warpgroups (ping-pong or cooperative), 3 (head_dim 64) or 1")
    if p["schedule"] == "pingpong" and p["mma_warpgroups"] == 1:
        raise bad("mma_warpgroups", "mma_warpgroups=1 with schedule='pingpong': ping-pong needs two or three "
                  "warpgroups to take turns", "use mma_warpgroups=2, or schedule='cooperative'")
    if p["schedule"] == "pingpong" and p["mma_warpgroups"] == 3 and not p["overlap"]:
        raise bad("overlap", "overlap=False with three ping-pong warpgroups: the ring of turns starts at the first "
                  "K/V step and ends at the last, which only the overlapped loop has apart from its body",
                  "use overlap=True, or mma_warpgroups=2")
    if p["wg_rows"] not in WG_ROWS:
        raise bad("wg_rows", f"wg_rows={p['wg_rows']!r} is not 64 or 128",
                  "a warpgroup's wgmma covers 64 rows: use 64, or 128 (two wgmmas a K step)")
    if p["tile_n"] not in TILE_N:
        raise bad("tile_n", f"tile_n={p['tile_n']!r} is not a multiple of 16 in 64..256",
                  "use one of " + ", ".join(map(str, TILE_N)) + ": P feeds the PV wgmma in steps of 16 keys")
    if p["q_stages"] not in Q_STAGES:
        raise bad("q_stages", f"q_stages={p['q_stages']!r} is not 1 or 2",
                  "use 1, or 2 with persistent=True (the next tile's Q loads while this one's is read)")
    if p["q_stages"] == 2 and p["epilogue"] == "aliased":
        raise bad("q_stages", "q_stages=2 with epilogue='aliased': O is staged over Q's bytes, which the next "
                  "tile's Q would fill", "use q_stages=1 with epilogue='aliased'")
    for flag in ("turn_after_v", "per_warp_release", "rescale_under_qk", "late_pv_wait", "pdl", "skip_unseen",
                 "convert_before_turn", "mask_prefix", "mask_bits", "snake_rounds"):
        if not isinstance(p[flag], bool):
            raise bad(flag, f"{flag}={p[flag]!r} is not a bool", "use True or False")
    if p["snake_rounds"] and not p["persistent"]:
        raise bad("snake_rounds", "snake_rounds=True with persistent=False: rounds are a persistent block's tiles, "
                  "one a block; blocks of one tile start wherever an SM frees", "use persistent=True, or "
                  "snake_rounds=False")
    if p["snake_rounds"] and p["causal_order"] == "by_pair":
        raise bad("snake_rounds", "snake_rounds=True with causal_order='by_pair': the snake reverses rounds of an "
                  "order whose lengths fall across the blocks, which by_pair's do not", "use causal_order="
                  "'longest_first' (or '_all', '_zigzag'), or snake_rounds=False")
    if p["turn_after_v"] and (p["schedule"] != "pingpong" or not p["overlap"]):
        raise bad("turn_after_v", "turn_after_v=True without the overlapped ping-pong: only its K/V step waits for "
                  "a V tile between taking the turn and giving it",
                  "use schedule='pingpong' with overlap=True, or turn_after_v=False")
    if p["rescale_under_qk"] and not p["overlap"]:
        raise bad("rescale_under_qk", "rescale_under_qk=True with overlap=False: only the overlapped loop issues a "
                  "Q K^T wgmma before the P V one that adds to O", "use overlap=True, or rescale_under_qk=False")
    if isinstance(p["epilogue_warps"], bool) or p["epilogue_warps"] not in EPILOGUE_WARP_COUNTS:
        raise bad("epilogue_warps", f"epilogue_warps={p['epilogue_warps']!r} is not 1 or 3",
                  "use 3 (the load warp's warpgroup waits for O) or 1 (two of its warps parked)")
    if p["epilogue_warps"] != 3 and p["persistent"]:
        raise bad("epilogue_warps", "epilogue_warps=1 with persistent=True: TS runs every task of a persistent kernel "
                  "over the work queue, and parked warps take no tiles", "use epilogue_warps=3 with persistent=True")
    if isinstance(p["poly_exp2"], bool) or p["poly_exp2"] not in POLY_EXP2:
        raise bad("poly_exp2", f"poly_exp2={p['poly_exp2']!r} is not one of {', '.join(map(str, POLY_EXP2))}",
                  "use 0 (every exp2 on MUFU) or k in 2..8: every k-th exp2 of the softmax on the FMA pipe")
    if p["epilogue"] == "aliased" and p["persistent"]:
        raise bad("epilogue", "epilogue='aliased' with persistent=True: the load warp fills the next tile's Q "
                  "while the TMA store still reads the O tile staged over it",
                  "use epilogue='dedicated' with persistent=True")
    need, most = tile_registers(p), max_tile_registers(p)
    if need > most:
        three = p["mma_warpgroups"] == 3
        too_wide_head = three and p["head_dim"] == 128  # no tile fits: the warpgroup count is what to change
        raise bad("mma_warpgroups" if too_wide_head else "tile_n",
                  f"wg_rows x tile_n = {p['wg_rows']} x {p['tile_n']} with head_dim={p['head_dim']} needs "
                  f"{need} registers per MMA thread for S, P and O, over {most}"
                  + (" (three MMA warpgroups have 160 registers a thread)" if three else ""),
                  "use mma_warpgroups=2 for head_dim 128" if too_wide_head
                  else "use a narrower tile_n or wg_rows=64 (e.g. tile_n=128)")
    for name, low in (("kv_stages", 1), ("kv_tiles", 1)):
        if name not in p:  # the GPU kernel's params: its trips are each tile's own (AttentionTask.get_domain)
            continue
        if not isinstance(p[name], int) or isinstance(p[name], bool) or p[name] < low:
            raise bad(name, f"{name}={p[name]!r} is not an int >= {low}",
                      "use 2 or more K/V stages (4 is the default)" if name == "kv_stages"
                      else "the CPU check runs kv_tiles K/V iterations per tile: use 1 or more")


def _shape_rule(params: dict[str, Any], dtype: str) -> ShapeRule:
    return ShapeRule(("batch", "seqlen_q", "seqlen_k", "heads", "heads_kv"), (1, 1, 1, 1, 1), (1, 1, 1, 1, 1),
                     f"q (batch, seqlen_q, heads, {params['head_dim']}) and k, v (batch, seqlen_k, heads_kv, "
                     f"{params['head_dim']}) of one dtype, heads a multiple of heads_kv",
                     ("", "", "", "", "heads must be a multiple of heads_kv"))


def _refuse(params: dict[str, Any], shape: tuple[int, ...], dtype: str) -> str | None:
    _, _, _, heads, heads_kv = shape
    if heads % heads_kv:
        return (f"heads={heads} is not a multiple of heads_kv={heads_kv}; grouped-query attention needs each K/V "
                "head shared by the same number of query heads")
    return None


#: The GPU kernel's rules: the problem is (batch, seqlen_q, seqlen_k, heads, heads_kv) for the design's head_dim
#: and dtype; an export holds the design compiled with and without the causal mask (``variants``).
RULES = KernelRules(
    dtypes=tuple(DTYPES.values()), default_shape=(4, 4096, 4096, 32, 32), default_dtype="bfloat16",
    shape=_shape_rule, trip_param="kv_tiles", stages_param="kv_stages", package="attention", refuse=_refuse,
    dtype_of=lambda params: DTYPES[params["dtype"]],
    choices={"head_dim": HEAD_DIMS, "wg_rows": WG_ROWS, "q_stages": Q_STAGES, "mma_warpgroups": MMA_WARPGROUPS,
             "schedule": MMA_SCHEDULES, "epilogue": EPILOGUES, "causal_order": CAUSAL_ORDERS, "dtype": tuple(DTYPES),
             "poly_exp2": POLY_EXP2, "epilogue_warps": EPILOGUE_WARP_COUNTS},
    launch_module="tslab.kernels.attention_sm90_launch", variants=("causal", (False, True)),
    single_buffers=lambda params: (SingleBuffer("smem_o", "O"),),
)


def _threads(n: int) -> pipeline.CooperativeGroup:
    return pipeline.CooperativeGroup(pipeline.Agent.Thread, n)


def make_tasks(params: dict[str, Any], *, kv_tiles: Any, geo: Any = None, gpu: dict[str, Any] | None = None
               ) -> Blueprint:
    """Resources and tasks of one Q tile over ``kv_tiles`` K/V iterations (an int on the CPU; on the GPU the
    tasks' ``get_domain``). Shared by :func:`build` and the GPU kernel."""
    validate(params)
    p = params
    gpu = gpu or {}
    nbytes = 2
    rows, d, n = tile_rows(p), p["head_dim"], p["tile_n"]
    threads = mma_threads(p)
    # Who releases a Q or K/V stage: every MMA thread, or one lane per MMA warp (CUTLASS's and flash-attn-4's).
    releasing = threads // 32 if p["per_warp_release"] else threads
    load_warp = 4 * p["mma_warpgroups"]
    pingpong = p["schedule"] == "pingpong"
    wq = WorkQueue(tile_scheduler_config=gpu.get("scheduler"), name="work_queue") if p["persistent"] else None
    queue = [wq] if wq is not None else []
    mma_qk, mma_pv, scale_log2, ext = gpu.get("mma_qk"), gpu.get("mma_pv"), gpu.get("scale_log2"), gpu.get("ext")
    smem_q = SmemQ(name="smem_q", rows=rows, head_dim=d, element_bytes=nbytes, geo=geo, tma_atom=gpu.get("tma_q"),
                   mQ=gpu.get("mQ"), ext=ext, mma_qk=mma_qk, scale_log2=scale_log2,
                   pipeline_config=PipelineConfig.create_tma_async_pipeline_cfg(
                       num_stages=p["q_stages"], num_bytes=rows * d * nbytes, producer_group=_threads(1),
                       consumer_group=_threads(releasing), cta_layout_vmnk=None))
    smem_kv = SmemKV(name="smem_kv", tile_n=n, head_dim=d, element_bytes=nbytes, geo=geo, q=smem_q,
                     tma_atom_k=gpu.get("tma_k"), tma_atom_v=gpu.get("tma_v"), mK=gpu.get("mK"), mV=gpu.get("mV"),
                     ext=ext, mma_qk=mma_qk, mma_pv=mma_pv,
                     pipeline_config=PipelineConfig.create_tma_async_pipeline_cfg(
                         num_stages=p["kv_stages"], num_bytes=n * d * nbytes, producer_group=_threads(1),
                         consumer_group=_threads(releasing), cta_layout_vmnk=None, advance_on_wait=True))
    smem_o = SmemO(name="smem_o", rows=rows, head_dim=d, element_bytes=nbytes, geo=geo, mma_pv=mma_pv,
                   scale_log2=scale_log2, pipeline_config=PipelineConfig.create_async_async_pipeline_cfg(
                       num_stages=1, producer_group=_threads(threads),
                       consumer_group=_threads(32 * p["epilogue_warps"]), cta_layout_vmnk=None))
    gmem_lse = GmemLse(name="gmem_lse", geo=geo, mLSE=gpu.get("mLSE"), ext=ext, mma_pv=mma_pv)
    gmem_o = GmemO(name="gmem_o", o=smem_o, store_warp=load_warp + 1, tma_atom=gpu.get("tma_o"), mO=gpu.get("mO"),
                   ext=ext)
    warpgroups = p["mma_warpgroups"]
    turns = [MmaTurn(name="mma_turn" if warpgroups == 2 else f"mma_turn{k}",
                     pipeline_config=PipelineConfig.create_async_async_pipeline_cfg(
                         num_stages=1, producer_group=_threads(128), consumer_group=_threads(128),
                         cta_layout_vmnk=None))
             for k in range((1 if warpgroups == 2 else warpgroups) if pingpong else 0)]
    trips = kv_tiles if geo is None else AttentionTask.get_domain
    pdl = (PdlWaitBarrier(name="pdl_wait"), PdlLaunchBarrier(name="pdl_launch")) if p["pdl"] else ()
    sched = _Schedules(overlap=p["overlap"], trips=trips, wq=wq, turn_after_v=p["turn_after_v"], causal=p["causal"],
                       rescale_under_qk=p["rescale_under_qk"], pdl=pdl,
                       convert_before_turn=p["convert_before_turn"])
    caches = gpu.get("caches") or (None,) * warpgroups
    regs = REGISTERS[warpgroups]
    if pingpong:
        mma_tasks = []
        for wg in range(warpgroups):
            if warpgroups == 2:  # one turn: the lead acquires and commits it, the other waits and releases it
                role, gets, gives = ("lead", [], turns) if wg == 0 else ("follow", turns, [])
            else:  # a ring: turn k from warpgroup k to k + 1, so warpgroup k waits turn k - 1 and gives turn k
                role = "first" if wg == 0 else "last" if wg == warpgroups - 1 else "middle"
                gets, gives = [turns[wg - 1]], [turns[wg]]
            mma_tasks.append(AttentionTask(
                name=f"MmaTask{wg}", src_resources=[smem_q, smem_kv, *gets, *queue],
                dst_resources=[smem_o, gmem_lse, *gives], warp_idx=4 * wg, num_warps=4, num_registers=regs["mma"],
                geo=geo, ext=ext, cache=caches[wg],
                schedule=sched.mma(smem_q, smem_kv, smem_o, gmem_lse, (*gets, *gives), role)))
    else:
        mma_tasks = [AttentionTask(name="MmaTask", src_resources=[smem_q, smem_kv, *queue],
                                   dst_resources=[smem_o, gmem_lse], warp_idx=0, num_warps=load_warp,
                                   num_registers=regs["mma"], geo=geo, ext=ext, cache=caches[0],
                                   schedule=sched.mma(smem_q, smem_kv, smem_o, gmem_lse, (), None))]
    tasks = [
        AttentionTask(name="LoadTask", src_resources=[*pdl[:1], *queue], dst_resources=[smem_q, smem_kv, *pdl[1:]],
                      warp_idx=load_warp, num_warps=1, num_registers=regs["other"], geo=geo, ext=ext,
                      schedule=sched.load(smem_q, smem_kv)),
        *mma_tasks,
        Task(name="EpilogueTask", src_resources=[smem_o, *queue], dst_resources=[gmem_o], warp_idx=load_warp + 1,
             num_warps=p["epilogue_warps"], num_registers=regs["other"], schedule=sched.store(smem_o, gmem_o)),
    ]
    parked = OTHER_WARPS - 1 - p["epilogue_warps"]
    if parked:
        tasks.append(Task(name="ParkTask", src_resources=[], dst_resources=[],
                          warp_idx=load_warp + 1 + p["epilogue_warps"], num_warps=parked, num_registers=regs["other"],
                          schedule=schedule(_park)()))
    graph = {smem_q: [*pdl[:1], *queue], smem_kv: [*pdl[:1], *queue], smem_o: [smem_q, smem_kv, *queue],
             gmem_lse: [smem_q, smem_kv], gmem_o: [smem_o, *queue], **{launch: [] for launch in pdl[1:]}}
    for turn in turns:
        graph[turn] = [smem_kv]
    aliases = [[["q_buf"], ["o_buf"]]] if p["epilogue"] == "aliased" else []
    return Blueprint(tasks=tasks, graph=graph, smem_resources=[smem_q, smem_kv, smem_o, *turns],
                     alias_groups=aliases)


class _Schedules:
    """Each task's schedule (fresh per call): one tile's body, inside the WorkQueue's tile loop when persistent."""

    def __init__(self, *, overlap: bool, trips: Any, wq: WorkQueue | None, turn_after_v: bool = False,
                 causal: bool = False, rescale_under_qk: bool = False, pdl: tuple = (),
                 convert_before_turn: bool = False) -> None:
        self.overlap, self.trips, self.wq, self.turn_after_v = overlap, trips, wq, turn_after_v
        self.causal, self.rescale_under_qk, self.pdl = causal, rescale_under_qk, pdl
        self.convert_before_turn = convert_before_turn

    def _tiles(self, body: Any, *resources: MemoryResource, pdl: tuple = ()) -> Any:
        """``body`` over one tile, or in the WorkQueue's tile loop; with ``pdl`` (the PDL wait and launch barriers)
        the wait for the grid before comes first and the next grid's launch last, once each around the loop."""
        if self.wq is None and not pdl:
            return schedule(body)(*resources)
        wq = [self.wq] if self.wq is not None else []

        def tiles(*proxies: Any) -> None:
            res = proxies[:len(resources)]
            wait, launch = proxies[len(resources):len(resources) + len(pdl)] or (None, None)
            if wait is not None:
                wait.wait_griddep()
            if wq:
                queue = proxies[-1]
                with work_tile_loop(queue):
                    body(*res)
                    queue.wait()
                    queue.get_and_advance_work_tile()
                    queue.release()
            else:
                body(*res)
            if launch is not None:
                launch.launch_griddep()

        tiles.__name__ = body.__name__
        return schedule(tiles)(*resources, *pdl, *wq)

    def load(self, smem_q: SmemQ, smem_kv: SmemKV) -> Any:
        overlap, trips = self.overlap, self.trips

        def load_kv(kv: Any, operand: str, lag: int = 0) -> None:
            kv.acquire()
            kv.tma_load(operand=operand, lag=lag)
            kv.commit()

        def load_tile(q: Any, kv: Any) -> None:
            q.acquire()
            q.tma_load()
            q.commit()
            if overlap:  # K0; loop: K_i, V_i-1; tail: V_last
                load_kv(kv, "K")
                with domain_loop(1, trips, 1):
                    load_kv(kv, "K")
                    load_kv(kv, "V", lag=1)
                load_kv(kv, "V")
            else:  # loop: K_i, V_i
                with domain_loop(0, trips, 1):
                    load_kv(kv, "K")
                    load_kv(kv, "V")

        return self._tiles(load_tile, smem_q, smem_kv, pdl=self.pdl)

    def mma(self, smem_q: SmemQ, smem_kv: SmemKV, smem_o: SmemO, gmem_lse: GmemLse, turns: tuple[MmaTurn, ...],
            role: str | None) -> Any:
        """An MMA task's tile. ``role``: ``lead``/``follow`` of two ping-pong warpgroups (one turn between them);
        ``first``/``middle``/``last`` of three (the turns it waits and gives, in that order): the first does not
        wait on its first K/V step, the last does not give on its last, so each turn is given as often as taken."""
        overlap, trips, turn_after_v, causal = self.overlap, self.trips, self.turn_after_v, self.causal
        # O's rescale by the last softmax's factors: after the wait for the P V that added to O (the trip's end),
        # or with ``rescale_under_qk`` in the next trip, between the Q K^T issue and the P V one, while the
        # tensor cores run Q K^T (FlashAttention-3's order); after the loop, before Q is released.
        early = self.rescale_under_qk
        # P's conversion to 16 bits in the loop: by the step that issues the wgmma reading it, inside the turn, or
        # with ``convert_before_turn`` at the trip's start, before the waits for K and the turn (a step on Q, which
        # the task holds: P is registers only), so the turn is held for the wgmma issues alone (the tail's, after Q
        # is released, stays in its step)
        ahead = self.convert_before_turn

        def take(t: Any, first: bool) -> None:
            if role == "lead":
                t[0].acquire()
            elif role is not None and not (role == "first" and first):
                t[0].wait()
                t[0].take()

        def give(t: Any, first: bool, last: bool) -> None:
            if role == "lead":
                t[0].give()
                t[0].commit()
            elif role == "follow":
                t[0].release()
            elif role is not None:
                out = t[-1]  # the turn this warpgroup gives
                if not (role == "last" and last):
                    out.acquire()
                    out.give()
                    out.commit()
                if not (role == "first" and first):
                    t[0].release()

        def scores(q: Any, kv: Any, t: Any, pending: int, first: bool = False) -> None:
            """Wait for K, issue S = Q K^T in turn (and with ``pending`` the PV wgmma of the previous V); with
            ``turn_after_v`` the turn is taken once V has landed too, Q K^T reading the K stage noted before."""
            after_v = bool(pending) and turn_after_v
            if pending and ahead:
                q.convert_p()
            kv.wait()
            if after_v:
                kv.note_k_stage()  # a work step reads its resource's last wait's stage: V's, after the next wait
                kv.wait()
            take(t, first)
            kv.multiply_qk(convert=bool(pending) and not ahead, noted=after_v)  # P out of S before Q K^T writes S
            if pending:
                if early:
                    q.rescale()  # O holds the P V waited for at the last trip's end: scale it under Q K^T
                if not after_v:
                    kv.wait()
                kv.multiply_pv()
            give(t, first, False)
            kv.wgmma_wait(pending=pending)  # S is done
            kv.release()

        def values(kv: Any, t: Any) -> None:
            kv.wait()
            take(t, False)
            kv.multiply_pv(convert=True)
            give(t, False, True)
            kv.wgmma_wait(pending=0)
            kv.release()

        def mma_tile(q: Any, kv: Any, o: Any, lse: Any, *t: Any) -> None:
            q.wait()
            q.start_tile()
            if overlap:
                scores(q, kv, t, 0, first=True)
                q.softmax()
                if not early:
                    q.rescale()  # (O is 0 here; the first softmax's factors are 0 too)
                with domain_loop(1, trips, 1):
                    scores(q, kv, t, 1)
                    # under the PV wgmma; K/V tiles go last to first, so without a causal mask only the first
                    # (the head's: the one reaching past seqlen_k) can need a mask, and the loop has no check
                    q.softmax(masked=causal)
                    kv.wgmma_wait(pending=0)
                    kv.release()
                    if not early:
                        q.rescale()
                # every Q K^T is done: the next tile's Q (persistent) loads under the last P V and the epilogue
                if early:
                    q.rescale()  # the last trip's factors, before Q (whose work it is) is released
                q.release()
                values(kv, t)
            else:
                with domain_loop(0, trips, 1):
                    scores(q, kv, t, 0)
                    q.softmax()
                    q.rescale()
                    values(kv, t)
                q.release()  # Q is read no more: the next tile's Q may load (or, aliased, O take its bytes)
            o.acquire()
            o.stage_output()
            o.commit()
            lse.store_lse()

        return self._tiles(mma_tile, smem_q, smem_kv, smem_o, gmem_lse, *turns)

    def store(self, smem_o: SmemO, gmem_o: GmemO) -> Any:
        def store_tile(o: Any, out: Any) -> None:
            with domain_loop(0, 1, 1):
                o.wait()
                o.read_tile()
                out.tma_store()
                o.release()

        return self._tiles(store_tile, smem_o, gmem_o)


def build(**params: Any) -> Blueprint:
    """Fresh TS objects of one Q tile over ``kv_tiles`` K/V iterations (CPU check); ``params`` over :data:`PARAMS`."""
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise TypeError(f"build() got an unexpected keyword argument {unknown[0]!r}")
    p = {**PARAMS, **params}
    return make_tasks(p, kv_tiles=p["kv_tiles"])


def design(**params: Any):
    """The Hopper attention design (see the module docstring for the flow)."""
    from ..core.design import Design

    return Design(NAME, params)
