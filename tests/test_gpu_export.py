"""Export without a GPU: the package loads in a fresh process, without tslab and without compiling."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tslab.gpu.cli import add_export_arguments, export_command
from tslab.gpu.errors import GpuError

LOADER = textwrap.dedent("""
    import importlib.abc, sys, time
    class NoTslab(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "tslab" or name.startswith("tslab."):
                raise ImportError("tslab is not installed here")
    sys.meta_path.insert(0, NoTslab())
    sys.path.insert(0, sys.argv[1])
    started = time.perf_counter()
    import {name} as kernel
    fn = kernel.load()
    print(kernel.ARCH, kernel.SHAPE, kernel.DTYPE, type(fn).__name__, "tslab" in sys.modules,
          round(time.perf_counter() - started, 2))
""")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    import argparse

    out = tmp_path_factory.mktemp("exports") / "tma_copy_sm90"
    args = add_export_arguments(argparse.ArgumentParser()).parse_args(
        ["tma_copy", "--arch", "sm_90a", "-o", str(out), "--shape", "1024x2048", "--param", "stages=2"]
    )
    assert export_command(args) == 0
    return out


def test_package_files(exported):
    names = {p.name for p in exported.iterdir()}
    assert {"__init__.py", "_runtime.py", "kernel.o", "design.json", "VERDICT.txt", "test_kernel.py"} <= names
    meta = json.loads((exported / "design.json").read_text())
    assert (
        meta["arch"] == "sm_90a" and meta["shape"] == [1024, 2048] and meta["design"]["params"]["stages"] == 2
    )
    assert "SAFE" in (exported / "VERDICT.txt").read_text()


def test_loads_in_a_fresh_process_without_tslab(exported):
    code = LOADER.format(name=exported.name)
    out = subprocess.run(
        [sys.executable, "-c", code, str(exported.parent)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    arch, *_, has_tslab, _seconds = out.stdout.split()
    assert arch == "sm_90a" and has_tslab == "False"


def test_run_without_a_gpu_says_one_is_needed(exported):
    from tslab.gpu import device

    if device() is not None:
        pytest.skip("this machine has a GPU")
    code = textwrap.dedent(f"""
        import sys, types
        sys.path.insert(0, sys.argv[1])
        import {exported.name} as kernel
        tensor = types.SimpleNamespace(device=types.SimpleNamespace(index=0))
        try:
            kernel.run(tensor, tensor)
        except kernel.ExportedKernelError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(exported.parent)], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == (f"module '{exported.name}': no NVIDIA GPU or driver is present; this module "
                                  "needs a GPU of arch sm_90a to run (load() works without one)")


def test_exported_test_file_runs(exported):
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(exported)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=exported.parent,
    )
    assert out.returncode == 0, out.stdout[-2000:]


def test_existing_folder_is_not_overwritten(exported):
    from tslab.gpu.export import export
    from tslab.kernels import tma_copy

    with pytest.raises(GpuError, match="exists"):
        export(tma_copy.design(), exported)


@pytest.fixture(scope="module")
def exported_gemm(tmp_path_factory):
    import argparse

    out = tmp_path_factory.mktemp("exports") / "gemm_pkg"
    args = add_export_arguments(argparse.ArgumentParser()).parse_args(["gemm_sm90", "-o", str(out)])
    assert export_command(args) == 0
    return out


def test_gemm_exports_for_every_shape_with_each_trip_count_checked(exported_gemm):
    meta = json.loads((exported_gemm / "design.json").read_text())
    assert meta["kind"] == "gemm" and meta["dynamic"] is True and meta["shape"] is None
    assert meta["shape_rules"]["multiple_of"] == [1, 8, 8]
    stages = meta["design"]["params"].get("stages", 3)
    assert [count for count, _ in meta["trip_counts_checked"]] == list(range(1, 2 * stages + 2))
    assert {status for _, status in meta["trip_counts_checked"]} == {"SAFE"}
    assert f"checked at each trip count from 1 to {2 * stages + 1}" in (exported_gemm / "VERDICT.txt").read_text()


def test_gemm_package_loads_without_tslab_and_names_the_shape_rule(exported_gemm):
    code = LOADER.format(name=exported_gemm.name) + textwrap.dedent("""
        for shape in [(128, 100, 64), (0, 64, 64), (128, 64)]:
            try:
                kernel._PACKAGE.check_shape("(M, N, K)", shape)
            except kernel.ExportedKernelError as exc:
                print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(exported_gemm.parent)], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    first, *errors = out.stdout.strip().splitlines()
    assert first.split()[0] == "sm_90a" and first.split()[-2] == "False"
    rule = "any M, N and K multiples of 8 (TMA needs 16-byte row strides)"
    assert errors == [
        f"(M, N, K): shape (128, 100, 64): N = 100 is not a multiple of 8; this kernel takes {rule}; pad N",
        f"(M, N, K): shape (0, 64, 64): M = 0 is below 1; this kernel takes {rule}",
        f"(M, N, K): shape (128, 64) has 2 dimensions; this kernel takes 3: M, N, K ({rule})",
    ]


def test_a_gemm_package_of_one_design_is_a_dispatch_of_one_rule(exported_gemm):
    meta = json.loads((exported_gemm / "design.json").read_text())
    assert list(meta) == ["kernel", "kind", "arch", "dynamic", "shape", "shape_rules", "tensor_divisibility", "dtype",
                          "sms", "launch", "design", "edits", "verdict", "trip_counts_checked", "checked_beyond_ts",
                          "about", "self_test", "runtime"]
    code = LOADER.format(name=exported_gemm.name) + textwrap.dedent("""
        print(kernel.DISPATCH, kernel.design_for(1) is kernel.design_for(10**6) is kernel.DESIGNS[0],
              kernel.DESIGNS[0]["object"], kernel.DESIGNS[0]["design"] == kernel.META["design"])
    """)
    out = subprocess.run([sys.executable, "-c", code, str(exported_gemm.parent)], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    last = out.stdout.strip().splitlines()[-1]
    assert last == "{'key': 'M', 'rules': [{'max_m': None, 'design': 0}]} True kernel.o True"


def test_gemm_package_test_file_runs(exported_gemm):
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(exported_gemm)],
                         capture_output=True, text=True, timeout=180, check=False, cwd=exported_gemm.parent)
    assert out.returncode == 0, out.stdout[-2000:]


def test_exported_package_records_the_edits_it_was_compiled_with(tmp_path):
    from tslab.gpu.export import export
    from tslab.kernels import tma_copy

    steps = [("smem_ring", "ConsumerAuxWork", "Head", "bind_read"), ("smem_ring", "ConsumerTryWait", "Loop", None),
             ("smem_ring", "ConsumerWait", "Loop", None), ("smem_ring", "ConsumerWork", "Loop", "read_tile"),
             ("gmem_out", "ProducerWork", "Loop", "store"), ("smem_ring", "ConsumerRelease", "Loop", None)]
    out = export(tma_copy.design().with_schedule("StoreTask", steps), tmp_path / "edited", shape=(512, 512))
    meta = json.loads((out / "design.json").read_text())
    assert meta["edits"] == {"schedules": {"StoreTask": [list(s) for s in steps]}, "alias_groups": None}
    assert meta["design"]["schedules"]["StoreTask"][1] == ["smem_ring", "ConsumerTryWait", "Loop", None]


def test_a_cluster_export_says_what_was_checked_beside_ts(tmp_path):
    """TS checks one block; VERDICT.txt and design.json name the pair's rule that was checked too."""
    from tslab.gpu import export
    from tslab.kernels import gemm_sm90

    out = export(gemm_sm90.design(cluster_m=2), tmp_path / "tslab_gemm_pair", arch="sm_90a")
    verdict = (out / "VERDICT.txt").read_text()
    assert verdict.startswith("gemm_sm90: SAFE") and "Clusters of 2: TS's checks model one block" in verdict
    assert "consumer_group.size 16" in json.loads((out / "design.json").read_text())["checked_beyond_ts"][0]
    plain = export(gemm_sm90.design(), tmp_path / "tslab_gemm_alone", arch="sm_90a")
    assert json.loads((plain / "design.json").read_text())["checked_beyond_ts"] == []
