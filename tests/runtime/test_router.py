"""The router: who hears an event, from each storyteller's watched cells and subscriptions."""

from __future__ import annotations

from datetime import UTC, datetime

from storyteller_daemon.domain.storytellers import EventKind, Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.runtime.pipeline.routing import Router
from world_adapter.events import Cursor, RoomEcho, Speech

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _echo(cell: int) -> RoomEcho:
    return RoomEcho(cursor=Cursor("e", 1), cell_id=cell, zone_id=None, occurred_at=AT, text="x")


def _speech(cell: int) -> Speech:
    return Speech(
        cursor=Cursor("e", 2),
        cell_id=cell,
        zone_id=None,
        occurred_at=AT,
        speaker_id=5,
        speaker_name="Ana",
        text="hello",
    )


def _watching(
    sid: int,
    *,
    zones: frozenset[int] = frozenset(),
    rooms: frozenset[int] = frozenset(),
    excluded: frozenset[int] = frozenset(),
    kinds: frozenset[EventKind] = frozenset({EventKind.ROOM}),
) -> Storyteller:
    watched = Surveillance(zones=zones, included=rooms, excluded=excluded)
    return Storyteller(name=f"st{sid}", id=sid, surveillance=watched, subscriptions=kinds)


def test_the_audience_is_who_watches_the_room_and_hears_the_kind_by_id() -> None:
    router = Router()
    both = frozenset({EventKind.ROOM, EventKind.SPEECH})
    router.update(
        [
            _watching(9, rooms=frozenset({1})),
            _watching(3, zones=frozenset({100}), kinds=both),
            _watching(5, zones=frozenset({100}), excluded=frozenset({1})),
            _watching(7, rooms=frozenset({2})),
        ],
        {100: [1, 2]},
    )

    assert [st.id for st in router.audience(_echo(1))] == [3, 9]
    assert [st.id for st in router.audience(_echo(2))] == [3, 5, 7]
    assert [st.id for st in router.audience(_speech(1))] == [3]
    assert router.audience(_echo(4)) == []


def test_an_update_replaces_who_hears_what() -> None:
    router = Router()
    router.update([_watching(1, zones=frozenset({100}))], {100: [1]})
    assert [st.id for st in router.audience(_echo(1))] == [1]

    router.update([_watching(1, zones=frozenset({100}))], {100: [2]})  # the zone changed
    assert router.audience(_echo(1)) == []
    assert [st.id for st in router.audience(_echo(2))] == [1]

    router.update([], {100: [2]})  # the storyteller is gone
    assert router.audience(_echo(2)) == []
