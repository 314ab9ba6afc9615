"""gpu.compile of a captured design compiles the kernel as edited (knobs in its code), on the CPU."""

from pathlib import Path

import pytest

import tslab
from tslab import fake, gpu
from tslab.gpu.errors import UnsafeDesignError

ROW_COPY = Path(__file__).resolve().parent.parent / "notebooks" / "kernels" / "row_copy.py"


@pytest.fixture(scope="module")
def row_copy():
    return tslab.capture_file(ROW_COPY, "copy_rows", fake.tensor("f16", (6, 256)), fake.tensor("f16", (6, 256)))


@pytest.fixture(scope="module")
def compiled(row_copy):
    return gpu.compile(row_copy, arch="sm_90a"), gpu.compile(row_copy.with_knobs(ring_stages=3), arch="sm_90a")


def test_a_knob_edit_reaches_the_compiled_kernel(compiled):
    two, three = compiled
    assert "cp.async.bulk.tensor" in two.ptx and two.cubin
    assert two.ptx != three.ptx
    # the barriers sit after the ring: 2 x 512 B of rows before the edit, 3 x 512 B after it
    assert ", 1024;" in two.ptx
    assert ", 1536;" in three.ptx
    assert (two.smem_bytes, three.smem_bytes) == (1056, 1584)
    assert two.spills == 0


def test_an_unfaithful_edit_is_refused_like_any_unsafe_design(row_copy):
    with pytest.raises(UnsafeDesignError, match="unfaithful-edit"):
        gpu.compile(row_copy.with_pipeline("smemRow", num_stages=3), arch="sm_90a")


def test_a_captured_kernel_runs_only_when_told_how_to_call_it(compiled):
    from tslab.gpu.errors import InputsError

    with pytest.raises(InputsError, match="run needs inputs=, a function returning the host function's arguments"):
        compiled[0].run()


def test_tslab_export_of_a_kernel_file_with_a_knob_writes_a_package_that_loads(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "row_copy_pkg"
    cli = subprocess.run([sys.executable, "-m", "tslab.cli", "export", f"{ROW_COPY}::copy_rows", "--arg", "f16[6,256]",
                          "--arg", "f16[6,256]", "--knob", "ring_stages=3", "-o", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stderr
    meta = json.loads((out / "design.json").read_text())
    assert meta["knobs"]["ring_stages"] == 3 and meta["verdict"] == "SAFE"
    assert "1536 data" in (out / "VERDICT.txt").read_text()
    loaded = subprocess.run([sys.executable, "-c", "import row_copy_pkg; print(callable(row_copy_pkg.load()))"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert loaded.stdout.strip() == "True", loaded.stderr
