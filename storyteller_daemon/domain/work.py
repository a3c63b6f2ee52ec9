"""Durable work: the states an event moves through for one storyteller, and the rules of moving.

Every trigger a storyteller accepts becomes a work item in its backlog and stays there until it
reaches a final state::

    pending ──judge──▶ interested ──claim──▶ running ──▶ done | failed
       │                    ▲                   │
       │                    │ (skips the gate)  └─stop or crash─▶ running again (same key)
       ├──▶ ignored   (the attention model said so)
       ├──▶ filtered  (a named deterministic rule: a prefilter, a pause, a budget)
       ├──▶ violation (the model broke the verdict contract, after one re-ask)
       └──▶ expired   (older than the configured maximum age; counted, logged and alerted)

Nothing leaves the backlog silently: every final state names why. Work that skips the attention
gate (state changes, direct invocations, heartbeats) enters as ``interested``.

A turn claims the oldest interested item and every other interested item of the same *turn
class* (items that get the same tools), up to a cap, under one turn key; a crash leaves them
``running`` and the next start re-runs that turn under the same key: the turn journal answers
what the first attempt already did and the game's idempotency keys stop any prog call from
running twice. A turn a clean stop cut off is run again without counting it; a turn a crash
interrupted is retried up to ``[attention] turn_retries`` times and then marked failed (the
daemon alerts, and ``storyteller runs retry`` queues it again).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from enum import StrEnum


class WorkState(StrEnum):
    """Where a work item is."""

    PENDING = "pending"
    INTERESTED = "interested"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    IGNORED = "ignored"
    FILTERED = "filtered"
    VIOLATION = "violation"
    EXPIRED = "expired"

    @property
    def final(self) -> bool:
        """Whether the item will not move again."""
        return self not in (WorkState.PENDING, WorkState.INTERESTED, WorkState.RUNNING)


OPEN_STATES = (WorkState.PENDING, WorkState.INTERESTED, WorkState.RUNNING)

TURN_RETRIES = 3
"""How many times a turn a crash interrupted is run again before it is marked failed."""


@dataclass(frozen=True)
class WorkItem:
    """One trigger in one storyteller's backlog.

    Attributes:
        id: the backlog row id (stable: attention verdicts are asked and checked by it).
        storyteller_id: whose backlog.
        source: what the item came from, unique per storyteller (``world:epoch:seq`` for an
            event), so a replayed stream never adds it twice.
        kind: the trigger kind (``room_echo``, ``speech``, ``crime``, ``state``, ...).
        turn_class: items of one class may share a turn (they are offered the same tools).
        room_id: where it happened, if anywhere.
        payload: the trigger as JSON text (the runtime encodes and decodes it).
        state: where it is now.
        received_at: when it entered the backlog (UTC).
        reason: the verdict's reason, or why the item was filtered or expired.
        rule: the deterministic rule that decided it, when one did.
        turn_key: the turn that claimed it.
        attempts: failed attention requests (pending), or the turn's runs a crash
            interrupted, plus one (running).
        cut_by_stop: a clean stop cut the running turn off (its next run is not counted).
    """

    id: int
    storyteller_id: int
    source: str
    kind: str
    turn_class: str
    room_id: int | None
    payload: str
    state: WorkState
    received_at: datetime
    reason: str | None = None
    rule: str | None = None
    turn_key: str | None = None
    attempts: int = 0
    cut_by_stop: bool = False


@dataclass(frozen=True)
class NewWork:
    """A work item to add: what `WorkItem` has before it is stored."""

    storyteller_id: int
    source: str
    kind: str
    turn_class: str
    room_id: int | None
    payload: str
    state: WorkState = WorkState.PENDING
    reason: str | None = None
    rule: str | None = None

    def stored(self, item_id: int, received_at: datetime) -> WorkItem:
        """This item as the backlog holds it once stored under `item_id`."""
        return WorkItem(
            id=item_id, received_at=received_at, turn_key=None, attempts=0, **asdict(self)
        )


@dataclass(frozen=True)
class WorkArrival:
    """`count` work items of `kind` in a room stored for a storyteller in `state`
    (``pending`` or ``interested``): word for the lane, here or, by a daemon of a cluster
    that does not run the storyteller, for its holder."""

    storyteller_id: int
    state: str
    kind: str
    count: int
    room_id: int | None = None
    ambient: bool = False
    """Events the world marks as ambience (they make no scene)."""


@dataclass(frozen=True)
class Decision:
    """A final (or interested) state for one pending item, with why."""

    item_id: int
    state: WorkState
    reason: str | None = None
    rule: str | None = None


@dataclass(frozen=True)
class TurnClaim:
    """Interested items claimed for one turn, oldest first."""

    storyteller_id: int
    turn_key: str
    items: tuple[WorkItem, ...]
    attempt: int = 1
    """1 for a fresh turn; one more for each crash that interrupted it (clean stops do not
    count)."""
    resumed: bool = False
    """The items were left running by a stop or crash (or queued again by an admin)."""
    given_up: bool = False
    """The turn was interrupted more often than its retries allow: its items are now failed
    and it must not run."""
