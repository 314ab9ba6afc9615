"""Which ``gemm_sm90`` design serves which M (and N and K), as measured: the table an export by M is built from.

``BY_M`` lists ``(max_m, params)``: M up to ``max_m`` uses ``gemm_sm90.design(**params)``, the last rule every
larger M; between two measured Ms the larger-M rule applies. One rule bounds N and K as well (``{"M": 4096, "N":
4096, "K": 4096}``: each up to 4096). Each candidate (``CANDIDATES``) was timed at N = K =
8192 beside ``torch.mm`` and the design it replaces in the same rounds, its output checked first, compiled with
runtime M, N, K as the exported package holds it (``benchmarks/gemm.py --tuned --variant NAME``;
benchmarks/NOTES.md, 2026-12-04 on the H200, 2026-12-05 and -06 on an H100, two runs each), fp16 and bf16 alike:

- M <= 64: swapped 64 x 64 tiles (the 64 x 128 tiles leave half of each tile idle at 64 rows).
- M <= 128: ``gemm_sm90.DECODE``'s 64 x 128 tiles.
- M <= 192: swapped 64 x 192 tiles (no tile height fits 192 rows; the ping-pongs lose 20%).
- M <= 256: 128 x 128 tiles (the 128 x 128 ping-pong 1% behind in every run, cuBLAS's tile).
- M <= 320: swapped 128 x 160 tiles (cuBLAS's own tile), five stages (a sixth, where the C tile's SMEM was, is level
  back to back and 4-7.5% slower alone after an L2 flush), blocks in row order (the two that read a weight tile
  start together).
- M <= 384: 128 x 192 cooperative (2.3-3.4% ahead of the persistent 128 x 192, level with torch.mm).
- M <= 512: the default with the sub-tiled epilogue's fourth stage (``SUBTILES``, +2.7-3.1%).
- M, N and K <= 4096: ``SUBTILES`` too (H100: +1-11% at M = 1024-4096, N = K = 4096, two runs; H200: level there,
  0.998-1.001x; behind with N = 4096 and K = 8192, level with N = 8192 and K = 4096, mixed at N = K = 8192 beyond
  M = 1024 and at M = 8192).
- above: the kernel's defaults (128 x 256 cooperative, persistent).

At M <= 384 every tile fits one wave (128 tiles or fewer for 132 SMs at N = 8192), so each pick runs one tile a
block (``ONE_TILE``): no work-tile loop, the C tile staged over the A/B ring once the K loop is done, its SMEM
given to the ring (one to four more stages). Those beat the persistent picks by 0.6-2% at M = 64-256 in every run
and dtype (each p10-p90 apart from the pick's) and are level at M = 320. And none runs a cluster (``ALONE``): the
same picks in pairs of blocks sharing a tile by multicast (cuBLAS's clusters) were 1.8-2.8% slower at M = 64-256
and 4-9% at M = 320 (H100, two runs, both dtypes), where a stage waits for both blocks' release before its refill.
"""

from __future__ import annotations

from typing import Any

from ..core.dispatch import Dispatch
from . import gemm_sm90

#: 128 x 128 tiles split between 2 warpgroups, 5 stages, blocks in pairs along M sharing each B tile.
PAIRS_128: dict[str, Any] = {"tile_m": 128, "tile_n": 128, "mma_warpgroups": 2, "stages": 5, "cluster_m": 2}
#: Swapped A and B (``swap_ab``): B's rows run along the wgmma's M in 64-row blocks, A's M rows along its N, so a
#: tile can be as wide as M itself; pairs along N share each A tile.
SWAP_64x64: dict[str, Any] = {"swap_ab": True, "tile_m": 64, "tile_n": 64, "mma_warpgroups": 1, "stages": 10,
                              "cluster_m": 2}
SWAP_64x128: dict[str, Any] = {**SWAP_64x64, "tile_n": 128, "stages": 8}
SWAP_64x160: dict[str, Any] = {**SWAP_64x64, "tile_n": 160, "stages": 6}
SWAP_64x192: dict[str, Any] = {**SWAP_64x64, "tile_n": 192, "stages": 6}
SWAP_64x256: dict[str, Any] = {**SWAP_64x64, "tile_n": 256, "stages": 4}
SWAP_128x128: dict[str, Any] = {**PAIRS_128, "swap_ab": True}
SWAP_128x160: dict[str, Any] = {**PAIRS_128, "swap_ab": True, "tile_n": 160}
SWAP_128x192: dict[str, Any] = {**PAIRS_128, "swap_ab": True, "tile_n": 192, "stages": 4}
#: A 128 x 128 ping-pong (a warpgroup a whole tile, in turns), 6 stages: the pick at M = 256.
PINGPONG_128x128: dict[str, Any] = {**gemm_sm90.PINGPONG, "tile_n": 128, "stages": 6}
#: quack's pick at M <= 256: the 128 x 128 ping-pong with A and B swapped.
SWAP_PINGPONG_128x128: dict[str, Any] = {**PINGPONG_128x128, "swap_ab": True}
#: 128 x 192 tiles split between 2 warpgroups, 4 stages: the pick at M = 384.
COOP_128x192: dict[str, Any] = {"tile_n": 192, "stages": 4}
#: One block a tile, the C tile staged over the A/B ring once its K loop is done (``epilogue='aliased'``): at small M
#: every pick runs one tile a block anyway (128 tiles for 132 SMs at N = 8192), and the C tile's SMEM buys the ring
#: more stages.
ONE_TILE: dict[str, Any] = {"persistent": False, "epilogue": "aliased"}
#: The picks at M <= 384 as one tile a block, with as many stages as SMEM holds (NOTES #35).
SWAP_64x64_ONE_TILE: dict[str, Any] = {**SWAP_64x64, **ONE_TILE, "stages": 14}
DECODE_ONE_TILE: dict[str, Any] = {**gemm_sm90.DECODE, **ONE_TILE, "stages": 9}
SWAP_64x192_ONE_TILE: dict[str, Any] = {**SWAP_64x192, **ONE_TILE, "stages": 7}
PAIRS_ONE_TILE: dict[str, Any] = {**PAIRS_128, **ONE_TILE, "stages": 7}
SWAP_128x160_ONE_TILE: dict[str, Any] = {**SWAP_128x160, **ONE_TILE, "stages": 6}
#: No cluster: each block loads its own A and B tiles, so a stage is refilled as soon as its own MMA warps release it,
#: not when the partner block's have too (NOTES #39: 1.8-2.8% over the pairs at M = 64-256, 4-9% at 320).
ALONE: dict[str, Any] = {"cluster_m": 1}
#: The picks at M <= 320: one tile a block, as many stages as SMEM holds, no cluster.
SWAP_64x64_ALONE: dict[str, Any] = {**SWAP_64x64_ONE_TILE, **ALONE}
DECODE_ALONE: dict[str, Any] = {**DECODE_ONE_TILE, **ALONE}
SWAP_64x192_ALONE: dict[str, Any] = {**SWAP_64x192_ONE_TILE, **ALONE}
TILE_128_ALONE: dict[str, Any] = {**PAIRS_ONE_TILE, **ALONE}
#: M = 320's with five stages, not the six SMEM holds: level back to back (0.984-1.012x the six's), 4-7.5% faster
#: alone after an L2 flush (NOTES #42)
SWAP_128x160_FIVE_STAGES: dict[str, Any] = {**SWAP_128x160_ONE_TILE, **ALONE, "stages": 5}
#: and its blocks in row order, so the two blocks that read one weight tile (the tile's two 160-wide column blocks)
#: are consecutive and start together: 1.2-2.1% faster from a CUDA graph, 1.2-5.4% alone (NOTES #43)
SWAP_128x160_ALONE: dict[str, Any] = {**SWAP_128x160_FIVE_STAGES, "raster": "row"}
COOP_128x192_ONE_TILE: dict[str, Any] = {**COOP_128x192, **ONE_TILE, "stages": 5}
#: M = 320's pick with C staged in a ring of sub-tile groups: each group is stored while the next is staged, where
#: the whole-tile epilogue exposes 1.8 us of a 63 us block (NOTES #40); timed against the six-stage pick.
SWAP_128x160_SUBTILES: dict[str, Any] = {**SWAP_128x160_FIVE_STAGES, "epilogue": "subtiles"}
#: The default (128 x 256, the large shapes' pick) with C staged in a ring of sub-tile groups (32 KB instead of
#: 64 KB), which buys the A/B ring a fourth stage (NOTES #37).
SUBTILES: dict[str, Any] = {"epilogue": "subtiles", "stages": 4}
#: Every design the sweep over M weighs, by name.
CANDIDATES: dict[str, dict[str, Any]] = {
    "default": {}, "decode": gemm_sm90.DECODE, "pairs": PAIRS_128, "pingpong": gemm_sm90.PINGPONG,
    "pingpong_pairs": {**gemm_sm90.PINGPONG, "cluster_m": 2},
    "pingpong_128x160": {**gemm_sm90.PINGPONG, "tile_n": 160, "stages": 5},
    "pingpong_128x128": PINGPONG_128x128,
    "coop_128x192": COOP_128x192,
    "swap_64x64": SWAP_64x64, "swap_64x128": SWAP_64x128, "swap_64x160": SWAP_64x160, "swap_64x192": SWAP_64x192,
    "swap_64x256": SWAP_64x256, "swap_128x128": SWAP_128x128, "swap_128x160": SWAP_128x160,
    "swap_128x192": SWAP_128x192, "swap_pingpong_128x128": SWAP_PINGPONG_128x128,
    "warp_release": {"per_warp_release": True},
    # a 256 x 192 cooperative tile, 192 accumulators a thread with the register split (quack's best in fp16 on two
    # of the four large shapes is its 256 x 208): 110 multiply-adds per operand element against 128 x 256's 85;
    # NOTES #45: +1.9% at (8192, 28672, 4096), level to 8% behind at 8192^3 and (16384, 4096, 14336), 5-14% behind
    # at 4096^3 (its waves less full): not taken
    "coop_256x192": {"tile_m": 256, "tile_n": 192, "stages": 3, "epilogue": "subtiles"},
    # the default's grouped block order 16 rows of tiles deep, not 8 (NOTES #44: 0.96-1.04x, not taken)
    "raster_group_16": {"raster_group": 16},
    # what cuBLAS runs where ours differs (benchmarks/NOTES.md #34): 13 stages at M = 64, a cluster at M = 256
    "swap_64x64_13": {**SWAP_64x64, "stages": 13},
    "pingpong_128x128_pairs": {**PINGPONG_128x128, "cluster_m": 2},
    # the picks at M <= 384 as one tile a block, with as many stages as SMEM holds (NOTES #35)
    "swap_64x64_aliased": SWAP_64x64_ONE_TILE, "decode_aliased": DECODE_ONE_TILE,
    "swap_64x192_aliased": SWAP_64x192_ONE_TILE, "pairs_aliased": PAIRS_ONE_TILE,
    "swap_128x160_aliased": SWAP_128x160_ONE_TILE, "coop_128x192_aliased": COOP_128x192_ONE_TILE,
    # cuBLAS's kernel at M = 384 (`128x192_64x5_2x1`, column-major: 192 along our M): swapped, pairs, 5 stages
    "swap_128x192_aliased": {**SWAP_128x192, **ONE_TILE, "stages": 5},
    "pingpong_warp_release": {**gemm_sm90.PINGPONG, "per_warp_release": True},
    "subtiles": SUBTILES,
    # and as cuBLAS runs its 128 x 256 (`128x256_64x4_2x1`): four stages, pairs along M sharing each B tile
    "subtiles_pairs": {**SUBTILES, "cluster_m": 2},
    # the picks at M <= 320 without their pairs (M = 384's level pick runs no cluster, NOTES #39); M = 320's
    # persistent pick so too
    "swap_64x64_alone": SWAP_64x64_ALONE, "decode_alone": DECODE_ALONE, "swap_64x192_alone": SWAP_64x192_ALONE,
    "tile_128_alone": TILE_128_ALONE, "swap_128x160_alone": SWAP_128x160_ALONE,
    "swap_128x160_single": {**SWAP_128x160, **ALONE},
    "swap_128x160_subtiles": SWAP_128x160_SUBTILES,
    # M = 320's pick with its C tile in bytes of its own (the persistent pick's staging), with the six stages SMEM
    # holds (the pick until NOTES #42) and with four
    "swap_128x160_dedicated": {**SWAP_128x160_FIVE_STAGES, "epilogue": "dedicated"},
    "swap_128x160_aliased_6": {**SWAP_128x160_FIVE_STAGES, "stages": 6},
    "swap_128x160_aliased_4": {**SWAP_128x160_FIVE_STAGES, "stages": 4},
    # M = 320's pick in the grouped block order (the two blocks that read one weight tile eight apart; the pick
    # until NOTES #43), and cuBLAS's kernel there: in pairs, five stages
    "swap_128x160_grouped": SWAP_128x160_FIVE_STAGES,
    "swap_128x160_pairs_5": {**SWAP_128x160_ONE_TILE, "stages": 5},
    # M = 256's pick (0.97x torch.mm on the H200, level on the H100) persistent with its C tile in bytes of its own,
    # with C staged in a ring of sub-tile groups (each stored while the next is staged), and releasing each stage
    # from one lane a warp (8 arrivals, not 256)
    "tile_128_single": {**PAIRS_128, **ALONE, "stages": 6},
    "tile_128_subtiles": {**TILE_128_ALONE, "epilogue": "subtiles", "stages": 6},
    "tile_128_warp_release": {**TILE_128_ALONE, "per_warp_release": True},
}
#: ``(bound, params)`` in ascending M: ``bound`` the largest M, or ``{"M": ..., "N": ..., "K": ...}`` where the
#: rule bounds N and K too; ``{}`` is the kernel's defaults (``gemm_sm90.PARAMS``).
BY_M: tuple[tuple[int | dict[str, int] | None, dict[str, Any]], ...] = (
    (64, SWAP_64x64_ALONE), (128, DECODE_ALONE), (192, SWAP_64x192_ALONE), (256, TILE_128_ALONE),
    (320, SWAP_128x160_ALONE), (384, COOP_128x192_ONE_TILE), (512, SUBTILES),
    ({"M": 4096, "N": 4096, "K": 4096}, SUBTILES), (None, {}))


def tuned(dtype: str = "fp16", **overrides: Any) -> Dispatch:
    """The measured dispatch by M for ``dtype`` ('fp16' or 'bf16'): export it with ``tslab.gpu.export``;
    ``overrides`` (e.g. ``pdl=True``) set a param of every rule's design."""
    return Dispatch(tuple((bound, gemm_sm90.design(**{**params, **overrides, "dtype": dtype}))
                          for bound, params in BY_M))
