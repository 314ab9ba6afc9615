"""Keep executed tutorials lean and stable: drop saved widget state and widget-view outputs (the text/plain
stays), and write the kernelspec JupyterLab writes, so opening a tutorial does not rewrite it, and the ``tslab``
metadata that marks a tslab notebook (the lab extension then wraps its printed output between words).

    python tests/strip_notebook.py notebooks/06_open_your_kernel.ipynb [...]

Widget state (a plotly figure's data, every control's model) can be megabytes; nbval ignores it and a saved
notebook shows each widget's text fallback without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def strip(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["tslab"] = {"notebook": 1}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    nbformat.write(nb, path)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        strip(Path(name))
