"""The README's Python blocks run as written, in order, in one fresh Python session."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks() -> list[str]:
    """The README's ```python blocks, in order."""
    return BLOCK.findall(README.read_text())


def test_readme_has_the_documented_blocks():
    blocks = python_blocks()
    assert len(blocks) >= 4
    assert "Studio" in blocks[1] and "ReplayPlayer" in blocks[2] and "gpu.compile" in blocks[3]


def test_readme_blocks_run_in_order_in_one_session(tmp_path):
    # One script, so names flow from block to block as they would in one notebook or REPL session.
    script = "\n".join(f"# --- README block {i}\n{code}" for i, code in enumerate(python_blocks(), 1))
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,  # the GPU block writes its exported package into the working folder
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    assert "SAFE 65600 B" in out.stdout
    assert "interleave_stride" in out.stdout  # the DesignError the first block promises, printed
    assert (tmp_path / "tma_copy_pkg" / "__init__.py").is_file()
    assert "193 <= M <= 256" in out.stdout and "\nkernel_2.o\n" in out.stdout
    assert (tmp_path / "gemm_tuned_pkg" / "kernel_2.o").is_file()
    assert "gemm_sm90: 7432 ranges over 10 warps" in out.stdout  # the recorded profile, without a GPU
    assert (tmp_path / "gemm_sm90.trace.json").stat().st_size > 0
    assert "\n1536\n" in out.stdout and "INVALID" in out.stdout and "ring_stages" in out.stdout
    assert "SAFE 512 / 512" in out.stdout and "{'capacity': 2}" in out.stdout and "0 True True" in out.stdout
