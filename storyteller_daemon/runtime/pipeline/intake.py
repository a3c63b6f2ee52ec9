"""The intake stages: triggers into the storytellers' durable backlogs.

World events, heartbeats and direct invocations pass the synchronous stages (shutdown, pause,
API key, prefilter: own-prog echoes, subscriptions, watched rooms). Each accepted trigger is
stored as one work item, pending when it needs the attention gate and interested when it goes
straight to a turn, and the storyteller's lane is woken.

A daemon of a cluster routes the world events it stored to every storyteller that hears them,
wherever it runs: work for a storyteller another daemon holds goes to the shared backlog, and
that daemon is told (`elsewhere`) and wakes the lane (`arrived`).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.storytellers import Heartbeat, Storyteller
from storyteller_daemon.domain.work import NewWork, WorkArrival, WorkState
from storyteller_daemon.runs import encode_trigger
from storyteller_daemon.runtime.pipeline.lanes import Lanes, log
from storyteller_daemon.runtime.pipeline.pacing import paces
from storyteller_daemon.runtime.pipeline.ports import WorkElsewhere
from storyteller_daemon.runtime.pipeline.routing import Routing
from storyteller_daemon.runtime.pipeline.speech import SpeechHistory
from storyteller_daemon.runtime.stats import RuntimeStats
from world_adapter.events import Speech, WorldEvent


class Refusal(NamedTuple):
    """Why a direct invocation was not stored: the stage (``intake``, ``pause``, ``api_key``,
    ``text``, ``queue``, or an admission stage such as ``budget`` or ``kill_switch``) and a
    reason for people."""

    stage: str
    reason: str


class Intake:
    """Runs the synchronous stages and stores what passes them as work items.

    Args:
        lanes: the lanes and the backlog the work goes to.
        routing: who hears an event, and the stages a trigger passes.
        speech: the speech-history writer (each speech heard is handed to it).
        clock: for trigger and arrival times.
        stats: the daemon's counters.
        attention: the turn classes and urgent kinds.
        queue_size: turns a storyteller may have waiting or running before a direct
            invocation is refused.
        source: the world's name, the prefix of its events' work item sources.
        observe: told of every event taken in (the look-up cache invalidates from it).
        elsewhere: told of the work stored for storytellers not run here (a cluster's
            daemons wake their holders with it; None: every storyteller runs here).
    """

    def __init__(
        self,
        *,
        lanes: Lanes,
        routing: Routing,
        speech: SpeechHistory,
        clock: Clock,
        stats: RuntimeStats,
        attention: AttentionConfig,
        queue_size: int,
        source: str,
        observe: Callable[[WorldEvent], None] | None,
        elsewhere: WorkElsewhere | None = None,
    ) -> None:
        self._lanes = lanes
        self._routing = routing
        self._speech = speech
        self._clock = clock
        self._stats = stats
        self._cfg = attention
        self._queue_size = queue_size
        self._source = source
        self._observe = observe
        self._elsewhere = elsewhere
        self._busy = 0
        """Calls under way whose work may not be in the backlog yet."""

    @property
    def busy(self) -> bool:
        """Whether intake is storing work the lanes do not know of yet."""
        return self._busy > 0

    async def accept(self, events: Sequence[WorldEvent]) -> int:
        """Offer world events to every storyteller that hears them, run here or not; return
        work items stored (an item stored before, by this daemon or another, is not)."""
        new: list[NewWork] = []
        for event in events:
            self._stats.events_in += 1
            if self._observe is not None:
                self._observe(event)
            if isinstance(event, Speech):
                self._speech.remember(event)
            trigger, payload = Trigger.from_event(event), ""
            source = f"{self._source}:{event.cursor}"
            for st in self._routing.everyone.audience(event):
                if self._routing.refused(st, trigger) is None:
                    self._stats.heard[st.name] += 1
                    payload = payload or _payload(trigger)  # the same for every listener
                    new.append(self._work(st, trigger, source, payload))
        ambient = frozenset(f"{self._source}:{e.cursor}" for e in events if e.ambience)
        return await self._store(new, ambient, routed=True)

    def seen(self, events: Sequence[WorldEvent]) -> None:
        """Events another daemon of the cluster stored first, and routes: only the look-up
        cache hears of them here."""
        if self._observe is not None:
            for event in events:
                self._observe(event)

    async def ingest(self, event: WorldEvent) -> int:
        """`accept` for one event."""
        return await self.accept([event])

    async def heartbeat(self, storyteller_id: int, heartbeat: Heartbeat) -> bool:
        """A heartbeat fired for a storyteller; True when its turn was queued."""
        st = self._routing.router.storyteller(storyteller_id)
        if st is None or heartbeat not in st.heartbeats:
            return False
        trigger = Trigger(TriggerKind.HEARTBEAT, occurred_at=self._clock.now(), heartbeat=heartbeat)
        lane = self._lanes.get(storyteller_id)
        if lane is not None and lane.running_turn:  # must not pile onto work in progress
            self._routing.drop(st, trigger, "busy", "a turn of this storyteller is running")
            return False
        if self._routing.refused(st, trigger) is not None:
            return False
        source = f"heartbeat:{heartbeat.value}:{trigger.occurred_at.isoformat()}"
        return await self._store([self._work(st, trigger, source)]) == 1

    async def direct(self, storyteller: Storyteller, text: str) -> bool:
        """A direct invocation: True only if the turn was actually queued (FutureMUD §9.15)."""
        return await self.submit_direct(storyteller, text) is None

    async def submit_direct(
        self,
        storyteller: Storyteller,
        text: str,
        *,
        source: str | None = None,
        character_id: int | None = None,
        room_id: int | None = None,
    ) -> Refusal | None:
        """A direct invocation: None when its turn is stored, else the stage that refused it
        and why.

        Args:
            storyteller: whose turn.
            text: what the game asks it to attend to.
            source: the work item's source (``direct:...``); a game's invocation passes one
                made from its request id, so the same id is stored once. Default: a new one.
            character_id: the character the invocation concerns, if any.
            room_id: the room it concerns, if any.
        """
        if not text.strip():
            return Refusal("text", "blank text")
        trigger = Trigger(
            TriggerKind.DIRECT,
            occurred_at=self._clock.now(),
            text=text.strip(),
            room=room_id,
            involved=frozenset({character_id} if character_id is not None else ()),
        )
        refusal = self._routing.refused(storyteller, trigger)
        if refusal is None:
            refusal = await self._routing.admitted(storyteller, trigger)
            if refusal is not None:
                self._routing.drop(storyteller, trigger, *refusal)
        if refusal is not None:
            return Refusal(*refusal)
        depth = await self._lanes.backlog.depth()
        waiting = sum(
            n
            for (sid, state), n in depth.items()
            if sid == storyteller.id and state != WorkState.PENDING.value
        )
        if waiting >= self._queue_size:
            reason = f"queue full ({self._queue_size} turns waiting or running)"
            self._stats.queue_overflow[storyteller.name] += 1
            self._routing.drop(storyteller, trigger, "queue", reason)
            return Refusal("queue", reason)
        source = source or f"direct:{uuid.uuid4().hex}"
        await self._store([self._work(storyteller, trigger, source)])
        return None

    def _work(
        self, storyteller: Storyteller, trigger: Trigger, source: str, payload: str = ""
    ) -> NewWork:
        assert storyteller.id is not None
        gated = trigger.needs_attention
        return NewWork(
            storyteller_id=storyteller.id,
            source=source,
            kind=trigger.kind.value,
            turn_class=self._turn_class(trigger, source),
            room_id=trigger.room_id,
            payload=payload or _payload(trigger),
            state=WorkState.PENDING if gated else WorkState.INTERESTED,
        )

    def _turn_class(self, trigger: Trigger, source: str) -> str:
        """Triggers of one class may share a turn: they are offered the same tools."""
        if self._cfg.one_call_per_event or trigger.kind in (
            TriggerKind.HEARTBEAT,
            TriggerKind.DIRECT,
        ):
            return source  # a turn of its own
        if trigger.kind in (TriggerKind.ROOM_ECHO, TriggerKind.SPEECH):
            return "echo"
        return trigger.kind.value

    async def _store(
        self,
        new: Sequence[NewWork],
        ambient: frozenset[str] = frozenset(),
        *,
        routed: bool = False,
    ) -> int:
        """Store `new` work and tell the lanes (and, for storytellers run elsewhere, the
        other daemons); `ambient`: the sources of events the world marks as ambience (they
        make no scene)."""
        if not new:
            return 0
        self._busy += 1
        try:
            stored = await self._lanes.backlog.add(new, routed=routed)
        finally:
            self._busy -= 1
        counts = Counter(
            (i.storyteller_id, i.state.value, i.kind, i.room_id, i.source in ambient)
            for i in stored
        )
        arrivals = [
            WorkArrival(sid, state, kind, n, room, calm)
            for (sid, state, kind, room, calm), n in counts.items()
        ]
        elsewhere = [
            a for a in arrivals if self._routing.router.storyteller(a.storyteller_id) is None
        ]
        await self.arrived(arrivals)
        if elsewhere and self._elsewhere is not None:
            try:
                await self._elsewhere(elsewhere)
            except Exception as exc:  # stored: the holder finds it at its next look
                log.warning("could not tell the other daemons of work stored: %s", exc)
        return len(stored)

    async def arrived(self, arrivals: Sequence[WorkArrival]) -> None:
        """Work was stored for storytellers (here, or by another daemon of the cluster): wake
        the lanes of those run here."""
        now = self._clock.monotonic()
        for arrival in arrivals:
            st = self._routing.router.storyteller(arrival.storyteller_id)
            if st is None:
                continue
            lane = self._lanes.ensure(st)
            self._lanes.touch(lane)
            if arrival.state == WorkState.PENDING.value:
                paced = paces(self._cfg)
                in_scene = paced and lane.scenes.is_hot(arrival.room_id, now)
                for _ in range(arrival.count):
                    burst = not arrival.ambient and lane.scenes.arrived(
                        arrival.room_id,
                        now,
                        events=self._cfg.scene_events if paced else 0,
                        seconds=self._cfg.scene_seconds,
                    )
                    lane.arrived(
                        now,
                        urgent=arrival.kind in self._cfg.urgent_kinds,
                        routine=arrival.kind in self._cfg.routine_kinds,
                        burst=burst,
                        scene_due=now + self._cfg.scene_wait_seconds if in_scene else None,
                    )
            else:
                lane.wake_turns()
        await self._lanes.changed()


def _payload(trigger: Trigger) -> str:
    """A work item's payload: the trigger as JSON."""
    return json.dumps(encode_trigger(trigger), ensure_ascii=False)
