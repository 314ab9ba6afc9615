"""Ending a benchmark that ran ``torch.profiler``: every result written and flushed, then the process ends without
the interpreter's teardown. After the profiler has run, that teardown aborts now and then (``double free``,
``munmap_chunk()``), as torch frees CUPTI activity buffers CUPTI may still write (pytorch/pytorch#195207, #195471);
`benchmarks/NOTES.md` (2026-12-06, late night): 2 of 7 runs with the profiler aborted, 0 of 6 without it."""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def exit_without_teardown(status: int = 0) -> NoReturn:
    """Flush stdout and stderr and end the process with ``status``, skipping the teardown."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
