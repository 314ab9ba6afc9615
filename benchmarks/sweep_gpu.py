"""A timed sweep of ``tma_copy`` on a GPU, kept as a store file that tutorial 08 loads.

Every point is checked by TS (pruned points are rows), compiled for this GPU, run once against its input
(exact match), then timed against torch's copy of the same tensors in the same worker (median of 5 repeats,
p10/p90, GB/s, ratio = torch time / kernel time).

    python benchmarks/sweep_gpu.py --store notebooks/data/h200_tma_copy_sweep.jsonl
"""

from __future__ import annotations

import argparse

import tslab

SPACE = {"stages": [2, 4, 8], "tile_cols": [128, 256]}
COLUMNS = ["stages", "tile_cols", "status", "reason", "smem_bytes", "registers", "median_us", "p10_us", "p90_us",
           "gbps", "ratio", "device"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    args = parser.parse_args()
    result = tslab.sweep("tma_copy", SPACE, measure="bench", store=args.store, quiet=True)
    print(result.table[[c for c in COLUMNS if c in result.table]].to_string(index=False))
    print(result.summary())
    best = result.best("median_us")
    if best is not None:
        print(f"best: stages={best['stages']} tile_cols={best['tile_cols']} {best['median_us']:.1f} us, "
              f"{best['ratio']:.3f}x torch")


if __name__ == "__main__":
    main()
