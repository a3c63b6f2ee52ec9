"""In-game admin commands (``ais``/``aisr``) sent to the daemon over one connection.

Pure Python, like the session that owns it. `AdminCommands.send` writes an ``admin`` frame and
keeps the caller's reply until the daemon's ``result`` or ``error`` frame with the same id
arrives (`answered`), `ADMIN_SECONDS` pass, or the connection closes (`closed`); the reply is
called exactly once, with the daemon's text or with an error line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .invocations import Cancellable

ADMIN_SECONDS = 45.0
"""How long an in-game admin command waits for the daemon's answer."""

AdminReply = Callable[[str | None, str | None], None]
"""Called once with ``(text, None)`` (the daemon's answer) or ``(None, error)``."""


class AdminCommands:
    """The admin commands of one connection that still wait for the daemon's answer.

    Args:
        send: Sends a frame; False when it was not sent.
        call_later: ``call_later(seconds, fn)``, returning something with ``cancel()``.
    """

    def __init__(
        self,
        send: Callable[[dict[str, Any]], bool],
        call_later: Callable[[float, Callable[[], None]], Cancellable],
    ) -> None:
        self._send = send
        self._call_later = call_later
        self._sent = 0
        self._waiting: dict[str, tuple[AdminReply, Cancellable]] = {}

    def send(
        self,
        command: str,
        verb: str,
        args: list[str],
        caller: str,
        level: str,
        reply: AdminReply,
    ) -> bool:
        """Send an admin command to the daemon; False when it could not be sent.

        `reply` gets the daemon's text, or an error line (the daemon's, or a timeout after
        `ADMIN_SECONDS`, or the connection closing first).
        """
        self._sent += 1
        admin_id = f"a-{self._sent}"
        timer = self._call_later(ADMIN_SECONDS, lambda: self._timeout(admin_id))
        self._waiting[admin_id] = (reply, timer)
        frame = {"type": "admin", "id": admin_id, "command": command, "verb": verb,
                 "args": args, "caller": caller, "level": level}  # fmt: skip
        if not self._send(frame):
            self._waiting.pop(admin_id)
            timer.cancel()
            return False
        return True

    def answered(self, frame: dict[str, Any]) -> bool:
        """A result or error frame: reply to the admin command it answers; False when it
        answers none."""
        waiting = self._waiting.pop(str(frame.get("id")), None)
        if waiting is None:
            return False
        reply, timer = waiting
        timer.cancel()
        if frame.get("type") == "error":
            reply(None, str(frame.get("message") or "The daemon refused the command."))
            return True
        result = frame.get("result")
        text = result.get("text") if isinstance(result, dict) else None
        reply(text if isinstance(text, str) else json.dumps(result, ensure_ascii=False), None)
        return True

    def closed(self) -> None:
        """The connection closed: every waiting command is told so."""
        for admin_id in list(self._waiting):
            reply, timer = self._waiting.pop(admin_id)
            timer.cancel()
            reply(None, "The connection to the storyteller daemon closed; try again.")

    def _timeout(self, admin_id: str) -> None:
        waiting = self._waiting.pop(admin_id, None)
        if waiting is not None:
            waiting[0](None, "The storyteller daemon did not answer in time.")
