"""One bridge connection against a scripted game: handshake outcomes, pings and silence on a
fake clock, request futures, bad frames answered and counted, and stale frames ignored."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from test_bridge_doubles import AT, STEP, TOKEN, Peer, ScriptedGame

from storyteller_daemon.testing.clock import FakeClock, settle
from world_adapter.bridge.connection import BridgeConnection, BridgeStats
from world_adapter.bridge.errors import RemoteError
from world_adapter.bridge.game_calls import AdminHandler, AdminRefused
from world_adapter.bridge.messages import (
    Admin,
    AdminLevel,
    Error,
    ErrorCode,
    EventFrame,
    Ping,
    Pong,
    Request,
    Result,
    Subscribe,
    Subscribed,
    Welcome,
)
from world_adapter.bridge.timing import BridgeTimings
from world_adapter.bridge.wire import frame_data
from world_adapter.errors import FatalStreamError, StreamTimeout, TransientStreamError
from world_adapter.events import Cursor, RoomEcho

TIMINGS = BridgeTimings(ping_seconds=15, silence_seconds=45, handshake_seconds=10)


@pytest.fixture
async def game() -> AsyncIterator[ScriptedGame]:
    async with ScriptedGame() as scripted:
        yield scripted


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client_session:
        yield client_session


def echo(seq: int) -> RoomEcho:
    return RoomEcho(cursor=Cursor("boot-1", seq), cell_id=101, zone_id=1, occurred_at=AT, text="x")


async def open_connection(
    game: ScriptedGame, session: aiohttp.ClientSession, clock: FakeClock, stats: BridgeStats
) -> tuple[BridgeConnection, Peer]:
    opening = asyncio.create_task(
        BridgeConnection.open(session, game.url, TOKEN, clock=clock, timings=TIMINGS, stats=stats)
    )
    peer = await game.accept()
    hello = await peer.welcome()
    assert (hello.protocol, hello.token) == (1, TOKEN)
    return await asyncio.wait_for(opening, STEP), peer


async def subscribe_quay(connection: BridgeConnection, peer: Peer) -> None:
    """Subscribe to room 101 from the start; the game confirms."""
    await connection.subscribe([101], None)
    assert isinstance(await peer.receive(), Subscribe)
    await peer.send(Subscribed((101,), Cursor("boot-1", 0)))


async def test_the_handshake_yields_the_welcome(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    stats = BridgeStats()
    connection, _ = await open_connection(game, session, FakeClock(), stats)
    try:
        assert connection.welcome == Welcome(1, Cursor("boot-1", 0), "scripted")
        assert stats.connections == 1
    finally:
        await connection.close()


@pytest.mark.parametrize(
    ("code", "error", "words"),
    [
        (4001, FatalStreamError, "refused the bridge token"),
        (4002, FatalStreamError, "does not speak protocol 1"),
        (4003, TransientStreamError, "closed the connection"),
        (1011, TransientStreamError, "closed the connection"),
    ],
)
async def test_close_codes_during_the_handshake_are_classified(
    game: ScriptedGame,
    session: aiohttp.ClientSession,
    code: int,
    error: type[Exception],
    words: str,
) -> None:
    opening = asyncio.create_task(
        BridgeConnection.open(
            session, game.url, TOKEN, clock=FakeClock(), timings=TIMINGS, stats=BridgeStats()
        )
    )
    peer = await game.accept()
    await peer.receive()
    await peer.close(code, "because")
    with pytest.raises(error, match=words) as caught:
        await asyncio.wait_for(opening, STEP)
    assert not isinstance(caught.value, FatalStreamError) or code in (4001, 4002)


async def test_a_welcome_for_another_protocol_is_fatal(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    opening = asyncio.create_task(
        BridgeConnection.open(
            session, game.url, TOKEN, clock=FakeClock(), timings=TIMINGS, stats=BridgeStats()
        )
    )
    peer = await game.accept()
    await peer.receive()
    await peer.send(Welcome(2, Cursor("e", 0)))
    with pytest.raises(FatalStreamError, match="protocol 2"):
        await asyncio.wait_for(opening, STEP)


async def test_no_welcome_in_time_is_transient(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    clock = FakeClock()
    opening = asyncio.create_task(
        BridgeConnection.open(
            session, game.url, TOKEN, clock=clock, timings=TIMINGS, stats=BridgeStats()
        )
    )
    peer = await game.accept()
    await peer.receive()
    await clock.advance(9)
    assert not opening.done()
    await clock.advance(1)
    with pytest.raises(TransientStreamError, match="no welcome"):
        await asyncio.wait_for(opening, STEP)
    assert await peer.receive_close() == 4000


async def test_pings_keep_a_quiet_connection_and_silence_ends_it(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    clock = FakeClock()
    connection, peer = await open_connection(game, session, clock, BridgeStats())
    await clock.advance(15)
    ping = await peer.receive()
    assert isinstance(ping, Ping)
    await peer.send(Pong(ping.nonce))
    await settle()
    await clock.advance(15)  # 30 s: heard 15 s ago, so another ping
    assert isinstance(await peer.receive(), Ping)
    await clock.advance(15)  # 45 s: heard 30 s ago
    assert isinstance(await peer.receive(), Ping)
    await clock.advance(15)  # 60 s: 45 s of silence
    assert await peer.receive_close() == 4000
    with pytest.raises(StreamTimeout, match="nothing from the game for 45"):
        await connection.next_item()
    await connection.close()


async def test_the_daemon_answers_the_game_s_pings(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    connection, peer = await open_connection(game, session, FakeClock(), BridgeStats())
    try:
        await peer.send(Ping("g-1"))
        assert await peer.receive() == Pong("g-1")
    finally:
        await connection.close()


async def test_a_bad_frame_is_answered_counted_and_survived(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    stats = BridgeStats()
    connection, peer = await open_connection(game, session, FakeClock(), stats)
    try:
        await subscribe_quay(connection, peer)
        await peer.send("{not json")
        await peer.send(Request("g-2", "zones"))
        await peer.ws.send_bytes(b"\x00")
        await peer.send(EventFrame(echo(1)))
        first, second, third = await peer.receive(), await peer.receive(), await peer.receive()
        assert first == Error(ErrorCode.BAD_FRAME, "Frame is not valid JSON.", None)
        assert isinstance(second, Error) and second.id == "g-2"
        assert isinstance(third, Error) and "Binary" in third.message
        assert isinstance(await connection.next_item(), Subscribed)
        assert await connection.next_item() == echo(1)
        assert stats.bad_frames == 3
    finally:
        await connection.close()


async def test_events_of_a_replaced_subscription_are_ignored(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    stats = BridgeStats()
    connection, peer = await open_connection(game, session, FakeClock(), stats)
    try:
        await connection.subscribe([101], None)
        await peer.receive()
        await peer.send(EventFrame(echo(1)))  # sent before the game saw the new subscribe
        await peer.send(Subscribed((101,), Cursor("boot-1", 1)))
        await peer.send(EventFrame(echo(2)))
        assert isinstance(await connection.next_item(), Subscribed)
        assert await connection.next_item() == echo(2)
        assert stats.stale_frames == 1
    finally:
        await connection.close()


async def test_requests_are_answered_by_id_in_any_order(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    connection, peer = await open_connection(game, session, FakeClock(), BridgeStats())
    try:
        first = asyncio.create_task(connection.request("zones", {}, 10))
        second = asyncio.create_task(connection.request("room", {"room_id": 1}, 10))
        a, b = await peer.receive(), await peer.receive()
        assert isinstance(a, Request) and isinstance(b, Request) and a.id != b.id
        await peer.send(Error(ErrorCode.COMMAND_FAILED, "No.", b.id))
        await peer.send(Result(a.id, {"1": [101]}))
        assert await asyncio.wait_for(first, STEP) == {"1": [101]}
        with pytest.raises(RemoteError, match="command_failed: No."):
            await asyncio.wait_for(second, STEP)
    finally:
        await connection.close()


async def test_a_request_times_out_on_the_clock_and_a_late_answer_is_counted(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    clock, stats = FakeClock(), BridgeStats()
    connection, peer = await open_connection(game, session, clock, stats)
    try:
        asking = asyncio.create_task(connection.request("zones", {}, 10))
        request = await peer.receive()
        assert isinstance(request, Request)
        await clock.advance(10)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asking, STEP)
        await peer.send(Result(request.id, {}))
        await peer.send(Ping("after"))
        assert await peer.receive() == Pong("after")  # so the late answer has been read
        assert stats.late_answers == 1
    finally:
        await connection.close()


async def test_a_closed_connection_fails_pending_requests_and_then_the_stream(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    connection, peer = await open_connection(game, session, FakeClock(), BridgeStats())
    await subscribe_quay(connection, peer)
    await peer.send(EventFrame(echo(1)))
    asking = asyncio.create_task(connection.request("zones", {}, 10))
    await peer.receive()
    await peer.close(1001, "reloading")
    with pytest.raises(TransientStreamError, match="1001"):
        await asyncio.wait_for(asking, STEP)
    assert isinstance(await connection.next_item(), Subscribed)
    assert await connection.next_item() == echo(1)  # what arrived before the close still counts
    with pytest.raises(TransientStreamError):
        await connection.next_item()
    await connection.close()
    await connection.close()


async def test_an_oversize_event_is_kept_with_its_text_cut_and_the_stream_goes_on(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    stats = BridgeStats()
    connection, peer = await open_connection(game, session, FakeClock(), stats)
    try:
        await subscribe_quay(connection, peer)
        huge = RoomEcho(
            cursor=Cursor("boot-1", 1), cell_id=101, zone_id=1, occurred_at=AT, text="y" * 5_000_000
        )
        await peer.send(json.dumps(frame_data(EventFrame(huge))))  # a game that breaks the limit
        await peer.send('{"type": "pong", "nonce": "n", "padding": "' + "z" * 2_000_000 + '"}')
        await peer.send(EventFrame(echo(2)))
        assert isinstance(await connection.next_item(), Subscribed)
        kept = await connection.next_item()
        assert isinstance(kept, RoomEcho) and kept.cursor == Cursor("boot-1", 1)
        assert kept.text.startswith("y" * 100) and kept.text.endswith("more characters]")
        assert len(kept.text) < 20_000
        assert await connection.next_item() == echo(2)
        refused = await peer.receive()
        assert isinstance(refused, Error) and "over 1048576 bytes" in refused.message
        assert stats.oversize_frames == 2 and stats.bad_frames == 1
    finally:
        await connection.close()


# ---------------------------------------------------------------- admin commands from the game


def pause_command(level: AdminLevel = AdminLevel.ADMIN, n: int = 1) -> Admin:
    return Admin(f"a-{n}", "ais", "pause", "maren", level, ("Harbour Watch",))


async def test_admin_commands_are_answered_while_events_keep_flowing(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    release = asyncio.Event()
    seen: list[Admin] = []

    async def handler(command: Admin) -> object:
        seen.append(command)
        if command.level is AdminLevel.BUILDER:
            raise AdminRefused("ais pause needs the Admin permission; maren has Builder.")
        await release.wait()  # a slow command never holds up the stream
        return {"text": "Storyteller Harbour Watch is now paused."}

    opening = asyncio.create_task(
        BridgeConnection.open(session, game.url, TOKEN, clock=FakeClock(), timings=TIMINGS,
                              stats=BridgeStats(), admin=handler)
    )  # fmt: skip
    peer = await game.accept()
    await peer.welcome()
    connection = await asyncio.wait_for(opening, STEP)
    try:
        await subscribe_quay(connection, peer)
        assert isinstance(await asyncio.wait_for(connection.next_item(), STEP), Subscribed)
        await peer.send(pause_command())
        await peer.send(EventFrame(echo(1)))
        assert (await asyncio.wait_for(connection.next_item(), STEP)) == echo(1)
        await peer.send(pause_command(AdminLevel.BUILDER, 2))
        refused = await peer.receive()
        release.set()
        answered = await peer.receive()
    finally:
        await connection.close()
    assert refused == Error(
        ErrorCode.COMMAND_FAILED, "ais pause needs the Admin permission; maren has Builder.", "a-2"
    )
    assert answered == Result("a-1", {"text": "Storyteller Harbour Watch is now paused."})
    assert [c.id for c in seen] == ["a-1", "a-2"]


@pytest.mark.parametrize("handler", [None, "broken"])
async def test_admin_commands_without_a_handler_or_with_a_failing_one_get_an_error(
    game: ScriptedGame, session: aiohttp.ClientSession, handler: str | None
) -> None:
    async def broken(command: Admin) -> object:
        raise RuntimeError("a bug")

    chosen: AdminHandler | None = broken if handler else None
    opening = asyncio.create_task(
        BridgeConnection.open(session, game.url, TOKEN, clock=FakeClock(), timings=TIMINGS,
                              stats=BridgeStats(), admin=chosen)
    )  # fmt: skip
    peer = await game.accept()
    await peer.welcome()
    connection = await asyncio.wait_for(opening, STEP)
    try:
        await peer.send(pause_command())
        answer = await peer.receive()
    finally:
        await connection.close()
    expected = (
        Error(ErrorCode.INTERNAL, "The admin command failed in the daemon.", "a-1")
        if handler
        else Error(ErrorCode.COMMAND_FAILED, "This daemon takes no admin commands.", "a-1")
    )
    assert answer == expected


async def test_a_closing_connection_cancels_the_admin_commands_it_runs(
    game: ScriptedGame, session: aiohttp.ClientSession
) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def endless(command: Admin) -> object:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return None

    opening = asyncio.create_task(
        BridgeConnection.open(session, game.url, TOKEN, clock=FakeClock(), timings=TIMINGS,
                              stats=BridgeStats(), admin=endless)
    )  # fmt: skip
    peer = await game.accept()
    await peer.welcome()
    connection = await asyncio.wait_for(opening, STEP)
    await peer.send(pause_command())
    await asyncio.wait_for(started.wait(), STEP)
    await connection.close()
    assert cancelled.is_set()
    await settle()
