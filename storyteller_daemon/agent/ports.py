"""What the agent needs from persistence, as protocols the storage repositories satisfy.

The agent layer may not import `storyteller_daemon.storage`; these protocols copy the
signatures of `SituationRepository`, `MemoryRepository`, `ReferenceRepository`,
`SpeechHistoryRepository`, `StoryPlanRepository`, `SceneClaimRepository` and
`ProviderQueryRepository` so that the composition root can hand the real repositories in, and
tests can check they still fit. `McpToolbox` is the one port that is not persistence: the MCP
servers a turn's tools may call.
Every method raises `NotFoundError` for an id that names nothing and `ValidationError` for a value
that breaks a domain rule; the messages are safe to show to a model.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from storyteller_daemon.domain.approvals import Approval, ParkedCall
from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.domain.direction import QueryRows
from storyteller_daemon.domain.mcp import McpOutcome, McpToolInfo
from storyteller_daemon.domain.memory_ranking import MemoryCandidate
from storyteller_daemon.domain.references import ReferenceDocument, ReferenceHit
from storyteller_daemon.domain.scenes import SceneClaim
from storyteller_daemon.domain.situations import (
    ADMIN_PROVENANCE,
    CharacterMemory,
    Provenance,
    Situation,
)
from storyteller_daemon.domain.story_plans import PlanStep, StoryPlan
from storyteller_daemon.domain.text import SpeechLine


@runtime_checkable
class SituationStore(Protocol):
    """A storyteller's situations (open narrative threads)."""

    async def create(
        self,
        storyteller_id: int,
        title: str,
        text: str,
        *,
        character_id: int | None = None,
        room_id: int | None = None,
        provenance: Provenance = ADMIN_PROVENANCE,
    ) -> Situation:
        """Open a situation, optionally scoped to one character or one room."""
        ...

    async def get(self, storyteller_id: int, situation_id: int) -> Situation:
        """One of this storyteller's situations, resolved ones included."""
        ...

    async def update(
        self,
        storyteller_id: int,
        situation_id: int,
        *,
        title: str | None = None,
        text: str | None = None,
        character_id: int | None = None,
        room_id: int | None = None,
        resolve: bool = False,
        provenance: Provenance = ADMIN_PROVENANCE,
    ) -> Situation:
        """Change title and text; a given scope replaces the old one; optionally resolve."""
        ...

    async def set_scope(
        self, storyteller_id: int, situation_id: int, character_id: int | None, room_id: int | None
    ) -> Situation:
        """Set the scope exactly; both None makes the situation universal."""
        ...

    async def open_for_trigger(
        self,
        storyteller_id: int,
        *,
        room_id: int | None,
        character_ids: Collection[int],
        limit: int,
    ) -> builtins.list[Situation]:
        """The newest `limit` unresolved situations concerning a trigger, oldest first."""
        ...

    async def open_universal(self, storyteller_id: int, *, limit: int) -> builtins.list[Situation]:
        """The `limit` most recently changed unresolved universal situations, newest first."""
        ...

    async def open_scoped(
        self,
        storyteller_id: int,
        *,
        room_id: int | None,
        character_ids: Collection[int],
        limit: int,
    ) -> builtins.list[Situation]:
        """Unresolved situations scoped to a trigger's characters (first) or room, the most
        recently changed first within each; every scoped one when neither is given."""
        ...


@runtime_checkable
class MemoryStore(Protocol):
    """A storyteller's notes about characters."""

    async def create(
        self,
        storyteller_id: int,
        character_id: int,
        title: str,
        text: str,
        *,
        importance: int = 5,
        provenance: Provenance = ADMIN_PROVENANCE,
    ) -> CharacterMemory:
        """Remember something about a character (importance 1-10)."""
        ...

    async def get(self, storyteller_id: int, memory_id: int) -> CharacterMemory:
        """One memory of this storyteller."""
        ...

    async def update(
        self,
        storyteller_id: int,
        memory_id: int,
        title: str,
        text: str,
        *,
        importance: int | None = None,
        provenance: Provenance = ADMIN_PROVENANCE,
    ) -> CharacterMemory:
        """Replace a memory's title and text (and importance, when given)."""
        ...

    async def forget(
        self, storyteller_id: int, memory_id: int, *, provenance: Provenance = ADMIN_PROVENANCE
    ) -> CharacterMemory:
        """Delete a memory for good and return what it held."""
        ...

    async def list(
        self, storyteller_id: int, character_id: int | None = None
    ) -> builtins.list[CharacterMemory]:
        """This storyteller's memories, optionally about one character, oldest first."""
        ...

    async def counts_by_character(self, storyteller_id: int) -> dict[int, int]:
        """Character id → number of memories."""
        ...

    async def candidates(
        self,
        storyteller_id: int,
        *,
        character_ids: Collection[int],
        words: Sequence[str],
        limit: int,
    ) -> builtins.list[MemoryCandidate]:
        """Memories worth ranking for a turn, each once, with its word-index score: at most
        `limit` best matches of any of `words`, newest about `character_ids`, newest written,
        newest changed and most important."""
        ...


@runtime_checkable
class ReferenceStore(Protocol):
    """The shared knowledge base of reference documents."""

    async def get(self, ref: str | int) -> ReferenceDocument:
        """A document by id or name (visibility is the caller's concern)."""
        ...

    async def search_hits(
        self, query: str | None, *, visible_to: int | None = None
    ) -> builtins.list[ReferenceHit]:
        """Documents matching every term of `query`, best first; blank lists all.

        Each comes with a snippet of its contents around the first match.
        """
        ...


@runtime_checkable
class SpeechHistory(Protocol):
    """What was recently said in each watched room (read side; the pipeline records it)."""

    async def recent(
        self, cell_id: int, *, limit: int, since: datetime, until: datetime | None = None
    ) -> list[SpeechLine]:
        """The newest `limit` lines heard in a room from `since` up to `until`, oldest first."""
        ...


@runtime_checkable
class ApprovalQueue(Protocol):
    """Where prog calls wait for an admin's approval (`storyteller_daemon.domain.approvals`)."""

    async def park(self, call: ParkedCall) -> Approval:
        """Park `call`; one with the same key parked before is returned as it stands."""
        ...


@runtime_checkable
class DigestStore(Protocol):
    """Each storyteller's rolling digest."""

    async def latest(self, storyteller_id: int) -> Digest | None:
        """The storyteller's digest, or None before the first refresh."""
        ...

    async def save(self, digest: Digest) -> Digest:
        """Store a refreshed digest in place of the old one."""
        ...


@runtime_checkable
class McpToolbox(Protocol):
    """The configured MCP servers, as turns use them (`storyteller_daemon.mcp.client`).

    Neither method waits longer than the server's timeouts, and neither raises anything but
    `ToolError` (server unknown, unreachable, slow, or broken), whose message the model may see.
    """

    async def list_tools(self, server: str) -> builtins.list[McpToolInfo]:
        """The tools `server` offers now."""
        ...

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> McpOutcome:
        """Call one tool of `server` and return what it answered."""
        ...


@runtime_checkable
class StoryPlanStore(Protocol):
    """Each storyteller's story plans (`domain.story_plans`); every change stamped and on record."""

    async def create(
        self,
        storyteller_id: int,
        goal: str,
        steps: tuple[PlanStep, ...],
        *,
        expires_in: timedelta,
        run: str = "",
        from_player: bool = False,
    ) -> StoryPlan:
        """A new active plan (a limited number may be open at once)."""
        ...

    async def get(self, storyteller_id: int, plan_id: int) -> StoryPlan:
        """One of this storyteller's plans, whatever its status."""
        ...

    async def step_done(
        self, storyteller_id: int, plan_id: int, *, note: str = "", run: str = ""
    ) -> StoryPlan:
        """Mark the due step done (completing the plan after its last step)."""
        ...

    async def step_failed(
        self, storyteller_id: int, plan_id: int, *, reason: str, run: str = ""
    ) -> StoryPlan:
        """Mark the due step failed: the plan then needs a replan."""
        ...

    async def replan(
        self,
        storyteller_id: int,
        plan_id: int,
        steps: tuple[PlanStep, ...],
        *,
        reason: str,
        run: str = "",
        goal: str | None = None,
        expires_in: timedelta | None = None,
    ) -> StoryPlan:
        """Replace the pending steps (and optionally goal and expiry), the reason on record."""
        ...

    async def abandon(
        self, storyteller_id: int, plan_id: int, *, reason: str, run: str = ""
    ) -> StoryPlan:
        """Give a plan up, the reason on record."""
        ...

    async def open_plans(self, storyteller_id: int) -> builtins.list[StoryPlan]:
        """The storyteller's open plans, oldest first; overdue ones are marked expired first."""
        ...


@runtime_checkable
class SceneClaimStore(Protocol):
    """Which storyteller holds which room for a while (`domain.scenes`)."""

    async def claim(
        self, storyteller_id: int, room_id: int, *, minutes: int, reason: str
    ) -> SceneClaim:
        """Hold a room for `minutes` from now; `ConflictError` when another storyteller does."""
        ...

    async def release(self, storyteller_id: int, room_id: int) -> SceneClaim:
        """End this storyteller's claim on a room now."""
        ...

    async def active(self, room_ids: Collection[int] | None = None) -> builtins.list[SceneClaim]:
        """Claims holding now (on `room_ids`, or anywhere)."""
        ...


@runtime_checkable
class ProviderQueries(Protocol):
    """Context providers' read-only queries over the daemon's database."""

    async def select(self, query: str, parameters: dict[str, Any]) -> QueryRows:
        """The rows of one SELECT; `ToolError` when it is refused, too slow or fails."""
        ...


@runtime_checkable
class TurnJournal(Protocol):
    """What a running turn has done, kept so a re-run after a crash repeats none of it.

    Entries are named ``round:N`` (the model's N-th answer, JSON) and ``call:R:I`` (the envelope
    call I of round R returned, JSON). Entries of a turn are deleted when it completes.
    """

    async def entries(self, turn_key: str) -> dict[str, str]:
        """Every entry the turn has, by name (empty for a turn never run before)."""
        ...

    async def note(self, turn_key: str, entry: str, body: str) -> None:
        """Keep an entry (one already kept under the name stays as it is)."""
        ...

    async def once(
        self, turn_key: str, entry: str, write: Callable[[], Awaitable[str]]
    ) -> tuple[str, bool]:
        """Run `write` and keep what it returns under `entry`, in one transaction with the
        writes it makes; when the entry is kept already, return it without running `write`.

        Returns:
            the body, and whether it was kept before (so `write` did not run).
        """
        ...
