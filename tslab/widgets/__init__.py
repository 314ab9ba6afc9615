"""Jupyter views of tslab values: editors, charts, the replay player and the Studio that composes them.

``tslab`` itself never imports this package, so the command line and the GPU machine need no Jupyter.
"""

from .bench_panel import BenchPanel
from .layout_chart import LayoutChart
from .pipeline_editor import PipelineEditor
from .replay import ReplayPlayer
from .schedule_editor import ScheduleEditor
from .studio import Studio
from .sweep_chart import SweepChart

__all__ = ["BenchPanel", "LayoutChart", "PipelineEditor", "ReplayPlayer", "ScheduleEditor", "Studio", "SweepChart"]
