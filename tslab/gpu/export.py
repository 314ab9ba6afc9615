"""``export(design, path, arch)``: an importable Python package holding the compiled kernel; for a
:class:`~tslab.core.dispatch.Dispatch` several compiled designs of one kernel and the rule that picks one per call
(a GEMM's by M, an attention's by causal and seqlen_k); for a kernel whose rules name ``variants`` (attention's
``causal``) the design compiled once per value, picked per call.

The package needs only nvidia-cutlass-dsl's runtime and apache-tvm-ffi (no tslab, no recompilation): each object is
compiled with CuTe DSL's TVM FFI, loaded once per process with ``cutlass.cute.runtime.load_module`` and called with
torch tensors on the caller's stream; its code is :mod:`tslab.exported`'s module for its kind, copied verbatim, and
what that code reads (the designs, their rules and verdicts, the self-test's problems) is ``design.json``. Kernels
that compile with runtime extents are exported once for every shape they accept (unless ``shape=`` asks for
one); their loop trip counts are then runtime values, so the design is checked at every trip count from 1 to
``2 * stages + 1`` (a pipeline's phase pattern repeats every ``2 * stages`` trips) and VERDICT.txt says so.
Every design of a dispatch, and every variant, is checked the same way before anything is written.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import keyword
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import exported
from ..compiling.targets import Target, require_arch, resolve, shape_rules
from ..core.design import Design
from ..core.dispatch import Dispatch, bound_fields, bounds_of, picked_by
from .errors import GpuError, UnsafeDesignError
from .guards import DEFAULT_SMS, checked_target, verified
from .worker import run_job


@dataclasses.dataclass(frozen=True)
class _Checked:
    """One design ready to compile: its GPU target and what its checks found."""

    design: Any
    target: Target
    verdict: Any
    trip_checks: list[tuple[int, str]]

    def record(self) -> dict[str, Any]:
        """What design.json keeps of the design and its checks."""
        return {
            "design": self.design.to_dict(),
            # What was applied at TaskManager construction: the kernel module's own schedules and the design's edits.
            "edits": {"schedules": self.target.schedules, "alias_groups": self.target.alias_groups},
            "verdict": self.verdict.status,
            "trip_counts_checked": [[count, status] for count, status in self.trip_checks],
            "checked_beyond_ts": _kernel_rules_checked(self.target),
        }


def export(
    design: Design | Dispatch,
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
    progress: bool = False,
) -> Path:
    """Write the package ``path`` (its folder name is the import name); returns the folder.

    ``design``: a Design, or a Dispatch (each design compiled with runtime extents into its own object; the package
    picks one per launch: a GEMM's by M, an attention's by causal and seqlen_k). A design of a kernel with
    ``variants`` (attention_sm90: ``causal``) is compiled once per value with runtime extents, each into its own
    object, and a call picks one by its argument.
    ``shape``: None compiles with runtime extents, for every shape the kernel accepts; a shape exports for that one
    shape. ``sms`` sizes the persistent grid baked into the kernel (default: the arch's usual count). Nothing is
    written unless every design passes its checks. ``progress``: a bar (notebook or terminal) over the objects as
    they compile, where there are several (a dispatch, or one object per value of a variant); the CLI shows it on
    a terminal.
    """
    _require_exportable(design, path)
    dispatch = design if isinstance(design, Dispatch) else None
    require_arch(arch, f"export of '{getattr(design, 'kernel', design)}'")
    out = Path(path)
    name = out.name
    if not name.isidentifier() or keyword.iskeyword(name):
        raise GpuError(
            f"export: folder name {name!r} is not a Python identifier; name the folder like a module, "
            "e.g. 'tma_copy_sm90'"
        )
    if out.exists() and not overwrite:
        raise GpuError(f"export: {out} exists; pass overwrite=True (CLI: --force) or choose another folder")
    if dispatch is not None and shape is not None:
        raise GpuError(f"export of the dispatch of '{dispatch.kernel}': shape={tuple(shape)} asks for one shape, "
                       f"but a dispatch picks its design by {picked_by(dispatch.keys)} at each launch and compiles "
                       "for every shape; drop shape= (CLI: --shape), or export one design for one shape")
    variants = _variants(design) if dispatch is None else None
    if variants is not None and shape is not None:
        raise GpuError(f"export of '{design.kernel}': shape={tuple(shape)} asks for one shape, but its package is "
                       f"compiled once for every problem (runtime extents) with one design per value of "
                       f"{variants[0]}; drop shape= (CLI: --shape)")
    if dispatch is not None:
        checked = [_checked_rule(dispatch, i, dtype, launch, force) for i in range(len(dispatch.designs))]
    elif variants is not None:
        checked = [_checked_variant(design, variants[0], value, dtype, launch, force) for value in variants[1]]
    else:
        checked = [_checked(design, shape, dtype, launch, force)]
    kind = checked[0].target.rules.package
    if kind not in exported.KINDS:
        raise GpuError(f"export of '{checked[0].target.kernel}': its package kind {kind!r} has no package code yet "
                       f"(tslab writes {', '.join(exported.KINDS)} packages); compile it with tslab.gpu.compile "
                       "meanwhile")
    sms = sms or DEFAULT_SMS.get(arch, 132)
    # One object per design: kernel.o for a single design, kernel_0.o, kernel_1.o ... for a dispatch or variants.
    prefixes = ["kernel"] if dispatch is None and variants is None else [f"kernel_{i}" for i in range(len(checked))]
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    bar = _progress_bar(len(checked), f"export {checked[0].target.kernel}", progress and len(checked) > 1)
    try:
        jobs = []
        for c, prefix in zip(checked, prefixes, strict=True):
            jobs.append(run_job("tslab.compiling.compile:export_job",
                                {"target": c.target.to_dict(), "arch": arch, "sms": sms,
                                 "directory": str(out.resolve()), "prefix": prefix},
                                timeout=timeout, what=f"export of '{c.target.kernel}' for {arch}"))
            if bar is not None:
                bar.update()
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    if dispatch is not None:
        _write_dispatch(out, dispatch, checked, jobs, prefixes, arch, sms)
    elif variants is not None:
        _write_variants(out, variants[0], checked, jobs, prefixes, arch, sms)
    else:
        _write_single(out, checked[0], jobs[0], arch, sms)
    return out


def _progress_bar(total: int, label: str, shown: bool) -> Any:
    """A tqdm bar over ``total`` compiled objects (a notebook's or a terminal's), or None when not ``shown``."""
    if not shown:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="object", dynamic_ncols=True)


def _require_exportable(design: Any, path: str | Path) -> None:
    """Refuse anything but a Design or a Dispatch, saying what to pass instead."""
    if isinstance(design, (Design, Dispatch)):
        return
    shown = " ".join(repr(design).split())
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    what = f"design={shown} is a {type(design).__name__}, not a tslab.Design or tslab.Dispatch"
    if isinstance(design, (list, tuple)):
        fix = ("to export several designs of one GEMM in one package, pass a tslab.Dispatch of them: "
               "tslab.Dispatch([(max_m, design_a), (None, design_b)]) serves M <= max_m with design_a and every "
               "larger M with design_b; to export each on its own, call export once per design and folder")
    elif isinstance(design, str):
        fix = (f"pass a design, e.g. tslab.Design({design!r}) for a catalog kernel, or tslab.Design.from_json(text) "
               "for a saved one")
    else:
        fix = "pass a tslab.Design (tslab.Design(name, params), tslab.capture(...)) or a tslab.Dispatch"
    raise GpuError(f"export to '{Path(path).name}': {what}; {fix}")


def _checked(design: Any, shape: tuple[int, ...] | None, dtype: str | None, launch: dict[str, Any] | None,
             force: bool) -> _Checked:
    """``design`` resolved for the GPU and checked as an export checks it; raises unless SAFE (or ``force``)."""
    target = resolve(design, shape, dtype, launch)
    if shape is None and target.rules.dynamic:
        target = dataclasses.replace(target, dynamic=True)
    verdict = verified(design, force)
    target = checked_target(target, verdict)
    trip_checks = _trip_count_checks(design, force) if target.dynamic else []
    return _Checked(design, target, verdict, trip_checks)


def _checked_rule(dispatch: Dispatch, index: int, dtype: str | None, launch: dict[str, Any] | None,
                  force: bool) -> _Checked:
    """Design ``index`` of ``dispatch`` checked as a single export is; a refusal names the range it serves."""
    try:
        return _checked(dispatch.designs[index], None, dtype, launch, force)
    except UnsafeDesignError as exc:
        raise UnsafeDesignError(f"export of the dispatch of '{dispatch.kernel}': design {index} (for "
                                f"{dispatch.spans()[index]}) is refused, so nothing was written: {exc}",
                                exc.verdict) from None


def _variants(design: Design) -> tuple[str, tuple] | None:
    """The design param whose values a catalog kernel's package picks per call (``RULES.variants``, attention's
    ``causal``) and those values, or None."""
    from ..kernels import NAMES, kernel_rules

    rules = kernel_rules(design.kernel) if design.kernel in NAMES else None
    return None if rules is None else rules.variants


def _checked_variant(design: Design, param: str, value: Any, dtype: str | None, launch: dict[str, Any] | None,
                     force: bool) -> _Checked:
    """``design`` with ``param=value`` checked as a single export is; a refusal names the variant."""
    try:
        return _checked(design.with_params(**{param: value}), None, dtype, launch, force)
    except UnsafeDesignError as exc:
        why = str(exc).removeprefix(f"export of '{design.kernel}': ")
        raise UnsafeDesignError(f"export of '{design.kernel}': its package holds one design per value of {param}, "
                                f"and the one with {param}={value!r} is refused, so nothing was written: {why}",
                                exc.verdict) from None


def _head(target: Target, arch: str) -> dict[str, Any]:
    return {"kernel": target.kernel, "kind": target.rules.package, "arch": arch, "dynamic": target.dynamic,
            "shape": None if target.dynamic else list(target.shape)}


def _write_single(out: Path, c: _Checked, job: dict[str, Any], arch: str, sms: int) -> None:
    """design.json, VERDICT.txt and the package's code, for a package of one design."""
    target = c.target
    meta = {
        **_head(target, arch),
        "shape_rules": shape_rules(target),
        # How each tensor argument is marked for a runtime-shape kernel (mode -> promised divisibility).
        "tensor_divisibility": job["tensor_divisibility"],
        "dtype": target.dtype,
        "sms": sms,
        "launch": target.launch,
        **c.record(),
    }
    examples = [target.shape] if not target.dynamic else _examples(target)
    rules = meta["shape_rules"]["text"] if target.dynamic else f"{tuple(target.shape)} only"
    about = {"rules": rules, **({"designs": "one, for every M"} if target.rules.package == "gemm" else {})}
    meta.update(_package_data(about=about, examples=examples))
    (out / "design.json").write_text(json.dumps(meta, indent=2) + "\n")
    (out / "VERDICT.txt").write_text(_verdict_text(c.verdict, c.trip_checks, meta["checked_beyond_ts"]) + "\n")
    _write_code(out, target.rules.package)


def _write_dispatch(out: Path, dispatch: Dispatch, checked: list[_Checked], jobs: list[dict[str, Any]],
                    prefixes: list[str], arch: str, sms: int) -> None:
    """The same files for a dispatch: one design.json entry and one VERDICT.txt section per design."""
    first = checked[0].target
    entries = _entries(checked, jobs, prefixes)
    variant = dispatch.variant
    by = picked_by([*([variant] if variant else []), *dispatch.keys])
    if first.rules.package == "attention":
        values = [None] if variant is None else list(dict.fromkeys(d.params[variant] for d in dispatch.designs))
        sides = _sides(dispatch, dispatch.key, 1, 1)
        calls = [({} if variant is None else {variant: value}, x) for value in values for x in sides]
        examples = [*ATTENTION_EXAMPLES, *((1, x, x, 2, 2) for x in sides if x > 1)]
        about: dict[str, Any] = {"head_dims": list(first.rules.choices.get("head_dim", ()))}
        picks = [(call[variant], x, dispatch.pick((1, x, x, 1, 1), **call)[0]) for call, x in calls]
    else:
        rule = shape_rules(first)
        ragged = _examples(first)[1]
        # each extent a rule bounds on both sides of each bound (the next range starts one multiple of it above)
        grid = [_sides(dispatch, name, rule["multiple_of"][place], 1 if name == "M" else ragged[place])
                for place, name in enumerate(("M", "N", "K"))]
        picks = [(list(shape), dispatch.pick(shape)[0]) for shape in itertools.product(*grid)]
        examples = [(m, *ragged[1:]) for m in grid[0]] + [tuple(first.shape)]
        examples += [corner for bound, _ in dispatch.rules for corner in _corners(bounds_of(bound, "M"), ragged, rule)]
        examples = list(dict.fromkeys(examples))
        about = {}
    which = dispatch.rule_designs
    rules = [{**bound_fields(bound, dispatch.key), "design": i,
              **({variant: design.params[variant]} if variant else {})}
             for i, (bound, design) in zip(which, dispatch.rules, strict=True)]
    choice = {"dispatch": {"key": dispatch.key, **({"variant": variant} if variant else {}), "rules": rules}}
    designs = "; ".join(f"{span} design {i}" for i, span in zip(which, dispatch.ranges(), strict=True))
    call = (f"design_for({variant}, {dispatch.key})" if variant
            else f"design_for({', '.join(k.lower() for k in dispatch.keys)})")
    about |= {"rules": " or ".join(dict.fromkeys(e["shape_rules"]["text"] for e in entries)),
              "designs": f"{len(entries)}, one per launch by {by}: {designs} ({call})"}
    package = _package_data(about=about, examples=examples, picks=picks)
    _write_several(out, checked, entries, arch, sms, choice, package, dispatch.spans(), dispatch.text())
    _write_code(out, first.rules.package)


def _sides(dispatch: Dispatch, name: str, step: int, start: int) -> list[int]:
    """Extent ``name`` at ``start`` and on both sides of each bound the rules give it (the bound, and one ``step``
    above: the next range's first valid extent)."""
    bounds = {bounds_of(bound, dispatch.key).get(name) for bound, _ in dispatch.rules} - {None}
    return sorted({start, *(x for bound in bounds for x in (bound, bound + step))})


def _corners(limits: dict[str, Any], ragged: tuple[int, ...], rule: dict[str, Any]) -> list[tuple[int, ...]]:
    """For a GEMM rule that bounds N or K: the problem at its corner (each bound, ragged elsewhere), and the one just
    past it in each of those extents; none for a rule that bounds M alone."""
    if set(limits) == {"M"}:
        return []
    corner = [limits.get(name) or ragged[place] for place, name in enumerate(("M", "N", "K"))]
    past = [[*corner[:place], corner[place] + rule["multiple_of"][place], *corner[place + 1:]]
            for place, name in enumerate(("M", "N", "K")) if name != "M" and limits.get(name) is not None]
    return [tuple(corner), *(tuple(p) for p in past)]


def _write_variants(out: Path, param: str, checked: list[_Checked], jobs: list[dict[str, Any]], prefixes: list[str],
                    arch: str, sms: int) -> None:
    """The same files for one design per value of ``param`` (attention's ``causal``), picked by each call."""
    first = checked[0].target
    entries = _entries(checked, jobs, prefixes)
    values = [c.design.params[param] for c in checked]
    labels = [f"{param}={value!r}" for value in values]
    preface = (f"{first.kernel}: {len(entries)} designs, one per value of {param} ({', '.join(labels)}), each "
               f"compiled into its own object; a call picks one by its {param} argument.")
    designs = ", ".join(f"{label} design {i} ({entry['object']})"
                        for i, (label, entry) in enumerate(zip(labels, entries, strict=True)))
    about = {"rules": entries[0]["shape_rules"]["text"],
             "designs": f"{len(entries)}, one per call by {param}: {designs} (design_for({param}))",
             "head_dims": list(first.rules.choices.get("head_dim", ()))}
    choice = {"variants": {"param": param, "values": values}}
    package = _package_data(about=about, examples=ATTENTION_EXAMPLES)
    _write_several(out, checked, entries, arch, sms, choice, package, labels, preface)
    _write_code(out, first.rules.package)


#: Problems an attention package's own test runs: (batch, seqlen_q, seqlen_k, heads, heads_kv).
ATTENTION_EXAMPLES = [(1, 128, 128, 2, 2), (2, 1000, 777, 4, 1), (1, 1, 300, 8, 2), (3, 77, 300, 8, 8),
                      (2, 513, 129, 8, 2)]


def _package_data(about: dict[str, Any], examples: list[tuple[int, ...]],
                  picks: list[tuple[Any, ...]] | None = None) -> dict[str, Any]:
    """What design.json holds for the package's code beside the designs: ``about`` (its docstring's shapes and
    designs, in words), ``self_test`` (the problems test_kernel.py runs, and for a dispatch which design each call
    picks: ``(m, design)`` for a GEMM, ``(causal, seqlen_k, design)`` for an attention) and ``runtime`` (the
    versions it was exported with, for the fix when one is missing)."""
    test: dict[str, Any] = {"examples": [list(shape) for shape in examples]}
    if picks is not None:
        test["picks"] = [list(pick) for pick in picks]
    return {"about": about, "self_test": test,
            "runtime": {name: metadata.version(name) for name in ("nvidia-cutlass-dsl", "apache-tvm-ffi")}}


def _write_code(out: Path, kind: str) -> None:
    """The package's code: :mod:`tslab.exported`'s module for ``kind`` as ``__init__.py``, the runtime every kind
    shares, and the kind's self-test as ``test_kernel.py``, each copied verbatim."""
    code = Path(exported.__file__).resolve().parent
    for source, name in ((f"{kind}.py", "__init__.py"), ("_runtime.py", "_runtime.py"),
                         (f"selftest_{kind}.py", "test_kernel.py")):
        shutil.copyfile(code / source, out / name)


def _entries(checked: list[_Checked], jobs: list[dict[str, Any]], prefixes: list[str]) -> list[dict[str, Any]]:
    """design.json's entry for each design of a package of several: its checks, shape rule, tensor marks, object."""
    return [{**c.record(), "shape_rules": shape_rules(c.target), "tensor_divisibility": job["tensor_divisibility"],
             "object": f"{prefix}.o", "prefix": prefix}
            for c, job, prefix in zip(checked, jobs, prefixes, strict=True)]


def _write_several(out: Path, checked: list[_Checked], entries: list[dict[str, Any]], arch: str, sms: int,
                   choice: dict[str, Any], package: dict[str, Any], headings: list[str], preface: str) -> None:
    """design.json and VERDICT.txt of a package of several designs: ``choice`` is how a launch picks one
    (design.json's "dispatch" or "variants"), ``package`` what its code reads beside the designs; VERDICT.txt has
    ``preface``, then each verdict under its heading."""
    first = checked[0].target
    meta = {**_head(first, arch), "dtype": first.dtype, "sms": sms, "launch": first.launch, **choice,
            "designs": entries, **package}
    (out / "design.json").write_text(json.dumps(meta, indent=2) + "\n")
    sections = [preface]
    for i, (heading, c, entry) in enumerate(zip(headings, checked, entries, strict=True)):
        sections.append(f"== {heading}: design {i} ({entry['object']}) ==\n"
                        + _verdict_text(c.verdict, c.trip_checks, entry["checked_beyond_ts"]))
    (out / "VERDICT.txt").write_text("\n\n".join(sections) + "\n")


def _trip_count_checks(design: Any, force: bool) -> list[tuple[int, str]]:
    """The design checked at every loop trip count 1 .. 2 * stages + 1; raises unless each is SAFE (or ``force``)."""
    from ..core.check import check
    from ..kernels import kernel_rules

    rules = kernel_rules(design.kernel)
    param = rules.trip_param
    stages = design.params.get(rules.stages_param, 2)
    out = []
    for count in range(1, 2 * stages + 2):
        verdict = check(design.with_params(**{param: count}))
        if not verdict.ok and not force:
            raise UnsafeDesignError(
                f"export of '{design.kernel}': with {param}={count} the checker says {verdict.status}; the exported "
                f"kernel runs any trip count, so every one up to {2 * stages + 1} must be SAFE (force=True to export "
                "anyway)", verdict)
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
