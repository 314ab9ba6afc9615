"""Compiles that collect ptxas' report without tracing a Python source location for every op.

With ``remarks{ptx}`` in its options, CuTe DSL 4.8.1 switches on per-op source locations (it walks the Python stack
and reads the source line for each of the ~15,000 ops a GEMM traces) so that diagnostics can point at user code.
That doubled a catalog kernel's compile (gemm_sm90: 3.5 s -> 1.6 s without it, attention_sm90 5.7 s -> 3.0 s on a
2-core machine), the bulk of the Studio's edit -> GPU step. The PTX and cubin are the same either way (no line info
is emitted without ``--generate-line-info``), and ptxas' report still arrives whole: registers, spills, stack frame,
the C75xx remarks, each headed by the kernel's ``@cute.jit`` location.

The switch is CuTe DSL's private ``cutlass.base_dsl.dsl._set_enable_frame_filtering`` (pinned with
``nvidia-cutlass-dsl==4.8.1``); ``tests/test_source_locations.py`` fails when it moves. Where it is missing the
compile runs as CuTe DSL does by default, only slower.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_LOCK = threading.RLock()


@contextlib.contextmanager
def without_op_locations() -> Iterator[None]:
    """While active, ``cute.compile`` traces no per-op source locations (see the module docstring)."""
    from cutlass.base_dsl import dsl

    with _LOCK:
        setter = getattr(dsl, "_set_enable_frame_filtering", None)
        if setter is None:
            yield
            return
        dsl._set_enable_frame_filtering = lambda _enable: setter(False)
        try:
            yield
        finally:
            dsl._set_enable_frame_filtering = setter
