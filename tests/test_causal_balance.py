"""benchmarks/causal_balance.py: the model behind the predictions of A43, A45 and A46 (no GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import causal_balance as balance

from tslab.kernels import attention_sm90 as attn


def _work(name: str, m_blocks: int, rows: int, seqlen: int, pairs: int = 128, l2_heads: int = 80) -> list[int]:
    return [balance.kv_tiles(m, rows, 128, seqlen) + 1 for m in balance.order(name, m_blocks, pairs, l2_heads)]


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
