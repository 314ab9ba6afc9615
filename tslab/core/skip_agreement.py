"""Cautions about what a SAFE verdict does not cover: tasks that decide differently which work tiles they skip.

``work_tile_loop(wq, skip_if=...)`` lets a persistent task skip a tile's ``skippable()`` steps. TS's checker (and
tslab's, which follows it) runs every schedule twice: once with every task running the tile, once with every task
that has a ``skip_if`` skipping it. A tile that some of those tasks skip and others run is never checked, so tasks
whose predicates could disagree (a ping-pong where each warpgroup skips the other's tiles, say) can be SAFE here
and deadlock or race on the GPU. Predicates that are the same callable (``==``: one function, or one WorkQueue's
bound method) decide alike on the same tile; any other pair is a caution. The verdict stays TS's.
"""

from __future__ import annotations

from typing import Any

from ..errors import Issue

KIND = "skip-agreement"
_HINT = ("give every task that skips tiles the same skip_if (one function, or the WorkQueue's own "
         "skip_work_tile_if), so that a tile is skipped by all of them or by none")


def describe(predicate: Any) -> str:
    """A predicate as a reader knows it: its qualified name (``WorkQueue.skip_work_tile_if``, ``<lambda>``)."""
    return getattr(predicate, "__qualname__", None) or repr(predicate)


def differing_skip_predicates(tasks: list[Any]) -> list[Issue]:
    """One caution per task whose ``skip_if`` is not the same callable as the first skipping task's."""
    skipping = [(t.name, t.skip_if) for t in tasks if getattr(t, "skip_if", None) is not None]
    if not skipping:
        return []
    first_task, first = skipping[0]
    return [Issue(KIND, f"task '{name}'",
                  f"skips work tiles by {describe(predicate)}, task '{first_task}' by {describe(first)}: the checker "
                  "runs each tile with all skipping tasks skipping it or none, so a tile these two decide "
                  "differently was not checked", _HINT)
            for name, predicate in skipping[1:] if predicate != first]
