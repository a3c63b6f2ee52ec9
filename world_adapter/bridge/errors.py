"""Errors specific to the bridge: a reported gap in the stream, and a game's refusal."""

from __future__ import annotations

from world_adapter.errors import CursorExpired
from world_adapter.events import Cursor


class StreamGap(CursorExpired):
    """The game could not replay everything after a cursor; the stream goes on after another.

    The subscription that raised it is closed. Subscribing again after `resume_after` picks up
    exactly where the game continued, so nothing but the reported range is lost.

    Attributes:
        reason: ``epoch``, ``expired`` or ``ahead`` (docs/bridge-protocol.md).
        after: The cursor the daemon asked to resume after.
        resume_after: The cursor the game's stream continues after.
    """

    def __init__(self, reason: str, after: Cursor, resume_after: Cursor) -> None:
        super().__init__(
            f"the game cannot replay after {after} ({reason}); it continues after {resume_after}"
        )
        self.reason = reason
        self.after = after
        self.resume_after = resume_after


class RemoteError(Exception):
    """The game answered a request with an ``error`` frame.

    Attributes:
        code: The error code (``command_failed``, ``bad_params``...).
        message: The game's message.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
