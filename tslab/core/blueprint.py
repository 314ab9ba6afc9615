"""Fresh TS objects for one check, and the lowering of a design's overrides onto them.

A kernel module's ``build(**params)`` returns a new :class:`Blueprint` on every call (TS allocators are
one-shot and resources carry layout offsets, so nothing is shared between checks). :func:`lower` applies a
design's pipeline, schedule and alias-group overrides with TS's own constructors, so TS validates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cutlass.experimental.task_scheduling.memory import SmemAllocator, TmemAllocator
from cutlass.experimental.task_scheduling.resources import MemoryResource
from cutlass.experimental.task_scheduling.schedule_builder import ScheduleResult
from cutlass.experimental.task_scheduling.task import Task

from ..errors import DesignError, did_you_mean, one_line
from . import pipeline_groups
from .guards import Conditions
from .steps import TILE_LOOP_SLOTS, slot_key, steps_to_legacy

#: TS's default capacities (TaskManager._DEFAULT_*): SMEM bytes per block on sm_90/sm_100, TMEM columns.
DEFAULT_SMEM_CAPACITY = 232448
DEFAULT_TMEM_CAPACITY = 512


@dataclass
class Blueprint:
    """Everything TS needs to verify a kernel: tasks, the resource graph and what the allocators hold.

    ``alias_groups`` name allocations (``[[["a_buf", "b_buf"], ["epi_buf"]]]``: one group, two phases).
    """

    tasks: list[Task]
    graph: dict[Any, list[Any]]
    smem_resources: list[Any] = field(default_factory=list)
    tmem_resources: list[Any] = field(default_factory=list)
    alias_groups: list[list[list[str]]] = field(default_factory=list)
    tmem_alias_groups: list[list[list[str]]] = field(default_factory=list)
    pipeline_groups: list[Any] = field(default_factory=list)
    smem_capacity_bytes: int | None = None
    tmem_capacity_columns: int | None = None
    dma_consumer_release_labels: dict[Any, Any] | None = None
    assume_pdl_wait_completed: bool = False
    _conditions: Conditions | None = field(default=None, init=False, repr=False, compare=False)

    def conditions(self) -> Conditions:
        """The runtime conditions (``when_true``/``when_false``) of the tasks by name, read once: from the tasks as
        built, before any schedule edit, so that every edit and every view names a condition alike."""
        if self._conditions is None:
            self._conditions = Conditions.of(self.tasks)
        return self._conditions

    def resources(self) -> dict[str, Any]:
        """Every resource by name, in task order, then graph order."""
        found: dict[str, Any] = {}
        for task in self.tasks:
            for res in (*task.src_resources, *task.dst_resources):
                found.setdefault(res.name, res)
        for down, ups in self.graph.items():
            for res in (down, *ups):
                found.setdefault(res.name, res)
        for res in (*self.smem_resources, *self.tmem_resources):
            if isinstance(res, MemoryResource):
                found.setdefault(res.name, res)
        return found

    def groups(self) -> dict[str, Any]:
        """Every PipelineGroup by name: those registered with the blueprint, then those its members name."""
        found = {g.name: g for g in self.pipeline_groups}
        for res in self.resources().values():
            group = getattr(res, "pipeline_group", None)
            if group is not None:
                found.setdefault(group.name, group)
        return found

    def task(self, name: str) -> Task:
        for task in self.tasks:
            if task.name == name:
                return task
        raise DesignError("input", f"task '{name}'", "no task of that name in this design",
                          did_you_mean(name, [t.name for t in self.tasks]))

    def smem_allocations(self) -> list[Any]:
        return [a for r in self.smem_resources for a in r.get_smem_requirements()]

    def tmem_allocations(self) -> list[Any]:
        return [a for r in self.tmem_resources for a in r.get_tmem_requirements()]


@dataclass
class Lowered:
    """A blueprint with overrides applied and the layout computed by fresh TS allocators."""

    blueprint: Blueprint
    smem_allocator: SmemAllocator | None
    tmem_allocator: TmemAllocator | None
    smem_alias_names: list[list[list[str]]]
    tmem_alias_names: list[list[list[str]]]

    @property
    def tasks(self) -> list[Task]:
        return self.blueprint.tasks


def apply_pipeline(bp: Blueprint, resource: str, fields: dict[str, Any]) -> None:
    """Replace the PipelineConfig of a resource or of a PipelineGroup with TS's ``dataclasses.replace``.

    A group edit replaces the group's config and every member's with the same fields (see
    :func:`tslab.core.pipeline_groups.apply_group`); a member of a group cannot be edited alone, since TS
    requires members and group to agree.
    """
    group = bp.groups().get(resource)
    if group is not None:
        pipeline_groups.apply_group(group, fields)
        return
    res = bp.resources().get(resource)
    if res is None:
        raise DesignError("input", f"resource '{resource}'",
                          "no resource or pipeline group of that name in this design",
                          did_you_mean(resource, [*bp.resources(), *bp.groups()]))
    cfg = getattr(res, "pipeline_config", None)
    if cfg is None:
        raise DesignError("input", f"resource '{resource}'", "has no pipeline to configure",
                          "edit a pipelined resource: " + ", ".join(pipelined_names(bp)))
    owner = getattr(res, "pipeline_group", None)
    if owner is not None:
        raise pipeline_groups.member_error(resource, owner, fields)
    res.pipeline_config = pipeline_groups.replaced(cfg, fields, where=f"resource '{resource}'")


def pipelined_names(bp: Blueprint) -> list[str]:
    return [n for n, r in bp.resources().items() if getattr(r, "pipeline_config", None) is not None]


def apply_schedule(bp: Blueprint, task_name: str, steps: tuple) -> None:
    """Replace one task by a new TS Task built from plain steps (same warps, resources and loop bounds).

    The task keeps its slot routing (which step's task-local variables feed which later step, keyed by each
    step's resource, stage, section and ordinal): TS checks it against the new order, so an edit that moves a
    reader before its writer, or drops a writer, is TS's own slot-routing error, not a silently stale value.
    """
    old = bp.task(task_name)
    legacy = steps_to_legacy(steps, _schedule_targets(bp), bp.conditions(), task=task_name)

    def task(**slots: Any) -> Task:
        result = ScheduleResult(
            schedule_list=legacy, slot_routing=old.slot_routing, constexpr_work_kwargs=old.constexpr_work_kwargs,
            loop_start=old.domain_start, loop_end=old.domain, loop_step=old.step, unroll=old.unroll,
            skip_if=old.skip_if, has_work_tile_loop=old.is_persistent, **slots,
        )
        return Task(name=old.name, src_resources=old.src_resources, dst_resources=old.dst_resources,
                    warp_idx=old.warp_idx, num_warps=old.num_warps, num_registers=old.num_registers,
                    run_only_on_cta_id=old.run_only_on_cta_id, schedule=result)

    try:
        new = task()
        new = task(**_kept_slots(old, new))
    except (ValueError, TypeError, KeyError, AssertionError) as exc:
        raise DesignError("schedule", f"task '{task_name}'", one_line(exc),
                          "check each step's resource, stage and section") from None
    position = next(i for i, t in enumerate(bp.tasks) if t is old)  # TS Tasks compare equal by value
    bp.tasks[position] = new


def _kept_slots(old: Task, new: Task) -> dict[str, set]:
    """Which of ``new``'s head and tail steps run once before or after the work-tile loop, or are skipped with a
    skipped tile, as in ``old``: a step keeps its place where it is still in the same section (the same resource,
    stage and ordinal). Plain steps cannot say it, and without it an edit would turn a step that ran once (a PDL wait
    before the loop) into one that runs every tile."""
    present = {"Head": {slot_key(e) for e in new.head_schedule_list},
               "Tail": {slot_key(e) for e in new.tail_schedule_list}}
    return {name: set(getattr(old, name, ())) & present[section] for name, section in TILE_LOOP_SLOTS}


def _schedule_targets(bp: Blueprint) -> dict[str, Any]:
    """What a schedule entry names: a resource, a PipelineGroup, or a member spelled ``group.member`` as TS
    requires of grouped members."""
    targets: dict[str, Any] = {}
    for name, res in bp.resources().items():
        group = getattr(res, "pipeline_group", None)
        targets[name] = res if group is None else getattr(group, name)
    return {**targets, **bp.groups()}


def _resolve_groups(groups: list[list[list[str]]], allocations: list[Any], space: str) -> list[list[list[Any]]]:
    by_name = {a.name: a for a in allocations}
    resolved = []
    for g, group in enumerate(groups):
        where = f"{space} alias group {g}"
        if not isinstance(group, (list, tuple)) or len(group) < 2:
            raise DesignError("input", where, f"{group!r} has fewer than 2 phases",
                              "an alias group is a list of at least two phases, each a list of allocation names")
        phases = []
        for p, phase in enumerate(group):
            if not isinstance(phase, (list, tuple)) or not phase:
                raise DesignError("input", f"{where} phase {p}", f"{phase!r} is not a non-empty list of names",
                                  "write a phase as a list of allocation names, e.g. ['a_buf']")
            missing = [n for n in phase if n not in by_name]
            if missing:
                raise DesignError("input", f"{where} phase {p}", f"allocation {missing[0]!r} is not in this design",
                                  did_you_mean(str(missing[0]), list(by_name)))
            phases.append([by_name[n] for n in phase])
        resolved.append(phases)
    seen: set[str] = set()
    for g, group in enumerate(groups):
        for phase in group:
            for name in phase:
                if name in seen:
                    raise DesignError("input", f"{space} alias group {g}", f"allocation {name!r} appears twice",
                                      "put each allocation in at most one phase of one alias group")
                seen.add(name)
    return resolved


def _check_alignments(allocations: list[Any]) -> None:
    for a in allocations:
        size = getattr(a, "size_bytes", getattr(a, "num_columns", 0))
        if not isinstance(size, int) or size < 0:
            raise DesignError("input", f"allocation '{a.name}'", f"size={size!r} is negative",
                              "give every allocation a size of 0 or more")
        align = getattr(a, "alignment", 1)
        if not isinstance(align, int) or align <= 0 or align & (align - 1):
            raise DesignError("input", f"allocation '{a.name}'", f"alignment={align!r} is not a power of two",
                              "use an alignment of 16, 128, 1024, ... bytes")


def allocate(bp: Blueprint, smem_groups: list, tmem_groups: list) -> tuple[SmemAllocator | None, TmemAllocator | None]:
    """Fresh allocators with every resource registered, alias groups added and the layout computed."""
    smem = tmem = None
    if bp.smem_resources or bp.pipeline_groups:
        smem = SmemAllocator()
        _check_alignments(bp.smem_allocations())
        for res in bp.smem_resources:
            smem.add_resource(res)
        for group in bp.pipeline_groups:
            smem.add_pipeline_group(group)
        for phases in _resolve_groups(smem_groups, bp.smem_allocations(), "smem"):
            smem.add_alias_group(phases)
        smem.compute_layout()
    if bp.tmem_resources:
        tmem = TmemAllocator()
        _check_alignments(bp.tmem_allocations())
        for res in bp.tmem_resources:
            tmem.add_resource(res)
        for phases in _resolve_groups(tmem_groups, bp.tmem_allocations(), "tmem"):
            tmem.add_alias_group(phases)
        tmem.compute_layout()
    return smem, tmem


def lower(bp: Blueprint, *, pipelines: dict[str, dict[str, Any]], schedules: dict[str, tuple],
          alias_groups: list | None, tmem_alias_groups: list | None = None) -> Lowered:
    """Apply overrides to a fresh blueprint and lay out its memory."""
    bp.conditions()  # named from the kernel's own schedules, before the edits
    for resource, fields in pipelines.items():
        apply_pipeline(bp, resource, fields)
    for task, steps in schedules.items():
        apply_schedule(bp, task, steps)
    _check_stages(bp)
    smem_names = bp.alias_groups if alias_groups is None else alias_groups
    tmem_names = bp.tmem_alias_groups if tmem_alias_groups is None else tmem_alias_groups
    smem, tmem = allocate(bp, smem_names, tmem_names)
    return Lowered(bp, smem, tmem, [list(map(list, g)) for g in smem_names], [list(map(list, g)) for g in tmem_names])


def _check_stages(bp: Blueprint) -> None:
    """TS accepts ``num_stages <= 0`` and then divides by it in the checker; refuse it here."""
    for name, res in {**bp.resources(), **bp.groups()}.items():
        cfg = getattr(res, "pipeline_config", None)
        if cfg is not None and (not isinstance(cfg.num_stages, int) or cfg.num_stages <= 0):
            owner = "PipelineGroup" if name in bp.groups() else "resource"
            raise DesignError("invalid-config", f"{owner} '{name}' field 'num_stages'",
                              f"num_stages={cfg.num_stages!r} must be a positive int",
                              "use at least 1 stage (2 or more to overlap producer and consumer)")
