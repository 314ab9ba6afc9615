"""What a GPU kernel module states once (``RULES``): the problems it takes, its dtypes, launch options and choices.

``tslab.gpu`` resolves a design against these rules before it compiles, an exported package checks the same
shape rule before each launch (it is written into the package's ``design.json``), and the BenchPanel offers the
choices as menus. The rules TS's checker sees (pipelines, schedules, SMEM) stay in the TS objects themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import Issue

#: Bytes per element of the dtypes a GPU kernel may take (torch's names).
ITEMSIZE: dict[str, int] = {"float16": 2, "bfloat16": 2, "float32": 4, "int16": 2, "int32": 4, "int8": 1,
                            "uint8": 1}


def itemsize(dtype: str) -> int:
    """Bytes per element of ``dtype`` (a torch dtype name such as ``"float16"``)."""
    return ITEMSIZE[dtype]


def cutlass_dtype(name: str) -> Any:
    """The CuTe DSL numeric type of torch dtype name ``name``."""
    import cutlass

    return getattr(cutlass, {"float16": "Float16", "bfloat16": "BFloat16", "float32": "Float32", "int16": "Int16",
                             "int32": "Int32", "int8": "Int8", "uint8": "Uint8"}[name])


@dataclass(frozen=True)
class ShapeRule:
    """The problems a kernel takes, per dimension: a minimum and a multiple, a sentence naming the rule, and
    for each dimension what to do when it breaks the rule."""

    names: tuple[str, ...]
    min: tuple[int, ...]
    multiple_of: tuple[int, ...]
    text: str
    fixes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The rule as an exported package's ``design.json`` keeps it."""
        return {"names": list(self.names), "min": list(self.min), "multiple_of": list(self.multiple_of),
                "text": self.text}

    def broken_by(self, shape: tuple[int, ...]) -> str | None:
        """What ``shape`` breaks, in one sentence naming the dimension and the fix; None when it fits."""
        if len(shape) != len(self.names):
            return (f"shape={tuple(shape)} has {len(shape)} dimension(s); this kernel takes "
                    f"({', '.join(self.names)}): {self.text}")
        fixes = self.fixes or ("",) * len(self.names)
        for name, extent, low, multiple, fix in zip(self.names, shape, self.min, self.multiple_of, fixes, strict=True):
            how = f"; {fix}" if fix else ""
            if extent < low:
                return f"{name}={extent} is below {low}; this kernel takes {self.text}{how}"
            if extent % multiple:
                return f"{name}={extent} is not a multiple of {multiple}; this kernel takes {self.text}{how}"
        return None


@dataclass(frozen=True)
class SingleBuffer:
    """A ring whose data the kernel stages in one buffer, whatever ``num_stages`` an edit gives it.

    TS counts each stage of a ring as bytes of its own, so a second stage would be checked SAFE while the kernel
    writes the next tile's ``holds`` over the one still being read. ``instead`` names another way to more stages,
    where the kernel has one."""

    resource: str
    holds: str
    instead: str = ""

    def issue(self, pipelines: dict[str, dict[str, Any]]) -> Issue | None:
        """The ``invalid-config`` issue of an edit that gave the ring more than one stage, or None."""
        stages = pipelines.get(self.resource, {}).get("num_stages", 1)
        if stages == 1:
            return None
        return Issue("invalid-config", f"resource '{self.resource}'",
                     f"num_stages={stages}: the kernel stages {self.holds} in one buffer, so each tile's would be "
                     "written over the previous tile's while that is still being read (TS counts each stage as bytes "
                     "of its own)",
                     "keep num_stages=1" + (f", or {self.instead}" if self.instead else ""))


@dataclass(frozen=True)
class KernelRules:
    """A GPU kernel's rules that TS's checker cannot see, stated once in its module as ``RULES``.

    ``shape(params, dtype)`` is the rule one compile with runtime extents accepts (and an exported package
    checks); ``refuse(params, shape, dtype)`` adds what only a compile for one fixed shape refuses (a sentence,
    or None). ``dtype_of(params)``, where given, is the one dtype the design's params fix.
    ``consistency(params, pipelines)`` returns the issues of rules TS's one-block checks cannot see (``Issue``
    list, e.g. a cluster's shared stages), ``single_buffers(params)`` the rings whose stages the kernel does not
    honour (:class:`SingleBuffer`; :meth:`issues` checks both), and ``beyond_ts(params)`` says in sentences what
    those rules covered (an export's VERDICT.txt). ``trip_param`` is the design param holding the loop's trip
    count (an export with runtime extents is checked at each count from 1 to ``2 * stages + 1``, ``stages`` being
    the design param named ``stages_param``), ``package`` the exported package's interface ('copy': ``copy(src,
    dst)``, 'gemm': ``gemm(a, b)``, 'attention': ``attention(q, k, v, causal)``). ``launch_module``
    names the module holding ``launch``, ``launch_constants`` and ``fake_args`` when they are not in the kernel's
    own module (so a CPU check imports no launch code). ``archs``, where given, are the only GPU archs the kernel
    compiles for and runs on (a Blackwell kernel's tcgen05 MMAs, TMEM and CLC exist nowhere else); ``gpu_name``
    says in words which GPUs those are. ``variants`` = ``(param, values)`` names a design param an exported package
    chooses at each call (attention's ``causal``): the export compiles the design once per value.
    """

    dtypes: tuple[str, ...]
    default_shape: tuple[int, ...]
    default_dtype: str
    shape: Callable[[dict[str, Any], str], ShapeRule]
    trip_param: str
    package: str = "copy"
    launch: dict[str, Any] = field(default_factory=dict)
    choices: dict[str, tuple] = field(default_factory=dict)
    dynamic: bool = True
    refuse: Callable[[dict[str, Any], tuple[int, ...], str], str | None] | None = None
    dtype_of: Callable[[dict[str, Any]], str] | None = None
    consistency: Callable[[dict[str, Any], dict[str, dict[str, Any]]], list[Any]] | None = None
    beyond_ts: Callable[[dict[str, Any]], list[str]] | None = None
    launch_module: str | None = None
    archs: tuple[str, ...] | None = None
    gpu_name: str = ""
    variants: tuple[str, tuple] | None = None
    stages_param: str = "stages"
    single_buffers: Callable[[dict[str, Any]], tuple[SingleBuffer, ...]] | None = None

    def issues(self, params: dict[str, Any], pipelines: dict[str, dict[str, Any]]) -> list[Issue]:
        """What TS's checks cannot see in a design with these ``params`` and (edited) ``pipelines``: a ring the
        kernel stages in one buffer given more stages, then the kernel's own ``consistency`` rules."""
        found = [issue for ring in (self.single_buffers(params) if self.single_buffers else ())
                 if (issue := ring.issue(pipelines)) is not None]
        return found + (self.consistency(params, pipelines) if self.consistency is not None else [])

    def arch_error(self, kernel: str, arch: str, what: str) -> str | None:
        """Why ``what`` of ``kernel`` cannot be for ``arch`` (one sentence with the fix), or None when it can."""
        if self.archs is None or arch in self.archs:
            return None
        gpus = f" ({self.gpu_name})" if self.gpu_name else ""
        where = what if f"'{kernel}'" in what else f"{what} of '{kernel}'"  # "run of 'k' on this H200" names it
        return (f"{where}: arch={arch!r}, but this kernel is for {' or '.join(self.archs)}{gpus} only; "
                f"compile it with arch={self.archs[0]!r}, which works without such a GPU (PTX, cubin, registers, "
                f"spills); running it needs one")

    def problem_error(self, params: dict[str, Any], shape: tuple[int, ...], dtype: str) -> str | None:
        """Why the kernel cannot take problem ``shape`` of ``dtype`` (one sentence with the fix), or None."""
        if self.dtype_of is not None and dtype != self.dtype_of(params):
            want = self.dtype_of(params)
            return (f"dtype={dtype!r} but the design's dtype is {params.get('dtype')!r}; pass dtype={want!r} or "
                    "change the design's dtype")
        if dtype not in self.dtypes:
            return f"dtype={dtype!r} is not supported; use one of {', '.join(self.dtypes)}"
        broken = self.shape(params, dtype).broken_by(tuple(shape))
        if broken is None and self.refuse is not None:
            broken = self.refuse(params, tuple(shape), dtype)
        return broken
