"""The one shape of a turn runner: what the pipeline and a replay ask of the agent.

The pipeline asks a `TurnRunner` for attention verdicts, turns and records of cut-off turns and
reads only each turn's outcome (`TurnOutcome`); a replay (`runs.replay`) asks for one turn and
reads its whole record, so it asks for a ``TurnRunner[TurnRecord]``. The runtime's
`AgentTurnRunner` is both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from typing_extensions import TypeVar

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.storytellers import Storyteller


class Verdict(Protocol):
    """What the attention gate says about one trigger."""

    @property
    def interested(self) -> bool:
        """True when the trigger matters to the storyteller."""
        ...

    @property
    def reason(self) -> str:
        """Why (shown in the turn's prompt when interested)."""
        ...

    @property
    def violation(self) -> str | None:
        """Set when the model broke the verdict contract."""
        ...


class TurnOutcome(Protocol):
    """The parts of a finished turn the pipeline reports."""

    @property
    def outcome(self) -> str:
        """How the turn ended."""
        ...


Finish = Callable[[str], Awaitable[bool]]
"""Ends a claimed turn's work items for an outcome; True when the turn is complete."""

Turn = TypeVar("Turn", bound=TurnOutcome, covariant=True, default=TurnOutcome)
"""What `TurnRunner.run_turn` returns: at least the outcome (the pipeline reads no more)."""


class TurnRunner(Protocol[Turn]):
    """The agent side of the daemon: attention verdicts and turns, each run and recorded."""

    async def judge(
        self, storyteller: Storyteller, triggers: Sequence[Trigger]
    ) -> Sequence[Verdict]:
        """One verdict per trigger, in order, from one batch request (and at most one re-ask)."""
        ...

    async def run_turn(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str,
        *,
        finish: Finish | None = None,
    ) -> Turn:
        """Build the prompt, run the tool loop under turn key `key`, persist the result.

        `finish` is called with the turn's outcome in the transaction that stores its record,
        so the record and the end of its work items are written together or not at all; it
        returns whether the turn is complete (its journal may go).
        """
        ...

    async def interrupted(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str,
        attempt: int,
        *,
        given_up: bool = False,
    ) -> int | None:
        """Record that the turn `key` was cut off by a stop or crash and now runs as `attempt`
        (or, `given_up`, will not run again); the id of that record, if one was stored."""
        ...
