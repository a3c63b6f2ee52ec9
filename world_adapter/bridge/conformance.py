"""Conformance checks for any game-side implementation of the bridge protocol.

`run_checks` connects to a running game and exercises docs/bridge-protocol.md: the handshake
and its refusals, pings, every request method, error frames, subscriptions, resuming without
loss or repetition, gaps, idempotent progs and the frame size limit, and on request one event
of each kind and an invocation, caused by the game's hook or the operator. Each check uses its
own connection (the event checks share one subscription) and reports PASS, FAIL or SKIP with a
one-line detail; ``storyteller bridge check``
prints them. The checker speaks raw frames (it must send broken ones), so it does not use the
daemon's client. This module runs the checks and reports their outcomes; the checks themselves
are in `checks`, in groups.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import aiohttp

from world_adapter.bridge.checks.connecting import ConnectionChecks
from world_adapter.bridge.checks.context import CheckSkipped
from world_adapter.bridge.checks.events import EventChecks, Tell
from world_adapter.bridge.checks.queries import QueryChecks
from world_adapter.bridge.checks.replay import ReplayChecks
from world_adapter.bridge.messages import CAUSABLE_KINDS
from world_adapter.bridge.probe import CheckFailed


class Status(StrEnum):
    """The outcome of one check."""

    PASS = "PASS"  # noqa: S105 - a check outcome, not a password
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome."""

    name: str
    status: Status
    detail: str


class Checker(ConnectionChecks, QueryChecks, ReplayChecks, EventChecks):
    """Runs every group of checks against one game (arguments as for `CheckContext`)."""

    async def run(
        self, events: Tell | None = None, event_seconds: float = 60.0
    ) -> list[CheckResult]:
        """Every check, in order; with `events` (told what the operator should do when the game
        has no ``cause_event`` hook) one more per event kind and one for an invocation, each
        waiting up to `event_seconds`."""
        checks: list[tuple[str, Callable[[], Awaitable[str]]]] = [
            ("handshake", self.handshake),
            ("bad-token", self.bad_token),
            ("bad-version", self.bad_version),
            ("ping", self.ping),
            ("methods", self.methods),
            ("errors", self.errors),
            ("semantics", self.semantics),
            ("subscribe", self.subscribe),
            ("from-now", self.from_now),
            ("resume", self.resume),
            ("foreign-epoch", self.foreign_epoch),
            ("idempotency", self.idempotency),
            ("oversize", self.oversize),
            ("malformed", self.malformed),
        ]
        if events is not None:
            checks += [
                (f"event-{kind}", self.event_check(kind, events, event_seconds))
                for kind in CAUSABLE_KINDS
            ]
        results = []
        async with aiohttp.ClientSession() as self._session:
            try:
                for name, check in checks:
                    results.append(await self._run_one(name, check))
            finally:
                await self.close_events()
        self._session = None
        return results

    async def _run_one(self, name: str, check: Callable[[], Awaitable[str]]) -> CheckResult:
        try:
            detail = await check()
        except CheckSkipped as exc:
            return CheckResult(name, Status.SKIP, str(exc))
        except CheckFailed as exc:
            return CheckResult(name, Status.FAIL, str(exc))
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            detail = str(exc) or type(exc).__name__
            return CheckResult(name, Status.FAIL, f"connection failed: {detail}")
        return CheckResult(name, Status.PASS, detail)


async def run_checks(
    url: str,
    token: str,
    *,
    prog: str | None = None,
    prog_arguments: Mapping[str, Any] | None = None,
    seconds: float = 5.0,
    events: Tell | None = None,
    event_seconds: float = 60.0,
) -> list[CheckResult]:
    """Run every check against the game at `url` and return the results in order (with
    `events`, the event checks too: see `Checker.run`)."""
    checker = Checker(url, token, prog=prog, prog_arguments=prog_arguments, seconds=seconds)
    return await checker.run(events, event_seconds)
