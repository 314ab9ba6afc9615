"""Export a captured design as an importable package: its kernel compiled as edited, loadable without tslab.

The package holds the object file of the kernel's own host function (knob values in its code, edits applied at
TaskManager construction), compiled with CuTe DSL's TVM FFI where its arguments allow it (then a call takes torch
tensors and launches on torch's current stream; the host function's stream arguments are taken from there) and as
CuTe DSL's plain object otherwise; ``design.json`` (the design and its source, so it can be re-opened with
``tslab.Design.from_json``, and how the function is called), ``VERDICT.txt``, and :mod:`tslab.exported.captured` as
its ``__init__.py`` (with the runtime every package shares), whose ``load()`` returns the compiled host function.
"""

from __future__ import annotations

import json
import keyword
import shutil
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import exported
from ..capture.outcome import failure
from ..capture.recorder import compile_call
from ..capture.worker import run_in_child
from ..child import error_record
from ..core.construction import edits_at_construction
from ..errors import TslabError
from .compile import preload_runtime


def _is_stream(arg: Any) -> bool:
    from cuda.bindings import driver as cuda
    from cutlass.cute.runtime import make_fake_stream

    return isinstance(arg, (cuda.CUstream, type(make_fake_stream())))


def _export(host_fn: Any, args: tuple, kwargs: dict, arch: str, edits: Any, frontend: Any, options: str,
            directory: str) -> dict[str, Any]:
    """Compile and write ``kernel.o``: with the TVM FFI (every stream argument the caller's current stream), or,
    when the TVM FFI cannot take the host function's arguments, as CuTe DSL's plain object."""
    import os

    from cutlass.cute.runtime import make_fake_stream

    env = make_fake_stream(use_tvm_ffi_env_stream=True)
    streams = [i for i, arg in enumerate(args) if _is_stream(arg)]
    ffi_args = tuple(env if i in streams else arg for i, arg in enumerate(args))
    try:
        with edits_at_construction(edits):
            fn = compile_call(host_fn, ffi_args, kwargs, arch, frontend=frontend,
                              options=f"{options} --enable-tvm-ffi".strip())()
        fn.export_to_c(os.path.join(directory, "kernel.o"), function_name="kernel")
        return {"files": sorted(os.listdir(directory)), "abi": "tvm-ffi", "streams": streams}
    except BaseException as exc:
        tvm_error = error_record(exc)
    preload_runtime()
    try:
        with edits_at_construction(edits):
            fn = compile_call(host_fn, args, kwargs, arch, frontend=frontend, options=options)()
        fn.export_to_c(file_path=directory, file_name="kernel", function_prefix="kernel")
    except BaseException as exc:
        return {"error": error_record(exc)}
    return {"files": sorted(os.listdir(directory)), "abi": "cute", "tvm_ffi_error": tvm_error}


def _call(outcome: dict[str, Any], args: tuple) -> dict[str, Any]:
    """design.json's "call": how the package's function is called, in data and in words."""
    if outcome["abi"] == "tvm-ffi":
        taken = [i for i in range(len(args)) if i not in outcome["streams"]]
        words = (f"the host function's arguments {taken} as torch tensors (any DLPack tensor) or numbers; its stream "
                 f"arguments {outcome['streams']} are torch's current stream" if outcome["streams"] else
                 "the host function's arguments as torch tensors (any DLPack tensor) or numbers")
        return {"abi": "tvm-ffi", "streams_from_caller": outcome["streams"], "arguments": words}
    why = outcome["tvm_ffi_error"]
    return {"abi": "cute", "tvm_ffi_refused": f"{why['type']}: {' '.join(why['message'].split())[:300]}",
            "arguments": "what the host function takes at run time: CuTe tensors "
                         "(cutlass.cute.runtime.from_dlpack(t)) and streams"}


def export_captured(design: Any, path: str | Path, arch: str | None = None, *, force: bool = False,
                    overwrite: bool = False, timeout: float = 600.0) -> Path:
    """Write the package ``path`` (its folder name is the import name) for a captured design; returns it.

    The design is checked first and refused unless its verdict is ok (``force=True`` overrides).
    """
    from ..core.check import check

    source = design.source
    if source is None:
        raise TslabError(f"export: design '{design.kernel}' is not a captured kernel; export catalog designs "
                         "with tslab.gpu.export")
    out = Path(path)
    if not out.name.isidentifier() or keyword.iskeyword(out.name):
        raise TslabError(f"export: folder name {out.name!r} is not a Python identifier; name the folder like a "
                         "module, e.g. 'row_copy_sm90'")
    if out.exists() and not overwrite:
        raise TslabError(f"export: {out} exists; pass overwrite=True (CLI: --force) or choose another folder")
    verdict = check(design)
    if not verdict.ok and not force:
        errors = "\n".join(str(e) for e in verdict.errors) or verdict.status
        raise TslabError(f"export: design '{design.kernel}': tslab.check() says {verdict.status}; fix the errors "
                         f"below or pass force=True.\n{errors}")
    arch = arch or source.arch
    host_fn, kwargs = source._traced_callable()
    args = source._args_for(kwargs)
    edits = design._edits()
    with tempfile.TemporaryDirectory(prefix="tslab-export-") as scratch:
        outcome = run_in_child(_export, host_fn, args, kwargs, arch, edits, source.frontend, source.options,
                               scratch, timeout=timeout)
        detail = failure(outcome)
        if detail is not None:
            raise TslabError(f"export of captured kernel '{design.kernel}' for {arch}: {detail}")
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(scratch, out)
    meta = {"kernel": design.kernel, "arch": arch, "knobs": design.knobs(), "design": design.to_dict(),
            "verdict": verdict.status, "call": _call(outcome.value, args),
            "about": {"designs": f"one, with knobs {design.source.knob_edits or 'as written'}"},
            "runtime": {name: metadata.version(name) for name in ("nvidia-cutlass-dsl", "apache-tvm-ffi")}}
    (out / "design.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    (out / "VERDICT.txt").write_text(verdict.text() + "\n")
    code = Path(exported.__file__).resolve().parent
    shutil.copyfile(code / "captured.py", out / "__init__.py")
    shutil.copyfile(code / "_runtime.py", out / "_runtime.py")
    return out
