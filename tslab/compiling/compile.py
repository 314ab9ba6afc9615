"""Building a catalog target: ``cute.compile`` with its edits applied at construction, kept per worker.

Every compile of a catalog kernel goes through :func:`compile_target`, so what runs is the design as edited and
checked; :func:`compiled` keeps each kernel a worker compiled, by (target as edited, multiprocessors, arch).
Also here: the compile-only stand-ins of a target's arguments, how its tensors are marked at run time, ptxas'
report, and the runtime libraries an exported object file needs loaded (captured kernels' export too).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import tempfile
import time
import warnings
from collections import OrderedDict
from typing import Any

from ..child import capture_fds
from .source_locations import without_op_locations
from .targets import Target, require_kernel_arch

#: Deprecations inside CuTe DSL 4.8.1 that no design can act on: TS 4.8.1's WorkQueue is built on the wheel's copy
#: of the static persistent tile scheduler, which CuTe DSL marks as moved to its examples, and that scheduler makes
#: the FastDivmodDivisor it marks as replaced. The tracer rebuilds both for every value it threads (330 warnings a
#: GEMM compile); what tslab itself calls is not deprecated.
UPSTREAM_DEPRECATIONS = (r"Migrated to examples/CuTeDSL/helpers/static_persistent_tile_scheduler\.py",
                         r"FastDivmodDivisor is deprecated")


def compile_target(t: Target, sms: int, options: str, *, tvm_ffi: bool = False) -> Any:
    """``cute.compile`` of the target's kernel with fake tensors, its edits applied at TaskManager construction.

    Every compile of a target goes through here, so what runs is the design as edited and checked. ``tvm_ffi``:
    compiled with CuTe DSL's TVM FFI (what an exported package holds), a function that takes torch tensors and
    launches on the caller's current stream (the stream is no argument), checking the tensors as its fakes promised.
    """
    from cutlass import cute

    arch = re.search(r"--gpu-arch (\S+)", options)
    if arch is not None:
        require_kernel_arch(t.kernel, arch.group(1), "compile")
    args = fake_args(t)
    if tvm_ffi:
        from cutlass.cute.runtime import make_fake_stream

        args = (*args[:-1], make_fake_stream(use_tvm_ffi_env_stream=True))
        options += " --enable-tvm-ffi"
    with t.edits_applied(), warnings.catch_warnings(), without_op_locations():
        for message in UPSTREAM_DEPRECATIONS:
            warnings.filterwarnings("ignore", message=message, category=DeprecationWarning)
        return cute.compile(t.launcher.launch, *args, *t.launch_constants(sms), options=options)


def fake_args(t: Target) -> tuple:
    """Compile-only arguments of the target's ``launch``, from its kernel's own ``fake_args`` (GEMM: a, b, c,
    stream; the copies: src, dst, stream).

    A dynamic target asks for symbolic extents (``dynamic=True``, passed only then); design parameters
    the kernel's ``fake_args`` takes by keyword (the grid-stride copy's ``vector_bytes``) come from the
    target's parameters.
    """
    own = t.launcher.fake_args
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

    return divisibility_of(fake_args(t)[:-1]) if t.dynamic else None


def preload_runtime() -> None:
    """Load CuTe DSL's runtime libraries with global symbols (the object-file export and loader need them)."""
    import ctypes

    from cutlass.cute.runtime import find_runtime_libraries

    for path in find_runtime_libraries(enable_tvm_ffi=False):
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def compile_job(target: dict[str, Any], arch: str, sms: int) -> dict[str, Any]:
    """A worker job: compile for ``arch`` with fake tensors; PTX, cubin and ptxas' resource report.

    The compiled kernel is kept, so a run of the same target in this worker does not compile it again.
    """
    t = Target.from_dict(target)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch, capture_fds(echo=True) as log:
        # --keep-ptx/--keep-cubin also write files; send them to a scratch folder, not the working directory.
        fn = compile_target(t, sms, f"{_options(arch, True)} --dump-dir {scratch}")
    seconds = time.perf_counter() - started
    _remember(_cache_key(t, sms, arch), fn)
    return {
        "ptx": fn.artifacts.PTX,
        "cubin": bytes(fn.artifacts.CUBIN or b""),
        "seconds": seconds,
        "log": log[0][-20000:],
        **parse_ptxas(log[0]),
    }


def export_job(target: dict[str, Any], arch: str, sms: int, directory: str, prefix: str) -> dict[str, Any]:
    """A worker job: compile for ``arch`` with the TVM FFI and write ``<prefix>.o`` into ``directory``, its one
    function named ``prefix``."""
    t = Target.from_dict(target)
    fn = compile_target(t, sms, _options(arch, False), tvm_ffi=True)
    fn.export_to_c(os.path.join(directory, f"{prefix}.o"), function_name=prefix)
    marks = tensor_marks(t)
    # A None mark: an argument that is not a tensor (attention's scale), passed to the kernel as it is.
    return {"files": sorted(os.listdir(directory)),
            "tensor_divisibility": None if marks is None else [None if m is None else list(m) for m in marks]}
