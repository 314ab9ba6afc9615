"""Which kernels the peers launch, and how: torch.mm (cuBLAS) and SDPA (cuDNN) under torch's profiler.

For each problem the CUDA kernels one call launches, with what the profiler's trace records of each launch: the
kernel's name (cuBLAS names its tile, warpgroups, cluster and stream-K / split-K mode there), grid, block,
registers per thread, shared memory, and its median time over ``--calls`` calls (with the TFLOP/s that time
means for the whole problem). What tslab's design should be measured against at M between tiles: whether
cuBLAS splits K, which tile and cluster it picks, how many blocks it launches for 132 SMs.

    python benchmarks/peer_kernels.py [--ms 64 128 192 256 320 384] [--nk 8192,8192] [--dtypes fp16 bf16]
        [--attention 4,2048,32,128 ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from gemm import SHORT_DTYPES as DTYPES


def profiled_kernels(call: Callable[[], Any], calls: int) -> list[dict[str, Any]]:
    """The kernels ``call`` launches, in launch order, each with its trace record and median microseconds."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):  # warm: cuBLAS picks its kernel and loads it on the first calls
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    launches: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for event in events:
        if event.get("cat") == "kernel":
            launches[event["name"]].append(event)
    out = []
    for name, seen in launches.items():
        args = seen[0].get("args", {})
        out.append({"name": name, "launches_per_call": len(seen) / calls,
                    "median_us": statistics.median(e["dur"] for e in seen), "grid": args.get("grid"),
                    "block": args.get("block"), "registers": args.get("registers per thread"),
                    "smem": args.get("shared memory"), "blocks_per_sm": args.get("blocks per SM")})
    return out


def gemm_rows(ms: list[int], n: int, k: int, dtypes: list[str], calls: int) -> list[dict[str, Any]]:
    import torch

    rows = []
    for dtype in dtypes:
        for m in ms:
            a = torch.randn((m, k), device="cuda", dtype=getattr(torch, DTYPES[dtype]))
            b = torch.randn((n, k), device="cuda", dtype=a.dtype)
            c = torch.empty((m, n), device="cuda", dtype=a.dtype)
            kernels = profiled_kernels(lambda a=a, b=b, c=c: torch.mm(a, b.T, out=c), calls)
            rows.append({"op": "torch.mm", "dtype": dtype, "problem": [m, n, k], "flops": 2 * m * n * k,
                         "kernels": kernels})
    return rows


def attention_rows(problems: list[tuple[int, ...]], dtypes: list[str], calls: int) -> list[dict[str, Any]]:
    """SDPA pinned to cuDNN on (batch, seqlen, heads, head_dim), causal and not."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    rows = []
    for dtype in dtypes:
        for b, s, h, d in problems:
            q, k, v = (torch.randn((b, h, s, d), device="cuda", dtype=getattr(torch, DTYPES[dtype]))
                       for _ in range(3))
            for causal in (False, True):
                def call(q=q, k=k, v=v, causal=causal) -> Any:
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

                flops = 4 * b * h * s * s * d // (2 if causal else 1)
                rows.append({"op": f"SDPA cuDNN{' causal' if causal else ''}", "dtype": dtype,
                             "problem": [b, s, h, d], "flops": flops, "kernels": profiled_kernels(call, calls)})
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        problem = ",".join(map(str, row["problem"]))
        for kernel in row["kernels"]:
            tflops = row["flops"] / kernel["median_us"] / 1e6 if kernel["launches_per_call"] == 1 else float("nan")
            print(f"{row['op']:18} {row['dtype']:4} {problem:>18} {kernel['median_us']:8.1f} us {tflops:6.0f} TF "
                  f"grid {kernel['grid']} block {kernel['block']} regs {kernel['registers']} smem {kernel['smem']} "
                  f"x{kernel['launches_per_call']:g}\n    {kernel['name'][:220]}")


def main(argv: list[str] | None = None) -> NoReturn:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", nargs="*", type=int, default=[64, 128, 192, 256, 320, 384, 512])
    parser.add_argument("--nk", default="8192,8192", help="N,K of the GEMMs (default 8192,8192)")
    parser.add_argument("--dtypes", nargs="*", default=["fp16"], choices=list(DTYPES))
    parser.add_argument("--attention", nargs="*", default=[], help="batch,seqlen,heads,head_dim problems")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--json", help="write every row here")
    args = parser.parse_args(argv)
    n, k = (int(x) for x in args.nk.split(","))
    rows = gemm_rows(args.ms, n, k, args.dtypes, args.calls)
    rows += attention_rows([tuple(int(x) for x in p.split(",")) for p in args.attention], args.dtypes, args.calls)
    print_rows(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    from profiler_exit import exit_without_teardown

    exit_without_teardown()  # torch.profiler ran: its CUPTI buffers abort the interpreter's teardown now and then


if __name__ == "__main__":
    raise SystemExit(main())
