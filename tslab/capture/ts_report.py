"""The sections of the text a verbose ``TaskManager`` prints, to compare a capture with its trace.

TS prints a schedule table, an SMEM usage report and the exhaustive checker's summary; a captured design
re-checked by :func:`tslab.check` must print the same, which is how tests show nothing was lost. A kernel that
builds its TaskManager with ``verbose=False`` prints none of it; with ``skip_validation=True`` TS still runs
every check and turns each failure into a warning, which :func:`warned_checks` and :func:`checker_outcome` read.
"""

from __future__ import annotations

import re

SECTIONS = ("schedule", "smem", "checker")
_SCHEDULE = re.compile(r"^=+\n\n\|.*?^=*> End Full \(Head \+ Loop \+ Tail\) <=*$", re.M | re.S)
_SMEM = re.compile(r"^\[smem-layout\] SMEM Usage Report\n(?:  .*\n?)*", re.M)
_CHECKER = re.compile(r"^BFS complete: .*$\n(?:^WARNING: .*$\n)*^Result: .*$", re.M)


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


_WARNED = re.compile(r"^TS validation \((\w+)\): ")
_EXHAUSTIVE = "_exhaustive_aliasing_races"


def warned_checks(warnings: list[str]) -> list[str]:
    """The TaskManager checks that failed (as warnings), by TS's method name, the exhaustive checker left out."""
    names = {m.group(1) for w in warnings if (m := _WARNED.match(w))}
    return sorted(names - {_EXHAUSTIVE})


def checker_outcome(warnings: list[str]) -> str:
    """What TS's exhaustive checker found, read from its warnings: deadlock, race, pdl-order, not-proven or safe."""
    found = " ".join(w for w in warnings if w.startswith(f"TS validation ({_EXHAUSTIVE})"))
    for words, outcome in (("deadlock(s)", "deadlock"), ("aliasing race(s)", "race"),
                           ("PDL launch ordering", "pdl-order")):
        if words in found:
            return outcome
    if any(w.startswith("Exhaustive checker hit max_states") for w in warnings):
        return "not-proven"
    return "safe"
