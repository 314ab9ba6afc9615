"""Which designs have a GPU kernel, and how to call it: problem shape, dtype, launch constants, edits.

The launch constants come from the design's parameters and its pipeline overrides; the TS resources and
tasks inside the kernel are built by the same kernel-module function as the CPU check's. Schedule and
alias-group edits travel as plain data and are applied to the objects the kernel hands to ``TaskManager``
while it is traced (:func:`tslab.core.construction.edits_at_construction`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .errors import UnsupportedArchError, UnsupportedKernelError

GPU_KERNELS = ("grid_stride_copy", "tma_copy", "gemm_sm90", "demo_deadlock")
#: Archs the GPU kernels compile for: TS needs Hopper or newer (TMA, transaction barriers).
ARCHS = ("sm_90a", "sm_90", "sm_100a", "sm_103a", "sm_120a")
DTYPES = ("float16", "bfloat16", "float32", "int16", "int32", "int8", "uint8")


@dataclass(frozen=True)
class Target:
    """A design resolved for the GPU: module, problem shape and dtype, launch options, edits.

    ``pipelines`` reach the kernel as a ``cutlass.Constexpr`` (it sizes its ring from them before it builds
    ``TaskManager``); ``schedules`` and ``alias_groups`` are applied at ``TaskManager`` construction.
    ``validate=False`` (a forced compile of a design the checker refused) lets TS warn instead of raise.
    ``dynamic=True`` compiles with runtime extents: one kernel for every shape the kernel accepts (``shape``
    then only names the problem a run or a check uses).
    """

    kernel: str
    params: dict[str, Any]
    shape: tuple[int, ...]
    dtype: str
    pipelines: tuple = field(default=())
    launch: dict[str, Any] = field(default_factory=dict)
    schedules: dict[str, list[list[Any]]] = field(default_factory=dict)
    alias_groups: list[list[list[str]]] | None = None
    validate: bool = True
    dynamic: bool = False

    @property
    def module(self) -> ModuleType:
        from ..kernels import kernel_module

        return kernel_module(self.kernel)

    @property
    def nbytes(self) -> int:
        """Bytes one copy moves through device memory: the input read once plus the output written once."""
        n = 1
        for s in self.shape:
            n *= s
        return 2 * n * _itemsize(self.dtype)

    def launch_constants(self, sms: int) -> tuple:
        """The ``cutlass.Constexpr`` arguments of the module's ``launch`` after ``(src, dst, stream)``."""
        return self.module.launch_constants(self.params, self.launch, sms, self.pipelines)

    def with_shape(self, shape: tuple[int, ...]) -> Target:
        return dataclasses.replace(self, shape=tuple(shape))

    @contextlib.contextmanager
    def edits_applied(self) -> Iterator[None]:
        """While active, every ``TaskManager`` built (by a ``cute.compile`` of the kernel) gets the edits."""
        from ..core.construction import Edits, edits_at_construction

        edits = Edits(schedules=self.schedules, alias_groups=self.alias_groups)
        with edits_at_construction(edits, validate=self.validate):
            yield

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "params": dict(self.params),
            "shape": list(self.shape),
            "dtype": self.dtype,
            "pipelines": [[n, list(map(list, f))] for n, f in self.pipelines],
            "launch": dict(self.launch),
            "schedules": {t: [list(s) for s in steps] for t, steps in self.schedules.items()},
            "alias_groups": self.alias_groups,
            "validate": self.validate,
            "dynamic": self.dynamic,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Target:
        """The target :meth:`to_dict` wrote (what a worker process receives)."""
        pipelines = tuple((n, tuple(tuple(kv) for kv in f)) for n, f in data["pipelines"])
        return cls(data["kernel"], data["params"], tuple(data["shape"]), data["dtype"], pipelines,
                   data["launch"], data.get("schedules") or {}, data.get("alias_groups"),
                   data.get("validate", True), data.get("dynamic", False))


def _itemsize(dtype: str) -> int:
    return {"float16": 2, "bfloat16": 2, "float32": 4, "int16": 2, "int32": 4, "int8": 1, "uint8": 1}[dtype]


def require_gpu_kernel(kernel: str) -> None:
    """Raise :class:`UnsupportedKernelError` unless catalog kernel ``kernel`` has a GPU kernel."""
    if kernel not in GPU_KERNELS:
        raise UnsupportedKernelError(
            f"design '{kernel}': has no GPU kernel; it is a CPU-only design (tslab.check() it). "
            f"GPU kernels: {', '.join(GPU_KERNELS)}"
        )


def require_arch(arch: str, what: str) -> str:
    """``arch`` when tslab's GPU kernels compile for it, else an ``UnsupportedArchError`` naming those that do."""
    if arch not in ARCHS:
        raise UnsupportedArchError(f"{what}: arch={arch!r} is not supported; use one of {', '.join(ARCHS)} "
                                   "(TS kernels need Hopper or newer)")
    return arch


def resolve(design: Any, shape: tuple[int, ...] | None = None, dtype: str | None = None,
            launch: dict[str, Any] | None = None) -> Target:
    """The GPU target of ``design``; refuses kernels with no GPU kernel and edits it cannot honour."""
    kernel = design.kernel
    require_gpu_kernel(kernel)
    over = design.overrides
    from ..kernels import kernel_module

    module = kernel_module(kernel)
    family = getattr(module, "BASE", kernel)  # a teaching variant compiles its base kernel, edited
    shape = tuple(int(s) for s in (shape or module.DEFAULT_SHAPE))
    if kernel == "gemm_sm90":
        dtype = dtype or module.TORCH_DTYPES[design.params["dtype"]]
        gemm_problem(design.params, shape, dtype)
    dtype = dtype or module.DEFAULT_DTYPE
    if dtype not in DTYPES:
        raise UnsupportedKernelError(
            f"design '{kernel}': dtype={dtype!r} is not supported; use one of {DTYPES}"
        )
    if family == "tma_copy" and (len(shape) != 2 or dtype not in ("float16", "bfloat16", "int16")):
        raise UnsupportedKernelError(
            f"design '{kernel}': shape={shape} dtype={dtype!r}; the TMA copy takes a 2-D 16-bit tensor "
            "(e.g. shape=(16384, 16384), dtype='float16')"
        )
    if family == "grid_stride_copy" and len(shape) != 1:
        raise UnsupportedKernelError(
            f"design 'grid_stride_copy': shape={shape}; the grid-stride copy takes a flat tensor, "
            "e.g. shape=(2**28,)"
        )
    if family == "grid_stride_copy" and (shape[0] * _itemsize(dtype)) % design.params["vector_bytes"]:
        raise UnsupportedKernelError(
            f"design 'grid_stride_copy': {shape[0]} {dtype} elements are not a whole number of "
            f"{design.params['vector_bytes']}-byte vectors; pad the tensor or lower vector_bytes"
        )
    if family == "tma_copy" and (shape[1] * _itemsize(dtype)) % 16:
        raise UnsupportedKernelError(
            f"design '{kernel}': rows of {shape[1]} {dtype} elements are not a multiple of 16 bytes, "
            "which TMA "
            "needs for the row stride; pad the rows"
        )
    pipelines = tuple(
        (name, tuple(sorted(fields.items()))) for name, fields in sorted(over["pipelines"].items())
    )
    # The module's own schedule edits (a teaching variant of a real kernel), then the design's on top.
    schedules = {t: [list(s) for s in steps] for t, steps in getattr(module, "SCHEDULES", {}).items()}
    schedules.update(over["schedules"])
    return Target(kernel, design.params, shape, dtype, pipelines, launch_options(kernel, module.LAUNCH, launch),
                  schedules, over["alias_groups"])


#: Kernels that compile with runtime extents (``Target.dynamic``): one compiled kernel serves every shape.
DYNAMIC_KERNELS = ("gemm_sm90", "tma_copy", "grid_stride_copy")


def shape_rules(target: Target) -> dict[str, Any]:
    """What shapes a dynamic compile of ``target`` accepts, per dimension: a minimum and a multiple, and a
    sentence naming the rule (an exported package checks these before each launch)."""
    family = getattr(target.module, "BASE", target.kernel)
    if family == "gemm_sm90":
        # Runtime extents take M = 1 too (a static 1-row A faults; see gemm_problem).
        return {"names": ["M", "N", "K"], "min": [1, 8, 8], "multiple_of": [1, 8, 8],
                "text": "any M, N and K multiples of 8 (TMA needs 16-byte row strides)"}
    per_16 = 16 // _itemsize(target.dtype)
    if family == "tma_copy":
        return {"names": ["rows", "cols"], "min": [1, per_16], "multiple_of": [1, per_16],
                "text": f"2-D, rows a multiple of 16 bytes ({per_16} {target.dtype} elements) for TMA"}
    per_vector = max(1, target.params["vector_bytes"] // _itemsize(target.dtype))
    return {"names": ["elements"], "min": [per_vector], "multiple_of": [per_vector],
            "text": f"1-D, a whole number of {target.params['vector_bytes']}-byte vectors "
                    f"({per_vector} {target.dtype} elements)"}


def launch_options(kernel: str, defaults: dict[str, Any], given: dict[str, Any] | None) -> dict[str, Any]:
    """The module's launch defaults updated with ``given``; unknown names and non-positive values refused."""
    from ..errors import did_you_mean

    out = dict(defaults)
    for key, value in (given or {}).items():
        if key not in defaults:
            raise UnsupportedKernelError(f"kernel '{kernel}' launch option '{key}': unknown; "
                                         + did_you_mean(key, list(defaults)))
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UnsupportedKernelError(f"kernel '{kernel}' launch option '{key}': {value!r} must be an int >= 1")
        out[key] = value
    return out


def gemm_problem(params: dict[str, Any], shape: tuple[int, ...], dtype: str) -> None:
    """Refuse GEMM problems the kernel cannot take, naming the constraint."""
    if len(shape) != 3 or min(shape) < 1:
        raise UnsupportedKernelError(f"design 'gemm_sm90': shape={shape}; a GEMM takes (M, N, K), each >= 1")
    want = {"fp16": "float16", "bf16": "bfloat16"}[params["dtype"]]
    if dtype != want:
        raise UnsupportedKernelError(f"design 'gemm_sm90': dtype={dtype!r} but the design's dtype is "
                                     f"{params['dtype']!r}; pass dtype={want!r} or change the design's dtype")
    if shape[0] == 1:
        raise UnsupportedKernelError("design 'gemm_sm90': M=1; the kernel's static TMA layouts need M >= 2 "
                                     "(a 1-row A faults on the GPU); use a matrix-vector product or pad M to 2")
    if shape[2] % 8:
        raise UnsupportedKernelError(f"design 'gemm_sm90': K={shape[2]}; K must be a multiple of 8 (TMA needs "
                                     "16-byte row strides); pad K with zeros")
    if shape[1] % 8:
        raise UnsupportedKernelError(f"design 'gemm_sm90': N={shape[1]}; N must be a multiple of 8 (C's rows are "
                                     "stored by TMA, which needs 16-byte row strides); pad N")
