"""Jupyter views of tslab designs: editors, charts and the Studio that composes them."""

from .layout_chart import LayoutChart
from .pipeline_editor import PipelineEditor
from .schedule_editor import ScheduleEditor
from .studio import Studio

__all__ = ["LayoutChart", "PipelineEditor", "ScheduleEditor", "Studio"]
