"""Where core finds a design's kernel module: kernels register themselves here, core never imports them.

``tslab.kernels`` registers the catalog when it is imported (``import tslab`` does that); another package can
register its own kernel families the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from ..errors import DesignError, did_you_mean

_LOOKUPS: list[Callable[[str], ModuleType | None]] = []
_NAMES: list[Callable[[], tuple[str, ...]]] = []


def register(lookup: Callable[[str], ModuleType | None], names: Callable[[], tuple[str, ...]]) -> None:
    """Add a family of kernels: ``lookup(name)`` gives the module (or None), ``names()`` lists them."""
    _LOOKUPS.append(lookup)
    _NAMES.append(names)


def kernel_names() -> list[str]:
    return [n for names in _NAMES for n in names()]


def kernel_module(name: str) -> ModuleType:
    """The registered module of kernel ``name``; a DesignError listing the known names otherwise."""
    for lookup in _LOOKUPS:
        module = lookup(name)
        if module is not None:
            return module
    raise DesignError("input", f"kernel '{name}'", "is not in the catalog", did_you_mean(str(name), kernel_names()))
