"""Command-line side of capture: ``tslab check path/to/kernel.py::host_fn --arg f16[1024,1024] --arg stream``.

Argument syntax (one ``--arg`` per positional argument of the host function, in order; ``name=VALUE`` for a
keyword argument)::

    f16[1024,1024]     a fake tensor: dtype (f16, bf16, f32, i32, u8, ... see tslab.fake.DTYPES) and shape
    f16[1024,1024]@colmajor   the same, column-major (first mode contiguous)
    stream             a fake CUDA stream
    128  2.5  true  none       an int, a float, a bool, None
    (256,512)          a tuple of ints
    'text'             a string
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path
from typing import Any

from ..errors import TslabError

_TENSOR = re.compile(r"^(?P<dtype>[A-Za-z][\w]*)\[(?P<shape>[\d\s,]+)\](?:@(?P<order>rowmajor|colmajor))?$")
_KEYWORD = re.compile(r"^(?P<name>[A-Za-z_]\w*)=(?P<value>.+)$")


def parse_target(target: str) -> tuple[Path, str]:
    """``"path/to/kernel.py::host_fn"`` -> (path, function name); checks that the file exists."""
    path, sep, function = str(target).rpartition("::")
    if not sep or not path or not function.isidentifier():
        raise TslabError(f"target '{target}': expected PATH.py::FUNCTION, e.g. kernels/copy.py::copy_host")
    file = Path(path)
    if file.suffix != ".py":
        raise TslabError(f"target '{target}': '{path}' is not a .py file; name the kernel's Python file")
    if not file.is_file():
        raise TslabError(f"target '{target}': file '{path}' does not exist")
    return file, function


def parse_arg(text: str, option: str = "--arg") -> Any:
    """One argument in the syntax above -> the value to pass (fake tensors and streams from tslab.fake);
    ``option`` names the command-line option in error messages."""
    from .. import fake

    spec = text.strip()
    match = _TENSOR.match(spec)
    if match and match["dtype"].lower() not in ("none", "true", "false"):
        shape = tuple(int(d) for d in match["shape"].split(",") if d.strip())
        order = tuple(range(len(shape))) if match["order"] == "colmajor" else None
        return fake.tensor(match["dtype"], shape, stride_order=order)
    lowered = spec.lower()
    if lowered == "stream":
        return fake.stream()
    if lowered in ("true", "false", "none"):
        return {"true": True, "false": False, "none": None}[lowered]
    try:
        value = ast.literal_eval(spec)
    except (ValueError, SyntaxError):
        raise TslabError(f"{option} '{text}': not understood; use a tensor like f16[1024,1024], 'stream', "
                         "a number, true/false/none, a tuple like (256,512) or a quoted string") from None
    if isinstance(value, (int, float, str, tuple)):
        return value
    raise TslabError(f"{option} '{text}': a {type(value).__name__} is not supported; "
                     "use a number, tuple or string")


def parse_args(specs: list[str] | tuple[str, ...]) -> tuple[list[Any], dict[str, Any]]:
    """Every ``--arg`` value -> (positional args, keyword args); ``name=VALUE`` makes a keyword argument."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for spec in specs:
        match = _KEYWORD.match(spec.strip())
        if match and not _TENSOR.match(spec.strip()):
            kwargs[match["name"]] = parse_arg(match["value"])
        elif kwargs:
            raise TslabError(f"--arg '{spec}': a positional argument after a keyword argument; "
                             "put keywords last")
        else:
            args.append(parse_arg(spec))
    return args, kwargs


def parse_frontend(name: str | None) -> Any:
    """``--frontend FrontendNext`` (or ``cute.FrontendNext``) -> the CuTe DSL frontend; None -> None."""
    if name is None:
        return None
    from cutlass import cute

    short = name.strip().removeprefix("cutlass.").removeprefix("cute.")
    frontend = getattr(cute, short, None) if short.startswith("Frontend") else None
    if frontend is None:
        from ..errors import did_you_mean

        known = [n for n in dir(cute) if n.startswith("Frontend")]
        raise TslabError(f"--frontend '{name}': not a frontend of this CuTe DSL version; "
                         f"{did_you_mean(short, known)}")
    return frontend


def capture_target_all(target: str, specs: list[str] | tuple[str, ...] = (), *, arch: str = "sm_90a",
                       timeout: float = 600.0, frontend: str | None = None, options: str = "") -> Any:
    """Every TaskManager of ``target`` (``PATH.py::FUNCTION``) traced with ``specs``: a CaptureResult.

    ``frontend`` (a name, ``FrontendNext``) and ``options`` are the compile's, as the kernel's authors pass them to
    ``cute.compile[frontend](..., options=...)``."""
    from .api import capture_file_all

    path, function = parse_target(target)
    args, kwargs = parse_args(specs)
    return capture_file_all(path, function, *args, arch=arch, timeout=timeout, frontend=parse_frontend(frontend),
                            options=options or "", **kwargs)


def capture_target(target: str, specs: list[str] | tuple[str, ...] = (), *, arch: str = "sm_90a",
                   timeout: float = 600.0, frontend: str | None = None, options: str = "") -> Any:
    """The Design of the first TaskManager of ``target`` (``PATH.py::FUNCTION``) traced with ``specs``."""
    return capture_target_all(target, specs, arch=arch, timeout=timeout, frontend=frontend, options=options).design


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--arg`` (repeatable) and ``--arch`` to a subcommand taking a ``PATH.py::FUNCTION`` target."""
    parser.add_argument("--arg", action="append", default=[], metavar="SPEC",
                        help="a host function argument: f16[1024,1024], stream, 128, (256,512), name=VALUE")
    parser.add_argument("--arch", default="sm_90a", help="GPU architecture to trace for (sm_90a, sm_100a)")
    parser.add_argument("--knob", action="append", default=[], metavar="NAME=VALUE",
                        help="a captured kernel's knob (module constant or constexpr argument), re-traced: "
                             "ab_stages=5 (repeatable)")
    add_compile_arguments(parser)


def add_compile_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--frontend`` and ``--options``: compile a captured kernel as its authors do."""
    parser.add_argument("--frontend", default=None, metavar="NAME",
                        help="for a kernel.py::host_fn target: the CuTe DSL frontend its authors compile it with, "
                             "as cute.compile[cute.NAME] (e.g. --frontend FrontendNext)")
    parser.add_argument("--options", default="", metavar="TEXT",
                        help="for a kernel.py::host_fn target: the compile options its authors pass, as "
                             "cute.compile(..., options=TEXT), e.g. --options '--opt-level 2' (one flag alone: "
                             "--options=--enable-tvm-ffi)")


def parse_knobs(specs: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Every ``--knob NAME=VALUE`` -> ``{name: value}`` (values as for ``--arg``; ``cutlass.Float16`` for a dtype; a
    bare word such as ``smem_o`` is a string)."""
    out: dict[str, Any] = {}
    for spec in specs:
        match = _KEYWORD.match(spec.strip())
        if not match:
            raise TslabError(f"--knob '{spec}': expected NAME=VALUE, e.g. --knob ab_stages=5")
        raw = match["value"].strip()
        bare_word = raw.isidentifier() and raw.lower() not in ("true", "false", "none", "stream")
        out[match["name"]] = raw if raw.startswith("cutlass.") or bare_word else parse_arg(raw, "--knob")
    return out


def with_knobs(design: Any, specs: list[str] | tuple[str, ...]) -> Any:
    """``design`` re-traced with the ``--knob`` values (unchanged when there are none)."""
    knobs = parse_knobs(specs)
    return design.with_knobs(**knobs) if knobs else design


def is_target(text: str) -> bool:
    """Whether a command-line word names a kernel file target rather than a catalog design."""
    return "::" in text and text.split("::", 1)[0].endswith(".py")
