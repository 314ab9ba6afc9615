"""FlashInfer's TS attention kernels, captured as FlashInfer compiles them (skipped unless the source is named).

    TSLAB_FLASHINFER_SRC=path/to/flashinfer     a FlashInfer source tree (the folder holding flashinfer/)

Only the kernel modules under ``flashinfer/attention/prims_ts/kernels`` are imported: the package's own
``__init__`` (compiled extensions, torch) is stood in for by empty packages, and the two device queries its
launch policies make are answered for a B200 (148 SMs). Each kernel is compiled for sm_100a on the CPU with
the frontend and options FlashInfer passes (less ``--enable-tvm-ffi``, which needs the apache-tvm-ffi package
and changes only how Python calls the compiled kernel). FlashInfer builds these TaskManagers with
``skip_validation=True, verbose=False`` when the K/V tile count is a runtime value, so TS prints nothing during
the trace and reports through warnings: tslab's re-check must agree with those.

Measured against FlashInfer fb28d72 (2026-08-22), whose decode kernels call TS methods with arguments that
nvidia-cutlass-dsl 4.8.1 lacks: their traces stop after the TaskManager is built, which is what a capture needs.
"""

import pytest
from flashinfer_kernels import (
    ARCH,
    CONTEXT_KERNEL,
    CONTEXT_TRIPS,
    DECODE_KERNEL,
    KERNELS,
    MLA_KERNEL,
    OPTIONS,
    capture_or_built,
    context_args,
    decode_args,
    mla_args,
    stand_in_flashinfer,
    write_kernel,
)

import tslab
from tslab.capture import capture_call, capture_file_all
from tslab.core.design import Design

pytestmark = pytest.mark.skipif(not KERNELS.is_dir(), reason="TSLAB_FLASHINFER_SRC names no FlashInfer source")


def assert_agrees(manager):
    """What TS's own search finds on the re-check is what TS found in the trace; returns both verdicts."""
    ts = tslab.check(manager.design, strategy="ts")
    agreement = manager.agreement(ts)
    assert agreement and all(agreement.values()), (agreement, manager.ts_warnings, ts.text())
    return tslab.check(manager.design), ts


@pytest.fixture(scope="module")
def context_file(tmp_path_factory):
    return write_kernel(tmp_path_factory.mktemp("flashinfer"), "context_fmha", CONTEXT_KERNEL)


@pytest.fixture(scope="module")
def context(context_file):
    import cutlass.cute as cute

    return capture_file_all(context_file, "context_fmha", *context_args(), arch=ARCH, frontend=cute.FrontendNext,
                            options=OPTIONS, timeout=1200)


def test_context_fmha_recheck_agrees_with_what_ts_found_in_the_trace(context):
    assert len(context.managers) == 1
    manager = context.managers[0]
    assert manager.design.tasks() == ["Softmax0Task", "Softmax1Task", "CorrectionTask", "MmaTask", "LoadTask",
                                      "EpilogueTask", "PaddingTask"]
    assert manager.silent and manager.options["skip_validation"] is True
    verdict, ts = assert_agrees(manager)
    # the K/V tile count is a runtime value: both searches check one trip for every task; TS's runs out of
    # states, the reduced one finds every interleaving of that one trip blocked
    assert ts.status == verdict.status == "BLOCKED (ASSUMED)"
    assert ts.checker.verdict == "not-proven" and verdict.checker.verdict == "deadlock"
    assert verdict.checker.states_explored < 1_000
    assert verdict.smem_total <= verdict.smem_capacity and verdict.tmem_total == 512


@pytest.mark.parametrize("n", [1, 2, 4])
def test_context_fmha_with_its_real_trip_counts_races_by_ts_s_model(context, n):
    """Load, softmax and epilogue run n trips, MMA and correction n - 1: no deadlock, but the epilogue's TMA
    store (a ProducerWork on gmem_o, whose SMEM aliases smem_o's) stays live in TS's model, so the next tile's
    correction writing smem_o races with it."""
    verdict = tslab.check(context.design, trips=CONTEXT_TRIPS, n=n)
    assert verdict.status == "RACE"
    race = next(e for e in verdict.errors if e.kind == "race")
    assert race.where == "resource 'gmem_o_0'"
    assert "EpilogueTask writes gmem_o_0 while CorrectionTask prod smem_o_0" in race.message
    assert "TS keeps gmem_o_0 written from then on" in race.message
    assert verdict.trace is not None and verdict.trace.fault.kind == "race"


def test_context_fmha_saved_design_reopens(context):
    import cutlass.cute as cute

    saved = context.design.to_json()
    reopened = Design.from_json(saved)
    assert reopened.to_json() == saved
    assert reopened.source.frontend is cute.FrontendNext and reopened.source.options == OPTIONS
    assert reopened.tasks() == context.design.tasks()


def test_context_fmha_with_a_compile_time_tile_count_is_proven_as_ts_printed_it(context_file):
    """FlashInfer's own CPU check of the graph: its builder with an int K/V tile count, outside any trace."""
    from tslab.capture.api import import_kernel_file

    module = import_kernel_file(context_file)

    def build():
        import warnings

        from flashinfer.attention.prims_ts.kernels.fmha_context.fmha_kernel import build_fmha_task_manager

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            build_fmha_task_manager(module.FMHA.cfg, tile_sched_params=None, tma_q_desc=None, tma_k_desc=None,
                                    tma_v_desc=None, tma_o_desc=None, cum_seqlen_q=None, cum_seqlen_k=None,
                                    num_kv_tiles=2, is_persistent=True, exhaustive_deadlock_race_check=True)

    result = capture_call(build, arch=ARCH, timeout=1200)
    manager = result.managers[0]
    assert not manager.silent and manager.options["skip_validation"] is False
    ts = tslab.check(manager.design, strategy="ts")
    assert manager.agreement(ts) == {"schedule": True, "smem": True, "checker": True}
    # two K/V tiles already take TS's search past its 1,000,000 states: TS prints SAFE with a warning
    assert ts.status == "NOT PROVEN" and not ts.errors
    verdict = tslab.check(manager.design)
    assert verdict.status == "RACE" and verdict.checker.prover == "reduced"


@pytest.fixture(scope="module")
def decode_file(tmp_path_factory):
    stand_in_flashinfer()
    return write_kernel(tmp_path_factory.mktemp("flashinfer"), "paged_decode", DECODE_KERNEL)


def test_paged_decode_task_manager_rechecks_as_ts_found_it(decode_file):
    manager = capture_or_built(decode_file, "paged_decode", decode_args(), options=OPTIONS).managers[0]
    assert manager.design.tasks() == ["PageTableTask", "LoadTask", "Softmax0Task", "Softmax1Task",
                                      "CorrectionTask", "MmaTask", "PaddingTask"]
    assert manager.silent
    verdict, ts = assert_agrees(manager)
    assert ts.status == "NOT PROVEN" and not ts.errors
    assert verdict.status == "SAFE" and verdict.checker.states_explored < 10_000


@pytest.fixture(scope="module")
def mla_file(tmp_path_factory):
    stand_in_flashinfer()
    return write_kernel(tmp_path_factory.mktemp("flashinfer"), "mla_decode", MLA_KERNEL)


def test_mla_decode_task_manager_rechecks_as_ts_found_it(mla_file):
    import cutlass.cute as cute

    result = capture_or_built(mla_file, "mla_decode", mla_args(), frontend=cute.FrontendNext, options="--opt-level 2")
    manager = result.managers[0]
    assert manager.design.tasks() == ["LoadTmaTask", "MmaTask", "SoftmaxTask", "CorrectionTask", "PaddingTask"]
    verdict, ts = assert_agrees(manager)
    assert verdict.ok and ts.ok and ts.checker.states_explored > 100_000
    assert verdict.checker.states_explored * 10 < ts.checker.states_explored
