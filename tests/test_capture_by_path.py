"""Kernels whose module cannot be imported by name, and plain arguments that survive a saved design."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import cutlass
import cutlass.cute as cute
import pytest
from fixtures import ring_copy

import tslab
from tslab import fake
from tslab.capture.api import CaptureError, _refuse_traced_resources
from tslab.capture.snapshot import Traced
from tslab.capture.source import arg_from_spec, arg_spec
from tslab.core.design import Design
from tslab.errors import TslabError


def f16(*shape):
    return fake.tensor("f16", shape)


def _loaded_by_path(path: str, name: str):
    """The module as ``spec_from_file_location`` loads it: not listed in ``sys.modules``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_capture_call_of_a_kernel_imported_by_path_equals_capture_file():
    module = _loaded_by_path(ring_copy.__file__, "ring_copy_by_path")
    src, dst = f16(8, 512), f16(8, 512)
    called = tslab.capture_call(lambda: cute.compile(module.ring_copy, src, dst, 3, options="--gpu-arch sm_90a"))
    from_file = tslab.capture_file(ring_copy.__file__, "ring_copy", f16(8, 512), f16(8, 512), 3)
    a, b = tslab.check(called.design), tslab.check(from_file)
    assert a.ok and b.ok
    assert (a.smem_total, a.checker.states_explored, a.status) == \
        (b.smem_total, b.checker.states_explored, b.status)


def test_a_resource_left_in_the_trace_is_a_clear_error():
    from types import SimpleNamespace

    task = SimpleNamespace(src_resources=[Traced("RingResource", "<RingResource ring>")], dst_resources=[])

    with pytest.raises(CaptureError, match=r"capture of 'k': TaskManager 0: a resource \(RingResource: "
                                           r"<RingResource ring>\) could not be copied out of the trace.*"
                                           r"tslab.capture_file\(path, host_function"):
        _refuse_traced_resources({"tasks": [task], "smem_allocator": None}, "k", 0)


@pytest.mark.parametrize("value", [(256, 512), [1, (2.5, "x"), True], cutlass.Float16, cutlass.Int32, "name", None])
def test_plain_arguments_round_trip(value):
    assert arg_from_spec(arg_spec(value)) == value


def test_an_argument_that_cannot_be_saved_is_named():
    with pytest.raises(TslabError, match=r"argument 3 \{'object': '<x>'\} cannot be re-created .* tuples and lists"):
        arg_from_spec({"object": "<x>"}, "argument 3")


CUTLASS = os.environ.get("TSLAB_CUTLASS_SRC", "")
COPY_TMA = (Path(CUTLASS) / "examples/python/CuTeDSL/experimental/task_scheduling/blackwell/tutorial"
            / "01_copy_basics_ts/02_copy_tma.py")


@pytest.mark.skipif(not COPY_TMA.is_file(), reason="TSLAB_CUTLASS_SRC names no NVIDIA/cutlass checkout")
def test_nvidias_tma_copy_tutorial_by_path_and_saved_with_its_tuple_argument():
    with fake.torch_stand_in():
        module = _loaded_by_path(str(COPY_TMA), "copy_tma_by_path")
    a, b = f16(256, 512), f16(256, 512)
    called = tslab.capture_call(lambda: cute.compile(module.tma_copy_kernel_host, (256, 512), a, b, False,
                                                     options="--gpu-arch sm_100a"))
    design = tslab.capture_file(COPY_TMA, "tma_copy_kernel_host", (256, 512), f16(256, 512), f16(256, 512), False,
                                arch="sm_100a")
    assert tslab.check(called.design).checker.states_explored == tslab.check(design).checker.states_explored
    reopened = Design.from_json(design.to_json())
    assert reopened.source.args[0] == (256, 512)
    assert tslab.check(reopened).ok
