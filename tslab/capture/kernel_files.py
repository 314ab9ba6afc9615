"""Kernel files imported by path: each file content once, as a module named after its stem and a digest of its
content (a changed file is another module), with ``torch`` stood in for where it is absent. The capture imports a
kernel file this way, and a child process re-creates the objects of one the same way (:mod:`tslab.capture.portable`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any

from ..child import error_record
from ..errors import TslabError
from .errors import user_frame


def import_kernel_file(path: str | os.PathLike[str]) -> Any:
    """Import a kernel file by path (once per file content), with ``torch`` stood in for when absent."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise TslabError(f"kernel file '{path}': does not exist; pass the path of a .py file")
    mod_name = kernel_module_name(file)
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    from ..fake import torch_stand_in

    spec = importlib.util.spec_from_file_location(mod_name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        with torch_stand_in():
            spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[mod_name]
        where = user_frame(error_record(exc)["frames"], str(file))
        raise TslabError(f"kernel file '{path}': importing it failed{where}: "
                         f"{type(exc).__name__}: {exc}") from None
    return module


def kernel_module_name(file: Path) -> str:
    """The module name of a kernel file imported by path: its stem and a digest of its content (a changed file is
    another module)."""
    digest = hashlib.sha1(file.read_bytes()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", file.stem)
    return f"tslab_kernel_{stem}_{digest}"
