"""The sim world's prog catalogue: typed signatures with Python bodies that act on the town.

Prog effects that reach a room are recorded with origin ``prog`` so that the daemon can tell its
own actions from what players and NPCs did. Bodies receive resolved arguments (rooms,
characters, outfits... see `world_adapter.sim.arguments`). Besides the narrative progs, a few
report what their arguments resolved to, so that builders can check how a custom tool's
arguments reach the game.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from progs.types import ProgParameter, ProgSignature, ProgType, ValueType
from world_adapter.errors import WorldCommandError
from world_adapter.sim.harbour_people import HOLT_ID
from world_adapter.sim.inspection import describe, describe_mud_datetime
from world_adapter.sim.map import HARBOUR_WARD_ID
from world_adapter.sim.queries import KnowingTown

ProgBody = Callable[[KnowingTown, Mapping[str, Any]], Any]
"""A prog's implementation: the town and the resolved arguments (by declared parameter name)."""

_TEXT = ValueType(ProgType.TEXT)
_NUMBER = ValueType(ProgType.NUMBER)
_BOOLEAN = ValueType(ProgType.BOOLEAN)
_LOCATION = ValueType(ProgType.LOCATION)
_CHARACTER = ValueType(ProgType.CHARACTER)
_DICTIONARY = ValueType(ProgType.DICTIONARY)
_ROOMS = ValueType(ProgType.LOCATION, collection=True)

INSPECTED_TYPES: tuple[ProgType, ...] = (
    ProgType.SHARD,
    ProgType.ZONE,
    ProgType.GENDER,
    ProgType.RACE,
    ProgType.CULTURE,
    ProgType.TRAIT,
    ProgType.CLAN,
    ProgType.ETHNICITY,
    ProgType.CLAN_RANK,
    ProgType.CLAN_APPOINTMENT,
    ProgType.CLAN_PAYGRADE,
    ProgType.CURRENCY,
    ProgType.EXIT,
    ProgType.DATETIME,
    ProgType.TIMESPAN,
    ProgType.LANGUAGE,
    ProgType.ACCENT,
    ProgType.MERIT,
    ProgType.MUDDATETIME,
    ProgType.CALENDAR,
    ProgType.CLOCK,
    ProgType.KNOWLEDGE,
    ProgType.ROLE,
    ProgType.DRUG,
    ProgType.SHOP,
)
"""The 25 parameters of InspectReferences, one per type, each named after its type."""


@dataclass(frozen=True)
class SimProg:
    """A signature and the body that runs it (None when the prog does not compile)."""

    signature: ProgSignature
    body: ProgBody | None

    def __post_init__(self) -> None:
        if (self.body is None) != bool(self.signature.compile_error):
            raise ValueError(
                f"Prog {self.signature.name} must have a body exactly when it compiles."
            )


def _required_text(arguments: Mapping[str, Any], name: str) -> str:
    text = str(arguments[name]).strip()
    if not text:
        raise WorldCommandError(f"Argument '{name}' must not be blank.")
    return text


def _five_minute_status(town: KnowingTown, arguments: Mapping[str, Any]) -> str:
    return "Five-minute heartbeat check complete."


def _hourly_status(town: KnowingTown, arguments: Mapping[str, Any]) -> str:
    return "Hourly heartbeat check complete. Consider reviewing unresolved situations."


def _record_cue(town: KnowingTown, arguments: Mapping[str, Any]) -> str:
    return "Narrative cue captured: " + str(arguments["Cue"])


def _harbour_watch_status(town: KnowingTown, arguments: Mapping[str, Any]) -> str:
    ward = town.zone(HARBOUR_WARD_ID)
    cells = town.zone_cells()[ward.id]
    players = []
    for sheet in town.all_sheets():
        status = town.status(sheet.id)
        if sheet.is_player and status.online and status.location_id in cells:
            players.append(f"{sheet.name} at {town.room_of(status.location_id).name}")
    since = town.now() - timedelta(hours=1)
    crimes = Counter(
        f"{c.crime_type} at {town.room_of(c.cell_id).name}"
        for c in town.recent_crimes()
        if c.zone_id == ward.id and c.occurred_at > since
    )
    who = (
        f"{len(players)} player(s) online: {'; '.join(players)}" if players else "no players online"
    )
    kinds = ", ".join(f"{what} x{n}" if n > 1 else what for what, n in crimes.items())
    seen = f"{crimes.total()} ({kinds})" if crimes else "none"
    return f"{ward.name}: {who}. Crimes in the last hour: {seen}."


def _echo_to_room(town: KnowingTown, arguments: Mapping[str, Any]) -> bool:
    town.echo(arguments["Room"].id, _required_text(arguments, "Text"), origin="prog")
    return True


def _crowd_shout(town: KnowingTown, arguments: Mapping[str, Any]) -> bool:
    text = _required_text(arguments, "Text")
    town.echo(arguments["Room"].id, f'A voice from the crowd shouts, "{text}"', origin="prog")
    return True


def _dispatch_watchman(town: KnowingTown, arguments: Mapping[str, Any]) -> str:
    holt = town.sheet(HOLT_ID)
    status = town.status(HOLT_ID)
    room = arguments["Room"]
    reason = _required_text(arguments, "Reason")
    if not status.online or status.state is not None:
        return f"{holt.name} cannot be dispatched: he is in no state to respond."
    if status.location_id == room.id:
        return f"{holt.name} is already at {room.name}, looking into: {reason}"
    town.move(HOLT_ID, room.id, origin="prog")
    return f"{holt.name} has been dispatched to {room.name} and has arrived. Reason: {reason}"


def _whisper_to_character(town: KnowingTown, arguments: Mapping[str, Any]) -> bool:
    return town.tell(arguments["Character"].id, _required_text(arguments, "Text"))


def _player_profile(town: KnowingTown, arguments: Mapping[str, Any]) -> dict[str, str]:
    return dict(arguments["Character"].profile)


def _echo_to_rooms(town: KnowingTown, arguments: Mapping[str, Any]) -> int:
    text = _required_text(arguments, "Text")
    rooms = {room.id: room for room in arguments["Rooms"] if room is not None}
    for room_id in sorted(rooms):
        town.echo(room_id, text, origin="prog")
    return len(rooms)


_ADDRESSES = {"male": "sir", "female": "madam"}


def _form_of_address(town: KnowingTown, arguments: Mapping[str, Any]) -> str:
    return _ADDRESSES.get(arguments["Gender"], "friend")


def _inspect_references(town: KnowingTown, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name: describe_mud_datetime(value) if name == "MudDateTime" else describe(value)
        for name, value in arguments.items()
    }


def _describe_one(parameter: str) -> ProgBody:
    def body(town: KnowingTown, arguments: Mapping[str, Any]) -> Any:
        return describe(arguments[parameter])

    return body


def _prog(
    prog_id: int,
    name: str,
    parameters: tuple[tuple[str, ValueType], ...],
    returns: ValueType,
    description: str,
    body: ProgBody | None,
    compile_error: str = "",
) -> SimProg:
    signature = ProgSignature(
        id=prog_id,
        name=name,
        parameters=tuple(ProgParameter(n, t) for n, t in parameters),
        return_type=returns,
        description=description,
        compile_error=compile_error,
    )
    return SimProg(signature, body)


HARBOUR_TOWN_PROGS: tuple[SimProg, ...] = (
    _prog(1, "AIStorytellerStatusFiveMinute", (), _TEXT,
          "Status text for the five-minute heartbeat.", _five_minute_status),
    _prog(2, "AIStorytellerStatusHourly", (), _TEXT,
          "Status text for the hourly heartbeat.", _hourly_status),
    _prog(3, "AIStorytellerToolRecordCue", (("Cue", _TEXT),), _TEXT,
          "Records a narrative cue.", _record_cue),
    _prog(10, "HarbourWatchStatus", (), _TEXT,
          "Players online in the Harbour Ward and crimes there in the last hour.",
          _harbour_watch_status),
    _prog(11, "EchoToRoom", (("Room", _LOCATION), ("Text", _TEXT)), _BOOLEAN,
          "Shows a line of text to everyone in a room.", _echo_to_room),
    _prog(12, "CrowdShout", (("Room", _LOCATION), ("Text", _TEXT)), _BOOLEAN,
          "An anonymous voice in the crowd shouts the text.", _crowd_shout),
    _prog(13, "DispatchWatchman", (("Room", _LOCATION), ("Reason", _TEXT)), _TEXT,
          "Sends Watch Sergeant Holt to a room.", _dispatch_watchman),
    _prog(14, "WhisperToCharacter", (("Character", _CHARACTER), ("Text", _TEXT)), _BOOLEAN,
          "Shows a line of text to one character only.", _whisper_to_character),
    _prog(15, "HarbourPlayerProfile", (("Character", _CHARACTER),), _DICTIONARY,
          "Reputation and faction of a character.", _player_profile),
    _prog(16, "BrokenProg", (("Text", _TEXT),), _TEXT,
          "A prog that does not compile.", None,
          compile_error="Unknown variable @foo on line 2"),
    _prog(20, "InspectReferences", tuple((t.value, ValueType(t)) for t in INSPECTED_TYPES),
          _DICTIONARY, "Reports which object or value each of its 25 arguments resolved to.",
          _inspect_references),
    _prog(21, "FormOfAddress", (("Gender", ValueType(ProgType.GENDER)),), _TEXT,
          "How a polite stranger addresses someone of a gender: sir, madam or friend.",
          _form_of_address),
    _prog(22, "InspectOutfit", (("Outfit", ValueType(ProgType.OUTFIT)),), _DICTIONARY,
          "Reports which outfit its argument resolved to.", _describe_one("Outfit")),
    _prog(23, "InspectOutfitItem", (("OutfitItem", ValueType(ProgType.OUTFIT_ITEM)),),
          _DICTIONARY, "Reports which outfit item its argument resolved to.",
          _describe_one("OutfitItem")),
    _prog(24, "InspectEffect", (("Effect", ValueType(ProgType.EFFECT)),), _DICTIONARY,
          "Reports which effect its argument resolved to.", _describe_one("Effect")),
    _prog(25, "EchoToRooms", (("Rooms", _ROOMS), ("Text", _TEXT)), _NUMBER,
          "Shows a line of text in several rooms at once; returns how many rooms saw it.",
          _echo_to_rooms),
    _prog(26, "InspectThings", (("Character", _CHARACTER), ("Location", _LOCATION),
          ("Item", ValueType(ProgType.ITEM)), ("Exit", ValueType(ProgType.EXIT))), _DICTIONARY,
          "Reports which character, room, item and exit its arguments resolved to.",
          _inspect_references),
    _prog(27, "InspectValues", (("Text", _TEXT), ("Number", _NUMBER), ("Boolean", _BOOLEAN),
          ("Characters", ValueType(ProgType.CHARACTER, collection=True)),
          ("Items", ValueType(ProgType.ITEM, collection=True))), _DICTIONARY,
          "Reports the values and the characters and items its arguments resolved to.",
          _inspect_references),
)  # fmt: skip
