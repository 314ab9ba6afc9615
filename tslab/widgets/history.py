"""The designs a Studio went through, each with a short label of what changed (pure data)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.design import Design


def describe_change(old: Design | None, new: Design) -> str:
    """A few words on what ``new`` changes relative to ``old`` (``"start"`` when there is no old)."""
    if old is None:
        return "start"
    before, after = old.overrides, new.overrides
    parts = []
    for resource, fields in after["pipelines"].items():
        previous = before["pipelines"].get(resource, {})
        parts += [f"{resource}.{k}={v}" for k, v in fields.items() if previous.get(k) != v]
    parts += [f"schedule {t}" for t, s in after["schedules"].items() if before["schedules"].get(t) != s]
    parts += [f"schedule {t} reset" for t in before["schedules"] if t not in after["schedules"]]
    if before["alias_groups"] != after["alias_groups"]:
        parts.append("alias groups")
    return ", ".join(parts) or "no change"


@dataclass
class History:
    """Designs in the order they became current; reverting appends, so nothing is lost."""

    entries: list[tuple[Design, str]] = field(default_factory=list)

    def add(self, design: Design, label: str | None = None) -> None:
        last = self.entries[-1][0] if self.entries else None
        self.entries.append((design, label or describe_change(last, design)))

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index: int) -> Design:
        return self.entries[index][0]

    def labels(self) -> list[str]:
        return [label for _, label in self.entries]
