"""Cautions about which stage a work step reads: SAFE covers the order of waits, commits and releases, not that.

TS binds a consumer's work step to the stage of its resource's last wait. The edit tutorial 10 proves SAFE (wait for
V before taking the turn) would have Q K^T multiply the V tile; tslab says so beside the SAFE verdict."""

from __future__ import annotations

import pandas as pd
import pytest

import tslab
from tslab.core.stage_binding import unworked_waits
from tslab.kernels import NAMES, attention_sm90, kernel_module


def _schedule(*steps: tuple[str, str, str | None]) -> pd.DataFrame:
    return pd.DataFrame([{"task": "T", "section": "loop", "index": i, "resource": r, "stage": s, "label": w,
                          "guard": "Always"} for i, (r, s, w) in enumerate(steps)])


def test_a_second_wait_with_nothing_between_is_a_caution_naming_the_work_that_reads_the_second_stage():
    cautions = unworked_waits(_schedule(("kv", "ConsumerWait", None), ("kv", "ConsumerWait", None),
                                        ("kv", "ConsumerWork", "multiply_qk"), ("kv", "ConsumerRelease", None)))
    assert [(c.kind, c.where) for c in cautions] == [("stage-binding", "task 'T', loop step 1")]
    assert "'multiply_qk' reads the second stage only" in cautions[0].message
    assert "last wait" in cautions[0].hint


@pytest.mark.parametrize("between", [("kv", "ConsumerWork", "multiply_qk"), ("kv", "ConsumerRelease", None)])
def test_a_work_or_release_between_two_waits_is_no_caution(between):
    assert unworked_waits(_schedule(("kv", "ConsumerWait", None), between, ("kv", "ConsumerWait", None),
                                    ("kv", "ConsumerWork", "multiply_pv"))) == []


def test_waits_on_a_resource_the_task_never_works_on_are_no_caution():
    """FlashInfer's MMA task waits for K and V on ``smem_kv`` and reads them in work on its TMEM resources."""
    assert unworked_waits(_schedule(("kv", "ConsumerWait", None), ("kv", "ConsumerWait", None),
                                    ("tmem", "ProducerWork", "mma"), ("kv", "ConsumerRelease", None))) == []


def test_waits_on_two_resources_are_no_caution():
    assert unworked_waits(_schedule(("q", "ConsumerWait", None), ("kv", "ConsumerWait", None),
                                    ("kv", "ConsumerWork", "multiply_qk"), ("q", "ConsumerWork", "softmax"))) == []


def _wait_for_v_before_the_turn(design, task):
    steps = design.schedule(task)
    loop = [i for i, step in enumerate(steps) if step[2] == "Loop"]
    wait_v = [i for i in loop if steps[i][:2] == ("smem_kv", "ConsumerWait")][1]
    turn = next(i for i in loop if steps[i][0] == "mma_turn")
    moved = list(steps)
    moved.insert(turn, moved.pop(wait_v))
    return moved


def test_the_attention_edit_tutorial_10_proves_safe_carries_a_caution_everywhere_a_verdict_is_shown():
    from tslab.widgets.badge import badge_html  # the Jupyter stack: imported where used (GPU machines lack it)

    edited = attention_sm90.design()
    for task in ("MmaTask0", "MmaTask1"):
        edited = edited.with_schedule(task, _wait_for_v_before_the_turn(edited, task))
    verdict = tslab.check(edited)
    assert verdict.status == "SAFE"  # TS's verdict stands: the synchronisation is safe
    assert [c.where for c in verdict.cautions] == ["task 'MmaTask0', loop step 1", "task 'MmaTask1', loop step 1"]
    assert all("'multiply_qk' reads the second stage only" in c.message for c in verdict.cautions)
    assert "caution [stage-binding] task 'MmaTask0'" in verdict.text()
    assert "tslab-cautions" in verdict._repr_html_()
    assert "caution, task &#x27;MmaTask0&#x27;" in badge_html(verdict)  # the Studio's badge
    assert verdict.to_mime()["warnings"][0].startswith("caution: task 'MmaTask0'")  # a saved verdict
    assert verdict.summary()["cautions"][0]["kind"] == "stage-binding"  # tslab check --json


@pytest.mark.parametrize("name", NAMES)
def test_no_catalog_design_shows_a_caution(name):
    from tslab.widgets.badge import badge_html

    module = kernel_module(name)
    verdict = tslab.check(module.design())
    assert verdict.shown_cautions == [], [str(c) for c in verdict.cautions]
    assert "caution" not in badge_html(verdict) and "caution" not in verdict.text()


def test_the_schedule_editor_marks_the_steps_a_caution_names_and_only_for_the_design_on_show():
    """The Studio's schedule editor: the moved waits amber with the reason as a tooltip once the edit's verdict is
    in; on an undo no step is marked until the verdict of the design now on show says which (a mark never outlives
    the design it was found in)."""
    from tslab.widgets import Studio

    studio = Studio(attention_sm90.design())
    assert studio.wait(30) and studio.schedule_editor.marked_steps == []
    for task in ("MmaTask0", "MmaTask1"):
        design = studio.schedule_editor.design
        steps = design.schedule(task)
        loop = [i for i, step in enumerate(steps) if step[2] == "Loop"]
        wait_v = [i for i in loop if steps[i][:2] == ("smem_kv", "ConsumerWait")][1]
        turn = next(i for i in loop if steps[i][0] == "mma_turn")
        assert studio.schedule_editor.move(task, wait_v, "Loop", loop.index(turn))  # as a user's arrows do
        assert studio.schedule_editor.design.schedule(task) == _wait_for_v_before_the_turn(design, task)
    assert studio.wait(30)
    assert studio.schedule_editor.marked_steps == [("MmaTask0", "Loop", 1), ("MmaTask1", "Loop", 1)]
    caution = studio.schedule_editor.step_caution("MmaTask0", "Loop", 1)
    assert caution == "caution: 'multiply_qk' reads this wait's stage only, not the one loop step 0 waited for"
    loop_steps = [text for section, text in studio.schedule_editor._task_columns["MmaTask0"].steps.texts()
                  if section == "Loop"]
    assert loop_steps[1] == "smem_kv.ConsumerWait"  # the wait the caution names
    editor, edited = studio.schedule_editor, studio.schedule_editor.design
    editor.load(attention_sm90.design())  # another design on show: the marks go with the verdict they came from
    assert editor.marked_steps == []
    editor.load(edited)
    studio.undo()  # MmaTask1's edit
    assert studio.wait(30) and studio.schedule_editor.marked_steps == [("MmaTask0", "Loop", 1)]
    studio.undo()
    assert studio.wait(30) and studio.schedule_editor.marked_steps == []
