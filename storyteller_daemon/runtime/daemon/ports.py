"""What the daemon needs from outside: its settings, for a bridged game an event inbox, and
work to run while storytellers are idle.

`SettingsSource` is the storyteller repository as the daemon polls it; `EventInbox` is the
durable intake of world events (the inbox repository), through which a world that can replay
resumes from its stored cursor; `IdleWork` is reflection while idle
(`runtime.reflection.ReflectionScheduler`); a `SettingsListener` is told the storytellers on
every reload (the budget keeper learns their daily caps); `TurnRuns` reads the run record
of a game's invocation for its outcome; `Leases` holds a cluster daemon's share of the
storytellers (`runtime.cluster.LeaseKeeper`), `Forward` carries its game's invocations to the
daemon running their storyteller (`runtime.cluster.InvocationForwarder`), and `WorkNotices`
brings word of work the other daemons stored for the storytellers it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Protocol

from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.work import WorkArrival
from storyteller_daemon.storage.runs import StoredRun
from world_adapter.events import Cursor, WorldEvent
from world_adapter.invocations import GameInvocation, InvocationAnswer, InvocationHandler


class SettingsSource(Protocol):
    """Where storyteller settings come from (the storyteller repository)."""

    async def list(self) -> list[Storyteller]:
        """Every storyteller."""
        ...

    async def revisions(self) -> dict[int, int]:
        """Id → revision, cheap to poll."""
        ...


SettingsListener = Callable[[Sequence[Storyteller]], None]
"""Told every storyteller whenever the daemon (re)loads the settings."""

WorkNotices = Callable[
    [Callable[[list[WorkArrival]], None], Callable[[], None]], AbstractAsyncContextManager[None]
]
"""Listens, while inside, for the work the other daemons of a cluster store for storytellers,
and says when notices may have been missed (`storage.work_notices.work_notices` over the
database)."""


class EventInbox(Protocol):
    """Durable intake of world events (the inbox repository)."""

    async def store_events(
        self, world: str, events: Sequence[WorldEvent], *, cursor_key: str | None = None
    ) -> Sequence[tuple[int, WorldEvent]]:
        """Store new events and advance the cursor (under `cursor_key`, default `world`) in
        one transaction; return the ones this call stored (not those stored before)."""
        ...

    async def cursor(self, world: str) -> Cursor | None:
        """The stored cursor (of a world, or under a cursor key)."""
        ...

    async def latest_cursor(self, world: str) -> Cursor | None:
        """The cursor any daemon following `world` moved last."""
        ...

    async def pending(
        self, world: str, limit: int | None = None, *, received_before: datetime | None = None
    ) -> Sequence[tuple[int, WorldEvent]]:
        """Stored events not yet dispatched (received before `received_before`), oldest first."""
        ...

    async def mark_dispatched(self, ids: Sequence[int]) -> None:
        """Mark stored events as dispatched."""
        ...

    async def prune(self, world: str, *, keep: int) -> int:
        """Delete dispatched events except the newest `keep`."""
        ...


class TurnRuns(Protocol):
    """Where stored turn runs are read (the run repository), for an invocation's outcome."""

    async def turn_run(self, turn_key: str) -> StoredRun | None:
        """The newest turn run under `turn_key`, with its record."""
        ...


class IdleWork(Protocol):
    """Work that runs beside the pipeline until the daemon stops (reflection while idle)."""

    async def run(self) -> None:
        """Run until cancelled."""
        ...


class Leases(Protocol):
    """A cluster daemon's storyteller leases (`runtime.cluster.LeaseKeeper`)."""

    async def start(self) -> None:
        """Join the cluster and take a first share."""
        ...

    async def run(self) -> None:
        """Renew and even out until cancelled."""
        ...

    async def hand_over(self, keep: Collection[int]) -> None:
        """A clean stop: leave, and release every lease but `keep`'s (work still in flight)."""
        ...

    async def stop(self) -> None:
        """Release every lease and leave."""
        ...


class Forward(Protocol):
    """A cluster's forwarding of the game's invocations (`cluster.InvocationForwarder`)."""

    async def forward(self, invocation: GameInvocation) -> InvocationAnswer | None:
        """The answer of the daemon running the storyteller (None: no such storyteller)."""
        ...

    async def serve(self, answer_here: InvocationHandler) -> None:
        """Answer the invocations forwarded to this daemon, until cancelled."""
        ...
