"""Teaching design that does not fit: the TMA copy with more ring stages than SMEM can hold.

Same resources and tasks as ``tma_copy`` (see its flow diagram); 8 stages of 128x128 fp16 tiles need
256 KiB of SMEM against 227 KiB per block, so TS's capacity check fails and names the figures. Fix: fewer
stages (``with_pipeline("smem_ring", num_stages=6)``) or smaller tiles.
"""

from __future__ import annotations

from typing import Any

from ..core.blueprint import Blueprint
from . import tma_copy

NAME = "demo_overflow"
SUMMARY = "teaching: a TMA copy ring with more stages than SMEM holds (capacity error)"
PARAMS: dict[str, Any] = {"stages": 8, "tile_rows": 128, "tile_cols": 128, "tiles": 2}


def build(stages: int = 8, tile_rows: int = 128, tile_cols: int = 128, tiles: int = 2) -> Blueprint:
    return tma_copy.build(stages=stages, tile_rows=tile_rows, tile_cols=tile_cols, tiles=tiles)


def design(**params: Any):
    from ..core.design import Design

    return Design(NAME, params)
