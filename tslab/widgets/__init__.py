"""Jupyter widgets: views of :mod:`tslab.core` values (imported on first use)."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "ReplayPlayer":
        from .replay import ReplayPlayer

        return ReplayPlayer
    raise AttributeError(f"module 'tslab.widgets' has no attribute {name!r}")
