"""Prog calls held for an admin's approval, and the prog calls the policy counts.

A tool marked for approval (``[policy] approve``) does not run when the model calls it: the call
is *parked* with its arguments, and an admin approves or rejects it (``storyteller policy
approve|reject``). A pending call expires after ``approval_expiry_seconds``. An approved call
runs once, from the daemon, under an idempotency key of its own, so a restart between claiming
it and recording its outcome sends the same key again and the game answers with the stored
outcome instead of acting twice.

States: ``pending`` → ``approved`` → ``running`` → ``done`` or ``failed``; ``pending`` →
``rejected`` or ``expired``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class ApprovalState(StrEnum):
    """Where a parked call is."""

    PENDING = "pending"
    APPROVED = "approved"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    REJECTED = "rejected"
    EXPIRED = "expired"


OPEN_APPROVAL_STATES = frozenset(
    {ApprovalState.PENDING, ApprovalState.APPROVED, ApprovalState.RUNNING}
)
"""States of a call that may still run."""


@dataclass(frozen=True)
class ParkedCall:
    """A call to park, as a turn hands it in.

    Attributes:
        key: the call's identity within its turn (turn key, tool, canonical arguments); parking
            the same key twice (a turn re-run after a crash) finds the first one.
    """

    key: str
    storyteller_id: int
    tool: str
    arguments: str
    turn_key: str
    trigger: str
    room_id: int | None
    created_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class Approval(ParkedCall):
    """A parked call and what became of it."""

    id: int
    state: ApprovalState
    decided_at: datetime | None = None
    decided_by: str = ""
    note: str = ""
    result: str = ""
    """The run's result envelope as JSON (done, failed), or why it was not run."""

    @property
    def run_key(self) -> str:
        """The turn key the approved call runs under: one per parked call."""
        return f"approval-{self.id}"


@dataclass(frozen=True)
class PolicyAction:
    """A prog call that ran (or was approved and ran), as the caps count it.

    Stored so that the hourly and daily caps and the cooldowns hold across a restart.
    """

    storyteller_id: int
    tool: str
    at: datetime
    player_id: int | None = None
    rooms: frozenset[int] = field(default_factory=frozenset)
    characters: frozenset[int] = field(default_factory=frozenset)
