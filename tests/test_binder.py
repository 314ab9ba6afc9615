"""binder/ builds and runs: repo2docker's steps replayed in a fresh virtual environment.

repo2docker (what mybinder.org builds images with) starts from a base environment that already holds
notebook 7.4.7, installs ``binder/requirements.txt`` from the repository's root, runs ``binder/postBuild``, and
starts the server through ``binder/start``. No Docker image can be pulled here, so the same steps run in a
venv: the install must leave no conflict (``pip check``), every lab extension must be enabled and OK, ``start``
must open the tutorials, and a tutorial must run there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
#: What repo2docker's base image has before the repository's requirements (the conflict a newcomer met).
BASE_IMAGE = ["notebook==7.4.7"]


def _run(cmd: list[str], env: dict[str, str], timeout: float = 900, cwd: Path = ROOT) -> str:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def binder_env(tmp_path_factory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A venv built the way repo2docker builds the image: base packages, requirements.txt, postBuild.

    It holds about 2 GB (the CUDA wheels), so it is removed once the module's tests are done.
    """
    home = tmp_path_factory.mktemp("binder")
    try:
        yield _build_binder_env(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _build_binder_env(home: Path) -> tuple[Path, dict[str, str]]:
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {**os.environ, "HOME": str(home), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "JUPYTER_CONFIG_DIR": str(home / ".jupyter"), "JUPYTER_DATA_DIR": str(home / ".local/share/jupyter"),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME",
                                                                                   str(Path.home() / ".cache"))}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    try:
        _run([*pip, *BASE_IMAGE], env)
    except AssertionError as exc:
        pytest.skip(f"the base image's packages could not be installed here: {str(exc)[-300:]}")
    _run([*pip, "-r", str(BINDER / "requirements.txt")], env)  # from the repository's root, as repo2docker does
    _run(["bash", str(BINDER / "postBuild")], env)
    return venv, env


def test_runtime_pins_a_python_the_project_supports():
    version = (BINDER / "runtime.txt").read_text().strip()
    assert version in ("python-3.11", "python-3.12")


def test_the_install_leaves_no_conflict(binder_env):
    venv, env = binder_env
    assert "No broken requirements" in _run([str(venv / "bin" / "python"), "-m", "pip", "check"], env)


def test_every_lab_extension_is_enabled_and_ok(binder_env):
    venv, env = binder_env
    listing = _run([str(venv / "bin" / "jupyter"), "labextension", "list"], env)
    assert "tslab" in listing and "enabled" in listing
    bad = [line for line in listing.splitlines() if "disabled" in line or " X " in line or "error" in line.lower()]
    assert not bad, listing


def test_start_opens_the_tutorials(binder_env):
    _venv, env = binder_env
    args = _run([str(BINDER / "start"), "echo", "jupyter", "lab"], env)
    assert args.split() == ["jupyter", "lab", "--ServerApp.default_url=/lab/tree/notebooks"]
    assert (ROOT / "notebooks" / "00_tour.ipynb").is_file()


def test_a_tutorial_runs_in_the_binder_environment(binder_env, tmp_path):
    venv, env = binder_env
    out = tmp_path / "ran.ipynb"
    _run([str(venv / "bin" / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--output", str(out),
          "02_schedules.ipynb"], env, cwd=ROOT / "notebooks")
    assert out.is_file() and '"output_type": "error"' not in out.read_text()
