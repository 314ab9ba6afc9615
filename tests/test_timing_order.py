"""The interleaved timing loop's order of contestants in each round (no GPU)."""

from __future__ import annotations

from tslab.gpu.timing import Contestant, round_order


def _names(contestants: list[Contestant], round_index: int) -> list[str]:
    return [c.name for c in round_order(contestants, round_index)]


def test_each_contestant_runs_once_in_every_place_over_as_many_rounds():
    field = [Contestant(name, print, [()]) for name in ("tslab", "package", "fa4", "cudnn")]
    rounds = [_names(field, r) for r in range(4)]
    assert rounds[0] == ["tslab", "package", "fa4", "cudnn"]
    assert rounds[1] == ["package", "fa4", "cudnn", "tslab"]
    for place in range(4):
        assert sorted(order[place] for order in rounds) == sorted(c.name for c in field)
    assert _names(field, 4) == rounds[0]


def test_one_contestant_and_none():
    assert _names([Contestant("alone", print, [()])], 3) == ["alone"]
    assert round_order([], 2) == []
