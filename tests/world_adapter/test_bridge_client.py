"""`BridgeWorldClient` against the sim world's bridge server: every query answers as the world
does in-process, failures become model-safe errors, subscriptions resume and report gaps."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from test_bridge_doubles import STEP, TOKEN, RecordingSleep, all_cells, served, sim_world

from storyteller_daemon.testing.clock import FakeClock
from world_adapter.bridge import server_session
from world_adapter.bridge.backoff import Backoff
from world_adapter.bridge.client import BridgeWorldClient, check_bridge_url
from world_adapter.bridge.errors import StreamGap
from world_adapter.bridge.methods import method, world_methods
from world_adapter.bridge.world_server import WorldServer
from world_adapter.errors import FatalStreamError, UnsupportedRequest, WorldCommandError
from world_adapter.events import Cursor, WorldEvent
from world_adapter.facts import DoorRule, EntityKind, PathRule
from world_adapter.protocol import WorldClient
from world_adapter.sim import SimWorld

MAREN, OSRIC = 1001, 1002

SAMPLE_ARGUMENTS: dict[str, dict[str, Any]] = {
    "zones": {},
    "online_players": {},
    "character": {"character_id": MAREN},
    "room": {"room_id": 101},
    "entity": {"kind": EntityKind.ITEM, "entity_id": 351},
    "progs": {},
    "execute_prog": {
        "prog": "HarbourWatchStatus",
        "arguments": {},
        "idempotency_key": "sample",
    },
    "landmarks": {},
    "landmark": {"name": "the Drowned Lantern"},
    "path": {"origin_room_id": 101, "destination_room_id": 205, "rule": PathRule(DoorRule.IGNORE)},
    "character_plan": {"character_id": MAREN},
    "recent_plans": {"within": timedelta(days=30)},
    "room_times": {"room_ids": [101, 202]},
    "calendar": {"ref": "solar", "year": 1052},
}


def client_for(server: WorldServer, token: str = TOKEN, **kwargs: Any) -> BridgeWorldClient:
    kwargs.setdefault("clock", FakeClock())
    kwargs.setdefault("sleep", RecordingSleep())
    kwargs.setdefault("rng", random.Random(3))
    return BridgeWorldClient(server.url, token, **kwargs)


@pytest.fixture
async def world() -> SimWorld:
    return sim_world()


@pytest.fixture
async def server(world: SimWorld) -> AsyncIterator[WorldServer]:
    async with served(world) as running:
        yield running


@pytest.fixture
async def client(server: WorldServer) -> AsyncIterator[BridgeWorldClient]:
    bridge = client_for(server)
    try:
        yield bridge
    finally:
        await bridge.close()


def test_the_samples_cover_the_whole_protocol() -> None:
    assert set(SAMPLE_ARGUMENTS) == set(world_methods())


@pytest.mark.parametrize("name", list(SAMPLE_ARGUMENTS))
async def test_every_query_answers_as_the_world_does_in_process(
    name: str, world: SimWorld, client: BridgeWorldClient
) -> None:
    arguments = SAMPLE_ARGUMENTS[name]
    over_the_bridge = await getattr(client, name)(**arguments)
    if name == "execute_prog":
        arguments = {**arguments, "idempotency_key": "sample-2"}
    in_process = await getattr(world, name)(**arguments)
    assert over_the_bridge == in_process
    assert over_the_bridge  # a real answer, not an empty one


async def test_a_game_that_does_not_know_a_request_is_told_apart_from_a_refusal(
    client: BridgeWorldClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A game whose bridge predates the `entity` request answers unknown_method.
    monkeypatch.setattr(
        server_session, "method", lambda name: None if name == "entity" else method(name)
    )
    with pytest.raises(UnsupportedRequest, match="Unknown method 'entity'"):
        await client.entity(EntityKind.ITEM, 351)
    with pytest.raises(WorldCommandError) as refused:
        await client.execute_prog("NoSuchProg", {}, "key-1")
    assert not isinstance(refused.value, UnsupportedRequest)


def test_the_client_implements_every_protocol_method_itself() -> None:
    for name in world_methods():
        assert getattr(BridgeWorldClient, name) is not getattr(WorldClient, name), name


async def test_unknown_ids_answer_none_and_refusals_are_model_safe(
    client: BridgeWorldClient,
) -> None:
    assert await client.character(999_999) is None
    assert await client.room(999_999) is None
    with pytest.raises(WorldCommandError, match="No prog with id or name 'Kraken' exists."):
        await client.execute_prog("Kraken", {}, "k-1")
    with pytest.raises(WorldCommandError, match="does not compile"):
        await client.execute_prog("BrokenProg", {"Text": "x"}, "k-2")
    with pytest.raises(WorldCommandError, match="blank"):
        await client.execute_prog("HarbourWatchStatus", {}, " ")
    with pytest.raises(WorldCommandError, match="not a bridge request method"):
        await client.call("subscribe")


async def test_a_repeated_idempotency_key_runs_the_prog_once(
    world: SimWorld, client: BridgeWorldClient
) -> None:
    arguments = {"Room": 101, "Text": "A gull screams."}
    first = await client.execute_prog("EchoToRoom", arguments, "turn-1")
    second = await client.execute_prog("EchoToRoom", arguments, "turn-1")
    assert (first.replayed, second.replayed, second.value) == (False, True, first.value)
    assert world.cursor.seq == 1  # one echo event, not two


class CutAfterProg:
    """The sim world, except that the connection drops right after the first prog has run."""

    def __init__(self, world: SimWorld) -> None:
        self.world = world
        self.server: WorldServer | None = None
        self.runs = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.world, name)

    async def execute_prog(self, prog: str, arguments: Any, idempotency_key: str) -> Any:
        outcome = await self.world.execute_prog(prog, arguments, idempotency_key)
        if not outcome.replayed:
            self.runs += 1
            assert self.server is not None
            self.server.cut_all()  # the answer is lost on the way back
        return outcome


async def test_a_prog_retried_after_a_cut_with_the_same_key_runs_once() -> None:
    world = sim_world()
    flaky = CutAfterProg(world)
    async with served(flaky, cells=all_cells(world)) as server:  # type: ignore[arg-type]
        flaky.server = server
        sleep = RecordingSleep()
        client = client_for(server, sleep=sleep)
        try:
            outcome = await client.execute_prog("EchoToRoom", {"Room": 101, "Text": "Hi."}, "t-9")
        finally:
            await client.close()
    assert outcome.replayed  # the answer came from the second attempt
    assert flaky.runs == 1 and server.stats.cuts == 1
    assert world.cursor.seq == 1
    assert len(sleep.delays) == 1 and 0 <= sleep.delays[0] <= 1.0


async def test_a_wrong_token_is_fatal_and_not_retried(server: WorldServer) -> None:
    client = client_for(server, token="not-the-token")
    try:
        with pytest.raises(FatalStreamError, match="refused the bridge token"):
            await client.zones()
        with pytest.raises(FatalStreamError, match="4001"):
            await anext(client.subscribe(frozenset({101}), None))
    finally:
        await client.close()
    assert server.stats.refused == 2  # one attempt each


async def test_an_unreachable_game_is_a_model_safe_error_after_the_budget() -> None:
    clock = FakeClock()
    sleep_calls: list[float] = []

    async def sleep(seconds: float) -> None:  # the backoff waits on the same fake clock
        sleep_calls.append(seconds)
        await clock.advance(seconds)

    client = BridgeWorldClient("ws://127.0.0.1:9/nothing-listens", TOKEN, clock=clock, sleep=sleep)
    try:
        with pytest.raises(WorldCommandError, match="did not answer zones within 10 seconds"):
            await asyncio.wait_for(client.zones(), STEP)
    finally:
        await client.close()
    assert len(sleep_calls) >= 3 and sum(sleep_calls) >= 10 - 1e-9


def test_bad_configuration_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="ws:// or wss://"):
        check_bridge_url("http://game:4010/")
    with pytest.raises(ValueError, match="blank"):
        BridgeWorldClient("ws://127.0.0.1:1/x", "  ")
    assert "token" not in repr(BridgeWorldClient("ws://127.0.0.1:1/x", "secret-token"))


async def take(stream: AsyncIterator[WorldEvent], count: int) -> list[WorldEvent]:
    return [await asyncio.wait_for(anext(stream), STEP) for _ in range(count)]


async def test_a_subscription_resumes_after_cuts_without_loss_or_repeats(world: SimWorld) -> None:
    for n in range(30):
        world.emote(MAREN, f"counts {n}.")
    async with served(world, cut_every=7) as server:
        client = client_for(server)
        try:
            stream = client.subscribe(frozenset({101}), Cursor("boot-1", 0))
            events = await take(stream, 30)
            await stream.aclose()
        finally:
            await client.close()
    assert [e.cursor.seq for e in events] == list(range(1, 31))
    assert server.stats.cuts == 4 and stream.reconnects == 4
    assert client.stats.connections == 5


async def test_a_subscription_filters_cells_and_continues_live(
    world: SimWorld, client: BridgeWorldClient
) -> None:
    world.emote(MAREN, "waves.")  # 101
    world.emote(OSRIC, "drinks.")  # 103
    stream = client.subscribe(frozenset({103}), Cursor("boot-1", 0))
    first = await take(stream, 1)
    live = world.emote(OSRIC, "drinks again.")
    assert [e.cursor.seq for e in first + await take(stream, 1)] == [2, live.cursor.seq]
    await stream.aclose()
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_a_new_game_epoch_is_a_gap_that_says_where_to_resume() -> None:
    old = sim_world("boot-1")
    old.emote(MAREN, "waves.")
    async with served(old) as game:
        client = client_for(game)
        seen = await take(client.subscribe(frozenset({101}), Cursor("boot-1", 0)), 1)
        new = sim_world("boot-2")
        new.emote(MAREN, "is back.")
        await game.restart(new)
        try:
            stream = client.subscribe(frozenset({101}), seen[-1].cursor)
            with pytest.raises(StreamGap) as caught:
                await anext(stream)
            gap = caught.value
            assert (gap.reason, gap.after, gap.resume_after) == (
                "epoch",
                Cursor("boot-1", 1),
                Cursor("boot-2", 0),
            )
            resumed = await take(client.subscribe(frozenset({101}), gap.resume_after), 1)
        finally:
            await client.close()
    assert resumed[0].cursor == Cursor("boot-2", 1)


async def test_backoff_is_full_jitter_capped_and_reset_after_a_quiet_spell() -> None:
    clock = FakeClock()
    backoff = Backoff(base=0.5, cap=8.0, reset_seconds=120.0, rng=random.Random(1), clock=clock)
    delays = [backoff.delay() for _ in range(8)]
    limits = [min(8.0, 0.5 * 2**n) for n in range(1, 9)]
    assert all(0 <= d <= limit for d, limit in zip(delays, limits, strict=True))
    assert max(delays[4:]) > 4.0  # the cap, not the base, bounds the late delays
    await clock.advance(121)
    assert backoff.delay() <= 1.0 and backoff.attempts == 1
    with pytest.raises(ValueError, match="cap"):
        Backoff(base=2, cap=1)


async def test_a_subscription_retrying_a_dead_game_stops_when_cancelled() -> None:
    sleep = RecordingSleep()  # no real waiting: the retry loop runs as fast as it can
    client = BridgeWorldClient(
        "ws://127.0.0.1:9/nothing-listens", TOKEN, clock=FakeClock(), sleep=sleep
    )
    following = asyncio.create_task(anext(client.subscribe(frozenset({101}), None)))
    try:
        for _ in range(10_000):
            if len(sleep.delays) >= 20:
                break
            await asyncio.sleep(0)
        assert len(sleep.delays) >= 20
        assert sleep.delays[-1] <= 60.0  # capped
        following.cancel()
        await asyncio.wait_for(asyncio.gather(following, return_exceptions=True), STEP)
        assert following.cancelled()
    finally:
        await client.close()
