"""What the bridge tells the daemon about the game: read-only queries over Evennia objects.

Ids are dbref numbers (``#12`` → ``12``). Zones and landmarks are Evennia tags on rooms:

* a room's zone is its tag in the category ``STORYTELLER_BRIDGE_ZONE_CATEGORY`` (default
  ``zone``), e.g. ``room.tags.add("harbour", category="zone")``; the zone's id is the tag's
  database id, so it stays the same while the tag exists;
* a landmark is a tag in ``STORYTELLER_BRIDGE_LANDMARK_CATEGORY`` (default ``landmark``); its key
  is the landmark's name (Evennia lower-cases it; it is shown with capitalised words) and
  its ``data``, if any, its description.

Paths are searched breadth-first over exits; plans are character attributes (`set_plans`); the
date and time are Evennia's game time (`gamecalendar`). Everything here runs on the reactor thread
and returns JSON-ready values shaped as docs/bridge-protocol.md describes.
"""

from __future__ import annotations

import string
import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from evennia.objects.models import ObjectDB
from evennia.objects.objects import DefaultCharacter, DefaultExit, DefaultRoom
from evennia.typeclasses.tags import Tag
from evennia.utils import gametime
from evennia.utils.ansi import strip_ansi

from . import gamecalendar
from .params import CommandFailed
from .pathing import MAX_STEPS, direction_token, shortest_path


def _zone_category() -> str:
    return str(getattr(settings, "STORYTELLER_BRIDGE_ZONE_CATEGORY", "zone"))


def _landmark_category() -> str:
    return str(getattr(settings, "STORYTELLER_BRIDGE_LANDMARK_CATEGORY", "landmark"))


def is_character(obj: Any) -> bool:
    """Whether `obj` is a character (player-controlled or not)."""
    return isinstance(obj, DefaultCharacter)


def is_room(obj: Any) -> bool:
    """Whether `obj` is a room."""
    return isinstance(obj, DefaultRoom)


def character_ids_in(room: Any) -> set[int]:
    """Ids of the characters in `room`."""
    return {o.id for o in room.contents if is_character(o)}


def zone_id_of(room: Any) -> int | None:
    """The id of `room`'s zone tag, or None."""
    tags = room.tags.get(category=_zone_category(), return_tagobj=True, return_list=True)
    return min(t.id for t in tags) if tags else None


def find_object(object_id: Any) -> Any | None:
    """The object with this dbref number, or None."""
    try:
        number = int(str(object_id).lstrip("#"))
    except ValueError:
        return None
    if number <= 0:
        return None
    return ObjectDB.objects.filter(id=number).first()


def lookup(element: str, object_id: int) -> Any | None:
    """The object with this id if it is of the prog type `element`
    (``Character``, ``Location``, ``Exit`` or ``Item``), else None."""
    obj = find_object(object_id)
    if obj is None:
        return None
    kinds = {
        "Character": is_character(obj),
        "Location": is_room(obj),
        "Exit": isinstance(obj, DefaultExit),
        "Item": not (is_character(obj) or is_room(obj) or isinstance(obj, DefaultExit)),
    }
    return obj if kinds.get(element, False) else None


def _plain(text: Any) -> str:
    return strip_ansi(str(text or "")).strip()


def _name(obj: Any) -> str:
    return _plain(obj.key)


PLAYER_TAG = ("player", "storyteller")
"""Tag (key, category) the character mixin puts on every character an account has puppeted."""


def _is_player(obj: Any) -> bool:
    return bool(obj.has_account or obj.tags.has(PLAYER_TAG[0], category=PLAYER_TAG[1]))


def _gender(obj: Any) -> str:
    return _plain(obj.attributes.get("gender", default="")) or "indeterminate"


def _short_description(obj: Any) -> str:
    short = _plain(obj.attributes.get("short_desc", default=""))
    if short:
        return short
    desc = _plain(obj.db.desc)
    return desc.split("\n", 1)[0][:200] if desc else _name(obj)


def character_summary(obj: Any) -> dict[str, Any]:
    """A character as a list of online players shows it."""
    room = obj.location
    return {
        "id": obj.id,
        "name": _name(obj),
        "gender": _gender(obj),
        "short_description": _short_description(obj),
        "location_id": room.id if room else None,
        "location_name": _name(room) if room else "",
        "is_player": _is_player(obj),
    }


def online_players() -> list[dict[str, Any]]:
    """Characters puppeted by a connected session, by id."""
    import evennia

    seen: dict[int, dict[str, Any]] = {}
    for session in evennia.SESSION_HANDLER.get_sessions():
        puppet = getattr(session, "puppet", None)
        if puppet is not None and is_character(puppet) and puppet.id not in seen:
            seen[puppet.id] = character_summary(puppet)
    return [seen[k] for k in sorted(seen)]


def character_info(character_id: Any) -> dict[str, Any] | None:
    """One character in detail, or None. Race, culture etc. come from attributes if set."""
    obj = find_object(character_id)
    if obj is None or not is_character(obj):
        return None
    attrs = obj.attributes
    age = attrs.get("age", default=0)
    return {
        **character_summary(obj),
        "race": _plain(attrs.get("race", default="")),
        "ethnicity": _plain(attrs.get("ethnicity", default="")),
        "culture": _plain(attrs.get("culture", default="")),
        "age": age if isinstance(age, int) else 0,
        "age_category": _plain(attrs.get("age_category", default="")),
        "birthday": _plain(attrs.get("birthday", default="")),
        "full_description": _plain(obj.db.desc),
    }


def entity_info(kind: str, entity_id: int) -> dict[str, Any] | None:
    """The character, room, item or exit with this id (`kind` is its prog type), or None."""
    obj = lookup(kind, entity_id)
    return None if obj is None else {"kind": kind, "id": obj.id, "name": _name(obj)}


def room_info(room_id: Any) -> dict[str, Any] | None:
    """One room, its zone, description, occupants and exits, or None."""
    room = find_object(room_id)
    if room is None or not is_room(room):
        return None
    return {
        "id": room.id,
        "name": _name(room),
        "zone_id": zone_id_of(room),
        "description": _plain(room.db.desc),
        "occupant_ids": sorted(character_ids_in(room)),
        "exits": [{"name": _name(e), "destination_id": e.destination.id} for e in _exits(room)],
    }


def zones() -> dict[int, list[int]]:
    """Zone id → ids of the rooms tagged with it."""
    result: dict[int, list[int]] = {}
    tags = Tag.objects.filter(db_category=_zone_category(), db_tagtype=None, db_model="objectdb")
    for tag in tags:
        rooms = ObjectDB.objects.filter(db_tags=tag, db_location__isnull=True)
        ids = sorted(r.id for r in rooms if is_room(r))
        result[tag.id] = ids
    return result


def _landmark_name(tag: Any) -> str:
    # Evennia stores tag keys in lower case: show them with capitalised words.
    return string.capwords(str(tag.db_key))


def _landmark_tags(room: Any) -> list[Any]:
    return list(room.tags.get(category=_landmark_category(), return_tagobj=True, return_list=True))


def landmarks() -> list[dict[str, Any]]:
    """Every landmark (a landmark-category tag on a room) and the room it marks, by name."""
    found = []
    for room in ObjectDB.objects.get_by_tag(category=_landmark_category()):
        if is_room(room):
            for tag in _landmark_tags(room):
                found.append(
                    {"name": _landmark_name(tag), "room_id": room.id, "room_name": _name(room)}
                )
    return sorted(found, key=lambda x: (x["name"].lower(), x["room_id"]))


def landmark(name: str) -> dict[str, Any] | None:
    """The landmark called `name` (any case), its room, description and occupants; or None."""
    wanted = name.strip().lower()
    for room in ObjectDB.objects.get_by_tag(category=_landmark_category()):
        if not is_room(room):
            continue
        for tag in _landmark_tags(room):
            if tag.db_key.lower() == wanted:
                occupants = [o for o in room.contents if is_character(o)]
                return {
                    "name": _landmark_name(tag),
                    "room_id": room.id,
                    "room_name": _name(room),
                    "room_description": _plain(room.db.desc),
                    "descriptions": [_plain(tag.db_data)] if tag.db_data else [],
                    "occupants": [character_summary(o) for o in occupants],
                }
    return None


def _exits(room: Any) -> list[Any]:
    exits = [o for o in room.contents if isinstance(o, DefaultExit) and o.destination is not None]
    return sorted(exits, key=lambda e: (_name(e).lower(), e.id))


def room_path(
    origin_id: int,
    destination_id: int,
    *,
    character_id: int | None = None,
    character_must_cross: bool = False,
    max_exits: int = MAX_STEPS,
) -> dict[str, Any]:
    """Exits to take from one room to another, breadth-first over exits, at most `max_exits`
    (and never more than 50) long.

    Evennia exits have no doors, so every door rule finds the same paths; with
    `character_must_cross`, exits whose ``traverse`` lock refuses the character are avoided.

    Raises:
        CommandFailed: a room or the character does not exist.
    """
    origin, destination = find_object(origin_id), find_object(destination_id)
    for ref, obj in ((origin_id, origin), (destination_id, destination)):
        if obj is None or not is_room(obj):
            raise CommandFailed(f"No room with id {ref} exists.")
    walker = None
    if character_id is not None:
        walker = find_object(character_id)
        if walker is None or not is_character(walker):
            raise CommandFailed(f"No character with id {character_id} exists.")

    def neighbours(room_id: int) -> list[tuple[str, int]]:
        room = find_object(room_id)
        if room is None:
            return []
        return [
            (direction_token(_name(e)), e.destination.id)
            for e in _exits(room)
            if not (character_must_cross and walker and not e.access(walker, "traverse"))
        ]

    steps = shortest_path(
        origin.id, destination.id, neighbours, max_steps=max(0, min(max_exits, MAX_STEPS))
    )
    return {
        "origin_room_id": origin.id,
        "destination_room_id": destination.id,
        "directions": steps or [],
        "found": steps is not None,
    }


# ---------------------------------------------------------------- plans

PLAN_ATTRIBUTES = ("plan_short_term", "plan_long_term", "plan_updated")
"""Attributes holding a character's plans and when they last changed (POSIX seconds)."""


def set_plans(
    character: Any, *, short_term: str | None = None, long_term: str | None = None
) -> None:
    """Record a character's stated plans (for a game's own ``plan`` command)."""
    if short_term is not None:
        character.attributes.add(PLAN_ATTRIBUTES[0], short_term)
    if long_term is not None:
        character.attributes.add(PLAN_ATTRIBUTES[1], long_term)
    character.attributes.add(PLAN_ATTRIBUTES[2], time.time())


def _plan(obj: Any) -> dict[str, Any]:
    short, long_, updated = (obj.attributes.get(a, default=None) for a in PLAN_ATTRIBUTES)
    return {
        "character_id": obj.id,
        "name": _name(obj),
        "short_description": _short_description(obj),
        "short_term": _plain(short) if short else None,
        "long_term": _plain(long_) if long_ else None,
        "updated_ago": max(0.0, time.time() - updated)
        if isinstance(updated, int | float)
        else None,
        "is_player": _is_player(obj),
    }


def character_plan(character_id: int) -> dict[str, Any] | None:
    """A character's plans, or None if there is no such character."""
    obj = find_object(character_id)
    return _plan(obj) if obj is not None and is_character(obj) else None


def recent_plans(within_seconds: float) -> list[dict[str, Any]]:
    """Plans of online player characters that changed within the last `within_seconds`."""
    import evennia

    plans: dict[int, dict[str, Any]] = {}
    for session in evennia.SESSION_HANDLER.get_sessions():
        puppet = getattr(session, "puppet", None)
        if puppet is None or not is_character(puppet) or puppet.id in plans:
            continue
        plan = _plan(puppet)
        if plan["updated_ago"] is not None and plan["updated_ago"] <= within_seconds:
            plans[puppet.id] = plan
    return [plans[k] for k in sorted(plans)]


# ---------------------------------------------------------------- time


def _game_moment() -> datetime:
    return datetime.fromtimestamp(gametime.gametime(absolute=True), tz=UTC)


def room_times(room_ids: list[int] | None) -> dict[str, list[dict[str, Any]]]:
    """Room id → the date and time there (one reading: Evennia's game time); unknown rooms are
    left out."""
    if room_ids is None:
        rooms = [r.id for r in ObjectDB.objects.filter(db_location__isnull=True) if is_room(r)]
    else:
        rooms = [r for r in dict.fromkeys(room_ids) if is_room(find_object(r))]
    now = gamecalendar.reading(_game_moment())
    return {str(r): [now] for r in rooms}


def calendar(ref: str, year: int | None) -> dict[str, Any] | None:
    """The calendar named by `ref`, or None.

    Raises:
        CommandFailed: `year` is out of the calendar's range.
    """
    if not gamecalendar.matches(ref):
        return None
    try:
        return gamecalendar.calendar_info(year)
    except ValueError as exc:
        raise CommandFailed(str(exc)) from None
