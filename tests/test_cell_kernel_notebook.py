"""In a real Jupyter kernel: a TS kernel typed into cells is captured, checked and compiled for Hopper without
forking the kernel's process, the GPU worker builds it from its copy and receives ``inputs``/``reference``
functions typed into a cell, and ``run`` takes them (here it stops at the missing GPU, as it says)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import tslab.gpu as gpu

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
KERNEL_CELLS = (ROOT / "tests" / "fixtures" / "row_copy_cells.py").read_text()
CELLS = [
    KERNEL_CELLS,
    "def make_inputs():\n    import torch\n\n    src = torch.randn(6, 256, device='cuda', dtype=torch.float16)\n"
    "    return src, torch.empty_like(src)\n\n\ndef expected(src, dst):\n    return src\n",
    "import tslab\nfrom tslab import fake, gpu\nfrom tslab.capture import worker\n\n\n"
    "def refuse(*_):\n    raise AssertionError('forked the notebook kernel')\n\n\nworker._forked = refuse\n"
    "rows = fake.tensor('f16', (6, 256))\ndesign = tslab.capture(copy_rows, rows, rows)\n"
    "verdict = tslab.check(design)\nring = next(r for t in design.lower().tasks for r in t.dst_resources "
    "if r.name == 'ring')\nkernel = gpu.compile(design.with_knobs(depth=3), arch='sm_90a')\n"
    "print(verdict.status, type(ring) is StagingRing, kernel.smem_bytes, 'cp.async.bulk.tensor' in kernel.ptx)",
    "from tslab.gpu.captured import job_for\nfrom tslab.gpu.worker import run_job\n\n"
    "job = job_for(design, 'sm_90a', True, make_inputs, lambda src, dst: src, ['dst'], 'run')\n"
    "try:\n    run_job('tslab.gpu.captured_jobs:run_job', job, what='run')\nexcept gpu.NoGpuError as exc:\n"
    "    print(exc)",
    "try:\n    kernel.run(inputs=make_inputs, reference=expected, outputs=['dst'])\n"
    "except gpu.NoGpuError as exc:\n    print(type(exc).__name__, exc)",
]


def _kernelspec(tmp_path: Path) -> Path:
    spec = tmp_path / "kernels" / "tslab-cells"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "tslab cells", "language": "python",
        "env": {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}}))
    return tmp_path


def _printed(cell) -> str:
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert not errors, "\n".join(errors[0].traceback)
    return "".join(o.get("text", "") for o in cell.outputs).strip()


@pytest.mark.skipif(gpu.device() is not None, reason="this machine has a GPU: the run would really run")
def test_a_kernel_typed_into_cells_captures_compiles_and_reaches_the_gpu_worker(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(_kernelspec(tmp_path)))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in CELLS])
    nbclient.NotebookClient(nb, kernel_name="tslab-cells", timeout=300,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert _printed(nb.cells[2]).splitlines()[-1] == "SAFE True 816 True"
    assert _printed(nb.cells[3]) == ("captured kernel 'copy_rows': compiled for sm_90a and its functions arrived, "
                                     "but there is no NVIDIA GPU or driver on this machine to run it")
    assert _printed(nb.cells[4]).startswith("NoGpuError run of captured kernel 'copy_rows': no NVIDIA GPU")
