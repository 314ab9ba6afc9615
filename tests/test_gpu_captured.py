"""On a GPU: a captured kernel of our own runs, checks against its reference, times against its baseline and sweeps
two knobs; the warm worker survives a hang, a SIGKILL mid-bench, a GPU out of memory and a failing inputs()."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from package_calls import imported

import tslab
import tslab.gpu as gpu
from tslab import fake
from tslab.gpu.warm import shutdown, worker
from tslab.kernels import demo_deadlock, tma_copy

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(gpu.device() is None, reason="no NVIDIA GPU here")]

KERNELS = Path(__file__).resolve().parents[1] / "notebooks" / "kernels"
IO = str(KERNELS / "row_copy_io.py")
ROWS, COLS = 1024, 8192


def too_big():
    """inputs() asking for more memory than any GPU has."""
    import torch

    src = torch.empty(2**40, device="cuda", dtype=torch.float16)
    return src, src


def failing():
    raise RuntimeError("the user's inputs() failed on purpose")


def wrong_shape():
    import torch

    src = torch.zeros(ROWS, COLS // 2, device="cuda", dtype=torch.float16)
    return src, torch.empty_like(src)


@pytest.fixture(scope="module")
def row_copy():
    return tslab.capture_file(KERNELS / "row_copy.py", "copy_rows", fake.tensor("f16", (ROWS, COLS)),
                              fake.tensor("f16", (ROWS, COLS)))


@pytest.fixture(scope="module")
def kernel(row_copy):
    return gpu.compile(row_copy)


def _children() -> list[int]:
    """This process's live children, but those that live as long as it does: multiprocessing's resource tracker
    and the capture's fork servers (the ``kernel`` fixture's capture starts one)."""
    me = str(os.getpid())
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                command = fh.read().decode(errors="replace")
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z" and not any(
                lifelong in command for lifelong in ("resource_tracker", "tslab.capture.server")):
            out.append(int(pid))
    return out


def test_runs_and_checks_against_its_reference(kernel):
    out = kernel.run(inputs=f"{IO}:inputs", reference=f"{IO}:expected", outputs=["dst"])
    assert out["checked"] and out["outputs"] == [
        {"output": "dst", "elements": ROWS * COLS, "unwritten": 0, "mismatches": 0, "max_abs_error": 0.0}]


def test_a_wrong_reference_is_reported_as_wrong(kernel):
    with pytest.raises(gpu.CheckFailedError, match=rf"dst: {ROWS * COLS} of {ROWS * COLS} elements differ from the "
                                                   r"reference \(max \|error\| 1\), 0 left unwritten"):
        kernel.run(inputs=f"{IO}:inputs", reference=f"{IO}:wrong", outputs=["dst"])


def test_run_only_reports_what_it_left_unwritten(kernel):
    out = kernel.run(inputs=f"{IO}:inputs", outputs=["dst"])
    assert not out["checked"] and out["outputs"][0]["unwritten"] == 0


def test_inputs_unlike_the_fakes_are_refused(kernel):
    with pytest.raises(gpu.InputsError, match=r"argument 0 is torch.float16 \(1024, 4096\).*captured and checked "
                                              r"with Float16 \(1024, 8192\)"):
        kernel.run(inputs=wrong_shape)


def test_benches_against_its_baseline_and_is_profiled_never_silently(kernel):
    result = kernel.bench(inputs=f"{IO}:inputs", reference=f"{IO}:expected", outputs=["dst"],
                          baseline=f"{IO}:torch_copy", repeats=3)
    row = result.table.iloc[0]
    assert row["kernel"] == "copy_rows" and row["median_us"] > 0 and row["ratio"] > 0 and row["rel_error"] == 0
    print(f"\nrow copy {ROWS}x{COLS} fp16: {row['median_us']:.1f} us, {row['gbps']:.0f} GB/s, "
          f"{row['ratio']:.2f}x torch's copy")


def test_is_profiled_on_its_inputs(row_copy):
    timeline = gpu.profile(row_copy, inputs=f"{IO}:inputs", reference=f"{IO}:expected", outputs=["dst"],
                           repeats=3)
    frame = timeline.frame
    assert set(frame["task"]) == {"LoadTask", "StoreTask"}
    assert (frame["end_ns"] >= frame["start_ns"]).all()
    loads = frame[(frame["task"] == "LoadTask") & (frame["stage"] == "ProducerWork")]
    assert len(loads) == ROWS  # one TMA load per row, in the one warp of the load task
    assert timeline.meta["check"]["outputs"][0]["mismatches"] == 0
    print("\n" + timeline.text())


def test_sweeps_two_knobs_on_the_gpu(row_copy):
    result = tslab.sweep(row_copy, {"ring_stages": [2, 4], "row_elems": [128, 256]}, measure="bench",
                         executor="serial", inputs=f"{IO}:inputs", reference=f"{IO}:expected", outputs=["dst"],
                         baseline=f"{IO}:torch_copy", quiet=True)
    table = result.table
    assert list(table["status"]) == ["ok"] * 4, table.to_string()
    assert (table["median_us"] > 0).all()
    print("\n" + table[["ring_stages", "row_elems", "median_us", "gbps", "ratio"]].to_string(index=False))


def test_the_warm_worker_recovers_from_a_failing_inputs_and_keeps_its_process(kernel):
    gpu.compile(tma_copy.design()).run()
    pid = worker().pid
    with pytest.raises(gpu.InputsError, match="inputs=test_gpu_captured:failing: raised RuntimeError"):
        kernel.run(inputs=failing)
    kernel.run(inputs=f"{IO}:inputs", reference=f"{IO}:expected", outputs=["dst"])
    assert worker().pid == pid


def test_the_warm_worker_recovers_from_out_of_memory(kernel):
    with pytest.raises(gpu.GpuOutOfMemoryError):
        kernel.run(inputs=too_big)
    kernel.run(inputs=f"{IO}:inputs", reference=f"{IO}:expected", outputs=["dst"])


def test_the_warm_worker_recovers_from_a_hang():
    hung = gpu.compile(demo_deadlock.design(), force=True)
    before = worker().pid
    with pytest.raises(gpu.KernelHungError):
        hung.run(timeout=5)
    assert before not in _children()
    assert gpu.compile(tma_copy.design()).run()["mismatches"] == 0
    assert worker().pid != before


def test_the_warm_worker_recovers_from_a_sigkill_mid_bench():
    kernel = gpu.compile(tma_copy.design())
    kernel.run()
    pid = worker().pid
    threading.Timer(2.0, os.kill, (pid, 9)).start()
    with pytest.raises(gpu.WorkerCrashedError, match="killed by SIGKILL"):
        kernel.bench(sizes=[(16384, 16384)], repeats=200)
    assert kernel.run()["mismatches"] == 0
    assert worker().pid != pid


def test_no_process_is_left_behind():
    gpu.compile(tma_copy.design()).run()
    assert _children() == [worker().pid]
    shutdown()
    deadline = time.monotonic() + 10
    while _children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _children() == []


def test_its_package_takes_torch_tensors_through_the_tvm_ffi(row_copy, tmp_path):
    """``tslab export`` of a captured kernel: compiled with the TVM FFI (its host function takes tensors only), the
    package's function takes torch tensors, copies exactly, and a shape its compile did not take is refused."""
    import torch

    from tslab.compiling.captured_export import export_captured

    export_captured(row_copy, tmp_path / "row_copy_ffi_pkg")
    with imported(tmp_path / "row_copy_ffi_pkg") as pkg:
        assert pkg.CALL["abi"] == "tvm-ffi" and pkg.load() is pkg.load()
        src = torch.randn(ROWS, COLS, device="cuda", dtype=torch.float16)
        dst = torch.zeros_like(src)
        pkg.run(src, dst)
        torch.cuda.synchronize()
        assert torch.equal(src, dst)
        with pytest.raises(pkg.ExportedInputError, match=r"^row_copy_ffi_pkg.run: the compiled kernel refused its "
                                                         r"arguments \(.*\); it takes the host function's arguments"):
            pkg.run(src[:, : COLS // 2].contiguous(), dst)
