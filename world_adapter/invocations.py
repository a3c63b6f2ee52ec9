"""A game asking a storyteller for a turn: the request, the daemon's answer and the outcome.

The game sends a `GameInvocation` (FutureMUD's ``InvokeStorytellerAttention``: a storyteller's
name or id, a text, optionally a character and a room, and the game's own request id). The
daemon answers at once with an `InvocationAnswer` — accepted, or refused with a `RefusalCode` —
and, for an accepted one, once the turn has ended with an `InvocationOutcome`. The request id is
the idempotency key: the daemon stores an accepted invocation under it, so the same id sent again
is answered from what was stored and never runs a second turn. Over the bridge these are the
``invoke``, ``invoked`` and ``invoke_outcome`` frames (docs/bridge-protocol.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Protocol

from annotated_types import Len

from world_adapter.events import WorldId

MAX_INVOCATION_TEXT_CHARS = 4_000
"""The longest text a game may send with an invocation."""

RequestId = Annotated[str, Len(1, 64)]
"""The game's id of an invocation: 1-64 characters, unique for the game (across its restarts)."""


class RefusalCode(StrEnum):
    """Why the daemon refused an invocation."""

    UNKNOWN_STORYTELLER = "unknown_storyteller"
    PAUSED = "paused"
    QUEUE_FULL = "queue_full"
    KILL_SWITCH = "kill_switch"
    BUDGET = "budget"
    BLANK_TEXT = "blank_text"
    NO_MODEL = "no_model"
    """No model is configured, so no turn could run."""
    NOT_RUNNING = "not_running"
    """The daemon is starting or stopping."""
    NOT_SUPPORTED = "not_supported"
    """The peer takes no invocations (a conformance checker, a daemon without them wired)."""


@dataclass(frozen=True)
class GameInvocation:
    """game → daemon: run a turn of `storyteller` about `text`.

    Attributes:
        id: The game's request id (the idempotency key).
        storyteller: The storyteller's id, or its name in any case.
        text: What the storyteller should attend to (1-4,000 characters).
        character_id: The character it concerns, if any.
        room_id: The room it concerns, if any.
    """

    id: RequestId
    storyteller: Annotated[str, Len(1, 200)] | WorldId
    text: Annotated[str, Len(0, MAX_INVOCATION_TEXT_CHARS)]
    character_id: WorldId | None = None
    room_id: WorldId | None = None


@dataclass(frozen=True)
class InvocationAnswer:
    """daemon → game, at once: whether the invocation was accepted.

    Attributes:
        id: The invocation's request id.
        accepted: True once the turn is stored (it runs later).
        reason: ``queued``, or a `RefusalCode` value.
        message: One line for the game's logs and its admin.
        storyteller_id: The storyteller the invocation named, when it named one.
        turn_key: The turn's key, when accepted (the run records carry it).
        duplicate: The request id was accepted before: nothing new was stored.
    """

    id: RequestId
    accepted: bool
    reason: str
    message: str = ""
    storyteller_id: int | None = None
    turn_key: str | None = None
    duplicate: bool = False


@dataclass(frozen=True)
class ToolCall:
    """One tool call a turn made: its name, and whether it succeeded."""

    name: str
    ok: bool


@dataclass(frozen=True)
class InvocationOutcome:
    """daemon → game, once the turn of an accepted invocation has ended.

    Attributes:
        id: The invocation's request id.
        turn_key: The turn's key.
        outcome: How the turn ended (``completed``, ``noop``, ``no_tool_call``,
            ``model_transient_error``...), or ``not_run`` when a last check (a pause, a budget)
            stopped it before any model call.
        message: Why it did not run, or empty.
        run_id: The stored run record, when runs are recorded.
        tool_calls: The calls the turn made, in order.
    """

    id: RequestId
    turn_key: str
    outcome: str
    message: str = ""
    run_id: int | None = None
    tool_calls: tuple[ToolCall, ...] = ()


InvocationHandler = Callable[[GameInvocation], Awaitable[InvocationAnswer]]
"""What the daemon does with an invocation: answers it (having stored it, when accepted)."""


class InvocationChannel(Protocol):
    """A world that can carry invocations from the game (the bridge client)."""

    def serve_invocations(self, handler: InvocationHandler) -> None:
        """Answer every invocation the game sends from now on with `handler`."""
        ...

    async def send_outcome(self, outcome: InvocationOutcome) -> None:
        """Tell the game how an accepted invocation's turn ended.

        Raises:
            WorldAdapterError: If the game cannot be reached in time.
        """
        ...
