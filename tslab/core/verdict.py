"""``Verdict``: everything TS computed about a design, as data, with text and HTML views."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import Issue, TslabError
from . import mime
from .checker import CheckerResult


@dataclass
class Verdict:
    """The result of :func:`tslab.check`: errors, memory layout, schedule table, checker result, TS's report."""

    design: Any
    errors: list[Issue]
    layout: pd.DataFrame
    schedule: pd.DataFrame
    checker: CheckerResult
    report: str = ""
    smem_total: int = 0
    smem_capacity: int = 0
    tmem_total: int = 0
    tmem_capacity: int = 0
    barrier_bytes: int = 0
    alias_savings: int = 0
    tmem_alias_savings: int = 0  # TMEM columns its alias groups save
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    trace: Any = None
    failed_checks: list[str] = field(default_factory=list)  # TS's TaskManager checks that failed, by method name
    trips: dict[str, Any] | None = None  # the trip counts checked in place of TS's one-trip assumption
    tasks: list[dict[str, Any]] = field(default_factory=list)  # each task's warps and loop (``tables.task_rows``)
    #: What the verdict does not cover and the schedule suggests is wrong (``stage_binding``): never an error, the
    #: status stays TS's.
    cautions: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True only when TS found no error and the checker proved every interleaving safe."""
        return not self.errors and self.checker.is_safe

    @property
    def shown_cautions(self) -> list[Issue]:
        """The cautions a reader is shown: only beside a verdict without errors (what SAFE does not cover; under a
        DEADLOCK or a RACE the counterexample says more)."""
        return [] if self.errors else list(self.cautions)

    @property
    def status(self) -> str:
        """One word for a badge: SAFE, DEADLOCK, RACE, PDL-ORDER, BLOCKED (ASSUMED), CAPACITY, INVALID or NOT PROVEN.

        BLOCKED (ASSUMED): TS found the schedule blocked while assuming one trip of a loop whose bound is a
        runtime value; it may be a false positive, and it is not SAFE either."""
        if self.ok:
            return "SAFE"
        kinds = [e.kind for e in self.errors]
        for kind, word in (("deadlock", "DEADLOCK"), ("race", "RACE"), ("pdl-order", "PDL-ORDER"),
                           ("blocked-assumed", "BLOCKED (ASSUMED)")):
            if kind in kinds:
                return word
        if kinds:
            return "CAPACITY" if set(kinds) == {"capacity"} else "INVALID"
        return "NOT PROVEN"

    @property
    def tmem_layout(self) -> pd.DataFrame:
        """TS's TMEM layout: one row per TMEM allocation (offset, size and end in columns, alias group, phase)."""
        return self.layout[self.layout["space"] == "tmem"].reset_index(drop=True)

    @property
    def smem_used(self) -> int:
        """Data plus barrier bytes: what the capacity check compares with ``smem_capacity``."""
        return self.smem_total + self.barrier_bytes

    def summary(self) -> dict[str, Any]:
        """The headline figures as a plain dict (what the CLI's ``--json`` prints).

        SMEM as in the saved verdict's ``memory``: ``smem_used`` (data plus barriers, what the capacity check
        compares with ``smem_capacity``) = ``smem_data`` + ``barrier_bytes``.
        """
        c = self.checker
        return {"design": self.design.to_dict() if self.design is not None else None, "ok": self.ok,
                "status": self.status, "errors": [e.to_dict() for e in self.errors],
                "smem_used": self.smem_used, "smem_data": self.smem_total, "barrier_bytes": self.barrier_bytes,
                "smem_capacity": self.smem_capacity, "tmem_total": self.tmem_total,
                "tmem_capacity": self.tmem_capacity, "alias_savings": self.alias_savings,
                "tmem_alias_savings": self.tmem_alias_savings,
                "checker": {"verdict": c.verdict, "states_explored": c.states_explored,
                            "complete_count": c.complete_count, "hit_state_limit": c.hit_state_limit,
                            "max_states": c.max_states, "runs": c.runs, "context": c.context,
                            "strategy": c.strategy, "prover": c.prover, "ts_states": c.ts_states,
                            "deadlocks": c.deadlocks, "races": c.races, "pdl_order": c.pdl_order},
                "trips": self.trips, "cautions": [c.to_dict() for c in self.cautions],
                "seconds": round(self.seconds, 4)}

    def text(self) -> str:
        """A readable multi-line summary."""
        name = self.design.kernel if self.design is not None else "design"
        c = self.checker
        lines = [f"{name}: {self.status}"]
        if self.smem_capacity:
            lines.append(f"  SMEM {self.smem_used} / {self.smem_capacity} B "
                         f"({self.smem_total} data + {self.barrier_bytes} barriers), "
                         f"alias savings {self.alias_savings} B")
        if self.tmem_total:
            saved = f", alias savings {self.tmem_alias_savings} columns" if self.tmem_alias_savings else ""
            lines.append(f"  TMEM {self.tmem_total} / {self.tmem_capacity} columns{saved}")
        if c.verdict != "not-run":
            limit = f" (state limit {c.max_states:,} hit)" if c.hit_state_limit else ""
            lines.append(f"  checker: {c.verdict}, {c.states_text()}, {c.runs} run(s){limit}")
        if c.verdict == "not-proven":
            lines.append("  not proven: the state limit stopped the search before it finished; "
                         "raise max_states or shorten the loop domain")
        if self.trips is not None:
            lines.append(f"  trip counts: {self.trips['text']}: " + (
                "proven for these n only, not for every n" if self.trips["failed_at"] is None
                else f"fails at n={self.trips['failed_at']}"))
        for issue in self.errors:
            lines.extend("  " + line for line in str(issue).splitlines())
        for caution in self.shown_cautions:
            lines.extend("  caution " + line if i == 0 else "  " + line
                         for i, line in enumerate(str(caution).splitlines()))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        colour = {"SAFE": "#1a7f37", "NOT PROVEN": "#9a6700"}.get(self.status, "#cf222e")
        rows = "".join(f"<li><b>{html.escape(e.kind)}</b> at {html.escape(e.where)}: {html.escape(e.message)}"
                       + (f"<br><i>hint: {html.escape(e.hint)}</i>" if e.hint else "") + "</li>" for e in self.errors)
        name = html.escape(self.design.kernel if self.design is not None else "design")
        c = self.checker
        return (f'<div class="tslab-verdict"><span style="background:{colour};color:white;padding:2px 8px;'
                f'border-radius:4px;font-weight:bold">{self.status}</span> <code>{name}</code>'
                f"<br>SMEM {self.smem_used:,} / {self.smem_capacity:,} B; alias savings {self.alias_savings:,} B;"
                f" checker: {html.escape(c.verdict)}, {html.escape(c.states_text())}"
                + (f"<ul>{rows}</ul>" if rows else "") + _cautions_html(self.shown_cautions) + "</div>")

    def layout_rows(self) -> list[dict[str, Any]]:
        """TS's memory layout table as JSON-plain rows (what the memory maps draw)."""
        return _records(self.layout)

    def memory(self) -> dict[str, int]:
        """The memory figures the maps and their summary line show."""
        return {"smem_used": self.smem_used, "smem_data": self.smem_total, "barrier_bytes": self.barrier_bytes,
                "smem_capacity": self.smem_capacity, "alias_savings": self.alias_savings,
                "tmem_used": self.tmem_total, "tmem_capacity": self.tmem_capacity}

    def schedule_rows(self) -> list[dict[str, Any]]:
        """TS's schedule table as JSON-plain rows (what the swimlane views draw)."""
        return _records(self.schedule)

    def rings(self) -> dict[str, dict[str, Any]]:
        """Each pipeline's ``num_stages``, ``pipeline_type`` and ``num_bytes`` (what the flow diagram draws); a
        PipelineGroup's member names its ``group``, a group its ``mode`` and ``members``; a WorkQueue with no pipeline
        of its own (TS's static persistent scheduler) its ``scheduler``, with no stages."""
        try:
            pipelines = self.design.pipelines() if self.design is not None else {}
            schedulers = self.design.schedulers() if self.design is not None else {}
        except TslabError:  # a design TS could not build: no pipelines to draw
            pipelines, schedulers = {}, {}
        rings: dict[str, dict[str, Any]] = {name: {"num_stages": 0, "pipeline_type": "WorkQueue", "num_bytes": None,
                                                   "scheduler": kind} for name, kind in schedulers.items()}
        for name, cfg in pipelines.items():
            if not isinstance(cfg.get("num_stages"), int) or isinstance(cfg.get("num_stages"), bool):
                continue
            ring = {"num_stages": cfg["num_stages"], "pipeline_type": str(cfg.get("pipeline_type")),
                    "num_bytes": cfg["num_bytes"] if isinstance(cfg.get("num_bytes"), int) else None}
            if cfg.get("group"):
                ring["group"] = str(cfg["group"])
            if cfg.get("members"):
                ring.update(mode=str(cfg.get("mode")), members=[str(m) for m in cfg["members"]])
            rings[name] = ring
        return rings

    def to_mime(self) -> dict[str, Any]:
        """What a saved notebook keeps for JupyterLab's verdict renderer (``mime.VERDICT``; no timings)."""
        c = self.checker
        return {"tslab_verdict": 1, "kernel": self.design.kernel if self.design is not None else "design",
                "status": self.status, "ok": self.ok, "errors": [e.to_dict() for e in self.errors],
                "warnings": [f"caution: {c.where}: {c.message}" for c in self.shown_cautions] + list(self.warnings),
                "memory": self.memory(), "layout": self.layout_rows(), "schedule": self.schedule_rows(),
                "tasks": self.tasks, "rings": self.rings(),
                "checker": {"verdict": c.verdict, "states_explored": c.states_explored,
                            "hit_state_limit": c.hit_state_limit, "max_states": c.max_states, "runs": c.runs,
                            "context": c.context, "prover": c.prover, "ts_states": c.ts_states},
                "trips": None if self.trips is None else {k: self.trips[k] for k in ("formulas", "n", "failed_at",
                                                                                      "text")},
                "trace": self.trace.to_dict() if self.trace is not None else None,
                "design": self.design.to_dict() if self.design is not None else None}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {mime.VERDICT: self.to_mime(), "text/plain": self.text(), "text/html": self._repr_html_()}


def _cautions_html(cautions: list[Issue]) -> str:
    """The cautions in amber, each with its hint (empty when there are none)."""
    if not cautions:
        return ""
    items = "".join(f"<li><b>caution</b> at {html.escape(c.where)}: {html.escape(c.message)}"
                    f"<br><i>hint: {html.escape(c.hint)}</i></li>" for c in cautions)
    return f'<ul class="tslab-cautions" style="color:#9a6700">{items}</ul>'


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame rows as JSON-plain dicts (numpy ints -> int, missing -> None)."""
    return [{k: None if pd.isna(v) else (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
            for row in frame.astype(object).to_dict("records")]
