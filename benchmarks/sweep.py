"""Sweep throughput: points per minute of check-only and compile-only sweeps, serial vs the process pool vs a
local Ray cluster, measured in the same run and printed as ratios.

Each executor runs the same space of ``tma_copy`` on the CPU (compile-only for sm_90a: no GPU needed). Pool and
Ray times include starting their worker processes (each imports tslab and CuTe DSL); ``ray.init`` itself is
timed apart, as a standing cluster would not pay it per sweep. Targets: pool >= 1.7x serial on compile-only with
2 workers; Ray within 15% of the pool. The serial executor compiles each point in a fresh worker process (the
caller's process is never put at risk); pool workers and Ray tasks are isolated already and compile in themselves,
so "pool x1" separates that saving from the parallelism ("pool x2 / pool x1"). The machine's 1-minute load
average is printed beside each row: on a shared machine, other processes' load caps what a second worker can gain.

    python benchmarks/sweep.py [--jobs 2] [--no-ray] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import tslab

CHECK_SPACE = {"stages": [2, 3, 4, 5, 6, 7, 8], "tile_cols": [64, 128, 256], "tiles": [2, 4], "store_warps": [2, 4]}
COMPILE_SPACE = {"stages": [2, 3, 4, 6], "tile_cols": [64, 128, 256], "tile_rows": [32, 64, 128]}


def timed(space: dict, measure: str, executor: object) -> dict:
    started = time.perf_counter()
    result = tslab.sweep("tma_copy", space, measure=measure, arch="sm_90a", executor=executor, quiet=True)
    seconds = time.perf_counter() - started
    return {"points": len(result.table), "seconds": round(seconds, 2),
            "points_per_min": round(len(result.table) / seconds * 60, 1), "counts": result.counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows: dict[str, dict] = {}
    executors: list[tuple[str, object]] = [("serial", "serial"), ("pool x1", 1), (f"pool x{args.jobs}", args.jobs)]
    ray_init_s = None
    if not args.no_ray:
        import ray

        started = time.perf_counter()
        ray.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False)
        ray_init_s = round(time.perf_counter() - started, 1)
        executors.append((f"ray ({args.jobs} CPUs)", "ray"))
    for measure, space in (("check", CHECK_SPACE), ("compile", COMPILE_SPACE)):
        for name, executor in executors:
            rows[f"{measure} / {name}"] = row = timed(space, measure, executor)
            row["load_avg_1min"] = round(os.getloadavg()[0], 1)
            print(f"{measure:8} {name:16} {row['points']:4} points {row['seconds']:8.1f} s "
                  f"{row['points_per_min']:8.1f} points/min  {row['counts']}  load {row['load_avg_1min']}", flush=True)
    print(f"\nray.init: {ray_init_s} s (not counted above)" if ray_init_s is not None else "")
    for measure in ("check", "compile"):
        serial = rows[f"{measure} / serial"]["points_per_min"]
        pool = rows[f"{measure} / pool x{args.jobs}"]["points_per_min"]
        one = rows[f"{measure} / pool x1"]["points_per_min"]
        line = f"{measure:8} pool / serial = {pool / serial:.2f}x   pool x{args.jobs} / pool x1 = {pool / one:.2f}x"
        if ray_init_s is not None:
            ray_rate = rows[f"{measure} / ray ({args.jobs} CPUs)"]["points_per_min"]
            line += f"   ray / pool = {ray_rate / pool:.2f}x"
        print(line)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"rows": rows, "ray_init_s": ray_init_s}, fh, indent=1)


if __name__ == "__main__":
    main()
