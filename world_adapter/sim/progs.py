"""The sim world's prog catalogue: typed signatures with Python bodies that act on the town.

Prog effects that reach a room are recorded with origin ``prog`` so that the daemon can tell its
own actions from what players and NPCs did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from progs.types import ProgParameter, ProgSignature, ProgType, ValueType
from world_adapter.errors import WorldCommandError
from world_adapter.sim.actions import Town
from world_adapter.sim.harbour_people import HOLT_ID
from world_adapter.sim.map import HARBOUR_WARD_ID

ProgBody = Callable[[Town, Mapping[str, Any]], Any]
"""A prog's implementation: the town and the bound arguments (by declared parameter name)."""

_TEXT = ValueType(ProgType.TEXT)
_BOOLEAN = ValueType(ProgType.BOOLEAN)
_LOCATION = ValueType(ProgType.LOCATION)
_CHARACTER = ValueType(ProgType.CHARACTER)
_DICTIONARY = ValueType(ProgType.DICTIONARY)


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


def bind_arguments(
    town: Town, signature: ProgSignature, arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """Match arguments to parameters by case-insensitive name and check their values.

    Returns:
        The arguments keyed by declared parameter name. Location and Character values are
        ids of a room or character that exists.

    Raises:
        WorldCommandError: For a repeated, unknown or missing argument, a value of the wrong
            type, an unknown room or character, or a parameter type the sim does not support.
    """
    given: dict[str, tuple[str, Any]] = {}
    for name, value in arguments.items():
        key = str(name).strip().lower()
        if key in given:
            raise WorldCommandError(f"Argument '{name}' is given twice.")
        given[key] = (str(name), value)
    declared = {p.name.lower() for p in signature.parameters}
    for key, (name, _) in given.items():
        if key not in declared:
            expected = ", ".join(signature.parameter_names) or "none"
            raise WorldCommandError(
                f"Prog {signature.name} has no parameter named '{name}' "
                f"(its parameters: {expected})."
            )
    bound: dict[str, Any] = {}
    for parameter in signature.parameters:
        if parameter.name.lower() not in given:
            raise WorldCommandError(
                f"Prog {signature.name} needs the argument '{parameter.name}' "
                f"({parameter.type.describe()})."
            )
        bound[parameter.name] = _check_value(town, parameter, given[parameter.name.lower()][1])
    return bound


def _check_value(town: Town, parameter: ProgParameter, value: Any) -> Any:
    kind = parameter.type
    if kind == _TEXT:
        if not isinstance(value, str):
            raise WorldCommandError(f"Argument '{parameter.name}' must be text, not {value!r}.")
        return value
    if kind in (_LOCATION, _CHARACTER):
        what = "room" if kind == _LOCATION else "character"
        if isinstance(value, bool) or not isinstance(value, int):
            raise WorldCommandError(
                f"Argument '{parameter.name}' must be a {what} id (an integer), not {value!r}."
            )
        if kind == _LOCATION:
            town.room_of(value)
        else:
            town.sheet(value)
        return value
    raise WorldCommandError(
        f"Parameter type {kind.describe()} of '{parameter.name}' is not supported by the sim world."
    )


def _required_text(arguments: Mapping[str, Any], name: str) -> str:
    text = str(arguments[name]).strip()
    if not text:
        raise WorldCommandError(f"Argument '{name}' must not be blank.")
    return text


def _five_minute_status(town: Town, arguments: Mapping[str, Any]) -> str:
    return "Five-minute heartbeat check complete."


def _hourly_status(town: Town, arguments: Mapping[str, Any]) -> str:
    return "Hourly heartbeat check complete. Consider reviewing unresolved situations."


def _record_cue(town: Town, arguments: Mapping[str, Any]) -> str:
    return "Narrative cue captured: " + str(arguments["Cue"])


def _harbour_watch_status(town: Town, arguments: Mapping[str, Any]) -> str:
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


def _echo_to_room(town: Town, arguments: Mapping[str, Any]) -> bool:
    town.echo(arguments["Room"], _required_text(arguments, "Text"), origin="prog")
    return True


def _crowd_shout(town: Town, arguments: Mapping[str, Any]) -> bool:
    text = _required_text(arguments, "Text")
    town.echo(arguments["Room"], f'A voice from the crowd shouts, "{text}"', origin="prog")
    return True


def _dispatch_watchman(town: Town, arguments: Mapping[str, Any]) -> str:
    holt = town.sheet(HOLT_ID)
    status = town.status(HOLT_ID)
    room = town.room_of(arguments["Room"])
    reason = _required_text(arguments, "Reason")
    if not status.online or status.state is not None:
        return f"{holt.name} cannot be dispatched: he is in no state to respond."
    if status.location_id == room.id:
        return f"{holt.name} is already at {room.name}, looking into: {reason}"
    town.move(HOLT_ID, room.id, origin="prog")
    return f"{holt.name} has been dispatched to {room.name} and has arrived. Reason: {reason}"


def _whisper_to_character(town: Town, arguments: Mapping[str, Any]) -> bool:
    return town.tell(arguments["Character"], _required_text(arguments, "Text"))


def _player_profile(town: Town, arguments: Mapping[str, Any]) -> dict[str, str]:
    return dict(town.sheet(arguments["Character"]).profile)


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
)  # fmt: skip
