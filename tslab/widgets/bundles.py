"""The widgets' front ends: ES modules bundled from the lab extension's drawing code (``labextension/src/``).

``npm run build:prod`` (or ``pip install``) writes them into ``static/``; a source checkout that has not built
them still works in Python, and the widget says how to build its front end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STATIC = Path(__file__).parent / "static"
UNBUILT = """export default { render({ el }) {
  el.textContent = "tslab's widget front end is not built: cd labextension && npm ci && npm run build:prod";
} };"""


def bundle(name: str, missing: str = UNBUILT) -> Path | str:
    """A built front-end file, or ``missing`` where it has not been built."""
    path = STATIC / name
    return path if path.is_file() else missing


def plain(data: Any) -> Any:
    """JSON-plain data (tuples -> lists), as the front end receives it."""
    return json.loads(json.dumps(data))
