"""gemm_sm90's candidate designs for each problem, timed in the same rounds: which design serves which shape.

For each shape (M, N, K) every candidate design listed for it is compiled for that problem, run once against the
fp32 reference (every element written, error within twice torch.mm's own), then all of them, ``torch.mm`` and
(with ``--peer quack``) quack-kernels' configs are timed interleaved in one ``time_interleaved`` call on the same
cold-L2 workspaces: the rates of one shape come from the same rounds. A candidate TS refuses (over SMEM, an
invalid combination) is reported and the others still run. The last lines give the winner per shape and, for the
shapes of one N and K, the rule table by M that ``sweep_dispatch.rules`` derives.

    python benchmarks/gemm_by_m.py [--ms 64 128 192 256 320 384 512] [--n 8192] [--k 8192] [--large]
        [--dtype fp16] [--repeats 5] [--peer quack] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from gemm import quack_peers
from sweep_dispatch import rules

from tslab.kernels import gemm_sm90
from tslab.kernels.gemm_sm90_dispatch import CANDIDATES

#: Large problems (ping-pong against the cooperative default).
LARGE = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 28672, 4096), (16384, 4096, 14336)]


def candidates_for(m: int) -> list[str]:
    """The candidates worth timing at ``m`` rows: tiles whose height or (swapped) width fits M."""
    if m <= 64:
        return ["decode", "swap_64x64"]
    if m <= 128:
        return ["decode", "swap_64x128", "pairs"]
    if m <= 192:
        return ["pairs", "decode", "swap_64x192"]
    if m <= 256:
        return ["pairs", "swap_64x256", "swap_128x128"]
    if m <= 320:
        return ["default", "swap_128x160", "swap_64x160"]
    if m <= 384:
        return ["default", "swap_128x192", "coop_128x192"]
    if m <= 1024:
        return ["default", "pairs", "coop_128x192"]
    return ["default", "pingpong", "pingpong_pairs", "pingpong_128x160", "pingpong_128x128", "coop_128x192"]


def time_shape(shape: tuple[int, int, int], dtype: str, names: list[str], *, repeats: int, iterations: int,
               warmup: int, peers: dict[str, Any]) -> dict[str, Any]:
    """TFLOP/s medians of each candidate, torch.mm and the peers on ``shape``, from the same rounds."""
    import torch

    from tslab.compiling.compile import compiled, tensor_marks
    from tslab.compiling.targets import resolve
    from tslab.errors import TslabError
    from tslab.gpu.device import device
    from tslab.gpu.gemm_jobs import _args, check, flops, operands, tolerance
    from tslab.gpu.jobs import _stream
    from tslab.gpu.timing import Contestant, time_interleaved, workspace_count

    info, stream = device(), _stream()
    torch_dtype = {"fp16": "float16", "bf16": "bfloat16"}[dtype]
    m, n, k = shape
    count = workspace_count(2 * (m * k + n * k + m * n), warmup, iterations)
    sets = [operands(shape, torch_dtype, 1000 + w) for w in range(count)]
    contestants, refused, errors = [], {}, {}
    for name in names:
        try:
            target = resolve(gemm_sm90.design(**{**CANDIDATES[name], "dtype": dtype}), shape, torch_dtype)
            fn = compiled(target, info.sm_count, info.arch)
        except (TslabError, ValueError) as exc:
            refused[name] = str(exc).splitlines()[0]
            continue
        marks = tensor_marks(target)
        workspaces = [_args(marks, a, b, c, stream) for a, b, c in sets]
        a, b, c = sets[0]
        c.fill_(float("nan"))
        fn(*workspaces[0])
        torch.cuda.synchronize()
        result = errors[name] = check(a, b, c)
        if result["unwritten"] or not result["rel_error"] <= tolerance(result, torch_dtype):
            raise AssertionError(f"{name} on {shape} {dtype}: {result}")
        contestants.append(Contestant(name, fn, workspaces))
    contestants.append(Contestant("torch.mm", lambda a, b, c: torch.mm(a, b.T, out=c), sets))
    for name, peer in peers.items():
        a, b, c = sets[0]
        c.fill_(float("nan"))
        peer(a, b, c)
        torch.cuda.synchronize()
        result = check(a, b, c)
        if result["unwritten"] or not result["rel_error"] <= tolerance(result, torch_dtype):
            raise AssertionError(f"{name} on {shape} {dtype}: {result}")
        contestants.append(Contestant(name, peer, sets))
    times = time_interleaved(contestants, repeats=repeats, iterations=iterations, warmup=warmup, stream=stream)
    rates = {name: flops(shape) / statistics.median(us) / 1e6 for name, us in times.items()}
    return {"shape": shape, "dtype": dtype, "tflops": rates, "refused": refused,
            "rel_error": {name: e["rel_error"] for name, e in errors.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", nargs="*", type=int, default=[64, 128, 192, 256, 320, 384, 512])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--k", type=int, default=8192)
    parser.add_argument("--large", action="store_true", help="also the large problems (ping-pong vs the default)")
    parser.add_argument("--candidates", nargs="*", help="time these candidates on every shape instead")
    parser.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--peer", action="append", default=[], choices=["quack"])
    parser.add_argument("--json", help="write every row here")
    args = parser.parse_args(argv)

    shapes = [(m, args.n, args.k) for m in sorted(args.ms)] + (LARGE if args.large else [])
    rows = []
    for shape in shapes:
        names = args.candidates or candidates_for(shape[0])
        peers = quack_peers(shape) if "quack" in args.peer else {}
        row = time_shape(shape, args.dtype, names, repeats=args.repeats, iterations=args.iterations,
                         warmup=args.warmup, peers=peers)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    for row in rows:
        ours = {k: v for k, v in row["tflops"].items() if k in CANDIDATES}
        theirs = {k: v for k, v in row["tflops"].items() if k not in CANDIDATES}
        best = max(ours, key=ours.get) if ours else None
        peer = max((v for k, v in theirs.items() if k != "torch.mm"), default=None)
        cells = "  ".join(f"{k} {v:.0f}" for k, v in sorted(row["tflops"].items(), key=lambda kv: -kv[1]))
        ratio = f"x torch {ours[best] / row['tflops']['torch.mm']:.3f}" if best else ""
        vs_peer = f" x quack {ours[best] / peer:.3f}" if best and peer else ""
        print(f"{row['dtype']} {','.join(map(str, row['shape'])):>18}  best {best}  {ratio}{vs_peer}  | {cells}")
        for name, why in row["refused"].items():
            print(f"{'':24} refused {name}: {why[:100]}")
    by_m = [(row["shape"][0], max((k for k in row["tflops"] if k in CANDIDATES), key=row["tflops"].get))
            for row in rows if row["shape"][1:] == (args.n, args.k)]
    print("rules: " + ", ".join(f"M <= {b}: {n}" if b is not None else f"above: {n}" for b, n in rules(by_m)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
