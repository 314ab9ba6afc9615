"""benchmarks/stall_reasons.sh and stall_summary.py, the Nsight Compute route NOTES.md quotes: the script parses
and refuses an unknown kernel, the driver's options parse without a GPU, and the summary reads ncu's three CSVs
(a details page, a raw page with its units row, a source page with the kernel's name on its first line) into the
shares the notes quote."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def test_the_script_parses_and_refuses_an_unknown_kernel():
    subprocess.run(["bash", "-n", str(BENCH / "stall_reasons.sh")], check=True)
    out = subprocess.run(["bash", str(BENCH / "stall_reasons.sh"), "copy"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "usage: bash benchmarks/stall_reasons.sh attention|gemm" in out.stderr


def test_the_driver_reads_its_options_without_a_gpu():
    out = subprocess.run([sys.executable, str(BENCH / "stall_reasons.py"), "--help"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "--gemm" in out.stdout and "--param" in out.stdout


def _write_report(prefix: Path) -> None:
    """A kernel of two K trips' worth: the loop's two instructions run 10 times each, a wait outside it 50 times."""
    details = ['"Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"']
    for section, metric, unit, value in [
            ("GPU Speed Of Light Throughput", "Duration", "us", "59.42"),
            ("GPU Speed Of Light Throughput", "SM Frequency", "Ghz", "1.70"),
            ("Compute Workload Analysis", "Issue Slots Busy", "%", "13.01"),
            ("Instruction Statistics", "Executed Instructions", "inst", "6,641,024"),
            ("Occupancy", "Achieved Active Warps Per SM", "warp", "9.98"),
            ("Warp State Statistics", "Warp Cycles Per Issued Instruction", "cycle", "17.38")]:
        details.append(f'"k","{section}","{metric}","{unit}","{value}"')
    Path(f"{prefix}-details.csv").write_text("\n".join(details) + "\n")
    metric = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
    Path(f"{prefix}-raw.csv").write_text(f'"ID","{metric}"\n"","%"\n"0","90.25"\n')
    Path(f"{prefix}-sass.csv").write_text(
        '"Kernel Name","k"\n'
        '"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_wait","stall_barrier"\n'
        '"0x0","HGMMA.64x128x16.F32 R24, gdesc[UR8], R24","30","10","20","0"\n'
        '"0x10","WARPGROUP.DEPBAR.LE gsb0, 0x0","70","10","0","60"\n'
        '"0x20","@!P0 BRA 0x0","500","50","0","0"\n'
        '"0x30","SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x30060], R6","100","20","0","0"\n'
        '"0x40","@!P0 BRA 0x30","100","20","0","0"\n'
        '"0x50","SYNCS.ARRIVE.TRANS64.ART0 RZ, [UR32+0x30068], R10","50","20","0","0"\n'
        '"0x60","BAR.SYNC.DEFER_BLOCKING 0x1, 0x100","150","20","0","0"\n')


def test_the_summary_reads_the_loop_and_its_stall_shares(tmp_path):
    pytest.importorskip("pandas")
    summarize = runpy.run_path(str(BENCH / "stall_summary.py"))["summarize"]
    _write_report(tmp_path / "k")
    row = summarize(tmp_path / "k")
    assert row["duration"] == 59.42 and row["executed_instructions"] == 6641024
    assert row["tensor_pipe_active_pct"] == 90.25
    loop = row["loop"]
    assert loop["instructions"] == 2 and loop["samples"] == 100  # the wait outside the loop left out
    assert loop["by_reason"] == {"barrier": 0.6, "wait": 0.2, "unnamed": 0.2}
    assert loop["by_opcode"] == {"WARPGROUP": 0.7, "HGMMA": 0.3}
    # the whole kernel's 1,000 samples: a try-wait and its retry branch (not the branch after a wgmma wait), an
    # arrive, a named barrier
    assert row["sync"] == {"mbarrier_wait": 0.2, "mbarrier_arrive": 0.05, "named_barrier": 0.15}
