"""On a GPU: attention_sm90 matches an fp32 torch reference (O and LSE) on fresh inputs, one compile with runtime
batch, sequence lengths and heads serving every shape: tails, s = 1, causal and not, GQA 1, 4, 8, head_dim 64, 128."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from tslab.gpu import device
from tslab.kernels import attention_sm90 as attn

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device() is None, reason="no NVIDIA GPU here")]

#: (batch, seqlen_q, seqlen_k, heads, heads_kv): tile multiples, tails of Q and of K/V, one row, one key, more queries
#: than keys (causal rows that see no key), GQA ratios 1, 4 and 8, more tiles than SMs.
SHAPES = [
    (1, 128, 128, 1, 1), (2, 1000, 1000, 4, 4), (1, 1, 1, 2, 2), (1, 1, 777, 8, 1), (3, 77, 300, 8, 2),
    (2, 513, 129, 4, 1), (1, 129, 1000, 8, 8), (2, 256, 4096, 16, 2), (1, 4096, 4096, 4, 4), (4, 300, 77, 4, 4),
    (1, 2048, 2048, 32, 4), (2, 64, 64, 8, 1), (1, 1023, 1025, 2, 1), (5, 200, 200, 2, 2),
]
HEAD_DIM_PARAMS = attn.HEAD_DIM_PRESETS


def reference(q, k, v, causal: bool, scale: float):
    """fp32 attention in flash-attn's layout: O (b, s_q, h, d) and LSE (b, h, s_q); GQA by repeating K/V heads;
    the causal mask aligned bottom-right; a row that sees no key gives O = 0 and LSE = -inf."""
    import torch

    s_q, h = q.shape[1], q.shape[2]
    s_k, h_kv = k.shape[1], k.shape[2]
    qf, kf, vf = (t.float().transpose(1, 2) for t in (q, k, v))  # (b, h, s, d)
    kf, vf = (t.repeat_interleave(h // h_kv, dim=1) for t in (kf, vf))
    scores = qf @ kf.transpose(-1, -2) * scale
    if causal:
        rows = torch.arange(s_q, device=q.device)[:, None]
        cols = torch.arange(s_k, device=q.device)[None, :]
        scores = scores.masked_fill(cols > rows + s_k - s_q, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    p = torch.exp(scores - lse[..., None]).nan_to_num(0.0)
    return (p @ vf).transpose(1, 2), lse


def _run(design, shape, *, seed: int, scale: float | None = None):
    import torch

    from tslab.compiling.args import tensor_args
    from tslab.compiling.compile import compiled, tensor_marks
    from tslab.compiling.targets import resolve
    from tslab.gpu.jobs import _stream

    b, s_q, s_k, h, h_kv = shape
    d = design.params["head_dim"]
    dtype = getattr(torch, attn.DTYPES[design.params["dtype"]])
    gen = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn((b, s_q, h, d), device="cuda", dtype=dtype, generator=gen)
    k = torch.randn((b, s_k, h_kv, d), device="cuda", dtype=dtype, generator=gen)
    v = torch.randn((b, s_k, h_kv, d), device="cuda", dtype=dtype, generator=gen)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, h, s_q), float("nan"), device="cuda", dtype=torch.float32)
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    info = device()
    target = dataclasses.replace(resolve(design, (1, 1, 1, 1, 1)), shape=shape, dynamic=True)
    fn = compiled(target, info.sm_count, info.arch)
    import cutlass

    fn(*tensor_args((q, k, v, o, lse, cutlass.Float32(scale)), tensor_marks(target)), _stream())
    torch.cuda.synchronize()
    ref_o, ref_lse = reference(q, k, v, design.params["causal"], scale)
    return o, lse, ref_o, ref_lse


def _problems(o, lse, ref_o, ref_lse, dtype_name) -> list[str]:
    """What is wrong with O and LSE: O within four roundings of its dtype of the fp32 O (relative, Frobenius),
    every element written; LSE within 1e-3 relative, -inf where a row sees no key."""
    unit = {"fp16": 2.0**-11, "bf16": 2.0**-8}[dtype_name]
    found = []
    if o.isnan().any():
        found.append(f"{int(o.isnan().sum())} elements of O unwritten (NaN)")
    err = ((o.float() - ref_o).nan_to_num(0.0).norm() / ref_o.norm().clamp_min(1e-30)).item()
    if err > 4 * unit:
        found.append(f"O relative error {err:.3g} > {4 * unit:.3g}")
    finite = ref_lse.isfinite()
    if not (lse[~finite] == float("-inf")).all():
        found.append("rows that see no key must have LSE = -inf")
    off = (lse[finite] - ref_lse[finite]).abs() > 1e-3 * (1 + ref_lse[finite].abs())
    if off.any():
        found.append(f"LSE off in {int(off.sum())} of {int(finite.sum())} rows")
    return found


def _check_all(design, shapes, seed: int) -> None:
    """Every shape run and checked; one assertion naming each shape that failed and how."""
    failures = []
    for i, shape in enumerate(shapes):
        try:
            o, lse, ref_o, ref_lse = _run(design, shape, seed=seed + i)
            found = _problems(o, lse, ref_o, ref_lse, design.params["dtype"])
        except Exception as exc:  # a launch error on one shape is reported with the others
            found = [f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"]
        failures += [f"{shape}: {problem}" for problem in found]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("head_dim", [128, 64])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_fp32_reference_on_every_shape(dtype, head_dim, causal):
    """One compile per (dtype, head_dim, causal), 14 shapes each: 28 shapes per dtype and head_dim."""
    _check_all(attn.design(dtype=dtype, causal=causal, **HEAD_DIM_PARAMS[head_dim]), SHAPES, seed=0)


VARIANTS = [
    {"overlap": False}, {"schedule": "cooperative"}, attn.ONE_WARPGROUP, {**attn.ONE_WARPGROUP, "overlap": False},
    {"persistent": True}, {"persistent": True, "causal": True}, {"tile_n": 96, "kv_stages": 6}, attn.ALIASED,
    {"kv_stages": 2}, {"kv_stages": 5}, {"kv_stages": 5, "causal": True},
    {**attn.HEAD_DIM_64_TWO_WARPGROUPS, "kv_stages": 8, "causal": True}, {"overlap": False, "causal": True},
    {"wg_rows": 128, "head_dim": 64, "tile_n": 64}, {"tile_n": 176, "kv_stages": 3},
    {"tile_n": 176, "kv_stages": 3, "causal": True}, {"tile_n": 144},
    {**attn.HEAD_DIM_64_TWO_WARPGROUPS, "tile_n": 192},
    {**attn.HEAD_DIM_64_TWO_WARPGROUPS, "tile_n": 192, "causal": True},
    attn.THREE_WARPGROUPS, {**attn.THREE_WARPGROUPS, "causal": True}, {**attn.THREE_WARPGROUPS, "dtype": "fp16"},
    {**attn.THREE_WARPGROUPS, "persistent": True, "causal": True}, {**attn.THREE_WARPGROUPS, "schedule": "cooperative"},
    {"persistent": True, "q_stages": 2}, {"persistent": True, "q_stages": 2, "causal": True, "dtype": "fp16"},
    {**attn.THREE_WARPGROUPS, "persistent": True, "q_stages": 2},
    {"turn_after_v": True}, {"turn_after_v": True, "causal": True, "dtype": "fp16"},
    {**attn.THREE_WARPGROUPS, "turn_after_v": True}, {**attn.THREE_WARPGROUPS, "turn_after_v": True, "causal": True},
    {"per_warp_release": True}, {"per_warp_release": True, "causal": True, "persistent": True, "q_stages": 2},
    {**attn.THREE_WARPGROUPS, "per_warp_release": True, "causal": True},
    {"rescale_under_qk": True}, {"rescale_under_qk": True, "causal": True, "dtype": "fp16"},
    {**attn.THREE_WARPGROUPS, "rescale_under_qk": True, "causal": True},
    {"rescale_under_qk": True, "persistent": True, "q_stages": 2},
    {"poly_exp2": 3}, {"poly_exp2": 2, "dtype": "fp16", "causal": True}, {**attn.THREE_WARPGROUPS, "poly_exp2": 3},
    {**attn.THREE_WARPGROUPS, "poly_exp2": 3, "causal": True}, {"poly_exp2": 3, "tile_n": 176, "kv_stages": 3},
    {"poly_exp2": 4, "persistent": True, "q_stages": 2},
    {"epilogue_warps": 1}, {"epilogue_warps": 1, "causal": True, "dtype": "fp16"},
    {**attn.THREE_WARPGROUPS, "epilogue_warps": 1}, {**attn.THREE_WARPGROUPS, "epilogue_warps": 1, "causal": True},
    {"late_pv_wait": True}, {"late_pv_wait": True, "causal": True, "dtype": "fp16"},
    {**attn.THREE_WARPGROUPS, "late_pv_wait": True, "causal": True},
    {"late_pv_wait": True, "persistent": True, "q_stages": 2},
    {"skip_unseen": True, "causal": True}, {**attn.THREE_WARPGROUPS, "skip_unseen": True},
    {**attn.THREE_WARPGROUPS, "skip_unseen": True, "causal": True, "dtype": "fp16"},
    {**attn.THREE_WARPGROUPS, "skip_unseen": True, "causal": True, "rescale_under_qk": True},
    {"skip_unseen": True, "causal": True, "overlap": False},
    {**attn.THREE_WARPGROUPS, "skip_unseen": True, "causal": True, "persistent": True, "q_stages": 2},
    {"convert_before_turn": True}, {"convert_before_turn": True, "causal": True, "dtype": "fp16"},
    {**attn.THREE_WARPGROUPS, "convert_before_turn": True, "causal": True},
    {**attn.THREE_WARPGROUPS, "convert_before_turn": True, "turn_after_v": True},
    {"convert_before_turn": True, "persistent": True, "q_stages": 2},
    {"mask_prefix": True, "mask_bits": True}, {"mask_prefix": True, "mask_bits": True, "causal": True},
    {"mask_bits": True, "causal": True, "dtype": "fp16"}, {"mask_prefix": True, "causal": True, "overlap": False},
    {**attn.THREE_WARPGROUPS, "mask_prefix": True, "mask_bits": True, "causal": True},
    {**attn.THREE_WARPGROUPS, "mask_prefix": True, "mask_bits": True, "causal": True, "persistent": True,
     "q_stages": 2},
    {"mask_prefix": True, "mask_bits": True, "causal": True, "tile_n": 176, "kv_stages": 3},
    {"mask_prefix": True, "mask_bits": True, "causal": True, "schedule": "cooperative"},
    {**attn.THREE_WARPGROUPS, "schedule": "cooperative", "causal": True, "mask_bits": True},
]


@pytest.mark.parametrize("params", VARIANTS, ids=str)
def test_variants_match_fp32_reference(params):
    _check_all(attn.design(**params), SHAPES[:8], seed=100)


#: Problems of more tiles than an H200 has SMs (132), so that a persistent block runs several tiles, the next
#: tile's Q landing in the other stage with ``q_stages=2``: 512, 768 (tails in both sequences, GQA 4) and 135.
MANY_TILES = [(1, 2048, 2048, 32, 4), (3, 1000, 1000, 32, 8), (1, 1, 300, 135, 5)]


#: Causal problems whose K and V overflow the L2 sections of ``causal_order='longest_first'``: (head, batch) pairs
#: in sections of 5, 5, 2 (head_dim 128) and 2, 2, 2, 1 / 5, 2 (64), the last section narrower than the others.
L2_SECTIONS = [(2, 300, 16384, 6, 3), (1, 500, 30000, 7, 7)]


@pytest.mark.parametrize("head_dim", [128, 64])
def test_causal_tiles_in_l2_sections(head_dim):
    design = attn.design(causal=True, causal_order="longest_first", **HEAD_DIM_PARAMS[head_dim])
    _check_all(design, [*L2_SECTIONS, *SHAPES[:8]], seed=300)


@pytest.mark.parametrize("params", [{"persistent": True}, {"persistent": True, "q_stages": 2},
                                    {"persistent": True, "q_stages": 2, "causal": True},
                                    {**attn.THREE_WARPGROUPS, "persistent": True, "q_stages": 2},
                                    {**attn.THREE_WARPGROUPS, "persistent": True, "causal": True,
                                     "skip_unseen": True},
                                    {**attn.THREE_WARPGROUPS, "persistent": True, "q_stages": 2, "causal": True,
                                     "causal_order": "longest_first"}], ids=str)
def test_persistent_blocks_that_run_several_tiles(params):
    _check_all(attn.design(**params), MANY_TILES, seed=200)


@pytest.mark.parametrize(("causal_order", "snake_rounds"),
                         [("longest_first", False), ("longest_first_all", False), ("longest_first_zigzag", False),
                          ("longest_first", True), ("longest_first_all", True)])
@pytest.mark.parametrize("head_dim", [128, 64])
def test_persistent_causal_tiles_in_l2_sections(head_dim, causal_order, snake_rounds):
    """A43: a persistent block's causal tiles in LPT order, the pairs in L2 sections (the last one narrower); A45:
    the same order over all pairs as one section; A46: every other section shortest first; A47: every other round
    of tiles in reverse."""
    design = attn.design(causal=True, causal_order=causal_order, persistent=True, q_stages=2,
                         snake_rounds=snake_rounds, **HEAD_DIM_PARAMS[head_dim])
    _check_all(design, [*L2_SECTIONS, *MANY_TILES[:2]], seed=301)


def test_a_scale_of_the_callers_own():
    design = attn.design()
    o, lse, ref_o, ref_lse = _run(design, (2, 300, 500, 4, 2), seed=9, scale=0.37)
    assert not _problems(o, lse, ref_o, ref_lse, "bf16")


#: Run in a process that cannot import tslab, on the exported package: O and LSE against ``reference`` (its source
#: is sent along), run() into the caller's tensors, refusals by name, the custom op inside torch.compile.
PACKAGE_SCRIPT = '''
import importlib.abc, json, math, sys


class NoTslab(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "tslab" or name.startswith("tslab."):
            raise ImportError("tslab is not installed here")


sys.meta_path.insert(0, NoTslab())
sys.path.insert(0, sys.argv[1])
import torch

kernel = __import__(sys.argv[2])
dtype = getattr(torch, kernel.DTYPE)
d = kernel.HEAD_DIM
gen = torch.Generator(device="cuda").manual_seed(0)
results = {"cases": [], "refusals": {}}


def inputs(b, s_q, s_k, h, h_kv):
    return (torch.randn((b, s_q, h, d), device="cuda", dtype=dtype, generator=gen),
            torch.randn((b, s_k, h_kv, d), device="cuda", dtype=dtype, generator=gen),
            torch.randn((b, s_k, h_kv, d), device="cuda", dtype=dtype, generator=gen))


def record(what, q, k, v, o, lse, causal, scale):
    ref_o, ref_lse = reference(q, k, v, causal, scale)
    seen = ref_lse.isfinite()
    results["cases"].append({
        "case": what, "o_nan": bool(o.isnan().any()),
        "o_err": float((o.float() - ref_o).norm() / ref_o.norm().clamp_min(1e-30)),
        "lse_unseen_ok": bool((lse[~seen] == float("-inf")).all()),
        "lse_err": float(((lse[seen] - ref_lse[seen]).abs() / (1 + ref_lse[seen].abs())).max())})


for shape in SHAPES:
    q, k, v = inputs(*shape)
    for causal in (False, True):
        o, lse = kernel.attention(q, k, v, causal=causal)
        record([shape, causal], q, k, v, o, lse, causal, 1 / math.sqrt(d))

q, k, v = inputs(2, 300, 500, 4, 2)
o = torch.full_like(q, float("nan"))
lse = torch.full((2, 4, 300), float("nan"), device="cuda")
kernel.run(q, k, v, o, lse, causal=True, scale=0.37)
record(["run", "scale 0.37"], q, k, v, o, lse, True, 0.37)


def refusal(name, call):
    try:
        call()
    except kernel.ExportedKernelError as exc:
        results["refusals"][name] = str(exc)


refusal("layout", lambda: kernel.attention(q.transpose(1, 2), k, v))
refusal("dtype", lambda: kernel.attention(q, k.half(), v))
refusal("heads", lambda: kernel.attention(q[:, :, :3].contiguous(), k, v))
op = getattr(torch.ops, sys.argv[2]).attention
refusal("backward", lambda: op(q.detach().requires_grad_(), k, v)[0].float().sum().backward())


def block(q, k, v):
    o, lse = op(q, k, v, causal=True)
    return o * 2, lse - 1


q, k, v = inputs(2, 640, 640, 8, 2)
compiled = torch.compile(block, fullgraph=True)(q, k, v)
eager = block(q, k, v)
results["compiled_as_eager"] = all(torch.equal(a, b) for a, b in zip(compiled, eager))
o, lse = op(q, k, v, causal=True)
record(["torch.ops", True], q, k, v, o, lse, True, 1 / math.sqrt(d))

# CUDA graphs, the caller's stream, two threads (tests/package_calls.py, which imports no tslab)
sys.path.insert(0, sys.argv[3])
from package_calls import graph_replay_equals_eager, launches_on, two_threads_on_two_streams

q, k, v = inputs(2, 1000, 777, 8, 2)
for causal in (False, True):
    o, lse = torch.empty_like(q), torch.empty((2, 8, 1000), device="cuda")
    results[f"graph causal={causal}"] = graph_replay_equals_eager(
        lambda: kernel.run(q, k, v, o, lse, causal=causal), [o, lse])
held = {}


def allocate():  # attention() allocates o and lse from the graph's pool during capture
    held["o"], held["lse"] = kernel.attention(q, k, v, causal=True)


allocate()
eager = [held["o"].clone(), held["lse"].clone()]
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    allocate()
held["o"].fill_(-7)
graph.replay()
torch.cuda.synchronize()
results["graph of attention()"] = torch.equal(held["o"], eager[0]) and torch.equal(held["lse"], eager[1])
big = inputs(4, 2048, 2048, 8, 8)
o_big, lse_big = torch.empty_like(big[0]), torch.empty((4, 8, 2048), device="cuda")
results["streams"] = launches_on(lambda stream: kernel.run(*big, o_big, lse_big, stream=stream), o_big)
problems = [inputs(1, 300, 500, 4, 2) for _ in range(2)]
wants = [kernel.attention(*p, causal=True) for p in problems]
outs = [(torch.empty_like(w[0]), torch.empty_like(w[1])) for w in wants]


def threaded(thread):
    kernel.run(*problems[thread], *outs[thread], causal=True)
    return torch.cat([outs[thread][0].flatten().float(), outs[thread][1].flatten()]), torch.cat(
        [wants[thread][0].flatten().float(), wants[thread][1].flatten()])


results["threads"] = two_threads_on_two_streams(threaded)
results["tslab_imported"] = any(m == "tslab" or m.startswith("tslab.") for m in sys.modules)
print(json.dumps(results))
'''


def test_exported_package_runs_in_a_fresh_process_without_tslab(tmp_path):
    """``export`` of the default design (both causal variants), used where tslab cannot be imported: causal and not,
    GQA 1, 2, 4 and 8, tails, one query row, more queries than keys, the caller's scale and tensors, refusals by
    name, and ``torch.ops.<name>.attention`` inside ``torch.compile(fullgraph=True)``."""
    import inspect
    import json
    import subprocess
    import sys

    from tslab.gpu.export import export

    out = export(attn.design(), tmp_path / "tslab_attention_gpu_pkg")
    shapes = [(1, 128, 128, 1, 1), (3, 77, 300, 8, 2), (2, 513, 129, 4, 1), (1, 1, 777, 8, 1), (2, 1000, 1000, 4, 4)]
    script = f"SHAPES = {shapes!r}\n\n" + inspect.getsource(reference) + PACKAGE_SCRIPT
    tests = str(Path(__file__).resolve().parent)
    ran = subprocess.run([sys.executable, "-c", script, str(out.parent), out.name, tests], capture_output=True,
                         text=True, timeout=900, check=False, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    results = json.loads(ran.stdout.strip().splitlines()[-1])
    assert not results["tslab_imported"]
    assert len(results["cases"]) == 2 * len(shapes) + 2
    for case in results["cases"]:
        assert not case["o_nan"] and case["o_err"] <= 4 * 2.0**-8 and case["lse_unseen_ok"], case
        assert case["lse_err"] <= 1e-3, case
    assert results["compiled_as_eager"]
    refusals = results["refusals"]
    assert refusals["layout"].startswith("q: strides (153600, 128, 512, 1) are not the compact row-major strides")
    assert refusals["dtype"].startswith("k: dtype float16 != bfloat16")
    assert refusals["heads"].startswith("k: shape (2, 500, 2, 128): q's heads=3 is not a multiple of heads_kv=2")
    assert refusals["backward"].startswith(f"torch.ops.{out.name}.attention: forward only")
    assert results["graph causal=False"] and results["graph causal=True"] and results["graph of attention()"]
    assert results["streams"] == {"waited_for_its_stream": True, "written_after": True}
    assert results["threads"] == [True, True]


@pytest.mark.parametrize("head_dim", [128, 64])
def test_the_tuned_dispatch_package_passes_its_own_tests(tmp_path, head_dim):
    """``tslab export attention_sm90 --tuned`` (``--param head_dim=64`` too): each design its calls pick (causal and
    not, either side of each seqlen_k bound) against fp32 by the package's own test_kernel.py, which imports no
    tslab; on the GPU none of its tests skips."""
    import re
    import subprocess
    import sys

    from tslab.gpu.export import export
    from tslab.kernels import attention_sm90_dispatch

    out = export(attention_sm90_dispatch.tuned("bf16", head_dim), tmp_path / f"tslab_attention_tuned_d{head_dim}_pkg")
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(out)],
                         capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert re.search(r"^\d+ passed in ", ran.stdout.strip().splitlines()[-1]), ran.stdout[-1000:]
