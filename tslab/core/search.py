"""The reduced search: TS's interleaving checker with a partial-order reduction (stubborn sets).

TS's checker is a breadth-first search over every interleaving of the tasks' expanded schedules, keyed on
the cursor vector. The tasks are long straight-line sequences that share few credits, so most interleavings
differ only in the order of independent steps. At each state this search expands a *stubborn* subset of the
tasks that may move instead of all of them:

- from a seed task: a task that may move adds every task whose remaining steps hold a step dependent on its
  next one (one that takes the same credit, or changes the same held entries); a blocked task adds every task
  that could unblock it (a commit for a wait, a release for an acquire, a PDL wait for a PDL launch);
- the smallest such set over all seeds is expanded; a set holding a *visible* step (one that changes held
  state, moves a task onto an aliased access or a PDL launch, or is a PDL wait) is expanded in full.

The state space is acyclic (each step advances one cursor), so the reduced graph keeps every terminal state:
the deadlock states, their depths and completion are exactly TS's; visibility keeps every race and PDL-order
fault TS can reach. This module owns only which tasks to expand and the visited set (TS's cursor key): every
transition, enabledness, deadlock, race and PDL rule is TS's own function (through :mod:`tslab.core.trace`),
with ``reduce=False`` it is TS's plain search, and every counterexample is walked again with TS's functions
before it is reported.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cutlass.experimental.task_scheduling import exhaustive_checker as ec

from ..errors import TslabError
from . import trace as hook

_TASK_BITS = 8
#: How often (in states) a search reports its progress.
PROGRESS_EVERY = 20_000


class SearchError(TslabError, RuntimeError):
    """A counterexample the reduced search found did not replay under TS's own functions (a tslab bug)."""


@dataclass
class SearchResult:
    """One search of one planned checker run: TS's own result type, and the recording replay reads."""

    result: Any  # exhaustive_checker.CheckResult
    recording: hook.Recording
    reduced: bool
    merges: int = 0  # arrivals at visited cursors with other held entries (see explore's visited)
    visited: str = "cursors"  # the visited-set key of the search that decided


@dataclass
class _Masks:
    """Per task and cursor, bit sets over the steps from that cursor to the end of the schedule."""

    competes: list[list[int]]  # credits taken, held entries changed
    unblocks: list[list[int]]  # credits given, PDL waits


class _Model:
    """One run's context as the search reads it: TS's functions (a :class:`tslab.core.trace.Machine`), each
    step's footprint, and the suffix masks the stubborn sets are built from."""

    def __init__(self, machine: hook.Machine) -> None:
        self.machine, self.rec, self.ctx = machine, machine.rec, machine.context
        fps = hook.footprints(self.rec)
        self.fps = fps.steps
        n = fps.credit_slots
        self.pdl_bit = 1 << (2 * n)
        self.competes_of = [[fp.takes_full | fp.takes_empty << n | fp.held << 2 * n for fp in row] for row in self.fps]
        self.needs_of = [[fp.takes_full | fp.takes_empty << n for fp in row] for row in self.fps]
        self.gives_of = [[fp.gives_full | fp.gives_empty << n | (self.pdl_bit if fp.pdl_wait else 0)
                          for fp in row] for row in self.fps]
        self.masks = _Masks(_suffixes(self.competes_of), _suffixes(self.gives_of))
        aliased = bool(self.ctx.alias_map)
        self.visible_race = [[aliased and (fp.held != 0 or fp.point_access
                                           or (c + 1 < len(row) and row[c + 1].point_access))
                              for c, fp in enumerate(row)] for row in self.fps]
        self.visible_pdl = [[fp.pdl_wait or (c + 1 < len(row) and row[c + 1].pdl_launch)
                             for c, fp in enumerate(row)] for row in self.fps]

    # -- TS's functions ------------------------------------------------------------------------------
    def enabled(self, state: Any) -> tuple[int, bool]:
        """``(mask of the tasks TS lets move, every task done)``."""
        return self.machine.enabled_mask(state)

    def advance(self, state: Any, task: int) -> Any:
        return self.machine.advance(state, task)

    def races(self, state: Any, enabled: tuple[int, bool]) -> list[Any]:
        return self.machine.races(state, enabled[0])

    def deadlock(self, state: Any) -> Any:
        return self.machine.deadlock(state)

    def early_launches(self, state: Any, enabled: tuple[int, bool]) -> list[int]:
        """Tasks whose next op is a PDL launch that would run before any PDL wait (TS does not take it)."""
        if state.has_executed_pdl_wait:
            return []
        return [t for t in self.tasks_of(enabled[0]) if self.fps[t][state.cursors[t]].pdl_launch]

    def tasks_of(self, mask: int) -> list[int]:
        return [t for t in range(self.ctx.n_tasks) if mask >> t & 1]

    # -- the reduction -------------------------------------------------------------------------------
    def stubborn(self, state: Any, movable: list[int], launches: list[int]) -> list[int]:
        """The smallest stubborn set of the tasks that may move; all of them when none is smaller and invisible."""
        if len(movable) <= 1:
            return movable
        cursors, lens = state.cursors, self.ctx.schedule_lens
        live = [t for t in range(self.ctx.n_tasks) if cursors[t] < lens[t]]
        movable_set, launch_set = set(movable), set(launches)
        pdl_open = not state.has_executed_pdl_wait
        best: list[int] | None = None
        for seed in live:
            members = self._closure(seed, cursors, live, movable_set, launch_set)
            chosen = [t for t in movable if t in members]
            if not chosen or len(chosen) == len(movable) or (best is not None and len(chosen) >= len(best)):
                continue
            if any(self.visible_race[t][cursors[t]] or (pdl_open and self.visible_pdl[t][cursors[t]])
                   for t in chosen):
                continue
            best = chosen
            if len(best) == 1:
                break
        return best or movable

    def _closure(self, seed: int, cursors: tuple[int, ...], live: list[int], movable: set[int],
                 launches: set[int]) -> set[int]:
        members, work = {seed}, [seed]
        competes, unblocks = self.masks.competes, self.masks.unblocks
        while work:
            t = work.pop()
            c = cursors[t]
            if t in movable:
                want, suffix = self.competes_of[t][c], competes
            elif t in launches:
                want, suffix = self.pdl_bit, unblocks
            else:
                want, suffix = self.needs_of[t][c], unblocks
            if not want:
                continue
            for u in live:
                if u not in members and suffix[u][cursors[u]] & want:
                    members.add(u)
                    work.append(u)
        return members


def _suffixes(rows: list[list[int]]) -> list[list[int]]:
    """Per row, the OR of each entry with every later one (one extra 0 for a finished task)."""
    out = []
    for row in rows:
        acc, suffix = 0, [0] * (len(row) + 1)
        for c in range(len(row) - 1, -1, -1):
            acc |= row[c]
            suffix[c] = acc
        out.append(suffix)
    return out


def _race_key(race: Any) -> tuple:
    return (race.writer_task, race.writer_resource, race.victim_task, race.victim_resource, race.victim_access,
            race.overlap_desc)


STOPS = ("first", "deadlock", "end")
VISITED = ("state", "cursors")


class _Search:
    """One breadth-first search over TS's transitions; ``visit`` picks which tasks move at each state."""

    def __init__(self, model: _Model, *, reduce: bool, stop: str, visited: str,
                 progress: Callable[[int, int], None] | None) -> None:
        self.model, self.reduce, self.stop, self.progress = model, reduce, stop, progress
        self.by_state = visited == "state" and bool(model.ctx.alias_map)  # held is {} without aliasing
        self.deadlocks: list[Any] = []
        self.races: dict[tuple, tuple[Any, Any]] = {}  # descriptor -> (RaceInfo, key of the state seen at)
        self.race_list: list[Any] = []
        self.launches: dict[tuple, tuple[Any, Any]] = {}
        self.launch_list: list[Any] = []
        self.explored = self.complete = 0
        self.back: dict[Any, tuple[Any, int]] = {}  # keyed on states: key -> (parent's key, task that moved)
        # keyed on cursors, two paths to the same cursors may leave different held entries: TS keeps the
        # first; ``merges`` counts the others (0: the held entries are a function of the cursors)
        self.watch_held = visited == "cursors" and bool(model.ctx.alias_map)
        self.held_at: dict[int, tuple] = {}
        self.merges = 0

    def key(self, state: Any) -> Any:
        return (state.cursor_key, hook.held_key(state.held)) if self.by_state else state.cursor_key

    def run(self, max_states: int) -> bool:
        """Search until done, a stop or ``max_states``; True when the limit stopped it with states left."""
        model = self.model
        initial = model.rec.initial
        seen = {self.key(initial)}
        watch, held_at = self.watch_held, self.held_at
        if watch:
            held_at[initial.cursor_key] = hook.held_key(initial.held)
        queue: deque[Any] = deque([initial])
        cursor_parent = model.rec.parent
        while queue and self.explored < max_states:
            state = queue.popleft()
            self.explored += 1
            if self.progress is not None and self.explored % PROGRESS_EVERY == 0:
                self.progress(self.explored, len(queue))
            moves = self.visit(state)
            if moves is None:
                break
            here = self.key(state)
            for t in moves:
                succ = model.advance(state, t)
                k = self.key(succ)
                if k in seen:
                    if watch and held_at[k] != hook.held_key(succ.held):
                        self.merges += 1
                    continue
                if watch:
                    held_at[k] = hook.held_key(succ.held)
                seen.add(k)
                if self.by_state:
                    self.back[k] = (here, t)
                cursor_parent.setdefault(succ.cursor_key, (state.cursor_key << _TASK_BITS) | t)
                queue.append(succ)
        return bool(queue and self.explored >= max_states)

    def visit(self, state: Any) -> list[int] | None:
        """TS's checks at one state (races, completion, deadlock, PDL order), then the tasks to move;
        None ends the search."""
        model, first = self.model, self.stop == "first"
        enabled = model.enabled(state)
        if model.ctx.alias_map:
            found = model.races(state, enabled)
            for race in found:
                if self.reduce:
                    self.races.setdefault(_race_key(race), (race, self.key(state)))
                else:
                    self.race_list.append(race)
            if found and first:
                return None
        mask, all_done = enabled
        if all_done:
            self.complete += 1
            return []
        if not mask:
            self.deadlocks.append(model.deadlock(state))
            return None if self.stop != "end" else []
        launches = model.early_launches(state, enabled)
        for t in launches:
            info = ec.PdlOrderInfo(cursors=state.cursors, launch_task=model.ctx.task_names[t],
                                   launch_resource=model.machine.resource_name(t, state.cursors[t]))
            if self.reduce:
                self.launches.setdefault((info.launch_task, info.launch_resource), (info, self.key(state)))
            else:
                self.launch_list.append(info)
            if first:
                return None
        movable = [t for t in model.tasks_of(mask) if t not in launches]
        return model.stubborn(state, movable, launches) if self.reduce else movable

    def path(self, key: Any, cursors: tuple[int, ...]) -> list[int]:
        """Task indices from the initial state to the state with ``key`` (at ``cursors``), along the search's
        own tree."""
        if not self.by_state:
            return hook.path_to(self.model.rec, cursors)
        out = []
        while key in self.back:
            key, t = self.back[key]
            out.append(t)
        return out[::-1]


def explore(tasks: list[Any], *, max_states: int, reduce: bool = True, stop: str = "deadlock",
            visited: str = "cursors", progress: Callable[[int, int], None] | None = None,
            **run: Any) -> SearchResult:
    """Search one planned checker run of ``tasks`` (``run``: the keyword arguments of
    ``check_all_interleavings`` that pick the run) and return TS's own ``CheckResult``.

    ``reduce=False`` is TS's plain breadth-first search: ``stop="first"`` is its ``early_exit=True`` (the first
    fault ends it), ``stop="end"`` its ``early_exit=False``. The visited set is keyed as TS keys it, on the
    cursors: TS takes the held entries to be a function of the cursors, and they are unless aliased
    non-pipelined work leaves entries that depend on the order of the steps. Then two paths to the same
    cursors differ, a race may show on one of them only, and which one TS keeps depends on its search order.
    The reduced search counts such arrivals (``merges``) and, when there are any, searches again keyed on the
    cursors and the held entries (``visited="state"``, TS's own key with ``cursor_only_visited=False``). It
    reports each race and PDL-order fault once, at the shallowest state found; by default (``stop="deadlock"``)
    it ends at the first deadlock, which no other deadlock is shallower than.
    ``progress(states, queued)`` is called every :data:`PROGRESS_EVERY` states.
    """
    if stop not in STOPS or visited not in VISITED:
        raise ValueError(f"stop={stop!r} must be one of {STOPS} and visited={visited!r} one of {VISITED}")
    rec = hook.checker_context(tasks, **run)
    if rec.context is None:  # no tasks: TS's checker returns at once
        return SearchResult(ec.CheckResult([], [], 0, 0, True), rec, reduce)
    model = _Model(hook.Machine(tasks, rec, skipped_tile=run.get("skipped_tile", False),
                                num_tiles=run.get("num_tiles", 1), opaque_assignment=run.get("opaque_assignment")))
    search = _Search(model, reduce=reduce, stop=stop, visited=visited, progress=progress)
    hit = search.run(max_states)
    merges = search.merges
    if reduce and merges:
        rec.parent.clear()
        search = _Search(model, reduce=True, stop=stop, visited="state", progress=progress)
        hit = search.run(max_states)
        visited = "state"
    races, launches = search.race_list, search.launch_list
    if reduce:
        races = _shortest_races(model, search)
        launches = _shortest_launches(model, search)
    for d in search.deadlocks:
        _verify(model, hook.path_to(rec, d.cursors), d.cursors, _deadlocked, "deadlock")
    result = ec.CheckResult(deadlock_states=search.deadlocks, race_states=races, states_explored=search.explored,
                            complete_count=search.complete, is_safe=not (search.deadlocks or races or launches),
                            pdl_order_states=launches, hit_state_limit=hit)
    return SearchResult(result, rec, reduce, merges, visited)


def _deadlocked(state: Any, enabled: tuple[int, bool]) -> bool:
    return not enabled[0] and not enabled[1]


# -- counterexamples: shortest witnesses, walked again with TS's functions ---------------------------------
def _walk(model: _Model, path: list[int]) -> list[Any] | None:
    """The states along ``path`` from the initial state, or None when a step is one TS would not take."""
    state, states = model.rec.initial, [model.rec.initial]
    for t in path:
        enabled = model.enabled(state)
        if not enabled[0] >> t & 1 or t in model.early_launches(state, enabled):
            return None
        state = model.advance(state, t)
        states.append(state)
    return states


def _verify(model: _Model, path: list[int], cursors: tuple[int, ...], holds: Callable[[Any, Any], bool],
            what: str) -> list[Any]:
    """The states along ``path``, which must end at ``cursors`` in a state where ``holds``."""
    states = _walk(model, path)
    if states is None or tuple(states[-1].cursors) != tuple(cursors) or not holds(states[-1],
                                                                                  model.enabled(states[-1])):
        raise SearchError(f"tslab.core.search: the {what} at cursors {tuple(cursors)} does not replay under TS's "
                          "own step functions; check with strategy='ts' and report this design")
    return states


def _shorten(model: _Model, path: list[int], keep_tasks: set[int],
             holds: Callable[[Any, Any], bool]) -> list[int] | None:
    """A shorter path to a state where ``holds``, or None: the steps the fault's tasks need (a backward pass
    keeping every earlier step of a kept task and every step giving a credit a kept step takes), then each
    task's last steps dropped while the walk stays valid and still reaches a state where ``holds``, each
    candidate cut at its first such state."""
    cursor = [0] * model.ctx.n_tasks
    events = []
    for t in path:
        events.append((t, cursor[t]))
        cursor[t] += 1
    kept_tasks, needs, kept = set(keep_tasks), 0, []
    for t, c in reversed(events):
        if t in kept_tasks or model.gives_of[t][c] & needs:
            kept_tasks.add(t)
            needs |= model.needs_of[t][c] | (model.pdl_bit if model.fps[t][c].pdl_launch else 0)
            kept.append(t)
    kept.reverse()
    best = _cut(model, kept, holds)
    if best is None:
        return None
    changed = True
    while changed:
        changed = False
        for u in sorted(set(best)):
            while u in best:
                last = len(best) - 1 - best[::-1].index(u)
                trial = _cut(model, best[:last] + best[last + 1:], holds)
                if trial is None:
                    break
                best, changed = trial, True
    return best


def _cut(model: _Model, path: list[int], holds: Callable[[Any, Any], bool]) -> list[int] | None:
    """``path`` up to the first state where ``holds``; None when no state on it holds or a step is refused."""
    states = _walk(model, path)
    if states is None:
        return None
    for n, state in enumerate(states):
        if holds(state, model.enabled(state)):
            return path[:n]
    return None


def _witness(model: _Model, path: list[int], cursors: tuple[int, ...], keep_tasks: set[int],
             holds: Callable[[Any, Any], bool], what: str) -> Any:
    """The end state of the shortest path found to a fault the search first saw at ``cursors`` (at the end of
    ``path``); that path is recorded (``Recording.paths``) for replay."""
    states = _verify(model, path, cursors, holds, what)
    shorter = _shorten(model, path, keep_tasks, holds)
    if shorter is not None and len(shorter) < len(path):
        path = shorter
        states = _walk(model, path)
    state = states[-1]
    model.rec.paths[tuple(state.cursors)] = path
    return state


def _shortest_races(model: _Model, search: _Search) -> list[Any]:
    names = model.ctx.task_names
    out = []
    for key, (race, at) in search.races.items():

        def holds(state: Any, enabled: Any, key: tuple = key) -> bool:
            return any(_race_key(r) == key for r in model.races(state, enabled))

        tasks = {names.index(race.writer_task), names.index(race.victim_task)}
        state = _witness(model, search.path(at, race.cursors), race.cursors, tasks, holds, "race")
        out.append(next(r for r in model.races(state, model.enabled(state)) if _race_key(r) == key))
    return sorted(out, key=lambda r: sum(r.cursors))


def _shortest_launches(model: _Model, search: _Search) -> list[Any]:
    names = model.ctx.task_names
    out = []
    for info, at in search.launches.values():
        task = names.index(info.launch_task)

        def holds(state: Any, enabled: Any, task: int = task) -> bool:
            return task in model.early_launches(state, enabled)

        state = _witness(model, search.path(at, info.cursors), info.cursors, {task}, holds,
                         "PDL launch before any wait")
        out.append(ec.PdlOrderInfo(cursors=state.cursors, launch_task=info.launch_task,
                                   launch_resource=info.launch_resource))
    return sorted(out, key=lambda p: sum(p.cursors))
