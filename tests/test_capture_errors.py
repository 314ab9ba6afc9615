"""Every way a capture can fail says where and what to do, and leaves the caller's process as it was."""

import importlib.util
import os
from pathlib import Path

import cutlass
import pytest
from cutlass.experimental.task_scheduling.task_manager import TaskManager
from fixtures import broken, ring_copy

import tslab
from tslab import fake
from tslab.capture import CaptureError, capture_all

ORIGINAL_INIT = TaskManager.__init__


def f16(*shape):
    return fake.tensor("f16", shape)


def test_no_task_manager():
    with pytest.raises(tslab.TslabError, match="'no_task_manager': no TaskManager was built during the"):
        tslab.capture(broken.no_task_manager, f16(64))


def test_the_kernels_own_error_names_its_file_and_line():
    lines = Path(broken.__file__).read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "the line a capture must name" in text)
    with pytest.raises(tslab.TslabError, match=rf"broken\.py:{line} in failing_trace: ValueError: tile size"):
        tslab.capture(broken.failing_trace, f16(64))


def test_an_abort_becomes_an_error_and_the_caller_lives():
    pid = os.getpid()
    with pytest.raises(tslab.TslabError, match=r"SIGABRT.*this Python process is unaffected"):
        tslab.capture(broken.aborting_trace, f16(64))
    assert os.getpid() == pid
    assert tslab.check(tslab.capture(ring_copy.ring_copy, f16(2, 128), f16(2, 128), 2)).ok


def test_a_blackwell_kernel_traced_for_hopper_suggests_sm100a():
    with pytest.raises(tslab.TslabError, match=r"Blackwell-only.*TmaUmma; capture it with arch=\"sm_100a\""):
        tslab.capture(broken.blackwell_only, f16(4, 256), f16(4, 256))


def test_a_resource_class_local_to_a_function_is_named():
    with pytest.raises(CaptureError, match=r"'_local_parts\.<locals>\.LocalSink' is defined inside a function"):
        tslab.capture(broken.local_resource_class, f16(64))


def test_bad_arch_name():
    with pytest.raises(tslab.TslabError, match=r"arch='hopper' is not a GPU architecture name; use 'sm_90a'"):
        tslab.capture(broken.no_task_manager, f16(64), arch="hopper")


def test_not_callable():
    with pytest.raises(tslab.TslabError, match="is not callable"):
        tslab.capture("ring_copy")


def test_missing_file_and_function():
    with pytest.raises(tslab.TslabError, match="does not exist"):
        tslab.capture_file("no/such/kernel.py", "host")
    with pytest.raises(tslab.TslabError, match="has no function 'ring_cpy'; did you mean 'ring_copy'"):
        tslab.capture_file(ring_copy.__file__, "ring_cpy")


def test_arguments_that_do_not_fit_the_host_function_are_named_before_tracing():
    # The DSL's own message for this points into tslab's tracing code; the check names the call instead.
    with pytest.raises(tslab.TslabError, match=r"the arguments do not fit ring_copy\(.*missing a required argument.*"
                                              r"given: 'nonsense'") as info:
        tslab.capture_file(ring_copy.__file__, "ring_copy", "nonsense")
    assert "recorder.py" not in str(info.value)


def test_a_file_that_fails_to_import_names_its_line(tmp_path):
    bad = tmp_path / "bad_kernel.py"
    bad.write_text("import cutlass\n\nTILE = 128 // 0\n")
    with pytest.raises(tslab.TslabError, match=r"importing it failed at .*bad_kernel\.py:3 .*ZeroDivision"):
        tslab.capture_file(bad, "host")


def test_a_trace_failing_after_the_task_manager_keeps_what_was_built():
    with pytest.raises(CaptureError, match="Blackwell-only") as info:
        tslab.capture(broken.blackwell_only, f16(4, 256), f16(4, 256))
    assert info.value.result is not None
    assert info.value.result.design.tasks() == ["FillTask", "DrainTask", "IdleTask"]
    with pytest.raises(CaptureError) as info:
        tslab.capture(broken.no_task_manager, f16(64))
    assert info.value.result is None


def test_a_kernel_written_for_another_dsl_version_is_not_blamed_on_its_arguments():
    with pytest.raises(CaptureError) as info:
        tslab.capture(broken.newer_api, f16(4096))
    message = str(info.value)
    assert "broken.py" in message and "unexpected keyword argument 'context'" in message
    assert "uses TaskManager.setup_resources_and_tasks in a way nvidia-cutlass-dsl 4.8.1 does not accept" in message
    assert "written for another CuTe DSL version" in message
    assert "check the arguments" not in message
    assert "the 1 TaskManager(s) built before it are in the error's .result" in message
    assert tslab.check(info.value.result.design).ok


@pytest.mark.skipif(importlib.util.find_spec("tvm_ffi") is not None, reason="TVM FFI is installed here")
def test_an_option_the_installation_cannot_serve_names_the_option_not_the_kernel():
    with pytest.raises(CaptureError) as info:
        tslab.capture(ring_copy.ring_copy, f16(2, 128), f16(2, 128), 2, options="--enable-tvm-ffi")
    message = str(info.value)
    assert "the compile stopped on its options (options='--enable-tvm-ffi'), not on the kernel" in message
    assert "CONFIG_MISSING_TVM_FFI" in message and "apache-tvm-ffi" in message
    assert "tslab" + os.sep + "capture" not in message  # the DSL's message points into tslab's worker: not shown
    assert info.value.result.design.tasks() == ["FillTask", "DrainTask", "IdleTask"]


def test_a_runtime_size_given_as_a_constant_is_named_as_such():
    with pytest.raises(CaptureError) as info:
        tslab.capture(broken.runtime_rows_expected, f16(4, 128), cutlass.Int32(3))
    message = str(info.value)
    assert "broken.py" in message and "__new_from_mlir_values__" in message
    assert "expects at run time, but this capture made it the constant 4" in message
    assert "as None in the fake tensors' shapes" in message
    with pytest.raises(CaptureError, match="no TaskManager was built"):  # the trace itself now passes
        tslab.capture(broken.runtime_rows_expected, fake.tensor("f16", (None, 128)), cutlass.Int32(3))


def test_nothing_is_left_patched():
    assert TaskManager.__init__ is ORIGINAL_INIT
    capture_all(ring_copy.ring_copy, f16(2, 128), f16(2, 128), 2)
    assert TaskManager.__init__ is ORIGINAL_INIT
    with pytest.raises(tslab.TslabError):
        tslab.capture(broken.failing_trace, f16(64))
    assert TaskManager.__init__ is ORIGINAL_INIT
