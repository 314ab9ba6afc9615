"""``tslab lab``: copy the tutorials into a folder of the user's and open it in JupyterLab.

The tutorials ship inside the package (``tslab/tutorials/`` in the wheel; the repository's ``notebooks/`` in a
source checkout). They are copied once into a writable folder, ``./tslab-tutorials`` unless ``--dir`` names
another; files already there are the user's and are never overwritten, and the installed copy is never edited.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from .errors import TslabError

DEFAULT_DIR = "tslab-tutorials"
_PACKAGE = Path(__file__).resolve().parent
#: JupyterLab's default settings as ``tslab lab`` starts it (``overrides.json``): no prompt for Jupyter's news feed
#: and no update check, whose notice otherwise covers a corner of the first tutorial a newcomer opens. Used only
#: where the environment has no ``overrides.json`` of its own; a user's own settings still win over both.
LAB_SETTINGS = _PACKAGE / "lab_settings"


def tutorials_source() -> Path:
    """Where the tutorials are copied from: the wheel's ``tslab/tutorials``, else the repository's ``notebooks``."""
    for folder in (_PACKAGE / "tutorials", _PACKAGE.parent / "notebooks"):
        if folder.is_dir():
            return folder
    raise TslabError(f"tslab lab: tutorials folder {str(_PACKAGE / 'tutorials')!r} is missing from this install; "
                     "reinstall tslab (pip install --force-reinstall tslab)")


def _skipped(rel: Path) -> bool:
    """Checkpoints, caches and hidden files are not tutorials."""
    return any(part.startswith(".") or part == "__pycache__" for part in rel.parts)


def copy_tutorials(dest: str | Path, source: str | Path | None = None) -> list[Path]:
    """Copy every tutorial file missing from ``dest`` (created if needed); returns the files copied.

    Files already in ``dest`` are left as they are, so a user's edits survive the next ``tslab lab``.
    """
    src = Path(source) if source is not None else tutorials_source()
    out = Path(dest)
    if out.exists() and not out.is_dir():
        raise TslabError(f"tslab lab: --dir={str(out)!r} is a file; name a folder for the tutorials")
    copied = []
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if not path.is_file() or _skipped(rel) or (out / rel).exists():
            continue
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out / rel)
        copied.append(out / rel)
    return copied


def lab_command(folder: str | Path, extra: list[str], *, as_root: bool | None = None) -> list[str]:
    """The command that starts JupyterLab on ``folder``, passing ``extra`` options on (``--allow-root`` as root),
    with :data:`LAB_SETTINGS` as its default settings unless the environment or ``extra`` gives its own."""
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    cmd = [sys.executable, "-m", "jupyter", "lab", str(folder), *extra]
    if as_root and "--allow-root" not in extra:
        cmd.append("--allow-root")
    own = (Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json").exists()
    if not own and not any(arg.startswith("--LabApp.app_settings_dir") for arg in extra):
        cmd.append(f"--LabApp.app_settings_dir={LAB_SETTINGS}")
    return cmd
