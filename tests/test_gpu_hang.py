"""A kernel that hangs on the GPU, as the checker predicted: stopped, reported with the counterexample, GPU free."""

from __future__ import annotations

import sys

import pytest

import tslab
import tslab.gpu as gpu
from tslab.compiling.targets import resolve
from tslab.gpu.compile import CompiledKernel
from tslab.gpu.jobs import KERNEL_PHASE
from tslab.kernels import demo_deadlock, tma_copy

#: StoreTask polls its full barrier (try-wait) before the blocking wait: a SAFE schedule edit of tma_copy.
TRY_WAIT_STORE = [
    ("smem_ring", "ConsumerAuxWork", "Head", "bind_read"),
    ("smem_ring", "ConsumerTryWait", "Loop", None),
    ("smem_ring", "ConsumerWait", "Loop", None),
    ("smem_ring", "ConsumerWork", "Loop", "read_tile"),
    ("gmem_out", "ProducerWork", "Loop", "store"),
    ("smem_ring", "ConsumerRelease", "Loop", None),
]
BLOCKED = (r"LoadTask blocked on smem_ring.ProducerAcquire waiting for empty-slot credit; "
           r"StoreTask blocked on smem_ring.ConsumerWait waiting for producer commit credit")


def _kernel(design: tslab.Design) -> CompiledKernel:
    """A CompiledKernel as compile() returns it, without compiling (what run() needs: target and verdict)."""
    return CompiledKernel(target=resolve(design, (512, 512)), arch="sm_90a", sms=132, verdict=tslab.check(design),
                          ptx="", cubin=b"", compile_seconds=0.0)


def test_hang_message_quotes_the_checkers_counterexample():
    error = gpu.KernelHungError.from_verdict("demo_deadlock", tslab.check(demo_deadlock.design()), 10)
    assert isinstance(error, gpu.WorkerTimeoutError) and error.phase == KERNEL_PHASE and error.seconds == 10
    pattern = (r"^kernel 'demo_deadlock': hung on the GPU as tslab.check\(\) predicted \(deadlock at cursors "
               rf"\(8, 2\): {BLOCKED}\); the worker was stopped after 10 s, which frees the GPU; give the ring more "
               r"stages, or release each stage before waiting for the next, check it again and compile it "
               r"without force=True\.$")
    with pytest.raises(gpu.KernelHungError, match=pattern):
        raise error


def test_a_hang_the_checker_did_not_predict_says_so():
    error = gpu.KernelHungError.from_verdict("tma_copy", tslab.check(tma_copy.design()), 5)
    with pytest.raises(gpu.KernelHungError, match=r"did not finish within 5 s although tslab.check\(\) says SAFE; "
                                                  r".*the checker and the kernel disagree\.$"):
        raise error


def test_run_turns_a_kernel_timeout_into_a_hang_and_leaves_other_timeouts_alone(monkeypatch):
    compile_module = sys.modules["tslab.gpu.compile"]  # the module, not the function tslab.gpu.compile

    def kernel_timeout(target, *, seed, timeout):
        raise gpu.WorkerTimeoutError("run: ran past", phase=KERNEL_PHASE, seconds=timeout)

    def setup_timeout(target, *, seed, timeout):
        raise gpu.WorkerTimeoutError("run: ran past", phase=None, seconds=600)

    kernel = _kernel(demo_deadlock.design())
    monkeypatch.setattr(compile_module, "run_on_gpu", kernel_timeout)
    with pytest.raises(gpu.KernelHungError, match=BLOCKED):
        kernel.run(timeout=10)
    monkeypatch.setattr(compile_module, "run_on_gpu", setup_timeout)
    with pytest.raises(gpu.WorkerTimeoutError, match="ran past") as info:
        kernel.run(timeout=10)
    assert not isinstance(info.value, gpu.KernelHungError)


# -- on a GPU ----------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(gpu.device() is None, reason="no NVIDIA GPU here")
def test_deadlock_hangs_on_the_gpu_as_predicted_and_the_gpu_stays_usable():
    hung = gpu.compile(demo_deadlock.design(), force=True, shape=(4096, 4096))
    with pytest.raises(gpu.KernelHungError, match=rf"hung on the GPU as tslab.check\(\) predicted .*{BLOCKED}"):
        hung.run(timeout=10)
    out = gpu.compile(tma_copy.design(), shape=(4096, 4096)).run(timeout=60)
    assert out["rel_error"] == 0 and out["mismatches"] == 0


@pytest.mark.gpu
@pytest.mark.skipif(gpu.device() is None, reason="no NVIDIA GPU here")
def test_schedule_edited_tma_copy_copies_exactly():
    kernel = gpu.compile(tma_copy.design().with_schedule("StoreTask", TRY_WAIT_STORE), shape=(3000, 1024))
    assert kernel.target.schedules["StoreTask"][1][1] == "ConsumerTryWait"
    out = kernel.run(seed=5, timeout=60)
    assert out["rel_error"] == 0 and out["mismatches"] == 0
