"""A captured kernel on the GPU: tutorial 06's row copy run, checked, timed against torch's copy and swept.

Captures ``notebooks/kernels/row_copy.py`` at 1024 x 8192 fp16, runs it on ``row_copy_io.inputs`` against
``row_copy_io.expected`` (and once against a wrong reference, which must be reported), times it against
``torch_copy`` on the same inputs, sweeps ``ring_stages`` x ``row_elems`` on the GPU and profiles one launch (what
every warp did, IKET). Writes the recordings tutorial 06 shows on a machine without a GPU.

    python benchmarks/captured_gpu.py [--out notebooks/data/h200_row_copy.json]
        [--timeline notebooks/data/h200_profile_row_copy.timeline.json.gz]
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SWEEP = {"ring_stages": [2, 3, 4], "row_elems": [128, 256]}
SWEEP_COLUMNS = ["ring_stages", "row_elems", "status", "smem_bytes", "median_us", "gbps", "ratio"]


def record(timeline_path: Path) -> dict:
    import os

    import tslab
    from tslab import fake, gpu

    os.chdir(NOTEBOOKS)  # the tutorial's folder: its functions are named as the tutorial names them
    io = {"inputs": "kernels/row_copy_io.py:inputs", "reference": "kernels/row_copy_io.py:expected",
          "outputs": ["dst"]}
    design = tslab.capture_file("kernels/row_copy.py", "copy_rows", fake.tensor("f16", (1024, 8192)),
                                fake.tensor("f16", (1024, 8192)))
    kernel = gpu.compile(design)
    run = kernel.run(**io)
    try:
        kernel.run(**{**io, "reference": "kernels/row_copy_io.py:wrong"})
        wrong = "not reported"
    except gpu.CheckFailedError as exc:
        wrong = str(exc)
    bench = kernel.bench(**io, baseline="kernels/row_copy_io.py:torch_copy", repeats=7)
    sweep = tslab.sweep(design, SWEEP, measure="bench", executor="serial", baseline="kernels/row_copy_io.py:torch_copy",
                        quiet=True, **io)
    table = sweep.table[[c for c in SWEEP_COLUMNS if c in sweep.table]]
    timeline = gpu.profile(design, **io)
    with gzip.open(timeline_path, "wt") as fh:
        json.dump(timeline.to_dict(), fh)
    print(timeline.text())
    return {"device": str(gpu.device()), "run": run, "wrong": wrong, "bench": bench.raw,
            "sweep": json.loads(table.to_json(orient="records"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=NOTEBOOKS / "data" / "h200_row_copy.json")
    parser.add_argument("--timeline", type=Path,
                        default=NOTEBOOKS / "data" / "h200_profile_row_copy.timeline.json.gz")
    args = parser.parse_args()
    out = args.out.resolve()
    data = record(args.timeline.resolve())
    out.write_text(json.dumps(data, indent=1) + "\n")
    from tslab.gpu import BenchResult

    print(data["device"])
    print(BenchResult(data["bench"]))
    for row in data["sweep"]:
        print(row)
    print("wrong reference:", data["wrong"][:160])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
