"""``tslab lab``: the tutorials travel in the wheel, are copied once into a user folder, options reach JupyterLab."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tslab.cli import parse_args
from tslab.errors import TslabError
from tslab.lab import copy_tutorials, lab_command, tutorials_source

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
#: Everything the tutorials ship: the notebooks, the kernel files they open and the recorded results they load.
TUTORIAL_FILES = sorted(str(p.relative_to(ROOT / "notebooks")) for p in (ROOT / "notebooks").rglob("*")
                        if p.is_file() and p.suffix in (".ipynb", ".py", ".json", ".jsonl", ".gz")
                        and "checkpoint" not in str(p))


def test_unknown_options_are_passed_on_to_jupyterlab():
    args = parse_args(["lab", "--no-browser", "--port", "8890", "--ServerApp.token=t"])
    assert args.extra == ["--no-browser", "--port", "8890", "--ServerApp.token=t"]
    assert lab_command("tut", args.extra, as_root=False)[:9] == [
        sys.executable, "-m", "jupyter", "lab", "tut", "--no-browser", "--port", "8890", "--ServerApp.token=t"]


def test_dir_is_tslabs_own_option():
    args = parse_args(["lab", "--dir", "mine", "--no-browser"])
    assert args.dir == "mine" and args.extra == ["--no-browser"]


def test_unknown_options_of_other_commands_are_still_errors(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["list", "--no-browser"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --no-browser" in capsys.readouterr().err


def test_jupyterlab_starts_without_the_news_prompt_unless_settings_are_given():
    from tslab.lab import LAB_SETTINGS

    overrides = json.loads((LAB_SETTINGS / "overrides.json").read_text())
    assert overrides == {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                                         "checkForUpdates": False}}
    assert lab_command("tut", [], as_root=False)[-1] == f"--LabApp.app_settings_dir={LAB_SETTINGS}"
    mine = lab_command("tut", ["--LabApp.app_settings_dir=mine"], as_root=False)
    assert [arg for arg in mine if "app_settings_dir" in arg] == ["--LabApp.app_settings_dir=mine"]


def test_allow_root_only_as_root():
    assert "--allow-root" in lab_command("tut", [], as_root=True)
    assert "--allow-root" not in lab_command("tut", [], as_root=False)
    assert lab_command("tut", ["--allow-root"], as_root=True).count("--allow-root") == 1
    assert ("--allow-root" in lab_command("tut", [])) == (os.geteuid() == 0)


def test_source_checkout_copies_from_the_repositorys_notebooks():
    assert tutorials_source() == ROOT / "notebooks"


def test_copy_once_and_keep_the_users_edits(tmp_path):
    dest = tmp_path / "tut"
    copied = copy_tutorials(dest)
    assert sorted(p.relative_to(dest).as_posix() for p in copied) == TUTORIAL_FILES
    edited = dest / NOTEBOOKS[0]
    edited.write_text("my edits")
    (dest / NOTEBOOKS[1]).unlink()
    again = copy_tutorials(dest)
    assert [p.name for p in again] == [NOTEBOOKS[1]]
    assert edited.read_text() == "my edits"
    assert copy_tutorials(dest) == []


def test_copy_skips_checkpoints_and_keeps_subfolders(tmp_path):
    src = tmp_path / "src"
    (src / ".ipynb_checkpoints").mkdir(parents=True)
    (src / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_text("{}")
    (src / "kernels").mkdir()
    (src / "kernels" / "k.py").write_text("x = 1\n")
    (src / "a.ipynb").write_text("{}")
    copied = copy_tutorials(tmp_path / "out", src)
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in copied) == ["a.ipynb", "kernels/k.py"]


def test_tutorials_read_nothing_outside_their_folder():
    # The copy in ./tslab-tutorials has no repository around it: a path that climbs out of it finds nothing.
    for name in NOTEBOOKS:
        cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
        code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        assert 'Path("..")' not in code and "../" not in code, name


def test_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(TslabError, match=r"--dir=.* is a file; name a folder"):
        copy_tutorials(tmp_path / "f")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # With hatchling installed (the test extra lists it) the wheel builds offline, without an isolated env.
    offline = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *offline, "-w", str(out),
                           str(ROOT)], capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode and not offline:
        pytest.skip(f"no hatchling here and pip could not fetch it: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return next(out.glob("tslab-*.whl"))


def test_wheel_ships_the_tutorials(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n.removeprefix("tslab/tutorials/") for n in names if n.startswith("tslab/tutorials/"))
    assert shipped == TUTORIAL_FILES
    assert "tslab/schemas/design.v1.json" in names and "tslab/lab_settings/overrides.json" in names


def test_installed_wheel_copies_its_own_tutorials(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import sys; from tslab.lab import copy_tutorials, tutorials_source; print(tutorials_source()); "
            "print(len(copy_tutorials(sys.argv[1])))")
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "tut")], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120, check=True)
    source, count = out.stdout.split()
    assert Path(source) == site / "tslab" / "tutorials" and int(count) == len(TUTORIAL_FILES)
    assert sorted(p.name for p in (tmp_path / "tut").iterdir()) == sorted([*NOTEBOOKS, "data", "kernels"])
