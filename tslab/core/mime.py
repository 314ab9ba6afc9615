"""The MIME types tslab's saved outputs carry, and the JSON schema each one follows.

JupyterLab's tslab extension renders these from a saved notebook alone (no kernel): the verdict badge, memory
map and swimlane, the replay player, and a profiled kernel's timeline. The version sits in the name, so a
renderer never meets a payload it does not understand; one schema per kind lives in ``tslab/schemas/`` and both
sides test against it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

VERDICT = "application/vnd.tslab.verdict.v1+json"
TRACE = "application/vnd.tslab.trace.v1+json"
DESIGN = "application/vnd.tslab.design.v1+json"
TIMELINE = "application/vnd.tslab.timeline.v1+json"
KINDS = {"verdict": VERDICT, "trace": TRACE, "design": DESIGN, "timeline": TIMELINE}
SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


@cache
def schema(kind: str) -> dict[str, Any]:
    """The JSON schema of one output kind (``verdict``, ``trace``, ``design`` or ``timeline``)."""
    return json.loads((SCHEMAS / f"{kind}.v1.json").read_text())
