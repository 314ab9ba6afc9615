"""Capturing the fixture copy kernels gives the same design TS verifies when built directly on the CPU."""

import sys
from pathlib import Path

import cutlass.cute as cute
import pytest
from fixtures import ring_copy, stride_copy

import tslab
from tslab import fake
from tslab.capture import capture_all, capture_file_all
from tslab.core.blueprint import Blueprint
from tslab.core.design import Design


def f16(*shape):
    return fake.tensor("f16", shape)


@pytest.fixture(scope="module")
def ring():
    return capture_all(ring_copy.ring_copy, f16(8, 512), f16(8, 512), 3)


@pytest.fixture(scope="module")
def twice():
    return capture_all(stride_copy.copy_twice, f16(4096), f16(4096), f16(6, 256), f16(6, 256))


def direct(make):
    """A design lowered from fresh TS objects on every check, built on the CPU by the fixture's own code."""

    def source():
        tasks, graph, *_ = make()
        smem = [r for r in graph if r.get_smem_requirements()]
        return Blueprint(tasks=tasks, graph=graph, smem_resources=smem)

    return tslab.Design("custom", {}, _source=source)


def direct_ring(rows, stages):
    return direct(lambda: ring_copy.make_parts(rows, stages))


def direct_stride():
    return direct(stride_copy.make_parts)


def assert_same_verdict(captured, direct):
    a, b = tslab.check(captured), tslab.check(direct)
    assert a.status == b.status == "SAFE"
    assert a.layout.equals(b.layout)
    assert a.schedule.equals(b.schedule)
    assert a.checker.states_explored == b.checker.states_explored
    assert (a.smem_total, a.barrier_bytes) == (b.smem_total, b.barrier_bytes)


def test_ring_copy_capture_equals_the_direct_design(ring):
    assert [d.kernel for d in ring.designs] == ["ring_copy"]
    assert_same_verdict(ring.design, direct_ring(rows=8, stages=3))


def test_ring_copy_recheck_prints_what_ts_printed_in_the_trace(ring):
    manager = ring.managers[0]
    assert manager.agreement() == {"schedule": True, "smem": True, "checker": True}
    assert "Result: SAFE" in manager.report
    assert manager.ts_error is None


def test_capture_records_the_dsl_values_it_left_behind(ring):
    traced = ring.managers[0].traced_values
    assert any(path.endswith("tma_desc") for path in traced)
    assert any(path.endswith(".out") for path in traced)


def test_two_task_managers_give_two_designs(twice):
    assert [d.kernel for d in twice.designs] == ["copy_twice[0]", "copy_twice[1]"]
    assert twice.design is twice.designs[0]
    assert_same_verdict(twice.designs[0], direct_stride())
    assert_same_verdict(twice.designs[1], direct_ring(rows=6, stages=2))
    assert twice.managers[0].agreement() == {"schedule": True, "checker": True}  # no SMEM, no SMEM report
    assert twice.managers[1].agreement() == {"schedule": True, "smem": True, "checker": True}


def test_a_captured_design_takes_edits(ring):
    design = ring.design
    assert design.pipelines()["stripRing"]["num_stages"] == 3
    steps = [s for s in design.schedule("DrainTask") if s[1] != "ConsumerRelease"]
    broken = design.with_schedule("DrainTask", steps)
    verdict = tslab.check(broken)
    assert not verdict.ok
    # The kernel sizes its ring from its `stages` argument, not from the pipeline: a pipeline edit alone is
    # not the kernel that would run, and the verdict says so; the knob edit re-traces it.
    unfaithful = tslab.check(design.with_pipeline("stripRing", num_stages=2))
    assert unfaithful.status == "INVALID"
    assert [e.kind for e in unfaithful.errors] == ["unfaithful-edit"]
    assert "knob `stages` (3)" in unfaithful.errors[0].hint
    knob = tslab.check(design.with_knobs(stages=2))
    assert knob.ok
    assert knob.smem_total == 2 * 128 * 2


def test_capture_file_imports_the_kernel_by_path():
    path = ring_copy.__file__
    result = capture_file_all(path, "ring_copy", f16(4, 256), f16(4, 256), 2)
    assert_same_verdict(result.design, direct_ring(rows=4, stages=2))
    assert tslab.capture_file(path, "ring_copy", f16(4, 256), f16(4, 256), 2).kernel == "ring_copy"


def test_a_design_saved_from_a_file_reopens_with_its_frontend_and_options():
    design = tslab.capture_file(ring_copy.__file__, "ring_copy", f16(4, 256), f16(4, 256), 2,
                                frontend=cute.FrontendNext, options="--opt-level 2")
    saved = design.with_knobs(stages=3).to_json()
    reopened = Design.from_json(saved)
    assert reopened.source.frontend is cute.FrontendNext
    assert reopened.source.options == "--opt-level 2"
    assert reopened.knobs()["stages"] == 3
    assert reopened.to_json() == saved
    assert tslab.check(reopened).ok


def test_a_kernel_object_is_named_by_its_class():
    design = tslab.capture(stride_copy.StrideCopy(), f16(2048), f16(2048))
    assert design.kernel == "StrideCopy"
    assert tslab.check(design).ok


def test_capture_returns_the_first_design():
    design = tslab.capture(stride_copy.stride_copy, f16(2048), f16(2048))
    assert design.tasks() == ["CopyTask"]
    assert tslab.check(design).ok


def test_blackwell_kernel_captures_for_sm100a():
    result = capture_all(ring_copy.ring_copy, f16(4, 256), f16(4, 256), 2, True, arch="sm_100a")
    assert result.arch == "sm_100a"
    assert result.design.pipelines()["stripRing"]["pipeline_type"] == "TmaUmma"
    assert tslab.check(result.design).ok


def test_a_kernel_file_importing_torch_captures_without_torch(tmp_path):
    source = Path(ring_copy.__file__).read_text()
    source = source.replace("import cutlass\n", "import torch\nimport cutlass\n", 1)
    source = source.replace("from . import", "from fixtures import")
    path = tmp_path / "torch_ring.py"
    path.write_text(source)
    design = tslab.capture_file(path, "ring_copy", f16(2, 128), f16(2, 128), 2)
    assert tslab.check(design).ok
    assert "torch" not in sys.modules or not getattr(sys.modules["torch"], "tslab_stand_in", False)


def test_taskmanager_options_are_recorded(ring):
    assert ring.managers[0].options["exhaustive_deadlock_race_check"] is True
    assert ring.managers[0].options["assume_pdl_wait_completed"] is False


def test_result_text_lists_each_task_manager(twice):
    text = twice.text()
    assert text.splitlines()[0] == "captured for sm_90a: 2 TaskManager(s)"
    assert "copy_twice[1]: tasks FillTask, DrainTask, IdleTask" in text
    assert twice._repr_mimebundle_()["text/plain"] == text
