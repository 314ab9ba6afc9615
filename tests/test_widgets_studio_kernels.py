"""The Studio's views end on the newest verdict in a real kernel, for ipykernel versions that deliver trait
changes from the background re-check thread differently (7.0.1 drops or reorders them; later ones do not).

Each case runs tutorial 01's Studio cells with nbclient and reads the badge from the saved widget state.
The ipykernel 7.0.1 kernel lives in a small venv over this interpreter's packages, built once and cached in the temp
directory (skipped when pip cannot fetch it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(tempfile.gettempdir()) / "tslab-test-ipykernel"
CELLS = [
    "from tslab.kernels import tma_copy\nfrom tslab.widgets import Studio\nstudio = Studio(tma_copy.design())\nstudio",
    "studio.pipeline_editor.set('smem_ring', 'num_stages', 15)\nstudio.wait()\nprint(studio.verdict.status)\n"
    "studio.revert(0)\nprint(studio.verdict.status, studio.design.pipelines()['smem_ring']['num_stages'])",
]


def _python_with(version: str | None) -> str:
    """A Python whose ipykernel is ``version`` (None: this one's)."""
    if version is None:
        return sys.executable
    env = CACHE / f"ipykernel-{version}"
    python = env / "bin" / "python"
    ready = (env / "ready").exists()
    if not ready:
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--clear", str(env)], check=True)
    # A venv made from a venv sees the base interpreter's packages only: add this one's behind its own. Written on
    # every run: the cached venv outlives the interpreter that made it (a clone's .venv, since removed).
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "tslab-parent.pth").write_text("\n".join(sys.path[1:]) + "\n")
    if not ready:
        pip = subprocess.run([str(python), "-m", "pip", "install", "-q", f"ipykernel=={version}"],
                             capture_output=True, text=True, timeout=180)
        if pip.returncode:
            pytest.skip(f"could not install ipykernel=={version}: {pip.stderr.strip()[-300:]}")
        (env / "ready").touch()
    return str(python)


def _kernelspec(tmp_path: Path, python: str) -> Path:
    spec = tmp_path / "kernels" / "tslab-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "tslab test", "language": "python",
        "env": {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}}))
    return tmp_path


def _badge_states(nb) -> list[dict]:
    models = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return [m["state"] for m in models.values()
            if m["model_name"] == "HTMLModel" and "tslab-studio-badge" in m["state"].get("_dom_classes", [])]


@pytest.mark.parametrize("version", ["7.0.1", None], ids=["ipykernel-7.0.1", "ipykernel-installed"])
def test_the_badge_ends_on_the_newest_verdict(version, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(_kernelspec(tmp_path, _python_with(version))))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in CELLS])
    client = nbclient.NotebookClient(nb, kernel_name="tslab-test", timeout=120, store_widget_state=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    printed = "".join(o.get("text", "") for o in nb.cells[1].outputs).split()
    assert printed[-2:] == ["SAFE", "4"]
    (badge,) = _badge_states(nb)
    assert 'data-status="SAFE"' in badge["value"]
    assert "re-checking" not in badge["value"]
