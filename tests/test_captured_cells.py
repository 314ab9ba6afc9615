"""A TS kernel typed into notebook cells (resource classes, the kernel, the host function) is captured, checked,
re-traced and compiled in workers, never in a fork of the notebook's process; the GPU worker builds it from its
copy, with its cells' text, and receives ``inputs``/``reference`` functions typed into a cell.

The cells run as a Jupyter kernel runs them (:mod:`cells`); ``test_cell_kernel_notebook.py`` does the same in a real
one. ``test_gpu_captured_cells.py`` runs, times and profiles the kernel on a GPU."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from cells import ROW_COPY_CELLS, notebook_cells

import tslab
import tslab.gpu as gpu
from tslab import fake
from tslab.capture import worker
from tslab.core.design import Design
from tslab.gpu.captured import captured_spec, job_for
from tslab.gpu.errors import UnsupportedKernelError
from tslab.gpu.worker import run_job
from tslab.sweep.errors import SweepError

IO_CELL = """
import threading

def make_inputs():
    import torch

    src = torch.randn(6, 256, device="cuda", dtype=torch.float16)
    return src, torch.empty_like(src)

def expected(src, dst):
    return src

lock = threading.Lock()

@cute.jit
def copy_rows_locked(src: cute.Tensor, dst: cute.Tensor):
    with lock:
        copy_rows(src, dst)
"""


@pytest.fixture(scope="module")
def cells():
    with notebook_cells() as run:
        run(Path(ROW_COPY_CELLS).read_text())
        yield run(IO_CELL)


@pytest.fixture(scope="module")
def design(cells):
    rows = fake.tensor("f16", (6, 256))
    return tslab.capture(cells["copy_rows"], rows, rows)


def _no_fork(*_):
    raise AssertionError("forked the notebook's process")


def test_it_is_captured_and_checked_in_the_fork_server_with_the_cells_own_classes(cells, monkeypatch):
    monkeypatch.setattr(worker, "_forked", _no_fork)
    rows = fake.tensor("f16", (6, 256))
    design = tslab.capture(cells["copy_rows"], rows, rows)
    verdict = tslab.check(design)
    assert verdict.status == "SAFE" and verdict.smem_used == 544
    ring = next(r for t in design.lower().tasks for r in t.dst_resources if r.name == "ring")
    assert type(ring) is cells["StagingRing"]  # what came back from the trace is the cell's class itself
    deeper = tslab.check(design.with_knobs(depth=3))  # a constexpr knob: traced again from the copy
    assert deeper.ok and deeper.smem_total == 3 * 128 * 2


def test_it_compiles_for_hopper_as_edited(design, monkeypatch):
    monkeypatch.setattr(worker, "_forked", _no_fork)
    kernel = gpu.compile(design.with_knobs(depth=3), arch="sm_90a")
    assert kernel.captured and kernel.registers and "cp.async.bulk.tensor" in kernel.ptx
    assert kernel.smem_bytes == 3 * 128 * 2 + 3 * 16


def test_the_gpu_worker_is_sent_its_code_with_the_cells_text(design):
    spec = captured_spec(design, "sm_90a")
    assert spec["file"] is None and spec["text"] is None and b"ipykernel_" in spec["host"]


@pytest.mark.skipif(gpu.device() is not None, reason="this machine has a GPU: test_gpu_captured_cells.py runs it")
def test_the_gpu_worker_builds_it_and_receives_the_cells_functions(cells, design):
    job = job_for(design, "sm_90a", True, cells["make_inputs"], lambda src, dst: src, ["dst"], "run")
    with pytest.raises(gpu.NoGpuError, match=r"captured kernel 'copy_rows': compiled for sm_90a and its functions "
                                             r"arrived, but there is no NVIDIA GPU"):
        run_job("tslab.gpu.captured_jobs:run_job", job, what="run of captured kernel 'copy_rows'")
    missing = job_for(design, "sm_90a", True, "no_such_module:make_inputs", None, None, "run")
    with pytest.raises(gpu.InputsError, match=r"inputs=no_such_module:make_inputs: could not be loaded in the GPU "
                                              r"worker: ModuleNotFoundError"):
        run_job("tslab.gpu.captured_jobs:run_job", missing, what="run of captured kernel 'copy_rows'")


def test_a_kernel_whose_code_cannot_be_sent_is_refused_naming_what_it_holds(cells, design):
    locked = Design.captured(dataclasses.replace(design.source, host_fn=cells["copy_rows_locked"]))
    with pytest.raises(UnsupportedKernelError, match=r"captured kernel 'copy_rows': its code cannot be sent to the "
                                                     r"GPU worker \(a process of its own\): host function "
                                                     r"copy_rows_locked -> global 'lock' \(lock: cannot pickle"):
        captured_spec(locked, "sm_90a")


def test_it_sweeps_in_this_process_and_worker_processes_are_refused_saying_so(design):
    swept = tslab.sweep(design, {"depth": [2, 3]}, measure="compile", executor="serial", arch="sm_90a", quiet=True)
    assert list(swept.table["status"]) == ["ok", "ok"], swept.table.to_string()
    with pytest.raises(SweepError, match=r"captured kernel 'copy_rows' was typed into a notebook cell, which worker "
                                         r"processes cannot open again; pass executor='serial'"):
        tslab.sweep(design, {"depth": [2, 3]}, measure="compile", arch="sm_90a", quiet=True)
