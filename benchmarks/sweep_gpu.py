"""A timed sweep on a GPU, kept as a store file: ``tma_copy`` (tutorial 08 loads it) or ``gemm_sm90``.

Every point is checked by TS (pruned points are rows), compiled for this GPU, run once against its reference,
then timed against torch in the same worker (median of 5 repeats, p10/p90, ratio = torch time / kernel time;
GB/s for the copy, TFLOP/s for the GEMM at 4096^3). With ``--baseline`` (a local copy of CuTe DSL's Hopper
GEMM example, see benchmarks/gemm.py) the best GEMM point is also timed beside that example in one process.

    python benchmarks/sweep_gpu.py --store notebooks/data/h200_tma_copy_sweep.jsonl
    python benchmarks/sweep_gpu.py --kernel gemm_sm90 --store gemm_sweep.jsonl --budget 420 --baseline PATH
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import tslab

SPACES = {
    "tma_copy": {"stages": [2, 4, 8], "tile_cols": [128, 256]},
    # 64 points: tiles x stages x cluster x epilogue x persistence (an aliased persistent epilogue is refused by
    # the design, an over-full ring by the capacity check).
    "gemm_sm90": {"tile_n": [128, 256], "stages": [2, 3, 4, 5], "cluster_m": [1, 2],
                  "epilogue": ["aliased", "dedicated"], "persistent": [True, False]},
}
FIGURES = ["status", "reason", "smem_bytes", "registers", "median_us", "p10_us", "p90_us", "gbps", "tflops", "ratio"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="tma_copy", choices=sorted(SPACES))
    parser.add_argument("--store", required=True)
    parser.add_argument("--budget", type=float, default=None, help="stop starting points after this many seconds")
    parser.add_argument("--baseline", help="GEMM only: a local copy of CuTe DSL's dense_gemm.py example")
    args = parser.parse_args()
    space = SPACES[args.kernel]
    result = tslab.sweep(args.kernel, space, measure="bench", store=args.store, budget_s=args.budget, quiet=True)
    columns = [c for c in [*space, *FIGURES] if c in result.table]
    print(result.table[columns].to_string(index=False))
    print(result.summary())
    metric = "median_us"
    best = result.best(metric)
    if best is None:
        return
    params = {name: _plain(best[name]) for name in space}
    print(f"best: {params} {best['median_us']:.1f} us, {best['ratio']:.3f}x torch", flush=True)
    if args.kernel == "gemm_sm90" and args.baseline:
        cmd = [sys.executable, str(Path(__file__).with_name("gemm.py")), "--baseline", args.baseline,
               "--shapes", "4096,4096,4096", "--dtypes", "float16", "--repeats", "5"]
        cmd += [f"--param={k}={v}" for k, v in params.items()]
        print(" ".join(cmd[1:]), flush=True)
        subprocess.run(cmd, check=False)
    print(json.dumps({"best": params, "counts": result.counts}, default=str))


def _plain(value: object) -> object:
    """A numpy scalar from the result table as the Python value it holds (for printing and JSON)."""
    return value.item() if hasattr(value, "item") else value


if __name__ == "__main__":
    main()
