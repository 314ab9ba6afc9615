"""A GEMM exported by tslab: ``c = a @ b.T`` with fp32 accumulation, ``a`` M x K, ``b`` N x K, ``c`` M x N.

    import torch, my_gemm                  # this package, by its folder's name
    dtype = getattr(torch, my_gemm.DTYPE)
    a = torch.randn(4096, 4096, device="cuda", dtype=dtype)   # M x K, row-major
    b = torch.randn(8192, 4096, device="cuda", dtype=dtype)   # N x K (K-major: B transposed)
    c = my_gemm.gemm(a, b)                 # M x N; or my_gemm.run(a, b, c) into a tensor of your own
    c = torch.ops.my_gemm.gemm(a, b)       # the same as a torch custom op (works inside torch.compile)

A package may hold several designs, one picked per launch by M, or by M and K (``design_for(m, n, k)``). A call
launches on torch's current stream (``stream=`` to pick another) and can be captured in a CUDA graph once it has run
eagerly. Needs nvidia-cutlass-dsl's runtime, apache-tvm-ffi and a GPU of the package's arch; nothing is recompiled.
design.json holds the design(s), VERDICT.txt the checker's verdict each was built from.
"""

# No ``from __future__ import annotations``: torch.library.custom_op reads the op's schema from real annotations.
from typing import Any

from . import _runtime
from ._runtime import ExportedInputError, ExportedKernelError, gpu_arch

__all__ = ["ARCH", "DESIGNS", "DISPATCH", "DTYPE", "META", "SHAPE", "ExportedInputError", "ExportedKernelError",
           "design_for", "gemm", "gpu_arch", "load", "run", "torch_op"]

NAME = __name__.rpartition(".")[2]
_PACKAGE = _runtime.Package(__file__, NAME)
META, DESIGNS, ARCH, DTYPE, SHAPE = _PACKAGE.meta, _PACKAGE.designs, _PACKAGE.arch, _PACKAGE.dtype, _PACKAGE.shape
load = _PACKAGE.load
if __doc__ is not None:
    __doc__ += _PACKAGE.describe()
#: Which design a launch uses: the first rule whose max_m (and max_n, max_k, where it has them) is None or at least
#: the launch's M (N, K); rule "design" is an index into DESIGNS.
DISPATCH: dict[str, Any] = META.get("dispatch") or {"key": "M", "rules": [{"max_m": None, "design": 0}]}
_UNBOUNDED = 1 << 62
_RULES = [(*(_UNBOUNDED if rule.get(f) is None else rule[f] for f in ("max_m", "max_n", "max_k")), rule["design"])
          for rule in DISPATCH["rules"]]
#: The extents besides M a rule bounds ("N", "K").
_ALSO = [name for name, place in (("N", 1), ("K", 2)) if any(r[place] != _UNBOUNDED for r in _RULES)]
_FUNCTIONS, _DEVICES = _PACKAGE.functions, _PACKAGE.devices
#: Each design's smallest (M, N, K); the compiled function checks the multiples itself.
_MIN = [_PACKAGE.minimum(i) or (0, 0, 0) for i in range(len(DESIGNS))]


def design_for(m: int, n: int | None = None, k: int | None = None) -> dict[str, Any]:
    """The entry of DESIGNS (its design, verdict, object file) a launch of ``m`` x ``n`` x ``k`` uses; ``n`` and
    ``k`` may be left out where the pick at ``m`` does not depend on them."""
    for max_m, max_n, max_k, index in _RULES:
        if m > max_m:
            continue
        if (n is None and max_n != _UNBOUNDED) or (k is None and max_k != _UNBOUNDED):
            raise ExportedInputError(f"design_for({m}): at M = {m} this package picks by {' and '.join(_ALSO)} too; "
                                     f"pass design_for(m, n, k), e.g. design_for({m}, 8192, 4096)")
        if (n is None or n <= max_n) and (k is None or k <= max_k):
            return DESIGNS[index]
    return DESIGNS[_index_for(m, n or 0, k or 0)]  # no rule serves it: the same error a launch gets


def _index_for(m: int, n: int, k: int) -> int:
    for max_m, max_n, max_k, index in _RULES:
        if m <= max_m and n <= max_n and k <= max_k:
            return index
    raise ExportedInputError(f"(M, N, K) = {(m, n, k)}: no design of this package serves it (its dispatch: "
                             f"{DISPATCH['rules']})")


def _check(a: Any, b: Any, c: Any) -> int:
    """Every rule of a call, by name: raises naming the first one broken and its fix; else the design's index."""
    _PACKAGE.require_gpu(a)
    for name, t in (("a", a), ("b", b), ("c", c)):
        _PACKAGE.check_tensor(name, t)
    if a.dim() != 2 or b.dim() != 2 or c.dim() != 2:
        raise ExportedInputError(f"a, b and c must be matrices; got {a.dim()}-, {b.dim()}- and {c.dim()}-D")
    (m, k), (n, kb) = a.shape, b.shape
    if kb != k:
        raise ExportedInputError(f"b: shape {tuple(b.shape)}: b is N x K and must have a's K={k} columns "
                                 "(pass B transposed: b = B.T.contiguous())")
    if tuple(c.shape) != (m, n):
        raise ExportedInputError(f"c: shape {tuple(c.shape)} != (M, N) = {(m, n)}")
    index = _index_for(m, n, k)
    _PACKAGE.check_shape("(M, N, K)", (m, n, k), index)
    return index


def run(a: Any, b: Any, c: Any, stream: Any = None) -> None:
    """``c = a @ b.T`` for ``a`` M x K, ``b`` N x K and ``c`` M x N, all row-major, on ``stream`` (default: torch's
    current stream)."""
    try:  # what the compiled function cannot see: the three shapes agree, no extent is below the rule's
        (m, k), (n, kb), (mc, nc) = a.shape, b.shape, c.shape
        index = _index_for(m, n, k)
        low_m, low_n, low_k = _MIN[index]
        fast = (kb == k and mc == m and nc == n and m >= low_m and n >= low_n and k >= low_k and a.is_contiguous()
                and b.is_contiguous() and c.is_contiguous() and a.get_device() in _DEVICES)
    except _runtime.PROBE_ERRORS:
        fast = False
    if not fast:
        index = _check(a, b, c)
    fn = _FUNCTIONS.get(index) or load(index)
    try:
        if stream is None:
            fn(a, b, c)
        else:
            with _runtime.on_stream(stream, a):
                fn(a, b, c)
    except _runtime.ABI_ERRORS as exc:
        _check(a, b, c)
        raise _PACKAGE.refused(f"{NAME}.run", exc) from exc


def gemm(a: Any, b: Any) -> Any:
    """A new M x N matrix ``a @ b.T``."""
    try:
        c = a.new_empty((a.shape[0], b.shape[0]))
    except _runtime.PROBE_ERRORS:
        _check(a, b, a)  # names what a or b is not
        raise ExportedInputError("a: gemm() allocates its result with torch: pass torch.Tensor matrices, or call "
                                 "run(a, b, c) with a c of your own") from None
    run(a, b, c)
    return c


def _fake(a: Any, b: Any) -> Any:
    return a.new_empty((a.shape[0], b.shape[0]))


def _backward(ctx: Any, grad: Any) -> tuple:
    # Gradients by torch's own matmul: the transposed products need not meet this kernel's shape rules.
    a, b = ctx.saved_tensors
    return grad @ b, grad.T @ a


#: ``torch.ops.<package>.gemm(a, b)``, the same as gemm() (works inside torch.compile, has gradients); None without
#: torch.
torch_op = _runtime.register_op(f"{NAME}::gemm", "(Tensor a, Tensor b) -> Tensor", gemm, _fake, _backward)
