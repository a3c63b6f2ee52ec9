"""Messages between the daemons of a cluster: PostgreSQL's NOTIFY, addressed by daemon name.

A message is a JSON object for one daemon (`send_message`). NOTIFY carries at most 8,000
bytes, so a message goes in parts of `PART_CHARS` characters (at most 4 bytes each in UTF-8),
all sent in one transaction: PostgreSQL delivers the notifications of a transaction together
and in order, once it commits. Every daemon listens on `MESSAGE_CHANNEL` on a connection of its
own (`cluster_messages`), puts the parts of the messages for it together and hands each on.
Nothing is stored: a message to a daemon that is not listening is lost, so the sender waits
for an answer with a deadline.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from storyteller_daemon.clock import Clock
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.notifications import listen, notify

log = logging.getLogger(__name__)

MESSAGE_CHANNEL = "storyteller_messages"
"""The NOTIFY channel of the messages between daemons."""
PART_CHARS = 1_800
"""Characters of a message per notification (with its envelope, under 8,000 bytes)."""
OPEN_MESSAGES = 64
"""Messages whose parts are being put together at once (older ones are dropped)."""

Heard = Callable[[str, dict[str, Any]], None]
"""Called with the sending daemon's name and the message (quick: it must not wait)."""


async def send_message(db: Database, sender: str, to: str, message: dict[str, Any]) -> None:
    """Send `message` to the daemon `to` (delivered when this call's transaction commits)."""
    text = json.dumps(message, ensure_ascii=False)
    parts = [text[i : i + PART_CHARS] for i in range(0, len(text), PART_CHARS)] or [""]
    ident = uuid.uuid4().hex
    async with db.session() as session:
        for index, part in enumerate(parts):
            envelope = {
                "to": to,
                "from": sender,
                "id": ident,
                "part": index,
                "parts": len(parts),
                "data": part,
            }
            payload = json.dumps(envelope, ensure_ascii=False)
            await notify(session, MESSAGE_CHANNEL, payload)


class _Assembler:
    """Puts the parts of the messages for one daemon together."""

    def __init__(self, instance: str, heard: Heard) -> None:
        self._instance = instance
        self._heard = heard
        self._open: OrderedDict[str, list[str]] = OrderedDict()

    def part(self, payload: str) -> None:
        try:
            envelope = json.loads(payload)
            if envelope.get("to") != self._instance:
                return
            parts = self._open.setdefault(envelope["id"], [])
            parts.append(envelope["data"])
            if len(parts) < int(envelope["parts"]):
                while len(self._open) > OPEN_MESSAGES:
                    self._open.popitem(last=False)
                return
            del self._open[envelope["id"]]
            message = json.loads("".join(parts))
        except (ValueError, KeyError, TypeError) as exc:  # not ours, or torn: the sender retries
            log.warning("cluster: an unreadable message was dropped: %s", type(exc).__name__)
            return
        self._heard(str(envelope["from"]), message)


def cluster_messages(
    db: Database, clock: Clock, instance: str, heard: Heard
) -> AbstractAsyncContextManager[None]:
    """While inside, call `heard` with every message sent to `instance` (on SQLite, which has
    one daemon, nothing). Messages sent while the connection was away are lost: their senders
    time out and the game sends its request again."""
    return listen(db, MESSAGE_CHANNEL, _Assembler(instance, heard).part, clock)
