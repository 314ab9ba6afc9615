"""Profile catalog designs on this GPU with TS's markers and IKET: where the time goes, and what the markers cost.

Run on a GPU: ``python benchmarks/profile_kernels.py --out DIR``. For each design below one block is traced and the
kernel with one marker and the kernel with every step marked run in turn (``--repeats`` launches each): the
traced block's lifetime on IKET's clock, medians, ``overhead`` = marked / one marker (IKET's own comparison;
``plain_us`` is the kernel without markers, CUDA events). Each timeline is written to
``DIR/<name>.timeline.json.gz`` (what tutorial 09 loads from ``notebooks/data/``) and its summary printed; the
overhead table comes last. ``--dynamic`` compiles each with runtime extents, the kernel an exported package holds.
Targets: overhead < 1.10x for ``gemm_sm90`` with the filter named in the table.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from tslab import gpu
from tslab.gpu.profiling import MAX_EVENTS_PER_WARP, profile_job
from tslab.kernels import design
from tslab.kernels.gemm_sm90 import PINGPONG
from tslab.kernels.gemm_sm90_dispatch import TILE_128_ALONE, COOP_128x192_ONE_TILE, SWAP_128x160_ALONE

WAITS = {"ConsumerWait", "ProducerAcquire"}
#: (name, design, shape, dtype, stages marked (None: all))
RUNS: list[tuple[str, Any, tuple[int, ...], str, set[str] | None]] = [
    ("tma_copy", lambda: design("tma_copy"), (16384, 16384), "float16", None),
    ("gemm_sm90", lambda: design("gemm_sm90"), (4096, 4096, 4096), "float16", None),
    ("gemm_sm90_waits", lambda: design("gemm_sm90"), (4096, 4096, 4096), "float16", WAITS),
    ("gemm_sm90_stages2", lambda: design("gemm_sm90", stages=2), (4096, 4096, 4096), "float16", None),
    ("gemm_sm90_one_warpgroup", lambda: design("gemm_sm90", mma_warpgroups=1, tile_n=128), (4096, 4096, 4096),
     "float16", None),
    # one block's path can replay in the Explorer: 2 tiles per block (264 tiles of 128 x 256) and 4 K tiles,
    # as the checked design (persistent over 2 tiles, k_tiles=4)
    ("gemm_sm90_replay", lambda: design("gemm_sm90"), (1536, 5632, 256), "float16", None),
    # ping-pong: the warpgroups take the block's tiles in turns (4096^3: 32 x 22 = 704 tiles of 128 x 192, 5-6 a block)
    ("gemm_sm90_pingpong", lambda: design("gemm_sm90", **PINGPONG), (4096, 4096, 4096), "float16", None),
    # small M, one tile a block (128 blocks): the dispatch's picks at M = 256, 320 and 384 (BY_M); at 320 (cuBLAS's
    # own tile and stages) the gap to cuBLAS is inside the block (NOTES #34, #39), at 384 the pick is level
    ("gemm_sm90_m256", lambda: design("gemm_sm90", **TILE_128_ALONE), (256, 8192, 8192), "float16", None),
    ("gemm_sm90_m320", lambda: design("gemm_sm90", **SWAP_128x160_ALONE), (320, 8192, 8192), "float16", None),
    ("gemm_sm90_m384", lambda: design("gemm_sm90", **COOP_128x192_ONE_TILE), (384, 8192, 8192), "float16", None),
    # attention: one 128-row Q tile of one (batch, head) per block, 32 K/V tiles (s = 4096); causal: the block traced
    # first holds the longest tile (tiles handed out longest first). Recorded with two K/V stages (the variant that
    # led on causal rows in one call; the default keeps four, see NOTES)
    ("attention_sm90", lambda: design("attention_sm90", kv_stages=2), (4, 4096, 4096, 32, 32), "bfloat16", None),
    ("attention_sm90_causal", lambda: design("attention_sm90", kv_stages=2, causal=True), (4, 4096, 4096, 32, 32),
     "bfloat16", None),
    # the default as the package runs it from 2,049 to 8,192 keys (four K/V stages, A22/A25's loop), at s = 4096,
    # where flash-attn-4 leads it most
    ("attention_sm90_default", lambda: design("attention_sm90"), (4, 4096, 4096, 32, 32), "bfloat16", None),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--only", nargs="*", help="names of RUNS to profile")
    parser.add_argument("--dynamic", action="store_true",
                        help="compile with runtime extents, the kernel an exported package holds (default: for the "
                             "profiled shape alone)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, make, shape, dtype, stages in RUNS:
        if args.only and name not in args.only:
            continue
        started = time.perf_counter()
        d = make()
        try:
            job, steps, target = profile_job(d, shape=shape, dtype=dtype, blocks=1, stages=stages, resources=None,
                                              max_events_per_warp=MAX_EVENTS_PER_WARP, repeats=args.repeats,
                                              seed=0, launch=None, force=False, timeout=300.0,
                                              dynamic=args.dynamic)
            with gzip.open(args.out / f"{name}.job.json.gz", "wt") as fh:
                json.dump(job, fh, default=str)
            print(f"[{name}] IKET trace: {json.dumps(job.get('raw_sample'), default=str)[:1500]}", flush=True)
            timeline = gpu.Timeline.from_job(d.kernel, steps, job)
            timeline.meta.update(dynamic=target.dynamic)
        except Exception as exc:  # one failing design must not hide the others
            print(f"[{name}] FAILED: {type(exc).__name__}: {exc}", flush=True)
            rows.append({"name": name, "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
            continue
        data = timeline.to_dict()
        with gzip.open(args.out / f"{name}.timeline.json.gz", "wt") as fh:
            json.dump(data, fh)
        print(f"[{name}] {time.perf_counter() - started:.1f} s\n{timeline.text()}", flush=True)
        with pd.option_context("display.width", 160, "display.max_rows", 80):
            print(timeline.summary().to_string(), flush=True)
            if name.startswith("gemm_sm90_pingpong"):
                print(warpgroup_turns(timeline).to_string(), flush=True)
        rows.append({"name": name, "shape": "x".join(map(str, shape)), "dynamic": args.dynamic,
                     "stages": ",".join(sorted(stages or [])) or "all", "ranges": len(timeline.frame),
                     "minimal_us": timeline.minimal_us, "marked_us": timeline.marked_us,
                     "overhead": timeline.overhead, "plain_us": timeline.plain_us})
    table = pd.DataFrame(rows)
    table.to_csv(args.out / "overhead.csv", index=False)
    with tarfile.open(args.out.with_suffix(".tar.gz"), "w:gz") as tar:  # one file: a device run returns eight
        tar.add(args.out, arcname=args.out.name)
    print("\n" + table.to_string(index=False))
    return 0 if all("error" not in r for r in rows) else 1


def warpgroup_turns(timeline: Any) -> pd.DataFrame:
    """Per MMA warpgroup and tile: the time its warps spent in the A/B ring's work (issuing and waiting for wgmma).
    In ping-pong the warpgroup whose turn it is not skips the tile, so the two columns alternate."""
    f = timeline.frame
    work = f[f.task.str.startswith("MmaTask") & (f.resource == "smem_ab") & (f.stage == "ConsumerWork")]
    work = work.assign(warpgroup=work.warp // 4)
    per_warp = work.groupby(["tile", "warpgroup", "warp"]).duration_ns.sum().reset_index()
    return per_warp.groupby(["tile", "warpgroup"]).duration_ns.median().unstack("warpgroup").rename(
        columns=lambda wg: f"warpgroup {wg} ns")


if __name__ == "__main__":
    sys.exit(main())
