"""The worker process: values and errors come back, output is captured, a hang is cut off."""

import os
import time

from tslab.capture.worker import run_in_child


def test_value_and_output_come_back():
    def work():
        print("hello from the worker")
        os.write(2, b"raw stderr\n")
        return {"pid": os.getpid()}

    outcome = run_in_child(work)
    assert not outcome.crashed and outcome.error is None
    assert outcome.value["pid"] != os.getpid()
    assert "hello from the worker" in outcome.stdout and "raw stderr" in outcome.stderr


def test_an_exception_comes_back_as_a_record():
    def work():
        raise KeyError("missing")

    outcome = run_in_child(work)
    assert outcome.error["type"] == "KeyError" and "missing" in outcome.error["message"]
    assert outcome.error["frames"][-1][2] == "work"


def test_a_hang_is_cut_off():
    started = time.monotonic()
    outcome = run_in_child(lambda: time.sleep(30), timeout=0.5)
    assert outcome.timed_out and outcome.crashed
    assert time.monotonic() - started < 10
