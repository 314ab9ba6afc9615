"""An exported package's own code, on the CPU (a copy package of tma_copy): it is tslab.exported's modules copied
verbatim, reads what differs between packages from design.json, loads each object once per process, says what to
install when apache-tvm-ffi is missing, and names the rule an argument breaks both before the first launch on a
device and when the compiled TVM FFI function refuses its arguments."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tensor_stand_in import StandIn

import tslab.exported
from tslab.gpu import device
from tslab.gpu.export import export
from tslab.kernels import tma_copy

NAME = "tslab_copy_code_pkg"
RULE = "2-D, rows a multiple of 16 bytes (8 float16 elements) for TMA"


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return export(tma_copy.design(), tmp_path_factory.mktemp("exports") / NAME)


@pytest.fixture
def kernel(package):
    """The package imported afresh, with device 0 taken as checked (no GPU here), so calls take the fast path."""
    sys.path.insert(0, str(package.parent))
    try:
        sys.modules.pop(NAME, None)
        sys.modules.pop(f"{NAME}._runtime", None)
        module = importlib.import_module(NAME)
        module._DEVICES.add(0)
        yield module
    finally:
        sys.path.remove(str(package.parent))
        sys.modules.pop(NAME, None)
        sys.modules.pop(f"{NAME}._runtime", None)


def run_python(code: str, package: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), str(package.parent)], capture_output=True,
                          text=True, timeout=300, check=False)


def test_the_package_code_is_tslab_exported_verbatim(package):
    code = Path(tslab.exported.__file__).parent
    assert (package / "__init__.py").read_bytes() == (code / "copy.py").read_bytes()
    assert (package / "_runtime.py").read_bytes() == (code / "_runtime.py").read_bytes()
    assert (package / "test_kernel.py").read_bytes() == (code / "selftest_copy.py").read_bytes()


def test_what_differs_between_packages_is_data_in_design_json(package, kernel):
    meta = json.loads((package / "design.json").read_text())
    assert meta["about"] == {"rules": RULE}
    assert meta["self_test"] == {"examples": [[16384, 16384], [8, 64]]}
    assert set(meta["runtime"]) == {"nvidia-cutlass-dsl", "apache-tvm-ffi"}
    assert kernel.NAME == NAME and (kernel.ARCH, kernel.DTYPE, kernel.SHAPE) == ("sm_90a", "float16", None)
    assert kernel.__doc__.endswith(f"This package: tma_copy compiled for sm_90a in float16.\nShapes: {RULE}.\n")
    assert kernel.torch_op is None or str(kernel.torch_op) == f"{NAME}.copy"


def test_each_object_is_loaded_once_per_process(package):
    out = run_python(f"""
        import sys
        import cutlass.cute.runtime as runtime
        loads = []
        real = runtime.load_module
        runtime.load_module = lambda *args, **kwargs: loads.append(args) or real(*args, **kwargs)
        sys.path.insert(0, sys.argv[1])
        import {NAME} as kernel
        first = kernel.load()
        print(type(first).__name__, all(kernel.load() is first for _ in range(3)), len(loads))
    """, package)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["Function", "True", "1"]


def test_without_apache_tvm_ffi_loading_says_what_to_install(package):
    out = run_python(f"""
        import importlib.abc, sys
        class NoTvmFfi(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "tvm_ffi" or name.startswith("tvm_ffi."):
                    raise ImportError("not installed here")
        sys.modules.pop("tvm_ffi", None)
        sys.meta_path.insert(0, NoTvmFfi())
        sys.path.insert(0, sys.argv[1])
        import {NAME} as kernel
        try:
            kernel.load()
        except kernel.ExportedKernelError as exc:
            print(exc)
    """, package)
    assert out.returncode == 0, out.stderr[-2000:]
    version = json.loads((package / "design.json").read_text())["runtime"]["apache-tvm-ffi"]
    assert out.stdout.strip() == (f"module '{NAME}': its kernels are called through CuTe DSL's TVM FFI, and "
                                  f"apache-tvm-ffi is not installed: pip install apache-tvm-ffi (exported with "
                                  f"{version})")


def test_arguments_the_compiled_function_refuses_are_named_by_the_package_checks(kernel):
    """Stand-ins pass the fast checks and reach the TVM FFI function, which refuses them as no tensors; the detailed
    checks then run, and with nothing left to name, say what the compiled function said."""
    with pytest.raises(kernel.ExportedInputError) as caught:
        kernel.run(StandIn((64, 64)), StandIn((64, 64)))
    assert str(caught.value).startswith(f"{NAME}.run: the compiled kernel refused its arguments (Mismatched type on "
                                        "argument #0 when calling: `launch(src: Tensor([n0, n1], float16), dst: "
                                        "Tensor([n2, n3], float16))`, expected Tensor); pass contiguous CUDA tensors")
    assert isinstance(caught.value.__cause__, TypeError)


@pytest.mark.parametrize(("src", "dst", "message"), [
    # the compiled function checks these itself; the package names the rule when it refuses
    (StandIn((64, 60)), StandIn((64, 60)), f"src: shape (64, 60): cols = 60 is not a multiple of 8; this kernel takes "
                                           f"{RULE}; pad cols"),
    (StandIn((64, 64), dtype="float32"), StandIn((64, 64)), "src: dtype torch.float32 != float16; convert it "
                                                            "(.to(torch.float16)) or export again with dtype=..."),
    (StandIn((64, 64)), StandIn((64, 64), ptr=0x7F0000000008), "dst: must be a contiguous CUDA tensor aligned to 16 "
                                                               "bytes (.contiguous())"),
    (StandIn((8, 8, 8)), StandIn((8, 8, 8)), f"src: shape (8, 8, 8) has 3 dimensions; this kernel takes 2: rows, cols "
                                             f"({RULE})"),
    # and these before any launch: what the compiled function cannot see
    (StandIn((64, 64)), StandIn((64, 32)), "dst: shape (64, 32) != src's (64, 64)"),
    (StandIn((0, 64)), StandIn((0, 64)), f"src: shape (0, 64): rows = 0 is below 1; this kernel takes {RULE}"),
    (StandIn((64, 64), stride=(128, 1)), StandIn((64, 64)), "src: must be a contiguous CUDA tensor aligned to 16 "
                                                            "bytes (.contiguous())"),
    ([[1.0]], StandIn((64, 64)), "src: expected a CUDA torch.Tensor, got list"),
])
def test_each_rule_is_named_with_its_fix(kernel, src, dst, message):
    with pytest.raises(kernel.ExportedInputError) as caught:
        kernel.run(src, dst)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_a_cpu_torch_tensor_is_refused_by_the_compiled_function_and_named(kernel):
    torch = pytest.importorskip("torch")
    kernel._DEVICES.add(-1)  # as if the CPU were a checked GPU: the call reaches the compiled function
    src = torch.zeros(64, 64, dtype=torch.float16)
    with pytest.raises(kernel.ExportedInputError, match=r"^src: must be a contiguous CUDA tensor") as caught:
        kernel.run(src, torch.empty_like(src))
    assert "expected device_type=cuda" in str(caught.value.__context__)


def test_without_a_gpu_a_call_says_one_is_needed(package):
    if device() is not None:
        pytest.skip("this machine has a GPU")
    out = run_python(f"""
        import sys
        sys.path.insert(0, sys.argv[1])
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import {NAME} as kernel
        from tensor_stand_in import StandIn
        try:
            kernel.copy(StandIn((64, 64)))
        except kernel.ExportedKernelError as exc:
            print(exc)
    """, package)
    assert out.stdout.strip() == (f"module '{NAME}': no NVIDIA GPU or driver is present; this module needs a GPU of "
                                  "arch sm_90a to run (load() works without one)"), out.stderr[-2000:]
