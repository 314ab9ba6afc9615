"""The code every package tslab exports runs, one module per package kind, copied verbatim into each package.

A package of kind ``copy``, ``gemm`` or ``attention`` holds that kind's module as its ``__init__.py``,
:mod:`._runtime` beside it, its kind's self-test as ``test_kernel.py``, and its data: ``design.json`` (what the
modules read: the designs, their shape rules and verdicts, the object file of each), the object files compiled with
CuTe DSL's TVM FFI, and ``VERDICT.txt``. The modules import nothing of tslab (a package loads where tslab is not
installed), so nothing in tslab imports them either: they run, and are tested, as the package's own code.
"""

#: The package kinds of catalog kernels (a kernel's ``RULES.package``), each a module here with its self-test
#: ``selftest_<kind>.py``; a captured kernel's package holds :mod:`.captured`.
KINDS = ("copy", "gemm", "attention")
