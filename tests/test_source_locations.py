"""Catalog kernels compile with ptxas' report but without a Python source location per op
(:mod:`tslab.compiling.source_locations`): the same PTX and cubin, the same report, and the private switch it uses
is where CuTe DSL 4.8.1 keeps it."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from tslab.compiling.compile import compile_target, parse_ptxas
from tslab.compiling.source_locations import without_op_locations
from tslab.compiling.targets import resolve
from tslab.kernels import tma_copy


def test_the_switch_is_where_cutlass_dsl_keeps_it():
    from cutlass._mlir_helpers import op
    from cutlass.base_dsl import dsl

    assert callable(dsl._set_enable_frame_filtering), "CuTe DSL moved its frame-filtering switch: update the module"
    seen = []
    with without_op_locations():
        dsl._set_enable_frame_filtering(True)  # what a compile with remarks{ptx} asks for
        seen.append(op._ENABLE_FRAME_FILTERING)
    assert seen == [False]
    assert dsl._set_enable_frame_filtering is not None and "lambda" not in dsl._set_enable_frame_filtering.__name__


def _compile(options: str, capfd, *, traced: bool):
    """``cute.compile`` of tma_copy with ``options``, per-op locations on as CuTe DSL has them (``traced``) or off;
    the function and what the compile printed (ptxas' report)."""
    import cutlass.cute as cute

    from tslab.compiling.compile import fake_args

    t = resolve(tma_copy.design(stages=2), (1024, 1024), None, None)
    capfd.readouterr()
    with tempfile.TemporaryDirectory() as scratch:
        full = f"{options} --dump-dir {scratch}"
        if traced:
            with t.edits_applied():
                fn = cute.compile(t.launcher.launch, *fake_args(t), *t.launch_constants(132), options=full)
        else:
            fn = compile_target(t, 132, full)
    printed = capfd.readouterr()
    return fn, printed.out + printed.err


def test_the_same_code_and_the_same_report_without_op_locations(capfd):
    options = "--gpu-arch sm_90a --keep-ptx --keep-cubin remarks{ptx}"
    plain, plain_log = _compile(options, capfd, traced=False)
    traced, traced_log = _compile(options, capfd, traced=True)
    assert plain.artifacts.PTX == traced.artifacts.PTX
    assert bytes(plain.artifacts.CUBIN) == bytes(traced.artifacts.CUBIN)
    report = parse_ptxas(plain_log)
    assert report == parse_ptxas(traced_log) and report["registers"] and report["spill_stores"] == 0
