"""The README's Python blocks run as written, in order, in one fresh Python session: pasted line by line into the
interactive interpreter, as a newcomer does (there a compound statement ends only at a blank line, and a line
that follows it unindented is a SyntaxError that ``python -c`` would not show)."""

from __future__ import annotations

import json
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


#: Pastes the blocks (JSON on stdin) into one interactive console, a blank line after each, and exits 1 if a
#: line raised or did not parse (the console itself prints the error and goes on, as the interpreter does).
PASTE = """
import code, json, sys
failed = []
class Console(code.InteractiveConsole):
    def showsyntaxerror(self, filename=None, **kwargs):
        failed.append(self.line); super().showsyntaxerror(filename, **kwargs)
    def showtraceback(self):
        failed.append(self.line); super().showtraceback()
console = Console()
for block in json.load(sys.stdin):
    for console.line in [*block.splitlines(), ""]:
        console.push(console.line)
sys.exit(f"lines that failed: {failed}" if failed else 0)
"""


def _paste_readme(folder) -> subprocess.CompletedProcess:
    """The README's Python blocks pasted in order into one interpreter session in ``folder``, so names flow from
    block to block as they would in a REPL or a notebook (the GPU block writes its package into the folder)."""
    return subprocess.run([sys.executable, "-c", PASTE], input=json.dumps(python_blocks()), capture_output=True,
                          text=True, timeout=600, check=False, cwd=folder)


def test_readme_blocks_run_in_order_in_one_session_and_again_in_the_same_folder(tmp_path):
    """Then, as a newcomer who pastes the README twice in one folder: the second session finds the packages, the
    sweep's store and the trace the first one wrote, and still runs every line (the sweep skips its finished
    points)."""
    out = _paste_readme(tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    assert "SAFE 65600 B" in out.stdout
    assert "interleave_stride" in out.stdout  # the DesignError the first block promises, printed
    assert (tmp_path / "tma_copy_pkg" / "__init__.py").is_file()
    assert "193 <= M <= 256" in out.stdout and "\nkernel_3.o\n" in out.stdout
    assert (tmp_path / "gemm_tuned_pkg" / "kernel_3.o").is_file()
    assert "gemm_sm90: 7432 ranges over 10 warps" in out.stdout  # the recorded profile, without a GPU
    assert (tmp_path / "gemm_sm90.trace.json").stat().st_size > 0
    assert "\n1536\n" in out.stdout and "INVALID" in out.stdout and "ring_stages" in out.stdout
    assert "SAFE 512 / 512" in out.stdout and "{'capacity': 2}" in out.stdout and "0 True True" in out.stdout

    again = _paste_readme(tmp_path)
    assert again.returncode == 0, "run 2: " + again.stderr[-3000:]
    assert "6 already in the store" in again.stdout + again.stderr
