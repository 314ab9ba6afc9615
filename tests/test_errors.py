"""The one exception family and how its messages read on a terminal."""

from __future__ import annotations

from tslab.errors import DesignError, cli_message


def test_cli_message_keeps_the_hint_on_its_own_line():
    exc = DesignError("input", "kernel 'k' param 'p'", "p=0 is not   a positive int", "give p=4")
    assert cli_message(exc) == "[input] kernel 'k' param 'p': p=0 is not a positive int\n  hint: give p=4"


def test_cli_message_of_an_empty_exception_is_its_type():
    assert cli_message(KeyError()) == "KeyError"
