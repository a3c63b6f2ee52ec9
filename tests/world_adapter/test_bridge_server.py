"""The game side: the replay buffer's resume rules, and the sim world's bridge server speaking
raw frames (handshake refusals, requests and their errors, subscriptions, slow subscribers)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from test_bridge_doubles import AT, STEP, TOKEN, all_cells, served, sim_world

from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.world import InstrumentedWorld
from world_adapter.bridge.messages import (
    Error,
    ErrorCode,
    EventFrame,
    Frame,
    Hello,
    Request,
    Result,
    Subscribe,
    Subscribed,
    Welcome,
)
from world_adapter.bridge.wire import encode_frame, parse_frame
from world_adapter.event_buffer import EventBuffer
from world_adapter.events import Cursor, RoomEcho
from world_adapter.replay import Gap, GapReason
from world_adapter.sim import SimWorld

MAREN = 1001


def echo(seq: int, epoch: str = "boot-1") -> RoomEcho:
    return RoomEcho(cursor=Cursor(epoch, seq), cell_id=101, zone_id=1, occurred_at=AT, text="x")


# ---------------------------------------------------------------- replay buffer


def test_resume_rules_follow_the_protocol() -> None:
    buffer = EventBuffer(Cursor("boot-1", 0), capacity=3)
    for seq in range(1, 8):  # holds the newest 3
        buffer.append(echo(seq))
    oldest = buffer.resume_point
    assert 1 <= oldest <= 4 and buffer.head == Cursor("boot-1", 7)

    def start(after: Cursor | None) -> tuple[int, Gap | None]:
        position, gap = buffer.start(after)
        return position, gap

    assert start(None) == (7, None)
    assert start(Cursor("boot-1", 5)) == (5, None)
    assert start(Cursor("boot-0", 5)) == (
        oldest,
        Gap(GapReason.EPOCH, Cursor("boot-0", 5), Cursor("boot-1", oldest)),
    )
    assert start(Cursor("boot-1", 9)) == (
        7,
        Gap(GapReason.AHEAD, Cursor("boot-1", 9), Cursor("boot-1", 7)),
    )
    assert start(Cursor("boot-1", 0)) == (
        oldest,
        Gap(GapReason.EXPIRED, Cursor("boot-1", 0), Cursor("boot-1", oldest)),
    )
    assert [event.cursor.seq for _, event in buffer.held_after(5, 10)] == [6, 7]
    lost = buffer.behind(oldest - 1)
    assert lost == Gap(GapReason.EXPIRED, Cursor("boot-1", oldest - 1), Cursor("boot-1", oldest))


def test_the_buffer_refuses_events_out_of_order_or_from_another_epoch() -> None:
    buffer = EventBuffer(Cursor("boot-1", 4), capacity=10)
    with pytest.raises(ValueError, match="does not follow"):
        buffer.append(echo(4))
    with pytest.raises(ValueError, match="does not follow"):
        buffer.append(echo(5, "boot-2"))
    with pytest.raises(ValueError, match="at least one"):
        EventBuffer(Cursor("boot-1", 0), capacity=0)


# ---------------------------------------------------------------- the server, frame by frame


class RawClient:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def send(self, frame: Frame | str) -> None:
        await self.ws.send_str(frame if isinstance(frame, str) else encode_frame(frame))

    async def receive(self) -> Frame:
        message = await asyncio.wait_for(self.ws.receive(), STEP)
        assert message.type is aiohttp.WSMsgType.TEXT, message
        return parse_frame(message.data)

    async def close_code(self) -> int | None:
        message = await asyncio.wait_for(self.ws.receive(), STEP)
        assert message.type is aiohttp.WSMsgType.CLOSE, message
        return int(message.data)  # ws.close_code may say 1006 once the socket has gone

    async def ask(self, method: str, **params: Any) -> Frame:
        await self.send(Request("q-1", method, params))
        return await self.receive()


@pytest.fixture
async def world() -> SimWorld:
    return sim_world()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client_session:
        yield client_session


async def connect(session: aiohttp.ClientSession, url: str, *, hello: bool = True) -> RawClient:
    client = RawClient(await session.ws_connect(url))
    if hello:
        await client.send(Hello(1, TOKEN))
        assert isinstance(await client.receive(), Welcome)
    return client


@pytest.mark.parametrize(
    ("first", "code"),
    [
        (encode_frame(Hello(1, "wrong")), 4001),
        (encode_frame(Hello(2, TOKEN)), 4002),
        (encode_frame(Subscribe((101,), None)), 4003),
        ("not json", 4003),
    ],
)
async def test_the_handshake_refuses_what_it_must(
    world: SimWorld, session: aiohttp.ClientSession, first: str, code: int
) -> None:
    async with served(world) as server:
        client = await connect(session, server.url, hello=False)
        await client.send(first)
        assert await client.close_code() == code
    assert server.stats.refused == 1 and server.open_connections == 0


async def test_a_silent_client_is_closed_after_the_handshake_time(
    world: SimWorld, session: aiohttp.ClientSession
) -> None:
    clock = FakeClock()
    async with served(world, clock=clock) as server:
        client = await connect(session, server.url, hello=False)
        for _ in range(1000):  # until the server waits for hello on the fake clock
            if clock.sleepers:
                break
            await asyncio.sleep(0)
        await clock.advance(9.9)
        assert server.stats.refused == 0
        await clock.advance(0.1)
        assert await client.close_code() == 4003


async def test_requests_get_results_or_the_right_error(
    world: SimWorld, session: aiohttp.ClientSession
) -> None:
    async with served(world) as server:
        client = await connect(session, server.url)
        answer = await client.ask("room", room_id=101)
        assert isinstance(answer, Result) and answer.result["name"] == "Harbour Quay"
        assert await client.ask("teleport") == Error(
            ErrorCode.UNKNOWN_METHOD, "Unknown method 'teleport'.", "q-1"
        )
        bad = await client.ask("room", room_id="101")
        assert isinstance(bad, Error) and bad.code is ErrorCode.BAD_PARAMS
        assert "params.room_id: Input should be a valid integer" in bad.message
        extra = await client.ask("room", room_id=1, floor=2)
        assert isinstance(extra, Error) and "unknown parameter(s): floor" in extra.message
        refused = await client.ask("execute_prog", prog="x", arguments={}, idempotency_key="k")
        assert isinstance(refused, Error) and refused.code is ErrorCode.COMMAND_FAILED
        await client.send('{"type": "request", "id": "q-2"}')
        assert await client.receive() == Error(
            ErrorCode.BAD_FRAME, "Bad request frame: method: missing", "q-2"
        )
    assert server.stats.bad_frames == 1


async def test_a_failing_world_gets_internal_errors_and_the_connection_lives(
    session: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    town = SimWorld.harbour_town(epoch="boot-1")
    world = (
        InstrumentedWorld(town)
        .fail("zones", RuntimeError("bug"))
        .answer("progs", ["x" * 1_100_000])  # over the frame size limit once encoded
    )
    async with served(world, cells=all_cells(town)) as server:
        client = await connect(session, server.url)
        assert await client.ask("zones") == Error(
            ErrorCode.INTERNAL, "The world failed while answering.", "q-1"
        )
        too_big = await client.ask("progs")
        assert isinstance(too_big, Error) and "frame size limit" in too_big.message
        assert isinstance(await client.ask("room", room_id=101), Result)
    assert "the world failed while answering zones" in caplog.text


async def test_a_new_subscription_replaces_the_old_one(
    world: SimWorld, session: aiohttp.ClientSession
) -> None:
    world.emote(MAREN, "waves.")
    async with served(world) as server:
        client = await connect(session, server.url)
        await client.send(Subscribe((101,), Cursor("boot-1", 0)))
        assert isinstance(await client.receive(), Subscribed)
        assert isinstance(await client.receive(), EventFrame)
        await client.send(Subscribe((202,), None))
        assert await client.receive() == Subscribed((202,), Cursor("boot-1", 1))
        world.emote(MAREN, "waves again.")  # room 101: no longer subscribed
        later = world.emote(1003, "prays.")  # Ilsa, room 202
        frame = await client.receive()
        assert isinstance(frame, EventFrame) and frame.event == later


async def test_a_subscriber_that_falls_behind_the_buffer_gets_a_gap(
    session: aiohttp.ClientSession,
) -> None:
    world = sim_world(buffer_size=10_000)
    async with served(world, buffer_size=5) as server:
        client = await connect(session, server.url)
        await client.send(Subscribe(tuple(sorted(all_cells(world))), None))
        assert isinstance(await client.receive(), Subscribed)
        first = world.emote(MAREN, "starts.")
        frame = await client.receive()
        assert isinstance(frame, EventFrame) and frame.event == first
        for n in range(40):  # far more than the server holds, before it can send any of it
            world.emote(MAREN, f"hurries {n}.")
        frames = [await client.receive() for _ in range(3)]
    gaps = [f for f in frames if isinstance(f, Gap)]
    assert gaps and gaps[0].reason is GapReason.EXPIRED and gaps[0].after == first.cursor
    after_gap = frames[frames.index(gaps[0]) + 1]
    assert isinstance(after_gap, EventFrame)
    assert after_gap.event.cursor.seq == gaps[0].resume_after.seq + 1
