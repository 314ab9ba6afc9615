"""One exception family for tslab, and the structured ``Issue`` every error is reported as.

Message shape: "<owner> '<name>': <what is wrong>; <the fix>."
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

IssueKind = Literal["invalid-config", "capacity", "deadlock", "race", "pdl-order", "schedule", "input",
                    "unfaithful-edit", "blocked-assumed", "stage-binding"]
ISSUE_KINDS: tuple[str, ...] = ("invalid-config", "capacity", "deadlock", "race", "pdl-order", "schedule", "input",
                                "unfaithful-edit", "blocked-assumed", "stage-binding")


@dataclass(frozen=True)
class Issue:
    """One problem found in a design: what kind, where, what, and how to fix it."""

    kind: IssueKind
    where: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        text = f"[{self.kind}] {self.where}: {self.message}"
        return f"{text}\n  hint: {self.hint}" if self.hint else text

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


class TslabError(Exception):
    """Base class of every error tslab raises on purpose."""

    def _render_traceback_(self) -> list[str]:
        """What IPython and Jupyter show for it: the message, which names the place and the fix, without tslab's
        own frames (a five-frame traceback through tslab's internals buried it). ``%tb`` or ``exc.__traceback__``
        still have the frames."""
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}"]


class TslabWarning(UserWarning):
    """Warnings tslab emits (treated as errors in tslab's own tests)."""


class DesignError(TslabError, ValueError):
    """A design that cannot be built at all; carries the same fields as an ``Issue``."""

    def __init__(self, kind: IssueKind, where: str, message: str, hint: str = "") -> None:
        self.issue = Issue(kind=kind, where=where, message=message, hint=hint)
        super().__init__(str(self.issue))

    @property
    def kind(self) -> str:
        return self.issue.kind

    @property
    def where(self) -> str:
        return self.issue.where

    @property
    def message(self) -> str:
        return self.issue.message

    @property
    def hint(self) -> str:
        return self.issue.hint


class GpuError(TslabError):
    """Base class of errors raised on the road to and on the GPU (:mod:`tslab.compiling`, :mod:`tslab.gpu`)."""


class UnsupportedKernelError(GpuError, ValueError):
    """The design's kernel has no GPU kernel in this version of tslab, or cannot take the problem asked for."""


class UnsupportedArchError(GpuError, ValueError):
    """The arch asked for is not one tslab's kernels compile for."""


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (its type name when it has none), for an Issue or an error."""
    return " ".join(str(exc).split()) or type(exc).__name__


def cli_message(exc: BaseException) -> str:
    """An exception's message for a terminal: the message on one line, each further line (the hint) on its own.

    Whitespace inside a line is collapsed; continuation lines are indented by two spaces.
    """
    lines = [" ".join(line.split()) for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return "\n".join([lines[0], *(f"  {line}" for line in lines[1:])])


def did_you_mean(name: str, choices: list[str] | tuple[str, ...]) -> str:
    """A 'did you mean' suffix for an unknown name, listing what is allowed."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1)
    allowed = ", ".join(repr(c) for c in choices) or "(none)"
    guess = f"did you mean {close[0]!r}? " if close else ""
    return f"{guess}valid names are: {allowed}"
