"""The dispatching GEMM export's rule table from a sweep over M on this GPU.

Each candidate design of ``gemm_sm90`` (``gemm_sm90_dispatch.CANDIDATES``, by name) is swept over the
problems ``(M, N, K)`` with ``tslab.sweep(candidate, {"shape": [...]}, measure="bench")``: checked by TS,
compiled for the problem, run against the fp32 reference and timed beside ``torch.mm`` in the same worker. Per M
the fastest candidate wins; consecutive Ms won by one candidate form one rule, whose bound is the largest M it
won (the next rule serves everything above, so an M between two measured ones goes to the larger-M design).

    python benchmarks/sweep_dispatch.py [--ms 64 128 256 384 512 1024] [--n 8192] [--k 8192] [--dtype fp16]
        [--candidates decode pairs default] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys

from tslab import sweep
from tslab.kernels import gemm_sm90
from tslab.kernels.gemm_sm90_dispatch import CANDIDATES


def rules(best: list[tuple[int, str]]) -> list[tuple[int | None, str]]:
    """``[(M, winner)]`` in ascending M -> ``[(max_m, winner)]``: one rule per run of Ms one candidate won, bounded
    by the largest M of the run; the last rule unbounded."""
    out: list[tuple[int | None, str]] = []
    for m, name in best:
        if out and out[-1][1] == name:
            out[-1] = (m, name)
        else:
            out.append((m, name))
    return [*out[:-1], (None, out[-1][1])] if out else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", nargs="*", type=int, default=[64, 128, 256, 384, 512, 1024])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--k", type=int, default=8192)
    parser.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    parser.add_argument("--candidates", nargs="*", default=["decode", "pairs", "default"], choices=list(CANDIDATES))
    parser.add_argument("--json", help="write every row and the derived rules here")
    args = parser.parse_args(argv)

    shapes = [(m, args.n, args.k) for m in sorted(args.ms)]
    rows = []
    for name in args.candidates:
        design = gemm_sm90.design(**{**CANDIDATES[name], "dtype": args.dtype})
        result = sweep(design, {"shape": shapes}, measure="bench", executor="serial", quiet=True)
        for row in result.table.to_dict("records"):
            rows.append({"candidate": name, "M": row["shape"][0], "status": row["status"],
                         "tflops": row.get("tflops"), "x_torch": row.get("ratio"), "error": row.get("error")})
            print(json.dumps(rows[-1], default=str), flush=True)
    timed = [r for r in rows if r["status"] == "ok"]
    best = [(m, max((r for r in timed if r["M"] == m), key=lambda r: r["tflops"])["candidate"])
            for m in sorted({r["M"] for r in timed})]
    table = rules(best)
    print(f"\n{'M':>6} " + " ".join(f"{c:>10}" for c in args.candidates) + "   best (x torch.mm)")
    for m, winner in best:
        cells = {r["candidate"]: r for r in timed if r["M"] == m}
        line = " ".join(f"{cells[c]['tflops']:10.0f}" if c in cells else f"{'-':>10}" for c in args.candidates)
        print(f"{m:>6} {line}   {winner} ({cells[winner]['x_torch']:.3f})")
    print("rules: " + ", ".join(f"M <= {b}: {n}" if b is not None else f"above: {n}" for b, n in table))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"dtype": args.dtype, "n": args.n, "k": args.k, "rows": rows, "best": best, "rules": table},
                      fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
