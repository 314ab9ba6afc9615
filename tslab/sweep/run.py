"""``sweep()``: every point of a space through check, compile and timing, in parallel, resumable, bounded."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ..core.design import Design
from .errors import SweepError, SweepInterrupted
from .executors import Task, make_executor
from .machine import machine
from .result import SweepResult
from .space import Point, point_key, points, validate
from .stages import STAGES, bench_stage, check_and_compile
from .store import Store


class _Progress:
    """A tqdm bar (notebook or terminal) with ok/pruned/failed counts, or nothing when quiet."""

    def __init__(self, total: int, label: str, quiet: bool) -> None:
        self.counts = {"ok": 0, "pruned": 0, "failed": 0}
        self.bar = None
        if not quiet:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=f"sweep {label}", unit="pt", dynamic_ncols=True)

    def update(self, status: str) -> None:
        key = status if status in ("ok", "pruned") else "failed"  # compile-, run- or bench-failed
        self.counts[key] += 1
        if self.bar is not None:
            self.bar.set_postfix(self.counts, refresh=False)
            self.bar.update()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _arch(arch: str | None, design: Design) -> str:
    """The arch given, else this GPU's, else sm_90a; a kernel for other archs only (a Blackwell kernel) gets its own."""
    from ..gpu.device import device
    from ..kernels import NAMES, kernel_rules

    if arch:
        return arch
    info = device()
    here = info.arch if info is not None else "sm_90a"
    rules = kernel_rules(design.kernel) if design.kernel in NAMES else None
    archs = rules.archs if rules is not None else None
    return archs[0] if archs and here not in archs else here


def sweep(design: Design | str, space: Mapping[str, Sequence[Any]], *,
          where: Callable[[Point], bool] | None = None, measure: str = "bench", executor: Any = None,
          store: str | Path | None = None, budget_s: float | None = None, arch: str | None = None,
          max_states: int = 1_000_000, quiet: bool = False,
          on_row: Callable[[dict[str, Any]], None] | None = None, inputs: Any = None, reference: Any = None,
          outputs: Any = None, baseline: Any = None) -> SweepResult:
    """Sweep ``design`` over ``space`` and return one row per point.

    ``space``: ``{name: [values]}`` over kernel params, ``"resource.field"`` pipeline fields, or a captured
    kernel's knobs; its cartesian product is filtered by ``where(point) -> bool``. ``measure`` is the last stage:
    ``"check"`` (TS's checks prune unsafe, invalid, over-capacity and unproven points), ``"compile"`` (registers,
    spills; no GPU needed; ``arch`` defaults to this GPU's, else ``"sm_90a"``) or ``"bench"`` (run, check the
    output and time it; needs a GPU, and is refused up front without one). ``executor``: ``None`` (a pool of
    CPU-count worker processes), a number of workers, ``"serial"``, ``"ray"`` or a ``ray.init`` address.
    ``store``: a JSON-lines file each finished point is appended to; a re-run skips what it holds. ``budget_s``
    stops starting new points after that many seconds. ``on_row(row)`` is called as each point finishes.
    A captured kernel's bench needs ``inputs`` (and takes ``reference``, ``outputs``, ``baseline``) as its
    ``CompiledKernel.run`` and ``bench`` do.
    Failures are rows (their status and error); an interrupt raises :class:`SweepInterrupted`, which keeps what
    finished (``exc.result``, and the store).
    """
    started = time.monotonic()
    if isinstance(design, str):
        design = Design(design)
    if measure not in STAGES:
        raise SweepError(f"sweep: measure={measure!r} is not a stage; give one of {', '.join(map(repr, STAGES))}")
    validate(design, space)
    io = _captured_io(design, measure, inputs=inputs, reference=reference, outputs=outputs, baseline=baseline)
    arch = _arch(arch, design)
    if measure == "bench":
        from ..gpu.guards import require_gpu

        require_gpu("sweep with measure='bench' (run and time each point)")
    run = _Run(design, space, where, measure=measure, arch=arch, store=store, started=started)
    run.io = io
    run.executor = make_executor(executor)
    if design.kernel == "custom" and not design.is_captured and run.executor.name != "serial":
        raise SweepError("sweep: a design built with Design.from_tasks cannot be sent to worker processes; "
                         "pass executor='serial'")
    if _typed_into_a_cell(design) and run.executor.name != "serial":
        raise SweepError(f"sweep: captured kernel '{design.kernel}' was typed into a notebook cell, which worker "
                         "processes cannot open again; pass executor='serial' (its GPU runs still go to the GPU "
                         "worker), or capture it from a file with tslab.capture_file")
    return run.execute(budget_s=budget_s, max_states=max_states, quiet=quiet, on_row=on_row)


def _typed_into_a_cell(design: Design) -> bool:
    """A captured kernel whose host function exists only in this process (a notebook cell's, a lambda's)."""
    from ..capture.by_value import only_here

    source = design.source if design.is_captured else None
    return source is not None and source.file is None and only_here(source.host_fn)


def _captured_io(design: Design, measure: str, **given: Any) -> dict[str, Any] | None:
    """How the GPU worker calls and checks a captured kernel (its functions by name, or copied when typed into a
    cell), refused here when wrong."""
    if not any(v is not None for v in given.values()):
        if design.is_captured and measure == "bench":
            raise SweepError(f"sweep of captured kernel '{design.kernel}' with measure='bench': pass inputs= (a "
                             "function returning the host function's arguments), and reference=, "
                             "outputs= and baseline= to check and compare it")
        return None
    if not design.is_captured or measure != "bench":
        raise SweepError("sweep: inputs=, reference=, outputs= and baseline= are for measure='bench' of a captured "
                         "kernel (catalog kernels bring their own)")
    from ..gpu.captured import callable_ref

    refs = {k: callable_ref(v, k) for k, v in given.items() if v is not None and k != "outputs"}
    return {**refs, "outputs": given["outputs"]}


class _Run:
    """One sweep's state: the points still to do, the rows so far, the store and the executor."""

    executor: Any
    io: dict[str, Any] | None = None

    def __init__(self, design: Design, space: Mapping[str, Sequence[Any]], where: Callable[[Point], bool] | None,
                 *, measure: str, arch: str, store: str | Path | None, started: float) -> None:
        self.design, self.measure, self.arch, self.store, self.started = design, measure, arch, store, started
        self.names = list(space)
        self.space_size = len(points(space))
        selected = points(space, where)
        header = {"tslab_sweep": 1, "design": design.to_dict(), "measure": measure, "arch": arch,
                  "machine": machine()}
        self.opened = Store(store, header) if store is not None else None
        done = self.opened.done if self.opened is not None else {}
        self.order = [point_key(p) for p in selected]
        self.rows = {k: {**rec["point"], **rec["row"]} for k in self.order if (rec := done.get(k))}
        self.selected = len(selected)
        self.todo = {point_key(p): p for p in selected if point_key(p) not in done}
        self.started_points = 0
        self.design_json = design.to_json(indent=None)

    def tasks(self, budget_s: float | None, max_states: int) -> Iterator[Task]:
        from ..gpu.device import smem_capacity

        capacity = smem_capacity()
        for key, point in self.todo.items():
            if self._spent(budget_s):
                return
            self.started_points += 1
            yield key, (self.design_json, point, self.measure, self.arch, capacity, max_states)

    def finish(self, key: str, row: dict[str, Any]) -> dict[str, Any]:
        point = self.todo[key]
        if self.opened is not None:
            self.opened.append(key, point, row)
        full = {**point, **row}
        self.rows[key] = full
        return full

    def result(self) -> SweepResult:
        rows = [self.rows[k] for k in self.order if k in self.rows]  # in the space's order, however they finished
        return SweepResult(self.design, self.names, rows, measure=self.measure,
                           skipped=self.selected - len(self.todo), not_started=len(self.todo) - self.started_points,
                           seconds=time.monotonic() - self.started)

    def _spent(self, budget_s: float | None) -> bool:
        return budget_s is not None and time.monotonic() - self.started > budget_s

    def _gpu_tasks(self, survivors: dict[str, Any], budget_s: float | None) -> Iterator[Task]:
        """Timing tasks of the points that passed the CPU stages; the budget stops these too (a point left out
        is not stored, so a re-run times it)."""
        for number, key in enumerate(survivors):
            if self._spent(budget_s):
                self.started_points -= len(survivors) - number
                return
            yield key, (self.design_json, self.todo[key], 5, self.io)

    def _stages(self, budget_s: float | None, max_states: int) -> Iterator[tuple[str, dict[str, Any]]]:
        survivors: dict[str, dict[str, Any]] = {}
        for key, row in self.executor.run(check_and_compile, self.tasks(budget_s, max_states)):
            if self.measure == "bench" and row["status"] == "ok":
                survivors[key] = row
            else:
                yield key, row
        for key, row in self.executor.run(bench_stage, self._gpu_tasks(survivors, budget_s), gpu=True):
            yield key, {**survivors[key], **row}

    def execute(self, *, budget_s: float | None, max_states: int, quiet: bool,
                on_row: Callable[[dict[str, Any]], None] | None) -> SweepResult:
        if not quiet:
            print(f"sweep {self.design.kernel}: {self.selected} points after where ({self.space_size} in the "
                  f"space), {self.selected - len(self.todo)} already in the store, measure={self.measure}, "
                  f"executor={self.executor.name}")
        progress = _Progress(len(self.todo), self.design.kernel, quiet)
        try:
            for key, row in self._stages(budget_s, max_states):
                full = self.finish(key, row)
                progress.update(row["status"])
                if on_row is not None:
                    on_row(full)
        except (KeyboardInterrupt, BrokenProcessPool) as exc:
            raise _interrupted(exc, self.result(), self.store) from None
        except Exception as exc:
            if type(exc).__name__ in ("WorkerCrashedError", "NodeDiedError") and \
                    type(exc).__module__.startswith("ray"):
                raise _interrupted(exc, self.result(), self.store) from None
            raise
        finally:
            progress.close()
            self.executor.close()
        out = self.result()
        if not quiet:
            print(out.summary())
            metric = {"bench": "median_us", "compile": "registers"}.get(self.measure, "smem_bytes")
            best = out.best(metric) if metric in out.table else None
            if best is not None:
                point = json.dumps({n: best[n] for n in self.names}, default=_plain)
                print(f"best by {metric}: {point} ({best[metric]})")
        return out


def _plain(value: Any) -> Any:
    """numpy scalars (a DataFrame's cells) as Python numbers, for JSON."""
    return value.item() if hasattr(value, "item") else str(value)


def _interrupted(exc: BaseException, partial: SweepResult, store: str | Path | None) -> SweepInterrupted:
    cause = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"a worker process died ({type(exc).__name__})"
    finished = len(partial.table)
    how = (f"every finished point is in '{store}': run the same sweep again with store='{store}' to resume "
           "(finished points are skipped)" if store is not None else
           "pass store='sweep.jsonl' to keep finished points across runs; exc.result holds what finished")
    return SweepInterrupted(f"sweep {cause} after {finished} points; {how}", finished, partial)


__all__ = ["sweep"]
