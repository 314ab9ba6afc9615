import importlib.util
import os
import tempfile

import pytest
from stop_on_sigterm import pytest_sessionstart  # noqa: F401  (a SIGTERM tears the fixtures down)

# The GPU machine has no Jupyter stack: leave the widget and browser tests out there instead of failing to import.
collect_ignore_glob = [] if importlib.util.find_spec("ipywidgets") and importlib.util.find_spec("plotly") else [
    "test_widgets_*.py", "test_replay_widget.py", "browser/*"]

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
