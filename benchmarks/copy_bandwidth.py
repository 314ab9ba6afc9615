"""Time the TS copy kernels against torch's copy on this GPU: checks first, then a table of GB/s and ratios.

python benchmarks/copy_bandwidth.py                 # the two targets
python benchmarks/copy_bandwidth.py --sweep         # plus stages / tile size / warps variants
python benchmarks/copy_bandwidth.py --out DIR       # also write DIR/copy_bench.csv and DIR/copy_bench.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tslab.compiling.targets import resolve
from tslab.gpu import bench, device
from tslab.gpu.compile import run_on_gpu
from tslab.kernels import grid_stride_copy, tma_copy

GRID_SHAPE = (256 * 1024 * 1024,)  # 512 MiB of int16
TMA_SHAPE = (16384, 16384)  # fp16, 512 MiB

#: (design, launch options). The first of each kernel is the kernel's own defaults; TUNED are the best
#: variants measured (benchmarks/NOTES.md).
TARGETS = [(grid_stride_copy.design(), {}), (tma_copy.design(), {})]
TUNED = [
    (tma_copy.design(), {"ctas_per_sm": 2}),  # persistent: every block resident
    (tma_copy.design(stages=3, tile_rows=128, tile_cols=256, store_warps=1), {"ctas_per_sm": 1}),  # persistent
]
SWEEP = [
    (grid_stride_copy.design(), {"unroll": 1, "ctas_per_sm": 8}),
    (grid_stride_copy.design(), {"unroll": 4, "ctas_per_sm": 8}),
    (grid_stride_copy.design(), {"unroll": 4, "ctas_per_sm": 32}),
    (grid_stride_copy.design(), {"unroll": 4, "ctas_per_sm": 512}),
    (grid_stride_copy.design(warps=8), {"unroll": 2, "ctas_per_sm": 64}),
    (tma_copy.design(store_warps=1), {"ctas_per_sm": 2}),
    (tma_copy.design(stages=3), {"ctas_per_sm": 3}),
    (tma_copy.design(stages=3, tile_rows=256, tile_cols=128, store_warps=1), {"ctas_per_sm": 1}),
    (tma_copy.design(stages=2, tile_rows=64, tile_cols=256), {"ctas_per_sm": 3}),
]
#: Grid size for the TMA copy: more blocks than fit at once (fewer trips per block), as for the grid-stride copy.
SWEEP_GRID = [
    (tma_copy.design(), {"ctas_per_sm": 3}),
    (tma_copy.design(), {"ctas_per_sm": 16}),
    (tma_copy.design(), {"ctas_per_sm": 64}),
    (tma_copy.design(stages=2), {"ctas_per_sm": 6}),
    (tma_copy.design(stages=2), {"ctas_per_sm": 64}),
    (tma_copy.design(stages=3, tile_rows=128, tile_cols=256, store_warps=1), {"ctas_per_sm": 8}),
    (tma_copy.design(stages=3, tile_rows=128, tile_cols=256, store_warps=1), {"ctas_per_sm": 62}),
    (tma_copy.design(stages=2, tile_rows=128, tile_cols=256, store_warps=1), {"ctas_per_sm": 62}),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="also time the parameter variants")
    parser.add_argument("--sweep-grid", action="store_true", help="also time TMA copy grid sizes")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None, help="folder for the CSV and JSON results")
    args = parser.parse_args(argv)
    info = device()
    if info is None:
        print("no GPU here: nothing to time (compile-only works: tslab.gpu.compile(design, arch='sm_90a'))")
        return 1
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {info}", flush=True)
    variants = TARGETS + TUNED + (SWEEP if args.sweep else []) + (SWEEP_GRID if args.sweep_grid else [])
    shape = {"grid_stride_copy": GRID_SHAPE, "tma_copy": TMA_SHAPE}
    for d, launch in TARGETS + TUNED:
        res = run_on_gpu(resolve(d, shape[d.kernel], launch=launch), timeout=180)
        print(f"check {d.kernel} {launch}: rel_error={res['rel_error']:.1e} mismatches={res['mismatches']}",
              flush=True)
    grid = [v for v in variants if v[0].kernel == "grid_stride_copy"]
    tma = [v for v in variants if v[0].kernel == "tma_copy"]
    result = bench(grid, sizes=[GRID_SHAPE], repeats=args.repeats, iterations=args.iterations, timeout=500)
    result_tma = bench(tma, sizes=[TMA_SHAPE], repeats=args.repeats, iterations=args.iterations, timeout=500)
    table = __import__("pandas").concat([result.table, result_tma.table], ignore_index=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out / "copy_bench.csv", index=False)
        (args.out / "copy_bench.json").write_text(json.dumps(result.raw + result_tma.raw, indent=1))
    cols = ["kernel", "params", "median_us", "p10_us", "p90_us", "gbps", "torch_gbps", "ratio", "rel_error"]
    print(table[cols].to_string(index=False, float_format="%.3f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
