"""An attention forward exported by tslab: O = softmax(Q K^T * scale [causal mask]) V and the row log-sum-exp.

    import torch, my_attention             # this package, by its folder's name
    dtype, d = getattr(torch, my_attention.DTYPE), my_attention.HEAD_DIM
    q = torch.randn(2, 4096, 32, d, device="cuda", dtype=dtype)   # (batch, seqlen_q, heads, head_dim)
    k = torch.randn(2, 4096, 8, d, device="cuda", dtype=dtype)    # (batch, seqlen_k, heads_kv, head_dim)
    v = torch.randn_like(k)
    o, lse = my_attention.attention(q, k, v, causal=True)   # o like q; lse (batch, heads, seqlen_q) in float32
    my_attention.run(q, k, v, o, lse, causal=True)          # the same into tensors of your own
    o, lse = torch.ops.my_attention.attention(q, k, v, True)   # a torch custom op (works inside torch.compile)

flash-attn's layout and conventions: heads a multiple of heads_kv (grouped-query attention), any sequence lengths,
the causal mask aligned bottom-right (a query row that sees no key gets O = 0 and LSE = -inf), scale
1/sqrt(head_dim) unless given. Every tensor compact row-major (.contiguous()), 16-byte aligned, on one CUDA device.
The package holds one design per value of causal, or several picked by causal and seqlen_k (a dispatch:
``tslab export attention_sm90 --tuned``); ``design_for(causal, seqlen_k)`` is the one a call uses. Forward only: a
backward through the custom op raises ExportedKernelError. A call launches on torch's current stream (``stream=`` to
pick another) and can be captured in a CUDA graph once it has run eagerly. Needs nvidia-cutlass-dsl's runtime,
apache-tvm-ffi, torch and a GPU of the package's arch; nothing is recompiled. design.json holds the designs,
VERDICT.txt the checker's verdict each was built from.
"""

# No ``from __future__ import annotations``: torch.library.custom_op reads the op's schema from real annotations.
import math
from operator import ge
from typing import Any

from . import _runtime
from ._runtime import ExportedInputError, ExportedKernelError, gpu_arch

__all__ = ["ARCH", "DESIGNS", "DISPATCH", "DTYPE", "HEAD_DIM", "META", "SHAPE", "VARIANTS", "ExportedInputError",
           "ExportedKernelError", "attention", "check_args", "design_for", "gpu_arch", "load", "run", "torch_op"]

NAME = __name__.rpartition(".")[2]
_PACKAGE = _runtime.Package(__file__, NAME)
META, DESIGNS, ARCH, DTYPE, SHAPE = _PACKAGE.meta, _PACKAGE.designs, _PACKAGE.arch, _PACKAGE.dtype, _PACKAGE.shape
load = _PACKAGE.load
if __doc__ is not None:
    __doc__ += _PACKAGE.describe()
#: The design param a call picks by (causal) and its values: DESIGNS[i] was compiled with VARIANTS["param"] =
#: VARIANTS["values"][i], or for a dispatch with its rule's value.
VARIANTS: dict[str, Any] = META.get("variants") or {
    "param": META["dispatch"]["variant"],
    "values": list(dict.fromkeys(rule[META["dispatch"]["variant"]] for rule in META["dispatch"]["rules"]))}
#: A dispatch's rules (None for one design per causal value): a call with causal = c uses the first rule of c whose
#: max_seqlen_k is None or at least the call's seqlen_k (rule "design" is an index into DESIGNS).
DISPATCH: dict[str, Any] | None = META.get("dispatch")
#: The head dimension every design was compiled for (a compile-time constant of the kernel).
HEAD_DIM: int = DESIGNS[0]["design"]["params"]["head_dim"]
#: The head dimensions tslab compiles, for the fix when a tensor's differs.
_HEAD_DIMS: tuple[int, ...] = tuple(META["about"]["head_dims"])
#: The design param each torch dtype name corresponds to, for the fix when a tensor's dtype differs.
_DESIGN_DTYPES = {"float16": "fp16", "bfloat16": "bf16"}
_AXES = {"q": "(batch, seqlen_q, heads, head_dim)", "k": "(batch, seqlen_k, heads_kv, head_dim)",
         "v": "(batch, seqlen_k, heads_kv, head_dim)", "o": "(batch, seqlen_q, heads, head_dim)",
         "lse": "(batch, heads, seqlen_q)"}
_PROBLEM = "(batch, seqlen_q, seqlen_k, heads, heads_kv)"
_FUNCTIONS, _DEVICES = _PACKAGE.functions, _PACKAGE.devices
#: Each design's smallest (batch, seqlen_q, seqlen_k, heads, heads_kv).
_MIN = [_PACKAGE.minimum(i) for i in range(len(DESIGNS))]
#: Per causal value, its rules (max_seqlen_k or None, design index) in ascending max_seqlen_k.
_RULES: dict[bool, tuple[tuple[Any, int], ...]] = (
    {value: ((None, i),) for i, value in enumerate(VARIANTS["values"])} if DISPATCH is None else
    {value: tuple((rule["max_seqlen_k"], rule["design"]) for rule in DISPATCH["rules"] if rule["causal"] is value)
     for value in VARIANTS["values"]})
try:
    from torch import empty_like as _empty_like
    from torch import float32 as _FLOAT32
except ImportError:  # attention() allocates its outputs with torch; run() takes any DLPack tensors
    _FLOAT32 = "float32"

    def _empty_like(t: Any) -> Any:
        return t.new_empty(t.shape)
_DEFAULT_SCALE = 1.0 / math.sqrt(HEAD_DIM)


def design_for(causal: bool, seqlen_k: int | None = None) -> dict[str, Any]:
    """The entry of DESIGNS (its design, verdict, object file) a call with ``causal`` and ``seqlen_k`` keys uses
    (``seqlen_k`` may be left out where the package picks by causal alone)."""
    if seqlen_k is None:
        rules = _rules(causal)
        if len(rules) > 1:
            raise ExportedInputError(f"design_for(causal={causal!r}): this package picks by seqlen_k too "
                                     f"(max_seqlen_k {', '.join(str(b) for b, _ in rules)}): pass seqlen_k=...")
        return DESIGNS[rules[0][1]]
    if isinstance(seqlen_k, bool) or not isinstance(seqlen_k, int) or seqlen_k < 1:
        raise ExportedInputError(f"seqlen_k={seqlen_k!r}: expected a positive int, the number of keys")
    return DESIGNS[_index_for(causal, seqlen_k)]


def _rules(causal: Any) -> tuple[tuple[Any, int], ...]:
    if causal.__class__ is not bool:
        raise ExportedInputError(f"causal={causal!r}: expected True or False")
    return _RULES[causal]


def _index_for(causal: Any, seqlen_k: int) -> int:
    for bound, index in _rules(causal):
        if bound is None or seqlen_k <= bound:
            return index
    raise AssertionError("the last rule of each causal value serves every seqlen_k")


def _seqlen_k(k: Any) -> int:
    """k's seqlen_k where it has one; else 1 (the launch's checks then name what k is not)."""
    try:
        return k.shape[1]
    except _runtime.PROBE_ERRORS:
        return 1


def _scale(scale: Any) -> float:
    if scale is None:
        return _DEFAULT_SCALE
    if scale.__class__ is float and math.isfinite(scale):
        return scale
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise ExportedInputError(f"scale={scale!r}: expected a finite float (None: 1/sqrt(head_dim) = "
                                 f"{_DEFAULT_SCALE:.6g})")
    return float(scale)


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
        if _runtime.dtype_name(t) != want:
            got = _runtime.dtype_name(t)
            fix = f"convert it ({name}.to(torch.{want}))" if name != "lse" else "pass a float32 lse"
            if name != "lse" and got in _DESIGN_DTYPES:
                fix += f" or export the design again with --param dtype={_DESIGN_DTYPES[got]} for {got} tensors"
            what = "the LSE's dtype" if name == "lse" else "the dtype this package was compiled for (q, k, v, o)"
            raise ExportedInputError(f"{name}: dtype {got} != {want}, {what}; {fix}")
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
    _PACKAGE.check_shape(_PROBLEM, (b, s_q, s_k, h, h_kv))
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
        if any(n > 1 and s != c for n, s, c in zip(shape, stride, compact, strict=True)):
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
    with exactly the compact strides, the layout the kernel was compiled for."""
    shape = tuple(t.shape)
    compact = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
    return t if tuple(t.stride()) == compact else t.as_strided(shape, compact)


def _fits(q: Any, k: Any, v: Any, o: Any, lse: Any, index: int) -> bool:
    """What the compiled function cannot see, in a few compares: the shapes agree with each other and with the
    rule's smallest extents, heads is a multiple of heads_kv, every tensor is compact, the device was checked."""
    b, s_q, h, _ = q.shape
    b_k, s_k, h_kv, _ = k.shape
    return (b_k == b and v.shape == k.shape and o.shape == q.shape and lse.shape == (b, h, s_q)
            and h % h_kv == 0 and all(map(ge, (b, s_q, s_k, h, h_kv), _MIN[index])) and q.is_contiguous()
            and k.is_contiguous() and v.is_contiguous() and o.is_contiguous() and lse.is_contiguous()
            and q.get_device() in _DEVICES)


def _launch(q: Any, k: Any, v: Any, o: Any, lse: Any, index: int, scale: float, stream: Any) -> None:
    """Launch design ``index``; its arguments were checked, or are checked by name when the kernel refuses them."""
    try:
        fast = _fits(q, k, v, o, lse, index)
    except _runtime.PROBE_ERRORS:
        fast = False
    if not fast:
        _PACKAGE.require_gpu(q)
        check_args(q, k, v, o, lse)
    fn = _FUNCTIONS.get(index) or load(index)
    try:
        if stream is None:
            fn(q, k, v, o, lse, scale)
        else:
            with _runtime.on_stream(stream, q):
                fn(q, k, v, o, lse, scale)
    except _runtime.ABI_ERRORS as exc:
        _PACKAGE.require_gpu(q)
        check_args(q, k, v, o, lse)
        # Every rule holds: an extent-1 mode's stride (which addresses nothing) may still differ from what the
        # compile promised; the compact view of each tensor is the same data.
        try:
            if stream is None:
                fn(*map(_dense, (q, k, v, o, lse)), scale)
            else:
                with _runtime.on_stream(stream, q):
                    fn(*map(_dense, (q, k, v, o, lse)), scale)
        except _runtime.ABI_ERRORS as again:
            raise _PACKAGE.refused(f"{NAME}.run", again) from exc


def run(q: Any, k: Any, v: Any, o: Any, lse: Any, causal: bool = False, scale: float | None = None,
        stream: Any = None) -> None:
    """Write attention of q over k, v into ``o`` (like q) and ``lse`` ((batch, heads, seqlen_q) float32), on
    ``stream`` (default: torch's current stream); ``scale`` defaults to 1/sqrt(head_dim)."""
    _launch(q, k, v, o, lse, _index_for(causal, _seqlen_k(k)), _scale(scale), stream)


def attention(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> tuple:
    """New ``(o, lse)``: o (batch, seqlen_q, heads, head_dim) like q, lse (batch, heads, seqlen_q) float32."""
    index, scale = _index_for(causal, _seqlen_k(k)), _scale(scale)
    try:
        b, s_q, h, _ = q.shape
        o = _empty_like(q)
        lse = q.new_empty((b, h, s_q), dtype=_FLOAT32)
    except _runtime.PROBE_ERRORS:
        _PACKAGE.require_gpu(q)
        check_args(q, k, v)  # names what q, k or v is not
        raise ExportedInputError("q: attention() allocates o and lse with torch: pass torch tensors, or call "
                                 "run(q, k, v, o, lse) with tensors of your own") from None
    _launch(q, k, v, o, lse, index, scale, None)
    return o, lse


def _fake(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> tuple:
    _rules(causal)
    _scale(scale)
    b, s_q, _, h, _ = _problem(q, k, v, devices=False)
    return q.new_empty((b, s_q, h, HEAD_DIM)), q.new_empty((b, h, s_q), dtype=_FLOAT32)


def _backward(ctx: Any, grad_o: Any, grad_lse: Any) -> tuple:
    raise ExportedKernelError(f"torch.ops.{NAME}.attention: forward only, this package has no backward kernel; "
                              "call it on tensors that need no gradient (torch.no_grad()), or train with an "
                              "attention that has one (torch.nn.functional.scaled_dot_product_attention)")


#: ``torch.ops.<package>.attention(q, k, v, causal, scale)``, the same as attention() (works inside torch.compile;
#: a backward through it raises ExportedKernelError); None without torch.
torch_op = _runtime.register_op(
    f"{NAME}::attention", "(Tensor q, Tensor k, Tensor v, bool causal=False, float? scale=None) -> (Tensor, Tensor)",
    attention, _fake, _backward)
