"""JSON forms of the world's values, driven by type hints, for the bridge protocol.

One set of rules covers events, request parameters and results, so a query added to
`WorldClient` with the usual kinds of types needs no codec work:

- a dataclass is an object with its field names (fields with defaults may be left out);
- lists, tuples, sets and other collections are arrays (sets sorted);
- a mapping is an object; integer keys are written in decimal;
- ``None`` is ``null``; an enum is its value; a datetime is ISO 8601 with a timezone;
- a timedelta is a number of seconds;
- a prog `ValueType` is its name (``Text``, ``Collection<Character>``).

Decoding checks every value against its type and reports the first problem with its path
(``result.occupants[2].id: expected an integer``), never a bare ``KeyError``.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Union

from progs.types import ValueType
from world_adapter.events import (
    Crime,
    Cursor,
    EventKind,
    RoomEcho,
    Speech,
    StateChange,
    WorldEvent,
)

MAX_EPOCH_CHARS = 200

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


# ---------------------------------------------------------------- encoding


def encode(value: Any) -> Any:
    """The JSON-ready form of `value` (see the module docstring for the rules).

    Raises:
        TypeError: If `value` holds something with no JSON form, or a naive datetime.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise TypeError("a datetime without a timezone has no JSON form here")
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, ValueType):
        return value.describe()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in _fields(type(value))}
    if isinstance(value, Mapping):
        return {str(encode(k)): encode(v) for k, v in value.items()}
    if isinstance(value, AbstractSet):
        return [encode(v) for v in sorted(value)]
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
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
        strict: Reject object fields a dataclass does not have (the default ignores them, so
            that newer peers may add fields).

    Raises:
        CodecError: If `data` does not fit.
    """
    if hint is Any or hint is object:
        return data
    if hint is None or hint is types.NoneType:
        if data is not None:
            raise CodecError(path, "expected null")
        return None
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        return _decode_union(data, typing.get_args(hint), path, strict)
    simple = _SIMPLE.get(hint)
    if simple is not None:
        return simple(data, path)
    if origin is None and isinstance(hint, type):
        return _decode_class(data, hint, path, strict)
    return _decode_generic(data, origin, typing.get_args(hint), path, strict)


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
    fields = {k: v for k, v in data.items() if k != "type"}
    event: WorldEvent = _decode_class(fields, cls, path, strict)
    return event


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _decode_bool(data: Any, path: str) -> bool:
    if not isinstance(data, bool):
        raise CodecError(path, "expected true or false")
    return data


def _decode_int(data: Any, path: str) -> int:
    if isinstance(data, bool) or not isinstance(data, int):
        raise CodecError(path, "expected an integer")
    return data


def _decode_float(data: Any, path: str) -> float:
    if isinstance(data, bool) or not isinstance(data, int | float):
        raise CodecError(path, "expected a number")
    return float(data)


def _decode_str(data: Any, path: str) -> str:
    if not isinstance(data, str):
        raise CodecError(path, "expected a string")
    return data


def _decode_datetime(data: Any, path: str) -> datetime:
    text = _decode_str(data, path)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CodecError(path, f"'{text}' is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise CodecError(path, f"'{text}' has no timezone")
    return moment


def _decode_timedelta(data: Any, path: str) -> timedelta:
    return timedelta(seconds=_decode_float(data, path))


def _decode_value_type(data: Any, path: str) -> ValueType:
    try:
        return ValueType.parse(_decode_str(data, path))
    except ValueError as exc:
        raise CodecError(path, str(exc)) from None


_SIMPLE: dict[Any, Callable[[Any, str], Any]] = {
    bool: _decode_bool,
    int: _decode_int,
    float: _decode_float,
    str: _decode_str,
    datetime: _decode_datetime,
    timedelta: _decode_timedelta,
    ValueType: _decode_value_type,
}


def _decode_union(data: Any, options: tuple[Any, ...], path: str, strict: bool) -> Any:
    if data is None and types.NoneType in options:
        return None
    others = [o for o in options if o is not types.NoneType]
    problems = []
    for option in others:
        try:
            return decode(data, option, path, strict=strict)
        except CodecError as exc:
            problems.append(exc)
    if len(problems) == 1:
        if types.NoneType in options:
            raise CodecError(problems[0].path, f"{problems[0].problem} or null")
        raise problems[0]
    raise CodecError(path, "fits none of the allowed forms")


def _decode_class(data: Any, cls: type, path: str, strict: bool) -> Any:
    if issubclass(cls, Enum):
        try:
            return cls(data)
        except ValueError:
            known = ", ".join(repr(m.value) for m in cls)
            raise CodecError(path, f"{data!r} is not one of {known}") from None
    if dataclasses.is_dataclass(cls):
        value = _decode_dataclass(data, cls, path, strict)
        if cls is Cursor:
            _check_cursor(value, path)
        return value
    raise CodecError(path, f"no JSON form is defined for {cls.__name__}")


def _decode_dataclass(data: Any, cls: type, path: str, strict: bool) -> Any:
    if not isinstance(data, dict):
        raise CodecError(path, "expected an object")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in _fields(cls):
        if f.name in data:
            values[f.name] = decode(data[f.name], hints[f.name], _join(path, f.name), strict=strict)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise CodecError(_join(path, f.name), "missing")
    if strict:
        unknown = sorted(set(data) - {f.name for f in _fields(cls)})
        if unknown:
            raise CodecError(path, f"unknown field(s): {', '.join(unknown)}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise CodecError(path, str(exc)) from None


def _check_cursor(cursor: Cursor, path: str) -> None:
    if not cursor.epoch.strip() or len(cursor.epoch) > MAX_EPOCH_CHARS:
        raise CodecError(_join(path, "epoch"), f"must be 1-{MAX_EPOCH_CHARS} characters")
    if cursor.seq < 0:
        raise CodecError(_join(path, "seq"), "must not be negative")


def _decode_generic(data: Any, origin: Any, args: tuple[Any, ...], path: str, strict: bool) -> Any:
    if origin in (dict, Mapping):
        return _decode_mapping(data, args, path, strict)
    if origin in (list, tuple, frozenset, set, Sequence, Collection, AbstractSet):
        if not isinstance(data, list):
            raise CodecError(path, "expected an array")
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(data) != len(args):
                raise CodecError(path, f"expected an array of {len(args)} values")
            return tuple(
                decode(v, a, _join(path, i), strict=strict)
                for i, (v, a) in enumerate(zip(data, args, strict=True))
            )
        item = args[0] if args else Any
        items = [decode(v, item, _join(path, i), strict=strict) for i, v in enumerate(data)]
        if origin in (frozenset, set, AbstractSet):
            return frozenset(items)
        return tuple(items) if origin is tuple else items
    raise CodecError(path, f"no JSON form is defined for {origin}")


def _decode_mapping(data: Any, args: tuple[Any, ...], path: str, strict: bool) -> dict[Any, Any]:
    if not isinstance(data, dict):
        raise CodecError(path, "expected an object")
    key_type, value_type = args if args else (str, Any)
    result: dict[Any, Any] = {}
    for raw_key, raw_value in data.items():
        key: Any = raw_key
        if key_type is int:
            try:
                key = int(raw_key)
            except ValueError:
                raise CodecError(_join(path, raw_key), "key must be an integer") from None
        result[key] = decode(raw_value, value_type, _join(path, raw_key), strict=strict)
    return result


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@functools.cache
def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return tuple(f for f in dataclasses.fields(cls) if f.init)
