"""Running the prog calls admins approved, and expiring the ones they did not.

Parked calls live in the database (`storyteller_daemon.domain.approvals`); the CLI decides them
from another process, so the daemon looks every ``poll_seconds``. Each pass:

1. pending calls whose time is up become ``expired`` (logged; they never run);
2. unless the kill switch is on (approved calls then wait for ``policy resume``), approved
   calls are claimed (``running``) and run one by one under their own idempotency keys, and
   their outcome is stored (``done`` or ``failed``).

A call left ``running`` by a crash is claimed again on the next pass and sent under the same
key, which the game answers with the stored outcome: it runs at most once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.approvals import Approval
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import NotFoundError
from storyteller_daemon.storage.approvals import ApprovalRepository

log = logging.getLogger(__name__)


RunApproved = Callable[[Storyteller, Approval], Awaitable[dict[str, Any]]]


class ApprovalRunner:
    """Expires parked calls and runs approved ones (see the module docstring).

    Args:
        store: the parked calls.
        storytellers: a storyteller's current settings by id (raises `NotFoundError` for one
            deleted since).
        run: runs one approved call and returns its result envelope.
        policy: its kill switch holds approved calls back.
        clock: wall time for expiry; sleeps between passes.
        poll_seconds: time between passes.
        held: the storytellers this daemon of a cluster holds; only their calls are run here
            (None: every storyteller's).
    """

    def __init__(
        self,
        store: ApprovalRepository,
        storytellers: Callable[[int], Awaitable[Storyteller]],
        run: RunApproved,
        policy: Policy,
        clock: Clock,
        *,
        poll_seconds: float = 5.0,
        held: Callable[[], frozenset[int]] | None = None,
    ) -> None:
        self._store = store
        self._held = held
        self._storytellers = storytellers
        self._run = run
        self._policy = policy
        self._clock = clock
        self._poll = poll_seconds

    async def run(self) -> None:
        """Pass after pass until cancelled; a failing pass is logged and the next one follows."""
        while True:
            try:
                await self.run_once()
            except Exception:
                log.exception("approved calls: a pass failed; trying again")
            await self._clock.sleep(self._poll)

    async def run_once(self) -> list[Approval]:
        """One pass; returns the calls it ran (done or failed)."""
        for approval in await self._store.expire(self._clock.now()):
            log.warning(
                "parked call #%d (%s of storyteller %d) expired unapproved; it will not run",
                approval.id,
                approval.tool,
                approval.storyteller_id,
            )
        if await self._policy.killed_anywhere():
            return []
        claimed = await self._store.claim(self._held() if self._held is not None else None)
        for approval in claimed:
            await self._run_one(approval)
        return claimed

    async def _run_one(self, approval: Approval) -> None:
        try:
            storyteller = await self._storytellers(approval.storyteller_id)
        except NotFoundError:
            envelope: dict[str, Any] = {
                "ok": False,
                "error": f"storyteller {approval.storyteller_id} does not exist any more",
            }
        else:
            envelope = await self._run(storyteller, approval)
        ok = bool(envelope.get("ok"))
        await self._store.finish(
            approval.id, ok=ok, result=json.dumps(envelope, ensure_ascii=False, default=str)
        )
        log.warning(
            "approved call #%d (%s) ran: %s",
            approval.id,
            approval.tool,
            "ok" if ok else f"failed: {envelope.get('error')}",
        )
