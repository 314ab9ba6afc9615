"""Design-space sweeps: every point checked by TS (which prunes), compiled and timed, in parallel, resumable.

``tslab.sweep(design, space, measure=..., executor=..., store=...)`` returns a :class:`SweepResult`.
"""

from .errors import StoreCorruptError, StoreMismatchError, SweepError, SweepInterrupted
from .result import SweepResult
from .run import sweep
from .space import apply, point_key, points

__all__ = ["StoreCorruptError", "StoreMismatchError", "SweepError", "SweepInterrupted", "SweepResult", "apply",
           "point_key", "points", "sweep"]
