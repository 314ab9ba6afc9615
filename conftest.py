"""``python -m pytest`` runs the tutorials under nbval, as ``--nbval`` does, when nbval is installed.

It was ``addopts = "--nbval"``, which stops every run where nbval is missing (the GPU machine has no Jupyter stack)
with "unrecognized arguments"; switched on here, the tests collect and run with the runtime dependencies alone.
``--nbval-lax`` given on the command line is kept; ``-p no:nbval`` leaves the notebooks out.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    option = config.option
    if hasattr(option, "nbval") and not (option.nbval or option.nbval_lax):
        option.nbval = True
