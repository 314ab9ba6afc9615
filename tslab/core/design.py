"""``Design``: an immutable, serialisable recipe of a kernel design.

A design names a kernel module of :mod:`tslab.kernels` and its parameters, plus overrides: PipelineConfig
fields per resource, schedule steps per task and alias groups. Every edit returns a new ``Design``; nothing
is built until a design is lowered (:meth:`Design.lower`) to fresh TS objects.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import DesignError, did_you_mean, one_line
from . import pipeline_fields
from .blueprint import Blueprint, Lowered, lower
from .schema import validate_design_document
from .steps import Step, normalize_steps, steps_from_task

FORMAT_VERSION = 1
CUSTOM = "custom"


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
            from ..kernels import kernel_module

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
        return {"tslab_design": FORMAT_VERSION, "kernel": self._kernel, "params": self.params, **self.overrides}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> Design:
        """Read a design written by :meth:`to_json`."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise DesignError("input", "design JSON", f"not valid JSON ({exc})",
                              "pass the text written by Design.to_json()") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> Design:
        """Read a design from plain data; its shape is checked against ``tslab/schemas/design.schema.json``."""
        validate_design_document(data)
        captured = sorted({"source", "knobs"} & set(data))
        if captured:
            raise DesignError("input", "design JSON", f"key {captured[0]!r} marks a captured design, which this "
                              "version cannot rebuild from JSON", "captured designs are re-opened with "
                              "tslab.capture(host_fn, ...) or tslab.capture_file(path, fn, ...) on their kernel")
        if data["kernel"] == CUSTOM:
            raise DesignError("input", "design JSON", "a custom design cannot be rebuilt from JSON alone",
                              "rebuild it with Design.from_tasks(...) and re-apply the overrides")
        return cls(data["kernel"], data.get("params"), pipelines=data.get("pipelines"),
                   schedules=data.get("schedules"), alias_groups=data.get("alias_groups"))

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
        head = (f"Design.from_tasks(<{self._kernel}>)" if self._source
                else f"tslab.kernels.{self._kernel}.design({args})")
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
        """A new design with PipelineConfig fields of ``resource`` replaced (validated by TS)."""
        if not fields:
            return self
        self._require_resource(resource)
        where = f"resource '{resource}'"
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

    def with_params(self, **params: Any) -> Design:
        """The same overrides on the kernel built with other parameters."""
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

    def _require_resource(self, resource: str) -> None:
        names = self._info()["resources"]
        if resource not in names:
            raise DesignError("input", f"resource '{resource}'", "no resource of that name in this design",
                              did_you_mean(resource, names))

    # -- lowering and introspection ------------------------------------------------------------------
    def blueprint(self) -> Blueprint:
        """Fresh TS objects for this design's kernel, before overrides."""
        if self._source is not None:
            return self._source()
        from ..kernels import kernel_module

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
                "pipelines": {n: {"pipeline_type": r.pipeline_config.pipeline_type.name,
                                  **pipeline_fields.describe(r.pipeline_config)}
                              for n, r in resources.items() if getattr(r, "pipeline_config", None) is not None},
                "tasks": [t.name for t in bp.tasks],
                "schedules": {t.name: steps_from_task(t) for t in bp.tasks},
                "allocations": allocs,
                "alias_groups": low.smem_alias_names,
                "stages": {n: _offered_stages(r) for n, r in resources.items()},
            }
        return self._cache["info"]

    def pipelines(self) -> dict[str, dict[str, Any]]:
        """``{resource: {field: value}}`` of every PipelineConfig as TS holds it."""
        return copy.deepcopy(self._info()["pipelines"])

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
        if want is int and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise DesignError("input", f"kernel '{kernel}' param '{key}'", f"{key}={value!r} is not a positive int",
                              f"give a positive int, e.g. {key}={defaults[key]!r}")
        if want is str and not isinstance(value, str):
            raise DesignError("input", f"kernel '{kernel}' param '{key}'", f"{key}={value!r} is not a string",
                              f"give a string, e.g. {key}={defaults[key]!r}")
        out[key] = value
    return out
