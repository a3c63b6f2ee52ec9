"""Scene claims: one storyteller's hold on a room for a while, so others do not act there too.

When several storytellers watch the same rooms, two of them can answer the same moment with two
unrelated interventions. A storyteller about to work a scene claims it (`SceneClaim`: a room, a
time window, a reason); while the claim holds, every other storyteller's prog calls in that room
are refused by the policy (rule ``scene_claim``) unless its remit is marked co-operating
(`domain.direction.Direction.cooperates`). Claims expire on their own; the holder may release
one early, and may extend its own. Claims are shown in every storyteller's prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from storyteller_daemon.domain.argument_limits import CLAIM_REASON_CHARS
from storyteller_daemon.errors import ValidationError

MAX_CLAIM = timedelta(hours=1)
MIN_CLAIM = timedelta(minutes=1)
MAX_CLAIMS_PER_STORYTELLER = 5
MAX_CLAIM_REASON_CHARS = CLAIM_REASON_CHARS


@dataclass(frozen=True)
class SceneClaim:
    """A hold on one room until `expires_at` (or until released)."""

    storyteller_id: int
    room_id: int
    claimed_at: datetime
    expires_at: datetime
    reason: str = ""
    id: int = 0
    storyteller_name: str = ""
    released_at: datetime | None = None

    def holds_at(self, now: datetime) -> bool:
        """Whether the claim holds at `now`."""
        return self.released_at is None and self.claimed_at <= now < self.expires_at


def claim_window(minutes: int) -> timedelta:
    """A claim's length from the minutes asked for.

    Raises:
        ValidationError: outside 1-60 minutes.
    """
    window = timedelta(minutes=minutes)
    if not MIN_CLAIM <= window <= MAX_CLAIM:
        raise ValidationError("A scene claim lasts 1 to 60 minutes.")
    return window
