"""Building a catalog target: ``cute.compile`` with its edits applied at construction, kept per worker.

Every compile of a catalog kernel goes through :func:`compile_target`, so what runs is the design as edited and
checked; :func:`compiled` keeps each kernel a worker compiled, by (target as edited, multiprocessors, arch).
Also here: the compile-only stand-ins of a target's arguments, how its tensors are marked at run time, ptxas'
report, and the runtime libraries an exported object file needs loaded.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from collections import OrderedDict
from typing import Any

from .targets import Target


def compile_target(t: Target, sms: int, options: str) -> Any:
    """``cute.compile`` of the target's kernel with fake tensors, its edits applied at TaskManager construction.

    Every compile of a target goes through here, so what runs is the design as edited and checked.
    """
    from cutlass import cute

    with t.edits_applied():
        return cute.compile(t.module.launch, *_fake(t), *t.launch_constants(sms), options=options)


def _cutlass_dtype(name: str) -> Any:
    import cutlass

    return {
        "float16": cutlass.Float16,
        "bfloat16": cutlass.BFloat16,
        "float32": cutlass.Float32,
        "int16": cutlass.Int16,
        "int32": cutlass.Int32,
        "int8": cutlass.Int8,
        "uint8": cutlass.Uint8,
    }[name]


def fake_args(target: Target) -> tuple:
    """Compile-only stand-ins for ``(src, dst, stream)``: static shape, 16-byte aligned, row-major."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    dtype = _cutlass_dtype(target.dtype)
    order = tuple(reversed(range(len(target.shape))))

    def make() -> Any:
        return make_fake_compact_tensor(dtype, target.shape, stride_order=order, assumed_align=16)

    return make(), make(), make_fake_stream()


def _fake(t: Target) -> tuple:
    """Compile-only arguments: the kernel module's own where it has them (GEMM: a, b, c, stream).

    A dynamic target asks for symbolic extents (``dynamic=True``, passed only then); design parameters
    the module's ``fake_args`` takes by keyword (the grid-stride copy's ``vector_bytes``) come from the
    target's parameters.
    """
    own = getattr(t.module, "fake_args", None)
    if own is None:
        return fake_args(t)
    keywords = inspect.signature(own).parameters
    extra = {name: value for name, value in t.params.items()
             if name != "dynamic" and name in keywords and keywords[name].kind is inspect.Parameter.KEYWORD_ONLY}
    if t.dynamic:
        extra["dynamic"] = True
    return own(t.shape, t.dtype, **extra)


def _options(arch: str, keep: bool) -> str:
    return f"--gpu-arch {arch}" + (" --keep-ptx --keep-cubin remarks{ptx}" if keep else "")


def parse_ptxas(text: str) -> dict[str, int | None]:
    """Registers, spills and stack frame from ptxas' report (``None`` where it printed nothing)."""

    def grab(pattern: str) -> int | None:
        found = re.findall(pattern, text)
        return max(int(v) for v in found) if found else None

    return {
        "registers": grab(r"Used (\d+) registers"),
        "spill_stores": grab(r"(\d+) bytes spill stores"),
        "spill_loads": grab(r"(\d+) bytes spill loads"),
        "stack_frame": grab(r"(\d+) bytes stack frame"),
        "static_smem": grab(r"(\d+) bytes smem"),
    }


#: Kernels compiled in this worker, by (target as edited, multiprocessor count, arch), most recent last.
_COMPILED: OrderedDict[str, Any] = OrderedDict()
_COMPILED_KEPT = 64


def _cache_key(t: Target, sms: int, arch: str) -> str:
    """A dynamic target compiles once for every shape, so its shape is not part of the key."""
    key = dict(t.to_dict(), shape=None) if t.dynamic else t.to_dict()
    return json.dumps([key, sms, arch], sort_keys=True)


def _remember(key: str, fn: Any) -> Any:
    _COMPILED[key] = fn
    _COMPILED.move_to_end(key)
    while len(_COMPILED) > _COMPILED_KEPT:
        _COMPILED.popitem(last=False)
    return fn


def compiled(t: Target, sms: int, arch: str) -> Any:
    """The target compiled for ``arch`` with its edits applied, once per worker: a warm worker re-runs it at once."""
    key = _cache_key(t, sms, arch)
    if key in _COMPILED:
        _COMPILED.move_to_end(key)
        return _COMPILED[key]
    return _remember(key, compile_target(t, sms, _options(arch, False)))


def tensor_marks(t: Target) -> tuple[tuple[int, ...], ...] | None:
    """How ``t``'s tensors are marked for its compiled function: None (static layouts), or for a dynamic
    target each tensor's modes' divisibility as its compile promised (a static tensor would pass garbage
    extents). Every argument but the last (the stream) is a tensor."""
    from .args import divisibility_of

    return divisibility_of(_fake(t)[:-1]) if t.dynamic else None


def preload_runtime() -> None:
    """Load CuTe DSL's runtime libraries with global symbols (the object-file export and loader need them)."""
    import ctypes

    from cutlass.cute.runtime import find_runtime_libraries

    for path in find_runtime_libraries(enable_tvm_ffi=False):
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
