"""ReplayPlayer: a view of a Trace or an Explorer; stepping never re-runs the checker."""

from __future__ import annotations

import json

import pytest
from cutlass.experimental.task_scheduling import exhaustive_checker as ec

import tslab
from tslab import Explorer, TslabError
from tslab.core import mime
from tslab.kernels import design
from tslab.widgets import ReplayPlayer
from tslab.widgets.bundles import STATIC
from tslab.widgets.trace_view import TraceView


@pytest.fixture
def no_checker(monkeypatch):
    """After this fixture, any checker run fails the test."""

    def refuse(*_a, **_k):
        raise AssertionError("the widget re-ran the exhaustive checker")

    return lambda: monkeypatch.setattr(ec, "check_all_interleavings", refuse)


def test_the_view_holds_the_trace_a_saved_output_holds(no_checker):
    trace = tslab.check(design("demo_race")).trace
    player = ReplayPlayer(trace)
    no_checker()
    assert player.view.trace == json.loads(json.dumps(trace._repr_mimebundle_()[mime.TRACE]))
    for i in range(len(trace)):
        player.show(i)
        assert player.view.index == player.index == i


def test_navigation_clamps(no_checker):
    trace = tslab.check(design("demo_deadlock")).trace
    player = ReplayPlayer(trace)
    no_checker()
    player.show(99)
    assert player.index == player.last == len(trace) - 1
    player.show(-3)
    assert player.index == 0


def test_the_front_end_moves_the_model():
    player = ReplayPlayer(tslab.check(design("demo_deadlock")).trace)
    player.view.set_state({"index": 3})  # what the front end sends after a button, the slider or an arrow key
    assert player.index == 3


def test_the_widget_draws_with_the_lab_extensions_player():
    if not (STATIC / "player.js").is_file():
        pytest.skip("the front end is not built (cd labextension && npm ci && npm run build:prod)")
    esm = TraceView({})._esm
    assert "initial state of" in esm and "change:index" in esm


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
    # the player's last step says DEADLOCK; the line under the buttons does not say it again
    assert "DEADLOCK" not in player.message.value and "play is over" in player.message.value
    assert player.last == player.index == 10
    assert len(player.view.trace["steps"]) == 11 and player.view.trace["fault"]["kind"] == "deadlock"
    assert all(b.disabled for b in player.moves.children[:2])
    player.undo()
    assert player.last == player.index == 9 and "RUNNING" in player.message.value
    player.reset()
    assert player.last == 0


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


def test_a_finished_play_says_complete_once():
    ex = Explorer(design("tma_copy", tiles=2))
    player = ReplayPlayer(ex)
    while ex.status.kind == "running":
        player.step(ex.enabled()[-1].task)
    assert player.view.trace["fault"]["kind"] == "complete"  # the player's last step: COMPLETE, with the message
    assert "COMPLETE" not in player.message.value and "every task ran" not in player.message.value

