"""The knob fields of a captured kernel in the PipelineEditor and the Studio."""

from __future__ import annotations

import pytest

import tslab
from tests.fixtures import ring_copy
from tslab import fake
from tslab.widgets import PipelineEditor, Studio


@pytest.fixture(scope="module")
def captured():
    return tslab.capture_file(ring_copy.__file__, "ring_copy", fake.tensor("f16", (6, 256)),
                              fake.tensor("f16", (6, 256)))


def test_a_captured_design_shows_its_knobs_and_marks_what_they_size(captured):
    editor = PipelineEditor(captured, auto_check=False)
    assert editor.knobs is not None
    assert editor.knobs.fields["stages"].value == "3"
    assert editor.knobs.fields["STRIP"].value == "128"
    assert "sized by knob stages (3)" in editor.message("stripRing", "num_stages")


def test_a_knob_typed_in_the_field_re_traces_the_kernel(captured):
    editor = PipelineEditor(captured, auto_check=True)
    editor.knobs.fields["stages"].value = "5"
    assert editor.design.knobs()["stages"] == 5
    assert editor.verdict.ok
    assert editor.verdict.smem_total == 5 * 128 * 2
    assert "sized by knob stages (5)" in editor.message("stripRing", "num_stages")
    assert editor.knobs.fields["stages"].value == "5"


def test_a_value_that_is_not_a_number_is_refused_at_the_field(captured):
    editor = PipelineEditor(captured, auto_check=False)
    editor.knobs.fields["stages"].value = "2.5x"
    assert "is not a value" in editor.knobs.messages["stages"].value
    assert editor.design is captured
    editor.knobs.fields["stages"].value = "'four'"
    assert "knob" in editor.knobs.messages["stages"].value
    assert editor.design is captured


def test_the_studio_rechecks_after_a_knob_edit(captured):
    studio = Studio(captured)
    try:
        assert studio.pipeline_editor.set_knob("stages", 4)
        studio.wait()
        assert studio.design.knobs()["stages"] == 4
        assert studio.verdict.ok and studio.verdict.smem_total == 4 * 128 * 2
    finally:
        studio.close()


def test_catalog_designs_have_no_knob_panel():
    editor = PipelineEditor(tslab.kernels.design("tma_copy"), auto_check=False)
    assert editor.knobs is None
    with pytest.raises(tslab.DesignError, match="not a captured kernel"):
        editor.set_knob("stages", 2)
