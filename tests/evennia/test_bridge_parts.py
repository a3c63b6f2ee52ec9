"""The Evennia bridge's pure parts, without Evennia: the event log, the prog registry, pathing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from world_adapter.bridges.evennia import gamecalendar
from world_adapter.bridges.evennia.eventlog import EventLog, gap_frame
from world_adapter.bridges.evennia.pathing import direction_token, shortest_path
from world_adapter.bridges.evennia.registry import (
    ProgError,
    ProgRegistry,
    ResultStore,
    normalise_type,
    prog_id,
    storyteller_prog,
)
from world_adapter.bridges.evennia.replaybuffer import Cursor, Start


def _log(capacity: int = 3) -> EventLog:
    return EventLog(capacity, epoch="e1", clock=lambda: 1_795_000_000.0)


def test_events_are_numbered_stamped_and_heard() -> None:
    log = _log()
    heard: list[int] = []
    log.add_listener(lambda: heard.append(log.last_seq))
    first = log.append({"kind": "room_echo", "text": "a"})
    log.remove_listener(print)  # never added: ignored
    assert first == {
        "type": "event",
        "cursor": {"epoch": "e1", "seq": 1},
        "kind": "room_echo",
        "text": "a",
        "occurred_at": "2026-11-18T11:06:40Z",
    }
    assert heard == [1]
    assert log.head == {"epoch": "e1", "seq": 1}


def test_the_buffer_keeps_the_newest_events_and_counts_the_rest() -> None:
    log = _log()
    for text in "abcde":
        log.append({"text": text})
    assert (log.resume_point, log.last_seq, log.evicted) == (2, 5, 2)
    held = [(seq, frame["cursor"]["seq"], frame["text"]) for seq, frame in log.held_after(0, 9)]
    assert held == [(3, 3, "c"), (4, 4, "d"), (5, 5, "e")]


def test_start_positions_and_gap_frames() -> None:
    log = _log()
    epoch = log.start(Cursor("old", 4))
    assert epoch.gap is not None and gap_frame(epoch.gap) == {
        "type": "gap",
        "reason": "epoch",
        "after": {"epoch": "old", "seq": 4},
        "resume_after": {"epoch": "e1", "seq": 0},
    }
    for text in "abcde":
        log.append({"text": text})
    assert log.start(None).position == 5
    assert log.start(Cursor("e1", 2)) == Start(2)
    expired = log.start(Cursor("e1", 1))
    assert expired.position == 2 and expired.gap is not None
    frame = gap_frame(expired.gap)
    assert (frame["reason"], frame["resume_after"]["seq"]) == ("expired", 2)
    ahead = log.start(Cursor("e1", 6))
    assert ahead.position == 5 and ahead.gap is not None and ahead.gap.reason == "ahead"
    with pytest.raises(ValueError, match="capacity"):
        EventLog(0)


def test_epochs_differ_between_logs() -> None:
    assert EventLog().epoch != EventLog().epoch
    assert EventLog().epoch.startswith("evennia-")


def test_progs_register_with_stable_ids_and_typed_signatures() -> None:
    registry = ProgRegistry()

    @storyteller_prog(
        name="EchoToRoom",
        params=[("Room", "location"), ("Text", "Text")],
        returns="boolean",
        registry=registry,
    )
    def echo(room: int, text: str) -> bool:
        """Narrates into a room.

        More detail.
        """
        return True

    prog = registry.find("echotoroom")
    assert prog.func is echo
    assert registry.find(str(prog_id("ECHOTOROOM"))) is prog
    assert registry.catalogue() == [
        {
            "id": prog_id("EchoToRoom"),
            "name": "EchoToRoom",
            "parameters": [{"name": "Room", "type": "Location"}, {"name": "Text", "type": "Text"}],
            "return_type": "Boolean",
            "description": "Narrates into a room.",
            "compile_error": "",
        }
    ]
    assert prog.bind({"text": "hi", "ROOM": 2}) == [
        ("Room", "Location", 2),
        ("Text", "Text", "hi"),
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"Room": 1}, "needs the argument 'Text'"),
        ({"Room": 1, "Text": "a", "Loud": True}, "no parameter named 'Loud'"),
        ({"Room": 1, "room": 2, "Text": "a"}, "given twice"),
    ],
)
def test_bad_arguments_are_refused_with_a_reason(arguments: dict[str, Any], message: str) -> None:
    registry = ProgRegistry()
    prog = registry.register(print, name="Echo", params=[("Room", "Location"), ("Text", "Text")])
    with pytest.raises(ProgError, match=message):
        prog.bind(arguments)


def test_bad_declarations_are_refused() -> None:
    registry = ProgRegistry()
    with pytest.raises(ProgError, match="unknown prog type"):
        registry.register(print, name="X", params=[("A", "Banana")])
    with pytest.raises(ProgError, match="distinct"):
        registry.register(print, name="X", params=[("A", "Text"), ("a", "Text")])
    with pytest.raises(ProgError, match="one word"):
        registry.register(print, name="two words")
    with pytest.raises(ProgError, match="no prog 'Nope'"):
        registry.find("Nope")
    assert normalise_type("collection<character>") == "Collection<Character>"


def test_results_are_kept_by_key_newest_first_to_stay() -> None:
    store = ResultStore(capacity=2)
    store.put("a", {"value": 1})
    store.put("b", {"value": 2})
    store.put("a", {"value": 1})
    store.put("c", {"value": 3})
    assert store.get("b") is None
    assert store.get("a") == {"value": 1}
    assert len(store) == 2


GRID = {
    1: [("north", 2), ("east", 3)],
    2: [("south", 1), ("east", 4)],
    3: [("west", 1), ("north", 4)],
    4: [("down", 5)],
    5: [],
}


def test_shortest_path_follows_exits_in_order() -> None:
    def neighbours(room: int) -> list[tuple[str, int]]:
        return GRID[room]

    assert shortest_path(1, 1, neighbours) == []
    assert shortest_path(1, 4, neighbours) == ["north", "east"]
    assert shortest_path(1, 5, neighbours) == ["north", "east", "down"]
    assert shortest_path(5, 1, neighbours) is None
    assert shortest_path(1, 5, neighbours, max_steps=2) is None


def test_shortest_path_is_capped_on_a_long_corridor() -> None:
    def corridor(room: int) -> list[tuple[str, int]]:
        return [("east", room + 1)]

    assert shortest_path(0, 50, corridor) == ["east"] * 50
    assert shortest_path(0, 51, corridor) is None


def test_exit_names_become_movement_commands() -> None:
    assert [direction_token(n) for n in ["North", "north-east", "up", "Hall", "Old  Gate"]] == [
        "n",
        "ne",
        "u",
        "hall",
        "old gate",
    ]


def test_game_time_reads_as_a_gregorian_date() -> None:
    moment = datetime(2026, 11, 22, 18, 4, 5, tzinfo=UTC)
    assert gamecalendar.reading(moment) == {
        "calendar_id": 1,
        "calendar_name": "Gregorian",
        "clock_id": 1,
        "clock_name": "Game time",
        "timezone_id": 1,
        "timezone_name": "UTC",
        "date_long": "Sunday, the 22nd of November, 2026",
        "date_short": "2026-11-22",
        "time_long": "18:04:05",
        "time_short": "18:04",
        "time_vague": "dusk",
    }
    assert [gamecalendar.vague_time(h) for h in (0, 6, 13, 15, 22)] == [
        "night",
        "dawn",
        "midday",
        "afternoon",
        "evening",
    ]


def test_the_calendar_lays_out_years() -> None:
    assert gamecalendar.matches(" GREGORIAN ") and gamecalendar.matches("1")
    assert not gamecalendar.matches("imperial")
    plain = gamecalendar.calendar_info()
    assert plain["year"] is None and plain["months"][1]["days"] == 28
    leap = gamecalendar.calendar_info(2028)["year"]
    assert (leap["name"], leap["days"], leap["months"][1]["days"]) == ("2028 AD", 366, 29)
    with pytest.raises(ValueError, match="years 1 to 9999"):
        gamecalendar.calendar_info(0)
