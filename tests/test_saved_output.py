"""A widget's saved output is what its cell produced: edits from later cells show under those cells, not in it.

The widget's own cell and its front end (edits typed into the widget) still rewrite its saved payload; the live
widget follows every edit either way. Run for real with nbclient, as nbval and a saved notebook see it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tslab.core import mime
from tslab.kernels import tma_copy
from tslab.widgets import PipelineEditor, saved_output

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
ROOT = Path(__file__).resolve().parents[1]


class _Handle:
    def __init__(self):
        self.updates = []

    def update(self, bundle, raw=False):
        self.updates.append(bundle)


def test_an_edit_from_another_cell_leaves_the_saved_payload_as_its_cell_left_it(monkeypatch):
    editor = PipelineEditor(tma_copy.design())
    handle = _Handle()
    editor._saved_shown = (saved_output._Shown(handle, "cell-a", {}),)
    monkeypatch.setattr(saved_output, "current_request", lambda: ("execute_request", "cell-b"))
    editor.set("smem_ring", "num_stages", 15)  # from a later cell
    assert handle.updates == []
    monkeypatch.setattr(saved_output, "current_request", lambda: ("comm_msg", "typed"))
    editor.set("smem_ring", "num_stages", 3)  # typed into the widget itself
    monkeypatch.setattr(saved_output, "current_request", lambda: ("execute_request", "cell-a"))
    editor.set("smem_ring", "num_stages", 2)  # by the cell that displayed it
    assert [u[mime.DESIGN]["pipelines"]["smem_ring"]["num_stages"] for u in handle.updates] == [3, 2]


CELLS = [
    "from tslab.kernels import tma_copy\nfrom tslab.widgets import PipelineEditor, Studio\n"
    "editor = PipelineEditor(tma_copy.design())\neditor",
    "editor.set('smem_ring', 'num_stages', 15)\nprint(editor.verdict.status)",
    "studio = Studio(tma_copy.design(), debounce=0.01)\nstudio",
    "studio.pipeline_editor.set('smem_ring', 'num_stages', 15)\nstudio.wait()\nprint(studio.verdict.status)",
    "same = PipelineEditor(tma_copy.design())\ndisplay(same)\nsame.set('smem_ring', 'num_stages', 15)",
]


def _payloads(cell):
    return [o["data"][mime.DESIGN] for o in cell.outputs if mime.DESIGN in o.get("data", {})]


def test_saved_outputs_stay_true_to_their_cells(tmp_path, monkeypatch):
    spec = tmp_path / "kernels" / "tslab-saved"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [os.sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "tslab test", "language": "python",
        "env": {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in CELLS])
    nbclient.NotebookClient(nb, kernel_name="tslab-saved", timeout=180,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    (editor,), (studio,), (same,) = (_payloads(nb.cells[i]) for i in (0, 2, 4))
    assert editor["verdict"]["status"] == "SAFE" and editor["pipelines"] == {}  # not the CAPACITY of cell 2
    assert studio["verdict"]["status"] == "SAFE" and studio["pipelines"] == {}  # not the CAPACITY of cell 4
    assert [o["text"].strip() for o in nb.cells[1].outputs] == ["CAPACITY"]  # the later edit, under its cell
    assert [o["text"].strip() for o in nb.cells[3].outputs] == ["CAPACITY"]
    assert same["verdict"]["status"] == "CAPACITY"  # its own cell's edit: the payload follows it
