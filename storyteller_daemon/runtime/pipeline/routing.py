"""Which storytellers hear which world events, and what stops a trigger on its way.

`Router` holds each storyteller's watched cells and subscriptions; `Routing` is the pipeline's
routing stage: the synchronous checks (shutdown, pause, model, prefilter), the last checks
before a model call (`Admission`) and the drops they make.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.storytellers import EventKind, Storyteller
from storyteller_daemon.runtime.pipeline.lanes import Lanes
from storyteller_daemon.runtime.pipeline.ports import Admission, Observer
from storyteller_daemon.runtime.stats import RuntimeStats
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
        self._watching: dict[int, list[Storyteller]] = {}
        """Per cell, the storytellers that watch it, by id: an event's audience without a
        look at every storyteller."""

    def update(
        self, storytellers: Iterable[Storyteller], zones: Mapping[int, Iterable[int]]
    ) -> None:
        """Replace the routing table."""
        self._storytellers = {s.id: s for s in storytellers if s.id is not None}
        self._cells = {i: s.surveillance.cells(zones) for i, s in self._storytellers.items()}
        self._watching = {}
        for sid, st in sorted(self._storytellers.items()):
            for cell in self._cells[sid]:
                self._watching.setdefault(cell, []).append(st)

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
        return [st for st in self._watching.get(event.cell_id, ()) if wanted in st.subscriptions]


class Routing:
    """The synchronous stages a trigger passes on its way to a model, and its drops.

    Intake runs every stage (`refused`); attention and turns look again at pause and the model
    (`held`) and at the last checks before a model call (`admitted`). Every trigger stopped on
    the way is counted and told to the observer (`drop`).

    Args:
        router: who hears what, of the storytellers run here.
        lanes: for the stop flag (intake closes when the pipeline stops).
        stats: the daemon's counters.
        observer: told of every drop.
        admission: the last checks before a model call (budgets, idle heartbeats).
        model_available: False when no model is configured (every trigger is dropped).
        everyone: who hears what, of every storyteller of the game, run here or not (a daemon
            of a cluster routes the world events it stores to all of them); default `router`.
    """

    def __init__(
        self,
        router: Router,
        lanes: Lanes,
        stats: RuntimeStats,
        observer: Observer,
        admission: Admission | None,
        *,
        model_available: bool,
        everyone: Router | None = None,
    ) -> None:
        self.router = router
        self.everyone = everyone if everyone is not None else router
        self._lanes = lanes
        self._stats = stats
        self._observer = observer
        self._admission = admission
        self.model_available = model_available

    def set_model_available(self, available: bool) -> None:
        """Whether a model is configured (triggers are dropped at ``api_key`` without one)."""
        self.model_available = available

    def drop(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        """Count a trigger stopped at `stage` and tell the observer why."""
        self._stats.drop(stage)
        self._observer.dropped(storyteller, trigger, stage, reason)

    def refused(self, storyteller: Storyteller, trigger: Trigger) -> tuple[str, str] | None:
        """Run the synchronous stages; None when accepted, else the stage and why (dropped)."""
        for stage, check in (
            ("intake", self._intake_stage),
            ("pause", self._pause_stage),
            ("api_key", self._api_key_stage),
            ("prefilter", self._prefilter_stage),
        ):
            reason = check(storyteller, trigger)
            if reason is not None:
                self.drop(storyteller, trigger, stage, reason)
                return stage, reason
        return None

    def held(self, storyteller: Storyteller) -> tuple[str, str] | None:
        """Why no model may be asked for the storyteller now (paused, no model), or None."""
        if storyteller.paused:
            return "pause", "storyteller is paused"
        if not self.model_available:
            return "api_key", "no model API key configured"
        return None

    async def admitted(self, storyteller: Storyteller, trigger: Trigger) -> tuple[str, str] | None:
        """None when `Admission` lets the trigger reach a model, else the stage and reason."""
        if self._admission is None or storyteller.id is None:
            return None
        watched = self.router.cells_of(storyteller.id)
        return await self._admission.admit(storyteller, trigger, watched)

    def _intake_stage(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        return "shutting down" if self._lanes.stopping() else None

    @staticmethod
    def _pause_stage(storyteller: Storyteller, trigger: Trigger) -> str | None:
        return "storyteller is paused" if storyteller.paused else None

    def _api_key_stage(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        if storyteller.id is not None and self.router.storyteller(storyteller.id) is None:
            return None  # run by another daemon of the cluster: its model is that daemon's
        return None if self.model_available else "no model API key configured"

    def _prefilter_stage(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        event = trigger.event
        if event is None:
            return None
        if event.origin != "world":
            return "caused by a storyteller's own prog"
        if SUBSCRIPTION_FOR[event.kind] not in storyteller.subscriptions:
            return f"not subscribed to {event.kind.value} events"
        if storyteller.id is None or event.cell_id not in self.everyone.cells_of(storyteller.id):
            return f"room #{event.cell_id} is not watched"
        return None
