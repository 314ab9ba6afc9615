"""On a GPU: a TS kernel typed into notebook cells runs, checks against a reference typed into a cell, times against
a baseline typed into a cell (or a lambda) and is profiled; a file's kernel runs and sweeps on such functions too.

The cells run as a Jupyter kernel runs them (:mod:`cells`: the GPU machine has no Jupyter)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cells import ROW_COPY_CELLS, notebook_cells

import tslab
import tslab.gpu as gpu
from tslab import fake

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(gpu.device() is None, reason="no NVIDIA GPU here")]

KERNELS = Path(__file__).resolve().parents[1] / "notebooks" / "kernels"
ROWS, COLS = 1024, 8192
IO_CELL = f"""
ROWS, COLS = {ROWS}, {COLS}

def make_inputs():
    import torch

    src = torch.randn(ROWS, COLS, device="cuda", dtype=torch.float16)
    return src, torch.empty_like(src)

def expected(src, dst):
    return src

def torch_copy(src, dst):
    dst.copy_(src)
"""


@pytest.fixture(scope="module")
def cells():
    with notebook_cells() as run:
        run(Path(ROW_COPY_CELLS).read_text())
        yield run(IO_CELL)


@pytest.fixture(scope="module")
def design(cells):
    return tslab.capture(cells["copy_rows"], fake.tensor("f16", (ROWS, COLS)), fake.tensor("f16", (ROWS, COLS)))


@pytest.fixture(scope="module")
def kernel(design):
    return gpu.compile(design)


def test_runs_and_checks_against_a_reference_typed_into_a_cell(cells, kernel):
    out = kernel.run(inputs=cells["make_inputs"], reference=cells["expected"], outputs=["dst"])
    assert out["checked"] and out["outputs"] == [
        {"output": "dst", "elements": ROWS * COLS, "unwritten": 0, "mismatches": 0, "max_abs_error": 0.0}]


def test_a_wrong_reference_in_a_lambda_is_reported_as_wrong(cells, kernel):
    with pytest.raises(gpu.CheckFailedError, match=rf"dst: {ROWS * COLS} of {ROWS * COLS} elements differ"):
        kernel.run(inputs=cells["make_inputs"], reference=lambda src, dst: src + 1, outputs=["dst"])


def test_a_knob_edit_of_the_cells_kernel_runs_as_edited(cells, design):
    deeper = gpu.compile(design.with_knobs(depth=4))
    assert deeper.smem_bytes == 4 * 128 * 2 + 4 * 16
    out = deeper.run(inputs=cells["make_inputs"], reference=cells["expected"], outputs=["dst"])
    assert out["outputs"][0]["mismatches"] == 0


def test_benches_against_a_baseline_typed_into_a_cell(cells, kernel):
    result = kernel.bench(inputs=cells["make_inputs"], reference=cells["expected"], outputs=["dst"],
                          baseline=cells["torch_copy"], repeats=3)
    row = result.table.iloc[0]
    assert row["kernel"] == "copy_rows" and row["median_us"] > 0 and row["ratio"] > 0 and row["rel_error"] == 0
    assert result.raw[0]["baseline"] == "torch_copy"
    print(f"\ncell row copy {ROWS}x{COLS} fp16: {row['median_us']:.1f} us, {row['ratio']:.2f}x torch's copy")


def test_is_profiled_on_inputs_typed_into_a_cell(cells, design):
    timeline = gpu.profile(design, inputs=cells["make_inputs"], reference=cells["expected"], outputs=["dst"],
                           repeats=3)
    frame = timeline.frame
    assert {"LoadTask", "StoreTask"} <= set(frame["task"])
    loads = frame[(frame["task"] == "LoadTask") & (frame["stage"] == "ProducerWork")]
    assert len(loads) == ROWS  # one TMA load per row, in the one warp of the load task
    assert timeline.meta["check"]["outputs"][0]["mismatches"] == 0


def test_the_cells_kernel_sweeps_a_knob_on_the_gpu(cells, design):
    swept = tslab.sweep(design, {"depth": [2, 4]}, measure="bench", executor="serial", inputs=cells["make_inputs"],
                        reference=cells["expected"], outputs=["dst"], baseline=cells["torch_copy"], quiet=True)
    assert list(swept.table["status"]) == ["ok", "ok"], swept.table.to_string()
    assert (swept.table["median_us"] > 0).all()


def test_a_files_kernel_runs_benches_and_sweeps_on_lambdas_and_cell_functions(cells):
    rows = fake.tensor("f16", (ROWS, COLS))
    row_copy = tslab.capture_file(KERNELS / "row_copy.py", "copy_rows", rows, rows)
    kernel = gpu.compile(row_copy)
    out = kernel.run(inputs=cells["make_inputs"], reference=lambda src, dst: src, outputs=["dst"])
    assert out["outputs"][0]["mismatches"] == 0
    timed = kernel.bench(inputs=cells["make_inputs"], baseline=lambda src, dst: dst.copy_(src), repeats=2)
    assert timed.table.iloc[0]["ratio"] > 0
    swept = tslab.sweep(row_copy, {"ring_stages": [2, 4]}, measure="bench", executor="serial",
                        inputs=cells["make_inputs"], reference=cells["expected"], outputs=["dst"],
                        baseline=cells["torch_copy"], quiet=True)
    assert list(swept.table["status"]) == ["ok", "ok"], swept.table.to_string()


def test_a_failing_inputs_typed_into_a_cell_names_itself(cells, kernel):
    with notebook_cells() as run:
        failing = run("def failing_inputs():\n    raise RuntimeError('on purpose')\n")["failing_inputs"]
        with pytest.raises(gpu.InputsError, match="inputs=failing_inputs: raised RuntimeError: on purpose"):
            kernel.run(inputs=failing)
