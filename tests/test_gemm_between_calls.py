"""``benchmarks/gemm_between_calls.py`` on the CPU: how the profiler's kernel records of the flush-spin-call sequence
are split into calls (each call's span, and the gap from the spin's end to its start)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from gemm_between_calls import calls_after_prelude

PRELUDE = {"fill", "spin"}


def test_each_call_is_measured_from_the_spins_end_and_may_hold_several_kernels():
    records = [("fill", 0, 90), ("spin", 90, 150), ("gemm", 153, 213),
               ("fill", 214, 300), ("spin", 300, 360), ("memset", 362, 363), ("gemm", 363, 420)]
    spans, gaps = calls_after_prelude(records, PRELUDE)
    assert spans == [60, 58] and gaps == [3, 2]


def test_kernels_before_any_prelude_are_not_a_call():
    spans, gaps = calls_after_prelude([("gemm", 0, 10), ("fill", 11, 20), ("spin", 20, 30)], PRELUDE)
    assert spans == [] and gaps == []


def test_the_exit_after_the_profilers_modes_keeps_what_was_printed():
    """The script ends without the interpreter's teardown after torch.profiler ran (its CUPTI buffers abort that
    teardown now and then); what it printed to a pipe must still arrive, and the exit status be 0."""
    import os
    import subprocess

    script = ("import sys; sys.path.insert(0, sys.argv[1]); from profiler_exit import exit_without_teardown; "
              "print('table'); exit_without_teardown()")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # a pipe's output is then buffered
    done = subprocess.run([sys.executable, "-c", script, str(Path(__file__).resolve().parents[1] / "benchmarks")],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout == "table\n"
