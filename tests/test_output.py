"""Checks on background threads capture TS's printing without touching other threads' output."""

import contextlib
import io
import sys
import threading

import tslab
from tslab.core.output import captured_stdout
from tslab.kernels import design


def test_each_thread_gets_its_own_output_and_stdout_is_restored():
    original = sys.stdout
    seen = {}

    def work(name):
        with captured_stdout() as buf:
            print(f"hello from {name}")
        seen[name] = buf.getvalue()

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {f"t{i}": f"hello from t{i}\n" for i in range(8)}
    assert sys.stdout is original


def test_concurrent_checks_keep_their_reports_and_the_callers_output():
    results = {}

    def run(name):
        results[name] = tslab.check(design(name))

    caller = io.StringIO()
    with contextlib.redirect_stdout(caller):
        threads = [threading.Thread(target=run, args=(n,)) for n in ("tma_copy", "gemm_sm90", "demo_race")]
        for t in threads:
            t.start()
        print("the caller's own line")
        for t in threads:
            t.join()
    assert caller.getvalue() == "the caller's own line\n"
    assert "SMEM Usage Report" in results["gemm_sm90"].report
    assert "a_buf" in results["gemm_sm90"].report and "a_buf" not in results["tma_copy"].report
    assert results["demo_race"].status == "RACE"
