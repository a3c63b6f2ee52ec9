"""The bridge's request methods: one per `WorldClient` query, read from the protocol itself.

A method's name, parameters and result type are those of the `WorldClient` method of the same
name, so a query added to the protocol is served, called and checked over the bridge without a
table to keep in step. `subscribe` is the event stream, not a request.

Run ``python -m world_adapter.bridge.methods`` to print the reference appendix of
docs/bridge-protocol.md; a test keeps the document equal to it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Union

from progs.types import ValueType
from world_adapter.codec import CodecError, decode, encode
from world_adapter.protocol import WorldClient

NOT_REQUESTS = frozenset({"subscribe"})


@dataclass(frozen=True)
class Param:
    """One parameter of a method."""

    name: str
    hint: Any
    required: bool


@dataclass(frozen=True)
class Method:
    """A request method: the `WorldClient` method it calls and the types it uses."""

    name: str
    params: tuple[Param, ...]
    result: Any

    def encode_params(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The ``params`` object for a call with `arguments` by name.

        Raises:
            TypeError: If an argument has no JSON form or is not a parameter.
        """
        known = {p.name for p in self.params}
        unknown = set(arguments) - known
        if unknown:
            raise TypeError(f"{self.name} has no parameter(s) {', '.join(sorted(unknown))}")
        hints = {p.name: p.hint for p in self.params}
        return {name: encode(value, hints[name]) for name, value in arguments.items()}

    def decode_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Keyword arguments for the `WorldClient` method from a request's ``params``.

        Raises:
            CodecError: If a parameter is missing, unknown or does not fit its type.
        """
        unknown = sorted(set(params) - {p.name for p in self.params})
        if unknown:
            raise CodecError("params", f"unknown parameter(s): {', '.join(unknown)}")
        arguments: dict[str, Any] = {}
        for param in self.params:
            if param.name in params:
                arguments[param.name] = decode(
                    params[param.name], param.hint, f"params.{param.name}"
                )
            elif param.required:
                raise CodecError(f"params.{param.name}", "missing")
        return arguments

    def decode_result(self, result: Any) -> Any:
        """The typed result from a ``result`` frame's value.

        Raises:
            CodecError: If it does not fit the method's result type.
        """
        return decode(result, self.result, "result")


@functools.cache
def world_methods() -> dict[str, Method]:
    """Every request method by name, in the order `WorldClient` declares them."""
    methods: dict[str, Method] = {}
    for name, function in vars(WorldClient).items():
        if name.startswith("_") or name in NOT_REQUESTS or not inspect.isfunction(function):
            continue
        hints = typing.get_type_hints(function)
        signature = inspect.signature(function)
        params = tuple(
            Param(p.name, hints[p.name], p.default is inspect.Parameter.empty)
            for p in signature.parameters.values()
            if p.name != "self"
        )
        methods[name] = Method(name, params, hints["return"])
    return methods


def method(name: str) -> Method | None:
    """The method called `name`, or None."""
    return world_methods().get(name)


# ---------------------------------------------------------------- reference text

_PRIMITIVES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    datetime: "time",
    timedelta: "seconds",
    ValueType: "prog type",
    type(None): "null",
}


def describe_type(hint: Any) -> str:
    """A short description of how a type looks in JSON (``array of room``)."""
    if hint is Any:
        return "any JSON"
    if hint in _PRIMITIVES:
        return _PRIMITIVES[hint]
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Union or origin is types.UnionType:
        return " or ".join(describe_type(a) for a in args)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return "one of " + ", ".join(f"`{m.value}`" for m in hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _type_name(hint)
    if origin is not None and origin in (dict, Mapping) or hint is dict:
        key, value = args if args else (str, Any)
        return f"object: {describe_type(key)} → {describe_type(value)}"
    if origin is not None:
        return f"array of {describe_type(args[0]) if args else 'any JSON'}"
    raise TypeError(f"cannot describe {hint!r}")


def _type_name(cls: type) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in cls.__name__).lstrip("_")


def _record_types(hint: Any, found: dict[str, type]) -> None:
    if hint in _PRIMITIVES:
        return
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if _type_name(hint) in found:
            return
        found[_type_name(hint)] = hint
        for field_hint in typing.get_type_hints(hint).values():
            _record_types(field_hint, found)
        return
    for arg in typing.get_args(hint):
        _record_types(arg, found)


def reference_text() -> str:
    """The Markdown reference of every method and object type, generated from the code."""
    lines = ["| method | params | result |", "|---|---|---|"]
    found: dict[str, type] = {}
    for m in world_methods().values():
        params = ", ".join(
            f"`{p.name}` ({describe_type(p.hint)}{'' if p.required else ', optional'})"
            for p in m.params
        )
        lines.append(f"| `{m.name}` | {params or 'none'} | {describe_type(m.result)} |")
        for p in m.params:
            _record_types(p.hint, found)
        _record_types(m.result, found)
    for name, cls in found.items():
        hints = typing.get_type_hints(cls)
        lines += ["", f"**{name}**", "", "| field | JSON |", "|---|---|"]
        for f in dataclasses.fields(cls):
            default = ""
            if f.default is not dataclasses.MISSING:
                default = f", optional (`{_json_text(encode(f.default))}`)"
            elif f.default_factory is not dataclasses.MISSING:
                default = f", optional (`{_json_text(encode(f.default_factory()))}`)"
            lines.append(f"| `{f.name}` | {describe_type(hints[f.name])}{default} |")
    return "\n".join(lines) + "\n"


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value)


if __name__ == "__main__":
    print(reference_text(), end="")  # noqa: T201 - a generator script
