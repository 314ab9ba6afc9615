"""Wrapping a user's own TS tasks and resources as a blueprint source (for ``Design.from_tasks``).

Every lowering gets a deep copy of the user's objects, so edits and layouts never touch the originals.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from cutlass.experimental.task_scheduling.memory import SmemAllocation, TmemAllocation, _LayoutAllocator
from cutlass.experimental.task_scheduling.resources import (
    _CONSUMER_WORK_FNS_ATTR,
    _PRODUCER_WORK_FNS_ATTR,
    TaskLocalVariable,
)
from cutlass.experimental.task_scheduling.task import _collect_named_work_fns

from ..errors import DesignError
from .blueprint import Blueprint


class AllocationHolder:
    """Stands in for a resource in an allocator: contributes fixed allocations and no barriers."""

    def __init__(self, name: str, smem: list[Any] = (), tmem: list[Any] = ()) -> None:
        self.name = name
        self._smem, self._tmem = list(smem), list(tmem)
        self.pipeline_config = None

    def get_smem_requirements(self) -> list[Any]:
        return self._smem

    def get_tmem_requirements(self) -> list[Any]:
        return self._tmem


class BarrierOnly:
    """A pipelined resource as seen by ``SmemAllocator.add_resource`` for its barriers alone.

    Reads the resource's pipeline when the allocator asks, so an edited ``num_stages`` counts.
    """

    def __init__(self, resource: Any) -> None:
        self.name = resource.name
        self._resource = resource

    @property
    def pipeline_config(self) -> Any:
        return self._resource.pipeline_config

    @pipeline_config.setter
    def pipeline_config(self, config: Any) -> None:  # TS's assign_barrier_ptrs sets barrier_ptr through it
        self._resource.pipeline_config = config

    @property
    def pipeline_group(self) -> Any:
        return getattr(self._resource, "pipeline_group", None)

    def get_smem_requirements(self) -> list[Any]:
        return []


def _owners(resources: list[Any], space: str) -> dict[int, Any]:
    """``id(allocation) -> resource`` for the allocations each resource declares."""
    owners: dict[int, Any] = {}
    for res in resources:
        try:
            declared = getattr(res, f"get_{space}_requirements")()
        except Exception:  # a resource that cannot say (e.g. it needs a trace) keeps its allocations as laid out
            continue
        for alloc in declared:
            owners.setdefault(id(alloc), res)
    return owners


def _from_allocator(allocator: Any, space: str, resources: list[Any]) -> list[Any]:
    """An allocator's contents as blueprint entries, in its order.

    An allocation a resource declares is registered through that resource again (so pipeline edits resize it
    and its barriers), others as fixed allocations.
    """
    listed = list(allocator._allocations)
    for group in allocator._alias_groups:
        listed += [a for phase in group for a in phase if all(a is not b for b in listed)]
    with_barriers = {id(r) for r in getattr(allocator, "_barrier_resources", [])}
    owners = {k: r for k, r in _owners(resources, space).items()
              if getattr(r, "pipeline_config", None) is None or id(r) in with_barriers}
    out: list[Any] = []
    added: set[int] = set()
    loose: list[Any] = []
    for alloc in listed:
        owner = owners.get(id(alloc))
        if owner is None:
            loose.append(alloc)
            continue
        if loose:
            out.append(AllocationHolder(f"{space}-allocations-{len(out)}", **{space: loose}))
            loose = []
        if id(owner) not in added:
            out.append(owner)
            added.add(id(owner))
    if loose:
        out.append(AllocationHolder(f"{space}-allocations-{len(out)}", **{space: loose}))
    out += [BarrierOnly(r) for r in getattr(allocator, "_barrier_resources", []) if id(r) not in added]
    return out


def split_items(items: Any, space: str, resources: list[Any]) -> tuple[list[Any], list[list[list[str]]], list[Any]]:
    """Allocator contents as blueprint resources, alias groups by name, and pipeline groups."""
    if items is None:
        return [], [], []
    if isinstance(items, _LayoutAllocator):
        groups = [[[a.name for a in phase] for phase in g] for g in items._alias_groups]
        return _from_allocator(items, space, resources), groups, list(getattr(items, "_barrier_groups", []))
    out = []
    loose = []
    for item in items:
        if isinstance(item, (SmemAllocation, TmemAllocation)):
            loose.append(item)
        elif hasattr(item, f"get_{space}_requirements"):
            out.append(item)
        else:
            raise DesignError("input", f"{space}_allocations", f"{item!r} is neither a resource nor an allocation",
                              f"pass TS resources, {space.capitalize()}Allocation objects or a {space} allocator")
    if loose:
        out.append(AllocationHolder(f"{space}-allocations", **{space: loose}))
    return out, [], []


def blueprint_source(tasks: list[Any], graph: dict[Any, list[Any]], *, smem_allocations: Any,
                     tmem_allocations: Any, alias_groups: Any, smem_capacity_bytes: int | None,
                     tmem_capacity_columns: int | None, dma_consumer_release_labels: dict | None = None,
                     assume_pdl_wait_completed: bool = False) -> Callable[[], Blueprint]:
    """A function returning a fresh deep copy of the user's objects as a Blueprint."""
    if not isinstance(tasks, (list, tuple)) or not tasks:
        raise DesignError("input", "from_tasks", "tasks is empty", "pass the list of TS Task objects")
    if not isinstance(graph, dict):
        raise DesignError("input", "from_tasks", "resource_dependency_graph is not a dict",
                          "pass {downstream_resource: [upstream_resources]}")
    resources = list({id(r): r for t in tasks for r in (*t.src_resources, *t.dst_resources)}.values())
    resources += [r for down, ups in graph.items() for r in (down, *ups) if all(r is not x for x in resources)]
    smem, smem_groups, pipeline_groups = split_items(smem_allocations, "smem", resources)
    tmem, tmem_groups, _ = split_items(tmem_allocations, "tmem", resources)
    if alias_groups is not None:
        smem_groups = [[[a if isinstance(a, str) else a.name for a in phase] for phase in g] for g in alias_groups]
    bundle = (list(tasks), dict(graph), smem, tmem, pipeline_groups, dma_consumer_release_labels)
    originals = {id(r) for task in tasks for r in (*task.src_resources, *task.dst_resources)}
    shared = _uncopyable_defaults(resources)

    def source() -> Blueprint:
        memo: dict[int, Any] = dict(shared)
        t, g, s, m, pg, dma = copy.deepcopy(bundle, memo)
        ids = {old: id(memo[old]) for old in originals if old in memo}
        for task in t:
            _remap_resource_ids(task, ids)
        return Blueprint(tasks=t, graph=g, smem_resources=s, tmem_resources=m, alias_groups=smem_groups,
                         tmem_alias_groups=tmem_groups, smem_capacity_bytes=smem_capacity_bytes,
                         tmem_capacity_columns=tmem_capacity_columns, pipeline_groups=pg,
                         dma_consumer_release_labels=dma, assume_pdl_wait_completed=assume_pdl_wait_completed)

    source()  # fail now, not at the first check, if the objects cannot be copied
    return source


def _uncopyable_defaults(resources: list[Any]) -> dict[int, Any]:
    """Default values of the resources' task-local variables that cannot be deep-copied (a ``WorkQueue``'s
    ``WorkTileInfo`` holds DSL values): every copy shares them, as a memo entry of ``copy.deepcopy``."""
    out: dict[int, Any] = {}
    for res in resources:
        for value in vars(res).values():
            default = getattr(value, "default", None) if isinstance(value, TaskLocalVariable) else None
            if default is None or id(default) in out:
                continue
            try:
                copy.deepcopy(default)
            except Exception:
                out[id(default)] = default
    return out


def _remap(value: Any, ids: dict[int, int]) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return ids.get(value, value)
    if isinstance(value, tuple):
        return tuple(_remap(v, ids) for v in value)
    if isinstance(value, list):
        return [_remap(v, ids) for v in value]
    if isinstance(value, (set, frozenset)):
        return type(value)(_remap(v, ids) for v in value)
    if isinstance(value, dict):
        return {_remap(k, ids): _remap(v, ids) for k, v in value.items()}
    return value


def _remap_resource_ids(task: Any, ids: dict[int, int]) -> None:
    """TS keys slot routing and slot sets by ``id(resource)``: point them at the copied resources."""
    for name, value in list(vars(task).items()):
        if isinstance(value, (dict, set, frozenset, tuple, list)):
            setattr(task, name, _remap(value, ids))


def work_labels(resource: Any) -> tuple[list[str], list[str]]:
    """Labels of a resource's ``@producer_work`` and ``@consumer_work`` methods."""
    cls = type(resource)
    try:
        producer = list(_collect_named_work_fns(cls, _PRODUCER_WORK_FNS_ATTR))
        consumer = list(_collect_named_work_fns(cls, _CONSUMER_WORK_FNS_ATTR))
    except Exception:  # a class TS cannot introspect offers no labels
        return [], []
    return producer, consumer
