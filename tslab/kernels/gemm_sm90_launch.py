"""The GPU side of :mod:`tslab.kernels.gemm_sm90`: host entry, TMA atoms, SMEM layouts and the TS kernel.

The host builds CuTe's Hopper pieces (``cutlass.utils.hopper_helpers``): the warpgroup tiled MMA, the
swizzled K-major SMEM layouts of A and B, the epilogue's SMEM layout and the TMA atoms that match them; the
kernel builds the design's TS resources and tasks with :func:`tslab.kernels.gemm_sm90.make_tasks` and runs
them with TS's ``TaskManager``. Grid: one block per ``tile_m x tile_n`` tile of C, or with ``persistent=True``
the static persistent scheduler's grid (one block per SM, ``sms`` baked in); with ``cluster_m=2`` the blocks
launch in clusters of two along M (B's TMA atom multicasts) and sync the cluster around the tasks; block shape
``32 * block_warps`` threads (the MMA warpgroups, the load warp, the store warp(s)). The kernel reads M, N
and K from its tensors, so it compiles for one static problem (what the benchmarks time) or, with dynamic
extents (:func:`fake_args` ``dynamic=True``, what an export holds), for every problem at once.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.utils.hopper_helpers as sm90
from cuda.bindings import driver as cuda_driver
from cutlass import cute
from cutlass import tensor_utils as utils

from .gemm_common import fake_args, torch_dtype_name
from .gemm_sm90 import (
    EPILOGUE_RING,
    PARAMS,
    RULES,
    block_warps,
    epilogue_groups,
    epilogue_subtile,
    make_tasks,
    validate,
)
from .gemm_sm90_resources import Geometry

_CUTLASS_DTYPES = {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16}


def _tile_mnk(p: dict[str, Any]) -> tuple[int, int, int]:
    return (p["tile_m"], p["tile_n"], p["tile_k"])


def _pingpong(p: dict[str, Any]) -> bool:
    return p["schedule"] == "pingpong"


def _epi_tile(p: dict[str, Any], dtype: Any) -> Any:
    """One TMA store's sub-tile of C, as the design's TS resources count them (``gemm_sm90.epilogue_subtile``)."""
    return sm90.compute_tile_shape_or_override(_tile_mnk(p), dtype, epi_tile_override=epilogue_subtile(p))


def _c_layout(p: dict[str, Any]) -> Any:
    """How the kernel's C tile sits in memory: C is row-major, so the C^T a swapped kernel computes is M-major."""
    return utils.LayoutEnum.COL_MAJOR if p["swap_ab"] else utils.LayoutEnum.ROW_MAJOR


def _ring_stages(pipelines: Any, resource: str, default: int) -> int:
    """The stages of ``resource``'s ring: an edit's ``num_stages`` (what TS checked and allocated), else the
    design's own."""
    fields = dict(dict(pipelines).get(resource, ()))
    return int(fields.get("num_stages", default))


def _layouts(p: dict[str, Any], dtype: Any, pipelines: Any = ()) -> tuple[Any, Any, Any, Any]:
    """Staged SMEM layouts of A, B and the staged C (the whole tile as epilogue sub-tiles, or the ``subtiles``
    epilogue's ring of groups of them), each with as many stages as its TS ring, and the sub-tile shape."""
    k_major = utils.LayoutEnum.ROW_MAJOR  # A (M x K) and B (N x K) are both K-major
    stages = _ring_stages(pipelines, "smem_ab", p["stages"])
    a = sm90.make_smem_layout_a(k_major, _tile_mnk(p), dtype, stages)
    b = sm90.make_smem_layout_b(k_major, _tile_mnk(p), dtype, stages)
    epi_tile = _epi_tile(p, dtype)
    groups, per_group = epilogue_groups(p)
    slots = groups * per_group if groups == 1 else _ring_stages(pipelines, "smem_epi", EPILOGUE_RING) * per_group
    epi = sm90.make_smem_layout_epi(dtype, _c_layout(p), epi_tile, slots)
    return a, b, epi, epi_tile


def _tiled_mma(p: dict[str, Any], dtype: Any) -> Any:
    """Cooperative: the MMA warpgroups split the tile's rows; ping-pong: one warpgroup multiplies a whole tile."""
    k = cute.nvgpu.OperandMajorMode.K
    warpgroups = 1 if _pingpong(p) else p["mma_warpgroups"]
    return sm90.make_trivial_tiled_mma(dtype, dtype, k, k, cutlass.Float32, (warpgroups, 1, 1),
                                       tiler_mn=(64, p["tile_n"]))


@cute.kernel
def _gemm_kernel(tma_atom_a: cute.CopyAtom, mA: cute.Tensor, tma_atom_b: cute.CopyAtom, mB: cute.Tensor,
                 tma_atom_c: cute.CopyAtom, mC: cute.Tensor, tiled_mma: cute.TiledMma,
                 params: cutlass.Constexpr, pipelines: cutlass.Constexpr) -> None:
    from cutlass.experimental.task_scheduling.task_manager import TaskManager

    from ..core.blueprint import allocate, apply_pipeline

    p = dict(params)
    m, k = mA.shape
    n = mB.shape[0]
    dtype = _CUTLASS_DTYPES[p["dtype"]]
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == 4 * p["mma_warpgroups"]:
        cute.nvgpu.cpasync.prefetch_descriptor(tma_atom_a)
        cute.nvgpu.cpasync.prefetch_descriptor(tma_atom_b)
        cute.nvgpu.cpasync.prefetch_descriptor(tma_atom_c)
    a_layout, b_layout, epi_layout, epi_tile = _layouts(p, dtype, pipelines)
    tiles_n = (n + p["tile_n"] - 1) // p["tile_n"]
    tiles_per_group = p["raster_group"] // p["cluster_m"] * tiles_n  # the persistent grouped raster's divisor
    if cutlass.const_expr(not isinstance(tiles_per_group, int)):
        tiles_per_group = cute.fast_divmod_create_divisor_v2(tiles_per_group)
    geo = Geometry(tiles_m=(m + p["tile_m"] - 1) // p["tile_m"], tiles_n=tiles_n, tiles_per_group=tiles_per_group,
                   k_tiles=(k + p["tile_k"] - 1) // p["tile_k"], raster=p["raster"], dtype=dtype,
                   raster_group=p["raster_group"],
                   persistent=p["persistent"], cluster_m=p["cluster_m"], pingpong=_pingpong(p),
                   c_m_major=p["swap_ab"],
                   a_layout=a_layout, b_layout=b_layout,
                   epi_layout=epi_layout, epi_tile=epi_tile)
    scheduler = None
    if cutlass.const_expr(p["persistent"]):
        from cutlass.experimental.task_scheduling.resources import TileSchedulerConfig

        scheduler = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(
            tile_scheduler_params=_scheduler_params(p, geo.tiles_m, geo.tiles_n))
    # Each MMA task's own accumulators: one set for the cooperative task, one per warpgroup's task in ping-pong.
    acc_shape = tiled_mma.get_slice(0).partition_shape_C((p["tile_m"], p["tile_n"]))
    accumulators = tuple(cute.make_rmem_tensor(acc_shape, cutlass.Float32) for _ in range(2 if _pingpong(p) else 1))
    bp = make_tasks(p, k_tiles=geo.k_tiles, geo=geo,
                    gpu={"tma_atom_a": tma_atom_a, "tma_atom_b": tma_atom_b, "mA": mA, "mB": mB,
                         "tiled_mma": tiled_mma, "accumulators": accumulators, "tma_atom_c": tma_atom_c, "mC": mC,
                         "scheduler": scheduler})
    for name, fields in pipelines:
        apply_pipeline(bp, name, dict(fields))
    smem, _ = allocate(bp, bp.alias_groups, [])
    manager = TaskManager(tasks=bp.tasks, resource_dependency_graph=bp.graph, smem_allocator=smem, verbose=False)
    manager.setup_resources_and_tasks()
    cute.arch.mbarrier_init_fence()
    # In a cluster, every block's barriers are initialised before any peer multicasts into them or releases a
    # stage there, and no block exits while a peer may still signal its barriers.
    if cutlass.const_expr(p["cluster_m"] == 1):
        cute.arch.sync_threads()
    else:
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()
    manager.run()
    if cutlass.const_expr(p["cluster_m"] > 1):
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()


@cute.jit
def launch(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream: cuda_driver.CUstream,
           params: cutlass.Constexpr, pipelines: cutlass.Constexpr = ()) -> None:
    """Host entry: ``c = a @ b.T`` for row-major ``a`` (M x K), ``b`` (N x K) and ``c`` (M x N).

    With ``swap_ab`` the kernel computes ``c.T = b @ a.T`` instead: B's N rows run along the wgmma's M (64-row
    blocks) and A's M rows along its N, which can be as narrow as M, and the C tile is stored M-major into ``c``."""
    p = dict(params)
    if cutlass.const_expr(p["swap_ab"]):
        a, b = b, a
        c = cute.make_tensor(c.iterator, cute.select(c.layout, mode=[1, 0]))
    dtype = _CUTLASS_DTYPES[p["dtype"]]
    a_layout, b_layout, epi_layout, epi_tile = _layouts(p, dtype, pipelines)
    cm = p["cluster_m"]
    g2s = cute.nvgpu.cpasync.CopyBulkTensorTileG2SOp()
    tma_atom_a, tma_a = cute.nvgpu.cpasync.make_tiled_tma_atom(
        g2s, a, cute.slice_(a_layout, (None, None, 0)), (p["tile_m"], p["tile_k"]))
    # In a cluster the blocks along M share each B tile: a multicast load of it, split among them.
    tma_atom_b, tma_b = cute.nvgpu.cpasync.make_tiled_tma_atom(
        g2s if cm == 1 else cute.nvgpu.cpasync.CopyBulkTensorTileG2SMulticastOp(), b,
        cute.slice_(b_layout, (None, None, 0)), (p["tile_n"], p["tile_k"]), num_multicast=cm)
    tma_atom_c, tma_c = cute.nvgpu.cpasync.make_tiled_tma_atom(
        cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(epi_layout, (None, None, 0)), epi_tile)
    m = a.shape[0]
    n = b.shape[0]
    tiles_m = (m + p["tile_m"] - 1) // p["tile_m"]
    tiles_n = (n + p["tile_n"] - 1) // p["tile_n"]
    # One block per tile; in clusters, cm consecutive blocks per cluster (tile rows rounded up to pairs).
    grid = (tiles_m * tiles_n, 1, 1) if cm == 1 else ((tiles_m + cm - 1) // cm * cm * tiles_n, 1, 1)
    if cutlass.const_expr(p["persistent"]):
        from cutlass.utils import StaticPersistentTileScheduler

        grid = StaticPersistentTileScheduler.get_grid_shape(_scheduler_params(p, tiles_m, tiles_n), p["sms"] // cm)
    kernel = _gemm_kernel(tma_atom_a, tma_a, tma_atom_b, tma_b, tma_atom_c, tma_c, _tiled_mma(p, dtype), params,
                          pipelines)
    block = (32 * block_warps(p), 1, 1)
    # pdl: this grid may launch while the one before it on the stream still runs (its load warp waits for that
    # grid before the first TMA load, and lets the next grid launch after its last one)
    if cutlass.const_expr(cm == 1):
        kernel.launch(grid=grid, block=block, stream=stream, use_pdl=p["pdl"])
    else:
        kernel.launch(grid=grid, block=block, cluster=(cm, 1, 1), stream=stream, use_pdl=p["pdl"])


def _scheduler_params(p: dict[str, Any], tiles_m: int, tiles_n: int) -> Any:
    """TS's static persistent scheduler over the tile grid in plain order (M fastest); ``raster='grouped'`` is
    applied to the tiles it hands out (``gemm_sm90_resources.tile_coords``)."""
    from cutlass.utils import PersistentTileSchedulerParams

    return PersistentTileSchedulerParams((tiles_m, tiles_n, 1), (p["cluster_m"], 1, 1), swizzle_size=1,
                                         raster_along_m=True)


def launch_constants(params: dict[str, Any], launch_options: dict[str, Any], sms: int, pipelines: tuple = ()) -> tuple:
    """The ``cutlass.Constexpr`` arguments of :func:`launch` after ``(a, b, c, stream)``."""
    # every param the checker saw but its trip count: the kernel is specialised on all of them
    p = {key: params[key] for key in PARAMS if key != RULES.trip_param}
    validate(p)
    if p["persistent"]:
        p["sms"] = sms
    return (tuple(sorted(p.items())), pipelines)


#: What tslab.compiling calls on this module; ``fake_args`` and ``torch_dtype_name`` are the GEMMs' shared ones.
__all__ = ["fake_args", "launch", "launch_constants", "torch_dtype_name"]
