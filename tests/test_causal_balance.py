"""benchmarks/causal_balance.py: the model behind the predictions of A43, A45 and A46 (no GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import causal_balance as balance

from tslab.kernels import attention_sm90 as attn
from tslab.kernels import attention_sm90_resources as resources


def _work(name: str, m_blocks: int, rows: int, seqlen: int, pairs: int = 128, l2_heads: int = 80,
          snake_blocks: int = 0) -> list[int]:
    tiles = balance.order(name, m_blocks, pairs, l2_heads)
    tiles = balance.snake(tiles, snake_blocks) if snake_blocks else tiles
    return [balance.kv_tiles(m, rows, 128, seqlen) + 1 for m in tiles]


def test_every_order_hands_out_each_tile_once():
    assert balance.ORDERS == attn.CAUSAL_ORDERS
    for name in balance.ORDERS:
        tiles = balance.order(name, 11, 128, 80)
        assert sorted(tiles) == sorted(list(range(11)) * 128)


def test_a_persistent_block_meets_one_q_tile_when_the_sms_are_a_multiple_of_a_pairs_tiles():
    """132 SMs, 11 Q tiles a pair (head_dim 64, 2,048 keys): persistent by_pair gives each block one Q position."""
    work = _work("by_pair", 11, 192, 2048)
    assert all(len(set(work[c::132])) == 1 for c in range(132))
    # block 0 holds 11 of the last Q tiles (16 K/V tiles and its prologue each): 1.72x the mean
    assert balance.imbalance(work, 132, persistent=True) == pytest.approx(11 * 17 * 132 / sum(work))
    assert balance.imbalance(_work("longest_first", 11, 192, 2048), 132, persistent=True) < 1.11
    assert balance.imbalance(work, 132, persistent=False) < 1.1  # the next block starts where one ends


def test_one_section_evens_out_what_a_narrower_last_section_unbalances():
    """A45: 128 pairs in sections of 80 + 48 start the lengths over part-way through the blocks; in one section a
    persistent block's share of each length differs by at most one tile."""
    sectioned = balance.imbalance(_work("longest_first", 11, 192, 2048), 132, persistent=True)
    whole = balance.imbalance(_work("longest_first_all", 11, 192, 2048), 132, persistent=True)
    assert whole < 1.04 < 1.1 < sectioned
    # A46: the sections kept, the second one shortest first
    assert 1.04 < balance.imbalance(_work("longest_first_zigzag", 11, 192, 2048), 132, persistent=True) < 1.07


@pytest.mark.parametrize(("m_blocks", "heads", "batch", "l2_heads", "blocks"),
                         [(11, 32, 1, 32, 132), (16, 16, 2, 32, 132), (22, 32, 4, 10, 132), (3, 5, 1, 5, 15),
                          (7, 9, 2, 4, 50)])
@pytest.mark.parametrize("name", balance.ORDERS[1:])
def test_the_kernels_snake_hands_out_the_models_tiles(name, m_blocks, heads, batch, l2_heads, blocks):
    """A47: the kernel's launch arithmetic (``snake`` then ``longest_first``, run here on Python ints) hands each
    place of a persistent launch the tile the model gives it, every tile once, the last round shorter or not."""
    ext = resources.Extents(m_blocks=m_blocks, seqlen_q=0, seqlen_k=0, heads_per_kv=1, heads=heads, batch=batch,
                            l2_heads=heads * batch if name == "longest_first_all" else l2_heads, blocks=blocks)
    tiles = m_blocks * heads * batch
    places = [resources.snake.__wrapped__(ext, t) for t in range(tiles)]
    assert sorted(places) == list(range(tiles))
    kernel = [resources.longest_first.__wrapped__(ext, t, name == "longest_first_zigzag") for t in places]
    assert len(set(kernel)) == tiles
    model = balance.snake(balance.order(name, m_blocks, heads * batch, l2_heads), blocks)
    assert [m for m, _, _ in kernel] == model


def test_the_snake_evens_out_a_launch_of_few_rounds():
    """b1 h32, 2,048 keys at head_dim 64: 352 tiles, under three rounds of 132. The LPT order alone hands the first
    blocks the longest tile of every round (1.29x the mean); the snake hands them a short one every other round."""
    assert balance.imbalance(_work("longest_first", 11, 192, 2048, pairs=32, l2_heads=32), 132, persistent=True) > 1.25
    snaked = _work("longest_first", 11, 192, 2048, pairs=32, l2_heads=32, snake_blocks=132)
    assert balance.imbalance(snaked, 132, persistent=True) < 1.11
