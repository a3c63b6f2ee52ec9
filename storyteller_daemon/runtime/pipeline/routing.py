"""Which storytellers hear which world events: surveillance, subscriptions, pause."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from storyteller_daemon.domain.settings import EventKind, Storyteller
from world_adapter.events import EventKind as WorldEventKind
from world_adapter.events import WorldEvent

SUBSCRIPTION_FOR = {
    WorldEventKind.ROOM_ECHO: EventKind.ROOM,
    WorldEventKind.SPEECH: EventKind.SPEECH,
    WorldEventKind.CRIME: EventKind.CRIME,
    WorldEventKind.STATE_CHANGE: EventKind.STATE,
}


class Router:
    """Holds each storyteller's watched cells, recomputed when settings or zones change."""

    def __init__(self) -> None:
        self._storytellers: dict[int, Storyteller] = {}
        self._cells: dict[int, frozenset[int]] = {}

    def update(
        self, storytellers: Iterable[Storyteller], zones: Mapping[int, Iterable[int]]
    ) -> None:
        """Replace the routing table."""
        self._storytellers = {s.id: s for s in storytellers if s.id is not None}
        self._cells = {i: s.surveillance.cells(zones) for i, s in self._storytellers.items()}

    def storyteller(self, storyteller_id: int) -> Storyteller | None:
        """Current settings of one storyteller."""
        return self._storytellers.get(storyteller_id)

    @property
    def storytellers(self) -> list[Storyteller]:
        """Every known storyteller."""
        return list(self._storytellers.values())

    def cells_of(self, storyteller_id: int) -> frozenset[int]:
        """The de-duplicated cells a storyteller watches."""
        return self._cells.get(storyteller_id, frozenset())

    def watched_cells(self) -> frozenset[int]:
        """Cells any storyteller that subscribes to world events watches (the stream filter)."""
        cells: set[int] = set()
        for sid, st in self._storytellers.items():
            if st.subscriptions:
                cells |= self._cells[sid]
        return frozenset(cells)

    def audience(self, event: WorldEvent) -> list[Storyteller]:
        """Storytellers that watch the event's room and subscribe to its kind (pause aside)."""
        wanted = SUBSCRIPTION_FOR[event.kind]
        return [
            st
            for sid, st in sorted(self._storytellers.items())
            if wanted in st.subscriptions and event.cell_id in self._cells[sid]
        ]
