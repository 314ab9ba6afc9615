"""Hopper GEMM on the GPU: tslab's ``gemm_sm90`` vs ``torch.mm`` vs CuTe DSL's own Hopper GEMM example.

For fp16 and bf16 and each shape (M, N, K): median TFLOP/s and the p10-p90 spread of each, timed in one
process with ``cutlass.testing.benchmark`` over rotating workspaces (cold L2), and the ratios. CuTe DSL's
example (NVIDIA/cutlass ``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm.py``, 128x256 tile,
cooperative, cluster 1x1) is loaded from a local copy when ``--baseline PATH`` names one; it is not part of
tslab.

    python benchmarks/gemm.py --baseline .baseline/dense_gemm.py [--shapes 4096,4096,4096 ...] [--json out.json]
        [--variant cluster_m=2] [--baseline-cluster 2,1] [--peer quack]

``--tuned`` times what ``tslab.gpu.export(gemm_sm90_dispatch.tuned(dtype), ...)`` writes instead of the default
design: for each shape the design the dispatch picks by M, compiled with runtime M, N, K as the package holds it
(interleaved with ``torch.mm`` and the peers, as the default design is without it); each ``--variant`` is then
compiled with runtime M, N, K too and timed in rounds of its own.

The exported package's own call (``package.run(a, b, c)``: what a model calls) is timed in the same rounds on
the same workspaces: the package of ``--tuned``'s dispatch, or of the design, exported into a temporary folder
(``--no-package`` leaves it out). With ``--tuned`` its kernel is the one timed as 'tslab', so ``x tslab`` is what
the package's Python costs.

``--peer quack`` also times quack-kernels 0.6.5 (Dao-AILab/quack, CuTe DSL; a local install on the GPU machine,
never a dependency of tslab) in the same rounds as tslab and ``torch.mm``, on the same workspaces, each output
checked first: for each shape the configs its autotuner found best on the H200 (``QUACK_CONFIGS``), the best of
them reported.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import statistics
import sys
from typing import Any

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 28672, 4096), (16384, 4096, 14336), (128, 8192, 8192),
          (256, 8192, 8192)]
#: quack's GemmConfig fields for the configs its autotuner (44 sm90 configs) found best on these shapes.
QUACK_CONFIGS = {
    "128x192 pingpong 2x1": {"tile_m": 128, "tile_n": 192, "pingpong": True, "cluster_m": 2, "cluster_n": 1},
    "128x256 cooperative 2x1": {"tile_m": 128, "tile_n": 256, "pingpong": False, "cluster_m": 2, "cluster_n": 1},
    "256x208 cooperative 2x1": {"tile_m": 256, "tile_n": 208, "pingpong": False, "cluster_m": 2, "cluster_n": 1},
    "128x128 pingpong swapAB 1x1": {"tile_m": 128, "tile_n": 128, "pingpong": True, "cluster_m": 1, "cluster_n": 1,
                                    "swap_ab": True},
    "128x128 pingpong swapAB 1x2": {"tile_m": 128, "tile_n": 128, "pingpong": True, "cluster_m": 1, "cluster_n": 2,
                                    "swap_ab": True},
}


#: Up to this M quack's best may be either kind of config (the swapped 128 x 128 ping-pong leads at M <= 256, the
#: large tiles from some M above), so all five are timed; above it only the large-tile ones.
QUACK_BOTH_KINDS_UP_TO_M = 512


def quack_configs(shape: tuple[int, int, int]) -> list[str]:
    """The quack configs timed on ``shape``: every one up to ``QUACK_BOTH_KINDS_UP_TO_M``, the large-tile ones above."""
    large = ["128x192 pingpong 2x1", "128x256 cooperative 2x1", "256x208 cooperative 2x1"]
    if shape[0] <= QUACK_BOTH_KINDS_UP_TO_M:
        return ["128x128 pingpong swapAB 1x1", "128x128 pingpong swapAB 1x2", *large]
    return large


def quack_peers(shape: tuple[int, int, int]) -> dict[str, Any]:
    """``{config label: fn(a, b, c)}`` computing ``c = a @ b.T`` with quack's GEMM in that config."""
    from quack.gemm_config import GemmConfig
    from quack.gemm_interface import gemm_tuned

    peers = {}
    for label in quack_configs(shape):
        config = GemmConfig(**QUACK_CONFIGS[label])
        peers[f"quack {label}"] = lambda a, b, c, config=config: gemm_tuned.fn(a, b.T, c, config=config)
    return peers
DTYPES = ("float16", "bfloat16")
#: The short names the other benchmarks and the kernels' ``dtype`` param use.
SHORT_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _tflops(flops: int, times_us: list[float]) -> dict[str, float]:
    rates = [flops / t / 1e6 for t in times_us]
    return {"median": statistics.median(rates), "p10": _pct(rates, 0.1), "p90": _pct(rates, 0.9)}


def time_baseline(path: str, shape: tuple[int, int, int], dtype: str, *, repeats: int, iterations: int,
                  warmup: int, cluster: tuple[int, int] = (1, 1)) -> list[float]:
    """Microseconds per call of CuTe DSL's Hopper GEMM example (128x256, cluster ``cluster``) on fresh inputs."""
    import cutlass
    import torch
    from cuda.bindings import driver as cu
    from cutlass import cute
    from cutlass.cute.runtime import from_dlpack
    from cutlass.testing import JitArguments, benchmark, get_workspace_count

    spec = importlib.util.spec_from_file_location("cute_dense_gemm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m, n, k = shape
    tdt = getattr(torch, dtype)

    def cute3(t: Any) -> Any:  # (rows, cols) -> (rows, cols, 1), cols contiguous
        return from_dlpack(t.unsqueeze(0).permute(1, 2, 0), assumed_align=16).mark_layout_dynamic(leading_dim=1)

    count = get_workspace_count(2 * (m * k + n * k + m * n), warmup, iterations)
    sets = []
    for _ in range(count):
        a = torch.randn((m, k), device="cuda", dtype=tdt)
        b = torch.randn((n, k), device="cuda", dtype=tdt)
        c = torch.empty((m, n), device="cuda", dtype=tdt)
        sets.append((a, b, c, cute3(a), cute3(b), cute3(c)))
    stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
    gemm = mod.HopperWgmmaGemmKernel(cutlass.Float32, (128, 256), cluster)
    fn = cute.compile(gemm, *sets[0][3:], stream)
    fn(*sets[0][3:], stream)
    torch.cuda.synchronize()
    a, b, c = sets[0][:3]
    err = float((c.float() - a.float() @ b.float().T).norm() / (a.float() @ b.float().T).norm())
    assert err < 1e-2, f"baseline wrong: {err}"
    turn = [0]

    def next_ws() -> Any:
        turn[0] += 1
        s = sets[turn[0] % count]
        return JitArguments(s[3], s[4], s[5], stream)

    return [benchmark(fn, workspace_generator=next_ws, workspace_count=count, warmup_iterations=warmup,
                      iterations=iterations, stream=stream) for _ in range(repeats)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="path of a local copy of CuTe DSL's dense_gemm.py example")
    parser.add_argument("--shapes", nargs="*", help="M,N,K problems (default: the five of the note)")
    parser.add_argument("--dtypes", nargs="*", default=list(DTYPES), choices=[*DTYPES, *SHORT_DTYPES],
                        help="float16 / fp16, bfloat16 / bf16 (default: both)")
    parser.add_argument("--param", action="append", default=[], help="design param NAME=VALUE for gemm_sm90")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--baseline-cluster", default="1,1", help="the example's cluster shape M,N (default 1,1)")
    parser.add_argument("--variant", action="append", default=[],
                        help="also time gemm_sm90 with these params over --param, e.g. cluster_m=2 (NAME=VALUE,...), "
                             "or a dispatch candidate by name (swap_64x64); compiled with runtime M, N, K under "
                             "--dynamic or --tuned")
    parser.add_argument("--peer", action="append", default=[], choices=["quack"],
                        help="also time this peer in the same rounds (quack: quack-kernels, installed locally)")
    parser.add_argument("--tuned", action="store_true",
                        help="time the dispatching export's pick for each shape (runtime M, N, K) as 'tslab'")
    parser.add_argument("--dynamic", action="store_true",
                        help="also time the kernel compiled with runtime M, N, K (what an export holds); the "
                             "variants are then compiled so too")
    parser.add_argument("--no-package", action="store_true", help="leave the exported package's own call out")
    args = parser.parse_args(argv)

    from tslab.compiling.targets import resolve
    from tslab.gpu.device import device
    from tslab.gpu.gemm_jobs import flops
    from tslab.gpu.jobs import _gemm_time
    from tslab.kernels import gemm_sm90

    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shapes] if args.shapes else SHAPES
    params = _params(args.param)
    variants = {label: _variant(label) for label in args.variant}
    cluster = tuple(int(v) for v in args.baseline_cluster.split(","))
    print(f"device: {device()}", flush=True)
    rows = []
    for dtype in dict.fromkeys(SHORT_DTYPES.get(d, d) for d in args.dtypes):
        short = "fp16" if dtype == "float16" else "bf16"
        design = gemm_sm90.design(**{**params, "dtype": short})
        package = None if args.no_package else exported_package(design, tuned=args.tuned)
        for shape in shapes:
            peers = {**(quack_peers(shape) if "quack" in args.peer else {}),
                     **({PACKAGE: package.run} if package is not None else {})}
            target = _target(design, shape, dtype, tuned=args.tuned)
            row = _gemm_time(target, repeats=args.repeats, iterations=args.iterations,
                             warmup=args.warmup, baseline="torch", peers=peers)
            out = {"dtype": short, "shape": shape, "params": target.params if args.tuned else params,
                   "tuned": args.tuned, **_rates(row, flops(shape))}
            if args.dynamic:
                dynamic = dataclasses.replace(resolve(design, shape, dtype), dynamic=True)
                row = _gemm_time(dynamic, repeats=args.repeats, iterations=args.iterations, warmup=args.warmup,
                                 baseline=None)
                out["tslab_dynamic"] = _tflops(flops(shape), row["kernel_us"])
            if variants:
                out["variants"] = _time_variants(variants, {**params, "dtype": short}, shape, dtype, args)
            if args.baseline:
                us = time_baseline(args.baseline, shape, dtype, repeats=args.repeats, iterations=args.iterations,
                                   warmup=args.warmup, cluster=cluster)
                out["cute_example"] = _tflops(flops(shape), us)
            rows.append(out)
            print(json.dumps(out), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    _print_table(rows, list(variants))
    return 0


def _rates(row: dict[str, Any], flop_count: int) -> dict[str, Any]:
    """A timed row's TFLOP/s: tslab's compiled function, torch.mm, the package's own call, quack's best config."""
    out = {"rel_error": row["rel_error"], "tslab": _tflops(flop_count, row["kernel_us"]),
           "torch": _tflops(flop_count, row["torch_us"])}
    peers = dict(row["peer_us"])
    if PACKAGE in peers:
        out["package"] = _tflops(flop_count, peers.pop(PACKAGE))
    if peers:
        out.update(_best_peer(peers, flop_count))
    return out


#: The exported package's own call among the peers.
PACKAGE = "package run()"


def exported_package(design: Any, *, tuned: bool, overrides: dict[str, Any] | None = None) -> Any:
    """The package a model would import, exported into a temporary folder: ``--tuned``'s dispatch for the design's
    dtype (every rule's params updated by ``overrides``), or the design itself."""
    import importlib
    import tempfile
    from pathlib import Path

    from tslab.gpu.export import export
    from tslab.kernels.gemm_sm90_dispatch import tuned as tuned_dispatch

    overrides = overrides or {}
    folder = Path(tempfile.mkdtemp(prefix="tslab_bench_"))
    # a module name of its own (the folder's): packages of different designs are imported side by side
    name = f"bench_gemm_{design.params['dtype']}" + ("_tuned" if tuned else "") + f"_{folder.name}"
    export(tuned_dispatch(design.params["dtype"], **overrides) if tuned else design, folder / name)
    sys.path.insert(0, str(folder))
    return importlib.import_module(name)


def _target(design: Any, shape: tuple[int, int, int], dtype: str, *, tuned: bool) -> Any:
    """The design compiled for ``shape``; with ``tuned``, the dispatching export's pick for ``shape`` compiled with
    runtime M, N, K, as the exported package holds it."""
    from tslab.compiling.targets import resolve

    if not tuned:
        return resolve(design, shape, dtype)
    from tslab.kernels.gemm_sm90_dispatch import tuned as tuned_dispatch

    picked = tuned_dispatch(design.params["dtype"]).pick(shape)[1]
    return dataclasses.replace(resolve(picked, shape, dtype), dynamic=True)


def _time_variants(variants: dict[str, dict[str, Any]], params: dict[str, Any], shape: tuple[int, int, int],
                   dtype: str, args: argparse.Namespace) -> dict[str, Any]:
    """TFLOP/s of each variant of gemm_sm90; a variant TS refuses (over SMEM, an invalid combination) is
    reported as ``{"error": ...}`` and the others still run."""
    from tslab.compiling.targets import resolve
    from tslab.errors import TslabError
    from tslab.gpu.gemm_jobs import flops
    from tslab.gpu.jobs import _gemm_time
    from tslab.kernels import gemm_sm90

    out: dict[str, Any] = {}
    for label, extra in variants.items():
        try:
            variant = gemm_sm90.design(**{**params, **extra})
            target = resolve(variant, shape, dtype)
            if args.dynamic or args.tuned:  # as an exported package holds it, and as --tuned's pick is compiled
                target = dataclasses.replace(target, dynamic=True)
            row = _gemm_time(target, repeats=args.repeats, iterations=args.iterations, warmup=args.warmup,
                             baseline=None)
        except (TslabError, ValueError) as exc:
            out[label] = {"error": str(exc).splitlines()[0]}
            continue
        out[label] = _tflops(flops(shape), row["kernel_us"])
    return out


def _best_peer(peer_us: dict[str, list[float]], flop_count: int) -> dict[str, Any]:
    """Every peer config's TFLOP/s, and the best one as ``quack``."""
    rates = {name: _tflops(flop_count, us) for name, us in peer_us.items()}
    best = max(rates, key=lambda name: rates[name]["median"])
    return {"peers": rates, "quack": {**rates[best], "config": best}}


def _print_table(rows: list[dict[str, Any]], variants: list[str]) -> None:
    """The medians (p10-p90) and ratios of every row; then each variant against the default."""
    from tslab.gpu.gemm_jobs import H200_DENSE_PEAK_TFLOPS

    print(f"\n{'dtype':5} {'M,N,K':>18} {'tslab':>14} {'package':>14} {'dynamic':>14} {'torch.mm':>14} "
          f"{'CuTe ex.':>14} {'quack':>14} {'x torch':>7} {'x CuTe':>7} {'x quack':>7} {'% peak':>6} "
          f"{'pkg x tslab':>11} {'pkg x torch':>11}")
    def cell(r: dict[str, Any], name: str) -> str:
        v = r.get(name)
        return f"{v['median']:6.0f} ({v['p10']:.0f}-{v['p90']:.0f})" if v else f"{'-':>14}"

    for r in rows:
        ex = r.get("cute_example")
        vs_ex = f"{r['tslab']['median'] / ex['median']:7.3f}" if ex else f"{'-':>7}"
        quack = r.get("quack")
        vs_quack = f"{r['tslab']['median'] / quack['median']:7.3f}" if quack else f"{'-':>7}"
        pkg = r.get("package")
        vs_pkg = (f"{pkg['median'] / r['tslab']['median']:11.3f} {pkg['median'] / r['torch']['median']:11.3f}"
                  if pkg else f"{'-':>11} {'-':>11}")
        print(f"{r['dtype']:5} {','.join(map(str, r['shape'])):>18} {cell(r, 'tslab'):>14} {cell(r, 'package'):>14} "
              f"{cell(r, 'tslab_dynamic'):>14} {cell(r, 'torch'):>14} "
              f"{cell(r, 'cute_example'):>14} {cell(r, 'quack'):>14} "
              f"{r['tslab']['median'] / r['torch']['median']:7.3f} {vs_ex} {vs_quack} "
              f"{100 * r['tslab']['median'] / H200_DENSE_PEAK_TFLOPS:6.1f} {vs_pkg}")
        if quack:
            print(f"{'':24} quack best: {quack['config']} ({quack['median'] / r['torch']['median']:.3f}x torch)")
    for label in variants:
        print(f"\nvariant {label}:")
        for r in rows:
            v, ex = r["variants"][label], r.get("cute_example")
            if "error" in v:
                print(f"{r['dtype']:5} {','.join(map(str, r['shape'])):>18} refused: {v['error'][:90]}")
                continue
            vs_ex = f"{v['median'] / ex['median']:7.3f}" if ex else f"{'-':>7}"
            print(f"{r['dtype']:5} {','.join(map(str, r['shape'])):>18} {cell(r['variants'], label):>14} "
                  f"x default {v['median'] / r['tslab']['median']:6.3f}  "
                  f"x torch {v['median'] / r['torch']['median']:6.3f}  x CuTe {vs_ex}")


def _variant(label: str) -> dict[str, Any]:
    """A ``--variant``: ``NAME=VALUE,...``, or the name of a dispatch candidate (``swap_64x64``)."""
    from tslab.kernels.gemm_sm90_dispatch import CANDIDATES

    if "=" not in label:
        if label not in CANDIDATES:
            raise SystemExit(f"--variant {label}: neither NAME=VALUE,... nor a dispatch candidate: "
                             + ", ".join(CANDIDATES))
        return dict(CANDIDATES[label])
    return _params(label.split(","))


def _params(pairs: list[str]) -> dict[str, Any]:
    """``["NAME=VALUE", ...]`` as design params (ints and booleans parsed)."""
    params: dict[str, Any] = {}
    for kv in pairs:
        key, value = kv.split("=", 1)
        params[key] = int(value) if value.lstrip("-").isdigit() else {"True": True, "False": False}.get(value, value)
    return params


if __name__ == "__main__":
    sys.exit(main())
