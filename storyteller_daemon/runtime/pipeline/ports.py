"""The pipeline's ports: what it needs from the agent, the storage and its observers.

The pipeline sees the attention gate and the tool loop as a `TurnRunner` (`agent.turn_runner`,
whose `Verdict` and `TurnOutcome` are the parts of the runner's answers it reads), the durable
work items as a `Backlog`, the rooms' speech history as a `SpeechRecorder`, the story plans as
a `PlanReader`, the kept ignore verdicts as a `VerdictMemory`, the last checks before a model
call as an `Admission`, whoever follows its steps as an `Observer`, and a cluster's other
daemons as `WorkElsewhere`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.agent.turn_runner import TurnOutcome, Verdict
from storyteller_daemon.domain.story_plans import StoryPlan
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.verdict_memory import Recallable, SettledVerdict
from storyteller_daemon.domain.work import (
    Decision,
    NewWork,
    TurnClaim,
    WorkArrival,
    WorkItem,
    WorkState,
)
from world_adapter.events import Speech

WorkElsewhere = Callable[[Sequence[WorkArrival]], Awaitable[None]]
"""Tells the daemons of a cluster of work stored for storytellers this one does not run."""


class Backlog(Protocol):
    """The durable backlog (the backlog repository)."""

    async def add(self, items: Sequence[NewWork], *, routed: bool = False) -> list[WorkItem]:
        """Store the new items; return those stored (known sources are skipped). `routed`: a
        world event's work, stored for a storyteller wherever it runs (not fenced)."""
        ...

    async def pending(
        self,
        storyteller_id: int,
        limit: int,
        exclude: Collection[int] = (),
        *,
        first: Collection[str] = (),
    ) -> list[WorkItem]:
        """The oldest pending items (of the `first` kinds before the rest), except those
        being judged."""
        ...

    async def decide(self, decisions: Sequence[Decision]) -> int:
        """Move pending items to their decided states."""
        ...

    async def count_attempt(self, ids: Sequence[int]) -> None:
        """Count a failed attention request against pending items."""
        ...

    async def claim_turn(
        self,
        storyteller_id: int,
        make_key: Callable[[Sequence[WorkItem]], str],
        limit: int,
        *,
        retries: int = ...,
        first: Collection[str] = (),
    ) -> TurnClaim | None:
        """Interrupted work first, else the oldest interested items of one turn class (an
        item of the `first` kinds before older ones)."""
        ...

    async def stopped(self, turn_key: str) -> int:
        """Mark a running turn as cut off by a clean stop."""
        ...

    async def finish_turn(
        self, turn_key: str, state: WorkState, reason: str | None, rule: str | None = None
    ) -> int:
        """Record how a turn ended."""
        ...

    async def by_source(self, storyteller_id: int, source: str) -> WorkItem | None:
        """The storyteller's item stored from `source`, if any."""
        ...

    async def expire(
        self, storyteller_id: int, *, received_before: datetime, reason: str
    ) -> list[WorkItem]:
        """Expire pending items received before a time."""
        ...

    async def depth(self) -> Mapping[tuple[int, str], int]:
        """(storyteller id, state) → open items."""
        ...

    async def close_source(self, prefix: str, *, reason: str) -> int:
        """Expire every open item whose source starts with `prefix`."""
        ...

    async def prune(self, *, updated_before: datetime) -> int:
        """Delete finished items last moved before a time."""
        ...


class SpeechRecorder(Protocol):
    """Where speech heard in watched rooms is kept (the speech history repository)."""

    async def record(self, event: Speech) -> object:
        """Store one speech."""
        ...

    async def record_many(self, events: Sequence[Speech]) -> object:
        """Store several speeches in one go."""
        ...


class PlanReader(Protocol):
    """Where the storytellers' story plans are read (the story plan repository)."""

    async def list(
        self, storyteller_id: int | None = None, *, include_closed: bool = True
    ) -> Sequence[StoryPlan]:
        """Plans as stored (no expiry applied)."""
        ...


class VerdictMemory(Protocol):
    """Where ignore verdicts are kept to settle repeats (the verdict memory repository)."""

    async def recall(
        self, storyteller_id: int, keys: Collection[str], *, prompts: str, since: datetime
    ) -> Mapping[str, SettledVerdict]:
        """The entries for `keys` made under `prompts` at or after `since`, by key."""
        ...

    async def hit(self, ids: Sequence[int]) -> None:
        """Count one settled event against each entry of `ids`."""
        ...

    async def remember(
        self, storyteller_id: int, ignored: Sequence[tuple[Recallable, int]], *, prompts: str
    ) -> None:
        """Keep what the model ignored (event, work item)."""
        ...

    async def invalidate(self, storyteller_id: int, *, keep_prompts: str) -> int:
        """Clear the entries made under other prompts."""
        ...

    async def relevant_characters(self, storyteller_id: int) -> frozenset[int]:
        """Characters the storyteller keeps notes on."""
        ...

    async def prune(self, *, ignored_before: datetime) -> int:
        """Delete entries older than any horizon reaches."""
        ...


class Admission(Protocol):
    """Last checks before a model is called for a trigger (budgets, idle heartbeats)."""

    async def admit(
        self, storyteller: Storyteller, trigger: Trigger, watched: frozenset[int]
    ) -> tuple[str, str] | None:
        """None to go on, or the stage and reason to drop the trigger with."""
        ...


class Observer(Protocol):
    """Gets told about every step (logging, the demo's live account, tests)."""

    def dropped(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        """A trigger stopped at `stage`."""
        ...

    def judged(self, storyteller: Storyteller, trigger: Trigger, verdict: Verdict) -> None:
        """The attention gate decided."""
        ...

    def turn_started(self, storyteller: Storyteller, trigger: Trigger) -> None:
        """A turn begins."""
        ...

    def turn_finished(
        self, storyteller: Storyteller, trigger: Trigger, outcome: TurnOutcome | None
    ) -> None:
        """A turn ended (outcome None when it crashed; the error is logged)."""
        ...
