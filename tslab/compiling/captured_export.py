"""Export a captured design as an importable package: its kernel compiled as edited, loadable without tslab.

The package holds the object file ``cute.compile(...).export_to_c`` writes for the kernel's own host
function (knob values in its code, edits applied at TaskManager construction), ``design.json`` (the design
and its source, so it can be re-opened with ``tslab.Design.from_json``), ``VERDICT.txt`` and an
``__init__.py`` whose ``load()`` returns the compiled host function: call it with the runtime arguments the
host function takes (CuTe tensors, e.g. ``cutlass.cute.runtime.from_dlpack(t)``, and streams).
"""

from __future__ import annotations

import json
import keyword
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..capture.recorder import compile_call
from ..capture.worker import failure, run_in_child
from ..child import error_record
from ..core.construction import edits_at_construction
from ..errors import TslabError
from .compile import preload_runtime
from .package_loader import LOAD_FUNCTION

INIT = '''"""{kernel}: a captured TS kernel compiled for {arch} with knobs {knobs} (exported by tslab).

    import {name}
    fn = {name}.load()       # the compiled host function; nothing is recompiled
    fn(*runtime_args)        # what the host function takes at run time: CuTe tensors (from_dlpack), streams

Needs only nvidia-cutlass-dsl (its runtime library) and a GPU of arch {arch}. design.json holds the design
(tslab.Design.from_json re-opens it where the kernel file is), VERDICT.txt the verdict it was built from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
META = json.loads((HERE / "design.json").read_text())
ARCH: str = META["arch"]
DESIGNS: list[dict[str, Any]] = [dict(META, object="kernel.o", prefix="kernel")]
_modules: dict[int, Any] = {{}}


{load_function}'''


def _export(host_fn: Any, args: tuple, kwargs: dict, arch: str, edits: Any, frontend: Any, options: str,
            directory: str) -> dict[str, Any]:
    import os

    preload_runtime()
    try:
        with edits_at_construction(edits):
            fn = compile_call(host_fn, args, kwargs, arch, frontend=frontend, options=options)()
        fn.export_to_c(file_path=directory, file_name="kernel", function_prefix="kernel")
    except BaseException as exc:
        return {"error": error_record(exc)}
    return {"files": sorted(os.listdir(directory))}


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
            "verdict": verdict.status}
    (out / "design.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    (out / "VERDICT.txt").write_text(verdict.text() + "\n")
    (out / "__init__.py").write_text(INIT.format(name=out.name, kernel=design.kernel, arch=arch,
                                                 knobs=design.source.knob_edits or "as written",
                                                 load_function=LOAD_FUNCTION))
    return out
