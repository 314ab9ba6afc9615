"""How evenly a causal attention launch spreads its work over the SMs: a model, no GPU.

Each causal Q tile's work is taken as its K/V tiles plus one (its prologue and epilogue); the busiest block's work
over the mean is what the launch loses to imbalance. Two ways of handing out tiles are compared for
``attention_sm90``'s orders (``causal_order``): one tile per block, the next block starting on whichever SM
frees first (the default), and a persistent block taking every SM-count-th tile of the order (TS's static
persistent scheduler, m fastest). The orders follow ``attention_sm90_resources`` (``tile_at``, ``longest_first``)
with its L2 sections (``longest_first_all``: one section; ``longest_first_zigzag``: every other one reversed), and
``snake_rounds`` (a persistent launch's every other round of one tile a block reversed, ``snake``); this script only
predicts, the GPU decides (benchmarks/NOTES.md, A43, A45, A46 and A47).

    python benchmarks/causal_balance.py [--head-dims 64 128] [--shapes 4,2048,32 4,4096,32] [--sms 132]
"""

from __future__ import annotations

import argparse
import heapq
import math

from tslab.kernels import attention_sm90 as attn
from tslab.kernels.attention_sm90_resources import L2_KV_BYTES


def kv_tiles(m_block: int, rows: int, tile_n: int, seqlen: int) -> int:
    """K/V tiles causal Q tile ``m_block`` reads (seqlen_q == seqlen_k)."""
    return max(1, min(math.ceil(seqlen / tile_n), math.ceil((m_block + 1) * rows / tile_n)))


#: ``attention_sm90.CAUSAL_ORDERS``; the last two only for persistent blocks, whose balance they aim at.
ORDERS = ("by_pair", "longest_first", "longest_first_all", "longest_first_zigzag")


def order(name: str, m_blocks: int, pairs: int, l2_heads: int) -> list[int]:
    """The Q tile (m_block) at each place of the launch order (``longest_first_all``: one section of all pairs;
    ``longest_first_zigzag``: every other section reversed)."""
    if name == "by_pair":
        return [m_blocks - 1 - t % m_blocks for t in range(m_blocks * pairs)]
    if name == "longest_first_all":
        l2_heads = pairs
    tiles = []
    for start in range(0, pairs, l2_heads):  # sections of l2_heads pairs, the last may be narrower
        width = min(l2_heads, pairs - start)
        section = [m_blocks - 1 - r // width for r in range(m_blocks * width)]
        if name == "longest_first_zigzag" and (start // l2_heads) % 2:
            section.reverse()
        tiles += section
    return tiles


def snake(tiles: list[int], blocks: int) -> list[int]:
    """``tiles`` with every other round of ``blocks`` places reversed (the last round may be shorter):
    ``attention_sm90_resources.snake``."""
    rounds = [tiles[start:start + blocks] for start in range(0, len(tiles), blocks)]
    return [m for k, round_ in enumerate(rounds) for m in (round_[::-1] if k % 2 else round_)]


def imbalance(work: list[int], sms: int, persistent: bool) -> float:
    """The busiest SM's work over the mean."""
    if persistent:
        load = [sum(work[c::sms]) for c in range(sms)]
    else:
        load = [0] * sms
        for w in work:
            heapq.heappush(load, heapq.heappop(load) + w)
    return max(load) * sms / sum(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--head-dims", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--shapes", nargs="+", default=["4,2048,32", "4,4096,32", "4,8192,32", "1,16384,32"],
                        help="batch,seqlen,heads")
    parser.add_argument("--sms", type=int, default=132)
    args = parser.parse_args()
    print(f"{'d':>4} {'b,s,h':>11} | busiest SM over the mean: one tile a block (by_pair, longest_first), "
          f"persistent ({', '.join(ORDERS)}), persistent with snake_rounds ({', '.join(ORDERS[1:])})")
    for head_dim in args.head_dims:
        p = {**attn.PARAMS, **attn.HEAD_DIM_PRESETS[head_dim]}
        rows = attn.tile_rows(p)
        for shape in args.shapes:
            batch, seqlen, heads = map(int, shape.split(","))
            m_blocks, pairs = math.ceil(seqlen / rows), batch * heads
            l2_heads = max(min(L2_KV_BYTES // (4 * head_dim) // seqlen, pairs), 1)
            blocks = min(args.sms, m_blocks * pairs)
            cells = []
            launches = ((False, False, ORDERS[:2]), (True, False, ORDERS), (True, True, ORDERS[1:]))
            for persistent, snaked, names in launches:
                for name in names:
                    tiles = order(name, m_blocks, pairs, l2_heads)
                    tiles = snake(tiles, blocks) if snaked else tiles
                    work = [kv_tiles(m, rows, p["tile_n"], seqlen) + 1 for m in tiles]
                    cells.append(f"{imbalance(work, args.sms, persistent):.3f}")
            print(f"{head_dim:>4} {shape:>11} | {' '.join(cells[:2])} | {' '.join(cells[2:6])} | {' '.join(cells[6:])}")


if __name__ == "__main__":
    main()
