"""``export(design, path, arch)``: an importable Python package holding the compiled kernel.

The package needs only nvidia-cutlass-dsl's runtime (no tslab, no recompilation): it loads the exported
object with ``cutlass.cute.runtime.load_module`` and checks arch, shapes and dtypes before each launch. Kernels
that compile with runtime extents are exported once for every shape they accept (unless ``shape=`` asks for
one); their loop trip counts are then runtime values, so the design is checked at every trip count from 1 to
``2 * stages + 1`` (a pipeline's phase pattern repeats every ``2 * stages`` trips) and VERDICT.txt says so.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import shutil
from pathlib import Path
from typing import Any

from ..build import templates
from ..build.targets import require_arch, resolve, shape_rules
from .errors import GpuError, UnsafeDesignError
from .guards import DEFAULT_SMS, checked_target, verified
from .worker import run_job


def export(
    design: Any,
    path: str | Path,
    arch: str = "sm_90a",
    *,
    shape: tuple[int, ...] | None = None,
    dtype: str | None = None,
    sms: int | None = None,
    launch: dict[str, Any] | None = None,
    force: bool = False,
    overwrite: bool = False,
    timeout: float = 600.0,
) -> Path:
    """Write the package ``path`` (its folder name is the import name); returns the folder.

    ``shape``: None compiles with runtime extents, for every shape the kernel accepts; a shape exports for
    that one shape. ``sms`` sizes the persistent grid baked into the kernel (default: the arch's usual count).
    """
    require_arch(arch, f"export of '{getattr(design, 'kernel', design)}'")
    out = Path(path)
    name = out.name
    if not name.isidentifier() or keyword.iskeyword(name):
        raise GpuError(
            f"export: folder name {name!r} is not a Python identifier; name the folder like a module, "
            "e.g. 'tma_copy_sm90'"
        )
    if out.exists():
        if not overwrite:
            raise GpuError(
                f"export: {out} exists; pass overwrite=True (CLI: --force) or choose another folder"
            )
        shutil.rmtree(out)
    target = resolve(design, shape, dtype, launch)
    if shape is None and target.rules.dynamic:
        target = dataclasses.replace(target, dynamic=True)
    verdict = verified(design, force)
    target = checked_target(target, verdict)
    trip_checks = _trip_count_checks(design, force) if target.dynamic else []
    sms = sms or DEFAULT_SMS.get(arch, 132)
    out.mkdir(parents=True)
    try:
        job = run_job(
            "tslab.build.compile:export_job",
            {
                "target": target.to_dict(),
                "arch": arch,
                "sms": sms,
                "directory": str(out.resolve()),
                "prefix": "kernel",
            },
            timeout=timeout,
            what=f"export of '{target.kernel}' for {arch}",
        )
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    kind = target.rules.package
    meta = {
        "kernel": target.kernel,
        "kind": kind,
        "arch": arch,
        "dynamic": target.dynamic,
        "shape": None if target.dynamic else list(target.shape),
        "shape_rules": shape_rules(target),
        # How each tensor argument is marked for a runtime-shape kernel (mode -> promised divisibility).
        "tensor_divisibility": job["tensor_divisibility"],
        "dtype": target.dtype,
        "sms": sms,
        "launch": target.launch,
        "design": design.to_dict(),
        # What was applied at TaskManager construction: the kernel module's own schedules and the design's edits.
        "edits": {"schedules": target.schedules, "alias_groups": target.alias_groups},
        "verdict": verdict.status,
        "trip_counts_checked": [[count, status] for count, status in trip_checks],
        "checked_beyond_ts": _kernel_rules_checked(target),
    }
    (out / "design.json").write_text(json.dumps(meta, indent=2) + "\n")
    (out / "VERDICT.txt").write_text(_verdict_text(verdict, trip_checks, meta["checked_beyond_ts"]) + "\n")
    examples = [target.shape] if not target.dynamic else _examples(target)
    (out / "__init__.py").write_text(templates.package_init(
        kind, name=name, kernel=target.kernel, arch=arch, dtype=target.dtype,
        rules=meta["shape_rules"]["text"] if target.dynamic else f"{tuple(target.shape)} only",
        example=repr(examples[0])))
    (out / "test_kernel.py").write_text(templates.package_test(name, examples))
    return out


def _trip_count_checks(design: Any, force: bool) -> list[tuple[int, str]]:
    """The design checked at every loop trip count 1 .. 2 * stages + 1; raises unless each is SAFE (or ``force``)."""
    from ..core.check import check
    from ..kernels import kernel_rules

    param = kernel_rules(design.kernel).trip_param
    stages = design.params.get("stages", 2)
    out = []
    for count in range(1, 2 * stages + 2):
        verdict = check(design.with_params(**{param: count}))
        if not verdict.ok and not force:
            raise UnsafeDesignError(
                f"export of '{design.kernel}': with {param}={count} the checker says {verdict.status}; the exported "
                f"kernel runs any trip count, so every one up to {2 * stages + 1} must be SAFE (force=True to export "
                "anyway)")
        out.append((count, verdict.status))
    return out


def _kernel_rules_checked(target: Any) -> list[str]:
    """What the kernel's own rules checked beside TS (e.g. a cluster's shared stages), in sentences."""
    scope = target.rules.beyond_ts
    return [] if scope is None else scope(target.params)


def _verdict_text(verdict: Any, trip_checks: list[tuple[int, str]], beyond_ts: list[str] = ()) -> str:
    text = verdict.text()
    for sentence in beyond_ts:
        text += "\n\n" + sentence
    if trip_checks:
        counts = ", ".join(f"{count}: {status}" for count, status in trip_checks)
        text += ("\n\nThis kernel runs with runtime shapes, so its loops run a runtime number of trips. The design "
                 f"was checked at each trip count from 1 to {trip_checks[-1][0]} ({counts}); a pipeline's phase "
                 "pattern repeats every 2 x stages trips.")
    return text


def _examples(target: Any) -> list[tuple[int, ...]]:
    """Shapes the package's own test runs: the target's, and ragged ones its rules allow."""
    rules = shape_rules(target)
    ragged = tuple(low * 3 + multiple * 5 for low, multiple in zip(rules["min"], rules["multiple_of"], strict=True))
    return [tuple(target.shape), ragged]
