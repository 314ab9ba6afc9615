"""The tables NOTES.md quotes from ``benchmarks/stall_reasons.sh``'s CSVs: per kernel a few whole-kernel metrics,
and within its main loop (the instructions executed exactly as often as its most-executed wgmma: a K/V or K trip,
each unrolled copy) the share of stall samples by reason and by opcode; for both, the shares at synchronisation.

    python benchmarks/stall_summary.py stall-reasons/attn/tslab stall-reasons/attn/fa4 [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

#: Whole-kernel metrics of ncu's details page, by (section, metric name).
DETAILS = {
    "duration": ("GPU Speed Of Light Throughput", "Duration"),
    "sm_ghz": ("GPU Speed Of Light Throughput", "SM Frequency"),
    "issue_slots_busy_pct": ("Compute Workload Analysis", "Issue Slots Busy"),
    "executed_instructions": ("Instruction Statistics", "Executed Instructions"),
    "active_warps_per_sm": ("Occupancy", "Achieved Active Warps Per SM"),
    "warp_cycles_per_instruction": ("Warp State Statistics", "Warp Cycles Per Issued Instruction"),
}
#: ... and of its raw page.
RAW = {"tensor_pipe_active_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"}


def _number(text: Any) -> float:
    return float(str(text).replace(",", ""))


def summarize(prefix: Path) -> dict[str, Any]:
    """One kernel's summary from ``PREFIX-details.csv``, ``PREFIX-raw.csv`` and ``PREFIX-sass.csv``."""
    import pandas as pd

    details = pd.read_csv(f"{prefix}-details.csv")
    out: dict[str, Any] = {"kernel": str(details["Kernel Name"].iloc[0])[:80]}
    for key, (section, metric) in DETAILS.items():
        row = details[(details["Section Name"] == section) & (details["Metric Name"] == metric)].iloc[0]
        out[key] = _number(row["Metric Value"])
        if key == "duration":
            out["duration_unit"] = row["Metric Unit"]
    raw = pd.read_csv(f"{prefix}-raw.csv", low_memory=False)
    for key, metric in RAW.items():
        out[key] = _number(raw[metric].iloc[1])  # row 0 holds the units
    text = Path(f"{prefix}-sass.csv").read_text().split("\n", 1)[1]  # line 0 names the kernel
    sass = pd.read_csv(io.StringIO(text))
    numeric = [c for c in sass.columns if c.startswith("stall_") or c in ("Warp Stall Sampling (All Samples)",
                                                                         "Instructions Executed")]
    for column in numeric:
        sass[column] = pd.to_numeric(sass[column].astype(str).str.replace(",", ""), errors="coerce").fillna(0)
    # each instruction without its predicate (``@!P0 BRA ...`` -> ``BRA ...``), for the opcode tables, and whether
    # it had one (ncu pads an unpredicated instruction with the predicate's width of spaces)
    source = sass["Source"].str.strip()
    sass["predicated"] = source.str.startswith("@")
    sass["instruction"] = source.str.replace(r"^@!?U?P\w+\s+", "", regex=True)
    executed = sass["Instructions Executed"]
    in_loop = executed == executed[sass["Source"].str.contains("HGMMA")].max()
    loop = sass[in_loop]
    samples = loop["Warp Stall Sampling (All Samples)"].sum()
    reasons = [c for c in numeric if c.startswith("stall_") and "(Not Issued)" not in c]
    by_reason = {c.removeprefix("stall_"): loop[c].sum() / samples for c in reasons}
    by_reason["unnamed"] = 1 - sum(by_reason.values())  # Hopper's wgmma stalls have no column of their own
    opcode = loop["instruction"].str.split().str[0].str.split(".").str[0]
    by_opcode = loop.groupby(opcode)["Warp Stall Sampling (All Samples)"].sum() / samples
    out["sync"] = sync_shares(sass)
    out["loop"] = {"instructions": len(loop), "samples": int(samples),
                   "by_reason": {k: round(float(v), 3) for k, v in sorted(by_reason.items(), key=lambda kv: -kv[1])
                                 if v >= 0.005},
                   "by_opcode": {k: round(float(v), 3) for k, v in by_opcode.sort_values(ascending=False).items()
                                 if v >= 0.01},
                   "sync": sync_shares(sass, in_loop)}
    return out


def retry_blocks(sass: Any, rows: Any) -> Any:
    """The rows of the retry loops that branches among ``rows`` jump to: a block that opens with a try-wait and a
    ``NANOSLEEP`` (within its first four instructions), up to the unpredicated ``BRA`` that jumps back (ptxas puts
    most of them out of line, after the kernel's end). ``sass`` has the ``instruction`` and ``predicated`` columns
    :func:`summarize` adds."""
    source = sass["instruction"]
    predicated = sass["predicated"]
    where = {str(a).lower(): i for i, a in sass["Address"].items()}
    block = rows & False
    for target in source[rows & source.str.startswith("BRA")].str.split().str[1]:
        i = where.get(str(target).lower())
        head = source[i:i + 4] if i is not None else source[:0]
        if not (head.str.startswith("SYNCS.PHASECHK").any() and head.str.startswith("NANOSLEEP").any()):
            continue
        while i in sass.index and not block[i]:
            block[i] = True
            if source[i].startswith("BRA") and not predicated[i]:
                break
            i += 1
    return block


def sync_shares(sass: Any, rows: Any = None) -> dict[str, float]:
    """Shares of the stall samples of ``rows`` (default: the whole kernel; ``sass``: ncu's source page with each
    ``instruction`` without its predicate) at synchronisation, with the retry loops their try-waits branch to (out
    of line, outside the main loop): mbarrier try-waits (``SYNCS.PHASECHK``: TS's rings, a ping-pong's turn among
    them) with the branch on each one's result (where the wait's time lands) and their retry loops, mbarrier
    arrives, and named barriers (``BAR``: flash-attn-4's turn). A warp held at ``BAR.SYNC`` is charged to an
    instruction after it, with the reason ``barrier``, so a named barrier's share is its own samples and every
    ``barrier`` sample that is not at a ``WARPGROUP`` instruction (those are wgmma waits)."""
    column = "Warp Stall Sampling (All Samples)"
    if rows is None:
        rows = sass[column].notna()  # every row
    retries = retry_blocks(sass, rows)
    rows = rows | retries
    total = sass.loc[rows, column].sum()
    source = sass["instruction"]
    after_wait = source.shift(1, fill_value="").str.startswith("SYNCS.PHASECHK") & source.str.startswith("BRA")
    named = source.str.match(r"BAR\b")
    held_at_bar = sass["stall_barrier"] if "stall_barrier" in sass else 0 * sass[column]
    waits = (source.str.startswith("SYNCS.PHASECHK") | after_wait | retries) & rows
    shares = {"mbarrier_wait": sass.loc[waits, column].sum(),
              "mbarrier_arrive": sass.loc[rows & source.str.startswith("SYNCS.ARRIVE"), column].sum(),
              "named_barrier": sass.loc[rows & named, column].sum()
              + held_at_bar[rows & ~named & ~source.str.startswith("WARPGROUP")].sum()}
    return {name: round(float(value / total), 4) if total else 0.0 for name, value in shares.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="+", type=Path, help="FOLDER/NAME of NAME-details.csv etc.")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = {str(p): summarize(p) for p in args.prefixes}
    for name, row in rows.items():
        loop = row["loop"]
        print(f"{name}: {row['duration']} {row['duration_unit']} at {row['sm_ghz']} GHz, tensor pipe "
              f"{row['tensor_pipe_active_pct']:.1f}% of active cycles, {row['active_warps_per_sm']} warps/SM, issue "
              f"slots {row['issue_slots_busy_pct']}%, {row['executed_instructions']:,.0f} instructions")
        print(f"  loop ({loop['instructions']} instructions): by reason {loop['by_reason']}")
        print(f"  by opcode {loop['by_opcode']}")
        print(f"  the whole kernel's samples at synchronisation: {row['sync']}")
        print(f"  the loop's (with its try-waits' retries): {loop['sync']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
