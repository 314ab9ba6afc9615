"""A captured TS kernel exported by tslab: ``load()`` is its compiled host function, loaded once, never recompiled.

    import my_kernel                       # this package, by its folder's name
    fn = my_kernel.load()                  # the compiled host function
    fn(*tensors)                           # or my_kernel.run(*tensors)

How it is called is in ``CALL`` (design.json's "call"): compiled with CuTe DSL's TVM FFI ("tvm-ffi"), it takes
torch tensors (any DLPack tensor) for the host function's tensor arguments and launches on torch's current stream,
so the host function's stream arguments are not passed, and a CUDA graph can capture it once it has run eagerly;
a host function whose arguments the TVM FFI cannot take is compiled as CuTe DSL's plain object ("cute"), called
with what the host function takes at run time (CuTe tensors, ``cutlass.cute.runtime.from_dlpack(t)``, and
streams). Needs nvidia-cutlass-dsl's runtime (and apache-tvm-ffi for "tvm-ffi") and a GPU of the package's arch.
design.json holds the design (``tslab.Design.from_json`` re-opens it where the kernel file is), VERDICT.txt the
verdict it was built from.
"""

from typing import Any

from . import _runtime
from ._runtime import ExportedInputError, ExportedKernelError, gpu_arch

__all__ = ["ARCH", "CALL", "META", "ExportedInputError", "ExportedKernelError", "gpu_arch", "load", "run"]

NAME = __name__.rpartition(".")[2]
_PACKAGE = _runtime.Package(__file__, NAME)
META, ARCH = _PACKAGE.meta, _PACKAGE.arch
#: How the compiled host function is called: "abi" ("tvm-ffi" or "cute") and its arguments, in words.
CALL: dict[str, Any] = META["call"]
load = _PACKAGE.load
if __doc__ is not None:
    __doc__ += _PACKAGE.describe()
_FUNCTIONS = _PACKAGE.functions


def run(*args: Any) -> Any:
    """Call the compiled host function with ``args`` (see ``CALL``)."""
    fn = _FUNCTIONS.get(0) or load(0)
    try:
        return fn(*args)
    except _runtime.ABI_ERRORS as exc:
        if args:
            _PACKAGE.require_gpu(args[0])
        raise _PACKAGE.refused(f"{NAME}.run", exc, f"it takes {CALL['arguments']}") from exc
