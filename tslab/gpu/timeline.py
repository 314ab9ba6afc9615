"""``Timeline``: what every profiled warp of a kernel did on the GPU, step by step, as plain rows.

A profile (:func:`tslab.gpu.profile`) brings back IKET's ranges, one per schedule step TS marked, each named
``<resource>_<ScheduleStage>``, with the block, warp, start and end (nanoseconds from the traced block's first
warp), and each warp's lifetime. Here they become a DataFrame with the task each warp belongs to (its warp range
in the design) and the place of each range in the task's schedule (section, index, loop trip, work tile: the rows
``Verdict.schedule`` shows), and :meth:`Timeline.summary` says where each task's time went.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.mime import TIMELINE as TIMELINE_MIME
from .profiled_tasks import TaskSteps, TimelineError, signal_resources

COLUMNS = ["block", "warp", "task", "resource", "stage", "section", "index", "iteration", "tile", "start_ns",
           "end_ns", "duration_ns"]
#: Ranges a saved notebook keeps of one timeline (a longer run is shown from its start).
MAX_SHOWN_RANGES = 2000
#: Share of a task's time above which a wait on both sides of one resource reads as a ring too shallow.
SHALLOW_SHARE = 0.5
#: What a blocking step waits for, in the words a summary uses.
WAITS = {"ConsumerWait": "data not yet committed", "ProducerAcquire": "no free stage"}


def place(steps: TaskSteps, items: list[tuple[int, int, str]]) -> list[tuple[tuple[int, int, str], dict[str, Any]]]:
    """Each ``(start, end, name)`` range of one warp, in time order, placed in the task's schedule (``section``,
    ``index``, ``iteration``, ``tile``): per work tile, the trip count whose expansion by TS matches what was
    measured. Ranges that start on the same tick of IKET's 32 ns clock may be in either order. A warp whose
    ranges no trip count explains is a :class:`TimelineError` (not a path of the design)."""
    items = sorted(items)
    out: list[tuple[tuple[int, int, str], dict[str, Any]]] = []
    pos, tile = 0, 0
    while pos < len(items):
        most = (len(items) - pos) // steps.loop_length + 1
        match = None
        for trips in range(most, -1, -1):  # the longest tile that matches: the next tile starts with its head
            expected = steps.tile(trips)
            if expected and _matches(items, pos, [f"{s['resource']}_{s['stage']}" for s in expected]):
                match = expected
                break
        if match is None:
            one = [f"{s['resource']}_{s['stage']}" for s in steps.tile(1)]
            raise TimelineError(
                f"task '{steps.name}': ranges {pos}.. of a warp ({', '.join(n for *_, n in items[pos:pos + 4])}, "
                f"...) match no trip count of its schedule (one trip runs {', '.join(one[:4])}, ...): the measured "
                "order is not a path of the design as checked, a finding about TS's model or its markers")
        out.extend((item, {**s, "tile": tile}) for item, s in zip(items[pos:pos + len(match)], match, strict=True))
        pos += len(match)
        tile += 1
    return out


def _matches(items: list[tuple[int, int, str]], pos: int, names: list[str]) -> bool:
    """Whether ``items[pos:]`` starts with ``names``, reordering ranges that start on the same tick; on a match the
    items are left in the matched order."""
    if pos + len(names) > len(items):
        return False
    trial = items[pos:pos + len(names) + 8]  # room for a tie group that straddles the end
    for i, name in enumerate(names):
        if trial[i][2] == name:
            continue
        j = next((j for j in range(i + 1, len(trial)) if trial[j][0] == trial[i][0] and trial[j][2] == name), None)
        if j is None:
            return False
        trial[i], trial[j] = trial[j], trial[i]
    items[pos:pos + len(trial)] = trial
    return True


@dataclass
class Timeline:
    """One profiled launch: every marked step of every profiled warp (``frame``), each warp's lifetime, and what
    the markers cost.

    Times on IKET's clock (the traced block's lifetime): ``block_us`` in the profiled launch, ``marked_us`` and
    ``minimal_us`` the medians of the timing launches with every step marked and with one marker; ``plain_us``
    is the kernel without markers (CUDA events, in the same worker)."""

    kernel: str
    frame: pd.DataFrame
    lifetimes: pd.DataFrame
    block_us: float
    marked_us: float | None = None
    minimal_us: float | None = None
    plain_us: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def overhead(self) -> float | None:
        """The traced block's lifetime with every step marked over its lifetime with one marker (IKET's own
        comparison), or None when the launches were not timed (more than one block traced)."""
        if not self.marked_us or not self.minimal_us:
            return None
        return self.marked_us / self.minimal_us

    @classmethod
    def from_job(cls, kernel: str, tasks: list[TaskSteps], job: dict[str, Any]) -> Timeline:
        """The timeline of a profile job's result, each range placed in its task's schedule."""
        rows, lifetimes = [], []
        origin = min((start for *_, start, _end in job["lifetimes"]), default=0)  # the block's first warp start
        by_warp: dict[tuple[int, int], list[tuple]] = {}
        for block, warp, _sm, name, start, end in job["ranges"]:
            by_warp.setdefault((block, warp), []).append((start - origin, end - origin, name))
        owner = {}
        for block, warp, _sm, start, end in job["lifetimes"]:
            task = next((t for t in tasks if t.owns(warp)), None)
            owner[(block, warp)] = task
            lifetimes.append({"block": block, "warp": warp, "task": task.name if task else None,
                              "start_ns": start - origin, "end_ns": end - origin})
        for key, items in sorted(by_warp.items()):
            task = owner.get(key) or next((t for t in tasks if t.owns(key[1])), None)
            if task is None:
                raise TimelineError(f"block {key[0]} warp {key[1]}: no task of the design owns this warp")
            for (start, end, _name), p in place(task, items):
                rows.append({"block": key[0], "warp": key[1], "task": task.name, "resource": p["resource"],
                             "stage": p["stage"], "section": p["section"], "index": p["index"],
                             "iteration": p["iteration"], "tile": p["tile"], "start_ns": start, "end_ns": end,
                             "duration_ns": end - start})
        frame = pd.DataFrame(rows, columns=COLUMNS).astype({"iteration": "Int64"})
        meta = {k: job.get(k) for k in ("arch", "sms", "launch", "blocks", "names", "check", "buffer_bytes")}
        meta["overlapped_waits"] = {t.name: sorted(t.overlapped_waits) for t in tasks if t.overlapped_waits}
        meta["signals"] = signal_resources(tasks)
        life = pd.DataFrame(lifetimes, columns=["block", "warp", "task", "start_ns", "end_ns"])
        block_us = float((life.end_ns.max() - life.start_ns.min()) / 1e3) if len(life) else 0.0
        marked, minimal = job.get("marked_spans_us") or [], job.get("minimal_spans_us") or []
        return cls(kernel, frame, life, block_us, _median(marked[1:]), _median(minimal), job.get("plain_median_us"),
                   meta)

    def summary(self) -> pd.DataFrame:
        """Per task and step: count, median and p90 duration (ns), and the share of the warps' lifetimes spent in
        it (mean over the task's warps); waits say what they wait for, and whether they overlap the task's own
        asynchronous work (a wgmma wait with ``advance_on_wait``) instead of stalling it."""
        if self.frame.empty:
            return pd.DataFrame(columns=["task", "step", "count", "median_ns", "p90_ns", "share", "waits_for"])
        life = self.lifetimes.assign(span=self.lifetimes.end_ns - self.lifetimes.start_ns)
        spans = life.set_index(["block", "warp"]).span
        f = self.frame.assign(step=self.frame.resource + "." + self.frame.stage)
        per_warp = f.groupby(["task", "step", "block", "warp"]).duration_ns.sum().reset_index()
        per_warp["share"] = [d / spans.get((b, w), float("nan")) for d, b, w in
                             zip(per_warp.duration_ns, per_warp.block, per_warp.warp, strict=True)]
        g = f.groupby(["task", "step"]).duration_ns
        out = pd.DataFrame({"count": g.size(), "median_ns": g.median(), "p90_ns": g.quantile(0.9),
                            "share": per_warp.groupby(["task", "step"]).share.mean()}).reset_index()
        overlapped = self.meta.get("overlapped_waits") or {}

        def waits_for(task: str, step: str) -> str:
            resource, _, stage = step.rpartition(".")
            if stage not in WAITS:
                return ""
            if stage == "ConsumerWait" and resource in overlapped.get(task, []):
                return "overlapped: own MMAs in flight"
            return WAITS[stage]

        out["waits_for"] = [waits_for(t, s) for t, s in zip(out.task, out.step, strict=True)]
        order = {name: i for i, name in enumerate(dict.fromkeys(self.frame.task))}
        return out.sort_values(["task", "share"], key=lambda c: c.map(order) if c.name == "task" else -c,
                               ignore_index=True)

    def reading(self) -> list[str]:
        """A short, factual reading of the summary: each task's largest wait and what it means."""
        lines = []
        s = self.summary()
        tops = {task: rows[rows.waits_for != ""].iloc[0] for task, rows in s.groupby("task", sort=False)
                if (rows.waits_for != "").any()}
        # A resource both of whose sides mostly wait on each other: too few stages in flight to hide the latency.
        late = {top.step.rpartition(".")[0] for top in tops.values()
                if top.waits_for == WAITS["ConsumerWait"] and top.share >= SHALLOW_SHARE}
        signals = set(self.meta.get("signals") or ())
        results = self._tile_results()
        for task, top in tops.items():
            said = f"{task} waited {top.share:.0%} of its time on {top.step}"
            resource = top.step.rpartition(".")[0]
            if top.waits_for.startswith("overlapped"):
                lines.append(f"{said}, overlapped with its own in-flight MMAs: not a stall")
            elif resource in signals:
                consumer = top.waits_for == WAITS["ConsumerWait"]
                other = " and ".join(sorted(self._sides(resource, producing=consumer) - {task})) or "the other side"
                lines.append(f"{said} ({resource} holds no data: a signal {other} "
                             f"{'gives' if consumer else 'hands back'} after the steps it holds it around, as a "
                             f"ping-pong's turn): {other}'s own steps set this wait, not memory")
            elif top.waits_for == WAITS["ConsumerWait"] and resource in results:
                who = results[resource]
                one = len(who) == 1
                lines.append(f"{said} (the tile's result): {' and '.join(who)} commit{'s' if one else ''} it once a "
                             f"work tile, after every trip of {'its loop' if one else 'their loops'}, so {task} waits "
                             f"while {'it computes' if one else 'they compute'}: idle by design, not a stall")
            elif top.waits_for == WAITS["ConsumerWait"]:
                lines.append(f"{said} (data late): the producing side or memory limits it")
            elif resource in late and top.share >= SHALLOW_SHARE:
                lines.append(f"{said} (no free stage) while its consumer mostly waits for data: each side waits on "
                             f"the other, so {resource} is too shallow to hide the latency; more stages should help")
            elif top.share >= 0.1:
                lines.append(f"{said} (no free stage): the ring is full, so the consuming side sets the pace; "
                             "more stages would not help")
            else:
                lines.append(f"{said} (no free stage): the ring rarely fills; more stages would not help")
        return lines

    def _sides(self, resource: str, *, producing: bool) -> set[str]:
        """The tasks with marked steps on ``resource``'s producing (or consuming) side."""
        f = self.frame
        side = f.stage.str.startswith("Producer" if producing else "Consumer")
        return set(f[(f.resource == resource) & side].task)

    def _tile_results(self) -> dict[str, list[str]]:
        """Resources committed once a work tile by tasks whose loops run several trips a tile (an attention's O,
        a GEMM's C): resource -> its producing tasks. A wait on one is a wait for the whole tile's work."""
        f = self.frame
        per = ["task", "block", "warp", "tile"]
        commits = f[f.stage == "ProducerCommit"].groupby(["resource", *per]).size()
        trips = f[f.section == "loop"].groupby(per).iteration.nunique()
        out: dict[str, list[str]] = {}
        for resource, rows in commits.groupby(level="resource"):
            keys = rows.index.droplevel("resource")
            looped = [trips.get(k, 0) for k in keys]
            if rows.max() == 1 and looped and min(looped) >= 2:
                out[resource] = sorted(set(keys.get_level_values("task")))
        return out

    def trip(self, design: Any, iteration: int, *, block: int = 0, tile: int = 0) -> pd.DataFrame:
        """Loop trip ``iteration`` of every task, as it ran in ``block``'s work tile ``tile``: each task's first
        profiled warp's steps of that trip in time order, named with the work they ran (``design``'s schedule as TS
        expanded it), each from the trip's first step (``start_ns``) and how long it took. Read down it to see who
        waits for whom within one trip."""
        from ..core.tables import schedule_table

        self._require_profiled(design)
        f = self.frame
        loop = f[(f.block == block) & (f.tile == tile) & (f.section == "loop")]
        first_warp = loop.groupby("task").warp.min()
        rows = loop[(loop.iteration == iteration) & (loop.warp == loop.task.map(first_warp))]
        if rows.empty:
            trips = loop.groupby("task").iteration.max()
            raise TimelineError(f"no loop trip {iteration} in block {block}, work tile {tile}: its tasks' loops ran "
                                f"trips 0 to {', '.join(f'{int(n)} ({t})' for t, n in trips.items())}"
                                if len(trips) else f"no loop steps in block {block}, work tile {tile}")
        labels = schedule_table(design.lower().tasks)[["task", "section", "index", "label"]]
        rows = rows.merge(labels, on=["task", "section", "index"], how="left")
        work = rows.label.map(lambda w: f"({w})" if isinstance(w, str) else "")
        out = pd.DataFrame({"start_ns": rows.start_ns - rows.start_ns.min(), "task": rows.task,
                            "step": rows.resource + "." + rows.stage + work, "duration_ns": rows.duration_ns,
                            "warp": rows.warp})
        return out.sort_values(["start_ns", "warp"], kind="stable", ignore_index=True).drop(columns="warp")

    def handoffs(self, design: Any, resource: str | None = None, *, block: int = 0) -> pd.DataFrame:
        """How each signal (a ping-pong's turn) passed between its two tasks: per task, medians of the period, the
        wait, the time held and the time from the other's give to its take (see :func:`handoffs.handoffs`)."""
        from .handoffs import handoffs

        self._require_profiled(design)
        return handoffs(self, design, resource, block=block)

    def _require_profiled(self, design: Any) -> None:
        """A clear error when ``design`` is not of the kernel this timeline profiled."""
        if design.kernel != self.kernel:
            raise TimelineError(f"this timeline is of '{self.kernel}', the design is of '{design.kernel}': pass the "
                                "design that was profiled")

    def replay(self, design: Any, block: int = 0) -> Any:
        """This run of one block as a path through the checked design's state space (see :func:`replay`)."""
        return replay(self, design, block)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what a saved notebook keeps): the rows, lifetimes, times and what was profiled."""
        return {"tslab_timeline": 1, "kernel": self.kernel, "block_us": self.block_us, "marked_us": self.marked_us,
                "minimal_us": self.minimal_us, "plain_us": self.plain_us, "meta": self.meta,
                "ranges": json.loads(self.frame.to_json(orient="values")), "columns": COLUMNS,
                "lifetimes": json.loads(self.lifetimes.to_json(orient="records"))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Timeline:
        """The timeline :meth:`to_dict` wrote (a recording, e.g. one a tutorial loads)."""
        if data.get("tslab_timeline") != 1:
            raise TimelineError("not a tslab timeline (tslab_timeline: 1 is missing); pass what Timeline.to_dict() "
                                "or benchmarks/profile_kernels.py wrote")
        frame = pd.DataFrame(data["ranges"], columns=data["columns"]).astype({"iteration": "Int64"})
        lifetimes = pd.DataFrame(data["lifetimes"], columns=["block", "warp", "task", "start_ns", "end_ns"])
        return cls(data["kernel"], frame, lifetimes, data["block_us"], data.get("marked_us"), data.get("minimal_us"),
                   data.get("plain_us"), dict(data.get("meta") or {}))

    @classmethod
    def load(cls, path: str | Path) -> Timeline:
        """A timeline saved as JSON (``.json`` or ``.json.gz``)."""
        import gzip

        p = Path(path)
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rt") as fh:
            return cls.from_dict(json.load(fh))

    def to_mime(self, max_ranges: int = MAX_SHOWN_RANGES) -> dict[str, Any]:
        """What a saved notebook keeps for JupyterLab's timeline renderer (``mime.TIMELINE``): the ranges up to
        the time where ``max_ranges`` have ended (a long run shows its start), with every range under way by then
        (a wait that spans the whole block is drawn, cut at that time), the summary and its reading."""
        tasks = list(dict.fromkeys(self.lifetimes.task.dropna()))
        index = {t: i for i, t in enumerate(tasks)}
        # A total order, so the saved payload is the same on any pandas and numpy (their default sort is unstable).
        f = self.frame.sort_values(["end_ns", "start_ns", "warp", "index"], kind="stable")
        total = float(self.lifetimes.end_ns.max()) if len(self.lifetimes) else 0.0
        until = total if len(f) <= max_ranges else float(f.end_ns.iloc[max_ranges - 1])
        shown = f[f.start_ns < until] if len(f) > max_ranges else f
        overlapped = self.meta.get("overlapped_waits") or {}
        summary = self.summary()
        return {"tslab_timeline": 1, "kernel": self.kernel, "block_us": self.block_us, "marked_us": self.marked_us,
                "minimal_us": self.minimal_us, "plain_us": self.plain_us, "overhead": self.overhead,
                "tasks": [{"name": t, "warps": sorted(int(w) for w in self.lifetimes[self.lifetimes.task == t].warp),
                           "overlapped": list(overlapped.get(t, []))} for t in tasks],
                "ranges": [[index[r.task], int(r.warp), r.resource, r.stage, r.section, int(r.index),
                            None if pd.isna(r.iteration) else int(r.iteration), int(r.tile), int(r.start_ns),
                            int(r.end_ns)] for r in shown.itertuples()],
                "lifetimes": [[index.get(r.task, -1), int(r.warp), int(r.start_ns), int(r.end_ns)]
                              for r in self.lifetimes.itertuples() if r.task in index],
                "total_ns": total, "shown_until_ns": until,
                "summary": [{"task": r.task, "step": r.step, "count": int(r.count), "median_ns": float(r.median_ns),
                             "p90_ns": float(r.p90_ns), "share": round(float(r.share), 4), "waits_for": r.waits_for}
                            for r in summary.itertuples()],
                "reading": self.reading()}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {TIMELINE_MIME: self.to_mime(), "text/plain": self.text()}

    def to_perfetto(self, path: str | Path) -> Path:
        """Write the ranges as a Trace Event JSON file, which the Perfetto UI (ui.perfetto.dev) opens: one
        process per block, one thread per warp named after its task."""
        events: list[dict[str, Any]] = []
        for (block, warp, task), _ in self.lifetimes.groupby(["block", "warp", "task"]):
            events.append({"ph": "M", "name": "thread_name", "pid": int(block), "tid": int(warp),
                           "args": {"name": f"{task} warp {warp}"}})
        for r in self.frame.itertuples():
            events.append({"ph": "X", "name": f"{r.resource}.{r.stage}", "pid": int(r.block), "tid": int(r.warp),
                           "ts": r.start_ns / 1000, "dur": r.duration_ns / 1000,
                           "args": {"section": r.section, "index": int(r.index)}})
        out = Path(path)
        out.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
        return out

    def text(self) -> str:
        lines = [f"{self.kernel}: {len(self.frame)} ranges over {self.frame.groupby(['block', 'warp']).ngroups} "
                 f"warps; the traced block ran {self.block_us:.1f} us"]
        if self.overhead is not None:
            plain = f"; the kernel without markers {self.plain_us:.1f} us" if self.plain_us else ""
            lines.append(f"  markers: the block runs {self.marked_us:.1f} us with every step marked, "
                         f"{self.minimal_us:.1f} us with one marker ({self.overhead:.2f}x){plain}")
        lines += [f"  {line}" for line in self.reading()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def replay(timeline: Timeline, design: Any, block: int = 0, *, tolerance_ns: int = 64) -> Any:
    """One block's measured order of steps played through :class:`tslab.Explorer` over the checked design:
    the run as one path through the state space the checker proved safe. Each task's first warp stands for the
    task (the checker models a task as one actor); steps complete in the order their ranges end, and ranges that
    end within ``tolerance_ns`` of each other (IKET's 32 ns clock) may be taken in either order. The checker
    follows a persistent kernel over 2 work tiles: the block's later tiles are left out (nothing in its first
    two waits for them). A measured order the checker would not take is a :class:`TimelineError` naming the
    step."""
    from ..core.explorer import Explorer, MoveError

    if timeline.meta.get("stages") or timeline.meta.get("resources"):
        raise TimelineError("replay needs every step marked: profile without stages= or resources=")
    ex = Explorer(design)
    rows = timeline.frame[(timeline.frame.block == block) & (timeline.frame.tile < ex.run.num_tiles)]
    _check_trips(rows, ex, block)
    firsts = rows.groupby("task").warp.min()
    mine = rows[rows.warp == rows.task.map(firsts)].sort_values(["end_ns", "start_ns"])
    pending = [(int(r.end_ns), r.task, (r.section, int(r.index), None if pd.isna(r.iteration) else int(r.iteration),
                                       int(r.tile))) for r in mine.itertuples()]
    while pending:
        window = [i for i, (end, _t, _w) in enumerate(pending) if end <= pending[0][0] + tolerance_ns]
        for i in window:
            try:
                _take(ex, pending[i][1], pending[i][2])
            except MoveError:
                continue
            pending.pop(i)
            break
        else:
            end, task, where = pending[0]
            raise TimelineError(f"block {block}: {task}'s measured step {where[0]}[{where[1]}] (trip {where[2]}, "
                                f"tile {where[3]}) ending at {end} ns is not one the checker lets run then "
                                f"({ex.status}): the measured order is not a path of the design as checked")
    return ex


def _check_trips(rows: pd.DataFrame, ex: Any, block: int) -> None:
    """A clear error when the block ran more loop trips per work tile than the checker models."""
    from ..core.replay import views_of

    entries = views_of(ex._machine).entries
    for ti, task in enumerate(ex.tasks):
        modelled = {e.tile: e.iteration for e in entries[ti] if e.iteration is not None}
        mine = rows[(rows.task == task) & rows.iteration.notna()]
        if modelled and len(mine):
            ran = int(mine.iteration.max()) + 1
            if ran > max(modelled.values()) + 1:
                raise TimelineError(
                    f"block {block}: {task} ran {ran} loop trips per work tile, the checker models "
                    f"{max(modelled.values()) + 1}: the run is not one of the paths it checked; to replay, "
                    f"profile a problem whose blocks run that many trips (tutorial 09: gemm_sm90 at "
                    f"1536 x 5632 x 256, K = 4 x tile_k)")


def _take(ex: Any, task: str, where: tuple[str, int, int | None, int]) -> None:
    """Move ``task`` through the checker steps of one measured schedule entry (a doubled work is two steps)."""
    moved = False
    while True:
        entry = ex.next_entry(task)
        if entry is None or (entry.section, entry.index, entry.iteration, entry.tile) != where:
            break
        ex.step(task)
        moved = True
    if not moved:
        from ..core.explorer import MoveError

        raise MoveError(f"task '{task}': its next checker step is not the measured {where}")
