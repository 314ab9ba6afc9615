"""Hopper attention forward on the GPU: tslab's ``attention_sm90`` vs flash-attn-4 (its sm90 path) vs SDPA.

For each dtype, head_dim, causal and problem ``(batch, seqlen, heads)`` (seqlen_q = seqlen_k, heads_kv = heads):
median TFLOP/s (4 * b * h * s * s * d, halved when causal) and the p10-p90 spread of each contestant, timed in
one process in interleaved rounds with CuTe DSL's ``cutlass.testing.benchmark`` over rotating workspaces (cold
L2). Every contestant's O (and LSE where it returns one) is first checked against an fp32 reference on two of
its (batch, head) slices. tslab's kernel is compiled once per (dtype, head_dim, causal) with runtime batch,
heads and sequence lengths, as the exported package holds it.

Peers (never dependencies of tslab; installed on the GPU machine from local wheels, see the GPU notes):
``fa4``: ``flash_attn.cute.flash_attn_func`` (flash-attn-4, CuTe DSL); ``cudnn`` and ``flash``: torch's
``scaled_dot_product_attention`` pinned to its cuDNN and FlashAttention-2 backends (inputs in SDPA's own
``(batch, heads, seqlen, head_dim)`` layout, so no transpose is timed).

    python benchmarks/attention.py [--dtypes bf16 fp16] [--head-dims 128 64] [--shapes 4,4096,32 ...]
        [--causal no yes] [--peer fa4 --peer cudnn --peer flash] [--param NAME=VALUE] [--variant NAME=VALUE,...]
        [--json out.json]

The exported package's own call (``package.run(q, k, v, o, lse, causal=..., scale=...)``: what a model calls) is
timed in the same rounds on the same inputs, from the design's package exported into a temporary folder once per
(dtype, head_dim) (``--no-package`` leaves it out); its kernel is the one timed as 'tslab', so ``pkg x tslab`` is
what the package's Python costs. ``--tuned`` exports the measured dispatch instead
(``tslab.kernels.attention_sm90_dispatch.tuned``: a design per causal value and range of seqlen_k), so ``pkg`` is
the design that package picks for the problem, through its own call, and ``pkg x tslab`` its gain over the design.

The table printed last gives each ratio to flash-attn-4 and to SDPA cuDNN, beside the issue's targets
(head_dim 128: >= 0.95x flash-attn-4, >= 1.00x at s >= 8192, and >= 1.00x cuDNN; head_dim 64: >= 0.90x
flash-attn-4 and >= 1.00x cuDNN).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
from typing import Any

#: (batch, seqlen, heads): the issue's problems.
SHAPES = [(4, 2048, 32), (4, 4096, 32), (4, 8192, 32), (1, 16384, 32)]
PEERS = ("fa4", "cudnn", "flash")
TARGETS = {128: {"fa4": 0.95, "cudnn": 1.00}, 64: {"fa4": 0.90, "cudnn": 1.00}}
#: Rows at least this long have the higher flash-attn-4 target at head_dim 128.
LONG_ROWS, LONG_ROWS_FA4 = 8192, 1.00


def targets(head_dim: int, seqlen: int) -> dict[str, float]:
    """The issue's ratios for one problem: to flash-attn-4 and to SDPA cuDNN."""
    wanted = dict(TARGETS[head_dim])
    if head_dim == 128 and seqlen >= LONG_ROWS:
        wanted["fa4"] = LONG_ROWS_FA4
    return wanted


def flops(shape: tuple[int, int, int], head_dim: int, causal: bool) -> float:
    b, s, h = shape
    return 4 * b * h * s * s * head_dim / (2 if causal else 1)


def _rates(count: float, times_us: list[float]) -> dict[str, float]:
    rates = sorted(count / t / 1e6 for t in times_us)

    def pct(q: float) -> float:
        return rates[min(len(rates) - 1, max(0, round(q * (len(rates) - 1))))]

    return {"median": statistics.median(rates), "p10": pct(0.1), "p90": pct(0.9)}


def check(name: str, q: Any, k: Any, v: Any, o: Any, lse: Any | None, causal: bool, scale: float) -> float:
    """O's relative error against the fp32 reference (tslab's check: two (batch, head) slices); raises when it is
    wrong. ``o`` in flash-attn's layout, ``lse`` (b, h, s_q) or None."""
    from tslab.gpu.attention_jobs import check as checked
    from tslab.gpu.attention_jobs import wrong

    result = checked(q, k, v, o, lse, causal, scale)
    problem = wrong(result, str(q.dtype).removeprefix("torch."))
    if problem:
        raise ValueError(f"{name}: {problem}")
    return result["rel_error"]


class Tslab:
    """tslab's design compiled once per (dtype, head_dim, causal) with runtime extents."""

    def __init__(self, params: dict[str, Any], tuned: bool = False) -> None:
        self.params = params
        self.tuned = tuned
        self._fns: dict[tuple, Any] = {}
        self._packages: dict[tuple, Any] = {}

    def design(self, dtype: str, head_dim: int, causal: bool) -> Any:
        from tslab.kernels import attention_sm90 as attn

        return attn.design(**{**attn.HEAD_DIM_PRESETS[head_dim], **self.params, "dtype": dtype, "causal": causal})

    def prepare(self, dtype: str, head_dim: int, causal: bool) -> tuple[Any, Any]:
        """The compiled function and its tensors' marks."""
        from tslab.compiling.compile import compiled, tensor_marks
        from tslab.compiling.targets import resolve
        from tslab.gpu.device import device

        key = (dtype, head_dim, causal)
        if key not in self._fns:
            design = self.design(dtype, head_dim, causal)
            target = dataclasses.replace(resolve(design, (1, 1, 1, 1, 1)), dynamic=True)
            info = device()
            self._fns[key] = (compiled(target, info.sm_count, info.arch), tensor_marks(target))
        return self._fns[key]


    def package(self, dtype: str, head_dim: int) -> Any:
        """The design's exported package (both values of causal), or with ``tuned`` the measured dispatch's,
        imported; exported once per (dtype, head_dim)."""
        import importlib
        import tempfile
        from pathlib import Path

        from tslab.gpu.export import export

        key = (dtype, head_dim)
        if key not in self._packages:
            name = f"bench_attention_{dtype}_d{head_dim}_{id(self)}"
            folder = Path(tempfile.mkdtemp(prefix="tslab-bench-"))
            if self.tuned:
                from tslab.kernels.attention_sm90_dispatch import tuned

                export(tuned(dtype, head_dim).with_params(**self.params), folder / name)
            else:
                export(self.design(dtype, head_dim, False), folder / name)
            sys.path.insert(0, str(folder))
            self._packages[key] = importlib.import_module(name)
        return self._packages[key]


def contestants(tslab: Tslab, dtype: str, head_dim: int, causal: bool, shape: tuple[int, int, int],
                peers: list[str], *, warmup: int, iterations: int,
                package: bool = False) -> tuple[list[Any], dict[str, float]]:
    """The timed contestants on their own workspaces, each checked once; and each one's relative error."""
    import cutlass
    import torch

    from tslab.compiling.args import tensor_args
    from tslab.gpu.jobs import _stream
    from tslab.gpu.timing import Contestant, workspace_count

    b, s, h = shape
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
    scale = 1.0 / math.sqrt(head_dim)
    nbytes = 4 * b * s * h * head_dim * 2
    count = workspace_count(nbytes, warmup, iterations)
    sets = []
    for _ in range(count):
        q, k, v = (torch.randn((b, s, h, head_dim), device="cuda", dtype=tdt) for _ in range(3))
        o = torch.full_like(q, float("nan"))
        lse = torch.full((b, h, s), float("nan"), device="cuda", dtype=torch.float32)
        sets.append((q, k, v, o, lse))
    stream = _stream()
    fn, marks = tslab.prepare(dtype, head_dim, causal)
    ws = [(*tensor_args((q, k, v, o, lse, cutlass.Float32(scale)), marks), stream) for q, k, v, o, lse in sets]
    fn(*ws[0])
    torch.cuda.synchronize()
    q, k, v, o, lse = sets[0]
    errors = {"tslab": check("tslab", q, k, v, o, lse, causal, scale)}
    out = [Contestant("tslab", fn, ws)]
    if package:
        out.append(package_contestant(tslab.package(dtype, head_dim), sets, causal, scale, errors))
    if "fa4" in peers:
        from flash_attn.cute import flash_attn_func

        def fa4(q: Any, k: Any, v: Any, *_: Any) -> Any:
            return flash_attn_func(q, k, v, softmax_scale=scale, causal=causal)

        o4, lse4 = fa4(q, k, v)[:2]
        torch.cuda.synchronize()
        errors["fa4"] = check("flash-attn-4", q, k, v, o4, lse4, causal, scale)
        out.append(Contestant("fa4", fa4, sets))
    sdpa_sets = None
    for backend in ("cudnn", "flash"):
        if backend not in peers:
            continue
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.functional import scaled_dot_product_attention

        if sdpa_sets is None:
            sdpa_sets = [tuple(t.transpose(1, 2).contiguous() for t in ws_[:3]) for ws_ in sets]
        which = SDPBackend.CUDNN_ATTENTION if backend == "cudnn" else SDPBackend.FLASH_ATTENTION

        def sdpa(q: Any, k: Any, v: Any, which: Any = which) -> Any:
            with sdpa_kernel(which):
                return scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)

        got = sdpa(*sdpa_sets[0]).transpose(1, 2)
        torch.cuda.synchronize()
        errors[backend] = check(f"SDPA {backend}", q, k, v, got, None, causal, scale)
        out.append(Contestant(backend, sdpa, sdpa_sets))
    return out, errors


def package_contestant(pkg: Any, sets: list[tuple], causal: bool, scale: float, errors: dict[str, float]) -> Any:
    """The exported package's ``run()`` on the workspaces ``sets``, checked first (its error into ``errors``)."""
    import torch

    from tslab.gpu.timing import Contestant

    def run(q: Any, k: Any, v: Any, o: Any, lse: Any) -> None:
        pkg.run(q, k, v, o, lse, causal=causal, scale=scale)

    q, k, v, o, lse = sets[0]
    o.fill_(float("nan"))
    run(q, k, v, o, lse)
    torch.cuda.synchronize()
    errors["package"] = check("package", q, k, v, o, lse, causal, scale)
    return Contestant("package", run, sets)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", nargs="*", default=["bf16", "fp16"], choices=["bf16", "fp16"])
    parser.add_argument("--head-dims", nargs="*", type=int, default=[128, 64], choices=[64, 128])
    parser.add_argument("--shapes", nargs="*", help="batch,seqlen,heads problems (default: the issue's four)")
    parser.add_argument("--causal", nargs="*", default=["no", "yes"], choices=["no", "yes"])
    parser.add_argument("--peer", action="append", default=[], choices=PEERS)
    parser.add_argument("--param", action="append", default=[], help="design param NAME=VALUE for attention_sm90")
    parser.add_argument("--variant", action="append", default=[],
                        help="also time a variant: NAME=VALUE,NAME=VALUE (params over --param)")
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--no-package", action="store_true", help="leave the exported package's own call out")
    parser.add_argument("--tuned", action="store_true",
                        help="time the measured dispatch's package (its pick per causal and seqlen_k) as 'pkg'")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.tuned and args.no_package:
        parser.error("--tuned times the dispatch's package: drop --no-package")

    import torch

    from tslab.gpu.device import device
    from tslab.gpu.jobs import _stream
    from tslab.gpu.timing import time_interleaved

    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes] if args.shapes else SHAPES
    params = _params(args.param)
    tslab = Tslab(params, tuned=args.tuned)
    variants = {label: Tslab({**params, **_params(label.split(","))}) for label in args.variant}
    print(f"device: {device()}", flush=True)
    rows = []
    for dtype in args.dtypes:
        for head_dim in args.head_dims:
            for causal in (c == "yes" for c in args.causal):
                for shape in shapes:
                    row = {"dtype": dtype, "head_dim": head_dim, "causal": causal, "shape": shape, "params": params}
                    try:
                        entrants, errors = contestants(tslab, dtype, head_dim, causal, shape, args.peer,
                                                       warmup=args.warmup, iterations=args.iterations,
                                                       package=not args.no_package)
                        for label, variant in variants.items():
                            extra, err = contestants(variant, dtype, head_dim, causal, shape, [],
                                                     warmup=args.warmup, iterations=args.iterations)
                            extra[0].name = f"variant:{label}"
                            entrants.append(extra[0])
                            errors[f"variant:{label}"] = err["tslab"]
                        times = time_interleaved(entrants, repeats=args.repeats, iterations=args.iterations,
                                                 warmup=args.warmup, stream=_stream())
                    except Exception as exc:  # one failing problem is reported; the others still run
                        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                        print(json.dumps(row), flush=True)
                        rows.append(row)
                        torch.cuda.empty_cache()
                        continue
                    count = flops(shape, head_dim, causal)
                    row.update({name: _rates(count, us) for name, us in times.items()})
                    row["rel_error"] = errors
                    if args.tuned:  # which of the dispatch's designs the package's call ran
                        picked = tslab.package(dtype, head_dim).design_for(causal, shape[1])
                        row["package_design"] = picked["prefix"]
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    del entrants
                    torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    print_table(rows, list(variants))
    return 0


def _params(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        name, _, value = item.partition("=")
        value = {"True": "true", "False": "false"}.get(value, value)  # Python's spelling as well as JSON's
        out[name] = json.loads(value) if value[:1] in "0123456789-[{" or value in ("true", "false") else value
    return out


def print_table(rows: list[dict[str, Any]], variants: list[str]) -> None:
    """Medians (TFLOP/s), ratios to flash-attn-4 and cuDNN, and whether the issue's targets are met."""
    print(f"\n{'dtype':5} {'d':>3} {'causal':6} {'b,s,h':>12} {'tslab':>6} {'pkg':>6} {'fa4':>6} {'cudnn':>6} "
          f"{'flash':>6} {'x fa4':>6} {'x cudnn':>7} {'pkg x tslab':>11} {'pkg x fa4':>9} target"
          + "".join(f" {v[:14]:>14}" for v in variants))
    for r in rows:
        head = f"{r['dtype']:5} {r['head_dim']:>3} {r['causal']!s:6} {','.join(map(str, r['shape'])):>12}"
        if "error" in r:
            print(f"{head} error: {r['error'][:100]}")
            continue

        def med(name: str, r: dict[str, Any] = r) -> str:
            return f"{r[name]['median']:6.0f}" if name in r else f"{'-':>6}"

        ratios = {p: r["tslab"]["median"] / r[p]["median"] for p in ("fa4", "cudnn") if p in r}
        wanted = targets(r["head_dim"], r["shape"][1])
        met = [p for p in wanted if p in ratios and ratios[p] >= wanted[p]]
        missed = [p for p in wanted if p in ratios and ratios[p] < wanted[p]]
        verdict = ("met" if not missed else "MISSED " + ",".join(missed)) if (met or missed) else "-"
        fa4 = f"{ratios['fa4']:6.3f}" if "fa4" in ratios else f"{'-':>6}"
        cudnn = f"{ratios['cudnn']:7.3f}" if "cudnn" in ratios else f"{'-':>7}"
        extra = "".join(f" {r[f'variant:{v}']['median'] / r['tslab']['median']:13.3f}x" for v in variants)
        pkg = (f"{r['package']['median'] / r['tslab']['median']:11.3f} "
               + (f"{r['package']['median'] / r['fa4']['median']:9.3f}" if "fa4" in r else f"{'-':>9}")
               if "package" in r else f"{'-':>11} {'-':>9}")
        print(f"{head} {med('tslab')} {med('package')} {med('fa4')} {med('cudnn')} {med('flash')} {fa4} {cudnn} "
              f"{pkg} {verdict}{extra}")


if __name__ == "__main__":
    sys.exit(main())
