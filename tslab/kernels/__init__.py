"""The catalog of kernel designs: one module per kernel family, each with ``design(**params)``.

Each module defines ``NAME``, ``SUMMARY`` (one line), ``PARAMS`` (defaults) and ``build(**params)``, which
returns fresh TS objects (:class:`tslab.core.blueprint.Blueprint`) on every call.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..core import registry
from ..errors import DesignError, did_you_mean
from .rules import KernelRules

NAMES: tuple[str, ...] = ("grid_stride_copy", "tma_copy", "gemm_sm90", "gemm_sm100", "attention_sm90", "attention_tmem",
                          "demo_deadlock", "demo_race", "demo_overflow", "demo_routing", "demo_guards")


@dataclass(frozen=True)
class KernelInfo:
    """One catalog entry: name, one-line summary and default parameters."""

    name: str
    summary: str
    params: dict[str, Any]

    def __str__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name:<18} {self.summary}  ({params})"


def kernel_module(name: str) -> ModuleType:
    """The module of catalog kernel ``name``."""
    if name not in NAMES:
        raise DesignError("input", f"kernel '{name}'", "is not in the catalog", did_you_mean(str(name), NAMES))
    return importlib.import_module(f"{__name__}.{name}")


def kernel_rules(name: str) -> KernelRules | None:
    """The GPU rules of catalog kernel ``name`` (its module's ``RULES``), or None for a CPU-only design."""
    return getattr(kernel_module(name), "RULES", None)


def launch_module(name: str) -> ModuleType:
    """The module holding catalog kernel ``name``'s ``launch``, ``launch_constants`` and ``fake_args``."""
    rules = kernel_rules(name)
    if rules is None or rules.launch_module is None:
        return kernel_module(name)
    return importlib.import_module(rules.launch_module)


@functools.cache
def gpu_kernels() -> tuple[str, ...]:
    """The catalog kernels that have a GPU kernel, in catalog order."""
    return tuple(n for n in NAMES if kernel_rules(n) is not None)


def _lookup(name: str) -> ModuleType | None:
    return kernel_module(name) if name in NAMES else None


registry.register(_lookup, lambda: NAMES)


def catalog() -> list[KernelInfo]:
    """Every catalog design with its summary and parameters."""
    return [KernelInfo(n, (m := kernel_module(n)).SUMMARY, dict(m.PARAMS)) for n in NAMES]


def design(name: str, **params: Any):
    """The design of catalog kernel ``name`` with ``params``."""
    from ..core.design import Design

    return Design(name, params)


def __getattr__(name: str) -> ModuleType:
    """``tslab.kernels.<name>`` imports catalog module ``name`` on first use (PEP 562)."""
    if name in NAMES:
        return kernel_module(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *NAMES})


__all__ = ["NAMES", "KernelInfo", "KernelRules", "catalog", "design", "gpu_kernels", "kernel_module", "kernel_rules",
           "launch_module"]
