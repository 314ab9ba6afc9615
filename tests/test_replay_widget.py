"""ReplayPlayer: a view of a Trace or an Explorer; stepping never re-runs the checker."""

from __future__ import annotations

import pytest
from cutlass.experimental.task_scheduling import exhaustive_checker as ec

import tslab
from tslab import Explorer, TslabError
from tslab.kernels import design
from tslab.widgets import ReplayPlayer


@pytest.fixture
def no_checker(monkeypatch):
    """After this fixture, any checker run fails the test."""

    def refuse(*_a, **_k):
        raise AssertionError("the widget re-ran the exhaustive checker")

    return lambda: monkeypatch.setattr(ec, "check_all_interleavings", refuse)


def test_swimlanes_and_fault_marks_come_from_the_trace(no_checker):
    trace = tslab.check(design("demo_race")).trace
    player = ReplayPlayer(trace)
    no_checker()
    lanes = {d.name: list(d.x) for d in player.figure.data}
    assert set(lanes) == {*trace.tasks, "fault"}
    assert sorted(x for t in trace.tasks for x in lanes[t]) == list(range(1, len(trace)))
    assert [s.index for s in trace.steps if s.task == "MidTask"] == lanes["MidTask"]
    fault = player.figure.data[-1]
    assert set(fault.y) == {player._lane("MidTask"), player._lane("LoadTask")}
    assert list(fault.x) == [len(trace)] * 2
    ticks = dict(zip(player.figure.layout.yaxis.tickvals, player.figure.layout.yaxis.ticktext, strict=True))
    assert [ticks[player._lane(t)] for t in trace.tasks] == trace.tasks  # idle StoreTask keeps its lane
    for i in range(len(trace)):
        player.show(i)
        assert player.figure.layout.shapes[0].x0 == i - 0.5
    assert "RACE" in player.caption.value and "stage_a[0]" in player.panel.value


def test_navigation_clamps_and_panel_shows_state(no_checker):
    trace = tslab.check(design("demo_deadlock")).trace
    player = ReplayPlayer(trace)
    no_checker()
    player.show(99)
    assert player.index == len(trace) - 1 and "DEADLOCK" in player.caption.value
    assert "blocked" in player.panel.value and "empty-slot credit" in player.panel.value
    player.nav[0].click()
    assert player.index == 0 and "initial state" in player.caption.value
    player.nav[2].click()
    assert player.index == 1
    assert player.play.max == player.slider.max == len(trace) - 1


def test_arrow_keys_step_the_trace():
    player = ReplayPlayer(tslab.check(design("demo_deadlock")).trace)

    def press(delta):  # the message the front end sends for one key press
        player.arrow_keys._handle_custom_msg({"delta": delta}, [])

    press(1)
    press(1)
    assert player.index == 2
    press(-1)
    assert player.index == 1
    press(10**9)  # End
    assert player.index == len(player.trace) - 1
    assert "ArrowLeft" in player.arrow_keys._esm


def test_explorer_mode_buttons_follow_the_checker():
    ex = Explorer(design("demo_deadlock"))
    player = ReplayPlayer(ex)
    player.step("StoreTask")  # binds its view of the ring; next it waits for a commit
    buttons = {b.description.split(":")[0]: b for b in player.moves.children}
    assert not buttons["LoadTask"].disabled and buttons["StoreTask"].disabled
    assert "ConsumerWait" not in buttons["LoadTask"].description
    assert "producer commit credit" in buttons["StoreTask"].tooltip
    player.step("StoreTask")  # refused: the message says why, nothing moves
    assert "blocked" in player.message.value and len(ex.history) == 2
    for _ in range(8):
        buttons = {b.description.split(":")[0]: b for b in player.moves.children}
        buttons["LoadTask"].click()
    player.step("StoreTask")
    assert "DEADLOCK" in player.message.value and player.slider.max == 10
    assert all(b.disabled for b in player.moves.children[:2])
    player.undo()
    assert player.slider.max == 9 and "RUNNING" in player.message.value
    player.reset()
    assert player.slider.max == 0


def test_bad_source_and_step_on_a_trace_say_what_to_pass():
    with pytest.raises(TslabError, match=r"pass a tslab\.Trace"):
        ReplayPlayer("demo_race")
    player = ReplayPlayer(tslab.trace(design("tma_copy", tiles=1)))
    with pytest.raises(TslabError, match=r"build the player from a tslab\.Explorer"):
        player.step("LoadTask")


def test_core_never_imports_jupyter_packages():
    import subprocess
    import sys

    code = ("import sys, tslab; from tslab.kernels import design; tslab.trace(design('demo_race')); "
            "tslab.Explorer(design('tma_copy')); "
            "print(sorted(m for m in ('ipywidgets', 'plotly') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
