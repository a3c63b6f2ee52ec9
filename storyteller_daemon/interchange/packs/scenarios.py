"""Reading a pack's scenarios: ``scenarios/*.toml`` beside its storytellers.

One file is one `Scenario` (docs/evals.md shows the format): a world (``sim`` or a
snapshot file relative to the scenario file), events in order with the time of each from the
scenario's start, and what must follow them. Every value is checked here, with the same typed
tables as ``pack.toml``: an unknown key, a bad duration, a bad regular expression, an unknown
action or verdict is a `ConfigError` naming the file and the key.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from storyteller_daemon.domain.durations import parse_duration
from storyteller_daemon.domain.names import name_key
from storyteller_daemon.domain.scenarios import (
    ACTIONS,
    Budget,
    CallBounds,
    CallPattern,
    Expectations,
    Needs,
    Scenario,
    ScenarioEvent,
    Verdict,
)
from storyteller_daemon.domain.storytellers import Heartbeat
from storyteller_daemon.errors import ConfigError, ValidationError
from storyteller_daemon.interchange.packs.contents import Pack
from storyteller_daemon.interchange.packs.tables import PackTable, display_path
from world_adapter.events import CharacterState

SCENARIOS_DIR = "scenarios"
SIM_WORLD = "sim"
E = TypeVar("E", Needs, Verdict)
_VOLUMES = ("whisper", "quiet", "normal", "loud", "shout")


@dataclass(frozen=True)
class PackScenario:
    """A scenario and the file it was read from."""

    scenario: Scenario
    source: Path


def read_scenarios(pack: Pack) -> tuple[PackScenario, ...]:
    """Every scenario of `pack` (``scenarios/*.toml``, by file name); none without the folder.

    Raises:
        ConfigError: naming the file and key of the first problem; two scenarios of one name,
            or one naming a storyteller the pack has not, are problems too.
    """
    folder = pack.path / SCENARIOS_DIR
    files = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    names = [st.name for st in pack.storytellers]
    seen: dict[str, Path] = {}
    out = []
    for file in files:
        scenario = read_scenario(file, names)
        key = name_key(scenario.name)
        if key in seen:
            problem = f"'{scenario.name}' is also the name of {seen[key].name}"
            raise ConfigError(display_path(file), problem, "name")
        seen[key] = file
        out.append(PackScenario(scenario, file))
    return tuple(out)


def read_scenario(file: Path, storytellers: Sequence[str] = ()) -> Scenario:
    """One scenario file.

    Args:
        file: the ``.toml`` file.
        storytellers: the pack's storytellers; the scenario's ``storyteller`` must be one of
            them (given as written there), and may be left out when there is only one. Empty:
            the name is not checked.

    Raises:
        ConfigError: naming the file and the key of the problem.
    """
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(display_path(file), f"not valid TOML: {exc}") from None
    root = PackTable(data, file)
    name = root.text("name")
    description = root.optional_text("description") or ""
    storyteller = _storyteller(root, storytellers)
    world = _world(root, file)
    needs = _choice(root, "needs", Needs, Needs.ANY) or Needs.ANY
    events = _events(root)
    expect = _expectations(root.table("expect"))
    root.finish()
    return Scenario(
        name=name,
        events=events,
        expect=expect,
        storyteller=storyteller,
        world=world,
        needs=needs,
        description=description,
    )


def _storyteller(root: PackTable, known: Sequence[str]) -> str | None:
    wanted = root.optional_text("storyteller")
    if not known:
        return wanted
    if wanted is None:
        if len(known) > 1:
            shown = ", ".join(known)
            raise root.error("storyteller", f"required: the pack has several ({shown})")
        return known[0]
    for name in known:
        if name_key(name) == name_key(wanted):
            return name
    raise root.error(
        "storyteller", f"'{wanted}' is not a storyteller of this pack ({', '.join(known)})"
    )


def _world(root: PackTable, file: Path) -> str:
    world = root.text("world", SIM_WORLD)
    if world == SIM_WORLD:
        return world
    snapshot = (file.parent / world).resolve()
    if not snapshot.is_file():
        raise root.error(
            "world", f"'{world}' is neither \"sim\" nor a snapshot file beside the scenario"
        )
    return str(snapshot)


def _choice(table: PackTable, key: str, kind: type[E], default: E | None) -> E | None:
    word = table.optional_text(key)
    if word is None:
        return default
    try:
        return kind(word.lower())
    except ValueError:
        shown = " or ".join(f'"{member.value}"' for member in kind)
        raise table.error(key, f"'{word}' is not one of {shown}") from None


# --------------------------------------------------------------------------- events


def _events(root: PackTable) -> tuple[ScenarioEvent, ...]:
    tables = root.tables("events")
    if not tables:
        raise root.error("events", "a scenario needs at least one [[events]] table")
    events: list[ScenarioEvent] = []
    for table in tables:
        event = _event(table)
        if events and event.at < events[-1].at:
            raise table.error("at", "comes before the event above it (events are in time order)")
        events.append(event)
    return tuple(events)


def _duration(table: PackTable, key: str) -> timedelta:
    try:
        return parse_duration(table.text(key))
    except ValidationError as exc:
        raise table.error(key, str(exc)) from None


def _event(table: PackTable) -> ScenarioEvent:
    at = _duration(table, "at")
    action = table.text("action").lower()
    if action not in ACTIONS:
        raise table.error("action", f"'{action}' is not an action; use {', '.join(ACTIONS)}")
    character = _optional_id(table, "character")
    room = _optional_id(table, "room")
    text = table.optional_text("text") or ""
    expect = _choice(table, "expect", Verdict, None)
    values = _values(table.table("values"), action)
    table.finish()
    if action == "heartbeat":
        for key, given in (("character", character), ("room", room), ("text", text)):
            if given:
                raise table.error(key, "a heartbeat takes no character, room or text")
    elif character is None:
        raise table.error("character", f"required for a {action}")
    if action in ("say", "emote") and not text:
        raise table.error("text", f"required for {'an' if action == 'emote' else 'a'} {action}")
    if action in ("move", "crime", "state") and text:
        raise table.error("text", f"a {action} takes no text (add an emote event for the words)")
    if action == "move" and room is None:
        raise table.error("room", "required for a move: where the character goes")
    return ScenarioEvent(at, action, character, room, text, values, expect)


def _optional_id(table: PackTable, key: str) -> int | None:
    value = table.integer(key, 0)
    if key not in table.keys():
        return None
    if value <= 0:
        raise table.error(key, f"must be a positive id, not {value}")
    return value


def _values(table: PackTable, action: str) -> dict[str, Any]:
    """What else `action` takes: each key checked and typed; anything else is refused."""
    values: dict[str, Any] = {}
    if action == "say":
        target = _optional_id(table, "target")
        if target is not None:
            values["target"] = target
        language = table.optional_text("language")
        if language is not None:
            values["language"] = language
        volume = table.optional_text("volume")
        if volume is not None:
            if volume.lower() not in _VOLUMES:
                raise table.error(
                    "volume", f"'{volume}' is not a volume; use {', '.join(_VOLUMES)}"
                )
            values["volume"] = volume.capitalize()
    elif action == "crime":
        values["crime"] = table.text("crime")
        victim = _optional_id(table, "victim")
        if victim is not None:
            values["victim"] = victim
        witnesses = table.integer("witnesses", 1)
        if witnesses < 0:
            raise table.error("witnesses", f"must not be negative, not {witnesses}")
        values["witnesses"] = witnesses
    elif action == "state":
        word = table.text("state")
        states = {s.value.lower(): s for s in CharacterState}
        if word.lower().replace("_", " ") not in states:
            shown = ", ".join(s.value for s in CharacterState)
            raise table.error("state", f"'{word}' is not a character state; use {shown}")
        values["state"] = states[word.lower().replace("_", " ")].value
    elif action == "heartbeat":
        period = table.optional_text("heartbeat")
        if period is not None:
            try:
                values["heartbeat"] = Heartbeat.parse(period).value
            except ValidationError as exc:
                raise table.error("heartbeat", str(exc)) from None
    table.finish()
    return values


# --------------------------------------------------------------------------- expectations


def _regex(table: PackTable, key: str, text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise table.error(key, f"'{text}' is not a regular expression: {exc}") from None


def _pattern(table: PackTable) -> CallPattern:
    tool = table.text("tool")
    arguments = table.table("arguments")
    patterns = {key: _regex(arguments, key, arguments.verbatim(key)) for key in arguments.keys()}
    arguments.finish()
    return CallPattern(tool, patterns)


def _bounds(table: PackTable) -> CallBounds:
    pattern = _pattern(table)
    least = table.integer("least", 1)
    if least < 0:
        raise table.error("least", f"must not be negative, not {least}")
    most: int | None = table.integer("most", 0) if "most" in table.keys() else None
    if most is not None and most < least:
        raise table.error("most", f"must be at least `least` ({least}), not {most}")
    table.finish()
    return CallBounds(pattern, least, most)


def _expectations(table: PackTable) -> Expectations:
    calls = tuple(_bounds(t) for t in table.tables("calls"))
    no_calls = []
    for t in table.tables("no_calls"):
        no_calls.append(_pattern(t))
        t.finish()
    situations = tuple(_regex(table, "situations", t) for t in table.texts("situations"))
    memories = tuple(_regex(table, "memories", t) for t in table.texts("memories"))
    refusals = tuple(table.texts("refusals"))
    budget = _budget(table.table("budget"))
    table.finish()
    return Expectations(calls, tuple(no_calls), situations, memories, refusals, budget)


def _budget(table: PackTable) -> Budget:
    bounds: dict[str, Any] = {}
    for key in ("tokens", "rounds"):
        if key in table.keys():
            value = table.integer(key, 0)
            if value < 0:
                raise table.error(key, f"must not be negative, not {value}")
            bounds[key] = value
    if "usd" in table.keys():
        usd = table.number("usd", 0.0)
        if usd < 0:
            raise table.error("usd", f"must not be negative, not {usd}")
        bounds["usd"] = usd
    table.finish()
    return Budget(**bounds)
