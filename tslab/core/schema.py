"""The design document's shape, checked against ``tslab/schemas/design.v1.json`` before anything is built, and the
dispatch document's (``dispatch.v1.json``, a list of designs picked by M).

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


#: The documents read here: what a violation's message calls each, and what writes a valid one.
_DOCUMENTS = {"design": ("design JSON", "Design.to_json()"), "dispatch": ("dispatch JSON", "Dispatch.to_json()")}


@cache
def _schema(kind: str) -> dict[str, Any]:
    return json.loads(resources.files("tslab").joinpath(f"schemas/{kind}.v1.json").read_text())


def design_schema() -> dict[str, Any]:
    """The JSON Schema of a design document (draft 2020-12)."""
    return _schema("design")


def dispatch_schema() -> dict[str, Any]:
    """The JSON Schema of a dispatch document (draft 2020-12); its designs follow :func:`design_schema`."""
    return _schema("dispatch")


@cache
def _validator(kind: str) -> Any:
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    registry = Registry().with_resources(
        (f"https://tslab/schemas/{name}.v1.json", Resource.from_contents(_schema(name)))
        for name in ("design", "dispatch", "trace", "verdict"))
    return Draft202012Validator(_schema(kind), registry=registry)


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


def _issue(error: Any, kind: str) -> DesignError:
    """One schema violation as a DesignError: the JSON path, what was found there, what is allowed."""
    document, writer = _DOCUMENTS[kind]
    path = _path(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        name = sorted(set(error.instance) - set(allowed))[0]
        key = f"{path}.{name}" if error.absolute_path else name
        fix = f"the keys allowed here are {', '.join(allowed)}" if allowed else "remove it"
        return DesignError("input", document, f"unknown key {key!r}", fix)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        key = f"{path}.{missing}" if error.absolute_path else missing
        return DesignError("input", document, f"has no {key!r} key", f"pass the text written by {writer}")
    allowed = error.schema.get("description") or error.message
    if error.validator in ("minItems", "maxItems"):
        wrong = f"has {len(error.instance)} items"
    elif error.validator == "type":
        wrong = f"is {_json_type(error.instance)}"
    else:
        wrong = "is not allowed"
    return DesignError("input", document, f"{path}={_found(error.instance)} {wrong}", f"{path} must be {allowed}")


def _validate(data: Any, kind: str) -> None:
    from jsonschema.exceptions import relevance

    errors = list(_validator(kind).iter_errors(data))
    if errors:  # the most relevant one, reported at its own level (not inside an anyOf's alternatives)
        raise _issue(max(errors, key=relevance), kind)


def validate_design_document(data: Any) -> None:
    """Raise a ``DesignError`` for the most relevant violation of the design schema in ``data``, if any."""
    _validate(data, "design")


def validate_dispatch_document(data: Any) -> None:
    """Raise a ``DesignError`` for the most relevant violation of the dispatch schema in ``data``, if any."""
    _validate(data, "dispatch")
