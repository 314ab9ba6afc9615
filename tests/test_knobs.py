"""Knob edits of captured kernels: a knob edit is the kernel *written* with that value.

Three kernels size their SMEM from module constants (the row copy of tutorial 06, a grouped A/B ring, a
GEMM-like A/B ring with an epilogue). For each, ``with_knobs(<stage knob>=n)`` must give the verdict of a fresh
capture of a copy of the file with the constant written as ``n``; a pipeline edit of ``num_stages`` alone
never passes; JSON round-trips re-trace the same kernel.
"""

import re
import shutil
from pathlib import Path

import cutlass
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tslab
from tslab import fake
from tslab.capture.knobs import module_with_knobs
from tslab.errors import DesignError

ROOT = Path(__file__).resolve().parents[1]
KERNELS = {
    # name: (file, host function, argument shapes, stage knob, the resource that knob sizes)
    "row_copy": (ROOT / "notebooks/kernels/row_copy.py", "copy_rows", [(6, 256), (6, 256)], "ring_stages",
                 "smemRow"),
    "group_ring": (ROOT / "tests/fixtures/group_ring.py", "group_ring", [(64, 64)], "stages", "ab_sync"),
    "ab_gemm_like": (ROOT / "tests/fixtures/ab_gemm_like.py", "ab_gemm_like", [(128, 128)], "ab_stages", "smemAb"),
}
STAGES = range(1, 9)


def capture(path, name):
    _, function, shapes, *_ = KERNELS[name]
    return tslab.capture_file(path, function, *(fake.tensor("f16", s) for s in shapes))


def knob_text(value):
    if isinstance(value, str) and value.startswith("cutlass."):
        return value
    return repr(tuple(value) if isinstance(value, list) else value)


def written(folder, name, **knobs):
    """A copy of the kernel file with each knob's one assignment line rewritten, captured afresh."""
    text = KERNELS[name][0].read_text()
    for knob, value in knobs.items():
        text, count = re.subn(rf"^{knob} = .*$", f"{knob} = {knob_text(value)}", text, count=1, flags=re.M)
        assert count == 1, knob
    tag = "_".join(k + re.sub(r"\W", "", knob_text(v)) for k, v in sorted(knobs.items()))
    path = Path(folder) / f"{name}_{tag}.py"
    path.write_text(text)
    return capture(path, name)


def table(verdict):
    return verdict.layout[["name", "offset", "size"]].to_dict("records")


def assert_same_verdict(a, b):
    assert a.status == b.status
    assert table(a) == table(b)
    assert (a.smem_total, a.barrier_bytes) == (b.smem_total, b.barrier_bytes)
    assert a.checker.states_explored == b.checker.states_explored


@pytest.fixture(scope="module")
def captured():
    return {name: capture(KERNELS[name][0], name) for name in KERNELS}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("written")


def test_each_kernel_checks_safe_as_captured(captured):
    for name, design in captured.items():
        assert tslab.check(design).ok, name
        assert KERNELS[name][3] in design.knobs()


@pytest.mark.parametrize("name", list(KERNELS))
def test_a_stage_knob_edit_is_the_kernel_written_with_that_value(captured, folder, name):
    knob = KERNELS[name][3]
    statuses, totals = set(), set()
    for n in STAGES:
        edited = tslab.check(captured[name].with_knobs(**{knob: n}))
        assert_same_verdict(edited, tslab.check(written(folder, name, **{knob: n})))
        statuses.add(edited.status)
        totals.add(edited.smem_total)
    assert "SAFE" in statuses
    assert len(totals) == len(STAGES)  # every stage count re-sized the kernel's buffers


def test_a_knob_past_capacity_agrees_with_the_written_kernel(captured, folder):
    edited = tslab.check(captured["ab_gemm_like"].with_knobs(ab_stages=6))
    assert edited.status == "CAPACITY"
    assert_same_verdict(edited, tslab.check(written(folder, "ab_gemm_like", ab_stages=6)))


def test_tuple_and_dtype_knobs_re_trace_like_the_written_kernel(captured, folder):
    design = captured["ab_gemm_like"]
    assert design.knobs()["mma_tiler_mnk"] == (128, 128, 64)
    assert design.knobs()["ab_dtype"] == "cutlass.Float16"
    for knobs in ({"mma_tiler_mnk": (64, 128, 64)}, {"ab_dtype": "cutlass.Float32"},
                  {"mma_tiler_mnk": (64, 64, 32), "ab_dtype": "cutlass.Float32", "ab_stages": 3}):
        fresh = written(folder, "ab_gemm_like", **knobs)
        assert_same_verdict(tslab.check(design.with_knobs(**knobs)), tslab.check(fresh))


@pytest.mark.parametrize("name", list(KERNELS))
def test_a_pipeline_only_stage_edit_never_passes(captured, name):
    _, _, _, knob, resource = KERNELS[name]
    design = captured[name]
    current = design.knobs()[knob]
    for n in (1, 2, 5, 8):
        if n == current:
            continue
        verdict = tslab.check(design.with_pipeline(resource, num_stages=n))
        assert not verdict.ok
        unfaithful = [e for e in verdict.errors if e.kind == "unfaithful-edit"]
        assert unfaithful, (name, n)
        assert f"knob `{knob}` ({current})" in unfaithful[0].hint
        assert f"with_knobs({knob}={n})" in unfaithful[0].hint


def test_a_pipeline_only_stage_edit_of_the_group_never_passes(captured):
    design = captured["group_ring"]
    verdict = tslab.check(design.with_pipeline("ab_sync", num_stages=5))
    assert not verdict.ok
    assert any(e.kind == "unfaithful-edit" and "knob `stages` (3)" in e.hint for e in verdict.errors)


# Each example re-traces the kernel and captures a written copy (a few seconds each): few examples.
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(list(KERNELS)), stages=st.integers(1, 6),
       pipeline_stages=st.one_of(st.none(), st.integers(1, 6)), tile=st.sampled_from([None, 64, 128]))
def test_ok_implies_the_layout_of_the_written_kernel(captured, folder, name, stages, pipeline_stages, tile):
    _, _, _, knob, resource = KERNELS[name]
    knobs = {knob: stages}
    if tile is not None:
        knobs["tile_m" if name == "group_ring" else "row_elems" if name == "row_copy" else "mma_tiler_mnk"] = \
            (tile, 128, 64) if name == "ab_gemm_like" else tile * 2 if name == "row_copy" else tile
    design = captured[name].with_knobs(**knobs)
    if pipeline_stages is not None:
        design = design.with_pipeline(resource, num_stages=pipeline_stages)
    verdict = tslab.check(design)
    if pipeline_stages is not None and pipeline_stages != stages:
        assert not verdict.ok
    if verdict.ok:
        fresh = tslab.check(written(folder, name, **knobs))
        assert fresh.ok
        assert table(verdict) == table(fresh)
        assert (verdict.smem_total, verdict.barrier_bytes) == (fresh.smem_total, fresh.barrier_bytes)


def test_json_of_a_knob_edited_design_re_opens_to_the_same_verdict(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(KERNELS["row_copy"][0], tmp_path / "row_copy.py")
    design = capture(Path("row_copy.py"), "row_copy").with_knobs(ring_stages=3)
    text = design.to_json()
    assert '"ring_stages": 3' in text
    again = tslab.Design.from_json(text)
    assert again.knobs()["ring_stages"] == 3
    assert_same_verdict(tslab.check(again), tslab.check(design))
    path = tmp_path / "row_copy.py"
    path.write_text(path.read_text().replace("row_elems = 256", "row_elems = 128"))
    with pytest.raises(DesignError, match=r"row_copy\.py': changed since the design was saved"):
        tslab.Design.from_json(text)


def test_an_unknown_knob_lists_the_knobs(captured):
    with pytest.raises(DesignError, match=r"knob 'ring_stage' is not a knob of this kernel; did you mean "
                                          r"'ring_stages'\? valid names are: 'ring_stages', 'row_elems', "
                                          r"'store_threads'"):
        captured["row_copy"].with_knobs(ring_stage=3)


def test_a_knob_of_the_wrong_kind_is_refused(captured):
    with pytest.raises(DesignError, match=r"knob ring_stages='3' is a str but the kernel's value 2 is a int"):
        captured["row_copy"].with_knobs(ring_stages="3")
    with pytest.raises(DesignError, match=r"knob mma_tiler_mnk=128 is a int"):
        captured["ab_gemm_like"].with_knobs(mma_tiler_mnk=128)
    with pytest.raises(DesignError, match=r"knob ab_stages=True is a bool"):
        captured["ab_gemm_like"].with_knobs(ab_stages=True)


def test_a_knob_module_keeps_the_kernels_annotations_as_objects(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text("depth = 2\n\n\ndef host(x: int, n: float = depth):\n    return n\n")
    module = module_with_knobs(Path(path), path.read_text(), {"depth": 5})
    assert module.host.__annotations__ == {"x": int, "n": float}
    assert module.host(0) == 5


def constexpr_row_copy(folder):
    """The row copy with a dtype and a tuple among its host function's constexpr arguments."""
    text = KERNELS["row_copy"][0].read_text()
    host = "def copy_rows(src: cute.Tensor, dst: cute.Tensor):"
    assert host in text and "box_dims=(1, row_elems)" in text
    text = text.replace(host, "def copy_rows(src: cute.Tensor, dst: cute.Tensor, elem: cutlass.Constexpr = "
                              "cutlass.Float16, box: cutlass.Constexpr = (1, row_elems)):")
    text = text.replace("box_dims=(1, row_elems)", "box_dims=box")
    text = text.replace("    desc = cuda.create", "    assert elem is cutlass.Float16 and isinstance(box, tuple)\n"
                        "    desc = cuda.create", 1)
    path = Path(folder) / "row_copy_constexpr.py"
    path.write_text(text)
    return capture(path, "row_copy")


def test_dtype_and_tuple_constexpr_knobs_reach_the_host_function_as_written(folder):
    design = constexpr_row_copy(folder)
    assert design.knobs()["elem"] == "cutlass.Float16"
    assert design.knobs()["box"] == (1, 256)
    edited = design.with_knobs(elem=cutlass.Float16, box=[1, 256])
    assert edited.knobs()["box"] == (1, 256)
    assert tslab.check(edited).ok


def test_a_dtype_knob_takes_only_dtypes(captured):
    design = captured["ab_gemm_like"]
    assert design.with_knobs(ab_dtype=cutlass.BFloat16).knobs()["ab_dtype"] == "cutlass.BFloat16"
    assert design.with_knobs(mma_tiler_mnk=[64, 64, 64]).knobs()["mma_tiler_mnk"] == (64, 64, 64)
    with pytest.raises(DesignError, match=r"knob ab_dtype='float32' is not a CuTe DSL dtype but the kernel's "
                                          r"value is cutlass\.Float16; give a dtype such as cutlass\.Float32"):
        design.with_knobs(ab_dtype="float32")
