"""tslab: design, check and time CUTLASS Task Scheduling kernels in Jupyter."""

from . import fake, kernels
from .capture import CaptureError, CaptureResult, capture, capture_all, capture_call, capture_file
from .core.check import check
from .core.design import Design
from .core.dispatch import Dispatch
from .core.explorer import Explorer, MoveError
from .core.replay import trace
from .core.trace_model import Trace
from .core.verdict import Verdict
from .errors import DesignError, Issue, TslabError, TslabWarning
from .sweep import SweepResult, sweep

__version__ = "0.1.0"
__all__ = ["CaptureError", "CaptureResult", "Design", "DesignError", "Dispatch", "Explorer", "Issue", "MoveError",
           "SweepResult", "Trace", "TslabError", "TslabWarning", "Verdict", "__version__", "capture", "capture_all",
           "capture_call", "capture_file", "check", "fake", "kernels", "sweep", "trace"]
