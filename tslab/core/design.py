"""``Design``: an immutable, serialisable recipe of a kernel design.

A design names a kernel module of :mod:`tslab.kernels` and its parameters, plus overrides: PipelineConfig
fields per resource, schedule steps per task and alias groups. Every edit returns a new ``Design``; nothing
is built until a design is lowered (:meth:`Design.lower`) to fresh TS objects.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import DesignError, TslabError, did_you_mean, one_line
from . import mime, pipeline_fields, pipeline_groups
from .blueprint import Blueprint, Lowered, lower
from .registry import kernel_module
from .schema import validate_design_document
from .steps import Step, normalize_steps, steps_from_task, tile_loop_from_task, work_kwargs_from_task
from .ts_lock import TS_LOCK

FORMAT_VERSION = 1
CUSTOM = "custom"
#: Reads a captured design's JSON (registered by :mod:`tslab.capture`, which core does not import).
_SOURCE_LOADER: Callable[[dict[str, Any]], Design] | None = None


def register_source_loader(loader: Callable[[dict[str, Any]], Design]) -> None:
    """Let :meth:`Design.from_dict` re-open captured designs (called once by ``tslab.capture``)."""
    global _SOURCE_LOADER
    _SOURCE_LOADER = loader


def _plain(value: Any) -> Any:
    """JSON-normal form of a value (tuples -> lists), so equal designs have equal JSON."""
    return json.loads(json.dumps(value))


class Design:
    """A kernel design: kernel module + parameters + overrides. Immutable; edits return a new Design."""

    __slots__ = ("_alias_groups", "_cache", "_kernel", "_params", "_pipelines", "_schedules", "_source")

    def __init__(self, kernel: str, params: dict[str, Any] | None = None, *,
                 pipelines: dict[str, dict[str, Any]] | None = None,
                 schedules: dict[str, Iterable[Step]] | None = None,
                 alias_groups: list[list[list[str]]] | None = None,
                 _source: Callable[[], Blueprint] | None = None) -> None:
        if not isinstance(kernel, str):
            raise DesignError("input", "design", f"kernel={kernel!r} is not a kernel name",
                              "use a name from tslab.kernels.catalog()")
        self._kernel = kernel
        self._source = _source
        if _source is None:
            module = kernel_module(kernel)
            params = _check_params(kernel, module.PARAMS, params or {})
        try:
            self._params = _plain(params or {})
            self._pipelines = _plain(pipelines or {})
            self._alias_groups = None if alias_groups is None else _plain(alias_groups)
        except (TypeError, ValueError) as exc:
            raise DesignError("input", f"design '{kernel}'", f"a value is not JSON-serialisable ({exc})",
                              "use plain numbers, strings, booleans and lists") from None
        self._schedules = {t: normalize_steps(t, s) for t, s in (schedules or {}).items()}
        self._cache: dict[str, Any] = {}
        if _source is None:
            self._info()  # build once now: a design that cannot be built is refused here, not at check time

    # -- identity ------------------------------------------------------------------------------------
    @property
    def kernel(self) -> str:
        return self._kernel

    @property
    def params(self) -> dict[str, Any]:
        return copy.deepcopy(self._params)

    @property
    def overrides(self) -> dict[str, Any]:
        """The edits on top of the kernel's own design, as plain data."""
        return {"pipelines": copy.deepcopy(self._pipelines),
                "schedules": {t: [list(s) for s in steps] for t, steps in self._schedules.items()},
                "alias_groups": copy.deepcopy(self._alias_groups)}

    def to_dict(self) -> dict[str, Any]:
        """Plain data :meth:`from_dict` reads back; a captured design records its source and knobs."""
        out = {"tslab_design": FORMAT_VERSION, "kernel": self._kernel, "params": self.params, **self.overrides}
        if self.is_captured:
            out["source"] = self._source.to_dict()
            out["knobs"] = copy.deepcopy(self._source.knob_edits)
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def save(self, path: str | os.PathLike[str], verdict: Any = None) -> Path:
        """Write a design file (``*.tslab.json``, opened by JupyterLab's tslab viewer), with ``verdict`` if given.

        :meth:`from_json` reads it back (a saved verdict is for readers of the file, not part of the design).
        """
        data = self.to_dict()
        if verdict is not None:
            data["verdict"] = verdict.to_mime()
        out = Path(path)
        out.write_text(json.dumps(data, indent=2) + "\n")
        return out

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {mime.DESIGN: self.to_dict(), "text/plain": repr(self)}

    @classmethod
    def from_json(cls, text: str) -> Design:
        """Read a design written by :meth:`to_json` or :meth:`save`."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise DesignError("input", "design JSON", f"not valid JSON ({exc})",
                              "pass the text written by Design.to_json()") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> Design:
        """Read a design from plain data; its shape is checked against ``tslab/schemas/design.v1.json``.

        A captured design (one with ``source``) is captured again from its kernel file (see ``tslab.capture``).
        """
        validate_design_document(data)
        if "source" in data:
            if _SOURCE_LOADER is None:
                raise DesignError("input", "design JSON", "records a captured kernel, which needs tslab.capture",
                                  "import tslab (it registers the loader) and read the design again")
            return _SOURCE_LOADER(data)
        if data["kernel"] == CUSTOM:
            raise DesignError("input", "design JSON", "a custom design cannot be rebuilt from JSON alone",
                              "rebuild it with Design.from_tasks(...) and re-apply the overrides")
        return cls(data["kernel"], data.get("params"), pipelines=data.get("pipelines"),
                   schedules=data.get("schedules"), alias_groups=data.get("alias_groups"))

    @classmethod
    def captured(cls, source: Any) -> Design:
        """A design traced from a kernel by ``source`` (see :mod:`tslab.capture.source`): edits re-trace it."""
        design = cls.__new__(cls)
        design._kernel, design._params, design._source, design._cache = source.label, {}, source, {}
        design._pipelines, design._schedules, design._alias_groups = {}, {}, None
        return design

    @property
    def is_captured(self) -> bool:
        """Whether this design re-traces its kernel (a captured kernel) rather than building catalog objects."""
        return self._source is not None and hasattr(self._source, "knob_edits")

    @property
    def source(self) -> Any:
        """Where a captured design comes from (file, host function, arguments, arch, knobs); None otherwise."""
        return self._source if self.is_captured else None

    def _key(self) -> tuple:
        return (self.to_json(indent=None), id(self._source) if self._source else None)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Design) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        edits = []
        for res, fields in self._pipelines.items():
            edits.append(".with_pipeline(" + ", ".join([repr(res)] + [f"{k}={v!r}" for k, v in fields.items()]) + ")")
        edits += [f".with_schedule({t!r}, <{len(s)} steps>)" for t, s in self._schedules.items()]
        if self._alias_groups is not None:
            edits.append(f".with_alias_groups({self._alias_groups!r})")
        if self.is_captured:
            knobs = ", ".join(f"{k}={v!r}" for k, v in self._source.knob_edits.items())
            head = f"tslab.capture(<{self._kernel}>)" + (f".with_knobs({knobs})" if knobs else "")
        elif self._source:
            head = f"Design.from_tasks(<{self._kernel}>)"
        else:
            head = f"tslab.kernels.{self._kernel}.design({args})"
        return head + "".join(edits)

    # -- edits ---------------------------------------------------------------------------------------
    def _replace(self, **changes: Any) -> Design:
        state = {"pipelines": self._pipelines, "schedules": self._schedules, "alias_groups": self._alias_groups}
        state.update(changes)
        new = Design.__new__(Design)
        new._kernel, new._params, new._source, new._cache = self._kernel, self._params, self._source, {}
        new._pipelines = _plain(state["pipelines"])
        new._schedules = dict(state["schedules"])
        new._alias_groups = None if state["alias_groups"] is None else _plain(state["alias_groups"])
        return new

    def with_pipeline(self, resource: str, **fields: Any) -> Design:
        """A new design with PipelineConfig fields of ``resource`` replaced (validated by TS).

        ``resource`` may name a PipelineGroup: the fields then go to the group and every member at once
        (a member of a group cannot be edited alone).
        """
        if not fields:
            return self
        self._require_pipeline_owner(resource)
        where = f"{'PipelineGroup' if resource in self._info()['groups'] else 'resource'} '{resource}'"
        plain = {f: pipeline_fields.to_plain(f, pipeline_fields.from_plain(f, v, where=f"{where} field '{f}'"))
                 for f, v in fields.items()}
        merged = copy.deepcopy(self._pipelines)
        merged.setdefault(resource, {}).update(plain)
        return self._replace(pipelines=merged)._validated(where)

    def with_schedule(self, task: str, steps: Iterable[Step]) -> Design:
        """A new design whose ``task`` runs ``steps`` (plain form, see :mod:`tslab.core.steps`)."""
        if task not in self.tasks():
            raise DesignError("input", f"task '{task}'", "no task of that name in this design",
                              did_you_mean(task, self.tasks()))
        schedules = dict(self._schedules)
        schedules[task] = normalize_steps(task, steps)
        return self._replace(schedules=schedules)._validated(f"task '{task}'")

    def with_alias_groups(self, groups: list[list[list[str]]] | None) -> Design:
        """A new design with these SMEM alias groups (``None`` restores the kernel's own, ``[]`` removes all)."""
        return self._replace(alias_groups=groups)._validated("alias groups")

    def with_knobs(self, **knobs: Any) -> Design:
        """The same edits on the captured kernel traced again with these knob values (module constants of its
        file, constexpr arguments of its host function): everything the kernel derives from them is recomputed
        by its own code. The kernel file is never written."""
        if not self.is_captured:
            raise DesignError("input", f"design '{self._kernel}'", "has no knobs: it is not a captured kernel",
                              "catalog designs take parameters: use with_params(...)")
        if not knobs:
            return self
        try:
            source = self._source.with_knobs(**knobs)
        except TslabError as exc:
            raise DesignError("input", f"captured kernel '{self._kernel}'", str(exc),
                              "design.knobs() lists the knobs and their values") from None
        new = self._replace()
        new._source = source
        return new._validated(f"captured kernel '{self._kernel}' knobs")

    def knobs(self) -> dict[str, Any]:
        """``{name: value}`` of a captured kernel's knobs (empty for catalog and hand-built designs)."""
        return self._source.knobs() if self.is_captured else {}

    def consistency_issues(self) -> list[Any]:
        """Issues where what the kernel builds differs from the edit asked for (``unfaithful-edit``), and the
        kernel's own rules TS cannot see (a catalog kernel's ``RULES.issues(params, pipelines)``: rings staged in
        one buffer, clusters)."""
        if self.is_captured:
            return self._source.faithfulness(self._edits())
        rules = None if self._source is not None else getattr(kernel_module(self._kernel), "RULES", None)
        return [] if rules is None else rules.issues(self.params, self.pipelines())

    def _edits(self) -> Any:
        from .construction import Edits

        return Edits(copy.deepcopy(self._pipelines), dict(self._schedules), copy.deepcopy(self._alias_groups))

    def with_params(self, **params: Any) -> Design:
        """The same overrides on the kernel built with other parameters."""
        if self.is_captured:
            raise DesignError("input", f"captured kernel '{self._kernel}'", "has knobs, not parameters",
                              "use with_knobs(...); design.knobs() lists them")
        if self._source is not None:
            raise DesignError("input", "design", "a custom design has no parameters",
                              "edit its pipelines and schedules instead")
        return Design(self._kernel, {**self._params, **params}, pipelines=self._pipelines,
                      schedules=self._schedules, alias_groups=self._alias_groups)

    def _validated(self, where: str) -> Design:
        """Build this design once (TS validates every override); any failure is a DesignError naming ``where``."""
        try:
            self._info()
        except DesignError:
            raise
        except Exception as exc:
            raise DesignError("invalid-config", where, one_line(exc),
                              "TS cannot build the design with this edit; undo it or change the value") from None
        return self

    def _require_pipeline_owner(self, name: str) -> None:
        names = [*self._info()["resources"], *self._info()["groups"]]
        if name not in names:
            raise DesignError("input", f"resource '{name}'",
                              "no resource or pipeline group of that name in this design", did_you_mean(name, names))

    def _require_resource(self, resource: str) -> None:
        names = self._info()["resources"]
        if resource not in names:
            raise DesignError("input", f"resource '{resource}'", "no resource of that name in this design",
                              did_you_mean(resource, names))

    # -- lowering and introspection ------------------------------------------------------------------
    def blueprint(self) -> Blueprint:
        """Fresh TS objects for this design's kernel, before overrides."""
        with TS_LOCK:
            return self._build()

    def _build(self) -> Blueprint:
        if self.is_captured:
            return self._source.blueprint(self._edits())
        if self._source is not None:
            return self._source()
        try:
            return kernel_module(self._kernel).build(**self._params)
        except DesignError:
            raise
        except Exception as exc:  # TS refused the kernel's own objects for these parameters
            args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
            raise DesignError("input", f"kernel '{self._kernel}'", f"cannot be built with {args}: "
                              + one_line(exc), "change the parameters TS names in the message") from None

    def lower(self) -> Lowered:
        """Fresh TS objects with this design's overrides applied and memory laid out."""
        with TS_LOCK:
            return lower(self.blueprint(), pipelines=self._pipelines, schedules=self._schedules,
                         alias_groups=self._alias_groups)

    def _info(self) -> dict[str, Any]:
        if "info" not in self._cache:
            low = self.lower()
            bp = low.blueprint
            resources = bp.resources()
            allocs = [{"name": a.name, "space": "smem", "size": a.size_bytes, "alignment": a.alignment}
                      for a in bp.smem_allocations()]
            allocs += [{"name": a.name, "space": "tmem", "size": a.num_columns, "alignment": 1}
                       for a in bp.tmem_allocations()]
            self._cache["info"] = {
                "resources": list(resources),
                "pipelines": _pipelines(resources),
                "schedulers": _schedulers(resources),
                "groups": list(bp.groups()),
                "tasks": [t.name for t in bp.tasks],
                "schedules": {t.name: steps_from_task(t, bp.conditions()) for t in bp.tasks},
                "work_kwargs": {t.name: work_kwargs_from_task(t) for t in bp.tasks},
                "tile_loops": {t.name: tile_loop_from_task(t) for t in bp.tasks},
                "allocations": allocs,
                "alias_groups": low.smem_alias_names,
                "stages": {n: _offered_stages(r) for n, r in resources.items()},
            }
        return self._cache["info"]

    def pipelines(self) -> dict[str, dict[str, Any]]:
        """``{name: {field: value}}`` of every PipelineConfig as TS holds it, in resource order.

        A PipelineGroup has an entry of its own just before its first member, with ``"mode"`` and
        ``"members"`` added; each member's entry is marked ``"group": <group name>``. Edit a group by its
        name (``with_pipeline("ab_sync", num_stages=5)``); its members follow.
        """
        return copy.deepcopy(self._info()["pipelines"])

    def schedulers(self) -> dict[str, str]:
        """``{name: tile scheduler type}`` of each WorkQueue that has no pipeline of its own (``StaticPersistent``):
        the tasks wait on it for their next tile, but no task fills it."""
        return dict(self._info()["schedulers"])

    def tasks(self) -> list[str]:
        return list(self._info()["tasks"])

    def resources(self) -> list[str]:
        return list(self._info()["resources"])

    def allocations(self) -> list[dict[str, Any]]:
        """Allocation names with space (smem|tmem), size (bytes or columns) and alignment."""
        return copy.deepcopy(self._info()["allocations"])

    def alias_groups(self) -> list[list[list[str]]]:
        """The SMEM alias groups in effect (the kernel's own unless overridden)."""
        return copy.deepcopy(self._info()["alias_groups"])

    def schedule(self, task: str) -> list[Step]:
        """The steps ``task`` runs, in plain form, read back from the TS Task."""
        schedules = self._info()["schedules"]
        if task not in schedules:
            raise DesignError("input", f"task '{task}'", "no task of that name in this design",
                              did_you_mean(task, list(schedules)))
        return list(schedules[task])

    def tile_loop(self, task: str) -> dict[str, Any] | None:
        """Where ``task``'s steps sit around its work-tile loop, by their index in :meth:`schedule` (run once before
        it, once after it, skipped with a skipped tile), and its WorkQueue; None for a task without a work-tile loop
        (gemm_sm90 with ``pdl=True``: ``{"work_queue": "work_queue", "before": [0], "after": [8], ...}``)."""
        self.schedule(task)  # names the task, or raises
        return copy.deepcopy(self._info()["tile_loops"][task])

    def work_kwargs(self, task: str) -> dict[int, dict[str, Any]]:
        """The compile-time keyword arguments TS passes to ``task``'s work steps, by the step's index in
        :meth:`schedule` (gemm_sm90's sub-tiled epilogue: ``{8: {"group": 0}, 11: {"group": 1}, ...}``)."""
        self.schedule(task)  # names the task, or raises
        return copy.deepcopy(self._info()["work_kwargs"][task])

    def variable_flow(self) -> Any:
        """Which step's task-local variables feed which later step of the same task, as TS's slot routing holds
        it: a DataFrame (task, writer, variable, reader) read from fresh TS tasks (edits applied)."""
        from .routing import routing_table

        return routing_table(self.lower().tasks)

    def stage_choices(self, resource: str) -> dict[str, list[str]]:
        """Stages and work labels a schedule step on ``resource`` may use: what an editor offers."""
        self._require_resource(resource)
        return copy.deepcopy(self._info()["stages"][resource])

    # -- wrapping a user's own TS objects ------------------------------------------------------------
    @classmethod
    def from_tasks(cls, tasks: list[Any], resource_dependency_graph: dict[Any, list[Any]], *,
                   smem_allocations: Any = None, tmem_allocations: Any = None,
                   alias_groups: list[list[list[Any]]] | None = None,
                   smem_capacity_bytes: int | None = None, tmem_capacity_columns: int | None = None,
                   dma_consumer_release_labels: dict[Any, Any] | None = None,
                   assume_pdl_wait_completed: bool = False, name: str = CUSTOM) -> Design:
        """Wrap a user's own TS tasks and resources; tslab works on private copies, never the originals."""
        from .wrap import blueprint_source

        source = blueprint_source(tasks, resource_dependency_graph, smem_allocations=smem_allocations,
                                  tmem_allocations=tmem_allocations, alias_groups=alias_groups,
                                  smem_capacity_bytes=smem_capacity_bytes,
                                  tmem_capacity_columns=tmem_capacity_columns,
                                  dma_consumer_release_labels=dma_consumer_release_labels,
                                  assume_pdl_wait_completed=assume_pdl_wait_completed)
        design = cls(CUSTOM, {}, _source=source)
        design._kernel = name
        design.lower()
        return design


def _pipelines(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, res in resources.items():
        cfg = getattr(res, "pipeline_config", None)
        if cfg is None:
            continue
        group = getattr(res, "pipeline_group", None)
        if group is not None and group.name not in out:
            out[group.name] = pipeline_groups.describe_group(group)
        out[name] = {"pipeline_type": cfg.pipeline_type.name, **pipeline_fields.describe(cfg)}
        if group is not None:
            out[name]["group"] = group.name
    return out


def _schedulers(resources: dict[str, Any]) -> dict[str, str]:
    """``{name: tile scheduler type}`` of each WorkQueue with no pipeline of its own: TS's static persistent mode (no
    producer; every task takes its tiles from it). A design lowered on the CPU may hold no scheduler config: a
    WorkQueue without a pipeline is static all the same (the CLC mode fills one from a scheduler warp)."""
    from cutlass.experimental.task_scheduling.resources import WorkQueue

    def kind(res: WorkQueue) -> str:
        config = res.tile_scheduler_config
        return config.tile_scheduler_type.name if config is not None else "StaticPersistent"

    return {name: kind(res) for name, res in resources.items()
            if isinstance(res, WorkQueue) and getattr(res, "pipeline_config", None) is None}


def _offered_stages(resource: Any) -> dict[str, list[str]]:
    from .wrap import work_labels

    producer, consumer = work_labels(resource)
    return {"producer_work": producer, "consumer_work": consumer}


def _check_params(kernel: str, defaults: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise DesignError("input", f"kernel '{kernel}'", f"params={params!r} is not a dict", "pass keyword parameters")
    out = dict(defaults)
    for key, value in params.items():
        if key not in defaults:
            raise DesignError("input", f"kernel '{kernel}' param '{key}'", "is not a parameter of this kernel",
                              did_you_mean(key, list(defaults)))
        want = type(defaults[key])
        low = min(defaults[key], 1) if want is int else 1  # a count, or a switch whose default 0 means off
        if want is int and (not isinstance(value, int) or isinstance(value, bool) or value < low):
            kind = "a positive int" if low == 1 else f"an int >= {low}"
            raise DesignError("input", f"kernel '{kernel}' param '{key}'", f"{key}={value!r} is not {kind}",
                              f"give {kind}, e.g. {key}={defaults[key]!r}")
        if want is str and not isinstance(value, str):
            raise DesignError("input", f"kernel '{kernel}' param '{key}'", f"{key}={value!r} is not a string",
                              f"give a string, e.g. {key}={defaults[key]!r}")
        out[key] = value
    return out
