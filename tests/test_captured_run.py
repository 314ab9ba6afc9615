"""A captured kernel on the GPU, the parts that need no GPU: what is refused before anything runs, and why."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import cutlass.cute as cute
import pytest
from cells import notebook_cells

import tslab
import tslab.gpu as gpu
from tslab import fake
from tslab.capture.api import import_kernel_file
from tslab.compiling.targets import Target
from tslab.errors import DesignError
from tslab.gpu.captured import SentFunction, callable_ref, captured_spec, output_indices
from tslab.gpu.captured_jobs import load_callable
from tslab.gpu.compile import CompiledKernel
from tslab.gpu.errors import InputsError, UnsafeDesignError, UnsupportedKernelError
from tslab.sweep.errors import SweepError

ROW_COPY = Path(__file__).resolve().parents[1] / "notebooks" / "kernels" / "row_copy.py"


def module_level_inputs():
    """An importable function (this test module is on the worker's path)."""
    return ()


@pytest.fixture(scope="module")
def row_copy():
    return tslab.capture_file(ROW_COPY, "copy_rows", fake.tensor("f16", (6, 256)), fake.tensor("f16", (6, 256)))


def _compiled(design) -> CompiledKernel:
    """A CompiledKernel as compile() returns one for a captured design, without compiling."""
    verdict = tslab.check(design)
    return CompiledKernel(target=Target(design.kernel, design.knobs(), (), "captured"), arch="sm_90a", sms=0,
                          verdict=verdict, ptx="", cubin=b"", compile_seconds=0.0, captured=True)


def test_functions_the_worker_cannot_import_are_copied_by_value():
    offset = 1

    def local():
        return offset

    sent = callable_ref(lambda: (), "inputs")
    assert isinstance(sent, SentFunction) and str(sent) == "<lambda>"
    assert load_callable(callable_ref(local, "reference"))() == 1
    with notebook_cells() as run:
        typed = run("def make_inputs():\n    return 'from a cell'\n")["make_inputs"]
        sent = callable_ref(typed, "inputs")
    assert str(sent) == "make_inputs" and load_callable(sent)() == "from a cell"
    assert callable_ref(sent, "inputs") is sent  # as a sweep hands it on to run
    with pytest.raises(InputsError, match="name a function as 'module:function'"):
        callable_ref("make_inputs", "inputs")


def test_a_function_that_cannot_be_copied_is_refused_naming_what_it_holds():
    log = open(os.devnull, "w")  # noqa: SIM115 - an open file, held by the function below

    def make_inputs():
        log.write("making")
        return ()

    with pytest.raises(InputsError, match=r"inputs=make_inputs, a function defined inside another, cannot be sent to "
                                          r"the GPU worker \(a process of its own\): make_inputs -> 'log' \(from the "
                                          r"enclosing function\) \(TextIOWrapper: Cannot pickle files.*create that "
                                          r"inside the function instead, or put the function in a \.py file"):
        callable_ref(make_inputs, "inputs")
    log.close()


def test_importable_functions_are_sent_by_name():
    assert callable_ref(module_level_inputs, "inputs") == "test_captured_run:module_level_inputs"
    assert callable_ref("kernels/row_copy_io.py:inputs", "inputs") == "kernels/row_copy_io.py:inputs"


def test_a_function_from_a_file_imported_by_path_is_sent_as_its_file():
    io = import_kernel_file(ROW_COPY.parent / "row_copy_io.py")
    assert callable_ref(io.inputs, "inputs") == f"{ROW_COPY.parent / 'row_copy_io.py'}:inputs"


def test_outputs_are_named_by_parameter_or_position(row_copy):
    assert output_indices(row_copy, ["dst"]) == ([1], ["src", "dst"])
    assert output_indices(row_copy, 1)[0] == [1]
    with pytest.raises(InputsError, match=r"outputs=\['out'\]: 'out' is not an argument of 'copy_rows' \(src, dst\)"):
        output_indices(row_copy, ["out"])


def test_the_spec_is_the_checked_text_knobs_and_edits(row_copy):
    edited = row_copy.with_knobs(ring_stages=3)
    spec = captured_spec(edited, "sm_90a")
    assert spec["text"] == ROW_COPY.read_text() and spec["knob_edits"] == {"ring_stages": 3}
    assert spec["args"][0] == {"tensor": "Float16", "shape": [6, 256], "stride": [256, 1]}
    with pytest.raises(UnsupportedKernelError, match="captured and checked for sm_90a, but this GPU is sm_100a"):
        captured_spec(edited, "sm_100a")


def test_a_kernel_captured_with_capture_call_cannot_run(row_copy):
    module = import_kernel_file(ROW_COPY)
    src, dst = fake.tensor("f16", (6, 256)), fake.tensor("f16", (6, 256))
    called = tslab.capture_call(lambda: cute.compile(module.copy_rows, src, dst, options="--gpu-arch sm_90a"))
    with pytest.raises(UnsupportedKernelError, match=r"need the kernel captured from its host function.*"
                                                     r"tslab.capture\(host_function"):
        _compiled(called.design).run(inputs=module_level_inputs)


def test_run_and_bench_say_what_they_need(row_copy):
    kernel = _compiled(row_copy)
    with pytest.raises(InputsError, match=r"run needs inputs=, a function returning the host function's arguments"):
        kernel.run()
    with pytest.raises(InputsError, match=r"reference= needs outputs="):
        kernel.bench(inputs=module_level_inputs, reference=module_level_inputs)


def test_profile_of_a_captured_kernel_asks_for_inputs(row_copy):
    with pytest.raises(InputsError, match="profile needs inputs="):
        gpu.profile(row_copy)


@pytest.mark.skipif(gpu.device() is not None, reason="this machine has a GPU")
def test_without_a_gpu_run_says_so_after_checking_the_call(row_copy):
    with pytest.raises(gpu.NoGpuError, match="run of captured kernel 'copy_rows'"):
        _compiled(row_copy).run(inputs=module_level_inputs, reference=module_level_inputs, outputs=["dst"])
    with pytest.raises(gpu.NoGpuError):
        tslab.sweep(row_copy, {"ring_stages": [2, 3]}, measure="bench", inputs=module_level_inputs, quiet=True)


@pytest.mark.skipif(gpu.device() is not None, reason="this machine has a GPU")
def test_without_a_gpu_functions_typed_into_a_cell_get_as_far_as_the_gpu(row_copy):
    kernel = _compiled(row_copy)
    with pytest.raises(gpu.NoGpuError, match="run of captured kernel 'copy_rows'"):
        kernel.run(inputs=lambda: (), reference=lambda src, dst: src, outputs=["dst"])
    with pytest.raises(gpu.NoGpuError, match="bench of captured kernel 'copy_rows'"):
        kernel.bench(inputs=lambda: (), baseline=lambda src, dst: dst.copy_(src))
    with pytest.raises(gpu.NoGpuError, match="profile of captured kernel 'copy_rows'"):
        gpu.profile(row_copy, inputs=lambda: ())
    with pytest.raises(gpu.NoGpuError):
        tslab.sweep(row_copy, {"ring_stages": [2, 3]}, measure="bench", inputs=lambda: (), quiet=True)


def test_a_knob_edit_that_breaks_the_kernel_is_refused_before_anything_runs(row_copy):
    with pytest.raises(UnsafeDesignError, match=r"tslab.check\(\) says CAPACITY"):
        gpu.compile(row_copy.with_knobs(ring_stages=500), arch="sm_90a")  # 500 rows of 512 B: more than the SMEM
    with pytest.raises(DesignError, match="num_stages=0 must be a positive int"):
        gpu.compile(row_copy.with_knobs(ring_stages=0), arch="sm_90a")


def test_a_sweep_of_a_captured_kernel_asks_for_inputs_and_only_when_it_benches(row_copy):
    with pytest.raises(SweepError, match="pass inputs="):
        tslab.sweep(row_copy, {"ring_stages": [2, 3]}, measure="bench", quiet=True)
    with pytest.raises(SweepError, match="are for measure='bench' of a captured kernel"):
        tslab.sweep(row_copy, {"ring_stages": [2, 3]}, measure="check", inputs=module_level_inputs, quiet=True)


sys.modules.setdefault("test_captured_run", sys.modules[__name__])
