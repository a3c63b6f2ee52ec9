"""Which rooms a storyteller watches: zones plus included rooms, minus excluded rooms."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Surveillance:
    """Zones, included cells and excluded cells, each a set of world ids."""

    zones: frozenset[int] = frozenset()
    included: frozenset[int] = frozenset()
    excluded: frozenset[int] = frozenset()

    @property
    def is_empty(self) -> bool:
        """True when nothing is watched."""
        return not (self.zones or self.included)

    def cells(self, zone_cells: Mapping[int, Iterable[int]]) -> frozenset[int]:
        """The watched cells, de-duplicated: zones' cells plus included, minus excluded.

        Args:
            zone_cells: the world's current zone membership (zone id → cell ids). Zones the world
                does not know contribute nothing.
        """
        watched: set[int] = set(self.included)
        for zone in self.zones:
            watched.update(zone_cells.get(zone, ()))
        return frozenset(watched - self.excluded)

    def toggled(self, kind: str, target: int) -> Surveillance:
        """A copy with `target` toggled in the `zone`, `include` or `exclude` list."""
        field_name = {"zone": "zones", "include": "included", "exclude": "excluded"}[kind]
        current: frozenset[int] = getattr(self, field_name)
        new = current - {target} if target in current else current | {target}
        return replace(self, **{field_name: new})

    def describe(self) -> str:
        """A one-line human description."""
        if self.is_empty and not self.excluded:
            return "nothing (no zones or rooms)"

        def ids(values: frozenset[int]) -> str:
            return ", ".join(f"#{v}" for v in sorted(values)) or "none"

        return (
            f"zones {ids(self.zones)}; rooms {ids(self.included)}; excluding {ids(self.excluded)}"
        )
