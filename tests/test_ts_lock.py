"""Designs built from several threads at once (a Studio re-checking in the background while a cell lowers or
checks a design) always build: CuTe DSL's JIT, which TS's WorkQueue runs when it is built, keeps process-wide
state, and a race there made a valid design's check come out INVALID."""

from __future__ import annotations

import sys
import threading

import pytest

import tslab
from tslab.kernels import design


@pytest.fixture
def frequent_thread_switches():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # makes the race, once there, likely within a few hundred builds
    yield
    sys.setswitchinterval(before)


def test_a_design_lowered_from_four_threads_at_once_always_builds(frequent_thread_switches):
    persistent_gemm = design("gemm_sm90")  # persistent: its WorkQueue runs the JIT when built
    failures: list[BaseException] = []

    def lower_many() -> None:
        for _ in range(150):
            try:
                persistent_gemm.lower()
            except Exception as exc:
                failures.append(exc)

    threads = [threading.Thread(target=lower_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_checks_beside_lowering_in_another_thread_are_the_design_s_own(frequent_thread_switches):
    gemm = design("gemm_sm90")
    stop = threading.Event()

    def lower_until_stopped() -> None:
        while not stop.is_set():
            gemm.lower()

    other = threading.Thread(target=lower_until_stopped)
    other.start()
    try:
        statuses = {tslab.check(gemm).status for _ in range(6)}
    finally:
        stop.set()
        other.join()
    assert statuses == {"SAFE"}
