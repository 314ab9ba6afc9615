"""``tslab export NAME --arch sm_90a -o DIR``: the export subcommand, for the main CLI to register."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
from typing import Any

from ..errors import TslabError, cli_message

#: Catalog kernels with a dispatch measured on a GPU (``--tuned``), and the module whose ``tuned()`` gives it.
TUNED = {"gemm_sm90": "tslab.kernels.gemm_sm90_dispatch", "attention_sm90": "tslab.kernels.attention_sm90_dispatch"}


def _shape(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.lower().replace("x", ",").split(",") if v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r}: write it as 16384x16384 or 268435456") from None


def _param(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"param {text!r}: write it as name=value, e.g. stages=4")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def add_export_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``tslab export`` (the main CLI calls this on its subparser)."""
    parser.add_argument("name", help="catalog GPU kernel (gemm_sm90, attention_sm90, grid_stride_copy, tma_copy; "
                        "demo_deadlock with --force), a design or dispatch JSON file (Design.to_json(), "
                        "Dispatch.to_json()), or kernel.py::host_fn (with --arg, --knob)")
    parser.add_argument("--tuned", action="store_true",
                        help="export the kernel's dispatch measured on the H200 (gemm_sm90 by M, attention_sm90 by "
                        "causal and seqlen_k): several designs in one package, one picked per launch; --param "
                        "applies to each (e.g. --param dtype=bf16; attention's --param head_dim=64 picks its table)")
    parser.add_argument("--arch", default="sm_90a", help="GPU arch to compile for (default: sm_90a)")
    parser.add_argument(
        "-o", "--output", required=True, help="package folder to write; its name is the module name"
    )
    parser.add_argument("--shape", type=_shape, default=None,
                        help="compile for this one problem shape, e.g. 16384x16384 (default: every shape, for "
                        "kernels with runtime shapes)")
    parser.add_argument("--dtype", default=None, help="element type, e.g. float16 (default: the kernel's)")
    parser.add_argument(
        "--param",
        type=_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="design parameter, repeatable (e.g. --param stages=3)",
    )
    parser.add_argument("--launch", type=_param, action="append", default=[], metavar="NAME=VALUE",
                        help="GPU launch option, repeatable (e.g. --launch ctas_per_sm=1)")
    parser.add_argument(
        "--sms", type=int, default=None, help="multiprocessors the persistent grid is sized for"
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite DIR; export even if the check is not SAFE"
    )
    parser.add_argument("--arg", action="append", default=[], metavar="SPEC",
                        help="for a kernel.py::host_fn target: a host function argument (f16[1024,1024], stream, 128)")
    parser.add_argument("--knob", action="append", default=[], metavar="NAME=VALUE",
                        help="a captured kernel's knob, re-traced before compiling (e.g. --knob ab_stages=5)")
    from ..capture.cli import add_compile_arguments

    add_compile_arguments(parser)
    return parser


def _export_captured(args: argparse.Namespace, design: Any) -> int:
    from ..capture.cli import with_knobs
    from ..compiling.captured_export import export_captured

    path = export_captured(with_knobs(design, args.knob), args.output, arch=args.arch, force=args.force,
                           overwrite=args.force)
    print(exported(path))
    return 0


def exported(path: Any) -> str:
    """What ``tslab export`` says it wrote: the kernel, the arch, tslab.check's verdict (each design's, for a
    dispatch or a package of variants), then the package folder and its files."""
    from pathlib import Path

    folder = Path(path)
    meta = json.loads((folder / "design.json").read_text())
    verdicts = [entry["verdict"] for entry in meta.get("designs", [meta])]
    if "variants" in meta:
        param = meta["variants"]["param"]
        labels = [f"{param}={value!r}" for value in meta["variants"]["values"]]
        verdict = ", ".join(f"{v} ({label})" for v, label in zip(verdicts, labels, strict=True))
        what = f"{meta['kernel']} ({len(verdicts)} designs, one per value of {param})"
    elif "designs" in meta:
        from ..core.dispatch import bounded_keys, picked_by, rule_bound

        dispatch = meta["dispatch"]
        keys = bounded_keys(dispatch["key"], [rule_bound(rule, dispatch["key"]) for rule in dispatch["rules"]])
        by = picked_by([*([dispatch["variant"]] if "variant" in dispatch else []), *keys])
        verdict = ", ".join(f"{v} ({span})" for v, span in zip(verdicts, _spans(dispatch, len(verdicts)), strict=True))
        what = f"{meta['kernel']} (a dispatch of {len(verdicts)} design{'s' if len(verdicts) > 1 else ''} by {by})"
    else:
        verdict, what = verdicts[0], meta["kernel"]
    lines = [f"exported {what} for {meta['arch']}; tslab.check: {verdict}", f"{folder}/"]
    lines += [f"  {p.name}" for p in sorted(folder.iterdir()) if p.name != "__pycache__"]
    return "\n".join(lines)


def _spans(dispatch: dict[str, Any], designs: int) -> list[str]:
    """For each of a package's designs, the ranges of the rules that use it in words, from its design.json (as
    ``Dispatch.spans()`` says them)."""
    from ..core.dispatch import joined_spans, ranges_in_words, rule_bound

    key, variant, rules = dispatch["key"], dispatch.get("variant"), dispatch["rules"]
    ranges = ranges_in_words(key, variant, [(rule_bound(rule, key), rule.get(variant)) for rule in rules])
    return joined_spans(ranges, [rule["design"] for rule in rules], designs)


def _tuned(name: str, params: dict[str, Any]) -> Any:
    """The measured dispatch of catalog kernel ``name`` (``--tuned``): the params its ``tuned()`` takes (dtype, an
    attention's head_dim) choose the table, the others are set on each design."""
    if name not in TUNED:
        raise TslabError(f"--tuned: kernel '{name}' has no measured dispatch; kernels with one: {', '.join(TUNED)}; "
                         "drop --tuned to export one design")
    tuned = importlib.import_module(TUNED[name]).tuned
    takes = set(inspect.signature(tuned).parameters)
    dispatch = tuned(**{k: v for k, v in params.items() if k in takes})
    rest = {k: v for k, v in params.items() if k not in takes}
    return dispatch.with_params(**rest) if rest else dispatch


def _from_json(text: str) -> Any:
    """A saved Dispatch (it carries ``tslab_dispatch``) or a saved Design."""
    from ..core.design import Design
    from ..core.dispatch import Dispatch

    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict) and "tslab_dispatch" in data:
        return Dispatch.from_dict(data)
    return Design.from_json(text)


def export_command(args: argparse.Namespace) -> int:
    """Run ``tslab export`` with parsed ``args``; prints what it wrote (:func:`exported`), returns the exit code."""
    from pathlib import Path

    from ..capture.cli import capture_target, is_target
    from ..compiling.targets import require_arch, require_gpu_kernel
    from ..core.design import Design
    from .errors import UnsupportedArchError
    from .export import export

    try:
        require_arch(args.arch, f"export of '{args.name}'")
        if args.tuned and (is_target(args.name) or args.name.endswith(".json")):
            raise TslabError(f"--tuned with {args.name!r}: --tuned takes a catalog kernel name, e.g. "
                             "'tslab export gemm_sm90 --tuned'; a saved dispatch JSON is exported without it")
        if is_target(args.name):
            return _export_captured(args, capture_target(args.name, args.arg, arch=args.arch,
                                                         frontend=args.frontend, options=args.options))
        if args.frontend is not None or args.options:
            given = "--frontend" if args.frontend is not None else "--options"
            raise TslabError(f"export of '{args.name}': {given} applies to a kernel.py::host_fn target, whose "
                             f"compile tslab traces; drop {given} for a catalog kernel or a JSON file (a saved "
                             "captured design re-opens with its own frontend and options)")
        if args.name.endswith(".json"):
            design = _from_json(Path(args.name).read_text())
            if isinstance(design, Design) and design.is_captured:
                return _export_captured(args, design)
            if args.param:
                design = design.with_params(**dict(args.param))
        elif args.tuned:
            require_gpu_kernel(args.name)
            design = _tuned(args.name, dict(args.param))
        else:
            require_gpu_kernel(args.name)
            design = Design(args.name, dict(args.param))
        path = export(
            design,
            args.output,
            arch=args.arch,
            shape=args.shape,
            dtype=args.dtype,
            sms=args.sms,
            launch=dict(args.launch),
            force=args.force,
            overwrite=args.force,
            progress=sys.stderr.isatty(),  # a bar on a terminal; nothing in a pipe or a log
        )
    except UnsupportedArchError as exc:
        print(f"tslab export: {cli_message(exc)}", file=sys.stderr)
        return 2
    except (TslabError, OSError) as exc:
        print(f"tslab export: {cli_message(exc)}", file=sys.stderr)
        return 1
    print(exported(path))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m tslab.gpu.cli NAME ...``)."""
    parser = add_export_arguments(argparse.ArgumentParser(prog="tslab export", description=__doc__))
    return export_command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
