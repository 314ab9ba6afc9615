"""The GPU machine has CuTe DSL and torch but neither the Jupyter stack nor the test extra: ``python -m pytest -m gpu
tests`` must collect and run there with the runtime dependencies alone. A fresh Python with those packages hidden
(and pytest's plugins not loaded, as where nbval is not installed) stands for it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What the GPU machine lacks: the Jupyter stack (every ``jupyter*`` package too), nbval and the test extra's others.
HIDDEN = ("ipywidgets", "anywidget", "plotly", "nbval", "IPython", "ipykernel", "nbformat", "nbclient", "traitlets",
          "comm", "widgetsnbextension", "hypothesis", "playwright")
HIDE = textwrap.dedent(f"""
    import pkgutil, sys
    for name in {HIDDEN!r} + tuple(m.name for m in pkgutil.iter_modules() if m.name.startswith("jupyter")):
        sys.modules[name] = None  # import raises ModuleNotFoundError, importlib.util.find_spec says None
""")


def _python(code: str, *, hide: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("PYTEST_ADDOPTS", None)  # a run's own options (-v prints the collection as a tree) are not the GPU's
    if hide:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run([sys.executable, "-c", (HIDE if hide else "") + code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_tslab_below_the_widgets_imports_no_jupyter_package():
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        import tslab, tslab.cli
        for room in ("core", "kernels", "compiling", "gpu", "capture", "sweep"):
            package = importlib.import_module(f"tslab.{room}")
            for module in pkgutil.iter_modules(package.__path__):
                importlib.import_module(f"tslab.{room}.{module.name}")
        print("imported", len([m for m in sys.modules if m.startswith("tslab.")]))
    """)
    out = _python(code, hide=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("imported")


def _gpu_tests(hide: bool) -> list[str]:
    code = "import sys, pytest; sys.exit(pytest.main(['-m', 'gpu', 'tests', '--collect-only', '-q', '-p', " \
           "'no:cacheprovider']))"
    out = _python(code, hide=hide)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return sorted(line for line in out.stdout.splitlines() if "::" in line)


def test_every_gpu_test_collects_with_the_runtime_dependencies_alone():
    everything, runtime_only = _gpu_tests(hide=False), _gpu_tests(hide=True)
    assert len(runtime_only) > 100
    # Only the widget's own GPU tests need the Jupyter stack.
    assert sorted(set(everything) - set(runtime_only)) == [t for t in everything if "test_widgets_" in t]
    assert set(runtime_only) <= set(everything)


def test_where_nbval_is_installed_the_notebooks_still_run_under_it():
    import importlib.util

    import pytest

    if importlib.util.find_spec("nbval") is None:
        pytest.skip("nbval is not installed here")
    out = _python("import sys, pytest; sys.exit(pytest.main(['notebooks/00_tour.ipynb', '--collect-only', '-q', "
                  "'-p', 'no:cacheprovider']))", hide=False)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "notebooks/00_tour.ipynb::Cell 0" in out.stdout
