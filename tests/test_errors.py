"""The one exception family and how its messages read on a terminal."""

from __future__ import annotations

from tslab.errors import DesignError, cli_message


def test_cli_message_keeps_the_hint_on_its_own_line():
    exc = DesignError("input", "kernel 'k' param 'p'", "p=0 is not   a positive int", "give p=4")
    assert cli_message(exc) == "[input] kernel 'k' param 'p': p=0 is not a positive int\n  hint: give p=4"


def test_cli_message_of_an_empty_exception_is_its_type():
    assert cli_message(KeyError()) == "KeyError"


def test_jupyter_shows_a_tslab_error_as_its_message_not_a_traceback_through_tslab():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    with capture_output() as shown:
        shell.run_cell("import tslab\ntslab.capture_file('no_such_kernel.py', 'host')")
    text = shown.stdout + shown.stderr
    assert "Error\x1b[0m: kernel file 'no_such_kernel.py': does not exist" in text
    assert "site-packages" not in text and "tslab/capture" not in text and "File " not in text
