import importlib.util
import os
import tempfile

import pytest

#: Test modules that import tslab.widgets (ipywidgets, anywidget, plotly) or drive JupyterLab.
JUPYTER_TESTS = ("test_widgets_*.py", "test_replay_widget.py", "test_swimlane.py", "test_saved_output.py",
                 "test_studio_properties.py", "browser/*")
#: Packages beyond the runtime dependencies, and the test modules that import them: the GPU machine has neither the
#: Jupyter stack nor the test extra, so there those modules are left out instead of stopping the collection
#: (test_runtime_only.py holds every other module, the GPU tests included, to importing without them).
OPTIONAL = {"ipywidgets": JUPYTER_TESTS, "anywidget": JUPYTER_TESTS, "plotly": JUPYTER_TESTS,
            "hypothesis": ("test_design_schema.py", "test_explorer.py", "test_knobs.py", "test_properties.py",
                           "test_search.py", "test_studio_properties.py", "test_trace.py")}
MISSING = sorted(package for package in OPTIONAL if importlib.util.find_spec(package) is None)
collect_ignore_glob = sorted({pattern for package in MISSING for pattern in OPTIONAL[package]})


def pytest_report_header(config):
    if MISSING:
        return f"not installed: {', '.join(MISSING)}; left out: {', '.join(collect_ignore_glob)}"
    return None

# Keep Jupyter and IPython from writing into the real home during tests.
_home = tempfile.mkdtemp(prefix="tslab-test-home-")
os.environ.setdefault("JUPYTER_CONFIG_DIR", os.path.join(_home, "jupyter"))
os.environ.setdefault("IPYTHONDIR", os.path.join(_home, "ipython"))


def pytest_collection_modifyitems(config, items):
    try:
        from tslab.gpu import device

        has_gpu = device() is not None
    except Exception:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
