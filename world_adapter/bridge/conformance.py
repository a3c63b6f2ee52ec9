"""Conformance checks for any game-side implementation of the bridge protocol.

`run_checks` connects to a running game and exercises docs/bridge-protocol.md: the handshake
and its refusals, pings, every request method, error frames, subscriptions, resuming without
loss or repetition, gaps, idempotent progs and the frame size limit. Each check uses its own
connection and reports PASS, FAIL or SKIP with a one-line detail; ``storyteller bridge check``
prints them. The checker speaks raw frames (it must send broken ones), so it does not use the
daemon's client.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import aiohttp

from world_adapter.bridge.messages import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    CloseCode,
    Error,
    ErrorCode,
    Gap,
    GapReason,
    Hello,
    Ping,
    Pong,
    Welcome,
    close_code_name,
    frame_type,
)
from world_adapter.bridge.methods import Method, world_methods
from world_adapter.bridge.probe import (
    CheckFailed,
    Closed,
    Probe,
    looks_up_one_id,
    sample_value,
)
from world_adapter.codec import CodecError, encode
from world_adapter.events import Cursor, WorldEvent
from world_adapter.facts import ProgOutcome

NO_SUCH_ID = 2_147_483_647
"""An id no game is expected to use, for "unknown ids answer null"."""
RESUME_SAMPLE = 20


ABNORMAL_CLOSURE = 1006
"""The close code a client reports for a connection that ended without a close frame."""


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


class CheckSkipped(Exception):
    """The check cannot run against this game as it is now."""


class Checker:
    """Runs the checks against one game.

    Args:
        url: The game's bridge endpoint.
        token: The shared secret.
        prog: A harmless prog to run twice for the idempotency check (None: skip it).
        prog_arguments: Its arguments by parameter name.
        seconds: Time limit of each step.
        idle_seconds: How long the resume check waits for more events.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        prog: str | None = None,
        prog_arguments: Mapping[str, Any] | None = None,
        seconds: float = 5.0,
        idle_seconds: float = 1.0,
    ) -> None:
        self.url = url
        self._token = token
        self._prog = prog
        self._prog_arguments = dict(prog_arguments or {})
        self._seconds = seconds
        self._idle = idle_seconds
        self._session: aiohttp.ClientSession | None = None
        self._welcome: Welcome | None = None
        self._cells: list[int] = []
        self._sample_ids: dict[str, Any] = {}

    async def run(self) -> list[CheckResult]:
        """Every check, in order."""
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
        results = []
        async with aiohttp.ClientSession() as self._session:
            for name, check in checks:
                results.append(await self._run_one(name, check))
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

    async def _open(self) -> Probe:
        assert self._session is not None
        async with asyncio.timeout(self._seconds):
            ws = await self._session.ws_connect(self.url, max_msg_size=MAX_FRAME_BYTES)
        return Probe(ws, self._seconds)

    async def _session_probe(self) -> Probe:
        """A connection past a successful handshake."""
        probe = await self._open()
        await probe.send(Hello(PROTOCOL_VERSION, self._token, "storyteller bridge check"))
        self._welcome = await probe.expect(Welcome, "welcome")
        return probe

    # ------------------------------------------------------------------ handshake

    async def handshake(self) -> str:
        probe = await self._session_probe()
        await probe.ws.close()
        welcome = self._welcome
        assert welcome is not None
        if welcome.protocol != PROTOCOL_VERSION:
            raise CheckFailed(f"welcome says protocol {welcome.protocol}")
        return f"game {welcome.game!r}, head {welcome.head}"

    async def _refused(self, hello: Hello, expected: CloseCode) -> str:
        probe = await self._open()
        await probe.send(hello)
        closed = await probe.receive()
        if not isinstance(closed, Closed):
            await probe.ws.close()
            raise CheckFailed(
                f"answered {frame_type(closed)} instead of closing with {close_code_name(expected)}"
            )
        if closed.code != expected:
            raise CheckFailed(
                f"expected close {close_code_name(expected)}, got {close_code_name(closed.code)}"
            )
        return f"closed with {close_code_name(closed.code)}"

    async def bad_token(self) -> str:
        wrong = self._token + "-" + secrets.token_hex(4)
        return await self._refused(Hello(PROTOCOL_VERSION, wrong), CloseCode.AUTH_FAILED)

    async def bad_version(self) -> str:
        return await self._refused(Hello(999, self._token), CloseCode.UNSUPPORTED_VERSION)

    async def ping(self) -> str:
        probe = await self._session_probe()
        try:
            nonce = "conformance-" + secrets.token_hex(4)
            await probe.send(Ping(nonce))
            pong = await probe.expect(Pong, "pong")
            if pong.nonce != nonce:
                raise CheckFailed(f"pong carried nonce {pong.nonce!r}, not {nonce!r}")
        finally:
            await probe.ws.close()
        return "pong with the same nonce"

    # ------------------------------------------------------------------ requests

    async def methods(self) -> str:
        probe = await self._session_probe()
        try:
            zones = await self._call(probe, "zones", {})
            self._cells = sorted({cell for cells in zones.values() for cell in cells})
            players = await self._call(probe, "online_players", {})
            self._sample_ids = {
                "room": self._cells[0] if self._cells else 1,
                "character": players[0].id if players else 1,
            }
            answered = 2
            for spec in world_methods().values():
                if spec.name in ("zones", "online_players", "execute_prog"):
                    continue
                await self._call(probe, spec.name, self._sample_params(spec), refusal_ok=True)
                answered += 1
                if looks_up_one_id(spec):
                    missing = await self._call(probe, spec.name, {spec.params[0].name: NO_SUCH_ID})
                    if missing is not None:
                        raise CheckFailed(f"{spec.name} of an unknown id answered {missing!r}")
        finally:
            await probe.ws.close()
        return f"{answered} methods answered; unknown ids give null"

    async def _call(
        self, probe: Probe, name: str, params: dict[str, Any], *, refusal_ok: bool = False
    ) -> Any:
        spec = world_methods()[name]
        answer = await probe.request(name, params)
        if isinstance(answer, Error):
            if refusal_ok and answer.code is ErrorCode.COMMAND_FAILED:
                return None
            raise CheckFailed(f"{name} answered {answer.code}: {answer.message}")
        try:
            return spec.decode_result(answer.result)
        except CodecError as exc:
            raise CheckFailed(f"{name} answered a malformed result: {exc}") from None

    def _sample_params(self, spec: Method) -> dict[str, Any]:
        return {
            p.name: encode(sample_value(p.hint, p.name, self._sample_ids), p.hint)
            for p in spec.params
            if p.required
        }

    async def errors(self) -> str:
        probe = await self._session_probe()
        try:
            await self._expect_error(probe, "no_such_method", {}, ErrorCode.UNKNOWN_METHOD)
            await self._expect_error(
                probe, "character", {"character_id": "not a number"}, ErrorCode.BAD_PARAMS
            )
            params = {
                "prog": "conformance-no-such-prog-" + secrets.token_hex(4),
                "arguments": {},
                "idempotency_key": "conformance-" + secrets.token_hex(8),
            }
            await self._expect_error(probe, "execute_prog", params, ErrorCode.COMMAND_FAILED)
        finally:
            await probe.ws.close()
        return "unknown_method, bad_params and command_failed where due"

    async def semantics(self) -> str:
        """What the document settles beyond the types: online players are players, unknown
        rooms and calendars are left out or null (not errors), a path from a room to itself is
        found and empty, and a path no exit budget allows is not found (not an error)."""
        probe = await self._session_probe()
        try:
            players = await self._call(probe, "online_players", {})
            if any(not p.is_player for p in players):
                raise CheckFailed("online_players listed a character that is not a player")
            times = await self._call(probe, "room_times", {"room_ids": [NO_SUCH_ID]})
            if times:
                raise CheckFailed(f"room_times of an unknown room answered {times!r}, not {{}}")
            calendar = await self._call(probe, "calendar", {"ref": "conformance-no-such-calendar"})
            if calendar is not None:
                raise CheckFailed("calendar of an unknown name did not answer null")
            rooms = await self._cells_or_skip()
            rule = {"doors": "ignore"}
            here = {"origin_room_id": rooms[0], "destination_room_id": rooms[0], "rule": rule}
            same = await self._call(probe, "path", here)
            if not same.found or same.directions:
                raise CheckFailed(f"a path from room {rooms[0]} to itself was {same!r}")
            if len(rooms) > 1:
                apart = {**here, "destination_room_id": rooms[-1], "max_exits": 0}
                none = await self._call(probe, "path", apart)
                if none.found:
                    raise CheckFailed("a path with max_exits 0 between two rooms was found")
        finally:
            await probe.ws.close()
        return (
            f"{len(players)} online players; unknown room and calendar left out; "
            "paths to the same room and past the exit budget as documented"
        )

    async def _expect_error(
        self, probe: Probe, name: str, params: dict[str, Any], code: ErrorCode
    ) -> None:
        answer = await probe.request(name, params)
        if not isinstance(answer, Error) or answer.code != code:
            got = answer.code if isinstance(answer, Error) else "a result"
            raise CheckFailed(f"{name} with {params} answered {got}, expected {code}")

    async def idempotency(self) -> str:
        if self._prog is None:
            raise CheckSkipped("give --prog (a harmless prog) to check idempotent execution")
        probe = await self._session_probe()
        params = {
            "prog": self._prog,
            "arguments": self._prog_arguments,
            "idempotency_key": "conformance-" + secrets.token_hex(8),
        }
        try:
            first: ProgOutcome = await self._call(probe, "execute_prog", params)
            second: ProgOutcome = await self._call(probe, "execute_prog", params)
        finally:
            await probe.ws.close()
        # A key outlives its connection: the daemon retries on a new one after a reconnect.
        other = await self._session_probe()
        try:
            third: ProgOutcome = await self._call(other, "execute_prog", params)
        finally:
            await other.ws.close()
        replays = (first.replayed, second.replayed, third.replayed)
        if replays != (False, True, True):
            raise CheckFailed(
                f"replayed was {replays[0]}, {replays[1]}, then {replays[2]} on a new "
                "connection; expected false, true, true"
            )
        if not first.value == second.value == third.value:
            raise CheckFailed(f"the repeated key gave {second.value!r}, not {first.value!r}")
        return f"{self._prog} ran once; the repeated key replayed, on a new connection too"

    # ------------------------------------------------------------------ stream

    async def _cells_or_skip(self) -> list[int]:
        if not self._cells:
            probe = await self._session_probe()
            try:
                zones = await self._call(probe, "zones", {})
            finally:
                await probe.ws.close()
            self._cells = sorted({cell for cells in zones.values() for cell in cells})
        if not self._cells:
            raise CheckSkipped("the game reports no zones, so no rooms to subscribe to")
        return self._cells

    async def subscribe(self) -> str:
        cells = await self._cells_or_skip()
        probe = await self._session_probe()
        try:
            subscribed = await probe.subscribe(cells, None)
        finally:
            await probe.ws.close()
        if sorted(subscribed.cells) != cells:
            raise CheckFailed("subscribed does not repeat the subscription's cells")
        return f"{len(cells)} rooms, head {subscribed.head}"

    async def from_now(self) -> str:
        """``after: null`` means from now on: nothing at or before the head is sent."""
        cells = await self._cells_or_skip()
        probe = await self._session_probe()
        seen = 0
        try:
            subscribed = await probe.subscribe(cells, None)
            head = subscribed.head
            while seen < RESUME_SAMPLE:
                item = await probe.next_stream_frame(self._idle)
                if item is None:
                    break
                if isinstance(item, Gap):
                    raise CheckFailed(
                        f"a subscription from now on began with a gap ({item.reason})"
                    )
                if item.cursor.epoch == head.epoch and item.cursor.seq <= head.seq:
                    raise CheckFailed(
                        f"after null sent {item.cursor}, at or before the head {head}"
                    )
                seen += 1
        finally:
            await probe.ws.close()
        return f"no event at or before the head; {seen} new event(s) while listening"

    async def _read_events(
        self, cells: list[int], after: Cursor, count: int, *, gap_ok: bool
    ) -> tuple[list[WorldEvent], Cursor]:
        """Up to `count` events after `after` (fewer if the game goes quiet), and the start."""
        probe = await self._session_probe()
        events: list[WorldEvent] = []
        start = after
        try:
            await probe.subscribe(cells, after)
            while len(events) < count:
                item = await probe.next_stream_frame(self._idle)
                if item is None:
                    break
                if isinstance(item, Gap):
                    if not gap_ok or events:
                        raise CheckFailed(f"unexpected gap ({item.reason}) after {item.after}")
                    start = item.resume_after
                    continue
                events.append(item)
        finally:
            await probe.ws.close()
        return events, start

    async def resume(self) -> str:
        cells = await self._cells_or_skip()
        assert self._welcome is not None
        head = self._welcome.head
        first_after = Cursor(head.epoch, max(0, head.seq - 5 * RESUME_SAMPLE))
        reference, start = await self._read_events(cells, first_after, RESUME_SAMPLE, gap_ok=True)
        if len(reference) < 2:
            raise CheckSkipped("fewer than 2 events in the buffer; make something happen first")
        seqs = [e.cursor.seq for e in reference]
        if seqs != sorted(set(seqs)) or any(e.cell_id not in cells for e in reference):
            raise CheckFailed(f"events out of order, repeated or from other rooms: {seqs}")
        again, _ = await self._read_events(cells, start, len(reference), gap_ok=False)
        if [e.cursor for e in again] != [e.cursor for e in reference]:
            raise CheckFailed("two subscriptions from the same cursor saw different events")
        middle = len(reference) // 2
        rest, _ = await self._read_events(
            cells, reference[middle - 1].cursor, len(reference) - middle, gap_ok=False
        )
        if rest != reference[middle:]:
            raise CheckFailed(
                f"resuming after {reference[middle - 1].cursor} did not give exactly the rest"
            )
        return f"{len(reference)} events replayed twice and resumed from the middle, none lost"

    async def foreign_epoch(self) -> str:
        cells = await self._cells_or_skip()
        probe = await self._session_probe()
        foreign = Cursor("conformance-" + secrets.token_hex(6), 1)
        try:
            await probe.subscribe(cells, foreign)
            gap = await probe.expect(Gap, "a gap")
        finally:
            await probe.ws.close()
        assert self._welcome is not None
        if gap.reason is not GapReason.EPOCH or gap.after != foreign:
            raise CheckFailed(f"gap reason {gap.reason} after {gap.after}; expected epoch")
        if gap.resume_after.epoch != self._welcome.head.epoch:
            raise CheckFailed(f"the gap resumes in epoch {gap.resume_after.epoch!r}")
        return f"gap (epoch), resuming after {gap.resume_after}"

    # ------------------------------------------------------------------ limits and bad frames

    async def oversize(self) -> str:
        # 1006 is what a WebSocket library reports when the TCP connection ended with no close
        # frame: the game dropped the connection on the oversize frame, which is a refusal.
        probe = await self._session_probe()
        padding = "x" * (MAX_FRAME_BYTES + 1)
        try:
            try:
                await probe.send(f'{{"type": "ping", "nonce": "n", "padding": "{padding}"}}')
            except (ConnectionError, aiohttp.ClientError):
                # The game may close as soon as it reads the frame's length, while the rest of
                # the frame is still being sent; the close frame is then lost with it.
                if probe.ws.close_code in (None, ABNORMAL_CLOSURE):
                    return "the connection was closed while the oversize frame was being sent"
            closed = await probe.expect_close()
        finally:
            await probe.ws.close()
        if closed.code in (None, ABNORMAL_CLOSURE):
            return "the connection was closed while the oversize frame was being sent"
        if closed.code != CloseCode.TOO_BIG:
            raise CheckFailed(f"expected close 1009, got {close_code_name(closed.code)}")
        return "closed with 1009"

    async def malformed(self) -> str:
        probe = await self._session_probe()
        try:
            for text in ("this is not JSON", '{"type": "no_such_frame"}', "[1, 2, 3]"):
                await probe.send(text)
                error = await probe.expect(Error, f"an error for {text!r}")
                if error.code is not ErrorCode.BAD_FRAME or error.id is not None:
                    raise CheckFailed(f"{text!r} got {error.code} with id {error.id!r}")
            await probe.send(Ping("after-bad-frames"))
            await probe.expect(Pong, "pong after the bad frames")
        finally:
            await probe.ws.close()
        return "each answered with bad_frame; the connection stays usable"


async def run_checks(
    url: str,
    token: str,
    *,
    prog: str | None = None,
    prog_arguments: Mapping[str, Any] | None = None,
    seconds: float = 5.0,
) -> list[CheckResult]:
    """Run every check against the game at `url` and return the results in order."""
    checker = Checker(url, token, prog=prog, prog_arguments=prog_arguments, seconds=seconds)
    return await checker.run()
