"""Run code as a Jupyter kernel runs a cell, without Jupyter (the GPU machine has none): compiled under a file name
that exists nowhere on disk, its text registered in ``linecache`` as IPython registers it, executed in
``__main__``'s namespace. ``tests/test_cell_kernel.py`` does the same in a real Jupyter kernel."""

from __future__ import annotations

import contextlib
import hashlib
import linecache
import os
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

#: The tutorial's cell-defined row copy (resource classes, the kernel and the host function), as in its cells.
ROW_COPY_CELLS = os.path.join(os.path.dirname(__file__), "fixtures", "row_copy_cells.py")


@contextlib.contextmanager
def notebook_cells() -> Iterator[Any]:
    """``run(source)`` executes a cell in ``__main__`` and returns its namespace; every name a cell defined is
    removed from ``__main__`` afterwards."""
    main = sys.modules["__main__"]
    before = set(vars(main))
    folder = f"/tmp/ipykernel_{os.getpid()}"

    def run(source: str) -> dict[str, Any]:
        source = textwrap.dedent(source)
        name = f"{folder}/{hashlib.sha1(source.encode()).hexdigest()[:10]}.py"  # as ipykernel names a cell
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        exec(compile(source, name, "exec", dont_inherit=True), vars(main))  # as a kernel runs a cell
        return vars(main)

    try:
        yield run
    finally:
        for added in set(vars(main)) - before:
            delattr(main, added)
