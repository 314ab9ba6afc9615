"""The sections of the text a verbose ``TaskManager`` prints, to compare a capture with its trace.

TS prints a schedule table, an SMEM usage report and the exhaustive checker's summary; a captured design
re-checked by :func:`tslab.check` must print the same, which is how tests show nothing was lost.
"""

from __future__ import annotations

import re

SECTIONS = ("schedule", "smem", "checker")
_SCHEDULE = re.compile(r"^=+\n\n\|.*?^=*> End Full \(Head \+ Loop \+ Tail\) <=*$", re.M | re.S)
_SMEM = re.compile(r"^\[smem-layout\] SMEM Usage Report\n(?:  .*\n?)*", re.M)
_CHECKER = re.compile(r"^BFS complete: .*$\n^Result: .*$", re.M)


def sections(text: str) -> dict[str, str]:
    """``{"schedule", "smem", "checker"}`` -> the first such block in ``text`` ("" when absent)."""
    found = {}
    for name, pattern in zip(SECTIONS, (_SCHEDULE, _SMEM, _CHECKER), strict=True):
        match = pattern.search(text)
        found[name] = match.group(0).strip() if match else ""
    return found


def result_word(text: str) -> str:
    """The checker's one-word result as TS printed it (``SAFE``, ``DEADLOCK``, ...), or ""."""
    match = re.search(r"^Result: (\S+)", text, re.M)
    return match.group(1) if match else ""
