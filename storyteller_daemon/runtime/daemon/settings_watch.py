"""Settings changes while the daemon runs, and direct invocation.

`SettingsWatch` polls the storytellers' revisions and the world's zone membership every
``reload_seconds``; on a difference it reloads the settings, re-routes, forgets storytellers
that are gone, re-syncs heartbeats, tells the settings listeners (the budget keeper) and asks
the world pump to resubscribe when the watched rooms changed. Direct invocation finds a
storyteller by id or name in that routing table and queues its turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.runtime.daemon.state import DaemonState, log
from world_adapter.errors import FatalStreamError


@dataclass(frozen=True)
class InvocationResult:
    """The answer to a direct invocation.

    Attributes:
        accepted: True once the turn is queued (it runs later; the result does not wait).
        reason: why it was refused, or ``queued``.
        storyteller_id: the storyteller the reference named, when it named one.
        stage: what refused it: ``not_running``, ``unknown``, or a pipeline stage (``pause``,
            ``api_key``, ``text``, ``queue``, ``budget``, ``kill_switch``...); empty when
            accepted.
    """

    accepted: bool
    reason: str
    storyteller_id: int | None = None
    stage: str = ""


class SettingsWatch(DaemonState):
    """Keeps routing and heartbeats in step with the stored settings; answers invocations."""

    async def reload(self, *, force: bool = False) -> bool:
        """Pick up changed settings or zones; True when something changed."""
        async with self._reloading:
            return await self._reload(force=force)

    async def _reload(self, *, force: bool) -> bool:
        revisions = await self._settings.revisions()
        zones = await self._world.zones()
        if not force and revisions == self._revisions and zones == self._zones:
            return False
        storytellers = await self._settings.list()
        known = {s.id for s in self.pipeline.router.storytellers}
        self.pipeline.router.update(storytellers, zones)
        self.pipeline.storytellers_reloaded()
        for gone in known - {s.id for s in storytellers}:
            if gone is not None:
                self.pipeline.forget(gone)
        self.heartbeats.sync(storytellers)
        for listener in self._settings_listeners:
            listener(storytellers)
        self._revisions, self._zones = revisions, zones
        cells = self.pipeline.router.watched_cells()
        if cells != self._cells:
            self._cells = cells
            self._resubscribe.set()
        if not force:
            log.info(
                "settings reloaded: %d storytellers, %d watched rooms",
                len(storytellers),
                len(cells),
            )
        return True

    def find_storyteller(self, ref: str | int) -> Storyteller | None:
        """A storyteller by id, or by name ignoring case (a text of digits is an id)."""
        if isinstance(ref, bool):  # a bool is an int to Python, but never an id
            return None
        text = str(ref).strip()
        if isinstance(ref, int) or text.isdigit():
            return self.pipeline.router.storyteller(int(text))
        wanted = text.casefold()
        return next(
            (s for s in self.pipeline.router.storytellers if s.name.casefold() == wanted), None
        )

    async def invoke(
        self,
        storyteller_ref: str | int,
        text: str,
        *,
        source: str | None = None,
        character_id: int | None = None,
        room_id: int | None = None,
    ) -> InvocationResult:
        """Store a direct-invocation turn for a storyteller, with the game's text.

        Args:
            storyteller_ref: the storyteller's id, or its name in any case.
            text: what the game wants the storyteller to attend to (trimmed).
            source: the work item's source, for an invocation with the game's request id
                (the same source is stored once); default: a new one.
            character_id: the character it concerns, if any.
            room_id: the room it concerns, if any.

        Returns:
            Accepted once the turn is queued. Refused, with the reason and the stage, when the
            daemon is not running, the storyteller is unknown or paused, the text is blank, no
            model is configured, the storyteller's queue is full, its budget is spent or the
            kill switch is on.
        """
        if not self.ready.is_set():
            return InvocationResult(False, "the daemon is not running", stage="not_running")
        storyteller = self.find_storyteller(storyteller_ref)
        if storyteller is None:
            return InvocationResult(False, f"no storyteller '{storyteller_ref}'", stage="unknown")
        refusal = await self.pipeline.submit_direct(
            storyteller, text, source=source, character_id=character_id, room_id=room_id
        )
        if refusal is not None:
            return InvocationResult(False, refusal.reason, storyteller.id, refusal.stage)
        return InvocationResult(True, "queued", storyteller.id)

    async def _watch_settings(self) -> None:
        while True:
            await self._clock.sleep(self._reload_seconds)
            try:
                await self.reload()
            except FatalStreamError as exc:
                self._refused(exc)
                return
            except Exception:  # a failed poll is retried at the next interval
                log.exception("could not reload settings")
            async with self._polled:
                self.polls += 1
                self._polled.notify_all()

    async def wait_polls(self, count: int) -> None:
        """Return once `count` settings polls have completed."""
        async with self._polled:
            await self._polled.wait_for(lambda: self.polls >= count)
