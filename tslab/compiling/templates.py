"""Source text of the files an exported package holds (filled in by :mod:`tslab.gpu.export`).

A package is one of three kinds: a copy (``run(src, dst)``, ``copy(src)``), a GEMM (``run(a, b, c)``,
``gemm(a, b)``) or an attention forward (``run(q, k, v, o, lse, causal)``, ``attention(q, k, v, causal)``, its
text in :mod:`tslab.compiling.attention_template`). Each checks the GPU's arch and every tensor before a launch and
names the rule a tensor breaks (an ``ExportedInputError``, a ``ValueError``), and each registers a ``torch.library``
custom op with a fake (meta) implementation when torch is importable.
A package holds the designs in ``DESIGNS``, each compiled into its own object file: one; or several, of which one
is picked per launch: for a GEMM exported from a ``Dispatch``, by M (``DISPATCH``; a single design is a dispatch of
one rule), for a kernel whose rules name ``variants`` (attention's ``causal``), by the call's argument.
Placeholders are ``string.Template``'s ``$name``. The package has no ``from __future__ import annotations``:
``torch.library.custom_op`` reads the op's schema from real annotations.
"""

from __future__ import annotations

from string import Template
from typing import Any

from . import attention_template
from .package_loader import LOAD_FUNCTION

#: The package kinds these templates write (a kernel's ``RULES.package``).
KINDS = ("copy", "gemm", "attention")

COPY_DOC = '''"""$kernel compiled for $arch: copies a $dtype tensor (exported by tslab).

    import torch, $name
    src = torch.randn($example, device="cuda").to(torch.$dtype)
    dst = $name.copy(src)                  # or $name.run(src, dst) into a tensor of your own
    dst = torch.ops.$name.copy(src)        # the same as a torch custom op (works inside torch.compile)

Shapes: $rules.
Needs only nvidia-cutlass-dsl (its runtime library) and a GPU of arch $arch; nothing is recompiled.
design.json holds the design, VERDICT.txt the checker's verdict it was built from.
"""
'''

GEMM_DOC = '''"""$kernel compiled for $arch: C = A @ B.T in $dtype with fp32 accumulation (exported by tslab).

    import torch, $name
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.$dtype)   # M x K, row-major
    b = torch.randn(8192, 4096, device="cuda", dtype=torch.$dtype)   # N x K (K-major: B transposed)
    c = $name.gemm(a, b)                   # M x N; or $name.run(a, b, c) into a tensor of your own
    c = torch.ops.$name.gemm(a, b)         # the same as a torch custom op (works inside torch.compile)

Shapes: $rules.
Designs: $designs.
Needs only nvidia-cutlass-dsl (its runtime library) and a GPU of arch $arch; nothing is recompiled.
design.json holds the design(s), VERDICT.txt the checker's verdict each was built from.
"""
'''

COMMON = '''
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
META = json.loads((HERE / "design.json").read_text())
ARCH: str = META["arch"]
DTYPE: str = META["dtype"]
#: None: any shape the rules in META["shape_rules"] accept; else the one shape this package was compiled for.
SHAPE: tuple[int, ...] | None = None if META["dynamic"] else tuple(META["shape"])
#: The compiled designs, each with its object file, shape rule and checks (several for a GEMM dispatch by M, or
#: one per value of a kernel's variants param: attention's causal).
DESIGNS: list[dict[str, Any]] = META.get("designs") or [dict(META, object="kernel.o", prefix="kernel")]
_modules: dict[int, Any] = {}


class ExportedKernelError(RuntimeError):
    """A launch this exported kernel cannot do (no GPU, the wrong GPU, or an argument it cannot take)."""


class ExportedInputError(ExportedKernelError, ValueError):
    """An argument this kernel cannot take (its shape, dtype, layout or device); the message names the rule and
    the fix."""


def gpu_arch(index: int = 0) -> str | None:
    """Arch string of GPU ``index`` (e.g. 'sm_90a'), or None without a driver or GPU."""
    try:
        from cuda.bindings import driver as cu

        (err,) = cu.cuInit(0)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        err, dev = cu.cuDeviceGet(index)
        if err != cu.CUresult.CUDA_SUCCESS:
            return None
        attr = cu.CUdevice_attribute
        major = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)[1]
        minor = cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)[1]
    except Exception:
        return None
    suffix = "a" if (major, minor) in {(9, 0), (10, 0), (10, 3)} else ""
    return f"sm_{major}{minor}{suffix}"


$load_function

def _require_gpu(t: Any) -> None:
    arch = gpu_arch(getattr(getattr(t, "device", None), "index", None) or 0)
    if arch is None:
        raise ExportedKernelError(f"module '$name': no NVIDIA GPU or driver is present; this module needs a GPU "
                                  f"of arch {ARCH} to run (load() works without one)")
    if arch != ARCH:
        raise ExportedKernelError(f"module '$name': compiled for {ARCH} but this GPU is {arch}; "
                                  f"export it again with arch={arch!r}")


def _check_tensor(name: str, t: Any) -> None:
    if str(t.dtype).removeprefix("torch.") != DTYPE:
        raise ExportedInputError(f"{name}: dtype {t.dtype} != {DTYPE}; convert it (.to(torch.{DTYPE})) or export "
                                 "again with dtype=...")
    if not t.is_cuda or not t.is_contiguous() or t.data_ptr() % 16:
        raise ExportedInputError(f"{name}: must be a contiguous CUDA tensor aligned to 16 bytes (.contiguous())")


def _check_shape(name: str, shape: tuple[int, ...], index: int = 0) -> None:
    """Raise naming the rule ``shape`` breaks (design ``index``'s shape rule, or the one shape of a static export)."""
    if SHAPE is not None:
        if shape != SHAPE:
            raise ExportedInputError(f"{name}: shape {shape} != {SHAPE}; this kernel was exported for {SHAPE} "
                                     "only; export it again without shape= to serve every shape")
        return
    rules = DESIGNS[index]["shape_rules"]
    if len(shape) != len(rules["names"]):
        raise ExportedInputError(f"{name}: shape {shape} has {len(shape)} dimensions; this kernel takes "
                                 f"{len(rules['names'])}: {', '.join(rules['names'])} ({rules['text']})")
    for size, dim, low, multiple in zip(shape, rules["names"], rules["min"], rules["multiple_of"]):
        if size < low:
            raise ExportedInputError(f"{name}: shape {shape}: {dim} = {size} is below {low}; this kernel "
                                     f"takes {rules['text']}")
        if size % multiple:
            raise ExportedInputError(f"{name}: shape {shape}: {dim} = {size} is not a multiple of {multiple}; "
                                     f"this kernel takes {rules['text']}; pad {dim}")


def _stream(t: Any, stream: Any) -> Any:
    import torch
    from cuda.bindings import driver as cu

    return cu.CUstream(torch.cuda.current_stream(t.device).cuda_stream) if stream is None else stream


def _launch(args: tuple, stream: Any, index: int = 0) -> None:
    """Launch design ``index`` on ``args`` (see :func:`_cute_args`) on ``stream``."""
    load(index)(*_cute_args(args, index), stream)


def _cute_args(args: tuple, index: int = 0) -> list:
    """``args`` as design ``index``'s compiled function takes them: a runtime-shape kernel gets its tensors marked
    dynamic as it was compiled (a None mark: an argument that is not a tensor, such as attention's scale, passed as
    it is; a None mode: one the compile fixed, such as attention's head_dim)."""
    from cutlass.cute.runtime import from_dlpack

    marks = DESIGNS[index]["tensor_divisibility"] or [[] for _ in args]
    out = []
    for a, divisibility in zip(args, marks):
        if divisibility is None or not hasattr(a, "__dlpack__"):
            out.append(a)
            continue
        arg = from_dlpack(a.detach(), assumed_align=16)  # the kernel writes no autograd history
        # The modes' order given, not deduced: a mode of extent 1 has the stride of its neighbour.
        order = a.dim_order()
        for mode, multiple in enumerate(divisibility):
            if multiple is not None:
                arg = arg.mark_compact_shape_dynamic(mode=mode, stride_order=order, divisibility=multiple)
        out.append(arg)
    return out
'''

COPY = '''

def run(src: "torch.Tensor", dst: "torch.Tensor", stream: Any = None) -> None:  # noqa: F821
    """Copy ``src`` into ``dst`` (same shape and dtype) on ``stream`` (default: torch's current stream)."""
    _require_gpu(src)
    _check_tensor("src", src)
    _check_tensor("dst", dst)
    _check_shape("src", tuple(src.shape))
    if tuple(dst.shape) != tuple(src.shape):
        raise ExportedKernelError(f"dst: shape {tuple(dst.shape)} != src's {tuple(src.shape)}")
    _launch((src, dst), _stream(src, stream))


def copy(src: "torch.Tensor") -> "torch.Tensor":  # noqa: F821
    """A new tensor equal to ``src``, written by the kernel."""
    import torch

    dst = torch.empty_like(src)
    run(src, dst)
    return dst


def _register_torch_op() -> Any:
    try:
        import torch
    except ImportError:  # the kernel itself needs no torch
        return None

    @torch.library.custom_op("$name::copy", mutates_args=())
    def copy_op(src: torch.Tensor) -> torch.Tensor:
        return copy(src)

    @copy_op.register_fake
    def _(src: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(src)

    return copy_op


torch_op = _register_torch_op()
'''

GEMM = '''
#: Which design a launch uses: the first rule whose max_m is None or at least the launch's M (rule "design" is an
#: index into DESIGNS).
DISPATCH: dict[str, Any] = META.get("dispatch") or {"key": "M", "rules": [{"max_m": None, "design": 0}]}


def design_for(m: int) -> dict[str, Any]:
    """The entry of DESIGNS (its design, verdict, object file) a launch with ``m`` rows of A uses."""
    return DESIGNS[_index_for(m)]


def _index_for(m: int) -> int:
    return next(rule["design"] for rule in DISPATCH["rules"] if rule["max_m"] is None or m <= rule["max_m"])


def run(a: "torch.Tensor", b: "torch.Tensor", c: "torch.Tensor", stream: Any = None) -> None:  # noqa: F821
    """``c = a @ b.T`` for ``a`` M x K, ``b`` N x K and ``c`` M x N, all row-major, on ``stream``."""
    _require_gpu(a)
    for name, t in (("a", a), ("b", b), ("c", c)):
        _check_tensor(name, t)
    if a.dim() != 2 or b.dim() != 2 or c.dim() != 2:
        raise ExportedKernelError(f"a, b and c must be matrices; got {a.dim()}-, {b.dim()}- and {c.dim()}-D")
    (m, k), (n, kb) = a.shape, b.shape
    if kb != k:
        raise ExportedKernelError(f"b: shape {tuple(b.shape)}: b is N x K and must have a's K={k} columns "
                                  "(pass B transposed: b = B.T.contiguous())")
    if tuple(c.shape) != (m, n):
        raise ExportedKernelError(f"c: shape {tuple(c.shape)} != (M, N) = {(m, n)}")
    index = _index_for(m)
    _check_shape("(M, N, K)", (m, n, k), index)
    _launch((a, b, c), _stream(a, stream), index)


def gemm(a: "torch.Tensor", b: "torch.Tensor") -> "torch.Tensor":  # noqa: F821
    """A new M x N matrix ``a @ b.T``."""
    import torch

    c = torch.empty((a.shape[0], b.shape[0]), device=a.device, dtype=a.dtype)
    run(a, b, c)
    return c


def _register_torch_op() -> Any:
    try:
        import torch
    except ImportError:  # the kernel itself needs no torch
        return None

    @torch.library.custom_op("$name::gemm", mutates_args=())
    def gemm_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return gemm(a, b)

    @gemm_op.register_fake
    def _(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a.new_empty((a.shape[0], b.shape[0]))

    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.save_for_backward(*inputs)

    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        # Gradients by torch's own matmul: the transposed products need not meet this kernel's shape rules.
        a, b = ctx.saved_tensors
        return grad @ b, grad.T @ a

    gemm_op.register_autograd(backward, setup_context=setup_context)
    return gemm_op


torch_op = _register_torch_op()
'''


def package_init(kind: str, *, params: dict[str, Any] | None = None, choices: dict[str, tuple] | None = None,
                 **fields: str) -> str:
    """``__init__.py`` of a ``kind`` ('copy', 'gemm' or 'attention') package; ``fields``: name, kernel, arch, dtype,
    rules, example, and for a GEMM or an attention package designs (which designs serve which launches, in words).
    An attention package also takes the design's ``params`` and its kernel's ``choices`` (its head_dim)."""
    if kind == "attention":
        extra = attention_template.fields(params or {}, choices or {})
        return Template(attention_template.DOC + COMMON + attention_template.BODY).substitute(
            fields, load_function=LOAD_FUNCTION, **extra)
    doc, body = (GEMM_DOC, GEMM) if kind == "gemm" else (COPY_DOC, COPY)
    return Template(doc + COMMON + body).substitute(fields, load_function=LOAD_FUNCTION)


TEST = '''"""Checks of the exported package: loads without compiling; on a matching GPU, computes what torch does."""

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
kernel = importlib.import_module("$name")
EXAMPLES = $examples
on_gpu = pytest.mark.skipif(kernel.gpu_arch() != kernel.ARCH, reason="needs a GPU of the exported arch")


def test_loads_without_compiling():
    assert callable(kernel.load())


@on_gpu
@pytest.mark.parametrize("shape", EXAMPLES, ids=str)
def test_matches_torch(shape):
    import torch

    dtype = getattr(torch, kernel.DTYPE)
    if kernel.META["kind"] == "gemm":
        m, n, k = shape
        a = torch.randn((m, k), device="cuda", dtype=dtype)
        b = torch.randn((n, k), device="cuda", dtype=dtype)
        c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
        kernel.run(a, b, c)
        ref = a.float() @ b.float().T
        assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-2
    else:
        src = (torch.randn(shape, device="cuda") * 100).to(dtype)
        dst = torch.full_like(src, -7)
        kernel.run(src, dst)
        torch.cuda.synchronize()
        assert torch.equal(src, dst)


@on_gpu
def test_refuses_a_shape_it_cannot_take():
    import torch

    bad = torch.empty(3, device="cuda", dtype=getattr(torch, kernel.DTYPE))
    with pytest.raises(kernel.ExportedKernelError, match="shape|matrices|dimensions"):
        if kernel.META["kind"] == "gemm":
            kernel.run(bad, bad, bad)
        else:
            kernel.run(bad, bad)
'''


DISPATCH_TEST = '''

# (M, the design tslab's Dispatch picked for it), on both sides of each bound
PICKS = $picks


@pytest.mark.parametrize(("m", "index"), PICKS)
def test_design_for_follows_the_dispatch(m, index):
    assert kernel.design_for(m) is kernel.DESIGNS[index]
'''


def package_test(name: str, examples: list[tuple[int, ...]] | None = None, picks: list[tuple[int, int]] | None = None,
                 kind: str = "copy") -> str:
    """``test_kernel.py`` of package ``name``, checking ``examples`` shapes on a GPU (an attention package: its
    own problems, causal and not), and for a package exported from a dispatch that ``design_for(m)`` names the
    design ``picks`` gives each ``m``."""
    if kind == "attention":
        return Template(attention_template.TEST).substitute(name=name, examples=repr(attention_template.EXAMPLES))
    text = Template(TEST).substitute(name=name, examples=repr(examples))
    return text + Template(DISPATCH_TEST).substitute(picks=repr(picks)) if picks else text
