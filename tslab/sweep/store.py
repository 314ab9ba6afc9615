"""The resumable store: append-only JSON lines, a header naming the sweep and the machine, one line per point.

Each finished point is written (and flushed) as soon as it finishes, so an interrupted sweep loses nothing it
finished. On reopen the header must match (same design, measure and machine) or the store is refused with a
``StoreMismatchError``; a last line cut off mid-write is dropped. Records are validated with the JSON Schema
shipped in ``tslab/schemas/sweep_store.schema.json``.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import StoreCorruptError, StoreMismatchError


@functools.cache
def _validators() -> dict[str, Any]:
    import jsonschema

    schema = json.loads(resources.files("tslab.schemas").joinpath("sweep_store.schema.json").read_text())
    return {name: jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})
            for name in ("header", "point")}


def _validate(kind: str, record: Any, path: Path, line: int) -> None:
    error = next(iter(_validators()[kind].iter_errors(record)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(record)"
        raise StoreCorruptError(f"sweep store '{path}' line {line}: {where} {error.message}; this is not a "
                                "tslab sweep store line: fix or remove that line, or use another store file")


def read(path: str | Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The header (None for an empty file) and the point records of a store, validated; a last line cut off
    mid-write is left out."""
    path = Path(path)
    lines = path.read_text().split("\n")[:-1]  # what follows the last newline is unfinished
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise StoreCorruptError(f"sweep store '{path}' line {number}: not JSON ({exc}); remove that "
                                    "line or use another store file") from None
    if not records:
        return None, []
    _validate("header", records[0][1], path, records[0][0])
    for number, record in records[1:]:
        _validate("point", record, path, number)
    return records[0][1], [r for _, r in records[1:]]


class Store:
    """One sweep's store file: ``done`` maps each finished point's key to its record."""

    def __init__(self, path: str | Path, header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.header = header
        self.done: dict[str, dict[str, Any]] = {}
        self.dropped_partial = False
        if self.path.exists() and self.path.stat().st_size > 0:
            self._read()
        else:
            _validate("header", header, self.path, 1)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(header, sort_keys=True) + "\n")

    def _read(self) -> None:
        text = self.path.read_text()
        if not text.endswith("\n"):  # the last line was cut off mid-write: drop it, keep the rest
            self.dropped_partial = True
            with self.path.open("r+") as fh:
                fh.truncate(len(text) - len(text.rsplit("\n", 1)[-1]) if "\n" in text else 0)
        header, records = read(self.path)
        if header is None:
            self.path.write_text(json.dumps(self.header, sort_keys=True) + "\n")
            return
        self._match(header)
        self.done = {r["key"]: r for r in records}

    def _match(self, found: dict[str, Any]) -> None:
        for key in ("design", "measure", "arch", "machine"):
            if found.get(key) != self.header.get(key):
                raise StoreMismatchError(
                    f"sweep store '{self.path}': its header's {key} is {json.dumps(found.get(key), sort_keys=True)}"
                    f", this sweep's is {json.dumps(self.header.get(key), sort_keys=True)}; it belongs to another "
                    "sweep: pass another store file, or delete this one to start afresh")

    def append(self, key: str, point: dict[str, Any], row: dict[str, Any]) -> None:
        """Record one finished point (a whole line, flushed before returning)."""
        record = {"key": key, "point": point, "row": row}
        _validate("point", record, self.path, len(self.done) + 2)
        with self.path.open("a") as fh:
            fh.write(json.dumps(record, sort_keys=True, default=str) + "\n")
            fh.flush()
        self.done[key] = record
