"""Which ``attention_sm90`` design serves which calls, as measured: the table an export by causal and seqlen_k is
built from.

``BY_SEQLEN_K[head_dim]`` lists ``(causal, max_seqlen_k, params)``: a call with that ``causal`` and at most
``max_seqlen_k`` keys uses ``attention_sm90.design(**params, causal=causal)``, the last rule of each causal value
every longer row. Timed beside flash-attn-4 and SDPA's cuDNN in the same rounds, outputs checked first, compiled
with runtime extents as the exported package holds them (``benchmarks/attention.py --variant``; benchmarks/NOTES.md,
2026-12-05, two runs or more, h32):

- head_dim 128, non-causal, seqlen_k <= 2048: ``SHORT_ROWS``, the persistent schedule with two Q stages (1.046 /
  1.031x the default at s = 2048, H200, b4: a short row's 16 K/V tiles leave the prologue and epilogue of each Q
  tile exposed, and the next tile's Q loads while this one's last GEMMs run); 0.95-0.99x the default from 4096.
- head_dim 128, non-causal, seqlen_k > 8192: ``LONG_ROWS``, 176-wide K/V tiles in three stages (FlashAttention-3's
  non-causal tile): 1.02-1.06x the default at 16,384 keys (b1) in every run (H100, three runs, both dtypes) and
  1.025-1.036x at 12,288 (b2, H200, two runs); at 8,192 keys (b4) level (1.00-1.02x), at 4,096 behind.
- head_dim 128, causal, seqlen_k <= 4096: ``SHORT_ROWS`` with its tiles longest first, up to 2,048 keys with
  every other L2 section of pairs shortest first (``causal_order="longest_first_zigzag"``, A46: 1.013-1.048x the
  default at 2,048 keys, where plain ``longest_first`` is 0.976-1.004x), from 2,049 keys plain (A43: 1.011-1.058x
  at 4,096 in four runs, zigzag 1.027-1.039x); b4, H100, both dtypes. From 8,192 keys the persistent schedule is
  level or behind (0.948-1.006x, one run), and so is one section of all pairs everywhere (A45: 0.71-0.81x).
- head_dim 128, causal, seqlen_k > 12288: ``LONG_ROWS`` too: 1.01-1.04x at 16,384 keys (H100, two runs), but
  0.978-0.995x at 12,288 (H200, two runs, both dtypes) and 1-2% behind at 8,192.
- head_dim 128, the rest (non-causal 2,049-8,192 keys, causal 4,097-12,288): the kernel's defaults.
- head_dim 64: ``attention_sm90.HEAD_DIM_64`` (three warpgroups, NOTES A20), and for non-causal rows up to 8,192
  keys with ``SHORT_ROWS`` over it: 1.04-1.10x the preset at 2,048 and 4,096 keys (b4, H100, two runs, both dtypes),
  1.01-1.04x at 8,192, level at 16,384 (b1). Causal rows up to 4,096 keys take ``SHORT_ROWS`` with its tiles
  longest first over all pairs at once (``causal_order="longest_first_all"``, A45): 1.074-1.095x the preset at
  2,048 keys and 1.039-1.093x at 4,096 (b4, H100, two runs, both dtypes), ahead of the L2 sections' order
  (``longest_first``, A43) in all eight cells of the same rounds (by 0.2-3.3%); at 6,144 and 8,192 keys A43 was
  level (0.976-1.006x, one run), so longer causal rows keep the preset. In ``by_pair`` order the
  persistent schedule is 0.57-0.65x the preset on causal rows: its blocks take every 132nd tile, and with 11 (or
  22) Q tiles a pair each block always gets the same Q tile of its pairs, so the blocks of the last ones run 1.7x
  the mean (A43).
"""

from __future__ import annotations

from typing import Any

from ..core.dispatch import Dispatch
from ..errors import DesignError
from . import attention_sm90

#: A persistent block per SM over the Q tiles, two Q stages: the next tile's Q loads under this one's GEMMs.
SHORT_ROWS: dict[str, Any] = {"persistent": True, "q_stages": 2}
#: K/V tiles 176 wide (three stages fit): fewer, longer K/V steps a Q tile, which pays on long rows (more than 8,192
#: keys non-causal, 12,288 causal).
LONG_ROWS: dict[str, Any] = {"tile_n": 176, "kv_stages": 3}
#: ``{head_dim: ((causal, max_seqlen_k, params), ...)}``, each causal value's rules in ascending max_seqlen_k, the
#: last None; ``{}`` is the kernel's defaults (``attention_sm90.PARAMS``).
BY_SEQLEN_K: dict[int, tuple[tuple[bool, int | None, dict[str, Any]], ...]] = {
    128: ((False, 2048, SHORT_ROWS), (False, 8192, {}), (False, None, LONG_ROWS),
          (True, 2048, {**SHORT_ROWS, "causal_order": "longest_first_zigzag"}),
          (True, 4096, {**SHORT_ROWS, "causal_order": "longest_first"}), (True, 12288, {}),
          (True, None, LONG_ROWS)),
    64: ((False, 8192, {**attention_sm90.HEAD_DIM_64, **SHORT_ROWS}), (False, None, attention_sm90.HEAD_DIM_64),
         (True, 4096, {**attention_sm90.HEAD_DIM_64, **SHORT_ROWS, "causal_order": "longest_first_all"}),
         (True, None, attention_sm90.HEAD_DIM_64)),
}


def tuned(dtype: str = "bf16", head_dim: int = 128, **overrides: Any) -> Dispatch:
    """The measured dispatch by causal and seqlen_k for ``dtype`` ('fp16' or 'bf16') and ``head_dim`` (64 or
    128): export it with ``tslab.gpu.export`` (``tslab export attention_sm90 --tuned``); ``overrides`` (e.g.
    ``pdl=True``) set a param of every rule's design."""
    if head_dim not in BY_SEQLEN_K:
        raise DesignError("input", "attention_sm90 tuned dispatch", f"head_dim={head_dim!r} has no measured table",
                          f"pass one of {', '.join(map(str, BY_SEQLEN_K))}")
    return Dispatch(tuple((bound, attention_sm90.design(**{**params, **overrides, "causal": causal, "dtype": dtype,
                                                             "head_dim": head_dim}))
                          for causal, bound, params in BY_SEQLEN_K[head_dim]), key="seqlen_k")
