"""No folder of the package bears a name that common ignore rules drop (GitHub's Python ``.gitignore`` template
ignores every ``build/``, ``dist/``, ``eggs/`` ... folder): a contributor's commit would silently leave it out."""

from __future__ import annotations

from pathlib import Path

#: Folder names GitHub's Python .gitignore template ignores wherever they are.
IGNORED_NAMES = {"build", "develop-eggs", "dist", "downloads", "eggs", ".eggs", "lib", "lib64", "parts", "sdist",
                 "var", "wheels", "env", "venv", "ENV", "htmlcov", "instance"}


def test_no_package_folder_is_named_like_ignored_build_output():
    top = Path(__file__).resolve().parents[1] / "tslab"
    folders = {p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_dir() and p.name in IGNORED_NAMES}
    assert not folders, f"rename these package folders for what they do: {sorted(folders)}"
