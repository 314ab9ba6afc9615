"""Which ``gemm_sm90`` design serves which M, as measured on the H200: the table an export by M is built from.

``BY_M`` lists ``(max_m, params)``: M up to ``max_m`` uses ``gemm_sm90.design(**params)``, the last rule every
larger M. Where each bound comes from (benchmarks/NOTES.md, "GEMM", fp16 with N = K = 8192):

- M <= 128: ``gemm_sm90.DECODE`` (row #15: 448 TFLOP/s at M = 128, 2.12x the default, 0.98x torch.mm; at
  M = 256 the pairs below beat it).
- 129 <= M <= 384: ``PAIRS_128``, 128 x 128 tiles, 2 warpgroups, pairs along M (row #18: at M = 256 1.55x the
  default and above DECODE's 548; the "Variants at M = 256" table there: 624 fp16 / 645 bf16, 1.16x DECODE,
  with 5 stages; 6 were refused there as over SMEM).
- M >= 385: the kernel's defaults (row #19: at M = 512 the default 712 against 692 for the pairs).

384 lies halfway between the measured M = 256 and M = 512 and was not measured itself; nor were M between 128
and 256. A GPU sweep over M will re-derive the bounds; until then they are this table's best reading.
"""

from __future__ import annotations

from typing import Any

from ..core.dispatch import Dispatch
from . import gemm_sm90

#: 128 x 128 tiles split between 2 warpgroups, 5 stages, blocks in pairs along M sharing each B tile.
PAIRS_128: dict[str, Any] = {"tile_m": 128, "tile_n": 128, "mma_warpgroups": 2, "stages": 5, "cluster_m": 2}
#: ``(max_m, params)`` in ascending max_m; ``{}`` is the kernel's defaults (``gemm_sm90.PARAMS``).
BY_M: tuple[tuple[int | None, dict[str, Any]], ...] = ((128, gemm_sm90.DECODE), (384, PAIRS_128), (None, {}))


def tuned(dtype: str = "fp16") -> Dispatch:
    """The measured dispatch by M for ``dtype`` ('fp16' or 'bf16'): export it with ``tslab.gpu.export``."""
    return Dispatch(tuple((bound, gemm_sm90.design(**{**params, "dtype": dtype})) for bound, params in BY_M))
