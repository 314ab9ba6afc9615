"""``profile(design)``: what every warp of the design's kernel did on this GPU, step by step (a Timeline).

The design is checked, then compiled twice in a fresh worker (plain, and with TS's per-step markers), run once
under NVIDIA's IKET on fresh inputs (the output is checked), and both kernels are timed in turn in the same
worker, so the markers' cost comes with the timeline. Bounded: one block by default, a cap on ranges per warp,
and a marker-slot count checked before anything is compiled.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..compiling.targets import resolve
from ..errors import DesignError
from .guards import SETUP_TIMEOUT, checked_target, require_gpu_for, verified
from .iket_session import MARKER_SLOTS, ProfileError
from .profiled_tasks import task_steps
from .timeline import Timeline
from .worker import run_job

#: Ranges IKET keeps per warp by default (each takes two timestamps of the warp's buffer).
MAX_EVENTS_PER_WARP = 16_384


def profile(design: Any, *, shape: tuple[int, ...] | None = None, dtype: str | None = None, blocks: int = 1,
            stages: set[str] | None = None, resources: set[str] | None = None,
            max_events_per_warp: int = MAX_EVENTS_PER_WARP, repeats: int = 20, seed: int = 0,
            launch: dict[str, Any] | None = None, force: bool = False, timeout: float = 300.0,
            inputs: Any = None, reference: Any = None, outputs: Any = None, dynamic: bool = False) -> Timeline:
    """Profile one launch of ``design``'s kernel on this GPU; ``blocks`` blocks are kept (``1``: IKET traces one
    block, and the plain and marked kernels are timed ``repeats`` times each). ``stages`` (ScheduleStage names)
    and ``resources`` limit the steps TS marks; IKET's narrow encoding holds 30 distinct step names.
    ``dynamic=True`` compiles with runtime extents, the kernel an exported package holds, and runs it at ``shape``
    (compiled for ``shape`` alone, ptxas may drop checks the runtime extents keep: an attention K/V loop of 453
    instructions against 485 before its check left the loop).
    A captured kernel runs on ``inputs()`` (and is held to ``reference``/``outputs``), as its ``run`` does.
    Without a GPU: :class:`~tslab.gpu.NoGpuError`."""
    if not isinstance(blocks, int) or isinstance(blocks, bool) or blocks < 1:
        raise DesignError("input", "profile", f"blocks={blocks!r} is not a positive int",
                          "pass blocks=1 (one block, timed too) or a few more")
    if not isinstance(dynamic, bool):
        raise DesignError("input", "profile", f"dynamic={dynamic!r} is not a bool",
                          "pass dynamic=True (runtime extents, as a package) or False (compiled for the shape)")
    if getattr(design, "is_captured", False):
        if dynamic:
            raise DesignError("input", "profile", "dynamic=True for a captured kernel: it is compiled for the "
                              "tensors its inputs() returns", "leave dynamic out")
        return _profile_captured(design, inputs=inputs, reference=reference, outputs=outputs, blocks=blocks,
                                 stages=stages, resources=resources, max_events_per_warp=max_events_per_warp,
                                 repeats=repeats, force=force, timeout=timeout)
    job, steps, target = profile_job(design, shape=shape, dtype=dtype, blocks=blocks, stages=stages,
                                     resources=resources, max_events_per_warp=max_events_per_warp, repeats=repeats,
                                     seed=seed, launch=launch, force=force, timeout=timeout, dynamic=dynamic)
    timeline = Timeline.from_job(design.kernel, steps, job)
    timeline.meta.update(shape=list(target.shape), dtype=target.dtype, stages=sorted(stages) if stages else None,
                         resources=sorted(resources) if resources else None, dynamic=target.dynamic)
    return timeline


def profile_job(design: Any, *, shape: tuple[int, ...] | None, dtype: str | None, blocks: int,
                stages: set[str] | None, resources: set[str] | None, max_events_per_warp: int, repeats: int,
                seed: int, launch: dict[str, Any] | None, force: bool, timeout: float,
                dynamic: bool = False) -> tuple[dict, list, Any]:
    """The profile job's plain result (what :func:`profile` makes a Timeline of), the design's tasks as the
    timeline reads them, and the target run."""
    target = profiled_target(design, shape, dtype, launch, dynamic)
    require_gpu_for(target, f"profile of '{design.kernel}'")
    verdict = verified(design, force)
    target = checked_target(target, verdict)
    steps = task_steps(design.lower().tasks, stages, resources)
    _check_slots(design.kernel, steps, stages, resources)
    job = run_job("tslab.gpu.profile_jobs:profile_job",
                  {"target": target.to_dict(), "blocks": blocks, "stages": sorted(stages) if stages else None,
                   "resources": sorted(resources) if resources else None, "minimal": minimal_step(steps),
                   "max_ts_per_warp": 2 * max_events_per_warp, "repeats": repeats, "seed": seed,
                   "timeout": timeout},
                  timeout=SETUP_TIMEOUT, what=f"profile of '{design.kernel}'",
                  env={"CUTE_DSL_DISABLE_FILE_CACHING": "1"}, error=ProfileError)
    _check_buffer(job, max_events_per_warp)
    return job, steps, target


def profiled_target(design: Any, shape: tuple[int, ...] | None, dtype: str | None, launch: dict[str, Any] | None,
                    dynamic: bool) -> Any:
    """The target a profile compiles and runs: the design at ``shape``, with runtime extents when ``dynamic``."""
    target = resolve(design, shape, dtype, launch)
    return dataclasses.replace(target, dynamic=True) if dynamic else target


def _profile_captured(design: Any, *, inputs: Any, reference: Any, outputs: Any, blocks: int, stages: Any,
                      resources: Any, max_events_per_warp: int, repeats: int, force: bool,
                      timeout: float) -> Timeline:
    """A captured design profiled on the user's inputs, built in the worker as its ``run`` builds it."""
    from .captured import prepared

    verdict = verified(design, force)
    job_args = prepared(design, verdict.ok, inputs, reference, outputs, "profile")
    steps = task_steps(design.lower().tasks, stages, resources)
    _check_slots(design.kernel, steps, stages, resources)
    job = run_job("tslab.gpu.captured_jobs:profile_job",
                  {**job_args, "blocks": blocks, "stages": sorted(stages) if stages else None,
                   "resources": sorted(resources) if resources else None, "minimal": minimal_step(steps),
                   "max_ts_per_warp": 2 * max_events_per_warp, "repeats": repeats, "timeout": timeout},
                  timeout=SETUP_TIMEOUT, what=f"profile of captured kernel '{design.kernel}'",
                  env={"CUTE_DSL_DISABLE_FILE_CACHING": "1"}, error=ProfileError)
    _check_buffer(job, max_events_per_warp)
    timeline = Timeline.from_job(design.kernel, steps, job)
    timeline.meta.update(stages=sorted(stages) if stages else None, resources=sorted(resources) if resources else None)
    return timeline


def minimal_step(steps: list[Any]) -> list[str]:
    """``[resource, stage]`` of the step that runs least often per work tile: the one marker of the kernel the
    markers' cost is measured against (IKET's guide: compare with a minimal instrumentation)."""
    counts: dict[tuple[str, str], int] = {}
    for t in steps:
        for s in t.tile(1):
            key = (s["resource"], s["stage"])
            counts[key] = counts.get(key, 0) + 1
    return list(min(counts, key=lambda k: (counts[k], k)))


def marked_names(steps: list[Any]) -> set[str]:
    """The distinct range names TS emits for these tasks: one marker slot each."""
    return {f"{s['resource']}_{s['stage']}" for t in steps for s in t.tile(2)}


def _check_slots(kernel: str, steps: list[Any], stages: Any, resources: Any) -> None:
    names = marked_names(steps)
    if len(names) > MARKER_SLOTS:
        raise DesignError("input", f"profile of '{kernel}'",
                          f"{len(names)} distinct steps would be marked, more than the {MARKER_SLOTS} that IKET's "
                          "narrow event encoding holds (a wider one costs more per event)",
                          "mark fewer: stages={'ConsumerWait', 'ProducerAcquire', 'ConsumerWork', 'ProducerWork'} "
                          "or resources={...} (the names in verdict.schedule)")


def _check_buffer(job: dict[str, Any], max_events: int) -> None:
    counts: dict[tuple[int, int], int] = {}
    for block, warp, *_ in job["ranges"]:
        counts[(block, warp)] = counts.get((block, warp), 0) + 1
    full = [key for key, n in counts.items() if n >= max_events]
    if full:
        raise ProfileError(f"profile: IKET's buffer filled ({max_events} ranges per warp) in {len(full)} warp(s), so "
                           "the timeline would stop early; pass max_events_per_warp= higher, a smaller shape, or "
                           "stages=/resources= to mark fewer steps")
