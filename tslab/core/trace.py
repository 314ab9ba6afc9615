"""The one hook into the exhaustive checker's private state (pinned to nvidia-cutlass-dsl 4.8.x).

``check_all_interleavings`` returns counterexample cursors but no path. While it runs, :func:`recording`
wraps the module globals it calls (``_advance_one_task``, ``_compute_enabled_tasks``, ``_HeldStateTracker``)
to record each state's BFS parent and the task that moved (first discovery = the BFS parent, since the visited
set is keyed on cursors). :class:`Machine` then re-applies the checker's own transition, enabledness, deadlock
and race functions from the initial state, and :func:`footprints` reads what each step of the checker's
``_StepInfo`` takes, gives and touches (checked against TS's own credit transition, enabledness and held-state
tracker as it is read). Nothing here re-implements a checker rule.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cutlass.experimental.task_scheduling import exhaustive_checker as ec
from cutlass.experimental.task_scheduling.enums import Every, OpaqueCondition

from ..errors import TslabError
from . import guards

SUPPORTED = "4.8."
_USED = (  # every private name of the checker this module reads
    "_advance_one_task", "_compute_enabled_tasks", "_HeldStateTracker", "_find_races_at_state",
    "_next_point_accesses", "_blocked_tasks_for_deadlock", "_expand_task_for_check",
    "_explode_sync_work", "_entry_consumer_work_phase", "_BfsState", "_CheckerContext", "_StepInfo",
    "_apply_credit_transition", "_freeze_held")
_CONTEXT_FIELDS = ("task_names", "n_tasks", "schedule_lens", "cursor_strides", "credit_key_order",
                   "schedule_steps", "id_to_res", "alias_map", "prod_alias_map", "cons_alias_map",
                   "overlap_descs", "domain_rids")
_STATE_FIELDS = ("cursors", "cursor_key", "prod_credits", "cons_credits", "held", "has_executed_pdl_wait")
_STEP_FIELDS = ("stage", "rid", "track", "in_alias", "is_pdl_wait", "is_pdl_launch", "is_blocking",
                "is_point_write", "is_point_read", "is_producer_commit", "is_consumer_release", "is_consumer_wait",
                "is_producer_acquire", "is_producer_work", "is_consumer_work", "has_credit_transition",
                "needs_held_update", "is_fork_group", "is_merge_group", "is_fused_merge_group", "credit_idx",
                "producer_count", "consumer_count", "group_member_prod_counts", "group_member_cons_counts",
                "group_member_release_slots", "group_member_wait_slots", "completion_wait_rids", "commit_wait_gen")
_LOCK = threading.RLock()
_TASK_BITS = 8  # parents are packed into one int: no tuple per recorded state


class CheckerInternalsError(TslabError, RuntimeError):
    """The installed TS checker no longer has the private pieces replay relies on."""


@functools.cache
def ts_version() -> str:
    try:
        return importlib.metadata.version("nvidia-cutlass-dsl")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def require_internals() -> None:
    """Fail with a clear message when the checker's private API differs from 4.8.x."""
    version = ts_version()
    missing = _missing_internals(tuple(getattr(ec, n, None) for n in _USED))
    if missing or not version.startswith(SUPPORTED):
        raise CheckerInternalsError(
            f"tslab.core.trace: nvidia-cutlass-dsl {version} "
            + (f"lacks the checker internals {', '.join(missing)}" if missing else "is not a 4.8.x release")
            + f"; install nvidia-cutlass-dsl=={SUPPORTED}1 or update tslab/core/trace.py for this release")


@functools.lru_cache(maxsize=4)
def _missing_internals(found: tuple[Any, ...]) -> list[str]:
    """Names of the hooked internals (and their fields) absent; cached per set of objects found."""
    missing = [n for n, obj in zip(_USED, found, strict=True) if obj is None]
    fields = {"_CheckerContext": _CONTEXT_FIELDS, "_BfsState": _STATE_FIELDS, "_StepInfo": _STEP_FIELDS}
    for cls, names in fields.items():
        known = getattr(getattr(ec, cls, None), "__dataclass_fields__", {})
        missing += [f"{cls}.{n}" for n in names if n not in known]
    return missing


def internals_ok() -> bool:
    """True when :func:`require_internals` would pass."""
    try:
        require_internals()
    except CheckerInternalsError:
        return False
    return True


@dataclass
class Recording:
    """What one recorded checker run left: BFS parents, initial state, context and held-state tracker.

    ``paths`` holds explicit paths (task indices) to states a search reported off its BFS tree: the reduced
    search's shortened counterexamples (:mod:`tslab.core.search`).
    """

    parent: dict[int, int] = field(default_factory=dict)  # cursor_key -> parent key << _TASK_BITS | task
    initial: Any = None
    context: Any = None
    tracker: Any = None
    paths: dict[tuple[int, ...], list[int]] = field(default_factory=dict)


@contextlib.contextmanager
def recording(parents: bool = True) -> Iterator[Recording]:
    """Record the next ``check_all_interleavings`` run in this thread; always restores the checker."""
    require_internals()
    rec = Recording()
    owner = threading.get_ident()
    with _LOCK:
        orig_advance, orig_enabled = ec._advance_one_task, ec._compute_enabled_tasks
        orig_tracker = ec._HeldStateTracker
        setdefault = rec.parent.setdefault

        def advance(state: Any, task_idx: int, context: Any, tracker: Any, verbose: bool) -> Any:
            succ = orig_advance(state, task_idx, context, tracker, verbose)
            if threading.get_ident() == owner:
                setdefault(succ.cursor_key, (state.cursor_key << _TASK_BITS) | task_idx)
            return succ

        def enabled(state: Any, context: Any) -> Any:
            if threading.get_ident() == owner and rec.context is None:
                rec.initial, rec.context = state, context
                ec._compute_enabled_tasks = orig_enabled  # only the first call is needed
            return orig_enabled(state, context)

        def tracker(completion: Any) -> Any:
            made = orig_tracker(completion)
            if threading.get_ident() == owner and rec.tracker is None:
                rec.tracker = made
            return made

        ec._compute_enabled_tasks, ec._HeldStateTracker = enabled, tracker
        if parents:
            ec._advance_one_task = advance
        try:
            yield rec
        finally:
            ec._advance_one_task, ec._compute_enabled_tasks = orig_advance, orig_enabled
            ec._HeldStateTracker = orig_tracker


def path_to(rec: Recording, cursors: tuple[int, ...]) -> list[int]:
    """Task indices from the initial state to ``cursors``: the path recorded for it, else along the BFS tree."""
    if tuple(cursors) in rec.paths:
        return list(rec.paths[tuple(cursors)])
    key = cursor_key(rec, cursors)
    path = []
    while key:
        if key not in rec.parent:
            raise TslabError(f"trace: state {tuple(cursors)} was not reached by the recorded checker run; "
                             "record the same run that reported it")
        packed = rec.parent[key]
        key, task = packed >> _TASK_BITS, packed & ((1 << _TASK_BITS) - 1)
        path.append(task)
    return path[::-1]


def cursor_key(rec: Recording, cursors: tuple[int, ...]) -> int:
    """The checker's packed visited-set key of ``cursors``."""
    return sum(c * s for c, s in zip(cursors, rec.context.cursor_strides, strict=True))


def complete_cursors(rec: Recording) -> tuple[int, ...]:
    return tuple(rec.context.schedule_lens)


class Machine:
    """The checker's own step, enabledness, deadlock and race functions over one checker run's context."""

    def __init__(self, tasks: list[Any], rec: Recording, *, skipped_tile: bool, num_tiles: int,
                 opaque_assignment: dict | None, conditions: guards.Conditions | None = None) -> None:
        if rec.context is None or rec.tracker is None:
            raise TslabError("trace: the recorded checker run built no context; "
                             "it must run on at least one task")
        self.tasks, self.context, self.tracker, self.initial = tasks, rec.context, rec.tracker, rec.initial
        self.rec = rec
        ctx = self.context
        self.task_names: list[str] = list(ctx.task_names)
        self.names = {rid: getattr(r, "name", str(rid)) for rid, r in ctx.id_to_res.items()}
        # credits of pipelined resources (and pipeline groups) only: the rest stay 0 and would be noise
        self.credit_slots = [i for i, (rid, _) in enumerate(ctx.credit_key_order)
                             if getattr(ctx.id_to_res.get(rid), "pipeline_config", None) is not None]
        self.credit_names = [f"{self.names.get(rid, rid)}[{stage}]"
                             for rid, stage in (ctx.credit_key_order[i] for i in self.credit_slots)]
        self._expansion = (skipped_tile, num_tiles, opaque_assignment)
        self.conditions = guards.Conditions.of(tasks) if conditions is None else conditions
        self.views: Any = None  # public Op/Entry objects, built by tslab.core.replay on first use

    @functools.cached_property
    def entries(self) -> list[list[dict[str, Any]]]:
        """Per task and checker cursor: the user's schedule entry that step comes from."""
        ctx = self.context
        out = [_entry_map(t, *self._expansion, self.conditions) for t in self.tasks]
        for ti, entries in enumerate(out):
            if len(entries) != ctx.schedule_lens[ti]:
                raise CheckerInternalsError(
                    f"tslab.core.trace: task '{self.task_names[ti]}' expands to {len(entries)} steps but the "
                    f"checker has {ctx.schedule_lens[ti]}; update tslab/core/trace.py for nvidia-cutlass-dsl "
                    f"{ts_version()}")
        return out

    @functools.cached_property
    def ops(self) -> list[list[tuple[str, str, str | None]]]:
        """Per task and checker cursor: ``(stage, resource, label)``."""
        ctx = self.context
        return [[(info.stage.name, self.names.get(info.rid, info.res.name), entry["label"])
                 for info, entry in zip(ctx.schedule_steps[ti], self.entries[ti], strict=True)]
                for ti in range(ctx.n_tasks)]

    # -- the checker's functions -------------------------------------------------------------------
    def advance(self, state: Any, task_idx: int) -> Any:
        return ec._advance_one_task(state, task_idx, self.context, self.tracker, False)

    def enabled(self, state: Any) -> tuple[list[int], bool]:
        en = ec._compute_enabled_tasks(state, self.context)
        return [i for i in range(self.context.n_tasks) if en.contains(i)], en.all_done

    def enabled_mask(self, state: Any) -> tuple[int, bool]:
        """The checker's enabled tasks as a bit mask, and whether every task is done."""
        en = ec._compute_enabled_tasks(state, self.context)
        return en.mask, en.all_done

    def races(self, state: Any, enabled_mask: int | None = None) -> list[Any]:
        """The checker's races at ``state`` (``enabled_mask`` saves recomputing which tasks may move)."""
        ctx = self.context
        if not ctx.alias_map:
            return []
        en = ec._compute_enabled_tasks(state, ctx) if enabled_mask is None else ec._EnabledTasks(enabled_mask, False)
        accesses = ec._next_point_accesses(state, en, ctx)
        return ec._find_races_at_state(state.held, accesses, ctx.alias_map, ctx.prod_alias_map,
                                       ctx.cons_alias_map, ctx.overlap_descs, ctx.id_to_res, ctx.task_names,
                                       state.cursors, ctx.domain_rids)

    def blocked(self, state: Any) -> list[Any]:
        """``BlockedTaskInfo`` of every task whose next op lacks a credit."""
        return ec._blocked_tasks_for_deadlock(state, self.context)[1]

    def deadlock(self, state: Any) -> Any:
        """The checker's ``DeadlockInfo`` for ``state`` (meaningful when no task is enabled)."""
        info, details = ec._blocked_tasks_for_deadlock(state, self.context)
        return ec.DeadlockInfo(cursors=state.cursors, blocked_tasks=info, blocked_details=details)

    def pdl_order(self, state: Any, enabled: list[int]) -> Any:
        """The checker's ``PdlOrderInfo`` when an enabled op launches dependents before any PDL wait."""
        if state.has_executed_pdl_wait:
            return None
        for t in enabled:
            info = self.step_info(state, t)
            if info.is_pdl_launch:
                return ec.PdlOrderInfo(cursors=state.cursors, launch_task=self.task_names[t],
                                       launch_resource=info.res.name)
        return None

    def lingering_write(self, state: Any, task: str, resource: str) -> bool:
        """Whether ``task``'s held ``prod`` entry on the non-pipelined ``resource`` outlives the ProducerWork that
        made it: TS doubles such a step and its second half appends a second entry and pops only the first, so
        one entry stays after the work returned (the task's next step is not that work)."""
        ti = self.task_names.index(task) if task in self.task_names else -1
        rid = next((r for r, name in self.names.items() if name == resource), None)
        res = self.context.id_to_res.get(rid)
        if ti < 0 or res is None or res.pipeline_config is not None:
            return False
        if not any(access == "prod" and t == ti for access, t, _slot, _gen in state.held.get(rid, [])):
            return False
        if self.done(state, ti):
            return True
        info = self.step_info(state, ti)
        return not (info.rid == rid and info.is_producer_work)

    def resource_name(self, task_idx: int, cursor: int) -> str:
        """The name of the resource of ``task_idx``'s step at ``cursor`` as the checker holds it."""
        return self.context.schedule_steps[task_idx][cursor].res.name

    def step_info(self, state: Any, task_idx: int) -> Any:
        return self.context.schedule_steps[task_idx][state.cursors[task_idx]]

    def done(self, state: Any, task_idx: int) -> bool:
        return state.cursors[task_idx] >= self.context.schedule_lens[task_idx]

    # -- reading a state ---------------------------------------------------------------------------
    def credits(self, values: tuple[int, ...]) -> dict[str, int]:
        return {name: values[i] for name, i in zip(self.credit_names, self.credit_slots, strict=True)}

    def held(self, state: Any) -> dict[str, list[tuple[str, str, int, int]]]:
        names = self.task_names
        return {self.names.get(rid, str(rid)): [(a, names[t], slot, gen) for a, t, slot, gen in ents]
                for rid, ents in state.held.items() if ents}

    def op(self, task_idx: int, cursor: int) -> tuple[str, str, str | None]:
        """``(stage, resource, label)`` of ``task_idx``'s op at ``cursor``."""
        return self.ops[task_idx][cursor]


def _entry_map(task: Any, skipped_tile: bool, num_tiles: int, opaque_assignment: dict | None,
               conditions: guards.Conditions) -> list[dict]:
    """Where each of the checker's steps of ``task`` comes from in the user's head/loop/tail lists, and the guard
    that let a loop step run (``None``: it runs on every trip)."""
    expanded = ec._expand_task_for_check(task, skipped_tile, opaque_assignment)
    lists = {"head": task.head_schedule_list, "loop": task.loop_schedule_list, "tail": task.tail_schedule_list}
    one_tile = []
    for entry, (section, index, iteration) in zip(expanded, _origins(task, expanded), strict=True):
        parts = ec._explode_sync_work([[entry]])[0]
        listed = lists[section][index]
        label = listed[-1] or None
        guard = guards.text(listed[3], conditions) if section == "loop" else guards.ALWAYS
        for n, part in enumerate(parts):
            phase = ec._entry_consumer_work_phase(part)
            piece = phase.replace("cons_", "").replace("_", " ") if phase else \
                f"{n + 1} of {len(parts)}" if len(parts) > 1 else None
            one_tile.append({"task": task.name, "section": section, "index": index, "iteration": iteration,
                             "part": piece, "label": label, "guard": None if guard == guards.ALWAYS else guard})
    return [{**e, "tile": tile} for tile in range(num_tiles) for e in one_tile]


def _origins(task: Any, expanded: list[tuple]) -> list[tuple[str, int, int | None]]:
    """``(section, index, loop trip)`` in the task's head/loop/tail lists of each entry TS expanded."""
    head, loop, tail = task.head_schedule_list, task.loop_schedule_list, task.tail_schedule_list
    origin: list[tuple[str, int, int | None]] = []
    found = {"head": 0, "tail": 0}
    pos, iteration = -1, 0
    for entry in expanded:
        tag = entry[3]
        if tag in ("H", "SH", "T", "ST"):
            section = "head" if tag.endswith("H") else "tail"
            listed = head if section == "head" else tail
            i = next((i for i in range(found[section], len(listed)) if _same(listed[i], entry)), None)
            if i is None:
                raise _unmapped(task, entry)
            origin.append((section, i, None))
            found[section] = i + 1
            continue
        for _ in range(len(loop)):
            pos += 1
            if pos == len(loop):
                pos, iteration = 0, iteration + 1
            if _same(loop[pos], entry) and _tag_fits(loop[pos][3], tag):
                break
        else:
            raise _unmapped(task, entry)
        origin.append(("loop", pos, iteration))
    return origin


def steps_for_trips(task: Any, trips: int) -> list[dict[str, Any]]:
    """The steps ``task`` runs on one work tile when its loop makes ``trips`` trips, as TS expands them (guards
    included, nothing doubled or split): ``{resource, stage, section, index, iteration}`` each."""
    import copy

    from cutlass.experimental.task_scheduling.task_manager import expand_loop

    run = copy.copy(task)
    run.domain_start, run.step, run.domain, run.domain_getter = 0, 1, trips, None
    expanded = expand_loop(run)
    return [{"resource": entry[0].name, "stage": entry[1].name, "section": section, "index": index,
             "iteration": iteration}
            for entry, (section, index, iteration) in zip(expanded, _origins(run, expanded), strict=True)]


def _unmapped(task: Any, entry: tuple) -> CheckerInternalsError:
    return CheckerInternalsError(
        f"tslab.core.trace: task '{task.name}': the checker's step {entry[1].name}({entry[0].name}) tag "
        f"{entry[3]!r} matches no entry of the task's schedule lists; update tslab/core/trace.py for "
        f"nvidia-cutlass-dsl {ts_version()}")


def _same(listed: tuple, expanded: tuple) -> bool:
    return listed[0] is expanded[0] and listed[1] == expanded[1] and listed[2] == expanded[2]


def _tag_fits(guard: Any, tag: str) -> bool:
    """Whether a loop entry with ``guard`` is one ``expand_loop`` tags ``tag`` ("" always, "F" first trip, "L" last
    trip, "P" periodic, "I" a runtime condition)."""
    if tag == "P":
        return isinstance(guard, Every)
    if tag == "I":
        return isinstance(guard, OpaqueCondition)
    want = {"": "Always", "F": "FirstIter", "L": "LastIter"}.get(tag)
    return want is not None and getattr(guard, "name", "Always" if guard is None else None) == want


# -- footprints: what each checker step takes, gives and touches ------------------------------------------
@dataclass(frozen=True)
class Footprint:
    """What one of the checker's steps needs, gives and may change, read from its ``_StepInfo``.

    Credits are bit sets over the checker's credit slots (``context.credit_key_order``): ``takes_full`` is the
    producer-commit credit a ConsumerWait needs, ``takes_empty`` the empty-slot credit a ProducerAcquire needs,
    ``gives_full``/``gives_empty`` the credits a ProducerCommit/ConsumerRelease adds to (every member of a fork
    or merge group). ``held`` is a bit set over the resources whose held entries the step may change
    (:attr:`Footprints.held_bit`); ``point_access`` marks an aliased work step that the race check reads while
    it is a task's next step.
    """

    takes_full: int = 0
    takes_empty: int = 0
    gives_full: int = 0
    gives_empty: int = 0
    held: int = 0
    blocking: bool = False
    pdl_wait: bool = False
    pdl_launch: bool = False
    point_access: bool = False


@dataclass
class Footprints:
    """Per task and checker cursor, the :class:`Footprint` of the step; built by :func:`footprints`."""

    steps: list[list[Footprint]]
    credit_slots: int
    held_bit: dict[int, int]  # resource id -> its bit in Footprint.held


def footprints(rec: Recording) -> Footprints:
    """The footprint of every step of a recorded run's context, each kind of step checked once against TS's
    own ``_apply_credit_transition``, ``_compute_enabled_tasks``, ``_next_point_accesses`` and held-state
    tracker; a disagreement (a TS release that changed its rules) is a :class:`CheckerInternalsError`."""
    ctx = rec.context
    rids = sorted({rid for steps in ctx.schedule_steps for info in steps for rid in _held_rids(info)})
    held_bit = {rid: 1 << n for n, rid in enumerate(rids)}
    checked: set[tuple] = set()
    out = []
    for ti, steps in enumerate(ctx.schedule_steps):
        row = []
        for cursor, info in enumerate(steps):
            fp = _footprint(info, held_bit)
            signature = (*(getattr(info, f) for f in _STEP_FIELDS), info.producer_slot, info.consumer_slot)
            if signature not in checked:
                checked.add(signature)
                _self_check(rec, ti, cursor, info, fp, held_bit)
            row.append(fp)
        out.append(row)
    return Footprints(out, len(ctx.credit_key_order), held_bit)


def _bits(indices: Any) -> int:
    out = 0
    for i in indices:
        out |= 1 << i
    return out


def _held_rids(info: Any) -> set[int]:
    """The resources whose held entries ``_HeldStateTracker.apply`` may change for this step."""
    if not info.needs_held_update:
        return set()
    rids: set[int] = set()
    if info.is_consumer_release and info.is_merge_group:
        rids.update(mid for mid, _slot in info.group_member_release_slots)
    if info.is_consumer_wait and info.is_fused_merge_group:
        rids.update(mid for mid, _slot in info.group_member_wait_slots)
    if info.in_alias and (info.is_producer_acquire or info.is_producer_work or info.is_consumer_wait
                          or info.is_consumer_work or info.is_consumer_release):
        rids.add(info.rid)
    if (info.is_producer_commit or info.is_consumer_wait) and info.completion_wait_rids:
        rids.update(info.completion_wait_rids)
    return rids


def _footprint(info: Any, held_bit: dict[int, int]) -> Footprint:
    tracked = info.track and info.has_credit_transition
    own = 1 << info.credit_idx if info.credit_idx >= 0 else 0
    gives_full = gives_empty = 0
    if tracked and info.is_producer_commit:
        gives_full = _bits(i for i, _n in info.group_member_prod_counts) if info.is_fork_group else own
    if tracked and info.is_consumer_release:
        gives_empty = _bits(i for i, _n in info.group_member_cons_counts) if info.is_merge_group else own
    held = 0
    for rid in _held_rids(info):
        held |= held_bit[rid]
    return Footprint(takes_full=own if tracked and info.is_consumer_wait else 0,
                     takes_empty=own if tracked and info.is_producer_acquire else 0,
                     gives_full=gives_full, gives_empty=gives_empty, held=held,
                     blocking=bool(info.is_blocking and info.track), pdl_wait=bool(info.is_pdl_wait),
                     pdl_launch=bool(info.is_pdl_launch),
                     point_access=bool(info.in_alias and (info.is_point_write or info.is_point_read)))


def _self_check(rec: Recording, ti: int, cursor: int, info: Any, fp: Footprint, held_bit: dict[int, int]) -> None:
    """Hold the footprint of step ``(ti, cursor)`` to what TS's own functions do with it."""
    ctx = rec.context
    n = len(ctx.credit_key_order)
    where = f"task '{ctx.task_names[ti]}' step {cursor} ({info.stage.name} on {getattr(info.res, 'name', '?')})"

    def fail(what: str) -> CheckerInternalsError:
        return CheckerInternalsError(
            f"tslab.core.trace: {where}: {what} differs from the footprint tslab reads from _StepInfo; update "
            f"tslab/core/trace.py for nvidia-cutlass-dsl {ts_version()}")

    # credits: apply the step until every multi-producer/consumer count has wrapped once
    base = 1 << 20
    full, empty = (base,) * n, (base,) * n
    totals: dict[str, dict[int, int]] = {"commits": {}, "waits": {}, "releases": {}, "acquires": {}}
    counts = [info.producer_count, info.consumer_count, *(c for _i, c in info.group_member_prod_counts),
              *(c for _i, c in info.group_member_cons_counts)]
    times = min(math.lcm(*(max(1, c) for c in counts)), 4096)
    for _ in range(times):
        full, empty, totals = ec._apply_credit_transition(info, full, empty, totals)
    seen = (_bits(i for i, v in enumerate(full) if v < base), _bits(i for i, v in enumerate(empty) if v < base),
            _bits(i for i, v in enumerate(full) if v > base), _bits(i for i, v in enumerate(empty) if v > base))
    if seen != (fp.takes_full, fp.takes_empty, fp.gives_full, fp.gives_empty):
        raise fail("the credit transition")

    # enabledness: a blocking step runs exactly when the credit it takes is there
    def runs(full: tuple[int, ...], empty: tuple[int, ...]) -> bool:
        cursors = tuple(cursor if t == ti else length for t, length in enumerate(ctx.schedule_lens))
        state = ec._BfsState(cursors=cursors, cursor_key=0, prod_credits=full, cons_credits=empty, held={},
                             total_counts=totals, path=None, has_executed_pdl_wait=False)
        return ec._compute_enabled_tasks(state, ctx).contains(ti)

    zero = (0,) * n
    need = fp.takes_full | fp.takes_empty
    with_need = tuple(1 if need >> i & 1 else 0 for i in range(n))
    expected = (not fp.blocking, not fp.blocking or bool(need))
    got = (runs(zero, zero), runs(with_need if fp.takes_full else zero, with_need if fp.takes_empty else zero))
    if got != expected:
        raise fail("when the step may run")

    # the race check's view of the step while it is next
    state = ec._BfsState(cursors=tuple(cursor if t == ti else length for t, length in enumerate(ctx.schedule_lens)),
                         cursor_key=0, prod_credits=zero, cons_credits=zero, held={}, total_counts=totals,
                         path=None, has_executed_pdl_wait=False)
    if bool(ec._next_point_accesses(state, ec._EnabledTasks(1 << ti, False), ctx)) != fp.point_access:
        raise fail("the point access the race check reads")

    # held entries: every resource the tracker changes must be in the footprint
    if rec.tracker is not None:
        slots = {-1, info.producer_slot, info.consumer_slot, *(s for _m, s in info.group_member_release_slots),
                 *(s for _m, s in info.group_member_wait_slots)}
        others = sorted({ti, (ti + 1) % ctx.n_tasks})
        probe = {rid: [(access, t, slot, gen) for access in ("prod_held", "prod", "cons_held", "cons")
                       for t in others for slot in sorted(slots) for gen in sorted({-1, info.commit_wait_gen})]
                 for rid in {*held_bit, *ctx.id_to_res, info.rid}}
        after = rec.tracker.apply({rid: list(v) for rid, v in probe.items()}, info, ti)
        changed = {rid for rid in {*probe, *after} if probe.get(rid, []) != after.get(rid, [])}
        held = {rid for rid, bit in held_bit.items() if fp.held & bit}
        if not changed <= held:
            raise fail("the held entries it changes")


def held_key(held: dict[int, list[Any]]) -> tuple:
    """The held map as TS keys it when it does not key on cursors alone (``cursor_only_visited=False``)."""
    return ec._freeze_held(held)


def checker_context(tasks: list[Any], **run: Any) -> Recording:
    """The initial state, context and held-state tracker TS's checker builds for one planned run of ``tasks``
    (``run``: ``num_tiles``, ``skipped_tile``, ``opaque_assignment``, ``assume_pdl_wait_completed``), without
    its search: TS's own set-up runs and explores the initial state only."""
    with recording(parents=False) as rec:
        ec.check_all_interleavings(tasks, verbose=False, early_exit=True, max_states=1, **run)
    return rec
