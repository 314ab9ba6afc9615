import asyncio
import sys

from tslab.widgets.figure_slot import WIDGET_MODULE, FigureSlot


def test_without_a_loop_the_figure_is_built_at_once_and_drawn():
    slot = FigureSlot(note="drawing the memory map…")
    slot.draw(lambda fig: fig.add_bar(x=[1], y=[2]))
    assert slot.ready and slot.children == (slot.figure,) and len(slot.figure.data) == 1


def test_in_a_kernel_cold_a_placeholder_shows_first_and_the_newest_drawing_lands():
    loaded = sys.modules.pop(WIDGET_MODULE, None)  # as in a kernel that has not drawn a plotly figure yet
    try:
        async def main():
            slot = FigureSlot(note="drawing the memory map…")
            assert not slot.ready and "drawing the memory map…" in slot.children[0].value
            assert "<progress" in slot.children[0].value
            slot.draw(lambda fig: fig.add_bar(x=[1], y=[1]))
            slot.draw(lambda fig: fig.add_bar(x=[1], y=[2]))
            await asyncio.sleep(0)
            return slot

        slot = asyncio.run(main())
        assert slot.ready and slot.children == (slot.figure,)
        assert [list(t.y) for t in slot.figure.data] == [[2]] and slot.build_seconds is not None
    finally:
        if loaded is not None:
            sys.modules[WIDGET_MODULE] = loaded


def test_a_replay_player_in_a_cold_kernel_shows_a_placeholder_then_its_lanes():
    import tslab
    from tslab.kernels import design
    from tslab.widgets import ReplayPlayer

    trace = tslab.check(design("demo_deadlock")).trace
    loaded = sys.modules.pop(WIDGET_MODULE, None)
    try:
        async def main():
            player = ReplayPlayer(trace)
            assert "drawing the trace…" in player._slot.children[0].value
            player.show(3)
            await asyncio.sleep(0)
            return player

        player = asyncio.run(main())
        assert player._slot.ready and player.figure.layout.shapes[0].x0 == 2.5
    finally:
        if loaded is not None:
            sys.modules[WIDGET_MODULE] = loaded
