"""Compile-only for sm_90a on a machine without a GPU: artifacts, resource report, refusals."""

from __future__ import annotations

import json
import re

import pytest

import tslab.gpu as gpu
from tslab.compiling.targets import Target, resolve
from tslab.errors import DesignError
from tslab.gpu.device import arch_name
from tslab.kernels import demo_deadlock, gemm_sm90, grid_stride_copy, tma_copy


@pytest.fixture(scope="module")
def tma_kernel():
    return gpu.compile(tma_copy.design(), arch="sm_90a")


def test_tma_copy_ptx_uses_tma_loads_and_stores_without_spills(tma_kernel):
    ptx = tma_kernel.ptx
    assert ".target sm_90a" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cta.global" in ptx  # TMA load into the ring
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx  # TMA store from the ring
    assert tma_kernel.spills == 0 and tma_kernel.stack_frame == 0
    assert tma_kernel.registers and tma_kernel.registers > 0
    assert tma_kernel.cubin[:4] == b"\x7fELF"
    assert tma_kernel.verdict.status == "SAFE"
    assert tma_kernel.smem_bytes == 4 * 64 * 128 * 2 + tma_kernel.verdict.barrier_bytes


def test_grid_stride_copy_uses_16_byte_accesses():
    k = gpu.compile(grid_stride_copy.design(), arch="sm_90a", shape=(1 << 20,))
    assert "ld.global.v4.b32" in k.ptx and "st.global.v4.b32" in k.ptx
    assert k.spills == 0


def test_pipeline_edit_reaches_the_kernel():
    k = gpu.compile(
        tma_copy.design().with_pipeline("smem_ring", num_stages=2), arch="sm_90a", shape=(512, 512)
    )
    inits = [line for line in k.ptx.splitlines() if "mbarrier.init" in line]
    assert len(inits) == 4  # full + empty barrier per stage: 2 stages, not the default 4
    assert "+32776]" in k.ptx  # the barriers sit right after 2 x 16 KiB of ring
    assert k.smem_bytes == 2 * 64 * 128 * 2 + k.verdict.barrier_bytes


def test_unsafe_design_is_refused_with_the_verdict():
    too_big = tma_copy.design(stages=4, tile_rows=128, tile_cols=256)  # 4 x 64 KiB > 227 KiB
    with pytest.raises(gpu.UnsafeDesignError, match="CAPACITY") as info:
        gpu.compile(too_big, arch="sm_90a")
    assert info.value.verdict.errors


@pytest.mark.parametrize("epilogue", ["aliased", "dedicated"])
def test_gemm_sm90_compiles_to_wgmma_and_tma_without_spills(epilogue):
    stages, persistent = (4, False) if epilogue == "aliased" else (3, True)
    design = gemm_sm90.design(epilogue=epilogue, stages=stages, persistent=persistent)
    k = gpu.compile(design, arch="sm_90a", shape=(1000, 1000, 1000))
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in k.ptx
    assert "cp.async.bulk.tensor.2d.shared::cta.global" in k.ptx  # TMA loads of A and B
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in k.ptx  # TMA stores of C
    assert "stmatrix.sync.aligned" in k.ptx
    assert k.spills == 0 and k.stack_frame == 0 and 0 < k.registers <= 255
    ring = stages * (128 + 256) * 64 * 2
    epi = 0 if epilogue == "aliased" else 128 * 256 * 2
    assert k.smem_bytes == ring + epi + k.verdict.barrier_bytes


def test_gemm_sm90_cluster_pair_multicasts_b_and_syncs_the_cluster():
    k = gpu.compile(gemm_sm90.design(cluster_m=2), arch="sm_90a", shape=(1000, 1000, 1000))
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\S*\.multicast::cluster", k.ptx)
    assert "barrier.cluster.arrive" in k.ptx and "barrier.cluster.wait" in k.ptx
    assert "mapa.shared::cluster" in k.ptx and "mbarrier.arrive.shared::cluster" in k.ptx  # peer releases
    assert k.spills == 0


def test_gemm_sm90_pingpong_moves_registers_to_the_mma_warpgroups_without_serialising_wgmma():
    """Each warpgroup's task holds a whole 128 x 192 tile's accumulators of its own: setmaxnreg raises both MMA
    tasks to 232 and lowers the load/store warpgroup to 40; ptxas neither spills, nor serialises the wgmmas, nor
    injects a warpgroup.arrive (no C75xx remark: an empty wgmma group committed by the warpgroup that skips a tile
    drew four C7519 remarks and a dummy wgmma per K tile)."""
    k = gpu.compile(gemm_sm90.design(**gemm_sm90.PINGPONG), arch="sm_90a", shape=(1000, 1000, 1000))
    assert len(re.findall(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+232", k.ptx)) == 2  # MmaTask0, MmaTask1
    assert re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+40", k.ptx)
    assert "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16" in k.ptx and ".reqntid 384" in k.ptx
    assert k.spills == 0 and k.stack_frame == 0
    assert "ptxas" in k.log and not re.search(r"\(C75\d\d\)", k.log), k.log


def test_gemm_sm90_swapped_multiplies_b_by_a_and_stores_c_transposed():
    """swap_ab: the wgmma's N is A's 192 rows (M), the C tile is staged by transposing stmatrix."""
    from tslab.kernels.gemm_sm90_dispatch import SWAP_64x192

    k = gpu.compile(gemm_sm90.design(**SWAP_64x192), arch="sm_90a", shape=(192, 8192, 8192))
    assert "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16" in k.ptx
    assert "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in k.ptx
    assert k.spills == 0 and not re.search(r"\(C75\d\d\)", k.log)


def test_gemm_sm90_refuses_an_all_thread_release_in_a_cluster():
    design = gemm_sm90.design(cluster_m=2).with_pipeline("smem_ab", consumer_group={"agent": "Thread", "size": 256})
    with pytest.raises(gpu.UnsafeDesignError, match=r"consumer_group\.size=256 in a cluster of 2"):
        gpu.compile(design, arch="sm_90a")


def test_gemm_sm90_refuses_a_k_that_tma_cannot_take():
    with pytest.raises(gpu.UnsupportedKernelError, match=r"K=100 is not a multiple of 8.*pad K"):
        gpu.compile(gemm_sm90.design(), arch="sm_90a", shape=(128, 128, 100))


def test_gemm_sm90_refuses_a_one_row_a():
    with pytest.raises(gpu.UnsupportedKernelError, match="M=1"):
        gpu.compile(gemm_sm90.design(), arch="sm_90a", shape=(1, 256, 64))


def test_gemm_sm90_refuses_invalid_params_before_compiling():
    with pytest.raises(DesignError, match=r"param 'tile_m'.*not a multiple of 128 \(64 rows per warpgroup x 2\)"):
        gpu.compile(gemm_sm90.design(tile_m=64, mma_warpgroups=2), arch="sm_90a")


def test_launch_options_are_checked():
    with pytest.raises(gpu.UnsupportedKernelError, match="did you mean 'ctas_per_sm'"):
        gpu.compile(tma_copy.design(), arch="sm_90a", launch={"ctas_per_smm": 1})


def test_bad_shape_is_refused_before_compiling():
    with pytest.raises(gpu.UnsupportedKernelError, match="16 bytes"):
        gpu.compile(tma_copy.design(), arch="sm_90a", shape=(64, 100 + 1))


@pytest.mark.skipif(gpu.device() is not None, reason="a GPU is here, so the arch has a default")
def test_compile_without_gpu_needs_an_arch():
    with pytest.raises(gpu.NoGpuError, match="arch='sm_90a'"):
        gpu.compile(tma_copy.design())


def test_arch_names():
    assert arch_name(9, 0) == "sm_90a"
    assert arch_name(8, 6) == "sm_86"


@pytest.mark.skipif(gpu.device() is not None, reason="checks the message given on a machine without a GPU")
def test_run_and_bench_without_a_gpu_say_so():
    kernel = gpu.compile(tma_copy.design(), arch="sm_90a", shape=(256, 256))
    with pytest.raises(gpu.NoGpuError, match="no NVIDIA GPU"):
        kernel.run()
    with pytest.raises(gpu.NoGpuError, match="run, bench and profile need a GPU"):
        gpu.bench(kernel)


#: StoreTask polls its full barrier (try-wait) before the blocking wait: a different schedule TS proves SAFE.
TRY_WAIT_STORE = [
    ("smem_ring", "ConsumerAuxWork", "Head", "bind_read"),
    ("smem_ring", "ConsumerTryWait", "Loop", None),
    ("smem_ring", "ConsumerWait", "Loop", None),
    ("smem_ring", "ConsumerWork", "Loop", "read_tile"),
    ("gmem_out", "ProducerWork", "Loop", "store"),
    ("smem_ring", "ConsumerRelease", "Loop", None),
]


def test_schedule_edit_reaches_the_kernel():
    plain = gpu.compile(tma_copy.design(), arch="sm_90a", shape=(512, 512))
    edited = gpu.compile(tma_copy.design().with_schedule("StoreTask", TRY_WAIT_STORE), arch="sm_90a",
                         shape=(512, 512))
    assert edited.verdict.status == "SAFE"
    assert edited.target.schedules == {"StoreTask": [list(s) for s in TRY_WAIT_STORE]}
    assert edited.ptx != plain.ptx
    # the extra try-wait on the ring's full barrier is in the generated code
    assert edited.ptx.count("mbarrier.try_wait") > plain.ptx.count("mbarrier.try_wait")


def test_alias_group_edit_travels_and_compiles():
    # No catalog GPU kernel has two SMEM allocations to alias; the edit that exists (no groups) round-trips.
    kernel = gpu.compile(tma_copy.design().with_alias_groups([]), arch="sm_90a", shape=(512, 512))
    assert kernel.target.alias_groups == []
    assert Target.from_dict(kernel.target.to_dict()) == kernel.target
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in kernel.ptx


def test_target_carries_edits_as_plain_data():
    design = tma_copy.design().with_pipeline("smem_ring", num_stages=2).with_schedule("StoreTask", TRY_WAIT_STORE)
    target = resolve(design, (512, 512))
    data = json.loads(json.dumps(target.to_dict()))
    assert Target.from_dict(data) == target
    assert data["schedules"]["StoreTask"][1] == ["smem_ring", "ConsumerTryWait", "Loop", None]
    assert data["validate"] is True


def test_deadlock_demo_compiles_tma_copy_with_its_schedule_when_forced():
    with pytest.raises(gpu.UnsafeDesignError, match="DEADLOCK; fix the errors below or pass force=True"):
        gpu.compile(demo_deadlock.design(), arch="sm_90a", shape=(512, 512))
    kernel = gpu.compile(demo_deadlock.design(), arch="sm_90a", shape=(512, 512), force=True)
    assert kernel.verdict.status == "DEADLOCK" and kernel.target.validate is False
    assert kernel.target.schedules == {"StoreTask": [list(s) for s in demo_deadlock.SCHEDULES["StoreTask"]]}
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in kernel.ptx  # tma_copy's kernel, edited
    assert "Exhaustive checker found 1 deadlock(s)" in kernel.log  # TS warned at construction instead of raising


def test_a_persistent_gemm_compiles_without_upstream_deprecation_warnings():
    """TS's WorkQueue rests on CuTe DSL's deprecated scheduler copy: its 330 warnings a compile are not the user's."""
    import warnings

    from tslab.compiling.compile import compile_target
    from tslab.compiling.targets import resolve

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile_target(resolve(gemm_sm90.design(), (1024, 1024, 1024), "float16"), 132, "--gpu-arch sm_90a")
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning)], caught[:3]
