"""The GPU side of :mod:`tslab.kernels.attention_sm90`: host entry, TMA atoms, SMEM layouts and the TS kernel.

The host sees Q, K, V, O as flash-attn's ``(batch, seqlen, heads, head_dim)`` and views them as ``(seqlen,
head_dim, heads, batch)`` (the LSE stays ``(batch, heads, seqlen_q)``); it builds CuTe's Hopper pieces
(``cutlass.utils.hopper_helpers``): the swizzled K-major SMEM layouts of Q (and O, the same) and of the K/V ring,
the TMA atoms that match them, the QK^T wgmma (both operands from SMEM) and the PV wgmma (P from registers, V^T
MN-major from SMEM). The kernel builds the design's TS resources and tasks with
:func:`tslab.kernels.attention_sm90.make_tasks` and runs them with TS's ``TaskManager``. Grid: one block per
``(m_block, head, batch)`` tile, or with ``persistent=True`` the static persistent scheduler's grid (``sms``
baked in); block shape ``32 * block_warps``. Batch, sequence lengths and heads are read from the tensors, so the
kernel compiles for one problem or, with runtime extents (:func:`fake_args` ``dynamic=True``, what an export
holds), for every problem at once; head_dim is the design's, fixed at compile time. ``scale`` is a runtime fp32.
"""

from __future__ import annotations

import math
from typing import Any

import cutlass
import cutlass.utils.hopper_helpers as sm90
from cuda.bindings import driver as cuda_driver
from cutlass import cute
from cutlass import tensor_utils as utils

from .attention_sm90 import DTYPES, PARAMS, RULES, block_warps, make_tasks, tile_rows, validate
from .attention_sm90_resources import L2_KV_BYTES, Extents, Geometry, SoftmaxState
from .rules import cutlass_dtype

_CUTLASS_DTYPES = {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16}
LOG2_E = math.log2(math.e)


def _pingpong(p: dict[str, Any]) -> bool:
    return p["schedule"] == "pingpong"


def _task_rows(p: dict[str, Any]) -> int:
    """Rows one MMA task multiplies: a warpgroup's in ping-pong, the whole tile otherwise."""
    return p["wg_rows"] if _pingpong(p) else tile_rows(p)


def _layouts(p: dict[str, Any], dtype: Any) -> tuple[Any, Any, Any]:
    """Staged SMEM layouts of the Q tiles (``q_stages``), of the O tile (1 stage, Q's layout) and of the K/V ring
    (K-major, 128-byte swizzle for 16-bit head_dim 64 and 128)."""
    k_major = utils.LayoutEnum.ROW_MAJOR
    tile = (tile_rows(p), p["tile_n"], p["head_dim"])
    return (sm90.make_smem_layout_a(k_major, tile, dtype, p["q_stages"]),
            sm90.make_smem_layout_a(k_major, tile, dtype, 1),
            sm90.make_smem_layout_b(k_major, tile, dtype, p["kv_stages"]))


def _tiled_mmas(p: dict[str, Any], dtype: Any) -> tuple[Any, Any]:
    """S = Q K^T (Q, K K-major from SMEM) and O += P V (P from registers, V^T MN-major from SMEM); a ping-pong
    task is one warpgroup, a cooperative task spans both (each 64-row wgmma to its warpgroup)."""
    warpgroups = 1 if _pingpong(p) else p["mma_warpgroups"]
    k, mn = cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.MN
    qk = sm90.make_trivial_tiled_mma(dtype, dtype, k, k, cutlass.Float32, (warpgroups, 1, 1),
                                     tiler_mn=(64, p["tile_n"]))
    pv = sm90.make_trivial_tiled_mma(dtype, dtype, k, mn, cutlass.Float32, (warpgroups, 1, 1),
                                     tiler_mn=(64, p["head_dim"]), a_source=cute.nvgpu.warpgroup.OperandSource.RMEM)
    return qk, pv


def _sdhb(t: cute.Tensor) -> cute.Tensor:
    """(batch, seqlen, heads, head_dim) seen as (seqlen, head_dim, heads, batch): TMA boxes along seqlen and
    head_dim, clipped per (head, batch) at the sequence's end."""
    return cute.make_tensor(t.iterator, cute.select(t.layout, mode=[1, 3, 2, 0]))


@cute.kernel
def _attention_kernel(tma_q: cute.CopyAtom, mQ: cute.Tensor, tma_k: cute.CopyAtom, mK: cute.Tensor,
                      tma_v: cute.CopyAtom, mV: cute.Tensor, tma_o: cute.CopyAtom, mO: cute.Tensor,
                      mLSE: cute.Tensor, scale_log2: cutlass.Float32, mma_qk: cute.TiledMma, mma_pv: cute.TiledMma,
                      params: cutlass.Constexpr, pipelines: cutlass.Constexpr) -> None:
    from cutlass.experimental.task_scheduling.task_manager import TaskManager

    from ..core.blueprint import allocate, apply_pipeline

    p = dict(params)
    dtype = _CUTLASS_DTYPES[p["dtype"]]
    if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == 4 * p["mma_warpgroups"]:
        for atom in (tma_q, tma_k, tma_v, tma_o):
            cute.nvgpu.cpasync.prefetch_descriptor(atom)
    q_layout, o_layout, kv_layout = _layouts(p, dtype)
    seqlen_q, seqlen_k = mQ.shape[0], mK.shape[0]
    heads, heads_kv, batch = mQ.shape[2], mK.shape[2], mQ.shape[3]
    rows = tile_rows(p)
    m_blocks = (seqlen_q + rows - 1) // rows
    geo = Geometry(dtype=dtype, head_dim=p["head_dim"], rows=rows, task_rows=_task_rows(p), tile_n=p["tile_n"],
                   causal=p["causal"], persistent=p["persistent"], pingpong=_pingpong(p), q_layout=q_layout,
                   longest_first=p["causal"] and p["causal_order"] != "by_pair",
                   zigzag_sections=p["causal_order"] == "longest_first_zigzag",
                   snake_rounds=p["snake_rounds"],  # validate() refuses it without persistent=True
                   poly_exp2=p["poly_exp2"], late_pv_wait=p["late_pv_wait"], skip_unseen=p["skip_unseen"],
                   mask_prefix=p["mask_prefix"], mask_bits=p["mask_bits"],
                   kv_layout=kv_layout, o_layout=o_layout)
    # Runtime values even for a static problem: TS threads them through its loops as values (a Python int there
    # would turn into one on the first pass and change what the loop carries).
    order = {}
    if cutlass.const_expr(geo.longest_first):  # its sections of pairs whose K and V fit in L2, or one of all pairs
        keys_in_l2 = L2_KV_BYTES // (4 * p["head_dim"])  # K and V rows of one head, 2 bytes an element
        l2_heads = heads * batch
        if cutlass.const_expr(p["causal_order"] != "longest_first_all"):
            l2_heads = cutlass.max(cutlass.min(keys_in_l2 // cutlass.max(seqlen_k, 1), heads * batch), 1)
        order = {"heads": cutlass.Int32(heads), "batch": cutlass.Int32(batch), "l2_heads": cutlass.Int32(l2_heads)}
        if cutlass.const_expr(geo.snake_rounds):  # the grid is (1, 1, persistent blocks)
            order["blocks"] = cutlass.Int32(cute.arch.grid_dim()[2])
    ext = Extents(m_blocks=cutlass.Int32(m_blocks), seqlen_q=cutlass.Int32(seqlen_q), seqlen_k=cutlass.Int32(seqlen_k),
                  heads_per_kv=cutlass.Int32(heads // heads_kv), **order)
    scheduler = None
    if cutlass.const_expr(p["persistent"]):
        from cutlass.experimental.task_scheduling.resources import TileSchedulerConfig

        scheduler = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(
            tile_scheduler_params=_scheduler_params(m_blocks, heads, batch))
    # Each MMA task's own registers: one set for the cooperative task, one per warpgroup's task in ping-pong.
    caches = (tuple(SoftmaxState(geo, mma_qk, mma_pv, wg) for wg in range(p["mma_warpgroups"])) if _pingpong(p)
              else (SoftmaxState(geo, mma_qk, mma_pv),))
    bp = make_tasks(p, kv_tiles=None, geo=geo,
                    gpu={"tma_q": tma_q, "mQ": mQ, "tma_k": tma_k, "mK": mK, "tma_v": tma_v, "mV": mV,
                         "tma_o": tma_o, "mO": mO, "mLSE": mLSE, "mma_qk": mma_qk, "mma_pv": mma_pv,
                         "scale_log2": scale_log2, "ext": ext, "caches": caches, "scheduler": scheduler})
    for name, fields in pipelines:
        apply_pipeline(bp, name, dict(fields))
    smem, _ = allocate(bp, bp.alias_groups, [])
    manager = TaskManager(tasks=bp.tasks, resource_dependency_graph=bp.graph, smem_allocator=smem, verbose=False)
    manager.setup_resources_and_tasks()
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    manager.run()


def _scheduler_params(m_blocks: Any, heads: Any, batch: Any) -> Any:
    """TS's static persistent scheduler over the (m_block, head, batch) tiles, m_block fastest."""
    from cutlass.utils import PersistentTileSchedulerParams

    return PersistentTileSchedulerParams((m_blocks, heads, batch), (1, 1, 1), swizzle_size=1, raster_along_m=True)


@cute.jit
def launch(q: cute.Tensor, k: cute.Tensor, v: cute.Tensor, o: cute.Tensor, lse: cute.Tensor,
           scale: cutlass.Float32, stream: cuda_driver.CUstream, params: cutlass.Constexpr,
           pipelines: cutlass.Constexpr = ()) -> None:
    """Host entry: ``o = softmax(q k^T * scale [causal]) v`` and ``lse`` for q, o ``(batch, seqlen_q, heads,
    head_dim)``, k, v ``(batch, seqlen_k, heads_kv, head_dim)`` and lse ``(batch, heads, seqlen_q)`` fp32."""
    p = dict(params)
    dtype = _CUTLASS_DTYPES[p["dtype"]]
    q_layout, o_layout, kv_layout = _layouts(p, dtype)
    rows, d = tile_rows(p), p["head_dim"]
    g2s = cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp()
    q4, k4, v4, o4 = (_sdhb(t) for t in (q, k, v, o))
    tma_q, tma_q_tensor = cute.nvgpu.cpasync.make_tiled_tma_atom(g2s, q4, cute.slice_(q_layout, (None, None, 0)),
                                                                 (rows, d))
    kv_stage = cute.slice_(kv_layout, (None, None, 0))
    tma_k, tma_k_tensor = cute.nvgpu.cpasync.make_tiled_tma_atom(g2s, k4, kv_stage, (p["tile_n"], d))
    tma_v, tma_v_tensor = cute.nvgpu.cpasync.make_tiled_tma_atom(g2s, v4, kv_stage, (p["tile_n"], d))
    tma_o, tma_o_tensor = cute.nvgpu.cpasync.make_tiled_tma_atom(
        cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), o4, cute.slice_(o_layout, (None, None, 0)), (rows, d))
    mma_qk, mma_pv = _tiled_mmas(p, dtype)
    batch, seqlen_q, heads = q.shape[0], q.shape[1], q.shape[2]
    m_blocks = (seqlen_q + rows - 1) // rows
    grid = (m_blocks, heads, batch)
    if cutlass.const_expr(p["persistent"]):
        from cutlass.utils import StaticPersistentTileScheduler

        grid = StaticPersistentTileScheduler.get_grid_shape(_scheduler_params(m_blocks, heads, batch), p["sms"])
    kernel = _attention_kernel(tma_q, tma_q_tensor, tma_k, tma_k_tensor, tma_v, tma_v_tensor, tma_o, tma_o_tensor,
                               lse, scale * LOG2_E, mma_qk, mma_pv, params, pipelines)
    # pdl: this grid may launch while the one before it on the stream still runs (its load warp waits for that
    # grid before the first TMA load, and lets the next grid launch after its last one)
    kernel.launch(grid=grid, block=(32 * block_warps(p), 1, 1), stream=stream, use_pdl=p["pdl"])


def launch_constants(params: dict[str, Any], launch_options: dict[str, Any], sms: int, pipelines: tuple = ()) -> tuple:
    """The ``cutlass.Constexpr`` arguments of :func:`launch` after ``(q, k, v, o, lse, scale, stream)``."""
    # every param the checker saw but its trip count: the kernel is specialised on all of them
    p = {key: params[key] for key in PARAMS if key != RULES.trip_param}
    validate(p)
    if p["persistent"]:
        p["sms"] = sms
    return (tuple(sorted(p.items())), pipelines)


def fake_args(shape: tuple[int, ...], dtype: str, *, head_dim: int, dynamic: bool = False) -> tuple:
    """Compile-only stand-ins for ``(q, k, v, o, lse, scale, stream)`` of problem ``shape = (batch, seqlen_q,
    seqlen_k, heads, heads_kv)``, all compact row-major. ``dynamic=True``: batch, sequence lengths and heads are
    runtime extents (head_dim stays the design's), so one compiled kernel serves every problem."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    b, s_q, s_k, h, h_kv = shape
    dt = cutlass_dtype(dtype)

    def extent(n: int) -> Any:
        return cute.sym_int() if dynamic else n

    def bshd(seq: int, heads: int) -> Any:
        return make_fake_compact_tensor(dt, (extent(b), extent(seq), extent(heads), head_dim),
                                        stride_order=(3, 2, 1, 0), assumed_align=16)

    lse = make_fake_compact_tensor(cutlass.Float32, (extent(b), extent(h), extent(s_q)), stride_order=(2, 1, 0),
                                   assumed_align=16)
    return (bshd(s_q, h), bshd(s_k, h_kv), bshd(s_k, h_kv), bshd(s_q, h), lse, cutlass.Float32(1.0),
            make_fake_stream())


def torch_dtype_name(params: dict[str, Any]) -> str:
    """The torch dtype name of the design's ``dtype`` param."""
    return DTYPES[params["dtype"]]


#: What tslab.compiling calls on this module.
__all__ = ["fake_args", "launch", "launch_constants", "torch_dtype_name"]
