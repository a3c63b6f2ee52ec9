"""The labelled benchmark stream: deterministic, busy, realistic in shape, and round-trippable."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from world_adapter.events import RoomEcho
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.stream import labelled_stream, stream_summary
from world_adapter.sim.stream_files import read_stream, write_stream


@pytest.fixture(scope="module")
def hour() -> list:
    return labelled_stream(seed=3)


def test_the_same_seed_gives_the_same_stream_and_another_seed_another() -> None:
    short = labelled_stream(seed=5, hours=0.1)
    assert short == labelled_stream(seed=5, hours=0.1)
    assert short != labelled_stream(seed=6, hours=0.1)


def test_a_busy_hour_has_thousands_of_events_and_few_relevant(hour: list) -> None:
    summary = stream_summary(hour)
    assert 4000 <= summary["events"] <= 6000
    assert 0.01 <= summary["relevant share"] <= 0.02
    assert {"chatter", "crowd", "ambience", "broadcast", "fight"} <= set(summary["by tag"])


def test_cursors_count_up_and_time_never_runs_backwards(hour: list) -> None:
    assert [i.event.cursor.seq for i in hour] == list(range(1, len(hour) + 1))
    times = [i.event.occurred_at for i in hour]
    assert times == sorted(times)
    assert all(i.event.origin == "world" for i in hour)


def test_rooms_and_zones_are_the_maps(hour: list) -> None:
    zones = {room.id: room.zone_id for room in HARBOUR_TOWN_MAP.rooms}
    assert all(zones[i.event.cell_id] == i.event.zone_id for i in hour)


def test_a_fight_is_a_burst_in_one_room(hour: list) -> None:
    fights = defaultdict(list)
    for item in hour:
        if item.tag == "fight" and isinstance(item.event, RoomEcho):
            fights[item.group].append(item)
    assert fights
    longest = max(fights.values(), key=len)
    assert len(longest) >= 9 and len({i.event.cell_id for i in longest}) == 1
    assert (longest[-1].event.occurred_at - longest[0].event.occurred_at).total_seconds() <= 20
    assert all(i.relevant for i in longest)


def test_a_broadcast_is_heard_in_many_rooms_at_once(hour: list) -> None:
    heard = defaultdict(set)
    for item in hour:
        if item.tag == "broadcast":
            heard[(item.event.occurred_at, item.event.text)].add(item.event.cell_id)
    assert heard and max(len(rooms) for rooms in heard.values()) >= 5


def test_a_stream_survives_a_round_trip_through_a_file(tmp_path: Path) -> None:
    items = labelled_stream(seed=2, hours=0.05)
    path = tmp_path / "stream.jsonl"
    write_stream(path, items)
    assert read_stream(path) == items


def test_a_bad_line_is_refused_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    items = labelled_stream(seed=2, hours=0.01)
    write_stream(path, items[:2])
    with path.open("a", encoding="utf-8") as out:
        out.write('{"event": {"kind": "room_echo"}, "relevant": true}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:3: not a labelled event"):
        read_stream(path)


def test_nonsense_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="relevant_share"):
        labelled_stream(relevant_share=0.9)


@pytest.mark.parametrize("hours", [1.0, 0.25, 0.5])
def test_the_events_spread_over_the_whole_span_and_none_pile_up_at_its_end(hours: float) -> None:
    items = labelled_stream(seed=1, hours=hours)
    start = items[0].event.occurred_at
    per_second = Counter(int((i.event.occurred_at - start).total_seconds()) for i in items)
    assert max(per_second.values()) <= 0.01 * len(items) + 20
    last_minute = sum(n for second, n in per_second.items() if second >= hours * 3600 - 60)
    assert last_minute <= 3 * len(items) / (hours * 60)
