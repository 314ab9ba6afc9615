"""The verdict badge: one coloured word and the first error, as HTML (a pure function of a Verdict)."""

from __future__ import annotations

import html
from typing import Any

COLOURS = {"SAFE": "#1a7f37", "NOT PROVEN": "#9a6700", "CHECKING": "#57606a"}
DEFAULT_COLOUR = "#cf222e"


def badge_html(verdict: Any, *, checking: str = "") -> str:
    """``SAFE`` in green, an error status in red with the first error's place and message."""
    if verdict is None:
        return _pill("CHECKING", COLOURS["CHECKING"]) + f" <span>{html.escape(checking)}</span>"
    status = verdict.status
    text = _pill(status, COLOURS.get(status, DEFAULT_COLOUR))
    if verdict.errors:
        first = verdict.errors[0]
        text += (f' <span class="tslab-first-error"><b>{html.escape(first.where)}</b>: '
                 f"{html.escape(first.message)}" + (f"<br><i>hint: {html.escape(first.hint)}</i>" if first.hint else "")
                 + "</span>")
    cautions = verdict.shown_cautions  # beside a verdict without errors only: what SAFE does not cover
    if cautions:
        first = cautions[0]
        text += (f' <span class="tslab-caution" style="color:#9a6700"><b>caution, {html.escape(first.where)}</b>: '
                 f"{html.escape(first.message)}<br><i>hint: {html.escape(first.hint)}</i></span>")
    if checking:
        text += f' <span class="tslab-checking">{html.escape(checking)}</span>'
    return f'<div class="tslab-badge" data-status="{html.escape(status)}">{text}</div>'


def status_pill(verdict: Any, *, checking: str = "") -> str:
    """Only the coloured word (``CHECKING`` while a re-check runs): what a Studio repeats above its swimlane."""
    if verdict is None or checking:
        return _pill("CHECKING", COLOURS["CHECKING"])
    return _pill(verdict.status, COLOURS.get(verdict.status, DEFAULT_COLOUR))


def _pill(word: str, colour: str) -> str:
    return (f'<span class="tslab-status" style="background:{colour};color:white;padding:2px 8px;'
            f'border-radius:4px;font-weight:bold">{html.escape(word)}</span>')
