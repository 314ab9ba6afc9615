"""SASS of a compiled cubin, read with nvdisasm (the ``nvidia-cuda-nvdisasm`` wheel of the test extras): the
instructions of a kernel's loops, counted by opcode, so a test can hold a hot loop to its size."""

from __future__ import annotations

import collections
import re
import subprocess
import tempfile
from importlib.util import find_spec
from pathlib import Path

_LABEL = re.compile(r"^\s*\.(L_x_\d+):")
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_BRANCH = re.compile(r"\bBRA\s+`?\(?\.(L_x_\d+)")


def nvdisasm() -> Path:
    """The nvdisasm binary the ``nvidia-cuda-nvdisasm`` wheel installs."""
    spec = find_spec("nvidia")
    for root in spec.submodule_search_locations if spec else []:
        for found in sorted(Path(root).glob("*/bin/nvdisasm")):
            return found
    raise FileNotFoundError("nvdisasm not found: pip install nvidia-cuda-nvdisasm (in tslab's [test] extras)")


def instructions(cubin: bytes) -> tuple[list[str], dict[str, int]]:
    """The cubin's instructions in order (predicates and modifiers kept) and each label's index among them."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "kernel.cubin"
        path.write_bytes(cubin)
        text = subprocess.run([str(nvdisasm()), "-c", str(path)], capture_output=True, text=True, check=True).stdout
    out: list[str] = []
    labels: dict[str, int] = {}
    for line in text.splitlines():
        if (label := _LABEL.match(line)) is not None:
            labels[label.group(1)] = len(out)
        elif (ins := _INSTRUCTION.match(line)) is not None:
            out.append(ins.group(1))
    return out, labels


def opcode(instruction: str) -> str:
    """``@!P0 FSEL.X R1, ...`` -> ``FSEL``."""
    return re.sub(r"^@!?U?P\w+\s+", "", instruction).split()[0].split(".")[0]


def loop_bodies(cubin: bytes) -> list[list[str]]:
    """The instructions of each loop (a backward branch to a label: the instructions from the label to the
    branch, predicates kept), innermost first (shortest first)."""
    code, labels = instructions(cubin)
    spans = {(labels[m.group(1)], i) for i, ins in enumerate(code)
             if (m := _BRANCH.search(ins)) is not None and labels.get(m.group(1), i + 1) <= i}
    return [code[start:end + 1] for start, end in sorted(spans, key=lambda span: span[1] - span[0])]


def loops(cubin: bytes) -> list[collections.Counter]:
    """Opcode counts of each loop, innermost first (:func:`loop_bodies`)."""
    return [collections.Counter(opcode(ins) for ins in body) for body in loop_bodies(cubin)]


#: Programmatic dependent launch in SASS: the wait for the grid before (griddepcontrol.wait), the next grid's launch
#: (griddepcontrol.launch_dependents), and the TMA loads they must come before and after.
PDL_OPS = ("ACQBULK", "PREEXIT", "UTMALDG")


def pdl_order(cubin: bytes) -> list[str]:
    """Each instruction of :data:`PDL_OPS` in the cubin, by name, in program order."""
    code, _ = instructions(cubin)
    return [op for op in (next((o for o in PDL_OPS if o in ins), None) for ins in code) if op]
