"""The bridge protocol's frames, limits and codes (docs/bridge-protocol.md, version 1).

Each frame type is a frozen dataclass (``gap`` is the replay buffer's `Gap`, the invocation
frames are in `world_adapter.invocations`); `wire` reads and writes them as text. Both sides of
the protocol (the daemon's client, the world server, the conformance checker) use these
definitions, and a test parses every example in the protocol document with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any

from world_adapter.events import Cursor, WorldEvent
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


def frame_type(frame: Frame) -> str:
    """The ``type`` of a frame (``hello``, ``event``...)."""
    return _TYPE_NAMES[type(frame)]


def close_code_name(code: int | None) -> str:
    """``4001 (AUTH_FAILED)`` for a code this protocol names, else the number."""
    if code is None:
        return "none"
    try:
        return f"{code} ({CloseCode(code).name})"
    except ValueError:
        return str(code)
