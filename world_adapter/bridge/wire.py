"""Bridge frames as text on the wire (docs/bridge-protocol.md, version 1).

`parse_frame` turns received text into one of the frames of `messages` or raises `BadFrame`
with a message fit for an ``error`` frame (JSON's edge cases included: ``NaN`` and
``Infinity``, lone surrogates and NUL, world ids out of range); `encode_frame` writes one,
within `MAX_FRAME_BYTES`. The daemon reads frames up to `READ_LIMIT_BYTES`, so that an oversize
event can be kept with its texts cut (`cut_texts`) instead of being resent forever.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from world_adapter.bridge.messages import (
    FRAME_TYPES,
    MAX_FRAME_BYTES,
    EventFrame,
    Frame,
    frame_type,
)
from world_adapter.codec import CodecError, decode, decode_event, encode, encode_event
from world_adapter.events import MAX_WORLD_ID, WorldEvent, out_of_range_world_id

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


READ_LIMIT_BYTES = 16 * MAX_FRAME_BYTES
"""Largest frame the daemon reads; a larger one closes the connection (1009)."""
CUT_TEXT_CHARS = 16_384
"""An oversize event's texts are cut to this many characters."""


def cut_texts(event: WorldEvent) -> WorldEvent:
    """`event` with every text longer than `CUT_TEXT_CHARS` cut, marked as cut."""
    changes: dict[str, Any] = {
        f.name: value[:CUT_TEXT_CHARS] + f" [cut: {len(value) - CUT_TEXT_CHARS} more characters]"
        for f in dataclasses.fields(event)
        if isinstance(value := getattr(event, f.name), str) and len(value) > CUT_TEXT_CHARS
    }
    return dataclasses.replace(event, **changes) if changes else event
