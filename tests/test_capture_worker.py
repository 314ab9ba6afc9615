"""The worker process: values and errors come back, output is captured, a hang is cut off."""

import os
import textwrap
import time
from pathlib import Path

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


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(next(line for line in fh if line.startswith("Threads:")).split()[1])


def test_a_function_that_can_be_sent_runs_in_a_child_of_the_single_threaded_fork_server():
    import threading

    from tslab.capture.server import server

    busy = threading.Event()
    helper = threading.Thread(target=busy.wait, daemon=True)  # this process has threads, as a Jupyter kernel does
    helper.start()
    try:
        outcome = run_in_child(os.getppid)
        assert not outcome.forked and outcome.error is None
        found = server()
        found.lock.release()
        assert outcome.value == found.proc.pid != os.getpid()
        assert _threads(found.proc.pid) == 1  # forking it cannot deadlock on another thread's lock
    finally:
        busy.set()
    timed = run_in_child(time.sleep, 30, timeout=0.5)
    assert timed.timed_out and not timed.forked
    assert run_in_child(os.getppid).value == found.proc.pid  # the server lives on after a job it stopped


def test_a_function_typed_into_a_cell_is_copied_to_the_fork_server():
    def typed_into_a_cell():
        return os.getppid()

    typed_into_a_cell.__module__ = "__main__"
    outcome = run_in_child(typed_into_a_cell)
    assert not outcome.forked and outcome.value != os.getpid()


def test_captures_of_kernel_files_never_fork_this_process():
    """In a process that holds no module imported by path (whose resource classes only a fork could see; earlier
    tests in this one load some), the three kinds of kernel file are traced in the fork server's children."""
    import subprocess
    import sys

    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        sys.path.insert(0, sys.argv[1])
        from fixtures import ring_copy
        import tslab
        from tslab import fake
        from tslab.capture import worker

        def refuse(*_):
            raise AssertionError("forked the caller")

        worker._forked = refuse
        f16 = fake.tensor("f16", (4, 256))
        assert tslab.check(tslab.capture(ring_copy.ring_copy, f16, f16, 2)).ok  # an importable module
        row_copy = Path(sys.argv[1]).parent / "notebooks" / "kernels" / "row_copy.py"
        rows = fake.tensor("f16", (6, 256))
        design = tslab.capture_file(row_copy, "copy_rows", rows, rows)  # a file imported by path
        deeper = tslab.check(design.with_knobs(ring_stages=3))  # re-traced with a module constant edited
        assert deeper.ok and deeper.smem_total == 1536
        print("no fork")
    """)
    tests = Path(__file__).resolve().parent
    out = subprocess.run([sys.executable, "-c", script, str(tests)], capture_output=True, text=True, timeout=600,
                         check=False)
    assert out.returncode == 0 and "no fork" in out.stdout, out.stderr[-3000:]


def test_the_fork_server_ends_with_its_parent_stopped_by_sigterm():
    import subprocess
    import sys

    script = ("import os, time\nfrom tslab.capture.worker import run_in_child\n"
              "print(run_in_child(os.getppid).value, flush=True)\ntime.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        parent.terminate()
        parent.wait(30)
        deadline = time.monotonic() + 5
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(pid), f"fork server {pid} outlived its parent"
    finally:
        parent.kill()
        parent.wait()
