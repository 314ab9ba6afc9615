"""``compile(design, arch)``: check the design, compile its CuTe DSL kernel in a worker, keep artifacts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..compiling.compile import parse_ptxas
from ..compiling.targets import Target, require_arch, require_kernel_arch, resolve
from .errors import KernelHungError, NoGpuError, WorkerTimeoutError
from .guards import DEFAULT_SMS, SETUP_TIMEOUT, checked_target, require_gpu_for, verified
from .worker import KERNEL_PHASE, run_job


@dataclass
class CompiledKernel:
    """A design compiled for one arch: PTX, cubin, ptxas' resource report, the verdict it was built from."""

    target: Target
    arch: str
    sms: int
    verdict: Any
    ptx: str
    cubin: bytes
    compile_seconds: float
    registers: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack_frame: int | None = None
    log: str = field(default="", repr=False)
    captured: bool = False  # a captured kernel: it runs on the user's inputs (run(inputs=...))

    @property
    def smem_bytes(self) -> int:
        """Dynamic SMEM per block as TS lays it out (data plus pipeline barriers)."""
        return int(getattr(self.verdict, "smem_used", 0) or 0)

    @property
    def spills(self) -> int | None:
        if self.spill_stores is None and self.spill_loads is None:
            return None
        return (self.spill_stores or 0) + (self.spill_loads or 0)

    def summary(self) -> dict[str, Any]:
        return {
            "kernel": self.target.kernel,
            "arch": self.arch,
            "shape": self.target.shape,
            "dtype": self.target.dtype,
            "registers": self.registers,
            "spills": self.spills,
            "stack_frame": self.stack_frame,
            "smem_bytes": self.smem_bytes,
            "compile_seconds": round(self.compile_seconds, 2),
            "verdict": self.verdict.status,
            "ptx_lines": self.ptx.count("\n"),
            "cubin_bytes": len(self.cubin),
        }

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"<CompiledKernel {s['kernel']} {s['arch']} {s['shape']} {s['dtype']}: "
            f"{s['registers']} registers, {s['spills']} B spills, {s['smem_bytes']} B SMEM, "
            f"{s['compile_seconds']} s, verdict {s['verdict']}>"
        )

    def run(self, *, seed: int = 0, timeout: float = 300.0, inputs: Any = None, reference: Any = None,
            outputs: Any = None, rtol: float | None = None, atol: float | None = None) -> dict[str, Any]:
        """Run once on this machine's GPU; raises when the output is wrong.

        A catalog kernel runs on fresh random input and is checked against it (``seed``). A captured kernel runs
        on ``inputs()`` (a function returning the host function's arguments, CUDA tensors for its fake tensors);
        ``outputs`` names the arguments it writes (poisoned before the run, unwritten elements reported) and
        ``reference(*args)`` returns what they must hold (``None``: run only); ``rtol``/``atol`` as torch's.
        The functions may be typed into a notebook cell or be lambdas: the GPU worker gets copies of them.

        ``timeout``: seconds the kernel may run once launched. A kernel that does not finish raises
        :class:`KernelHungError`, which quotes the checker's counterexample when it predicted the hang; its
        worker is stopped, which frees the GPU for the next run.
        """
        if self.captured:
            from .captured import run_captured

            return run_captured(self, inputs=inputs, reference=reference, outputs=outputs, rtol=rtol, atol=atol,
                                timeout=timeout)
        try:
            return run_on_gpu(self.target, seed=seed, timeout=timeout)
        except WorkerTimeoutError as exc:
            if exc.phase != KERNEL_PHASE:
                raise
            raise KernelHungError.from_verdict(self.target.kernel, self.verdict, timeout) from None

    def bench(self, **kwargs: Any) -> Any:
        """Time this kernel (see :func:`tslab.gpu.bench`); a captured kernel takes ``inputs``, ``baseline`` (a
        function timed on the same inputs, e.g. the torch op it replaces), ``reference`` and ``outputs``."""
        if self.captured:
            from .captured import bench_captured

            return bench_captured(self, **kwargs)
        from .bench import bench

        return bench(self, **kwargs)

    def profile(self, **kwargs: Any) -> Any:
        """What every warp of this kernel did on the GPU (see :func:`tslab.gpu.profile`): same shape, dtype and
        launch options as compiled; a captured kernel takes ``inputs`` (and ``reference``, ``outputs``)."""
        from .profiling import profile

        if self.captured:
            return profile(self.verdict.design, force=not self.target.validate, **kwargs)
        return profile(self.verdict.design, shape=self.target.shape, dtype=self.target.dtype,
                       launch=dict(self.target.launch), **kwargs)


def compile(
    design: Any,
    arch: str | None = None,
    *,
    shape: tuple[int, ...] | None = None,
    dtype: str | None = None,
    force: bool = False,
    sms: int | None = None,
    launch: dict[str, Any] | None = None,
    timeout: float = 600.0,
) -> CompiledKernel:
    """Compile ``design`` for ``arch`` (default: this machine's GPU) in a worker process.

    Without a GPU ``arch`` must be given (e.g. ``"sm_90a"``). ``sms`` sizes the persistent grid
    (default: this GPU's count, else the arch's usual count); ``launch`` overrides the kernel module's
    ``LAUNCH`` options (e.g. ``{"ctas_per_sm": 1}``).
    A captured design (``tslab.capture``) is compiled as edited: its knobs in the kernel's code, its edits
    applied at TaskManager construction; it is compiled to inspect (PTX, registers), not run by tslab.
    """
    if getattr(design, "is_captured", False):
        return compile_captured_design(design, arch, force=force, timeout=timeout)
    target = resolve(design, shape, dtype, launch)
    if arch is None or sms is None:
        from .device import device

        info = device()
        if arch is None:
            if info is None:
                raise NoGpuError(
                    "compile: no GPU here to take the arch from; pass arch='sm_90a' (H100/H200) "
                    "or arch='sm_100a' (B200)"
                )
            arch = info.arch
        if sms is None:
            sms = info.sm_count if info is not None and info.arch == arch else DEFAULT_SMS.get(arch, 132)
    require_arch(arch, f"compile of '{target.kernel}'")
    require_kernel_arch(target.kernel, arch, "compile")
    verdict = verified(design, force)
    target = checked_target(target, verdict)
    out = run_job(
        "tslab.compiling.compile:compile_job",
        {"target": target.to_dict(), "arch": arch, "sms": sms},
        timeout=timeout,
        what=f"compile of '{target.kernel}' for {arch}",
    )
    return CompiledKernel(
        target=target,
        arch=arch,
        sms=sms,
        verdict=verdict,
        ptx=out["ptx"],
        cubin=out["cubin"],
        compile_seconds=out["seconds"],
        registers=out["registers"],
        spill_stores=out["spill_stores"],
        spill_loads=out["spill_loads"],
        stack_frame=out["stack_frame"],
        log=out["log"],
    )


def compile_captured_design(design: Any, arch: str | None, *, force: bool, timeout: float) -> CompiledKernel:
    """Check a captured ``design`` (refused unless ok or ``force``), then compile its kernel as edited for ``arch``:
    the kernel's own host code with its knobs, the design's edits applied inside the trace."""
    from ..compiling.captured import compile_captured

    verdict = verified(design, force)
    out = compile_captured(design, arch, timeout=timeout)
    stats = parse_ptxas(out["log"])
    target = Target(kernel=design.kernel, params=design.knobs(), shape=(), dtype="captured", validate=verdict.ok)
    return CompiledKernel(target=target, arch=out["arch"], sms=0, verdict=verdict, ptx=out["ptx"], cubin=out["cubin"],
                          compile_seconds=out["seconds"], registers=stats["registers"],
                          spill_stores=stats["spill_stores"], spill_loads=stats["spill_loads"],
                          stack_frame=stats["stack_frame"], log=out["log"][-20000:], captured=True)


def run_on_gpu(target: Target, *, seed: int = 0, timeout: float = 300.0) -> dict[str, Any]:
    """Compile for this GPU, run once, check against the input (in a worker; the kernel gets ``timeout`` s)."""
    from .errors import CheckFailedError

    require_gpu_for(target, f"run of '{target.kernel}'")

    return run_job(
        "tslab.gpu.jobs:run_job",
        {"target": target.to_dict(), "seed": seed, "timeout": timeout},
        timeout=SETUP_TIMEOUT,
        what=f"run of '{target.kernel}'",
        error=CheckFailedError,
    )
