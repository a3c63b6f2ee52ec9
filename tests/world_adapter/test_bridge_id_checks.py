"""World ids checked at the door: an event frame whose ids are not positive signed 64-bit
integers is answered with an error frame naming the field, counted, and never stored, while the
daemon (real bridge client, real pipeline, real inbox on SQLite and PostgreSQL) goes on with
the next frame."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from test_bridge_doubles import Peer, ScriptedGame
from test_bridge_faults import WAIT, start_daemon

from storyteller_daemon.domain.storytellers import EventKind
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.storage.inbox import InboxRepository
from storyteller_daemon.storage.store import Store
from world_adapter.bridge.messages import (
    Error,
    ErrorCode,
    EventFrame,
    Request,
    Result,
    Subscribe,
    Subscribed,
)
from world_adapter.bridge.wire import BadFrame, parse_frame
from world_adapter.codec import decode_event, encode_event
from world_adapter.events import MAX_WORLD_ID, Cursor

EPOCH = "boot-1"
RANGE = f"a world id is an integer from 1 to {MAX_WORLD_ID}"
BAD_IDS = [
    ("-1", f"{RANGE}, not -1."),
    ("0", f"{RANGE}, not 0."),
    (str(2**63), f"{RANGE}, not {2**63}."),
    (str(2**64 + 1), f"{RANGE}, not {2**64 + 1}."),
    ("9" * 400, f"{RANGE}, not 99999999999999999999… (400 digits)."),
    ("1.5", "valid integer"),
    ("3.0", "valid integer"),
    ('"101"', "valid integer"),
    ("true", "valid integer"),
    ("Infinity", "Infinity is not a finite JSON number"),
    ("-Infinity", "-Infinity is not a finite JSON number"),
    ("NaN", "NaN is not a finite JSON number"),
    ("1e400", "1e400 is not a finite JSON number"),
]
COMMON = {"cell_id": "101", "zone_id": "1", "occurred_at": '"2026-11-22T18:04:05Z"'}
KINDS: dict[str, dict[str, str]] = {
    "room_echo": {"text": '"waves."', "source_character_id": "1001"},
    "speech": {
        "speaker_id": "1001",
        "speaker_name": '"Maren"',
        "text": '"Hello."',
        "target_id": "1002",
    },
    "crime": {
        "crime_id": "17",
        "crime_type": '"Theft"',
        "legal_authority": '"Watch"',
        "criminal_id": "2003",
        "victim_id": "1002",
    },
    "state_change": {"character_id": "2002", "state": '"Dead"'},
}
ID_FIELDS = [
    (kind, name)
    for kind, fields in KINDS.items()
    for name in [*COMMON, *fields]
    if name.endswith("_id")
]


def event_text(seq: int, kind: str = "room_echo", **raw: str) -> str:
    """An event frame written by hand, each field's JSON given as text (so a test can put
    tokens like ``Infinity`` or a 400-digit number exactly where it wants them)."""
    fields = {**COMMON, **KINDS[kind], **raw}
    body = ", ".join(f'"{name}": {value}' for name, value in fields.items())
    cursor = json.dumps({"epoch": EPOCH, "seq": seq})
    return f'{{"type": "event", "cursor": {cursor}, "kind": "{kind}", {body}}}'


def test_every_id_field_of_every_event_kind_is_checked() -> None:
    assert len(ID_FIELDS) == 15  # cell_id and zone_id of 4 kinds, and the kinds' own 7
    for kind, name in ID_FIELDS:
        assert isinstance(parse_frame(event_text(1, kind)), EventFrame)
        for value, problem in BAD_IDS:
            with pytest.raises(BadFrame) as caught:
                parse_frame(event_text(1, kind, **{name: value}))
            assert f"Bad event frame: {name}: " in str(caught.value), (kind, name, value)
            assert problem in str(caught.value), (kind, name, value)


@pytest.mark.parametrize("value", ["1", str(MAX_WORLD_ID)])
def test_the_ends_of_the_range_are_ids(value: str) -> None:
    frame = parse_frame(event_text(1, "crime", cell_id=value, victim_id=value, crime_id=value))
    assert isinstance(frame, EventFrame) and frame.event.cell_id == int(value)


def test_a_null_is_refused_where_an_id_is_required_and_kept_where_it_is_optional() -> None:
    with pytest.raises(BadFrame, match="speaker_id: Input should be a valid integer"):
        parse_frame(event_text(1, "speech", speaker_id="null"))
    frame = parse_frame(event_text(1, "speech", zone_id="null", target_id="null"))
    assert isinstance(frame, EventFrame) and frame.event.zone_id is None


def test_an_invocation_naming_a_storyteller_room_or_character_by_a_bad_id_is_refused() -> None:
    base = {"type": "invoke", "id": "inv-1", "storyteller": "Watch", "text": "Hi."}
    for field, value in [("storyteller", 0), ("room_id", -5), ("character_id", 2**63)]:
        with pytest.raises(BadFrame, match=f"Bad invoke frame: {field}: {RANGE}") as caught:
            parse_frame(json.dumps({**base, field: value}))
        assert caught.value.request_id == "inv-1"


def test_a_stored_event_with_a_redacted_id_still_reads_back() -> None:
    """A character's erasure rewrites its id to 0 in stored events: only the door checks ids."""
    frame = parse_frame(event_text(1, "speech"))
    assert isinstance(frame, EventFrame)
    stored = {**encode_event(frame.event), "speaker_id": 0}
    assert decode_event(stored).involved_character_ids >= {0}


def test_a_non_finite_number_elsewhere_is_refused_too_naming_where() -> None:
    text = '{"type": "request", "id": "r-1", "method": "m", "params": {"a": [1, NaN]}}'
    with pytest.raises(BadFrame, match=r"params\.a\[1\]: NaN is not a finite") as caught:
        parse_frame(text)
    assert caught.value.request_id == "r-1"


class GameWithOneRoom:
    """A scripted game serving zone 1 = room 101: it answers the daemon's requests and
    subscriptions itself and hands the test the subscribed stream connection."""

    def __init__(self, game: ScriptedGame) -> None:
        self.game = game
        self.streams: asyncio.Queue[Peer] = asyncio.Queue()
        self.errors: asyncio.Queue[Error] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []

    async def accept_all(self) -> None:
        while True:
            peer = await self.game._peers.get()
            self._tasks.append(asyncio.create_task(self._serve(peer)))

    async def _serve(self, peer: Peer) -> None:
        await peer.welcome()
        with contextlib.suppress(AssertionError, TimeoutError):
            while True:
                frame = await peer.receive()
                if isinstance(frame, Request):
                    result: Any = {"1": [101]} if frame.method == "zones" else None
                    await peer.send(Result(frame.id, result))
                elif isinstance(frame, Subscribe):
                    await peer.send(Subscribed(frame.cells, Cursor(EPOCH, 0)))
                    await self.streams.put(peer)
                elif isinstance(frame, Error):
                    await self.errors.put(frame)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@pytest.fixture
async def watching(store: Store) -> Store:
    st = await store.storytellers.create("Harbour Watch")
    await store.storytellers.save(
        replace(
            st,
            subscriptions=frozenset({EventKind.ROOM}),
            surveillance=Surveillance(zones=frozenset({1})),
        )
    )
    return store


@pytest.fixture
async def game() -> AsyncIterator[GameWithOneRoom]:
    async with ScriptedGame() as scripted:
        served = GameWithOneRoom(scripted)
        acceptor = asyncio.create_task(served.accept_all())
        try:
            yield served
        finally:
            acceptor.cancel()
            await asyncio.gather(acceptor, return_exceptions=True)
            await served.stop()


async def test_bad_ids_are_answered_counted_and_never_stored_and_intake_goes_on(
    watching: Store, game: GameWithOneRoom
) -> None:
    inbox = InboxRepository(watching.db, watching.clock)
    running = await start_daemon(watching, game.game.url)
    try:
        stream = await asyncio.wait_for(game.streams.get(), WAIT)
        fields = {name: kind for kind, name in ID_FIELDS}  # each field name once
        bad = [(kind, name, value) for name, kind in fields.items() for value, _ in BAD_IDS]
        for seq, (kind, name, value) in enumerate(bad, start=1):
            await stream.send(event_text(seq, kind, **{name: value}))
            error = await asyncio.wait_for(game.errors.get(), WAIT)
            assert error.code is ErrorCode.BAD_FRAME and error.id is None
            assert f"{name}: " in error.message, (name, value, error.message)
        good = len(bad) + 1
        await stream.send(event_text(good, text='"waves at the ferry."'))
        await asyncio.wait_for(running.daemon.wait_cursor(Cursor(EPOCH, good)), WAIT)
    finally:
        await running.finish()
    assert running.client.stats.bad_frames == len(bad)
    assert running.pipeline.seen == [Cursor(EPOCH, good)]
    assert await inbox.count("bridge") == 1
    assert await inbox.cursor("bridge") == Cursor(EPOCH, good)
