"""The Blackwell GEMM compiled for sm_100a on a machine without one: tcgen05, TMEM, CLC, no spills; refusals."""

from __future__ import annotations

import re

import pytest

import tslab.gpu as gpu
from tslab.errors import UnsupportedArchError
from tslab.kernels import gemm_sm100


def ops(ptx: str) -> set[str]:
    """The tcgen05 and CLC instructions in ``ptx`` (their names up to the first qualifier that varies)."""
    return set(re.findall(r"\b(tcgen05\.[a-z_]+|clusterlaunchcontrol\.[a-z_]+)", ptx))


@pytest.fixture(scope="module")
def default_kernel():
    return gpu.compile(gemm_sm100.design(), arch="sm_100a", shape=(1000, 1000, 1000))


def test_default_compiles_to_tcgen05_mma_tmem_loads_and_clc_without_spills(default_kernel):
    k = default_kernel
    assert ".target sm_100a" in k.ptx
    assert {"tcgen05.alloc", "tcgen05.mma", "tcgen05.commit", "tcgen05.ld", "tcgen05.dealloc",
            "clusterlaunchcontrol.try_cancel", "clusterlaunchcontrol.query_cancel"} <= ops(k.ptx)
    assert "tcgen05.mma.cta_group::1.kind::f16" in k.ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in k.ptx  # the epilogue's TMA stores
    assert k.spills == 0 and k.stack_frame == 0 and 0 < k.registers <= 255
    assert k.verdict.status == "SAFE" and k.cubin[:4] == b"\x7fELF"


def test_a_pair_with_merged_rings_compiles_to_two_cta_mmas_and_the_static_scheduler_to_no_clc():
    design = gemm_sm100.design(cluster_m=2, scheduler="static", epilogue="direct", ab_rings="merged")
    k = gpu.compile(design, arch="sm_100a", shape=(1024, 1024, 1024))
    assert "tcgen05.mma.cta_group::2.kind::f16" in k.ptx and "tcgen05.alloc.cta_group::2" in k.ptx
    assert "clusterlaunchcontrol" not in k.ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" not in k.ptx  # C stored from registers
    assert k.spills == 0


def test_compiling_for_hopper_is_refused_with_the_arch_to_use():
    with pytest.raises(UnsupportedArchError, match=r"compile of 'gemm_sm100': arch='sm_90a', but this kernel is "
                                                   r"for sm_100a \(Blackwell: B200, GB200\) only; compile it with "
                                                   r"arch='sm_100a'"):
        gpu.compile(gemm_sm100.design(), arch="sm_90a")


def test_running_needs_a_blackwell_gpu_and_says_so(default_kernel):
    """Here there is no GPU; on a GPU of another arch (the H200) the same calls name the arch the kernel needs."""
    info = gpu.device()
    if info is not None and info.arch == "sm_100a":
        pytest.skip("a Blackwell GPU is here: the kernel runs")
    expected = (gpu.NoGpuError, r"runs on sm_100a \(Blackwell: B200, GB200\) only; "
                r"compile\(design, arch='sm_100a'\) works without one") if info is None else (
        UnsupportedArchError, rf"on this {re.escape(info.name)}: arch='{info.arch}', but this kernel is for sm_100a")
    for call in (default_kernel.run, lambda: gpu.bench(default_kernel), lambda: gpu.profile(gemm_sm100.design())):
        with pytest.raises(expected[0], match=expected[1]):
            call()
