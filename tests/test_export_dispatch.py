"""Export of a Dispatch without a GPU: one object per design (a design two rules share, once), design.json and
VERDICT.txt per design, a package that picks by M and K and loads without tslab; a refused design leaves nothing
behind."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tslab import Dispatch
from tslab.cli import main
from tslab.gpu.errors import GpuError, UnsafeDesignError
from tslab.gpu.export import export
from tslab.kernels import gemm_sm90
from tslab.kernels.gemm_sm90_dispatch import tuned

# (M, N, K) on both sides of each of tuned()'s bounds, and the index of the design each one uses.
PICKS = [((1, 64, 64), 0), ((64, 64, 64), 0), ((65, 64, 64), 1), ((128, 64, 64), 1), ((129, 64, 64), 2),
         ((192, 64, 64), 2), ((193, 64, 64), 3), ((256, 64, 64), 3), ((257, 64, 64), 4), ((320, 64, 64), 4),
         ((321, 64, 64), 5), ((384, 64, 64), 5), ((385, 64, 64), 6), ((512, 8192, 8192), 6), ((513, 64, 64), 6),
         ((4096, 4096, 4096), 6), ((4096, 64, 4104), 7), ((4096, 4104, 64), 7), ((4097, 64, 64), 7),
         ((513, 8192, 8192), 7)]
DESIGNS = len(tuned().designs)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """``tslab export gemm_sm90 --tuned``: the measured dispatch, fp16, compiled for sm_90a."""
    out = tmp_path_factory.mktemp("exports") / "gemm_tuned_pkg"
    assert main(["export", "gemm_sm90", "--tuned", "-o", str(out)]) == 0
    return out


def test_the_command_says_each_designs_verdict_by_its_range_and_the_files(package, capsys):
    from tslab.gpu.cli import exported

    said = exported(package).splitlines()
    assert said[0] == ("exported gemm_sm90 (a dispatch of 8 designs by M, N and K) for sm_90a; tslab.check: SAFE "
                       "(M <= 64), SAFE (65 <= M <= 128), SAFE (129 <= M <= 192), SAFE (193 <= M <= 256), "
                       "SAFE (257 <= M <= 320), SAFE (321 <= M <= 384), SAFE (385 <= M <= 512 or 513 <= M <= 4096, "
                       "N <= 4096, K <= 4096), SAFE (M >= 513, otherwise)")
    assert said[1] == f"{package}/" and {"  kernel_0.o", "  kernel_7.o", "  VERDICT.txt"} <= set(said[2:])


def test_one_object_per_design_with_its_own_prefix(package):
    names = {p.name for p in package.iterdir()}
    assert {f"kernel_{i}.o" for i in range(DESIGNS)} | {
        "design.json", "VERDICT.txt", "__init__.py", "_runtime.py", "test_kernel.py"} <= names
    assert "kernel.o" not in names and f"kernel_{DESIGNS}.o" not in names
    for i in range(DESIGNS):  # each object holds one TVM FFI function, named by its prefix
        assert f"__tvm_ffi_kernel_{i}".encode() in (package / f"kernel_{i}.o").read_bytes()


def test_design_json_holds_the_rules_and_every_design_with_its_checks(package):
    meta = json.loads((package / "design.json").read_text())
    dispatch = tuned()
    assert meta["dispatch"] == {"key": "M", "rules": [
        *({"max_m": bound, "design": i} for i, bound in enumerate((64, 128, 192, 256, 320, 384, 512))),
        {"max_m": 4096, "max_n": 4096, "max_k": 4096, "design": 6}, {"max_m": None, "design": 7}]}
    assert (meta["kernel"], meta["kind"], meta["arch"], meta["dtype"]) == ("gemm_sm90", "gemm", "sm_90a", "float16")
    assert meta["dynamic"] is True and meta["shape"] is None
    entries = meta["designs"]
    assert [e["design"] for e in entries] == [d.to_dict() for d in dispatch.designs]
    assert [(e["object"], e["prefix"]) for e in entries] == [(f"kernel_{i}.o", f"kernel_{i}")
                                                             for i in range(DESIGNS)]
    for entry, design in zip(entries, dispatch.designs, strict=True):
        stages = design.params["stages"]
        assert entry["verdict"] == "SAFE"
        assert entry["trip_counts_checked"] == [[count, "SAFE"] for count in range(1, 2 * stages + 2)]
        assert entry["shape_rules"]["multiple_of"] == [1, 8, 8]
        assert entry["tensor_divisibility"] == [[1, 8], [8, 8], [1, 8]]
        assert entry["edits"] == {"schedules": {}, "alias_groups": None}
    # No pick runs in a cluster, so none has a rule TS cannot see (a cluster's is checked in test_gpu_export.py)
    assert [e["checked_beyond_ts"] for e in entries] == [[]] * DESIGNS


def test_verdict_txt_has_the_table_then_each_verdict_under_its_range(package):
    text = (package / "VERDICT.txt").read_text()
    assert text.startswith(tuned().text() + "\n\n== M <= 64: design 0 (kernel_0.o) ==\ngemm_sm90: SAFE\n")
    heads = ["== M <= 64: design 0 (kernel_0.o) ==", "== 65 <= M <= 128: design 1 (kernel_1.o) ==",
             "== 129 <= M <= 192: design 2 (kernel_2.o) ==", "== 193 <= M <= 256: design 3 (kernel_3.o) ==",
             "== 257 <= M <= 320: design 4 (kernel_4.o) ==", "== 321 <= M <= 384: design 5 (kernel_5.o) ==",
             "== 385 <= M <= 512 or 513 <= M <= 4096, N <= 4096, K <= 4096: design 6 (kernel_6.o) ==",
             "== M >= 513, otherwise: design 7 (kernel_7.o) =="]
    at = [text.index(head) for head in heads]
    assert at == sorted(at)
    sections = [text[a:b] for a, b in zip(at, [*at[1:], len(text)], strict=True)]
    for section, design in zip(sections, tuned().designs, strict=True):
        assert "\ngemm_sm90: SAFE\n" in section
        assert f"checked at each trip count from 1 to {2 * design.params['stages'] + 1} (" in section
    assert not any("Clusters of 2" in section for section in sections)


def test_the_package_picks_by_m_and_loads_every_object_without_tslab(package):
    code = textwrap.dedent(f"""
        import importlib.abc, json, sys
        class NoTslab(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "tslab" or name.startswith("tslab."):
                    raise ImportError("tslab is not installed here")
        sys.meta_path.insert(0, NoTslab())
        sys.path.insert(0, sys.argv[1])
        import {package.name} as kernel
        loaded = [type(kernel.load(i)).__name__ for i in range(len(kernel.DESIGNS))]
        picks = [kernel.DESIGNS.index(kernel.design_for(*shape)) for shape in {[shape for shape, _ in PICKS]}]
        try:
            kernel._PACKAGE.check_shape("(M, N, K)", (200, 100, 64), kernel._index_for(200, 100, 64))
        except kernel.ExportedKernelError as exc:
            error = str(exc)
        try:
            kernel.design_for(600)
        except kernel.ExportedInputError as exc:
            no_k = str(exc)
        no_k = [no_k, kernel.DESIGNS.index(kernel.design_for(200)), kernel.DESIGNS.index(kernel.design_for(8192))]
        print(json.dumps([loaded, picks, kernel.DISPATCH, error, no_k, "tslab" in sys.modules]))
    """)
    out = subprocess.run([sys.executable, "-c", code, str(package.parent)], capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded, picks, dispatch, error, no_k, has_tslab = json.loads(out.stdout)
    assert len(loaded) == DESIGNS and len(set(loaded)) == 1 and not has_tslab
    assert picks == [index for _, index in PICKS] == [tuned().pick(shape)[0] for shape, _ in PICKS]
    # the pick at M = 600 depends on K; at 200 and 8192 it does not
    assert no_k == ["design_for(600): at M = 600 this package picks by N and K too; pass design_for(m, n, k), e.g. "
                    "design_for(600, 8192, 4096)", 3, 7]
    assert dispatch["rules"][-1] == {"max_m": None, "design": DESIGNS - 1}
    assert error == ("(M, N, K): shape (200, 100, 64): N = 100 is not a multiple of 8; this kernel takes any M, N "
                     "and K multiples of 8 (TMA needs 16-byte row strides); pad N")


def test_the_package_test_file_covers_every_range_and_runs(package):
    test = json.loads((package / "design.json").read_text())["self_test"]
    ms = [1, 64, 65, 128, 129, 192, 193, 256, 257, 320, 321, 384, 385, 512, 513, 4096, 4097]
    # each M at N = K = 64, the default shape, then the N and K rule's corner and the problems just past it in N, K
    assert test["examples"] == [[m, 64, 64] for m in ms] + [[4096, 4096, 4096], [4096, 4104, 4096],
                                                            [4096, 4096, 4104]]
    shapes = [[m, n, k] for m in ms for n in (64, 4096, 4104) for k in (64, 4096, 4104)]
    assert test["picks"] == [[shape, tuned().pick(shape)[0]] for shape in shapes]
    assert [index for shape, index in test["picks"] if shape[0] == 4096] == [6, 6, 7, 6, 6, 7, 7, 7, 7]
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(package)],
                         capture_output=True, text=True, timeout=300, check=False, cwd=package.parent)
    assert out.returncode == 0, out.stdout[-2000:]
    assert "154 passed" in out.stdout  # loads, and design_for at each of the 153 shapes; the GPU checks skip here


def test_a_refused_design_leaves_nothing_behind(tmp_path):
    over_smem = gemm_sm90.design(stages=9)  # 9 stages of 128 x 256 tiles: over SMEM, CAPACITY
    dispatch = Dispatch([(128, gemm_sm90.design(**gemm_sm90.DECODE)), (None, over_smem)])
    out = tmp_path / "refused_pkg"
    with pytest.raises(UnsafeDesignError, match=r"export of the dispatch of 'gemm_sm90': design 1 \(for M >= 129\) "
                                                r"is refused, so nothing was written: design 'gemm_sm90': "
                                                r"tslab.check\(\) says CAPACITY"):
        export(dispatch, out)
    assert not out.exists()
    # An older package in the folder stays when the new export is refused, even with overwrite=True.
    out.mkdir()
    (out / "design.json").write_text("{}")
    with pytest.raises(UnsafeDesignError):
        export(dispatch, out, overwrite=True)
    assert [p.name for p in out.iterdir()] == ["design.json"]


def test_a_dispatch_compiles_for_every_shape_so_one_shape_is_refused(tmp_path):
    with pytest.raises(GpuError, match=r"shape=\(256, 8192, 8192\) asks for one shape, but a dispatch picks its "
                                       r"design by M, N and K at each launch .*; drop shape= \(CLI: --shape\)"):
        export(tuned(), tmp_path / "one_shape_pkg", shape=(256, 8192, 8192))
    assert not (tmp_path / "one_shape_pkg").exists()


def test_a_saved_dispatch_of_one_rule_exports_from_the_command_line(tmp_path, capsys):
    saved = tmp_path / "bf16.json"
    saved.write_text(Dispatch([(None, gemm_sm90.design(dtype="bf16"))]).to_json())
    out = tmp_path / "gemm_bf16_pkg"
    assert main(["export", str(saved), "-o", str(out)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[:2] == ["exported gemm_sm90 (a dispatch of 1 design by M) for sm_90a; tslab.check: SAFE (every M)",
                        f"{out}/"]
    assert "  kernel_0.o" in said and "  design.json" in said
    meta = json.loads((out / "design.json").read_text())
    assert meta["dtype"] == "bfloat16" and meta["dispatch"]["rules"] == [{"max_m": None, "design": 0}]
    assert (out / "VERDICT.txt").read_text().startswith("gemm_sm90 by M, 1 design, dtype bf16:\n  every M  the "
                                                        "kernel's defaults\n\n== every M: design 0 (kernel_0.o) ==\n")


@pytest.mark.parametrize(("args", "message"), [
    (["tma_copy", "--tuned"], "tslab export: --tuned: kernel 'tma_copy' has no measured dispatch; kernels with one: "
                              "gemm_sm90, attention_sm90; drop --tuned to export one design"),
    (["saved.json", "--tuned"], "tslab export: --tuned with 'saved.json': --tuned takes a catalog kernel name, e.g. "
                                "'tslab export gemm_sm90 --tuned'; a saved dispatch JSON is exported without it"),
    (["gemm_sm90", "--tuned", "--shape", "256x8192x8192"], "tslab export: export of the dispatch of 'gemm_sm90': "
                                                            "shape=(256, 8192, 8192) asks for one shape"),
])
def test_command_line_errors_name_the_place_and_the_fix(tmp_path, capsys, args, message):
    assert main(["export", *args, "-o", str(tmp_path / "never_pkg")]) == 1
    assert capsys.readouterr().err.startswith(message)
    assert not (tmp_path / "never_pkg").exists()


def test_a_list_of_designs_is_refused_with_the_dispatch_to_pass_instead(tmp_path):
    designs = [gemm_sm90.design(**gemm_sm90.DECODE), gemm_sm90.design()]
    with pytest.raises(GpuError, match=r"export to 'two_pkg': design=\[tslab.kernels.gemm_sm90.design\(.* is a "
                                       r"list, not a tslab.Design or tslab.Dispatch; to export several designs of one "
                                       r"GEMM in one package, pass a tslab.Dispatch of them: tslab.Dispatch\(\[\("
                                       r"max_m, design_a\), \(None, design_b\)\]\)"):
        export(designs, tmp_path / "two_pkg")
    with pytest.raises(GpuError, match=r"design='gemm_sm90' is a str, .*; pass a design, e.g. "
                                       r"tslab.Design\('gemm_sm90'\)"):
        export("gemm_sm90", tmp_path / "name_pkg")
    with pytest.raises(GpuError, match=r"design=None is a NoneType, .*; pass a tslab.Design"):
        export(None, tmp_path / "none_pkg")
    assert not list(tmp_path.iterdir())


def test_progress_shows_a_bar_over_the_objects_as_they_compile(tmp_path, capsys):
    two = Dispatch(((128, gemm_sm90.design(**gemm_sm90.DECODE)), (None, gemm_sm90.design())))
    export(two, tmp_path / "quiet_pkg")
    assert "object" not in capsys.readouterr().err  # the default: nothing on stderr (notebooks, logs, pipes)
    export(two, tmp_path / "shown_pkg", progress=True)
    err = capsys.readouterr().err
    assert "export gemm_sm90" in err and "2/2" in err, err
