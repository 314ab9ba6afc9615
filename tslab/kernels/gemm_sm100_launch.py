"""The GPU side of :mod:`tslab.kernels.gemm_sm100`: host entry, TMA atoms, layouts, TMEM and the TS kernel.

The host builds CuTe's Blackwell pieces (``cutlass.utils.blackwell_helpers``): the tcgen05 tiled MMA (cta_group
1, or 2 for pairs), the swizzled K-major SMEM layouts of A and B and the TMA atoms that split them between a
pair, the epilogue's SMEM sub-tile layout and its TMA store atom, and the grid of the chosen scheduler (CLC: one
block per tile, blocks that finish early cancel unlaunched ones and take their tiles; static: one wave of
blocks). The kernel builds the design's TS resources and tasks with :func:`tslab.kernels.gemm_sm100.make_tasks`,
lets TS lay out and initialise SMEM, allocates the TMEM columns TS's allocator laid out (rounded up to a power of
two, as tcgen05.alloc needs), runs the tasks and frees TMEM. Block shape ``32 * task_warps`` threads; pairs
launch as clusters of two. Compiles on any machine for sm_100a; runs only on a Blackwell GPU.
"""

from __future__ import annotations

from typing import Any

import cutlass
from cuda.bindings import driver as cuda_driver
from cutlass import cute
from cutlass.utils import blackwell_helpers as sm100

from .gemm_common import fake_args, torch_dtype_name
from .gemm_sm100 import LOAD_WARP, PARAMS, RULES, make_tasks, task_warps, validate
from .gemm_sm100_resources import BLOCK_M, EPI_STAGES, Geometry

_CUTLASS_DTYPES = {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16}
_ROW_MAJOR = cutlass.tensor_utils.LayoutEnum.ROW_MAJOR


def _edited(pipelines: tuple, resource: str, field: str, default: int) -> int:
    """A ring's ``field`` as the design's pipeline edits set it (the layouts follow an edited stage count)."""
    return dict(dict(pipelines).get(resource, ())).get(field, default)


def _geometry(p: dict[str, Any], pipelines: tuple, dtype: Any) -> Geometry:
    """The launch's layouts: staged A/B (edited stage count), and the epilogue's SMEM sub-tiles."""
    geo = Geometry(dtype=dtype, cluster_m=p["cluster_m"], tile_n=p["tile_n"], tile_k=p["tile_k"])
    tiled_mma = geo.tiled_mma()
    ring = "smem_ab" if p["ab_rings"] == "one" else "ab_sync"  # a group's stages are edited on the group
    stages = _edited(pipelines, ring, "num_stages", p["stages"])
    return Geometry(dtype=dtype, cluster_m=p["cluster_m"], tile_n=p["tile_n"], tile_k=p["tile_k"],
                    a_layout=sm100.make_smem_layout_a(tiled_mma, geo.mma_tiler, dtype, stages),
                    b_layout=sm100.make_smem_layout_b(tiled_mma, geo.mma_tiler, dtype, stages),
                    epi_layout=sm100.make_smem_layout_epi(dtype, _ROW_MAJOR, geo.epi_tile(), EPI_STAGES))


def _tmem_columns(columns: int) -> int:
    """Columns to allocate for the ``columns`` TS laid out: a power of two from 32 up (tcgen05.alloc's rule)."""
    allocated = 32
    while allocated < columns:
        allocated *= 2
    return allocated


def _same_sizes(bp: Any, geo: Geometry, tmem: Any) -> None:
    """Trace-time check that TS laid out what CuTe's layouts address: A, B and C sub-tiles in SMEM, the
    accumulators in TMEM (a mismatch is a bug in the kernel module, reported before anything runs)."""
    from cutlass.memory import get_num_tmem_alloc_cols

    sizes = {a.name: a.size_bytes for a in bp.smem_allocations()}
    pairs = [("a_buf", sizes["a_buf"], cute.size_in_bytes(geo.dtype, geo.a_layout)),
             ("b_buf", sizes["b_buf"], cute.size_in_bytes(geo.dtype, geo.b_layout))]
    if "epi_buf" in sizes:
        pairs.append(("epi_buf", sizes["epi_buf"], cute.size_in_bytes(geo.dtype, geo.epi_layout)))
    tiled_mma, acc = geo.tiled_mma(), bp.resources()["tmem_acc"]
    fake = tiled_mma.make_fragment_C(cute.append(tiled_mma.partition_shape_C(geo.mma_tiler[:2]),
                                                 acc.pipeline_config.num_stages))
    pairs.append(("acc (allocated columns)", _tmem_columns(tmem.total_tmem_columns), get_num_tmem_alloc_cols(fake)))
    for name, laid_out, addressed in pairs:
        if laid_out != addressed:
            raise ValueError(f"gemm_sm100: allocation '{name}' is {laid_out} in TS's layout but the kernel's CuTe "
                             f"layout addresses {addressed}; the resource's size formula is out of date")


@cute.kernel
def _gemm_kernel(tma_atom_a: cute.CopyAtom, mA: cute.Tensor, tma_atom_b: cute.CopyAtom, mB: cute.Tensor,
                 tma_atom_c: cute.CopyAtom, mC: cute.Tensor, scheduler_params: Any,
                 params: cutlass.Constexpr, pipelines: cutlass.Constexpr) -> None:
    from cutlass import pipeline
    from cutlass.experimental.task_scheduling.resources import TileSchedulerConfig
    from cutlass.experimental.task_scheduling.task_manager import TaskManager
    from cutlass.memory import TmemAllocator

    from ..core.blueprint import allocate, apply_pipeline

    p = dict(params)
    dtype = _CUTLASS_DTYPES[p["dtype"]]
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == LOAD_WARP:
        cute.nvgpu.cpasync.prefetch_descriptor(tma_atom_a)
        cute.nvgpu.cpasync.prefetch_descriptor(tma_atom_b)
        if cutlass.const_expr(p["epilogue"] == "tma"):
            cute.nvgpu.cpasync.prefetch_descriptor(tma_atom_c)
    k = mA.shape[1]
    geo = _geometry(p, pipelines, dtype)
    if cutlass.const_expr(p["scheduler"] == "clc"):
        # The hardware writes each CLC response (16 B a stage) here; the work queue needs its address before
        # TS lays out SMEM, so it is allocated on its own.
        responses = cute.arch.alloc_smem(cutlass.Int128, _edited(pipelines, "work_queue", "num_stages", 1))
        scheduler = TileSchedulerConfig.create_clc_dynamic_persistent_tile_scheduler_params(
            tile_scheduler_params=scheduler_params, response_ptr=responses)
    else:
        scheduler = TileSchedulerConfig.create_static_persistent_tile_scheduler_params(
            tile_scheduler_params=scheduler_params)
    bp = make_tasks(p, k_tiles=(k + p["tile_k"] - 1) // p["tile_k"], geo=geo,
                    gpu={"tma_atom_a": tma_atom_a, "tma_atom_b": tma_atom_b, "mA": mA,
                         "mB": mB, "tma_atom_c": tma_atom_c, "mC": mC, "scheduler": scheduler})
    for name, fields in pipelines:
        apply_pipeline(bp, name, dict(fields))
    smem, tmem_layout = allocate(bp, bp.alias_groups, bp.tmem_alias_groups)
    _same_sizes(bp, geo, tmem_layout)
    manager = TaskManager(tasks=bp.tasks, resource_dependency_graph=bp.graph, smem_allocator=smem,
                          tmem_allocator=tmem_layout, verbose=False)
    manager.setup_resources_and_tasks()
    acc = bp.resources()["tmem_acc"]
    pair = p["cluster_m"] == 2
    tmem = TmemAllocator(acc.slot_ptr(smem.smem_base),
                         barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=2, num_threads=32 * task_warps(p)),
                         allocator_warp_id=0, is_two_cta=pair,
                         two_cta_tmem_dealloc_mbar_ptr=cute.make_ptr(
                             cutlass.Int64, smem.smem_base.data_ptr() + acc._dealloc.offset, cute.AddressSpace.smem,
                             assumed_align=8) if pair else None)
    cute.arch.mbarrier_init_fence()
    # Every block's barriers are initialised before a peer signals them (a pair's TMA and MMA commits do).
    if cutlass.const_expr(pair):
        cute.arch.cluster_arrive_relaxed()
        cute.arch.cluster_wait()
    columns = _tmem_columns(tmem_layout.total_tmem_columns)
    tmem.allocate(columns)
    tmem.relinquish_alloc_permit()
    cute.arch.sync_threads()  # the TMEM base address is in SMEM for every task
    manager.run()
    cute.arch.sync_threads()  # every MMA and TMEM load of this block is done
    if cutlass.const_expr(pair):
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
    tmem.free(tmem.retrieve_ptr(cutlass.Float32), columns)


@cute.jit
def launch(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream: cuda_driver.CUstream,
           params: cutlass.Constexpr, pipelines: cutlass.Constexpr = ()) -> None:
    """Host entry: ``c = a @ b.T`` for row-major ``a`` (M x K), ``b`` (N x K) and ``c`` (M x N)."""
    from cutlass.utils import (
        ClcDynamicPersistentTileScheduler,
        ClcDynamicPersistentTileSchedulerParams,
        PersistentTileSchedulerParams,
        StaticPersistentTileScheduler,
    )

    p = dict(params)
    dtype = _CUTLASS_DTYPES[p["dtype"]]
    cm = p["cluster_m"]
    geo = _geometry(p, pipelines, dtype)
    tiled_mma = geo.tiled_mma()
    cluster = cute.tiled_divide(cute.make_layout((cm, 1, 1)), (tiled_mma.thr_id.shape,)).shape
    # With pairs, each block loads its half of the A and B tiles and both arrive on the first block's barrier.
    tma_atom_a, tma_a = cute.nvgpu.make_tiled_tma_atom_A(
        sm100.cluster_shape_to_tma_atom_A((cm, 1, 1), tiled_mma.thr_id), a,
        cute.slice_(geo.a_layout, (None, None, None, 0)), geo.mma_tiler, tiled_mma, cluster)
    tma_atom_b, tma_b = cute.nvgpu.make_tiled_tma_atom_B(
        sm100.cluster_shape_to_tma_atom_B((cm, 1, 1), tiled_mma.thr_id), b,
        cute.slice_(geo.b_layout, (None, None, None, 0)), geo.mma_tiler, tiled_mma, cluster)
    tma_atom_c, tma_c = cute.nvgpu.cpasync.make_tiled_tma_atom(
        cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(geo.epi_layout, (None, None, 0)), geo.epi_tile())
    tiles = ((a.shape[0] + BLOCK_M - 1) // BLOCK_M, (b.shape[0] + p["tile_n"] - 1) // p["tile_n"], 1)
    tiles = ((tiles[0] + cm - 1) // cm * cm, tiles[1], 1)  # a pair takes two M-adjacent blocks' rows
    if cutlass.const_expr(p["scheduler"] == "clc"):
        scheduler_params = ClcDynamicPersistentTileSchedulerParams(tiles, (cm, 1, 1))
        grid = ClcDynamicPersistentTileScheduler.get_grid_shape(scheduler_params)
    else:
        scheduler_params = PersistentTileSchedulerParams(tiles, (cm, 1, 1))
        grid = StaticPersistentTileScheduler.get_grid_shape(scheduler_params, p["sms"] // cm)
    kernel = _gemm_kernel(tma_atom_a, tma_a, tma_atom_b, tma_b, tma_atom_c,
                          tma_c if p["epilogue"] == "tma" else c, scheduler_params, params, pipelines)
    kernel.launch(grid=grid, block=(32 * task_warps(p), 1, 1), cluster=(cm, 1, 1), stream=stream)


def launch_constants(params: dict[str, Any], launch_options: dict[str, Any], sms: int, pipelines: tuple = ()) -> tuple:
    """The ``cutlass.Constexpr`` arguments of :func:`launch` after ``(a, b, c, stream)``."""
    # every param the checker saw but its trip count: the kernel is specialised on all of them
    p = {key: params[key] for key in PARAMS if key != RULES.trip_param}
    validate(p)
    p["sms"] = sms
    return (tuple(sorted(p.items())), pipelines)


#: What tslab.compiling calls on this module; ``fake_args`` and ``torch_dtype_name`` are the GEMMs' shared ones.
__all__ = ["fake_args", "launch", "launch_constants", "torch_dtype_name"]
