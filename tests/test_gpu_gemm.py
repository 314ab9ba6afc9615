"""On a GPU: gemm_sm90 matches an fp32 torch reference on fresh inputs, at tile multiples, edges and K tails."""

from __future__ import annotations

import pytest

from tslab.compiling.targets import resolve
from tslab.gpu import device
from tslab.gpu.gemm_jobs import tolerance
from tslab.gpu.jobs import _gemm_run
from tslab.kernels import gemm_sm90
from tslab.kernels import gemm_sm90_dispatch as dispatch

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]

#: (M, N, K): tile multiples, partial tiles at the M and N edges, K tails (K a multiple of 8), one K tile.
SHAPES = [
    (128, 256, 64), (4096, 4096, 4096), (2, 8, 8), (64, 64, 8), (100, 200, 56), (129, 264, 72),
    (255, 520, 1000), (1000, 1000, 1000), (777, 1024, 4104), (2048, 8, 64), (8, 4096, 128),
    (1234, 2000, 3000), (3000, 4200, 520),
]
#: One block per tile, the C tile aliased with the A/B ring: the configuration every shape is checked in.
ONE_TILE_PER_BLOCK = {"persistent": False, "epilogue": "aliased", "stages": 4}
VARIANTS = [
    ({"persistent": False, "epilogue": "dedicated", "stages": 3}, (1000, 1000, 1000)),
    ({"persistent": False, "epilogue": "aliased", "mma_warpgroups": 1, "tile_n": 128}, (777, 1024, 4104)),
    ({"persistent": False, "epilogue": "aliased", "tile_k": 128, "stages": 2}, (1234, 2000, 3000)),
    ({"persistent": False, "epilogue": "aliased", "raster": "row"}, (3000, 4200, 520)),
    ({"persistent": False, "epilogue": "aliased", "tile_n": 128, "stages": 6}, (255, 520, 1000)),
    ({"persistent": True, "epilogue": "dedicated", "stages": 3}, (1000, 1000, 1000)),
    ({"persistent": True, "epilogue": "dedicated", "stages": 3}, (3000, 4200, 520)),
    ({"persistent": True, "epilogue": "dedicated", "stages": 3, "raster": "row"}, (777, 1024, 4104)),
    ({"persistent": True, "epilogue": "dedicated", "stages": 3, "dtype": "bf16"}, (4096, 4096, 4096)),
    ({"cluster_m": 2}, (4096, 4096, 4096)),
    ({"cluster_m": 2}, (777, 1024, 4104)),  # 7 tile rows: the last cluster's second block is past the edge
    ({"cluster_m": 2, "raster": "row", "dtype": "bf16"}, (3000, 4200, 520)),
    ({"cluster_m": 2, **ONE_TILE_PER_BLOCK}, (1234, 2000, 3000)),
    ({"cluster_m": 2, **ONE_TILE_PER_BLOCK, "raster": "row"}, (100, 200, 56)),
    (gemm_sm90.DECODE, (128, 8192, 8192)),
    ({**gemm_sm90.DECODE, "dtype": "bf16"}, (130, 1000, 520)),
]



@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_matches_fp32_reference(shape, dtype):
    design = gemm_sm90.design(dtype=dtype, **ONE_TILE_PER_BLOCK)
    out = _gemm_run(resolve(design, shape), seed=sum(shape))
    assert out["unwritten"] == 0 and out["rel_error"] <= tolerance(out, out["dtype"]), out


@pytest.mark.parametrize(("params", "shape"), VARIANTS, ids=lambda v: str(v)[:40])
def test_gemm_variants_match_fp32_reference(params, shape):
    out = _gemm_run(resolve(gemm_sm90.design(**params), shape), seed=7)
    assert out["unwritten"] == 0 and out["rel_error"] <= tolerance(out, out["dtype"]), out


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_one_dynamic_compile_serves_every_shape(dtype):
    """Runtime M, N, K (what an export holds): compiled once per worker, correct on every shape above."""
    import tslab.compiling.compile as build

    before = len(build._COMPILED)
    for design in (gemm_sm90.design(dtype=dtype), gemm_sm90.design(dtype=dtype, **ONE_TILE_PER_BLOCK)):
        _check_runtime_shapes(design, [*SHAPES, (1, 64, 64), (1, 8192, 8192)])  # a 1-row A works at runtime
    assert len(build._COMPILED) - before == 2


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_clusters_of_two_serve_every_shape(dtype):
    """Pairs of blocks sharing B by TMA multicast, persistent and one tile per block, runtime M, N, K: correct
    on every shape above, including odd numbers of tile rows (a block past the edge still loads its half of B)."""
    for params in ({"cluster_m": 2}, {"cluster_m": 2, **ONE_TILE_PER_BLOCK}):
        _check_runtime_shapes(gemm_sm90.design(dtype=dtype, **params), [*SHAPES, (1, 64, 64), (130, 8192, 8192)])


#: Ping-pong: every shape above (tile multiples, M/N edges, K tails, one K tile) plus shapes where a block gets an
#: odd number of tiles, fewer tiles than SMs (some blocks get one tile: the second warpgroup only skips), and many.
PINGPONG_SHAPES = [*SHAPES, (129 * 128, 192, 64), (384, 576, 136), (1, 64, 64), (8192, 8192, 1024), (130, 8192, 520)]
TILE_KEYS = ("tile_m", "tile_n", "cluster_m")
PINGPONG_VARIANTS = [
    gemm_sm90.PINGPONG,
    {**gemm_sm90.PINGPONG, "cluster_m": 2},
    {**gemm_sm90.PINGPONG, "tile_n": 128, "stages": 6},
    {**gemm_sm90.PINGPONG, "tile_m": 64, "tile_n": 256, "stages": 4, "raster": "row"},
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("params", PINGPONG_VARIANTS, ids=lambda p: "x".join(str(p.get(k, 1)) for k in TILE_KEYS))
def test_pingpong_serves_every_shape(params, dtype):
    """Two warpgroups taking the tiles in turns, runtime M, N, K: correct and every element written on 18 shapes
    (each compile serves them all), with clusters of two and other tiles."""
    _check_runtime_shapes(gemm_sm90.design(dtype=dtype, **params), PINGPONG_SHAPES)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("params", [{"per_warp_release": True}, {**gemm_sm90.PINGPONG, "per_warp_release": True}],
                         ids=["cooperative", "pingpong"])
def test_per_warp_release_serves_every_shape(params, dtype):
    """One lane per MMA warp releasing each stage in a block alone: correct and every element written on 18 shapes."""
    _check_runtime_shapes(gemm_sm90.design(dtype=dtype, **params), PINGPONG_SHAPES)


#: Swapped A and B (small M) and the widths between the old four: every shape above plus 1-row A, M below, at and
#: between the tile widths, K tails and fewer tiles than SMs.
SWAP_SHAPES = [*SHAPES, (1, 64, 64), (1, 8192, 8192), (64, 8192, 8192), (192, 8192, 520), (320, 4096, 4104),
               (256, 1000, 8), (130, 264, 4096)]
SWAP_VARIANTS = [
    dispatch.SWAP_64x64,
    dispatch.SWAP_64x192,
    dispatch.SWAP_128x160,
    {**dispatch.SWAP_128x128, "cluster_m": 1, "stages": 4, "raster": "row"},
    {**dispatch.SWAP_64x128, "persistent": False, "epilogue": "aliased"},
    dispatch.SWAP_PINGPONG_128x128,
    {"tile_n": 160, "stages": 4},
    {"tile_n": 96, "mma_warpgroups": 1, "stages": 6, "cluster_m": 2},
]
SWAP_KEYS = ("swap_ab", "tile_m", "tile_n", "cluster_m", "schedule", "persistent")


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("params", SWAP_VARIANTS, ids=lambda p: "-".join(str(p.get(k, "")) for k in SWAP_KEYS))
def test_swapped_and_new_widths_serve_every_shape(params, dtype):
    """C^T = B A^T stored M-major into C, and tiles 96 or 160 wide, runtime M, N, K: correct and every element
    written on 20 shapes (each compile serves them all)."""
    _check_runtime_shapes(gemm_sm90.design(dtype=dtype, **params), SWAP_SHAPES)


#: The small-M picks as one tile a block with the C tile over the ring (``gemm_sm90_dispatch.ONE_TILE``).
ALIASED_CANDIDATES = [name for name, params in dispatch.CANDIDATES.items() if params.get("epilogue") == "aliased"]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", ALIASED_CANDIDATES)
def test_one_tile_candidates_serve_every_shape(name, dtype):
    """The small-M picks with the C tile staged over a deeper ring, runtime M, N, K: correct and every element written
    on 20 shapes, swapped and not, clusters of two past the edge."""
    _check_runtime_shapes(gemm_sm90.design(dtype=dtype, **dispatch.CANDIDATES[name]), SWAP_SHAPES)


#: C staged in a ring of sub-tile groups (``epilogue='subtiles'``): the default's 128 x 256 with a fourth stage,
#: swapped (M-major sub-tiles), an odd count of sub-tiles (one a group), one warpgroup's 64-row sub-tiles, one tile
#: a block, clusters of two.
SUBTILE_VARIANTS = [
    dispatch.CANDIDATES["subtiles"],
    {**dispatch.SWAP_128x128, "epilogue": "subtiles", "stages": 6},
    {"tile_n": 160, "stages": 4, "epilogue": "subtiles"},
    {"tile_n": 128, "mma_warpgroups": 1, "stages": 6, "epilogue": "subtiles", "raster": "row"},
    {"persistent": False, "epilogue": "subtiles", "stages": 4, "cluster_m": 2},
    dispatch.SWAP_128x160_SUBTILES,
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("params", SUBTILE_VARIANTS, ids=lambda p: "-".join(str(p.get(k, "")) for k in SWAP_KEYS))
def test_subtiled_epilogue_serves_every_shape(params, dtype):
    """Each group of C sub-tiles staged into its ring stage and stored from it to its place in C, runtime M, N, K:
    correct and every element written on 20 shapes (M = 1, edges, K tails, fewer tiles than SMs)."""
    _check_runtime_shapes(gemm_sm90.design(dtype=dtype, **params), SWAP_SHAPES)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("params", [dispatch.CANDIDATES["coop_256x192"],
                                    {**dispatch.CANDIDATES["coop_256x192"], "cluster_m": 2}], ids=["alone", "pairs"])
def test_register_split_cooperative_tile_serves_every_shape(params, dtype):
    """256 x 192 cooperative, 192 accumulators a thread with setmaxnreg (twelve warps, three epilogue warps), runtime
    M, N, K: correct and every element written on 20 shapes (M = 1, edges, K tails, fewer tiles than SMs)."""
    _check_runtime_shapes(gemm_sm90.design(dtype=dtype, **params), SWAP_SHAPES)


def test_swapped_static_compile_matches_fp32_reference():
    out = _gemm_run(resolve(gemm_sm90.design(**dispatch.SWAP_64x256), (256, 8192, 8192)), seed=5)
    assert out["unwritten"] == 0 and out["rel_error"] <= tolerance(out, out["dtype"]), out


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (777, 1024, 4104)], ids=lambda s: "x".join(map(str, s)))
def test_pingpong_static_compile_matches_fp32_reference(shape):
    out = _gemm_run(resolve(gemm_sm90.design(**gemm_sm90.PINGPONG), shape), seed=11)
    assert out["unwritten"] == 0 and out["rel_error"] <= tolerance(out, out["dtype"]), out


def _check_runtime_shapes(design, shapes):
    """``design`` compiled with runtime M, N, K matches the fp32 reference on every shape, every element written."""
    import dataclasses

    for shape in shapes:
        target = dataclasses.replace(resolve(design, (2, *shape[1:])), shape=shape, dynamic=True)
        out = _gemm_run(target, seed=sum(shape))
        assert out["unwritten"] == 0 and out["rel_error"] <= tolerance(out, out["dtype"]), (design.params, shape, out)
