"""Source text of an exported attention package (``RULES.package == 'attention'``), after the common part of
:mod:`tslab.compiling.templates`.

The package holds the design compiled once per value of its ``variants`` param (``causal``: two objects) with
runtime batch, sequence lengths and heads, and picks the object by the call's ``causal``. Before a launch it checks
what the compiled kernel takes: the arch, then (:func:`check_args`, which needs no GPU) that every tensor is a CUDA
tensor on one device, of the package's dtype and head_dim, compact row-major (what the compile's fake tensors
promised: ``fake_args`` in :mod:`tslab.kernels.attention_sm90_launch`) and 16-byte aligned, K and V of one shape,
one batch, and heads a multiple of heads_kv. Placeholders as in :mod:`tslab.compiling.templates`.
"""

from __future__ import annotations

from typing import Any

DOC = '''"""$kernel compiled for $arch: attention forward, O = softmax(Q K^T * scale [causal mask]) V and the row
log-sum-exp, in $dtype with head_dim $head_dim (exported by tslab).

    import torch, $name
    q = torch.randn(2, 4096, 32, $head_dim, device="cuda", dtype=torch.$dtype)   # (batch, seqlen_q, heads, head_dim)
    k = torch.randn(2, 4096, 8, $head_dim, device="cuda", dtype=torch.$dtype)    # (batch, seqlen_k, heads_kv, head_dim)
    v = torch.randn_like(k)
    o, lse = $name.attention(q, k, v, causal=True)   # o like q; lse (batch, heads, seqlen_q) in float32
    $name.run(q, k, v, o, lse, causal=True)          # the same into tensors of your own
    o, lse = torch.ops.$name.attention(q, k, v, True)   # a torch custom op (works inside torch.compile)

flash-attn's layout and conventions: heads a multiple of heads_kv (grouped-query attention), any sequence lengths,
the causal mask aligned bottom-right (a query row that sees no key gets O = 0 and LSE = -inf), scale 1/sqrt(head_dim)
unless given. Every tensor compact row-major (.contiguous()), 16-byte aligned, on one CUDA device.
Shapes: $rules.
Forward only: there is no backward kernel; a backward through the custom op raises ExportedKernelError.
Designs: $designs.
Needs only nvidia-cutlass-dsl (its runtime library), torch and a GPU of arch $arch; nothing is recompiled.
design.json holds the designs, VERDICT.txt the checker's verdict each was built from.
"""
'''

BODY = '''
import math
from typing import Optional

#: Which design a call uses: DESIGNS[i] was compiled with VARIANTS["param"] = VARIANTS["values"][i].
VARIANTS: dict[str, Any] = META["variants"]
#: The head dimension every design was compiled for (a compile-time constant of the kernel).
HEAD_DIM: int = DESIGNS[0]["design"]["params"]["head_dim"]
#: The head dimensions tslab compiles, for the fix when a tensor's differs.
_HEAD_DIMS = $head_dims
#: The design param each torch dtype name corresponds to, for the fix when a tensor's dtype differs.
_DESIGN_DTYPES = {"float16": "fp16", "bfloat16": "bf16"}
_AXES = {"q": "(batch, seqlen_q, heads, head_dim)", "k": "(batch, seqlen_k, heads_kv, head_dim)",
         "v": "(batch, seqlen_k, heads_kv, head_dim)", "o": "(batch, seqlen_q, heads, head_dim)",
         "lse": "(batch, heads, seqlen_q)"}


def design_for(causal: bool) -> dict[str, Any]:
    """The entry of DESIGNS (its design, verdict, object file) a call with ``causal`` uses."""
    return DESIGNS[_index_for(causal)]


def _index_for(causal: Any) -> int:
    if not isinstance(causal, bool):
        raise ExportedInputError(f"causal={causal!r}: expected True or False")
    return VARIANTS["values"].index(causal)


def _scale(scale: Any) -> float:
    if scale is None:
        return 1.0 / math.sqrt(HEAD_DIM)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise ExportedInputError(f"scale={scale!r}: expected a finite float (None: 1/sqrt(head_dim) = "
                                 f"{1.0 / math.sqrt(HEAD_DIM):.6g})")
    return float(scale)


def _dtype(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def _problem(q: Any, k: Any, v: Any, o: Any = None, lse: Any = None, *, devices: bool = True) -> tuple:
    """Every rule of :func:`check_args` but the pointers' alignment (what a fake tensor can be asked; the fake
    implementation leaves the devices out too: a meta tensor has none)."""
    named = (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse))
    given = [(n, t) for n, t in named if t is not None or n in ("q", "k", "v")]
    for name, t in given:
        if not all(hasattr(t, attr) for attr in ("shape", "dtype", "device", "stride")):
            raise ExportedInputError(f"{name}: expected a CUDA torch.Tensor {_AXES[name]}, got {type(t).__name__}")
        if len(t.shape) != len(_AXES[name].split(",")):
            raise ExportedInputError(f"{name}: shape {tuple(t.shape)} has {len(t.shape)} dimensions; attention "
                                     f"takes {name} as {_AXES[name]}")
    for name, t in given if devices else ():
        if not getattr(t, "is_cuda", False):
            raise ExportedInputError(f"{name}: on {t.device}; attention runs on a CUDA device: pass {name}.cuda()")
        if t.device != q.device:
            raise ExportedInputError(f"{name}: on {t.device} but q is on {q.device}; the tensors of one call must "
                                     f"be on one device: pass {name}.to(q.device)")
    for name, t in given:
        want = "float32" if name == "lse" else DTYPE
        if _dtype(t) != want:
            fix = f"convert it ({name}.to(torch.{want}))" if name != "lse" else "pass a float32 lse"
            if name != "lse" and _dtype(t) in _DESIGN_DTYPES:
                fix += (f" or export the design again with --param dtype={_DESIGN_DTYPES[_dtype(t)]} for "
                        f"{_dtype(t)} tensors")
            what = "the LSE's dtype" if name == "lse" else "the dtype this package was compiled for (q, k, v, o)"
            raise ExportedInputError(f"{name}: dtype {_dtype(t)} != {want}, {what}; {fix}")
    for name, t in given:
        if name != "lse" and t.shape[3] != HEAD_DIM:
            raise ExportedInputError(f"{name}: shape {tuple(t.shape)}: head_dim {t.shape[3]} != {HEAD_DIM}, the "
                                     f"head_dim this package was compiled for; {_head_dim_fix(t.shape[3])}")
    b, s_q, h, _ = q.shape
    s_k, h_kv = k.shape[1], k.shape[2]
    if k.shape[0] != b:
        raise ExportedInputError(f"k: shape {tuple(k.shape)}: batch {k.shape[0]} != q's {b}; q, k and v take one "
                                 "batch")
    if tuple(v.shape) != tuple(k.shape):
        raise ExportedInputError(f"v: shape {tuple(v.shape)} != k's {tuple(k.shape)}; v has one row per key, "
                                 "(batch, seqlen_k, heads_kv, head_dim) like k")
    _check_shape("(batch, seqlen_q, seqlen_k, heads, heads_kv)", (b, s_q, s_k, h, h_kv))
    if h % h_kv:
        raise ExportedInputError(f"k: shape {tuple(k.shape)}: q's heads={h} is not a multiple of heads_kv={h_kv}; "
                                 "grouped-query attention shares each K/V head among the same number of query "
                                 "heads: give k and v a number of heads that divides q's")
    for name, t, want in (("o", o, (b, s_q, h, HEAD_DIM)), ("lse", lse, (b, h, s_q))):
        if t is not None and tuple(t.shape) != want:
            raise ExportedInputError(f"{name}: shape {tuple(t.shape)} != {want}, the {_AXES[name]} of q, k, v")
    for name, t in given:
        shape, stride = tuple(t.shape), tuple(t.stride())
        compact = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
        if any(n > 1 and s != c for n, s, c in zip(shape, stride, compact)):
            raise ExportedInputError(f"{name}: strides {stride} are not the compact row-major strides {compact} of "
                                     f"shape {shape}; the kernel reads {name} as one dense {_AXES[name]} block: "
                                     f"pass {name}.contiguous()")
    return b, s_q, s_k, h, h_kv


def _head_dim_fix(got: int) -> str:
    if got in _HEAD_DIMS:
        return f"export the design again with --param head_dim={got} for such tensors"
    larger = [d for d in _HEAD_DIMS if d > got]
    if larger:
        return (f"pad head_dim of q, k, v with zeros to {min(larger)}, pass scale=1/sqrt({got}) and keep "
                f"o[..., :{got}] (export with --param head_dim={min(larger)} for that)")
    return f"tslab's attention takes head_dim {' or '.join(map(str, _HEAD_DIMS))}"


def check_args(q: Any, k: Any, v: Any, o: Any = None, lse: Any = None) -> tuple[int, int, int, int, int]:
    """Raise ExportedInputError naming the rule q, k, v (and o, lse when given) break and its fix; else the problem
    (batch, seqlen_q, seqlen_k, heads, heads_kv). Needs no GPU: run() and attention() check the arch first."""
    problem = _problem(q, k, v, o, lse)
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse)):
        if t is not None and t.data_ptr() % 16:
            raise ExportedInputError(f"{name}: data pointer {t.data_ptr():#x} is not 16-byte aligned; TMA needs "
                                     f"16-byte aligned tensors: pass {name}.clone() (a fresh tensor is aligned)")
    return problem


def _dense(t: Any) -> Any:
    """``t`` (checked compact row-major but for the strides of its extent-1 modes, which address nothing) as a view
    with exactly the compact strides, so its modes' order is the one the kernel was compiled for."""
    shape = tuple(t.shape)
    compact = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
    return t if tuple(t.stride()) == compact else t.as_strided(shape, compact)


def _run_checked(q: Any, k: Any, v: Any, o: Any, lse: Any, index: int, scale: float, stream: Any) -> None:
    import cutlass
    import torch

    with torch.cuda.device(q.device):
        _launch((*map(_dense, (q, k, v, o, lse)), cutlass.Float32(scale)), _stream(q, stream), index)


def run(q: "torch.Tensor", k: "torch.Tensor", v: "torch.Tensor", o: "torch.Tensor",  # noqa: F821
        lse: "torch.Tensor", causal: bool = False, scale: Optional[float] = None,  # noqa: F821
        stream: Any = None) -> None:
    """Write attention of q over k, v into ``o`` (like q) and ``lse`` ((batch, heads, seqlen_q) float32), on
    ``stream`` (default: torch's current stream); ``scale`` defaults to 1/sqrt(head_dim)."""
    index, scale = _index_for(causal), _scale(scale)
    _require_gpu(q)
    check_args(q, k, v, o, lse)
    _run_checked(q, k, v, o, lse, index, scale, stream)


def attention(q: "torch.Tensor", k: "torch.Tensor", v: "torch.Tensor", causal: bool = False,  # noqa: F821
              scale: Optional[float] = None) -> tuple:
    """New ``(o, lse)``: o (batch, seqlen_q, heads, head_dim) like q, lse (batch, heads, seqlen_q) float32."""
    index, scale = _index_for(causal), _scale(scale)
    _require_gpu(q)
    b, s_q, _, h, _ = check_args(q, k, v)
    import torch

    o = torch.empty(tuple(q.shape), device=q.device, dtype=q.dtype)
    lse = torch.empty((b, h, s_q), device=q.device, dtype=torch.float32)
    _run_checked(q, k, v, o, lse, index, scale, None)
    return o, lse


def _register_torch_op() -> Any:
    try:
        import torch
    except ImportError:  # the kernel itself needs no torch
        return None

    @torch.library.custom_op("$name::attention", mutates_args=())
    def attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                     scale: Optional[float] = None) -> tuple[torch.Tensor, torch.Tensor]:
        return attention(q, k, v, causal, scale)

    @attention_op.register_fake
    def _(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
          scale: Optional[float] = None) -> tuple[torch.Tensor, torch.Tensor]:
        _index_for(causal)
        _scale(scale)
        b, s_q, _, h, _ = _problem(q, k, v, devices=False)
        return q.new_empty((b, s_q, h, HEAD_DIM)), q.new_empty((b, h, s_q), dtype=torch.float32)

    def backward(ctx: Any, grad_o: Any, grad_lse: Any) -> tuple:
        raise ExportedKernelError("torch.ops.$name.attention: forward only, this package has no backward kernel; "
                                  "call it on tensors that need no gradient (torch.no_grad()), or train with an "
                                  "attention that has one (torch.nn.functional.scaled_dot_product_attention)")

    attention_op.register_autograd(backward)
    return attention_op


torch_op = _register_torch_op()
'''

TEST = '''"""Checks of the exported attention package: loads without compiling; on a matching GPU with torch, matches an
fp32 torch reference (O and LSE), causal and not, and refuses what it cannot take by name."""

import importlib
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
kernel = importlib.import_module("$name")
#: (batch, seqlen_q, seqlen_k, heads, heads_kv): tails of both sequences, one query row, GQA 1, 4 and 8, more
#: queries than keys (causal rows that see no key).
EXAMPLES = $examples
on_gpu = pytest.mark.skipif(kernel.gpu_arch() != kernel.ARCH, reason="needs a GPU of the exported arch")


def test_loads_every_design_without_compiling():
    assert [callable(kernel.load(i)) for i in range(len(kernel.DESIGNS))] == [True] * len(kernel.DESIGNS)


def test_design_for_follows_the_causal_argument():
    for i, value in enumerate(kernel.VARIANTS["values"]):
        assert kernel.design_for(value) is kernel.DESIGNS[i]
        assert kernel.DESIGNS[i]["design"]["params"][kernel.VARIANTS["param"]] == value


def reference(q, k, v, causal, scale):
    """fp32 attention: O (b, s_q, h, d) and LSE (b, h, s_q); K/V heads repeated for GQA; the causal mask aligned
    bottom-right; a row that sees no key gives O = 0 and LSE = -inf."""
    import torch

    s_q, h, s_k, h_kv = q.shape[1], q.shape[2], k.shape[1], k.shape[2]
    qf, kf, vf = (t.float().transpose(1, 2) for t in (q, k, v))
    kf, vf = (t.repeat_interleave(h // h_kv, dim=1) for t in (kf, vf))
    scores = qf @ kf.transpose(-1, -2) * scale
    if causal:
        rows = torch.arange(s_q, device=q.device)[:, None]
        cols = torch.arange(s_k, device=q.device)[None, :]
        scores = scores.masked_fill(cols > rows + s_k - s_q, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    return (torch.exp(scores - lse[..., None]).nan_to_num(0.0) @ vf).transpose(1, 2), lse


@on_gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", EXAMPLES, ids=str)
def test_matches_an_fp32_reference(shape, causal):
    torch = pytest.importorskip("torch")
    b, s_q, s_k, h, h_kv = shape
    dtype = getattr(torch, kernel.DTYPE)
    q = torch.randn((b, s_q, h, kernel.HEAD_DIM), device="cuda", dtype=dtype)
    k = torch.randn((b, s_k, h_kv, kernel.HEAD_DIM), device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    o, lse = kernel.attention(q, k, v, causal=causal)
    ref_o, ref_lse = reference(q, k, v, causal, 1 / math.sqrt(kernel.HEAD_DIM))
    unit = {"float16": 2.0**-11, "bfloat16": 2.0**-8}[kernel.DTYPE]
    assert not o.isnan().any()
    assert ((o.float() - ref_o).norm() / ref_o.norm().clamp_min(1e-30)).item() <= 4 * unit
    seen = ref_lse.isfinite()
    assert (lse[~seen] == float("-inf")).all()
    assert ((lse[seen] - ref_lse[seen]).abs() <= 1e-3 * (1 + ref_lse[seen].abs())).all()


@on_gpu
def test_refuses_what_it_cannot_take_by_name():
    torch = pytest.importorskip("torch")
    q = torch.randn((1, 64, 4, kernel.HEAD_DIM), device="cuda", dtype=getattr(torch, kernel.DTYPE))
    with pytest.raises(kernel.ExportedInputError, match="not a multiple of heads_kv=3"):
        kernel.attention(q, q[:, :, :3].contiguous(), q[:, :, :3].contiguous())
    with pytest.raises(kernel.ExportedInputError, match=r"not the compact row-major strides .*contiguous\\(\\)"):
        kernel.attention(q.transpose(1, 2), q, q)
'''

#: Problems the package's own test runs: (batch, seqlen_q, seqlen_k, heads, heads_kv).
EXAMPLES = [(1, 128, 128, 2, 2), (2, 1000, 777, 4, 1), (1, 1, 300, 8, 2), (3, 77, 300, 8, 8), (2, 513, 129, 8, 2)]


def fields(params: dict[str, Any], choices: dict[str, tuple]) -> dict[str, str]:
    """The placeholders :data:`DOC` and :data:`BODY` take beyond the common ones, from the design's params and its
    kernel's choices."""
    return {"head_dim": str(params["head_dim"]), "head_dims": repr(tuple(choices.get("head_dim", ())))}
