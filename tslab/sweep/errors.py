"""Errors of design-space sweeps: a bad space, a store that belongs to another sweep, a sweep cut short."""

from __future__ import annotations

from typing import Any

from ..errors import TslabError


class SweepError(TslabError, ValueError):
    """A sweep that cannot start: an unknown parameter, an empty space, an executor that is not there."""


class StoreMismatchError(SweepError):
    """The store file was written by another sweep (another design, measure or machine)."""


class StoreCorruptError(SweepError):
    """A line of the store file (other than a last line cut off mid-write) is not a valid record."""


class SweepInterrupted(TslabError):
    """The sweep stopped early (Ctrl-C, a worker crash); every finished point is kept in the store, and
    ``result`` holds them as a ``SweepResult``."""

    def __init__(self, message: str, finished: int, result: Any = None) -> None:
        super().__init__(message)
        self.finished = finished
        self.result = result
