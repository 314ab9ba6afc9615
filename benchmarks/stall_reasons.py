"""One launch of each contestant inside a profiler range, for Nsight Compute's warp-stall sampling.

The contestants are compiled and warmed outside the range (flash-attn-4 compiles on its first call), then each is
launched once between ``cudaProfilerStart`` and ``cudaProfilerStop``, so that ``ncu --profile-from-start off``
profiles exactly those launches. ``benchmarks/stall_reasons.sh`` runs it under ncu and writes, per contestant, the
per-instruction SASS table (stall samples by reason) and the kernel's metrics as CSV. Attention: tslab's default
compiled with runtime extents (as the package holds it) and flash-attn-4; GEMM (``--gemm M,N,K``): the exported
package of the design the tuned dispatch picks for that M, and torch.mm (cuBLAS, whose SASS is read nowhere else).

    python benchmarks/stall_reasons.py --which tslab fa4 [--shape 4,4096,32] [--head-dim 128] [--causal]
        [--param NAME=VALUE ...]
    python benchmarks/stall_reasons.py --gemm 320,8192,8192 --which tslab torch [--dirty-l2]

``--dirty-l2`` writes 256 MB before each profiled launch (outside the range), so the launch meets an L2 full of dirty
lines and its operands in HBM, as a layer's kernel does after the kernels before it (``benchmarks/gemm_between_calls
.py``'s "alone" timing); ``stall_reasons.sh`` then leaves ncu's own cache flush (an invalidation) off.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attention import Tslab, _params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--which", nargs="+", choices=("tslab", "fa4", "torch"), default=["tslab", "fa4"])
    parser.add_argument("--shape", default="4,4096,32", help="batch,seqlen,heads")
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--param", action="append", default=[], help="a design param of tslab's, NAME=VALUE")
    parser.add_argument("--gemm", help="M,N,K: profile the GEMM package's pick and torch.mm instead")
    parser.add_argument("--dirty-l2", action="store_true",
                        help="write 256 MB before each profiled launch (run under ncu --cache-control none)")
    args = parser.parse_args(argv)
    calls = gemm_calls(args) if args.gemm else attention_calls(args)

    import torch

    for call in calls.values():  # compile, load, warm
        for _ in range(3):
            call()
    torch.cuda.synchronize()
    dirt = torch.empty(256 << 20, dtype=torch.uint8, device="cuda") if args.dirty_l2 else None
    for name, call in calls.items():
        if dirt is not None:
            dirt.fill_(1)
            torch.cuda.synchronize()
        torch.cuda.profiler.start()
        call()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(f"profiled: {name}", flush=True)
    return 0


def attention_calls(args: argparse.Namespace) -> dict[str, Callable[[], Any]]:
    """tslab's attention (compiled as the package holds it) and flash-attn-4 on one problem, as asked."""
    import cutlass
    import torch

    from tslab.compiling.args import tensor_args
    from tslab.gpu.jobs import _stream

    b, s, h = (int(x) for x in args.shape.split(","))
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    scale = 1.0 / math.sqrt(args.head_dim)
    q, k, v = (torch.randn((b, s, h, args.head_dim), device="cuda", dtype=dtype) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty((b, h, s), device="cuda", dtype=torch.float32)
    calls: dict[str, Callable[[], Any]] = {}
    if "tslab" in args.which:
        fn, marks = Tslab(_params(args.param)).prepare(args.dtype, args.head_dim, args.causal)
        launch_args = (*tensor_args((q, k, v, o, lse, cutlass.Float32(scale)), marks), _stream())
        calls["tslab"] = lambda: fn(*launch_args)
    if "fa4" in args.which:
        from flash_attn.cute import flash_attn_func

        calls["fa4"] = lambda: flash_attn_func(q, k, v, softmax_scale=scale, causal=args.causal)
    return calls


def gemm_calls(args: argparse.Namespace) -> dict[str, Callable[[], Any]]:
    """The exported package of the tuned dispatch's pick for M (its own ``run``) and torch.mm, as asked."""
    import torch
    from gemm import exported_package

    from tslab.kernels.gemm_sm90_dispatch import tuned

    m, n, k = (int(x) for x in args.gemm.split(","))
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    a = torch.randn((m, k), device="cuda", dtype=dtype)
    b = torch.randn((n, k), device="cuda", dtype=dtype)
    c = torch.empty((m, n), device="cuda", dtype=dtype)
    calls: dict[str, Callable[[], Any]] = {}
    if "tslab" in args.which:
        picked = tuned(args.dtype).pick((m, n, k))[1]
        print(f"pick at M = {m}: {picked.params}", flush=True)
        package = exported_package(picked, tuned=False)
        calls["tslab"] = lambda: package.run(a, b, c)
    if "torch" in args.which:
        calls["torch"] = lambda: torch.mm(a, b.T, out=c)
    return calls


if __name__ == "__main__":
    raise SystemExit(main())
