"""What every package tslab exports runs, whatever its kind; copied verbatim into each package as ``_runtime.py``.

A package is a folder: its kind's module as ``__init__.py`` (:mod:`tslab.exported.copy`, ``gemm`` or
``attention``), this module, ``design.json`` (the designs, their verdicts and shape rules, the object file of
each), the object files, ``VERDICT.txt`` and ``test_kernel.py``. Each object is compiled with CuTe DSL's TVM FFI:
one ``tvm_ffi.Function`` that takes torch tensors (any DLPack tensor) and launches on the caller's current stream,
and that itself refuses a tensor of the wrong dtype, rank, device or alignment, or an extent its compile did not
promise. This module loads each object once per process, checks the GPU's arch once per device, and holds the
detailed checks that name the rule an argument breaks and its fix, run before the first launch on a device and
whenever the compiled function refuses its arguments. It imports nothing of tslab.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any


class ExportedKernelError(RuntimeError):
    """A launch this exported kernel cannot do (no GPU, the wrong GPU, or an argument it cannot take)."""


class ExportedInputError(ExportedKernelError, ValueError):
    """An argument this kernel cannot take (its shape, dtype, layout or device); the message names the rule and
    the fix."""


#: What a TVM FFI function raises for arguments it refuses (dtype, rank, device, alignment, divisibility).
ABI_ERRORS = (TypeError, ValueError)
#: What reading a shape or a device off an argument that is no tensor raises on the fast path.
PROBE_ERRORS = (AttributeError, TypeError, ValueError, IndexError, ZeroDivisionError)


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


def device_index(t: Any) -> int:
    """The CUDA device index of tensor ``t`` (-1 off the GPU; 0 when it names none)."""
    get_device = getattr(t, "get_device", None)
    if get_device is not None:
        return get_device()
    index = getattr(getattr(t, "device", None), "index", None)
    return index if isinstance(index, int) else 0


def on_stream(stream: Any, t: Any) -> Any:
    """A context in which ``stream`` is torch's current stream (the compiled kernels launch on it): a
    ``torch.cuda.Stream``, or a raw CUDA stream (a cuda-python ``CUstream`` or its integer handle) on ``t``'s
    device."""
    import torch

    if isinstance(stream, torch.cuda.Stream):
        return torch.cuda.stream(stream)
    return torch.cuda.stream(torch.cuda.ExternalStream(int(stream), device=t.device))


#: The torch libraries the package's ops are defined in (kept alive: an op lives as long as its library).
_LIBRARIES: list[Any] = []


def register_op(name: str, schema: str, impl: Any, fake: Any, backward: Any = None) -> Any:
    """``torch.ops.<name>`` (``name`` = "namespace::op", ``schema`` its arguments and results) calling ``impl``,
    with ``fake`` for torch.compile; returns the op, or None without torch. Defined with torch's ``Library``, which
    costs a call a few microseconds where ``torch.library.custom_op`` costs tens. With ``backward(ctx, *grads)``
    (``ctx.saved_tensors``: the tensor arguments), a call takes the autograd path only when an input needs a
    gradient; without it, a backward through the op fails in torch's own words."""
    try:
        import torch
    except ImportError:  # the kernels themselves need no torch
        return None
    namespace, op_name = name.split("::")
    try:  # the package imported once more in this process (a reload): its op is defined already
        return getattr(getattr(torch.ops, namespace), op_name)
    except (AttributeError, RuntimeError):
        pass
    library = torch.library.Library(namespace, "DEF")
    _LIBRARIES.append(library)
    library.define(op_name + schema)
    library.impl(op_name, impl, "CompositeExplicitAutograd")
    torch.library.register_fake(name, fake, lib=library)
    packet = getattr(getattr(torch.ops, namespace), op_name)
    if backward is None:
        return packet
    op = packet.default
    below_autograd = torch._C._AutoDispatchBelowAutograd

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *args: Any) -> Any:
            ctx.save_for_backward(*(a for a in args if isinstance(a, torch.Tensor)))
            with below_autograd():
                return op(*args)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            return backward(ctx, *grads)

    def autograd(*args: Any) -> Any:
        if torch.is_grad_enabled() and any(getattr(a, "requires_grad", False) for a in args):
            return Function.apply(*args)
        with below_autograd():
            return op(*args)

    library.impl(op_name, autograd, "Autograd")
    return packet


def dtype_name(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


class Package:
    """One package: its ``design.json`` and its compiled functions, each loaded once per process."""

    def __init__(self, init_file: str, name: str) -> None:
        self.here = Path(init_file).resolve().parent
        self.name = name
        self.meta: dict[str, Any] = json.loads((self.here / "design.json").read_text())
        #: The compiled designs, each with its object file, shape rule and checks (several for a GEMM dispatch by
        #: M, or one per value of a kernel's variants param: attention's causal).
        self.designs: list[dict[str, Any]] = self.meta.get("designs") or [
            dict(self.meta, object="kernel.o", prefix="kernel")]
        self.arch: str = self.meta["arch"]
        #: The tensors' dtype (none for a captured kernel's package: its host function says).
        self.dtype: str | None = self.meta.get("dtype")
        #: None: any shape the designs' shape rules accept; else the one shape the package was compiled for.
        self.shape: tuple[int, ...] | None = None if self.meta.get("dynamic", True) else tuple(self.meta["shape"])
        #: "tvm-ffi": the objects are TVM FFI functions; "cute": CuTe DSL's plain objects (a captured kernel whose
        #: arguments the TVM FFI cannot take).
        self.abi: str = self.meta.get("call", {}).get("abi", "tvm-ffi")
        #: Each design's compiled function, by index, once loaded (the fast path reads it directly).
        self.functions: dict[int, Any] = {}
        #: The devices whose arch was checked: a launch on one of them skips the check.
        self.devices: set[int] = set()
        self._loading = threading.Lock()

    def describe(self) -> str:
        """What this package holds, in words (appended to the package's docstring)."""
        about = self.meta.get("about", {})
        dtype = f" in {self.dtype}" if self.dtype else ""
        lines = [f"This package: {self.meta['kernel']} compiled for {self.arch}{dtype}."]
        lines += [f"{label}: {about[key]}." for key, label in (("rules", "Shapes"), ("designs", "Designs"))
                  if key in about]
        return "\n\n" + "\n".join(lines) + "\n"

    def minimum(self, index: int) -> tuple[int, ...]:
        """Design ``index``'s smallest extent per dimension (none for a package of one shape): the one part of its
        shape rule a fast call checks itself, as the compiled function checks the multiples but takes an extent
        of 0."""
        return () if self.shape is not None else tuple(self.designs[index]["shape_rules"]["min"])

    def load(self, index: int = 0) -> Any:
        """Design ``index``'s compiled function (loaded once per process, without compiling)."""
        fn = self.functions.get(index)
        if fn is None:
            with self._loading:
                fn = self.functions.get(index) or self._load(index)
        return fn

    def _load(self, index: int) -> Any:
        versions = self.meta.get("runtime", {})
        tvm_ffi = self.abi == "tvm-ffi"
        if tvm_ffi:
            try:
                import tvm_ffi as _  # noqa: F401
            except ImportError:
                raise ExportedKernelError(
                    f"module '{self.name}': its kernels are called through CuTe DSL's TVM FFI, and apache-tvm-ffi is "
                    f"not installed: pip install apache-tvm-ffi (exported with "
                    f"{versions.get('apache-tvm-ffi', 'apache-tvm-ffi 0.1')})") from None
        try:
            from cutlass.cute.runtime import find_runtime_libraries, load_module
        except ImportError:
            raise ExportedKernelError(
                f"module '{self.name}': loading its kernels needs CuTe DSL's runtime: pip install "
                f"nvidia-cutlass-dsl=={versions.get('nvidia-cutlass-dsl', '4.8.1')}") from None
        entry = self.designs[index]
        path = str(self.here / entry["object"])
        if tvm_ffi:
            fn = load_module(path, enable_tvm_ffi=True)[entry["prefix"]]
        else:  # a plain object needs the runtime's symbols global before it loads
            import ctypes
            import os

            for library in find_runtime_libraries(enable_tvm_ffi=False):
                if os.path.exists(library):
                    ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
            fn = getattr(load_module(path), entry["prefix"])
        self.functions[index] = fn
        return fn

    def require_gpu(self, t: Any) -> None:
        """Raise unless ``t``'s device is a GPU of this package's arch; checked once per device."""
        index = device_index(t)
        if index in self.devices:
            return
        arch = gpu_arch(max(index, 0))
        if arch is None:
            raise ExportedKernelError(f"module '{self.name}': no NVIDIA GPU or driver is present; this module needs "
                                      f"a GPU of arch {self.arch} to run (load() works without one)")
        if arch != self.arch:
            raise ExportedKernelError(f"module '{self.name}': compiled for {self.arch} but this GPU is {arch}; "
                                      f"export it again with arch={arch!r}")
        if index >= 0:
            self.devices.add(index)

    def check_tensor(self, name: str, t: Any) -> None:
        """Raise naming what keeps ``t`` from being one of the kernel's tensors (type, dtype, device, layout)."""
        if not all(hasattr(t, attr) for attr in ("shape", "dtype", "is_cuda", "is_contiguous", "data_ptr")):
            raise ExportedInputError(f"{name}: expected a CUDA torch.Tensor, got {type(t).__name__}")
        if dtype_name(t) != self.dtype:
            raise ExportedInputError(f"{name}: dtype {t.dtype} != {self.dtype}; convert it (.to(torch.{self.dtype})) "
                                     "or export again with dtype=...")
        if not t.is_cuda or not t.is_contiguous() or t.data_ptr() % 16:
            raise ExportedInputError(f"{name}: must be a contiguous CUDA tensor aligned to 16 bytes (.contiguous())")

    def check_shape(self, name: str, shape: tuple[int, ...], index: int = 0) -> None:
        """Raise naming the rule ``shape`` breaks (design ``index``'s shape rule, or the one shape of a package
        compiled for one)."""
        if self.shape is not None:
            if shape != self.shape:
                raise ExportedInputError(f"{name}: shape {shape} != {self.shape}; this kernel was exported for "
                                         f"{self.shape} only; export it again without shape= to serve every shape")
            return
        rules = self.designs[index]["shape_rules"]
        if len(shape) != len(rules["names"]):
            raise ExportedInputError(f"{name}: shape {shape} has {len(shape)} dimensions; this kernel takes "
                                     f"{len(rules['names'])}: {', '.join(rules['names'])} ({rules['text']})")
        for size, dim, low, multiple in zip(shape, rules["names"], rules["min"], rules["multiple_of"], strict=True):
            if size < low:
                raise ExportedInputError(f"{name}: shape {shape}: {dim} = {size} is below {low}; this kernel "
                                         f"takes {rules['text']}")
            if size % multiple:
                raise ExportedInputError(f"{name}: shape {shape}: {dim} = {size} is not a multiple of {multiple}; "
                                         f"this kernel takes {rules['text']}; pad {dim}")

    def refused(self, what: str, error: Exception,
                fix: str = "pass contiguous CUDA tensors of the package's dtype (.contiguous(), .to(...))",
                ) -> ExportedInputError:
        """The error for arguments the compiled function refused though every rule checked here holds."""
        text = " ".join(str(error).split())
        return ExportedInputError(f"{what}: the compiled kernel refused its arguments ({text}); {fix}")
