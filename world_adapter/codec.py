"""JSON forms of the world's values: the one codec for bridge frames, tapes and stored records.

Built on pydantic: a type hint gets a cached `TypeAdapter`, so a query added to `WorldClient`
with the usual kinds of types needs no codec work. The forms:

- a dataclass is an object with its field names (fields with defaults may be left out);
- lists, tuples, sets and other collections are arrays;
- a mapping is an object; integer keys are written in decimal;
- ``None`` is ``null``; an enum is its value; a datetime is ISO 8601 with a timezone (``Z`` for
  UTC);
- a timedelta is a number of seconds (`Seconds` where it sits inside a dataclass);
- a prog `ValueType` is its name (``Text``, ``Collection<Character>``).

Decoding is strict, as JSON reads it: ``"5"`` is not an integer and ``1`` is not ``true``. It
reports the first problem with its path (``result.occupants[2].id: Input should be a valid
integer``), never a bare ``KeyError``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections import abc
from datetime import timedelta
from typing import Annotated, Any, Union

import pydantic
import pydantic_core
from pydantic import BeforeValidator, PlainSerializer

from progs.types import ValueType
from world_adapter.events import (
    Crime,
    EventKind,
    RoomEcho,
    Speech,
    StateChange,
    WorldEvent,
)

EVENT_CLASSES: dict[EventKind, type[WorldEvent]] = {
    EventKind.ROOM_ECHO: RoomEcho,
    EventKind.SPEECH: Speech,
    EventKind.CRIME: Crime,
    EventKind.STATE_CHANGE: StateChange,
}


class CodecError(ValueError):
    """A JSON value does not fit the type it should have.

    Attributes:
        path: Where the problem is (``params.rule.doors``); empty for the value itself.
        problem: What is wrong.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


def _seconds(value: Any) -> Any:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("expected a number of seconds")
    return timedelta(seconds=value)


Seconds = Annotated[
    timedelta,
    BeforeValidator(_seconds),
    PlainSerializer(timedelta.total_seconds, return_type=float, when_used="json"),
]
"""A timedelta whose JSON form is a number of seconds (for dataclass fields and hints)."""


# ---------------------------------------------------------------- encoding


def encode(value: Any, hint: Any = None) -> Any:
    """The JSON-ready form of `value` (see the module docstring for the forms).

    Args:
        value: What to encode.
        hint: Its type, when the caller knows it; without one the type of `value` is used,
            and a collection's items are encoded by their own types, where a `ValueType`
            inside a dataclass would come out as an object: pass the hint for those.

    Raises:
        TypeError: If `value` holds something with no JSON form.
    """
    try:
        if hint is None and not isinstance(value, list | tuple | set | frozenset | dict):
            hint = type(value)
        if hint is None:
            return pydantic_core.to_jsonable_python(
                value, timedelta_mode="float", fallback=_fallback
            )
        return _adapter(hint).dump_python(value, mode="json", warnings=False)
    except pydantic_core.PydanticSerializationError as exc:
        raise TypeError(str(exc)) from None


def _fallback(value: Any) -> Any:
    if isinstance(value, ValueType):
        return value.describe()
    raise TypeError(f"{type(value).__name__} has no JSON form")


def encode_event(event: WorldEvent) -> dict[str, Any]:
    """An event as a JSON object (its ``kind`` included)."""
    data: dict[str, Any] = encode(event)
    return data


# ---------------------------------------------------------------- decoding


def decode(data: Any, hint: Any, path: str = "", *, strict: bool = False) -> Any:
    """Check `data` (parsed JSON) against the type `hint` and build the typed value.

    Args:
        data: A value as `json.loads` returns it.
        hint: The type it should have (a class or a typing construct).
        path: Where `data` sits, for error messages.
        strict: Also reject object fields a dataclass does not have (the default ignores
            them, so that newer peers may add fields).

    Raises:
        CodecError: If `data` does not fit.
    """
    options = typing.get_args(hint) if _is_union(hint) else ()
    if types.NoneType in options:
        if data is None:
            return None
        rest = tuple(o for o in options if o is not types.NoneType)
        try:
            return decode(data, rest[0] if len(rest) == 1 else Union[rest], path, strict=strict)  # noqa: UP007
        except CodecError as exc:
            raise CodecError(exc.path, f"{exc.problem} (or null)") from None
    if strict:
        _refuse_unknown_fields(data, hint, path)
    try:
        return _adapter(hint).validate_json(json.dumps(data, allow_nan=False), strict=True)
    except ValueError as exc:  # pydantic.ValidationError and json's non-finite numbers
        raise _codec_error(exc, path) from None


def decode_event(data: Any, path: str = "", *, strict: bool = False) -> WorldEvent:
    """An event from its JSON object, its class chosen by ``kind``.

    Raises:
        CodecError: If the kind is unknown or a field does not fit.
    """
    if not isinstance(data, dict):
        raise CodecError(path, "expected an object")
    kind = data.get("kind")
    cls = next((c for k, c in EVENT_CLASSES.items() if k.value == kind), None)
    if cls is None:
        known = ", ".join(k.value for k in EVENT_CLASSES)
        raise CodecError(_join(path, "kind"), f"unknown event kind {kind!r} (known: {known})")
    event: WorldEvent = decode(
        {k: v for k, v in data.items() if k != "type"}, cls, path, strict=strict
    )
    return event


def _is_union(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    return origin is Union or origin is types.UnionType


@functools.cache
def _adapter(hint: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(_supported(hint))


def _supported(hint: Any) -> Any:
    """`hint` in terms pydantic knows: a bare timedelta is `Seconds`, an abstract
    ``Collection[X]`` (a parameter that takes any collection) is an array of X."""
    if hint is timedelta:
        return Seconds
    if typing.get_origin(hint) is abc.Collection:
        return list[typing.get_args(hint) or Any]  # type: ignore[misc]
    if _is_union(hint):
        return Union[tuple(_supported(option) for option in typing.get_args(hint))]  # noqa: UP007
    return hint


def _codec_error(exc: ValueError, path: str) -> CodecError:
    if not isinstance(exc, pydantic.ValidationError):
        return CodecError(path, str(exc))
    first = exc.errors(include_url=False)[0]
    where, key = path, ""
    for part in first["loc"]:
        if part == "[key]":
            key = "key: "
        else:
            where = _join(where, part)
    if first["type"] == "value_error":
        problem = str(first["ctx"]["error"])
    elif first["type"] == "missing":
        problem = "missing"
    else:
        problem = first["msg"]
    return CodecError(where, key + problem)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _refuse_unknown_fields(data: Any, hint: Any, path: str) -> None:
    if not (isinstance(data, dict) and isinstance(hint, type) and dataclasses.is_dataclass(hint)):
        return
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(hint)})
    if unknown:
        raise CodecError(path, f"unknown field(s): {', '.join(unknown)}")
    hints = _hints(hint)
    for name, value in data.items():
        field_hint = hints[name]
        for option in typing.get_args(field_hint) if _is_union(field_hint) else (field_hint,):
            _refuse_unknown_fields(value, option, _join(path, name))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)
