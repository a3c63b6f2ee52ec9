"""Word of work stored for storytellers another daemon of a cluster runs.

The daemon that stores a world event routes it to every storyteller that hears it, wherever
that storyteller runs; the work items are in the shared backlog, and `send_work_notice` tells
every daemon (NOTIFY on `WORK_CHANNEL`, once the items are committed) which storytellers got
what, so their holders judge them at once. A notice is a JSON list of ``[storyteller id,
state, kind, count, room id, ambient]``; one too long for a notification goes in several. A
notice that is lost (its listener's connection ended) only delays the work: each daemon looks
at its storytellers' backlog again every lease span.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import astuple

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.work import WorkArrival
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.notifications import NOTIFY_BYTES, listen, notify

log = logging.getLogger(__name__)

WORK_CHANNEL = "storyteller_work"
"""The NOTIFY channel of work stored for storytellers (every daemon listens)."""


async def send_work_notice(db: Database, notices: Sequence[WorkArrival]) -> None:
    """Tell every daemon of the work stored (delivered together once this commits)."""
    if not notices or db.dialect != "postgresql":
        return
    payloads: list[str] = []
    part: list[str] = []
    size = 2  # the brackets
    for notice in notices:
        entry = json.dumps(astuple(notice), separators=(",", ":"))
        if part and size + len(entry.encode()) + 1 > NOTIFY_BYTES:
            payloads.append(f"[{','.join(part)}]")
            part, size = [], 2
        part.append(entry)
        size += len(entry.encode()) + 1
    payloads.append(f"[{','.join(part)}]")
    async with db.session() as session:
        for payload in payloads:
            await notify(session, WORK_CHANNEL, payload)


def work_notices(
    db: Database,
    clock: Clock,
    heard: Callable[[list[WorkArrival]], None],
    missed: Callable[[], None],
) -> AbstractAsyncContextManager[None]:
    """While inside, call `heard` with each notice of work stored (on SQLite, never), and
    `missed` once listening again after the connection ended (notices may have been lost)."""

    def parse(payload: str) -> None:
        try:
            notices = [
                WorkArrival(
                    int(sid),
                    str(state),
                    str(kind),
                    int(count),
                    None if room is None else int(room),
                    bool(ambient),
                )
                for sid, state, kind, count, room, ambient in json.loads(payload)
            ]
        except (ValueError, TypeError) as exc:  # not one of ours: the lease-span look finds it
            log.warning("cluster: an unreadable work notice was dropped: %s", type(exc).__name__)
            return
        heard(notices)

    return listen(db, WORK_CHANNEL, parse, clock, missed=missed)
