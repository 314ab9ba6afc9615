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

from ..errors import UnsupportedArchError, UnsupportedKernelError
from ..kernels.rules import KernelRules, itemsize

#: Archs the GPU kernels compile for: TS needs Hopper or newer (TMA, transaction barriers).
ARCHS = ("sm_90a", "sm_90", "sm_100a", "sm_103a", "sm_120a")


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
        """The kernel's catalog module (its design and ``RULES``)."""
        from ..kernels import kernel_module

        return kernel_module(self.kernel)

    @property
    def launcher(self) -> ModuleType:
        """The module holding the kernel's ``launch``, ``launch_constants`` and ``fake_args``."""
        from ..kernels import launch_module

        return launch_module(self.kernel)

    @property
    def rules(self) -> KernelRules:
        return self.module.RULES

    @property
    def nbytes(self) -> int:
        """Bytes one copy moves through device memory: the input read once plus the output written once."""
        n = 1
        for s in self.shape:
            n *= s
        return 2 * n * itemsize(self.dtype)

    def launch_constants(self, sms: int) -> tuple:
        """The ``cutlass.Constexpr`` arguments of the module's ``launch`` after ``(src, dst, stream)``."""
        return self.launcher.launch_constants(self.params, self.launch, sms, self.pipelines)

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


def require_gpu_kernel(kernel: str) -> None:
    """Raise :class:`UnsupportedKernelError` unless catalog kernel ``kernel`` has a GPU kernel."""
    from ..kernels import NAMES, gpu_kernels

    if kernel not in NAMES or kernel not in gpu_kernels():
        raise UnsupportedKernelError(
            f"design '{kernel}': has no GPU kernel; it is a CPU-only design (tslab.check() it). "
            f"GPU kernels: {', '.join(gpu_kernels())}"
        )


def require_arch(arch: str, what: str) -> str:
    """``arch`` when tslab's GPU kernels compile for it, else an ``UnsupportedArchError`` naming those that do."""
    if arch not in ARCHS:
        raise UnsupportedArchError(f"{what}: arch={arch!r} is not supported; use one of {', '.join(ARCHS)} "
                                   "(TS kernels need Hopper or newer)")
    return arch


def require_kernel_arch(kernel: str, arch: str, what: str) -> str:
    """``arch`` when catalog kernel ``kernel`` is for it, else an ``UnsupportedArchError`` with the arch to use (a
    Blackwell kernel compiles for sm_100a only, and runs only on a Blackwell GPU)."""
    from ..kernels import kernel_rules

    rules = kernel_rules(kernel)
    problem = rules.arch_error(kernel, arch, what) if rules is not None else None
    if problem is not None:
        raise UnsupportedArchError(problem)
    return arch


def resolve(design: Any, shape: tuple[int, ...] | None = None, dtype: str | None = None,
            launch: dict[str, Any] | None = None) -> Target:
    """The GPU target of ``design``; refuses kernels with no GPU kernel, problems its ``RULES`` refuse and edits
    it cannot honour."""
    kernel = design.kernel
    require_gpu_kernel(kernel)
    over = design.overrides
    from ..kernels import kernel_module

    module = kernel_module(kernel)
    rules: KernelRules = module.RULES
    shape = tuple(int(s) for s in (shape or rules.default_shape))
    fixed = rules.dtype_of(design.params) if rules.dtype_of is not None else None
    dtype = dtype or fixed or rules.default_dtype
    problem = rules.problem_error(design.params, shape, dtype)
    if problem is not None:
        raise UnsupportedKernelError(f"design '{kernel}': {problem}")
    pipelines = tuple(
        (name, tuple(sorted(fields.items()))) for name, fields in sorted(over["pipelines"].items())
    )
    # The module's own schedule edits (a teaching variant of a real kernel), then the design's on top.
    schedules = {t: [list(s) for s in steps] for t, steps in getattr(module, "SCHEDULES", {}).items()}
    schedules.update(over["schedules"])
    return Target(kernel, design.params, shape, dtype, pipelines, launch_options(kernel, rules.launch, launch),
                  schedules, over["alias_groups"])


def shape_rules(target: Target) -> dict[str, Any]:
    """What shapes a dynamic compile of ``target`` accepts, per dimension: a minimum and a multiple, and a
    sentence naming the rule (an exported package checks these before each launch)."""
    return target.rules.shape(target.params, target.dtype).to_dict()


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
