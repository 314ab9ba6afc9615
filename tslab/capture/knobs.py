"""A kernel's knobs: the module-level constants of its file and its host function's constexpr arguments.

TS kernels often size their buffers from module constants (``ab_stages = 4``; ``smem_bytes = ab_stages *
tile_bytes``), not from the PipelineConfig. A knob edit must therefore run the kernel's own code again with
the new value: :func:`module_with_knobs` executes the file's source with the knob assignments replaced (in
memory; the file is never written), so every expression derived from them is recomputed by the kernel itself.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import types
from pathlib import Path
from typing import Any

from ..errors import TslabError, did_you_mean

#: Set on a module :func:`module_with_knobs` made: (file, source, knob values), so a fresh process can make it again.
KNOBS_ATTRIBUTE = "__tslab_knobs__"

#: CuTe DSL element types a knob may hold, written ``cutlass.<Name>`` in a kernel file and in JSON.
DTYPE_NAMES = ("Float16", "BFloat16", "Float32", "Float64", "TFloat32", "Float8E4M3FN", "Float8E5M2",
               "Int8", "Uint8", "Int16", "Uint16", "Int32", "Uint32", "Int64", "Uint64", "Boolean")
_DTYPE_TEXT = re.compile(r"cutlass\.(\w+)")


def _dtype_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "cutlass" \
            and node.attr in DTYPE_NAMES:
        return f"cutlass.{node.attr}"
    return None


def _literal(node: ast.AST) -> tuple[bool, Any]:
    """``(True, value)`` when ``node`` is a knob value: a literal (numbers, strings, bools, tuples) or a dtype."""
    name = _dtype_name(node)
    if name is not None:
        return True, name
    if isinstance(node, ast.Tuple):
        items = [_literal(e) for e in node.elts]
        return (all(ok for ok, _ in items), tuple(v for _, v in items)) if items else (True, ())
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    return isinstance(value, (bool, int, float, str)), value


def _knob_assignments(tree: ast.Module) -> dict[str, ast.AST]:
    """Top-level ``NAME = <knob value>`` (or annotated) assignments, by name; the last one wins."""
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        ok, _ = _literal(value)
        if ok and not name.startswith("__"):
            found[name] = node
        else:
            found.pop(name, None)
    return found


def module_knobs(source: str) -> dict[str, Any]:
    """``{name: value}`` of a kernel file's module-level constants (dtypes as ``"cutlass.Float16"``)."""
    tree = ast.parse(source)
    out = {}
    for name, node in _knob_assignments(tree).items():
        out[name] = _literal(node.value)[1]
    return out


def to_plain(value: Any) -> Any:
    """A knob value as JSON-ready data: dtypes become ``"cutlass.<Name>"``, tuples lists."""
    if isinstance(value, type) and getattr(value, "__name__", "") in DTYPE_NAMES:
        return f"cutlass.{value.__name__}"
    if isinstance(value, (tuple, list)):
        return [to_plain(v) for v in value]
    return value


def _dtype_text(value: Any) -> str | None:
    """The CuTe DSL dtype name in ``"cutlass.<Name>"`` (``None`` for anything else)."""
    if isinstance(value, str) and (m := _DTYPE_TEXT.fullmatch(value)) and m[1] in DTYPE_NAMES:
        return m[1]
    return None


def shown(value: Any) -> Any:
    """A plain knob value as a kernel writes it: lists back to tuples (dtypes stay ``"cutlass.<Name>"``)."""
    if isinstance(value, (list, tuple)):
        return tuple(shown(v) for v in value)
    return value


def to_value(value: Any) -> Any:
    """A plain knob value as a host function's argument: tuples, and dtypes as the ``cutlass`` types."""
    name = _dtype_text(value)
    if name is not None:
        import cutlass

        return getattr(cutlass, name)
    if isinstance(value, (list, tuple)):
        return tuple(to_value(v) for v in value)
    return value


def _expression(value: Any, where: str) -> ast.expr:
    """The Python expression for a knob value (``cutlass.Float16`` for a dtype)."""
    if isinstance(value, str) and (m := _DTYPE_TEXT.fullmatch(value)) and m[1] in DTYPE_NAMES:
        return ast.Attribute(value=ast.Name(id="cutlass", ctx=ast.Load()), attr=m[1], ctx=ast.Load())
    if isinstance(value, (list, tuple)):
        return ast.Tuple(elts=[_expression(v, where) for v in value], ctx=ast.Load())
    if isinstance(value, (bool, int, float, str)):
        return ast.Constant(value=value)
    raise TslabError(f"{where}: {value!r} is not a knob value; give a number, a string, a bool, a tuple of "
                     "them or a CuTe DSL dtype such as cutlass.Float16")


def check_knob_names(knobs: dict[str, Any], offered: dict[str, Any], owner: str) -> None:
    for name in knobs:
        if name not in offered:
            raise TslabError(f"{owner}: knob '{name}' is not a knob of this kernel; "
                             + did_you_mean(name, sorted(offered)))


def _same_kind(old: Any, new: Any) -> bool:
    if _dtype_text(old) is not None or _dtype_text(new) is not None:
        return _dtype_text(old) is not None and _dtype_text(new) is not None
    if isinstance(old, bool) or isinstance(new, bool):
        return isinstance(old, bool) and isinstance(new, bool)
    if isinstance(old, (int, float)):
        return isinstance(new, (int, float))
    if isinstance(old, (list, tuple)):
        return isinstance(new, (list, tuple))
    return isinstance(new, type(old))


def check_knob_values(knobs: dict[str, Any], current: dict[str, Any], owner: str) -> dict[str, Any]:
    """``knobs`` in plain form, refusing a value of another kind than the knob's (``ab_stages='4'``)."""
    out = {}
    for name, value in knobs.items():
        plain = to_plain(value)
        if _dtype_text(current[name]) is not None and _dtype_text(plain) is None:
            raise TslabError(f"{owner}: knob {name}={value!r} is not a CuTe DSL dtype but the kernel's value is "
                             f"{current[name]}; give a dtype such as cutlass.Float32")
        if not _same_kind(current[name], plain):
            raise TslabError(f"{owner}: knob {name}={value!r} is a {type(value).__name__} but the kernel's value "
                             f"{current[name]!r} is a {type(current[name]).__name__}; give a value of that kind")
        out[name] = plain
    return out


def module_with_knobs(path: Path, source: str, knobs: dict[str, Any]) -> types.ModuleType:
    """Execute the kernel file's source with the knob assignments replaced; the module is kept in ``sys.modules``.

    Line numbers are kept, so the DSL finds each function's source and tracebacks point at the real file.
    The source is compiled with its own ``__future__`` imports only (``dont_inherit``): this module's
    ``annotations`` import would turn the kernel's ``cutlass.Constexpr`` annotations into strings.
    """
    digest = hashlib.sha1(source.encode()).hexdigest()[:10]
    knob_key = hashlib.sha1(json.dumps(knobs, sort_keys=True).encode()).hexdigest()[:8]
    stem = re.sub(r"\W", "_", path.stem)
    name = f"tslab_kernel_{stem}_{digest}_{knob_key}"
    if name in sys.modules:
        return sys.modules[name]
    tree = ast.parse(source, filename=str(path))
    assignments = _knob_assignments(tree)
    for knob, value in knobs.items():
        node = assignments[knob]
        new = _expression(value, f"kernel file '{path}' knob '{knob}'")
        node.value = ast.copy_location(new, node.value)
    ast.fix_missing_locations(tree)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    setattr(module, KNOBS_ATTRIBUTE, (str(path), source, dict(knobs)))  # how a fresh process makes it again
    sys.modules[name] = module
    from ..fake import torch_stand_in

    try:
        with torch_stand_in():
            exec(compile(tree, str(path), "exec", dont_inherit=True), module.__dict__)  # knobs replaced
    except Exception as exc:
        del sys.modules[name]
        raise TslabError(f"kernel file '{path}': importing it with knobs {knobs} failed: "
                         f"{type(exc).__name__}: {exc}") from None
    return module
