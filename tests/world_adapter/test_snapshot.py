"""World snapshots: the sim town written down through its read queries and built again answers
the same look-ups (rooms, zones, characters, plans, paths under every door rule, landmarks,
progs, times, calendars, items); its progs check their arguments and record the call; a file
that is no snapshot is one line naming the file and the problem."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from world_adapter.errors import WorldCommandError
from world_adapter.facts import DoorRule, EntityKind, PathRule
from world_adapter.sim import SimWorld
from world_adapter.sim.snapshot import ProgCall, load_snapshot
from world_adapter.snapshot import SnapshotError, read_snapshot, take_snapshot, write_snapshot

NOON = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
ROOMS = [*range(101, 109), *range(201, 206)]
PEOPLE = [1001, 1002, 1003, 2001, 2002, 2003, 2004, 2005]


def _clock() -> datetime:
    return NOON


async def _snapshot_file(tmp_path: Path, world: SimWorld, **options: object) -> Path:
    taken = await take_snapshot(world, game="sim", taken_at=NOON, **options)  # type: ignore[arg-type]
    path = tmp_path / "town.json"
    write_snapshot(taken, path)
    return path


async def test_the_loaded_town_answers_the_same_look_ups(tmp_path: Path) -> None:
    town = SimWorld.harbour_town(clock=_clock)
    copy = load_snapshot(await _snapshot_file(tmp_path, town, items=[351, 304]), _clock)

    assert await copy.zones() == await town.zones()
    for room in ROOMS:
        assert await copy.room(room) == await town.room(room)
    assert await copy.room(999) is None
    for person in PEOPLE:
        assert await copy.character(person) == await town.character(person)
        assert await copy.character_plan(person) == await town.character_plan(person)
    assert await copy.online_players() == await town.online_players()
    assert await copy.landmarks() == await town.landmarks()
    assert await copy.landmark("THE TEMPLE OF THE TIDES") == await town.landmark(
        "the Temple of the Tides"
    )
    assert await copy.progs() == await town.progs()
    assert await copy.room_times() == await town.room_times()
    reading = (await town.room_times([101]))[101][0]
    assert await copy.calendar(str(reading.calendar_id)) == await town.calendar(
        str(reading.calendar_id)
    )
    assert await copy.entity(EntityKind.ITEM, 351) == await town.entity(EntityKind.ITEM, 351)
    assert await copy.entity(EntityKind.ITEM, 312) is None
    assert await copy.entity(EntityKind.CHARACTER, 2004) == await town.entity(
        EntityKind.CHARACTER, 2004
    )


async def test_paths_agree_under_every_door_rule(tmp_path: Path) -> None:
    town = SimWorld.harbour_town(clock=_clock)
    town.set_door(2, closed=True)  # the tavern door, open in the map, closed when taken
    copy = load_snapshot(await _snapshot_file(tmp_path, town), _clock)
    rules = [r for r in DoorRule if r is not DoorRule.INCLUDE_UNLOCKABLE]
    for origin, destination in itertools.permutations(ROOMS, 2):
        for rule in rules:
            rule_of = PathRule(rule)
            want = await town.path(origin, destination, rule_of)
            got = await copy.path(origin, destination, rule_of)
            assert (got.found, got.directions) == (want.found, want.directions), (
                origin,
                destination,
                rule,
            )
    assert not (await copy.path(102, 103, PathRule(DoorRule.RESPECT_CLOSED))).found


async def test_only_the_zones_asked_for(tmp_path: Path) -> None:
    town = SimWorld.harbour_town(clock=_clock)
    taken = await take_snapshot(town, game="sim", taken_at=NOON, zones=[2])
    assert [r.id for r in taken.rooms] == list(range(201, 206))
    assert {c.id for c in taken.characters} == {1003, 2001}
    assert taken.online_players == (1003,)
    path = tmp_path / "old-town.json"
    write_snapshot(taken, path)
    copy = load_snapshot(path, _clock)
    assert await copy.zones() == {2: frozenset(range(201, 206))}
    assert [c.id for c in await copy.online_players()] == [1003]
    assert (await copy.path(201, 205, PathRule(DoorRule.IGNORE))).directions == (
        "n",
        "e",
        "enter door",
    )
    with pytest.raises(SnapshotError, match=r"^the world has no zone 7 \(zones: 1, 2\)$"):
        await take_snapshot(town, game="sim", taken_at=NOON, zones=[7])
    with pytest.raises(SnapshotError, match=r"^the world has no item 9999$"):
        await take_snapshot(town, game="sim", taken_at=NOON, items=[9999])


async def test_a_prog_checks_its_arguments_and_records_the_call(tmp_path: Path) -> None:
    town = SimWorld.harbour_town(clock=_clock)
    copy = load_snapshot(await _snapshot_file(tmp_path, town), _clock)
    done = await copy.execute_prog("EchoToRoom", {"Room": 103, "Text": "The fire gutters."}, "k1")
    assert done.value is True and done.return_type == "Boolean"
    sent = await copy.execute_prog("DispatchWatchman", {"Room": 101, "Reason": "a brawl"}, "k2")
    assert "snapshot" in sent.value
    assert copy.prog_calls == [
        ProgCall("EchoToRoom", {"Room": 103, "Text": "The fire gutters."}),
        ProgCall("DispatchWatchman", {"Room": 101, "Reason": "a brawl"}),
    ]
    with pytest.raises(WorldCommandError):
        await copy.execute_prog("EchoToRoom", {"Room": 999, "Text": "nowhere"}, "k3")
    with pytest.raises(WorldCommandError, match="does not compile"):
        await copy.execute_prog("BrokenProg", {"Text": "x"}, "k4")
    assert len(copy.prog_calls) == 2


async def test_the_loaded_town_lives_like_the_sim(tmp_path: Path) -> None:
    town = SimWorld.harbour_town(clock=_clock)
    copy = load_snapshot(await _snapshot_file(tmp_path, town), _clock)
    said = copy.say(1001, "Who cut these nets?")
    assert said.cell_id == 101 and said.zone_id == 1
    copy.move(1001, 102)
    assert 1001 in (await copy.room(102) or pytest.fail("no room")).occupant_ids


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot read the snapshot"),
        ("{not json", "not a JSON world snapshot"),
        ("[]", "not a JSON world snapshot: expected an object"),
        ('{"format": 9}', "format: 9 is not a snapshot format"),
        ("FIELD", "rooms"),
        ("EXTRA", "colour"),
    ],
)
async def test_a_bad_file_is_one_line(tmp_path: Path, content: str | None, problem: str) -> None:
    path = tmp_path / "bad.json"
    if content in ("FIELD", "EXTRA"):
        good = await _snapshot_file(tmp_path, SimWorld.harbour_town(clock=_clock))
        data = json.loads(good.read_text(encoding="utf-8"))
        if content == "FIELD":
            data["rooms"][0]["id"] = "one hundred and one"
        else:
            data["colour"] = "blue"
        content = json.dumps(data)
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(SnapshotError) as caught:
        load_snapshot(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and problem in message and "\n" not in message


async def test_a_snapshot_that_makes_no_world_is_one_line(tmp_path: Path) -> None:
    path = await _snapshot_file(tmp_path, SimWorld.harbour_town(clock=_clock))
    data = json.loads(path.read_text(encoding="utf-8"))
    data["characters"][0]["location_id"] = 999
    path.write_text(json.dumps(data), encoding="utf-8")
    assert read_snapshot(path).characters[0].location_id == 999
    with pytest.raises(SnapshotError, match=r"does not make a world: .*999") as caught:
        load_snapshot(path)
    assert "\n" not in str(caught.value)
