"""The design document's shape, checked against ``tslab/schemas/design.v1.json`` before anything is built.

The same schema file serves every reader of design JSON: Python here, the JupyterLab extension's renderers
(``application/vnd.tslab.design.v1+json`` and ``*.tslab.json`` files). A
violation becomes one ``DesignError`` naming the JSON path, what was found and what is allowed.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from ..errors import DesignError

_FOUND_CHARS = 60


@cache
def design_schema() -> dict[str, Any]:
    """The JSON Schema of a design document (draft 2020-12)."""
    return json.loads(resources.files("tslab").joinpath("schemas/design.v1.json").read_text())


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    schemas = resources.files("tslab").joinpath("schemas")
    registry = Registry().with_resources(
        (f"https://tslab/schemas/{kind}.v1.json",
         Resource.from_contents(json.loads(schemas.joinpath(f"{kind}.v1.json").read_text())))
        for kind in ("design", "trace", "verdict"))
    return Draft202012Validator(design_schema(), registry=registry)


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "document"


def _found(value: Any) -> str:
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _FOUND_CHARS else text[:_FOUND_CHARS - 3] + "..."


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _issue(error: Any) -> DesignError:
    """One schema violation as a DesignError: the JSON path, what was found there, what is allowed."""
    path = _path(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        name = sorted(set(error.instance) - set(allowed))[0]
        key = f"{path}.{name}" if error.absolute_path else name
        fix = f"the keys allowed here are {', '.join(allowed)}" if allowed else "remove it"
        return DesignError("input", "design JSON", f"unknown key {key!r}", fix)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        key = f"{path}.{missing}" if error.absolute_path else missing
        return DesignError("input", "design JSON", f"has no {key!r} key", "pass the text written by Design.to_json()")
    allowed = error.schema.get("description") or error.message
    if error.validator in ("minItems", "maxItems"):
        wrong = f"has {len(error.instance)} items"
    elif error.validator == "type":
        wrong = f"is {_json_type(error.instance)}"
    else:
        wrong = "is not allowed"
    return DesignError("input", "design JSON", f"{path}={_found(error.instance)} {wrong}", f"{path} must be {allowed}")


def validate_design_document(data: Any) -> None:
    """Raise a ``DesignError`` for the most relevant violation of the design schema in ``data``, if any."""
    from jsonschema.exceptions import relevance

    errors = list(_validator().iter_errors(data))
    if errors:  # the most relevant one, reported at its own level (not inside an anyOf's alternatives)
        raise _issue(max(errors, key=relevance))
