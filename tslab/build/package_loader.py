"""The ``load()`` every package tslab exports carries: its object file loaded without compiling, nor tslab.

Written into the package's ``__init__.py`` as source (the package must not import tslab); the package defines
``HERE`` (its folder) and ``_module = None`` before it.
"""

LOAD_FUNCTION = '''def load() -> Any:
    """The exported kernel's compiled function (loaded once, without compiling)."""
    global _module
    if _module is None:
        import ctypes
        import os

        from cutlass.cute.runtime import find_runtime_libraries, load_module

        for path in find_runtime_libraries(enable_tvm_ffi=False):  # global symbols for the object file
            if os.path.exists(path):
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        _module = load_module(str(HERE / "kernel.o"))
    return _module.kernel
'''
