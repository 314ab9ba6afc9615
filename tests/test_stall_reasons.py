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
    """A kernel whose loop (a wgmma, its wait, a try-wait and the branch on it) runs 10 times, with an arrive, a
    named barrier and a try-wait's retry loop outside it."""
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
    # as ncu writes its source page: an unpredicated instruction padded with the predicate's width of spaces, the
    # K trip's try-wait and the branch on its result in the loop, that branch's retry loop after the kernel's end
    pad = " " * 6
    rows = [("0x0", f"{pad}HGMMA.64x128x16.F32 R24, gdesc[UR8], R24", 30, 10, 20, 0),
            ("0x10", f"{pad}WARPGROUP.DEPBAR.LE gsb0, 0x0", 70, 10, 0, 60),
            ("0x20", f"{pad}SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x30060], R6", 100, 10, 0, 0),
            ("0x30", "@!P0  BRA 0x80", 100, 10, 0, 0),
            ("0x40", "@!P1  BRA 0x0", 400, 50, 0, 0),  # a branch that follows no try-wait
            ("0x50", f"{pad}SYNCS.ARRIVE.TRANS64.ART0 RZ, [UR32+0x30068], R10", 50, 20, 0, 0),
            ("0x60", f"{pad}BAR.SYNC.DEFER_BLOCKING 0x1, 0x100", 50, 20, 0, 0),
            ("0x70", f"{pad}UMOV UR11, 0x40000040", 100, 20, 0, 100),  # a warp held at the BAR.SYNC before it
            ("0x80", f"{pad}SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R3+URZ+0x30060], R6", 10, 2, 0, 0),
            ("0x90", "@!P0  NANOSLEEP.SYNCS 0x989680", 80, 2, 0, 0),
            ("0xa0", "@!P0  SYNCS.PHASECHK.TRANS64 P0, [R3+URZ+0x30060], R6", 0, 2, 0, 0),
            ("0xb0", "@!P0  BRA 0x80", 0, 2, 0, 0),
            ("0xc0", f"{pad}BRA 0x40", 10, 1, 0, 0)]
    Path(f"{prefix}-sass.csv").write_text(
        '"Kernel Name","k"\n'
        '"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_wait","stall_barrier"\n'
        + "".join(",".join(f'"{v}"' for v in row) + "\n" for row in rows))


def test_the_summary_reads_the_loop_and_its_stall_shares(tmp_path):
    pytest.importorskip("pandas")
    summarize = runpy.run_path(str(BENCH / "stall_summary.py"))["summarize"]
    _write_report(tmp_path / "k")
    row = summarize(tmp_path / "k")
    assert row["duration"] == 59.42 and row["executed_instructions"] == 6641024
    assert row["tensor_pipe_active_pct"] == 90.25
    loop = row["loop"]
    assert loop["instructions"] == 4 and loop["samples"] == 300  # what runs less often than the wgmma left out
    assert loop["by_reason"] == {"unnamed": 0.733, "barrier": 0.2, "wait": 0.067}
    assert loop["by_opcode"] == {"SYNCS": 0.333, "BRA": 0.333, "WARPGROUP": 0.233, "HGMMA": 0.1}
    # the whole kernel's 1,000 samples: the try-wait, the branch on its result and its retry loop; the arrive; the
    # named barrier with the sample charged after it (not the wgmma wait's, which ncu also calls barrier)
    assert row["sync"] == {"mbarrier_wait": 0.3, "mbarrier_arrive": 0.05, "named_barrier": 0.15}
    # the loop's 300 samples and its try-wait's retry loop, 100 more
    assert loop["sync"] == {"mbarrier_wait": 0.75, "mbarrier_arrive": 0.0, "named_barrier": 0.0}
