"""``export(design, path, arch)``: an importable Python package holding the compiled kernel.

The package needs only nvidia-cutlass-dsl's runtime (no tslab, no recompilation): it loads the exported
object with ``cutlass.cute.runtime.load_module`` and checks arch, shapes and dtypes before each launch.
"""

from __future__ import annotations

import json
import keyword
import shutil
from pathlib import Path
from typing import Any

from . import templates
from .compile import DEFAULT_SMS, checked_target, verified
from .errors import GpuError
from .targets import require_arch, resolve
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

    ``sms`` sizes the persistent grid baked into the kernel (default: the arch's usual count).
    """
    require_arch(arch, f"export of '{getattr(design, 'kernel', design)}'")
    if getattr(design, "kernel", None) == "gemm_sm90":
        from .errors import UnsupportedKernelError

        raise UnsupportedKernelError(
            "design 'gemm_sm90': an exported package wraps a copy's run(src, dst) for one shape; the GEMM "
            "package (run(a, b, c) for any shape) is not built yet; use tslab.gpu.compile(...).run() or bench()"
        )
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
    verdict = verified(design, force)
    target = checked_target(target, verdict)
    sms = sms or DEFAULT_SMS.get(arch, 132)
    out.mkdir(parents=True)
    try:
        run_job(
            "tslab.gpu.jobs:export_job",
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
    meta = {
        "kernel": target.kernel,
        "arch": arch,
        "shape": list(target.shape),
        "dtype": target.dtype,
        "sms": sms,
        "launch": target.launch,
        "design": design.to_dict(),
        # What was applied at TaskManager construction: the kernel module's own schedules and the design's edits.
        "edits": {"schedules": target.schedules, "alias_groups": target.alias_groups},
        "verdict": verdict.status,
    }
    (out / "design.json").write_text(json.dumps(meta, indent=2) + "\n")
    (out / "VERDICT.txt").write_text(verdict.text() + "\n")
    (out / "__init__.py").write_text(templates.INIT.format(name=name, **_fmt(meta)))
    (out / "test_kernel.py").write_text(templates.TEST.format(name=name))
    return out


def _fmt(meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "kernel": meta["kernel"],
        "arch": meta["arch"],
        "shape": tuple(meta["shape"]),
        "dtype": meta["dtype"],
    }
