"""TS's loop guards in the plain form tslab shows and edits, read from and built into TS's own guard objects.

A loop step runs on every trip (``Always``) or under one of the guards of TS 4.8:

==========================================  ==================================
TS object (``enums.py``)                    plain form
==========================================  ==================================
``LoopGuard.FirstIter`` / ``FIRST_ITER``     ``FirstIter``
``LoopGuard.LastIter`` / ``LAST_ITER``       ``LastIter``
``Every(period=2, start=1)``                 ``every(2, start=1)`` (``every(2)`` from trip 0)
``OpaqueCondition(key, negated=False)``      ``when_true(<condition>)``
``OpaqueCondition(key, negated=True)``       ``when_false(<condition>)``
==========================================  ==================================

An opaque condition is a runtime value TS cannot evaluate (``when_true(flag)`` on a work call's output), so its
checker runs once per assignment of every condition key. ``<condition>`` names a key in words that stay the same
on every fresh build of a design: a work call's output as ``<resource>.<method>.<output>`` (``ring.read.item``),
a key given as a string as that string, another key by its ``repr``, and an unnamed runtime value (TS numbers
those itself, differently on each build) as ``#1``, ``#2``, ... in order of first appearance.
:class:`Conditions` holds those names for one set of tasks; a design keeps the table of its kernel's own tasks
(:meth:`tslab.core.blueprint.Blueprint.conditions`) so that an edit can name a condition the edit removed.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Hashable, Iterable
from typing import Any

from cutlass.experimental.task_scheduling.enums import (
    FIRST_ITER,
    LAST_ITER,
    Every,
    IterationPredicate,
    LoopGuard,
    OpaqueCondition,
)

from ..errors import DesignError

ALWAYS = "Always"
#: The guards written by name (TS's ``LoopGuard`` members).
NAMED: tuple[str, ...] = tuple(g.name for g in LoopGuard)
#: The plain forms, as an error message lists them.
FORMS = "'Always', 'FirstIter', 'LastIter', 'every(n)', 'every(n, start=s)', 'when_true(<condition>)' or " \
    "'when_false(<condition>)'"
_EVERY = re.compile(r"every\(\s*(?:period\s*=\s*)?(\d+)\s*(?:,\s*(?:start\s*=\s*)?(\d+)\s*)?\)", re.IGNORECASE)
_WHEN = re.compile(r"when_(true|false)\(\s*(.+?)\s*\)")


class Conditions:
    """The opaque conditions of a set of TS tasks, each key under one stable name (see the module docstring)."""

    def __init__(self, found: Iterable[OpaqueCondition] = ()) -> None:
        self._names: dict[Hashable, str] = {}
        self._by_name: dict[str, OpaqueCondition] = {}
        unnamed = 0
        for guard in found:
            if guard.key in self._names:
                continue
            name = _preferred(guard)
            if name is None:
                unnamed += 1
                name = f"#{unnamed}"
            base, n = name, 1
            while name in self._by_name:
                n += 1
                name = f"{base}~{n}"
            self._names[guard.key] = name
            self._by_name[name] = dataclasses.replace(guard, negated=False)

    @classmethod
    def of(cls, tasks: Iterable[Any]) -> Conditions:
        """The conditions guarding the loop steps of ``tasks``, in task and step order."""
        return cls(entry[3] for task in tasks for entry in task.loop_schedule_list
                   if isinstance(entry[3], OpaqueCondition))

    def names(self) -> list[str]:
        return list(self._by_name)

    def name(self, key: Hashable) -> str:
        """The name of condition ``key`` (one these tasks do not use: its ``repr``)."""
        return self._names.get(key, repr(key))

    def condition(self, name: str, *, negated: bool, where: str) -> OpaqueCondition:
        """TS's ``OpaqueCondition`` called ``name`` (true when ``negated`` is False)."""
        if name not in self._by_name:
            known = ", ".join(self._by_name) or "none"
            raise DesignError("input", where, f"condition {name!r} is not a runtime condition of this design "
                              f"(it has: {known})",
                              f"name one of its conditions, e.g. when_{'false' if negated else 'true'}"
                              f"({next(iter(self._by_name))})" if self._by_name else
                              "a when_true/when_false guard names a condition the kernel's own schedule tests; "
                              "use FirstIter, LastIter or every(n) for a guard on loop trips")
        return dataclasses.replace(self._by_name[name], negated=negated)

    def assignment(self, assignment: dict[Hashable, bool]) -> str:
        """One assignment of the checker's runs in words: ``ring.read.item=False, flag=True``."""
        return ", ".join(f"{self.name(key)}={value}" for key, value in assignment.items())


def _preferred(guard: OpaqueCondition) -> str | None:
    key = guard.key
    if isinstance(key, str):
        return key
    if guard.resource is not None and isinstance(key, tuple) and len(key) == 3 \
            and key[1:] == (guard.method_label, guard.result_name):
        return f"{getattr(guard.resource, 'name', '?')}.{guard.method_label}.{guard.result_name}"
    if isinstance(key, tuple) and len(key) == 2 and key[0] == "__opaque__":
        return None
    return repr(key)


def text(guard: Any, conditions: Conditions) -> str:
    """The plain form of a TS loop guard (``None`` is ``Always``)."""
    if guard is None or guard == LoopGuard.Always:
        return ALWAYS
    if guard == LoopGuard.FirstIter or guard is FIRST_ITER:
        return "FirstIter"
    if guard == LoopGuard.LastIter or guard is LAST_ITER:
        return "LastIter"
    if isinstance(guard, Every):
        return f"every({guard.period})" if guard.start == 0 else f"every({guard.period}, start={guard.start})"
    if isinstance(guard, OpaqueCondition):
        return f"when_{'false' if guard.negated else 'true'}({conditions.name(guard.key)})"
    kind = "iteration predicate" if isinstance(guard, IterationPredicate) else "guard"
    raise DesignError("input", "schedule", f"{type(guard).__name__} is a loop {kind} tslab cannot show",
                      "use TS's FIRST_ITER, LAST_ITER, Every(...) or when_true/when_false")


def canonical(guard: Any, *, where: str) -> str:
    """``guard`` (a plain form) in its one spelling (``every(2, start=0)`` is ``every(2)``); a form that is not
    one of :data:`FORMS` is a ``DesignError``. The period and start are checked by TS's own ``Every``."""
    if not isinstance(guard, str):
        raise DesignError("input", where, f"guard={guard!r} is not a loop guard", f"write the guard as {FORMS}")
    value = guard.strip()
    if value in NAMED:
        return value
    every = _EVERY.fullmatch(value)
    if every:
        return text(_every(int(every[1]), int(every[2] or 0), where=where), Conditions())
    when = _WHEN.fullmatch(value)
    if when:
        return f"when_{when[1]}({when[2]})"
    close = difflib.get_close_matches(value, [*NAMED, "every(2)", "when_true(flag)"], n=1)
    raise DesignError("input", where, f"guard={guard!r} is not a loop guard",
                      (f"did you mean {close[0]!r}? " if close else "") + f"write the guard as {FORMS}")


def to_ts(guard: str, conditions: Conditions, *, where: str) -> Any:
    """The TS guard object of a canonical plain form: a ``LoopGuard``, an ``Every`` or an ``OpaqueCondition``."""
    if guard in NAMED:
        return LoopGuard[guard]
    every = _EVERY.fullmatch(guard)
    if every:
        return _every(int(every[1]), int(every[2] or 0), where=where)
    when = _WHEN.fullmatch(guard)
    if when is None:
        raise DesignError("input", where, f"guard={guard!r} is not a loop guard", f"write the guard as {FORMS}")
    return conditions.condition(when[2], negated=when[1] == "false", where=where)


def _every(period: int, start: int, *, where: str) -> Every:
    try:
        return Every(period=period, start=start)
    except (TypeError, ValueError) as exc:
        raise DesignError("input", where, f"every({period}, start={start}): {exc}",
                          "give a period of 1 or more and a start of 0 or more, e.g. every(2, start=1)") from None
