"""The ``load()`` every package tslab exports carries: its object files loaded without compiling, nor tslab.

Written into the package's ``__init__.py`` as source (the package must not import tslab); the package defines
``HERE`` (its folder), ``DESIGNS`` (one entry per compiled design, each naming its ``object`` file and function
``prefix``) and ``_modules = {}`` before it.
"""

LOAD_FUNCTION = '''def load(index: int = 0) -> Any:
    """Design ``index``'s compiled function (loaded once, without compiling); a package of one design has only 0."""
    if index not in _modules:
        import ctypes
        import os

        from cutlass.cute.runtime import find_runtime_libraries, load_module

        for path in find_runtime_libraries(enable_tvm_ffi=False):  # global symbols for the object file
            if os.path.exists(path):
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        _modules[index] = load_module(str(HERE / DESIGNS[index]["object"]))
    return getattr(_modules[index], DESIGNS[index]["prefix"])
'''
