"""Labelled world streams: a busy, realistic hour of the harbour town, for benchmarks.

`labelled_stream` writes what a busy evening in the harbour town sounds like to a storyteller,
each event labelled relevant or not to a harbour watch's remit (crime, smuggling, violence):

* **chatter** — speech and gestures in the market, the tavern and on the quay, including heated
  but harmless talk ("I'll kill you if you cheat at dice again!", laughing); irrelevant;
* **crowd** — people coming and going; irrelevant;
* **ambience** — one room repeating near-identical lines every few minutes (gulls, ropes,
  waves); irrelevant;
* **broadcast** — the same text heard in every room in the same second (the harbour bell, a
  foghorn, thunder); irrelevant;
* **fight** — a brawl: 10–20 echoes in one room within about ten seconds, sometimes ending
  with someone knocked unconscious; relevant, every event of the burst;
* **crime** — thefts, assaults, bribery (no victim), smuggling; relevant;
* **smuggling** — talk of contraband, dead drops and bribing the watch; relevant;
* **state** — a drunk passing out in the tavern; irrelevant.

The town marks the echoes of ambience and broadcasts as ambience (`AMBIENT_TAGS`), as a game
marks its background messages on the bridge.

The rate varies over the stream in ten-minute stretches (quiet, normal, busy). Everything
follows from the seed. The rooms, people and lines the stream is made of are in `stream_texts`;
`stream_files` keeps a stream as JSON lines.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from world_adapter.events import (
    CharacterState,
    Crime,
    Cursor,
    RoomEcho,
    Speech,
    StateChange,
    WorldEvent,
)
from world_adapter.sim.stream_texts import (
    AMBIENCE,
    BROADCASTS,
    BUSY_ROOMS,
    CHATTER,
    CRIMES,
    CROWD,
    CROWD_NAMES,
    FIGHT,
    FILL,
    GESTURES,
    MOVES,
    NAMES,
    QUIET_ROOMS,
    ROOMS,
    SMUGGLING,
    WAYS,
)

AMBIENT_TAGS = frozenset({"ambience", "broadcast"})
"""The scenarios whose echoes the town marks as ambience (`WorldEvent.ambience`): a room's
background and what every room hears (bell, foghorn, thunder)."""


@dataclass(frozen=True)
class LabelledEvent:
    """One event of a stream and what it is.

    Attributes:
        event: the world event.
        relevant: whether it matters to a harbour watch (crime, smuggling, violence).
        tag: the scenario it belongs to (see the module docstring).
        group: the scenario instance, e.g. ``fight-3`` for every echo of one brawl.
    """

    event: WorldEvent
    relevant: bool
    tag: str
    group: str


@dataclass(frozen=True)
class _Draft:
    at: float
    build: tuple[str, dict[str, object]]
    relevant: bool
    tag: str
    group: str


class _Writer:
    """Drafts events at offsets (seconds) into the stream."""

    def __init__(self, rng: random.Random, span: float) -> None:
        self.rng = rng
        self.span = span
        self.drafts: list[_Draft] = []
        self._weights = [rng.choice((0.3, 1.0, 1.0, 1.8)) for _ in range(int(span // 600) + 1)]

    def moment(self) -> float:
        """A random offset, more likely in busy stretches (ten minutes each; the last one may
        be shorter, and none starts at or after the end)."""
        stretches = max(1, math.ceil(self.span / 600))
        stretch = self.rng.choices(range(stretches), self._weights[:stretches])[0]
        width = min(600.0, self.span - stretch * 600)
        return min(self.span - 1, stretch * 600 + self.rng.uniform(0, width))

    def add(
        self, at: float, kind: str, relevant: bool, tag: str, group: str, **fields: object
    ) -> None:
        self.drafts.append(_Draft(min(at, self.span - 0.001), (kind, fields), relevant, tag, group))


def _who(rng: random.Random) -> tuple[int, str]:
    if rng.random() < 0.35:
        cid = rng.choice(tuple(NAMES))
        return cid, NAMES[cid]
    return rng.choice(CROWD), rng.choice(CROWD_NAMES).capitalize()


def labelled_stream(
    *,
    seed: int = 1,
    hours: float = 1.0,
    events_per_hour: int = 5000,
    relevant_share: float = 0.014,
    epoch: str = "bench-1",
    start: datetime = datetime(2026, 1, 1, 20, 0, tzinfo=UTC),
) -> list[LabelledEvent]:
    """A labelled stream (see the module docstring); the same arguments give the same stream.

    Raises:
        ValueError: a length, rate or share out of range.
    """
    if hours <= 0 or events_per_hour <= 0 or not 0 <= relevant_share < 0.5:
        raise ValueError("hours and events_per_hour must be positive, relevant_share in [0, 0.5)")
    rng = random.Random(seed)
    span = hours * 3600
    w = _Writer(rng, span)
    total = max(1, round(events_per_hour * hours))
    relevant = round(total * relevant_share)
    _relevant_scenarios(w, relevant)
    _broadcasts(w, total)
    made = len(w.drafts)
    for n in range(max(0, total - made)):
        _background(w, n)
    w.drafts.sort(key=lambda d: d.at)
    return [
        LabelledEvent(_build(d, Cursor(epoch, seq), start), d.relevant, d.tag, d.group)
        for seq, d in enumerate(w.drafts, start=1)
    ]


def _relevant_scenarios(w: _Writer, budget: int) -> None:
    rng, number = w.rng, 0
    while budget > 0:
        number += 1
        roll = rng.random()
        if roll < 0.55 and budget >= 10:
            budget -= _fight(w, number, min(budget, rng.randint(10, 20)))
        elif roll < 0.75:
            room = rng.choice(BUSY_ROOMS + QUIET_ROOMS[:3])
            criminal = rng.choice((2004, *CROWD[:10]))
            crime = rng.choice(CRIMES)
            victim = None if crime in ("Bribery", "Smuggling") else rng.choice((1001, 1002, 1003))
            w.add(
                w.moment(),
                "crime",
                True,
                "crime",
                f"crime-{number}",
                room=room,
                crime_id=number,
                crime_type=crime,
                criminal_id=criminal,
                victim_id=victim,
                witness_count=rng.randint(0, 4),
            )
            budget -= 1
        else:
            speaker, name = _who(rng)
            w.add(
                w.moment(),
                "speech",
                True,
                "smuggling",
                f"smuggling-{number}",
                room=rng.choice(BUSY_ROOMS),
                speaker_id=speaker,
                speaker_name=name,
                text=rng.choice(SMUGGLING),
                volume=rng.choice(("Whisper", "Normal")),
            )
            budget -= 1


def _fight(w: _Writer, number: int, size: int) -> int:
    rng = w.rng
    room, at = rng.choice(BUSY_ROOMS), w.moment()
    (a_id, a), (b_id, b) = _who(rng), _who(rng)
    group = f"fight-{number}"
    for step in range(size - 1):
        text = rng.choice(FIGHT).format(a=a, b=b)
        w.add(
            at + step * rng.uniform(0.3, 0.9),
            "echo",
            True,
            "fight",
            group,
            room=room,
            text=text,
            source=a_id if "{a}" in text else b_id,
        )
    w.add(
        at + size * 0.9,
        "state",
        True,
        "fight",
        group,
        room=room,
        character_id=b_id,
        state=CharacterState.UNCONSCIOUS,
    )
    return size


def _broadcasts(w: _Writer, total: int) -> None:
    every = max(300.0, w.span * len(ROOMS) / max(1, total * 0.04))
    at, number = w.rng.uniform(0, every), 0
    while at < w.span:
        number += 1
        text = w.rng.choice(BROADCASTS)
        for room in ROOMS:
            w.add(at, "echo", False, "broadcast", f"broadcast-{number}", room=room, text=text)
        at += every


def _background(w: _Writer, n: int) -> None:
    rng = w.rng
    roll = rng.random()
    room = rng.choice(BUSY_ROOMS) if rng.random() < 0.8 else rng.choice(QUIET_ROOMS)
    who_id, who = _who(rng)
    if roll < 0.12:
        place = rng.choice(tuple(AMBIENCE))
        w.add(
            w.moment(),
            "echo",
            False,
            "ambience",
            f"ambience-{place}",
            room=place,
            text=rng.choice(AMBIENCE[place]),
        )
    elif roll < 0.32:
        w.add(
            w.moment(),
            "echo",
            False,
            "crowd",
            f"crowd-{n}",
            room=room,
            text=rng.choice(MOVES).format(who=who, way=rng.choice(WAYS)),
            source=who_id,
        )
    elif roll < 0.995:
        if rng.random() < 0.6:
            w.add(
                w.moment(),
                "speech",
                False,
                "chatter",
                f"chatter-{n}",
                room=room,
                speaker_id=who_id,
                speaker_name=who,
                text=_fill(rng, rng.choice(CHATTER), who),
                volume=rng.choice(("Normal", "Normal", "Loud", "Shout")),
            )
        else:
            w.add(
                w.moment(),
                "echo",
                False,
                "chatter",
                f"chatter-{n}",
                room=room,
                text=_fill(rng, rng.choice(GESTURES), who),
                source=who_id,
            )
    else:
        w.add(
            w.moment(),
            "state",
            False,
            "state",
            f"state-{n}",
            room=103,
            character_id=who_id,
            state=CharacterState.PASS_OUT,
        )


def _fill(rng: random.Random, template: str, who: str) -> str:
    words = {key: rng.choice(values) for key, values in FILL.items()}
    return template.format(who=who, n=rng.randint(2, 12), **words)


def _build(draft: _Draft, cursor: Cursor, start: datetime) -> WorldEvent:
    kind, f = draft.build
    room = int(str(f["room"]))
    zone = ROOMS[room]
    at = start + timedelta(seconds=round(draft.at, 3))
    if kind == "echo":
        return RoomEcho(
            cursor=cursor,
            cell_id=room,
            zone_id=zone,
            occurred_at=at,
            text=str(f["text"]),
            source_character_id=_int(f.get("source")),
            ambience=draft.tag in AMBIENT_TAGS,
        )
    if kind == "speech":
        return Speech(
            cursor=cursor,
            cell_id=room,
            zone_id=zone,
            occurred_at=at,
            speaker_id=int(str(f["speaker_id"])),
            speaker_name=str(f["speaker_name"]),
            text=str(f["text"]),
            language="Common",
            accent="harbour",
            volume=str(f["volume"]),
        )
    if kind == "crime":
        return Crime(
            cursor=cursor,
            cell_id=room,
            zone_id=zone,
            occurred_at=at,
            crime_id=int(str(f["crime_id"])),
            crime_type=str(f["crime_type"]),
            legal_authority="Harbour Ward",
            criminal_id=int(str(f["criminal_id"])),
            victim_id=_int(f.get("victim_id")),
            witness_count=int(str(f["witness_count"])),
        )
    state = f["state"]
    assert isinstance(state, CharacterState)
    return StateChange(
        cursor=cursor,
        cell_id=room,
        zone_id=zone,
        occurred_at=at,
        character_id=int(str(f["character_id"])),
        state=state,
    )


def _int(value: object) -> int | None:
    return None if value is None else int(str(value))


def stream_summary(items: Sequence[LabelledEvent]) -> dict[str, object]:
    """Counts by tag and kind, the relevant share, the duration and the rooms of a stream."""
    if not items:
        return {"events": 0}
    relevant = sum(1 for item in items if item.relevant)
    span = items[-1].event.occurred_at - items[0].event.occurred_at
    return {
        "events": len(items),
        "relevant": relevant,
        "relevant share": round(relevant / len(items), 4),
        "minutes": round(span.total_seconds() / 60, 1),
        "by tag": dict(Counter(item.tag for item in items)),
        "by kind": dict(Counter(item.event.kind.value for item in items)),
        "rooms": len({item.event.cell_id for item in items}),
    }
