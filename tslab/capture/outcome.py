"""What a capture's child run left (its value or error, its output, how it ended), and that in one line.

Built by :mod:`tslab.capture.worker` from the files the child wrote (:mod:`tslab.capture.in_child`); read by the
capture's error messages and by every caller of ``run_in_child``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..child import how_it_ended


@dataclass
class ChildOutcome:
    """What a child run left: its value or error, its output, and how it ended."""

    value: Any = None
    error: dict[str, Any] | None = None
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = 0
    signal: int | None = None
    timed_out: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    forked: bool = False  # it ran in a fork of the caller (the function could not be sent to the fork server)

    @property
    def crashed(self) -> bool:
        return self.signal is not None or self.timed_out or (self.error is None and self.exit_code != 0)


def failure(outcome: ChildOutcome) -> str | None:
    """What went wrong in a child run whose function returns a dict (``{"error": ...}`` on failure), in one line:
    its error, or how the child ended; None when it succeeded."""
    value = outcome.value if isinstance(outcome.value, dict) else {}
    error = outcome.error or value.get("error")
    if not outcome.crashed and error is None:
        return None
    if error:
        return f"{error['type']}: {' '.join(error['message'].split())[:400]}"
    if outcome.timed_out:
        return "the worker ran past its time limit and was stopped"
    return f"the worker {how_it_ended(-outcome.signal if outcome.signal else outcome.exit_code)}"
