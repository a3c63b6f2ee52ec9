"""The bridge protocol's frames, limits and codes (docs/bridge-protocol.md, version 1).

Each frame type is a frozen dataclass; `parse_frame` turns received text into one of them or
raises `BadFrame` with a message fit for an ``error`` frame, and `encode_frame` writes one. Both
sides of the protocol (the daemon's client, the sim world's server, the conformance checker)
use these definitions, and a test parses every example in the protocol document with them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

from world_adapter.codec import CodecError, decode, decode_event, encode, encode_event
from world_adapter.events import MAX_WORLD_ID, Cursor, WorldEvent, out_of_range_world_id
from world_adapter.invocations import GameInvocation, InvocationAnswer, InvocationOutcome
from world_adapter.replay import Gap

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1_048_576
"""Largest frame, in bytes of UTF-8, either side sends or accepts."""
MAX_ID_CHARS = 64
MAX_IN_FLIGHT_REQUESTS = 64
"""Requests the daemon leaves unanswered on one connection at most."""
CAUSE_EVENT = "cause_event"
"""The optional request method of ``bridge check --events``: make one event of a kind happen."""
CAUSABLE_KINDS = ("room_echo", "speech", "crime", "state_change", "invoke")
"""What ``cause_event`` may be asked for: each event kind, and an ``invoke`` frame."""


class CloseCode(IntEnum):
    """WebSocket close codes with a meaning in this protocol."""

    NORMAL = 1000
    GOING_AWAY = 1001
    TOO_BIG = 1009
    INTERNAL = 1011
    SILENT = 4000
    """Liveness timeout: nothing arrived in time."""
    AUTH_FAILED = 4001
    UNSUPPORTED_VERSION = 4002
    HANDSHAKE = 4003
    """The first frame was not a valid hello, or none came in time."""


FATAL_CLOSE_CODES = frozenset({CloseCode.AUTH_FAILED, CloseCode.UNSUPPORTED_VERSION})
"""Close codes after which reconnecting cannot help: an operator must act."""


class ErrorCode(StrEnum):
    """Codes of ``error`` frames."""

    BAD_FRAME = "bad_frame"
    UNKNOWN_METHOD = "unknown_method"
    BAD_PARAMS = "bad_params"
    COMMAND_FAILED = "command_failed"
    INTERNAL = "internal"


def _check_id(value: str, name: str) -> None:
    if not 1 <= len(value) <= MAX_ID_CHARS:
        raise ValueError(f"{name} must be 1-{MAX_ID_CHARS} characters")


@dataclass(frozen=True)
class Hello:
    """daemon → game: the first frame of a connection."""

    protocol: int
    token: str = field(repr=False)
    client: str = ""


@dataclass(frozen=True)
class Welcome:
    """game → daemon: the handshake succeeded."""

    protocol: int
    head: Cursor
    game: str = ""


@dataclass(frozen=True)
class Subscribe:
    """daemon → game: report events in `cells` after `after` (None: from now on)."""

    cells: tuple[int, ...]
    after: Cursor | None


@dataclass(frozen=True)
class Subscribed:
    """game → daemon: the subscription is in place; `head` is the newest cursor."""

    cells: tuple[int, ...]
    head: Cursor


@dataclass(frozen=True)
class EventFrame:
    """game → daemon: one world event."""

    event: WorldEvent


@dataclass(frozen=True)
class Request:
    """daemon → game: call `method` with `params` by name."""

    id: str
    method: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_id(self.id, "id")


@dataclass(frozen=True)
class Result:
    """game → daemon: the answer to request `id`."""

    id: str
    result: Any

    def __post_init__(self) -> None:
        _check_id(self.id, "id")


@dataclass(frozen=True)
class Error:
    """Either direction: request `id` failed, or (id None) a frame was bad."""

    code: ErrorCode
    message: str
    id: str | None = None


@dataclass(frozen=True)
class Ping:
    """Either direction: answer with a `Pong` carrying the same nonce."""

    nonce: str

    def __post_init__(self) -> None:
        _check_id(self.nonce, "nonce")


@dataclass(frozen=True)
class Pong:
    """The answer to a `Ping`."""

    nonce: str

    def __post_init__(self) -> None:
        _check_id(self.nonce, "nonce")


class AdminLevel(StrEnum):
    """Evennia's permission hierarchy, lowest first: what a game says its caller may do."""

    PLAYER = "Player"
    HELPER = "Helper"
    BUILDER = "Builder"
    ADMIN = "Admin"
    DEVELOPER = "Developer"

    @property
    def rank(self) -> int:
        """0 for Player up to 4 for Developer."""
        return list(AdminLevel).index(self)


@dataclass(frozen=True)
class Admin:
    """game → daemon: an admin's in-game command (``ais``/``aisr``), answered with a `Result`
    (``{"text": ...}``) or an `Error` carrying the same `id`."""

    id: str
    command: str
    verb: str
    caller: str
    level: AdminLevel
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_id(self.id, "id")


Frame = (
    Hello
    | Welcome
    | Subscribe
    | Subscribed
    | Gap
    | EventFrame
    | Request
    | Result
    | Error
    | Ping
    | Pong
    | GameInvocation
    | InvocationAnswer
    | InvocationOutcome
    | Admin
)
FRAME_TYPES: dict[str, type[Any]] = {
    "hello": Hello,
    "welcome": Welcome,
    "subscribe": Subscribe,
    "subscribed": Subscribed,
    "gap": Gap,
    "event": EventFrame,
    "request": Request,
    "result": Result,
    "error": Error,
    "ping": Ping,
    "pong": Pong,
    "invoke": GameInvocation,
    "invoked": InvocationAnswer,
    "invoke_outcome": InvocationOutcome,
    "admin": Admin,
}
_TYPE_NAMES = {cls: name for name, cls in FRAME_TYPES.items()}


MAX_ERROR_MESSAGE_CHARS = 500
"""Error messages are cut to this length, so echoing a bad value never makes a frame too large."""


class BadFrame(ValueError):
    """Received text is not a valid frame.

    Attributes:
        request_id: The ``id`` of a request or invoke frame that was bad, so the error can
            answer it.
    """

    def __init__(self, message: str, request_id: str | None = None) -> None:
        super().__init__(short_message(message))
        self.request_id = request_id


def short_message(message: str) -> str:
    """`message`, cut to `MAX_ERROR_MESSAGE_CHARS` with a visible ellipsis."""
    if len(message) <= MAX_ERROR_MESSAGE_CHARS:
        return message
    return message[: MAX_ERROR_MESSAGE_CHARS - 1] + "…"


class FrameTooLarge(ValueError):
    """A frame to send is over `MAX_FRAME_BYTES`."""


_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|0000)")
"""A JSON escape that may decode to text no database stores: a surrogate, or NUL."""
REPLACEMENT = "\ufffd"


def _storable(value: Any) -> Any:
    """`value` with lone surrogates and NUL characters in its strings replaced by U+FFFD.

    JSON lets a sender escape a lone surrogate (``"\\udc00"``) or NUL; Python decodes both, but
    neither can be written as UTF-8 (SQLite) or stored in a PostgreSQL text column. The frame is
    kept, with the unrepresentable characters replaced, so no event is lost to them.
    """
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", REPLACEMENT)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, list):
        return [_storable(item) for item in value]
    if isinstance(value, dict):
        return {_storable(key): _storable(item) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class NonFinite:
    """A ``NaN``, ``Infinity`` or ``-Infinity`` token, which Python's json reads but JSON has
    not, or a number too large for a float (``1e400``): kept as a placeholder while parsing so
    the error can name the field that held it."""

    token: str


def _note(found: list[NonFinite], value: NonFinite) -> NonFinite:
    found.append(value)
    return value


def _finite_float(found: list[NonFinite], token: str) -> float | NonFinite:
    number = float(token)
    return number if math.isfinite(number) else _note(found, NonFinite(token))


def _non_finite_values(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """``(path, token)`` of each `NonFinite` in parsed JSON, in document order."""
    if isinstance(value, NonFinite):
        yield path or "(frame)", value.token
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite_values(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite_values(item, f"{path}[{index}]")


def parse_frame(text: str, *, strict: bool = False) -> Frame:
    """The frame `text` holds.

    Args:
        text: A received text message.
        strict: Also reject fields the frame type does not define (receivers normally ignore
            them; the protocol document's examples are checked strictly).

    Raises:
        BadFrame: If the text is not JSON (``NaN`` and ``Infinity`` included), not an object,
            of unknown type, or a field is missing or does not fit (an event's world id out of
            1 to 2**63-1 included).
    """
    non_finite: list[NonFinite] = []
    try:
        data = json.loads(
            text,
            parse_constant=lambda token: _note(non_finite, NonFinite(token)),
            parse_float=lambda token: _finite_float(non_finite, token),
        )
    except (ValueError, RecursionError):
        raise BadFrame("Frame is not valid JSON.") from None
    if _UNSTORABLE_ESCAPE.search(text):
        data = _storable(data)
    if not isinstance(data, dict):
        raise BadFrame("Frame is not a JSON object.")
    kind = data.get("type")
    cls = FRAME_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise BadFrame(f"Unknown frame type {kind!r}.")
    answerable = kind in ("request", "invoke") and isinstance(data.get("id"), str)
    request_id = data["id"] if answerable else None
    if non_finite:
        where, token = next(_non_finite_values(data, ""))
        raise BadFrame(
            f"Bad {kind} frame: {where}: {token} is not a finite JSON number.", request_id
        )
    body = {k: v for k, v in data.items() if k != "type"}
    try:
        frame: Frame = (
            EventFrame(decode_event(body, strict=strict))
            if cls is EventFrame
            else decode(body, cls, strict=strict)
        )
    except CodecError as exc:
        raise BadFrame(f"Bad {kind} frame: {exc}", request_id) from None
    bad_id = out_of_range_world_id(frame.event if isinstance(frame, EventFrame) else frame)
    if bad_id is not None:
        name, value = bad_id
        shown = (
            str(value)
            if len(str(value)) <= 30
            else f"{str(value)[:20]}… ({len(str(value))} digits)"
        )
        raise BadFrame(
            f"Bad {kind} frame: {name}: a world id is an integer from 1 to {MAX_WORLD_ID}, "
            f"not {shown}.",
            request_id,
        )
    return frame


def frame_type(frame: Frame) -> str:
    """The ``type`` of a frame (``hello``, ``event``...)."""
    return _TYPE_NAMES[type(frame)]


def frame_data(frame: Frame) -> dict[str, Any]:
    """The JSON object of a frame, ``type`` first."""
    if isinstance(frame, EventFrame):
        return {"type": "event", **encode_event(frame.event)}
    body = encode(frame)
    return {"type": frame_type(frame), **body}


def frame_bytes(text: str) -> int:
    """The size of a frame's text on the wire (UTF-8); most frames are ASCII and need no
    encoding to know it.

    Raises:
        UnicodeEncodeError: The text holds a lone surrogate.
    """
    return len(text) if text.isascii() else len(text.encode())


def encode_frame(frame: Frame) -> str:
    """The text of a frame.

    Raises:
        FrameTooLarge: If the text is over `MAX_FRAME_BYTES`.
    """
    data = frame_data(frame)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        size = frame_bytes(text)
    except UnicodeEncodeError:  # a lone surrogate: only a JSON escape can carry it
        text = json.dumps(data, separators=(",", ":"))
        size = len(text)
    if size > MAX_FRAME_BYTES:
        raise FrameTooLarge(f"A {frame_type(frame)} frame would be over {MAX_FRAME_BYTES} bytes.")
    return text


def close_code_name(code: int | None) -> str:
    """``4001 (AUTH_FAILED)`` for a code this protocol names, else the number."""
    if code is None:
        return "none"
    try:
        return f"{code} ({CloseCode(code).name})"
    except ValueError:
        return str(code)
