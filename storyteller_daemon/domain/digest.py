"""A storyteller's rolling digest: what has happened, in a few paragraphs, for every prompt."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Digest:
    """The latest digest of one storyteller.

    Attributes:
        storyteller_id: whose digest.
        text: the summary (written by the digest model from stored situations, memories and
            runs, some of which came from players: it is untrusted when it enters a prompt).
        fingerprint: a hash of what it was made from; a refresh with the same inputs is skipped.
        run_key: the key of the recorded run that wrote it.
        refreshed_on: when it was written.
    """

    storyteller_id: int
    text: str
    fingerprint: str
    run_key: str
    refreshed_on: datetime
