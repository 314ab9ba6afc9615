"""The one timing loop for every kernel and baseline: CUDA events, cold L2, interleaved rounds (in a worker).

Each contestant is a function and its workspaces (argument sets, enough of them to exceed the L2 several times:
:func:`workspace_count`); every round times each contestant once with CuTe DSL's ``cutlass.testing.benchmark``,
rotating through its workspaces, so slow drift of the GPU's clocks touches every contestant alike. Each round
starts one contestant later (:func:`round_order`), so none always runs right after the same one or always last in a
round, where a long kernel's heat and power draw build up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Contestant:
    """A function timed on its own workspaces (each a tuple of arguments)."""

    name: str
    fn: Callable[..., Any]
    workspaces: Sequence[tuple]
    use_cuda_graphs: bool = False


def workspace_count(nbytes: int, warmup: int, iterations: int) -> int:
    """Argument sets needed so that no call finds its data in L2 (CuTe DSL's own rule)."""
    from cutlass.testing import get_workspace_count

    return get_workspace_count(nbytes, warmup, iterations)


def round_order(contestants: Sequence[Contestant], round_index: int) -> list[Contestant]:
    """The contestants in the order round ``round_index`` times them: the list rotated by the round, so over as many
    rounds as contestants each runs once in every place."""
    k = round_index % len(contestants) if contestants else 0
    return [*contestants[k:], *contestants[:k]]


def time_interleaved(contestants: list[Contestant], *, repeats: int, iterations: int, warmup: int,
                     stream: Any) -> dict[str, list[float]]:
    """Microseconds per call of each contestant, one value per round, ``repeats`` rounds."""
    from cutlass.testing import JitArguments, benchmark

    turn = {c.name: 0 for c in contestants}

    def next_workspace(c: Contestant) -> Any:
        turn[c.name] += 1
        return JitArguments(*c.workspaces[turn[c.name] % len(c.workspaces)])

    times: dict[str, list[float]] = {c.name: [] for c in contestants}
    for r in range(repeats):
        for c in round_order(contestants, r):
            times[c.name].append(benchmark(
                c.fn, workspace_generator=lambda c=c: next_workspace(c), workspace_count=len(c.workspaces),
                warmup_iterations=warmup, iterations=iterations, stream=stream, use_cuda_graphs=c.use_cuda_graphs))
    return times
