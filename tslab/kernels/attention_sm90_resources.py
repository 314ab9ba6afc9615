"""The resources and tasks of :mod:`tslab.kernels.attention_sm90`: Q, the K/V ring, the MMA warpgroups' turn, O.

Each resource owns its SMEM and its work (TMA loads, the two wgmma GEMMs, the online softmax in registers, the
stmatrix epilogue, the TMA store of O and the stores of the LSE); the kernel module builds the pipelines and the
schedules over them, and the same objects are checked on the CPU and traced into the GPU kernel
(:mod:`tslab.kernels.attention_sm90_launch`). ``Geometry`` carries what only the GPU path knows (extents, CuTe
layouts, the tiled MMAs); on the CPU it is None and no work body runs.

Layouts (CuTe's modes): Q, K, V and O are flash-attn's ``(batch, seqlen, heads, head_dim)`` seen as
``(seqlen, head_dim, heads, batch)``, the LSE ``(batch, heads, seqlen)``. A tile is ``(m_block, head, batch)``;
its K/V tiles are walked from the last (the one the causal diagonal and the sequence's tail cut) to the first,
iteration ``i`` taking K/V tile ``n_blocks - 1 - i``.
"""


import math
from dataclasses import dataclass, field
from typing import Any

import cutlass
from cutlass import cute
from cutlass.experimental.task_scheduling.memory import SmemAllocation
from cutlass.experimental.task_scheduling.resources import (
    MemoryResource,
    StageInfo,
    consumer_work,
    producer_work,
)
from cutlass.experimental.task_scheduling.task import Task

from .fma_exp2 import exp2_fma
from .schedule_anchor import keep_after

LOG2_E = math.log2(math.e)
LN_2 = math.log(2.0)


@dataclass(frozen=True)
class Geometry:
    """The compile-time shape of the kernel and the CuTe pieces the work bodies share (GPU only).

    ``rows`` is the Q tile (all MMA warpgroups), ``task_rows`` the rows one MMA task multiplies (a warpgroup's in
    ping-pong, the whole tile in the cooperative schedule). It holds no runtime value: those (:class:`Extents`, the
    tiled MMAs, the scale) sit in the resources' and tasks' own fields, which TS threads through its loops."""

    dtype: Any
    head_dim: int
    rows: int
    task_rows: int
    tile_n: int
    causal: bool
    persistent: bool
    pingpong: bool
    longest_first: bool = False  # causal tiles in :func:`longest_first`'s order
    zigzag_sections: bool = False  # with longest_first, every other L2 section's tiles shortest first
    snake_rounds: bool = False  # with longest_first and persistent, every other round of tiles in reverse
    poly_exp2: int = 0  # every poly_exp2-th exp2 of a softmax row on the FMA pipe (:mod:`.fma_exp2`); 0: none
    late_pv_wait: bool = False  # the wait for the P V wgmma kept after the softmax (:mod:`.schedule_anchor`)
    skip_unseen: bool = False  # a task skips the softmax of the K/V tiles none of its rows sees
    mask_prefix: bool = False  # the trips that need a mask counted once a tile (:func:`masked_trips`)
    mask_bits: bool = False  # the mask as a bit test a score (ptxas' R2P) instead of a compare
    q_layout: Any = None
    kv_layout: Any = None
    o_layout: Any = None


@dataclass
class Extents:
    """The launch's runtime extents (Python ints for a static problem): Q tiles per (head, batch), sequence lengths
    and query heads per K/V head. Mutable on purpose: one object shared by the tasks and resources, which TS's state
    threading updates in place (a frozen one would be rebuilt once per holder and change the count of values a loop
    carries)."""

    m_blocks: Any
    seqlen_q: Any
    seqlen_k: Any
    heads_per_kv: Any
    heads: Any = None
    batch: Any = None
    l2_heads: Any = None  # (head, batch) pairs whose K and V fit in L2 together (causal, one tile per block)
    blocks: Any = None  # the persistent blocks (a round of tiles), with ``snake_rounds``


#: The L2 bytes a causal launch's section of heads may fill with K and V: 40 of the H200's 50 MB, the rest left to
#: Q and O streaming through (flash-attn-4 sizes its sections by all 50).
L2_KV_BYTES = 40 * 1024 * 1024


@cute.jit
def longest_first(ext: Extents, t: Any, zigzag: cutlass.Constexpr = False) -> tuple:
    """The causal tile at place ``t`` of the launch order (a block's own, or a persistent block's from the WorkQueue,
    m fastest): the order hands out every (head, batch) pair's longest tile (the last Q rows, which see the most
    keys) before any pair's next longest, so the tiles that start last are the shortest and no block idles long at
    the end (persistent: every block meets each length in turn); the pairs go in sections of ``l2_heads`` so that
    the K and V being read fit in L2 (flash-attn-4's LPT order). With ``zigzag`` every other section runs shortest
    first, so the persistent blocks that met a section's long tiles meet the next one's short ones."""
    pairs = ext.heads * ext.batch
    per_section = ext.l2_heads * ext.m_blocks
    section = t // per_section
    r = t - section * per_section
    full = pairs // ext.l2_heads  # sections of l2_heads pairs; the last may be narrower
    width = ext.l2_heads if section < full else pairs - full * ext.l2_heads
    if cutlass.const_expr(zigzag):  # an odd section's places reversed, without a branch
        r = r + (section % 2) * (width * ext.m_blocks - 1 - 2 * r)
    rank = r // width  # 0: the longest tile of each pair in the section
    pair = section * ext.l2_heads + r - rank * width
    b_of = pair // ext.heads
    return ext.m_blocks - 1 - rank, pair - b_of * ext.heads, b_of


@cute.jit
def snake(ext: Extents, t: Any) -> Any:
    """Place ``t`` of the launch order with every other round of ``ext.blocks`` places reversed (the last round
    may be shorter), so the persistent block that takes a round's first tile takes the next round's last."""
    tiles = ext.m_blocks * ext.heads * ext.batch
    round_ = t // ext.blocks
    start = round_ * ext.blocks
    width = cutlass.min(ext.blocks, tiles - start)
    place = t - start
    return start + place + (round_ % 2) * (width - 1 - 2 * place)  # an odd round's places reversed, branch-free


@cute.jit
def tile_of(geo: cutlass.Constexpr, ext: Extents, stage_info: StageInfo) -> tuple:
    """(m_block, head, batch) of this block's tile: the WorkQueue's when persistent, else the block's own (causal:
    each pair's last Q tile first, or :func:`longest_first`)."""
    m, h, b = stage_info.work_tile.tile_idx
    return tile_at(geo, ext, m, h, b)


@cute.jit
def tile_at(geo: cutlass.Constexpr, ext: Extents, m: Any, h: Any, b: Any) -> tuple:
    """The tile of work-tile index ``(m, h, b)``: causal tiles longest first, within each pair (``by_pair``) or
    across them (:func:`longest_first`, its rounds in a :func:`snake` with ``snake_rounds``)."""
    if cutlass.const_expr(geo.longest_first):
        t = m + ext.m_blocks * (h + ext.heads * b)  # the block's place in launch order
        if cutlass.const_expr(geo.snake_rounds):
            t = snake(ext, t)
        m, h, b = longest_first(ext, t, geo.zigzag_sections)
    elif cutlass.const_expr(geo.causal):
        m = ext.m_blocks - 1 - m
    return m, h, b


@cute.jit
def kv_blocks(geo: cutlass.Constexpr, ext: Extents, m_block: Any) -> Any:
    """K/V tiles Q tile ``m_block`` reads: all of them, or with a causal mask (aligned bottom-right, as
    flash-attn's) those left of the diagonal; at least one, so a tile whose rows see no key still runs one
    (fully masked) iteration and writes O = 0, LSE = -inf."""
    n = (ext.seqlen_k + geo.tile_n - 1) // geo.tile_n
    if cutlass.const_expr(geo.causal):
        last_col = (m_block + 1) * geo.rows + ext.seqlen_k - ext.seqlen_q  # one past the last key seen
        n = cutlass.min(n, (last_col + geo.tile_n - 1) // geo.tile_n)
    return cutlass.max(n, 1)


@cute.jit
def task_origin(geo: cutlass.Constexpr, ext: Extents, stage_info: StageInfo) -> tuple:
    """This MMA task's Q tile ``m``, the index of its first row in Q and its thread index."""
    m, _, _ = tile_of(geo, ext, stage_info)
    _, row0, tidx = _task_rows(geo, cute.make_identity_tensor((geo.rows, geo.tile_n)), stage_info)
    return m, m * geo.rows + row0, tidx


@cute.jit
def unseen_trips(geo: cutlass.Constexpr, ext: Extents, stage_info: StageInfo) -> Any:
    """The leading trips of this tile's K/V loop that none of this task's rows sees: the K/V tiles walked first
    (the last ones) lie wholly right of its last row's causal diagonal, or every trip where its rows lie past
    seqlen_q (the last Q tile's). The task skips their softmax (P = 0); it still issues their wgmmas, since a
    wgmma issued on one path only makes ptxas serialise the loop's wgmmas (C7514, C7515) or spill."""
    m, first, _ = task_origin(geo, ext, stage_info)
    trips = kv_blocks(geo, ext, m)
    end = cutlass.min(first + geo.task_rows, ext.seqlen_q)  # one past its last row that exists
    seen = trips
    if cutlass.const_expr(geo.causal):
        keys = cutlass.max(end + ext.seqlen_k - ext.seqlen_q, 0)  # one past the last key its rows see
        seen = cutlass.min(trips, (keys + geo.tile_n - 1) // geo.tile_n)
    if first >= ext.seqlen_q:
        seen = 0
    return trips - seen


@cute.jit
def masked_trips(geo: cutlass.Constexpr, ext: Extents, stage_info: StageInfo) -> Any:
    """How many of this task's K/V trips need a mask, counted once a tile: a K/V tile needs one where it reaches
    past seqlen_k or, causal, past the diagonal of the task's first row, and the tiles go from the last to the
    first, so those trips are the loop's first ones. Tile ``n`` reaches past seqlen_k from ``n = seqlen_k //
    tile_n`` on and past the diagonal ``d`` (the first row's last key) from ``n = (d + 1) // tile_n`` on (every
    tile where the row sees no key, ``d < 0``)."""
    m, first_row, _ = task_origin(geo, ext, stage_info)
    trips = kv_blocks(geo, ext, m)
    first_unmasked = ext.seqlen_k // geo.tile_n  # the lowest tile that needs a mask, above the unmasked ones
    if cutlass.const_expr(geo.causal):
        diagonal = first_row + ext.seqlen_k - ext.seqlen_q
        first_unmasked = cutlass.min(first_unmasked, cutlass.max(diagonal + 1, 0) // geo.tile_n)
    return cutlass.max(trips - first_unmasked, 0)


@cute.jit
def _smem_tensor(stage_info: StageInfo, offset: cutlass.Constexpr, dtype: cutlass.Constexpr, layout: Any) -> Any:
    ptr = cute.make_ptr(dtype, stage_info.context.smem_base.data_ptr() + offset, cute.AddressSpace.smem,
                        assumed_align=1024)
    return cute.make_tensor(cute.recast_ptr(ptr, layout.inner), layout.outer)


def acc_mn_view(acc: Any) -> Any:
    """A wgmma accumulator ``((2, 2, N/8), MMA_M, MMA_N)`` seen as (rows, columns) of this thread:
    ``((2, MMA_M), (2, N/8, MMA_N))``."""
    flat = cute.make_layout(acc.layout.shape)
    s, d = flat.shape, flat.stride
    mn = cute.make_layout(((s[0][1], s[1]), (s[0][0], s[0][2], s[2])),
                          stride=((d[0][1], d[1]), (d[0][0], d[0][2], d[2])))
    return cute.make_tensor(acc.iterator, cute.composition(acc.layout, mn))


def acc_as_a_operand(acc: Any) -> Any:
    """S's accumulator ``((2, 2, N/8), MMA_M, 1)`` seen as the A operand of the next wgmma, whose K is S's N:
    ``((2, 2, 2), MMA_M, (N/16, 1))`` (two 8-column groups make one k16 step)."""
    assert acc.layout.shape[0][2] % 2 == 0, "tile_n must be a multiple of 16 for P to feed a k16 wgmma"
    half = cute.logical_divide(acc.layout, ((None, None, 2), None, None))
    s, d = half.shape, half.stride
    frag = cute.make_layout(((s[0][0], s[0][1], s[0][2][0]), s[1], (s[0][2][1], s[2])),
                            stride=((d[0][0], d[0][1], d[0][2][0]), d[1], (d[0][2][1], d[2])))
    return cute.make_tensor(acc.iterator, frag)


@cute.jit
def convert_p(st: Any, dtype: cutlass.Constexpr) -> None:
    """P (fp32 in S's registers, the last softmax's output) converted into the PV wgmma's A operand. Done by the
    step that issues that wgmma, just before it: P then has one use in the loop and one after it, each converted
    where it is read, and ptxas neither carries a copy of fp32 P across the loop's back edge nor converts twice
    (converting at the end of the softmax's step did both: ~100 more instructions a K/V tile)."""
    st.p.store(acc_as_a_operand(st.s).load().to(dtype))


class SoftmaxState:
    """One MMA task's registers (GPU path): S, P (the PV wgmma's A operand), O, and the online softmax's running
    row max, partial row sums and last rescale factors, all fp32 but P. Each MMA task owns one; TS hands it to the
    work as ``stage_info.task_cache`` (two tasks sharing one set of tensors made ptxas spill in the GEMM)."""

    def __init__(self, geo: Geometry, mma_qk: Any, mma_pv: Any, wg: int | None = None) -> None:
        self.wg = wg  # the warpgroup of a ping-pong task (compile time); None: the cooperative task's
        thr_qk = mma_qk.get_slice(0)
        thr_pv = mma_pv.get_slice(0)
        self.s = cute.make_rmem_tensor(thr_qk.partition_shape_C((geo.task_rows, geo.tile_n)), cutlass.Float32)
        self.o = cute.make_rmem_tensor(thr_pv.partition_shape_C((geo.task_rows, geo.head_dim)), cutlass.Float32)
        self.p = mma_pv.make_fragment_A(thr_pv.partition_shape_A((geo.task_rows, geo.tile_n)))
        rows = cute.size(acc_mn_view(self.s), mode=[0])
        assert rows == cute.size(acc_mn_view(self.o), mode=[0]), "S and O must give a thread the same rows"
        assert cute.size(self.p) == cute.size(self.s), "P must hold all of S's elements"
        self.row_max = cute.make_rmem_tensor(rows, cutlass.Float32)
        self.row_sum = cute.make_rmem_tensor(rows, cutlass.Float32)
        self.row_scale = cute.make_rmem_tensor(rows, cutlass.Float32)
        self.q_stage = cute.make_rmem_tensor(1, cutlass.Int32)  # the Q stage of the tile in hand
        self.k_stage = cute.make_rmem_tensor(1, cutlass.Int32)  # the K stage noted before a wait for V
        self.skip = cute.make_rmem_tensor(1, cutlass.Int32)  # leading trips none of the task's rows sees
        self.masked = cute.make_rmem_tensor(1, cutlass.Int32)  # leading trips that need a mask (mask_prefix)


@dataclass(frozen=True)
class _Static:
    """A value a task keeps that TS's state threading must pass over (Geometry holds dtypes and CuTe layouts,
    which do not flatten)."""

    value: cutlass.Constexpr[Any]


class AttentionTask(Task):
    """A task whose K/V loop runs as many trips as its tile has K/V tiles (``get_domain``; the GPU path) and that
    hands its work a cache of its own (``make_task_cache``: an MMA task's :class:`SoftmaxState`)."""

    def __init__(self, *args: Any, geo: Any = None, ext: Any = None, cache: Any = None, **kwargs: Any) -> None:
        self.static = _Static(geo)
        self.ext = ext
        self.cache = cache
        super().__init__(*args, **kwargs)

    @cute.jit
    def get_domain(self, tile_coord: Any) -> Any:
        geo = self.static.value
        m, h, b = tile_coord
        m, _, _ = tile_at(geo, self.ext, m, h, b)
        return kv_blocks(geo, self.ext, m)

    @cute.jit
    def make_task_cache(self) -> Any:
        return self.cache


@cute.jit
def _task_rows(geo: cutlass.Constexpr, tensor: Any, stage_info: StageInfo) -> tuple:
    """This MMA task's rows of a (rows, cols) SMEM tile, its first row in the tile and its thread index: a ping-pong
    warpgroup takes its own ``task_rows`` (its warpgroup known at compile time from the task's
    :class:`SoftmaxState`, so the rows' address is a constant), the cooperative task all of them."""
    tidx, _, _ = cute.arch.thread_idx()
    if cutlass.const_expr(geo.pingpong):
        wg = stage_info.task_cache.wg
        part = cute.local_tile(tensor, (geo.task_rows, cute.size(tensor, mode=[1])), (wg, 0))
        return part, wg * geo.task_rows, tidx % 128
    return tensor, 0, tidx


@dataclass(kw_only=True)
class SmemQ(MemoryResource):
    """The Q tile (rows x head_dim) in SMEM, loaded by TMA once per tile (TmaAsync, ``q_stages``: 1, or 2 so a
    persistent block's next Q loads while this one is read) and held by the MMA warpgroups until their last QK^T:
    those wgmmas read it, and the online softmax of its rows runs as work on it."""

    rows: cutlass.Constexpr[int] = 128
    head_dim: cutlass.Constexpr[int] = 128
    element_bytes: cutlass.Constexpr[int] = 2
    geo: cutlass.Constexpr[Any] = None
    tma_atom: Any = None
    mQ: Any = None
    ext: Any = None
    mma_qk: Any = None
    scale_log2: Any = None
    _q: cutlass.Constexpr[Any] = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._q = SmemAllocation("q_buf", size_bytes=0, alignment=1024)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        self._q.size_bytes = self.pipeline_config.num_stages * self.rows * self.head_dim * self.element_bytes
        return [self._q]

    @cute.jit
    def tensor(self, stage_info: StageInfo) -> Any:
        return _smem_tensor(stage_info, self._q.offset, self.geo.dtype, self.geo.q_layout)

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: StageInfo) -> None:
        m, h, b = tile_of(self.geo, self.ext, stage_info)
        sQ = self.tensor(stage_info)  # (rows, d, q_stages)
        gQ = cute.local_tile(self.mQ[None, None, h, b], (self.rows, self.head_dim), (m, 0))
        tQsQ, tQgQ = cute.nvgpu.cpasync.tma_partition(self.tma_atom, 0, cute.make_layout(1),
                                                      cute.group_modes(sQ, 0, 2), cute.group_modes(gQ, 0, 2))
        bar = cute.make_ptr(cutlass.Int64, stage_info.barrier.data_ptr().toint(), cute.AddressSpace.smem)
        cute.copy(self.tma_atom, tQgQ, tQsQ[(None, stage_info.stage_idx)], tma_bar_ptr=bar)

    @consumer_work
    @cute.jit
    def softmax(self, stage_info: StageInfo, *, masked: cutlass.Constexpr[bool] = True) -> None:
        """Online softmax of this K/V iteration's S (registers), masked where the tile needs it: the running max
        and partial sums move on, P = exp2(S log2(e) scale - max log2(e) scale) overwrites S, and the factor the
        O rows must be rescaled by is kept (``rescale`` applies it once the PV wgmma reading O is done).
        ``masked=False``: the caller knows no tile of this step needs a mask, so there is no runtime check (its
        compare and branch kept the Q descriptors out of uniform registers: 30 more instructions a K/V tile)."""
        if cutlass.const_expr(self.geo.skip_unseen):
            if stage_info.loop_offset >= stage_info.task_cache.skip[0]:
                self._softmax(stage_info, masked)
        else:
            self._softmax(stage_info, masked)

    @cute.jit
    def _softmax(self, stage_info: StageInfo, masked: cutlass.Constexpr[bool]) -> None:
        geo = self.geo
        st = stage_info.task_cache
        s_mn = acc_mn_view(st.s)
        if cutlass.const_expr(masked):
            if cutlass.const_expr(geo.mask_prefix):
                if stage_info.loop_offset < st.masked[0]:  # counted at the tile's start
                    self._mask(stage_info, *self._trip_origin(stage_info))
            else:
                first_row, first_col, tidx = self._trip_origin(stage_info)
                # A tile needs a mask where it reaches past the last key or, causal, past the diagonal of its
                # first row.
                needs_mask = first_col + geo.tile_n > self.ext.seqlen_k
                if cutlass.const_expr(geo.causal):
                    diagonal = first_row + self.ext.seqlen_k - self.ext.seqlen_q  # the first row's last key
                    needs_mask = needs_mask or first_col + geo.tile_n - 1 > diagonal
                if needs_mask:
                    self._mask(stage_info, first_row, first_col, tidx)
        for r in cutlass.range_constexpr(cute.size(s_mn, mode=[0])):
            row = s_mn[r, None].load()
            new_max = cute.arch.warp_reduction_max(row.reduce(cute.ReductionOp.MAX, st.row_max[r], 0),
                                                   threads_in_group=4)
            # A row that has seen only masked keys keeps max -inf; exponentiate against 0 so P = 0, not NaN.
            safe_max = 0.0 if new_max == -cutlass.Float32.inf else new_max
            scaled_max = safe_max * self.scale_log2
            st.row_scale[r] = cute.math.exp2(st.row_max[r] * self.scale_log2 - scaled_max, fastmath=True)
            st.row_max[r] = new_max
            x = row * self.scale_log2 - scaled_max
            every = geo.poly_exp2
            if cutlass.const_expr(every):
                # every ``every``-th score's exp2 on the FMA pipe, the rest on MUFU: the two units share the row.
                # Where a score may be masked (-inf) the cubic's 2^-125 is made 0, as MUFU's is.
                s_mn[r, None].store(x)
                for c in cutlass.range_constexpr(cute.size(s_mn, mode=[1])):
                    if cutlass.const_expr(c % every == every - 1):
                        s_mn[r, c] = exp2_fma(s_mn[r, c], zero_below=masked)
                    else:
                        s_mn[r, c] = cute.math.exp2(s_mn[r, c], fastmath=True)
                p = s_mn[r, None].load()
            else:
                p = cute.math.exp2(x, fastmath=True)
            st.row_sum[r] = st.row_sum[r] * st.row_scale[r] + p.reduce(cute.ReductionOp.ADD, 0.0, 0)
            s_mn[r, None].store(p)
        if cutlass.const_expr(geo.late_pv_wait):
            # the next wgmma wait (P V's) stays after the last row's sum, so the exponentials run under the P V
            keep_after(st.row_sum[cute.size(s_mn, mode=[0]) - 1], stage_info.barrier.data_ptr().toint())

    @cute.jit
    def _trip_origin(self, stage_info: StageInfo) -> tuple:
        """This trip's corner of S in Q and K (the task's first row, the K/V tile's first column) and the thread
        index."""
        m, first_row, tidx = task_origin(self.geo, self.ext, stage_info)
        n_block = kv_blocks(self.geo, self.ext, m) - 1 - stage_info.loop_offset
        return first_row, n_block * self.geo.tile_n, tidx

    @cute.jit
    def _mask(self, stage_info: StageInfo, first_row: Any, first_col: Any, tidx: Any) -> None:
        """S = -inf where this trip's K/V tile (from ``first_col``) reaches past seqlen_k or, causal, past the
        diagonal of a row (the task's from ``first_row``)."""
        geo = self.geo
        s_mn = acc_mn_view(stage_info.task_cache.s)
        coords = acc_mn_view(self.mma_qk.get_slice(tidx).partition_C(
            cute.make_identity_tensor((geo.task_rows, geo.tile_n))))
        # A thread's columns are its first one plus compile-time offsets, so each is tested against the row's
        # limit relative to that first column. (A runtime ``if`` per element became a branch that carried all of
        # S, ~15 selects per element.)
        col0 = coords[0, 0][1]
        columns = cute.size(s_mn, mode=[1])
        lane0 = acc_mn_view(self.mma_qk.get_slice(0).partition_C(
            cute.make_identity_tensor((geo.task_rows, geo.tile_n))))  # thread 0's: the offsets, at compile time
        for r in cutlass.range_constexpr(cute.size(s_mn, mode=[0])):
            row = first_row + coords[r, 0][0]
            limit = self.ext.seqlen_k - first_col  # columns at or past it are masked
            if cutlass.const_expr(geo.causal):
                limit = cutlass.min(limit, row + 1 + self.ext.seqlen_k - self.ext.seqlen_q - first_col)
            limit = limit - col0
            if cutlass.const_expr(geo.mask_bits):
                # wgmma gives a thread the columns 8 j + e (e = 0, 1) past its first, in that order: those kept
                # (8 j + e < limit) are its first ceil(limit / 8) + ceil((limit - 1) / 8) columns. As bits of a
                # register, 24 columns a register (the shift stays under 32), one bit test a score becomes ptxas'
                # R2P (seven predicates from a register at once) and one FSEL, not a compare and a select.
                seen = cutlass.max(limit, 0)
                kept = ((seen + 7) >> 3) + ((seen + 6) >> 3)
                for chunk in cutlass.range_constexpr((columns + 23) // 24):
                    bits = (cutlass.Int32(1) << cutlass.min(cutlass.max(kept - 24 * chunk, 0), 24)) - 1
                    for c in cutlass.range_constexpr(24 * chunk, min(columns, 24 * chunk + 24)):
                        offset = lane0[r, c][1] - lane0[0, 0][1]
                        assert offset == 8 * (c // 2) + c % 2, "a wgmma accumulator's columns are 8 j + e, in order"
                        s_mn[r, c] = cutlass.Float32(cutlass.select_(
                            bits & cutlass.Int32(1 << (c - 24 * chunk)) == 0, -cutlass.Float32.inf, s_mn[r, c]))
            else:  # one compare and one select a score
                for c in cutlass.range_constexpr(columns):
                    offset = coords[r, c][1] - col0
                    s_mn[r, c] = cutlass.Float32(cutlass.select_(
                        offset >= limit, -cutlass.Float32.inf, s_mn[r, c]))

    @consumer_work
    @cute.jit
    def convert_p(self, stage_info: StageInfo) -> None:
        """P (the last softmax's, fp32 in S's registers) into the P V wgmma's 16-bit operand, ahead of the step
        that issues it (``convert_before_turn``). ptxas would move the conversions past the waits for K and the
        turn that follow (their fast path is one instruction): a no-op on this Q stage's barrier computed from
        all of them keeps them ahead (:mod:`.schedule_anchor`)."""
        st = stage_info.task_cache
        convert_p(st, self.geo.dtype)
        words = cute.recast_tensor(st.p, cutlass.Int32)  # two 16-bit P values a register
        every = words[0]
        for i in cutlass.range_constexpr(1, cute.size(words)):
            every = every ^ words[i]  # depends on every conversion, so none can move past the no-op below
        keep_after(cutlass.Float32(every), stage_info.barrier.data_ptr().toint())

    @consumer_work
    @cute.jit
    def rescale(self, stage_info: StageInfo) -> None:
        """O's rows times the last softmax's factors, after the PV wgmma that read O and the previous P has
        finished. (P stays fp32 in S's registers until the wgmma that reads it converts it: see
        :func:`convert_p`.)"""
        st = stage_info.task_cache
        o_mn = acc_mn_view(st.o)
        for r in cutlass.range_constexpr(cute.size(o_mn, mode=[0])):
            o_mn[r, None].store(o_mn[r, None].load() * st.row_scale[r])

    @consumer_work
    @cute.jit
    def start_tile(self, stage_info: StageInfo) -> None:
        """A tile's first step: O = 0, running max -inf, sums 0 (the first softmax then rescales O by 0); the Q
        stage this tile reads is noted for the QK^T wgmmas (work on the K/V ring, whose stage they get)."""
        st = stage_info.task_cache
        st.q_stage[0] = stage_info.stage_idx
        st.o.fill(0.0)
        st.row_max.fill(-cutlass.Float32.inf)
        st.row_sum.fill(0.0)
        if cutlass.const_expr(self.geo.skip_unseen):
            st.row_scale.fill(1.0)  # a skipped trip's rescale leaves O as it is
            st.skip[0] = unseen_trips(self.geo, self.ext, stage_info)
        if cutlass.const_expr(self.geo.mask_prefix):
            st.masked[0] = masked_trips(self.geo, self.ext, stage_info)


@dataclass(kw_only=True)
class SmemKV(MemoryResource):
    """The K/V ring: ``kv_stages`` tiles of tile_n x head_dim in SMEM (allocation ``kv_buf``), each holding a K
    tile or a V tile, filled by TMA in the order the MMA warpgroups read them (TmaAsync). With the intra-warpgroup
    overlap that order is K0, K1, V0, K2, V1, ... and a warpgroup holds a K tile and a V tile at once, so the ring
    needs two stages; without it K0, V0, K1, V1, ... and one stage is enough (and slow). Waits advance the read
    cursor and releases free the oldest stage (``advance_on_wait``), because a warpgroup waits for the next K tile
    before it releases the V tile it still multiplies."""

    tile_n: cutlass.Constexpr[int] = 128
    head_dim: cutlass.Constexpr[int] = 128
    element_bytes: cutlass.Constexpr[int] = 2
    geo: cutlass.Constexpr[Any] = None
    q: cutlass.Constexpr[Any] = None
    tma_atom_k: Any = None
    tma_atom_v: Any = None
    mK: Any = None
    mV: Any = None
    ext: Any = None
    mma_qk: Any = None
    mma_pv: Any = None
    _kv: cutlass.Constexpr[Any] = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._kv = SmemAllocation("kv_buf", size_bytes=0, alignment=1024)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        self._kv.size_bytes = self.pipeline_config.num_stages * self.tile_n * self.head_dim * self.element_bytes
        return [self._kv]

    @producer_work
    @cute.jit
    def tma_load(self, stage_info: StageInfo, *, operand: cutlass.Constexpr[str],
                 lag: cutlass.Constexpr[int] = 0) -> None:
        """TMA load of K or V tile ``n_blocks - 1 - (i - lag)`` of this tile's KV head into the acquired stage, for
        K/V iteration ``i`` (the step's loop offset: 0 in the head, the last iteration in the tail)."""
        geo = self.geo
        m, h, b = tile_of(geo, self.ext, stage_info)
        n_block = kv_blocks(geo, self.ext, m) - 1 - (stage_info.loop_offset - lag)
        sKV = _smem_tensor(stage_info, self._kv.offset, geo.dtype, geo.kv_layout)  # (tile_n, d, stages)
        atom, mX = (self.tma_atom_k, self.mK) if cutlass.const_expr(operand == "K") else (self.tma_atom_v, self.mV)
        gX = cute.local_tile(mX[None, None, h // self.ext.heads_per_kv, b], (self.tile_n, self.head_dim), (None, 0))
        tXsX, tXgX = cute.nvgpu.cpasync.tma_partition(atom, 0, cute.make_layout(1),
                                                      cute.group_modes(sKV, 0, 2), cute.group_modes(gX, 0, 2))
        bar = cute.make_ptr(cutlass.Int64, stage_info.barrier.data_ptr().toint(), cute.AddressSpace.smem)
        cute.copy(atom, tXgX[(None, n_block)], tXsX[(None, stage_info.stage_idx)], tma_bar_ptr=bar)

    @cute.jit
    def _operands(self, stage_info: StageInfo) -> tuple:
        geo = self.geo
        q_stage = 0  # a constant where it can be: a runtime stage costs the descriptors their known alignment
        if cutlass.const_expr(self.q.pipeline_config.num_stages > 1):
            q_stage = stage_info.task_cache.q_stage[0]
        sQ, _, tidx = _task_rows(geo, self.q.tensor(stage_info)[None, None, q_stage], stage_info)  # (task_rows, d)
        sKV = _smem_tensor(stage_info, self._kv.offset, geo.dtype, geo.kv_layout)
        return sQ, sKV, tidx

    @consumer_work
    @cute.jit
    def note_k_stage(self, stage_info: StageInfo) -> None:
        """Note the stage of the K tile just waited for, for a Q K^T issued after a wait for V (``noted``)."""
        stage_info.task_cache.k_stage[0] = stage_info.stage_idx

    @consumer_work
    @cute.jit
    def multiply_qk(self, stage_info: StageInfo, *, convert: cutlass.Constexpr[bool] = False,
                    noted: cutlass.Constexpr[bool] = False) -> None:
        """Issue S = Q K^T for the K tile in this stage (S overwritten) and commit it as one wgmma group; with
        ``convert`` the last softmax's P is first taken out of S into the PV wgmma's operand (the overlap: the
        PV wgmma that reads it is issued next); with ``noted`` for the K tile in the stage ``note_k_stage`` noted
        (this step's own stage is then V's)."""
        if cutlass.const_expr(convert):
            self._convert_p(stage_info, lag=1)
        sQ, sK, tidx = self._operands(stage_info)
        mma = self.mma_qk
        thr = mma.get_slice(tidx // 128 * 128)
        tSrQ = mma.make_fragment_A(thr.partition_A(sQ))
        tSrK = mma.make_fragment_B(thr.partition_B(sK))
        acc = stage_info.task_cache.s
        # A fresh atom per GEMM (its accumulate flag is set here) over this stage's K: each k step's descriptors
        # are an offset from the stage's, not rebuilt (28 fewer instructions a K/V tile at head_dim 128).
        atom = cute.make_mma_atom(mma.op)
        atom.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, False)
        cute.nvgpu.warpgroup.fence()
        k_stage = stage_info.task_cache.k_stage[0] if cutlass.const_expr(noted) else stage_info.stage_idx
        rK = tSrK[(None, None, None, k_stage)]
        for kb in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
            cute.gemm(atom, acc, tSrQ[(None, None, kb)], rK[(None, None, kb)], acc)
            atom.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)
        cute.nvgpu.warpgroup.commit_group()

    @consumer_work
    @cute.jit
    def multiply_pv(self, stage_info: StageInfo, *, convert: cutlass.Constexpr[bool] = False) -> None:
        """Issue O += P V for the V tile in this stage, P from registers (the A operand), V^T from SMEM, and
        commit it as one wgmma group; with ``convert`` P is first converted out of S (no QK^T wgmma came
        between: the tail, or the schedule without the overlap)."""
        if cutlass.const_expr(convert):
            self._convert_p(stage_info, lag=0)
        _, sV, tidx = self._operands(stage_info)
        # V^T: (d, tile_n, stages), head_dim contiguous (MN-major B operand).
        sVt = cute.composition(sV, cute.make_ordered_layout((self.head_dim, self.tile_n, cute.size(sV, mode=[2])),
                                                            order=(1, 0, 2)))
        mma = self.mma_pv
        thr = mma.get_slice(tidx // 128 * 128)
        tOrV = mma.make_fragment_B(thr.partition_B(sVt))
        st = stage_info.task_cache
        atom = cute.make_mma_atom(mma.op)
        atom.set(cute.nvgpu.warpgroup.Field.ACCUMULATE, True)  # O starts each tile at 0 (start_tile)
        cute.nvgpu.warpgroup.fence()
        rV = tOrV[(None, None, None, stage_info.stage_idx)]
        for kb in cutlass.range_constexpr(cute.size(st.p, mode=[2])):
            cute.gemm(atom, st.o, st.p[(None, None, kb)], rV[(None, None, kb)], st.o)
        cute.nvgpu.warpgroup.commit_group()

    @cute.jit
    def _convert_p(self, stage_info: StageInfo, lag: cutlass.Constexpr[int]) -> None:
        """P for the P V issued next, from the softmax ``lag`` trips before this step's (1 in the overlapped loop);
        with ``skip_unseen``, 0 where that softmax was skipped (S then holds raw scores, not P)."""
        if cutlass.const_expr(self.geo.skip_unseen):
            if stage_info.loop_offset - lag >= stage_info.task_cache.skip[0]:
                convert_p(stage_info.task_cache, self.geo.dtype)
            else:
                stage_info.task_cache.p.fill(0.0)
        else:
            convert_p(stage_info.task_cache, self.geo.dtype)

    @consumer_work
    @cute.jit
    def wgmma_wait(self, stage_info: StageInfo, *, pending: cutlass.Constexpr[int] = 0) -> None:
        """Wait until at most ``pending`` wgmma groups of this warpgroup are in flight (1: S is done while the PV
        wgmma issued after it still runs; 0: all done)."""
        cute.nvgpu.warpgroup.wait_group(pending)


@dataclass(kw_only=True)
class MmaTurn(MemoryResource):
    """No memory: the turn of the two ping-pong warpgroups to issue their wgmmas (AsyncAsync, 1 stage). Warpgroup 0
    acquires and commits it around its GEMMs, warpgroup 1 waits and releases it around its own, so they issue in
    turns and one's softmax runs under the other's GEMMs (FlashAttention-3's warp scheduler barrier, as a ring TS
    checks)."""

    def get_smem_requirements(self) -> list:
        return []

    @producer_work
    @cute.jit
    def give(self, stage_info: StageInfo) -> None:
        pass

    @consumer_work
    @cute.jit
    def take(self, stage_info: StageInfo) -> None:
        pass


@dataclass(kw_only=True)
class SmemO(MemoryResource):
    """The O tile (rows x head_dim) staged in SMEM (allocation ``o_buf``) between the MMA warpgroups, which
    normalise O and write it with stmatrix, and the TMA store (AsyncAsync, 1 stage)."""

    rows: cutlass.Constexpr[int] = 128
    head_dim: cutlass.Constexpr[int] = 128
    element_bytes: cutlass.Constexpr[int] = 2
    geo: cutlass.Constexpr[Any] = None
    mma_pv: Any = None
    scale_log2: Any = None
    _o: cutlass.Constexpr[Any] = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._o = SmemAllocation("o_buf", size_bytes=self.rows * self.head_dim * self.element_bytes, alignment=1024)

    def get_smem_requirements(self) -> list[SmemAllocation]:
        return [self._o]

    @cute.jit
    def tensor(self, stage_info: StageInfo) -> Any:
        return _smem_tensor(stage_info, self._o.offset, self.geo.dtype, self.geo.o_layout)

    @producer_work
    @cute.jit
    def stage_output(self, stage_info: StageInfo) -> None:
        """O / row sum -> dtype -> SMEM (stmatrix, swizzled), this task's rows; the row sums become the LSE's
        (kept in ``row_sum`` for :meth:`GmemLse.store_lse`)."""
        geo = self.geo
        st = stage_info.task_cache
        for r in cutlass.range_constexpr(cute.size(st.row_sum)):
            total = cute.arch.warp_reduction_sum(st.row_sum[r], threads_in_group=4)
            empty = total == 0.0  # every key masked: O = 0, LSE = -inf
            st.row_scale[r] = cute.arch.rcp_approx(1.0 if empty else total)
            st.row_sum[r] = -cutlass.Float32.inf if empty else (
                st.row_max[r] * self.scale_log2 + cute.math.log2(total, fastmath=True)) * LN_2
        o_mn = acc_mn_view(st.o)
        for r in cutlass.range_constexpr(cute.size(o_mn, mode=[0])):
            o_mn[r, None].store(o_mn[r, None].load() * st.row_scale[r])
        out = cute.make_rmem_tensor_like(st.o, geo.dtype)
        out.store(st.o.load().to(geo.dtype))
        sO, _, tidx = _task_rows(geo, self.tensor(stage_info)[None, None, 0], stage_info)
        atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), geo.dtype)
        r2s = cute.make_tiled_copy_C(atom, self.mma_pv).get_slice(tidx)
        cute.copy(atom, r2s.retile(out), r2s.partition_D(sO))
        # The TMA engine (async proxy) reads what these generic stores wrote.
        cute.arch.fence_proxy("async.shared", space="cta")

    @consumer_work
    @cute.jit
    def read_tile(self, stage_info: StageInfo) -> None:
        # The wait made the staged tile visible; GmemO.tma_store copies it out in the same iteration.
        pass


@dataclass(kw_only=True)
class GmemLse(MemoryResource):
    """The row log-sum-exp (batch, heads, seqlen_q) in fp32, stored from registers by the threads that hold each
    row's statistics (rows past seqlen_q are not stored)."""

    geo: cutlass.Constexpr[Any] = None
    mLSE: Any = None
    ext: Any = None
    mma_pv: Any = None

    @producer_work
    @cute.jit
    def store_lse(self, stage_info: StageInfo) -> None:
        geo = self.geo
        st = stage_info.task_cache
        m, h, b = tile_of(geo, self.ext, stage_info)
        _, row0, tidx = _task_rows(geo, cute.make_identity_tensor((geo.rows, geo.head_dim)), stage_info)
        coords = acc_mn_view(self.mma_pv.get_slice(tidx).partition_C(
            cute.make_identity_tensor((geo.task_rows, geo.head_dim))))
        if coords[0, 0][1] == 0:  # one thread of the four that share a row
            for r in cutlass.range_constexpr(cute.size(st.row_sum)):
                row = m * geo.rows + row0 + coords[r, 0][0]
                if row < self.ext.seqlen_q:
                    self.mLSE[b, h, row] = st.row_sum[r]


@dataclass(kw_only=True)
class GmemO(MemoryResource):
    """The output O, written by TMA stores of the staged tile (rows past seqlen_q are clipped by TMA)."""

    o: cutlass.Constexpr[Any] = None
    store_warp: cutlass.Constexpr[int] = 0
    tma_atom: Any = None
    mO: Any = None
    ext: Any = None

    @producer_work
    @cute.jit
    def tma_store(self, stage_info: StageInfo) -> None:
        o = self.o
        geo = o.geo
        m, h, b = tile_of(geo, self.ext, stage_info)
        sO = o.tensor(stage_info)
        gO = cute.local_tile(self.mO[None, None, h, b], (o.rows, o.head_dim), (m, 0))
        tOsO, tOgO = cute.nvgpu.cpasync.tma_partition(self.tma_atom, 0, cute.make_layout(1),
                                                      cute.group_modes(sO, 0, 2), cute.group_modes(gO, 0, 2))
        # One warp stores and waits for the stores to have read SMEM (the other epilogue warps release at once).
        if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == self.store_warp:
            cute.copy(self.tma_atom, tOsO[(None, 0)], tOgO)
            cute.arch.cp_async_bulk_commit_group()
            cute.arch.cp_async_bulk_wait_group(0, read=True)

